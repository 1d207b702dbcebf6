"""Running an eval: dataset → collection(s) → every system on every question → scored rows.

A run lives in a directory (``--out``):
- ``config.json``: what defines the results (dataset content hash, setting, k, budget, turns,
  model, embedder, seed ...). A second run into the same directory with another config is
  refused unless ``force`` (which moves the old results aside and starts afresh).
- ``results.jsonl``: one scored row per (system, question), appended as each question finishes;
  a restarted run skips the pairs already there, so an interrupted eval continues where it
  stopped. ``limit``, ``concurrency`` and the list of systems are not part of the config: raise
  the limit or add a system and only the missing pairs are computed.
- ``summary.json``, ``report.md``, ``plot.png``: written at the end (see :mod:`c1.eval.report`).

Collections are built with the normal indexer under the normal home, named from the dataset and
a content hash (``eval-<dataset>-<hash>``; one per question in the per-question setting) and
marked when complete, so a second run reuses them without touching the embedder.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from c1.agent.policies import NAMES as POLICIES
from c1.config import Settings
from c1.eval.settings import EvalOptions
from c1.errors import C1Error
from c1.eval import metrics
from c1.eval.baselines import BASELINES
from c1.eval.datasets import SETTINGS, Dataset, Passage, Question, corpus_fingerprint, page_key

CONFIG_VERSION = 1


# --- systems -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class System:
    label: str
    kind: str
    """``agent`` or one of ``BASELINES``."""
    policy: str | None = None
    parallel: int = 1


def parse_systems(spec: str, default_parallel: int = 1) -> list[System]:
    """``"builtin,builtin@4,bm25,dense,hybrid"`` → systems. ``policy@N`` runs N parallel agent runs
    fused with RRF; a policy without ``@N`` gets ``default_parallel`` (``--parallel``)."""
    out: dict[str, System] = {}
    for raw in spec.split(","):
        item = raw.strip().lower()
        if not item:
            continue
        name, _, n = item.partition("@")
        if name in BASELINES:
            if n:
                raise C1Error(f"--systems: {item!r}: @N (parallel runs) applies to agent policies, not baselines")
            system = System(name, name)
        elif name in POLICIES:
            try:
                parallel = int(n) if n else default_parallel
            except ValueError:
                raise C1Error(f"--systems: {item!r}: expected {name}@N with N a number") from None
            if not 1 <= parallel <= 32:
                raise C1Error(f"--systems: {item!r}: parallel runs must be 1..32")
            system = System(name if parallel == 1 else f"{name}@{parallel}", "agent", name, parallel)
        else:
            raise C1Error(f"--systems: unknown system {name!r} (policies: {', '.join(POLICIES)}; "
                          f"baselines: {', '.join(BASELINES)}; policy@N for parallel runs)")
        out.setdefault(system.label, system)
    if not out:
        raise C1Error("--systems is empty")
    return list(out.values())


# --- options and results -----------------------------------------------------------------------


@dataclass
class EvalRun:
    summary: dict
    run_dir: Path
    computed: int
    rows: list[dict] = field(default_factory=list)


ProgressFn = Callable[[str, int, int], None]
"""(phase, done, total): phase is ``index`` (collections) or ``search`` (questions)."""


# --- scoring -----------------------------------------------------------------------------------


class Keys:
    """Maps what a system returned or saw onto gold keys.

    Passage datasets: a document's key is its ``source_id``. Page datasets (FinanceBench): a
    document matches each gold ``<file>#p<page>`` that one of its returned chunks covers; a
    document that matches no gold page keeps its own id (so it still counts against precision).

    The manifest stores the page where a chunk starts; a chunk also surely covers the start page
    of every chunk of its document that starts inside it (chunks overlap), so those count too.
    """

    def __init__(self, corpus, gold: tuple[str, ...], gold_kind: str):
        self.corpus = corpus
        self.gold = set(gold)
        self.kind = gold_kind
        self._starts: dict[str, list[tuple[int, int]]] = {}

    def _pages(self, doc_id: str, start: int, end: int, page: int | None) -> set[int]:
        if doc_id not in self._starts:
            self._starts[doc_id] = [(c.start, c.page) for c in self.corpus.doc_chunks(doc_id) if c.page is not None]
        pages = {page} if page is not None else set()
        pages.update(p for s, p in self._starts[doc_id] if start <= s < end)
        return pages

    def _page_keys(self, doc_id: str, path: str, spans) -> list[str]:
        name = os.path.basename(path or "")
        pages: set[int] = set()
        for start, end, page in spans:
            pages |= self._pages(doc_id, start, end, page)
        return [page_key(name, p) for p in sorted(pages) if page_key(name, p) in self.gold]

    def document(self, doc: dict) -> list[str]:
        if self.kind == "page":
            spans = [(c["span"][0], c["span"][1], c.get("page")) for c in doc.get("chunks", []) if c.get("span")]
            return self._page_keys(doc["id"], doc.get("path") or "", spans) or [doc["id"]]
        return [doc.get("source_id") or doc["id"]]

    def chunks(self, chunk_ids: list[str]) -> dict[str, list[str]]:
        """chunk id → its keys (page datasets: the gold pages the chunk covers, else its document id)."""
        if not chunk_ids:
            return {}
        out = {}
        if self.kind == "page":
            for c in self.corpus.chunks(chunk_ids):
                doc = self.corpus.doc(c.doc_id)
                hits = self._page_keys(c.doc_id, doc.path if doc else "", [(c.start, c.end, c.page)])
                out[c.id] = hits or [c.doc_id]
            return out
        for cid in chunk_ids:
            doc_id = cid.rsplit("_", 1)[0]
            doc = self.corpus.doc(doc_id)
            out[cid] = [(doc.source_id if doc else None) or doc_id]
        return out


def answer_found(answers: tuple[str, ...], texts: list[str], returned: list[str], gold: tuple[str, ...]) -> bool:
    """Any answer string (alias) is found by :func:`metrics.answer_found`; a set without answer
    strings counts a question as found when a gold (answer-bearing) document was returned."""
    if not answers:
        return bool(set(returned) & set(gold))
    return any(metrics.answer_found(a, texts, returned, gold) for a in answers)


def score_row(question: Question, system: System, documents: list[dict], keys: Keys, *,
              seen_chunks: list[str] = (), pruned_chunks: list[str] = (), cost: dict, extra: dict | None = None) -> dict:
    """One per-question result row: what was returned, the metrics and the cost."""
    returned = list(dict.fromkeys(k for d in documents for k in keys.document(d)))
    texts = ["\n".join([d.get("title") or "", *(c["text"] for c in d.get("chunks", []))]) for d in documents]
    gold = question.gold
    s = metrics.score("", returned, texts, gold)
    chunk_keys = keys.chunks(list(dict.fromkeys([*seen_chunks, *pruned_chunks])))
    seen = set(returned) | {k for c in seen_chunks for k in chunk_keys.get(c, ())}
    pruned = list(dict.fromkeys(pruned_chunks))
    gold_pruned = [c for c in pruned if any(k in keys.gold for k in chunk_keys.get(c, ()))]
    row = {
        "system": system.label,
        "qid": question.id,
        "question": question.question,
        "answers": list(question.answers),
        "gold": list(gold),
        "returned": returned,
        "documents": [{"id": d["id"], "source_id": d.get("source_id"), "title": d.get("title"), "page": d.get("page"),
                       "chunks": len(d.get("chunks", [])), "score": d.get("score"),
                       "gold": any(k in keys.gold for k in keys.document(d))} for d in documents],
        "metrics": {
            "answer_found": answer_found(question.answers, texts, returned, gold),
            "recall": s.recall,
            "precision": s.precision,
            "f1": round(s.f1, 6),
            "full_recall": s.full_recall,
            "trajectory_recall": metrics.trajectory_recall(seen, gold),
            "prune_accuracy": metrics.prune_accuracy(pruned, gold_pruned),
        },
        "cost": cost,
    }
    if extra:
        row.update(extra)
    return row


def run_one(corpus, settings: Settings, question: Question, system: System, choice, gold_kind: str) -> dict:
    """Run one system on one question and score it."""
    keys = Keys(corpus, question.gold, gold_kind)
    started = time.perf_counter()
    if system.kind != "agent":
        from c1.eval.baselines import retrieve

        documents = retrieve(corpus, system.kind, question.question, settings.max_docs)
        seconds = time.perf_counter() - started
        cost = {"turns": None, "tool_calls": None, "prompt_tokens": 0, "completion_tokens": 0, "seconds": round(seconds, 4)}
        return score_row(question, system, documents, keys, cost=cost)
    from c1.agent.search import run_search

    s = dataclasses.replace(settings, policy=choice.name, parallel=system.parallel)
    result = run_search(corpus, s, question.question, choice.factory)
    seconds = time.perf_counter() - started
    shown = [x["chunk_id"] for t in result.trajectories for x in t.get("shown", [])]
    pruned = [c for t in result.trajectories for c in t.get("pruned", [])]
    st = result.stats
    cost = {
        "turns": st.get("turns", 0), "tool_calls": st.get("tool_calls", 0), "pruned": st.get("pruned", 0),
        "errors": st.get("errors", 0), "prompt_tokens": st.get("tokens", {}).get("prompt", 0),
        "completion_tokens": st.get("tokens", {}).get("completion", 0),
        "context_peak": st.get("tokens", {}).get("context_peak", 0), "seconds": round(seconds, 4),
        "counted_tokens": st.get("tokens", {}).get("counted", 0), "count_error": st.get("tokens", {}).get("count_error", 0),
    }
    cost["repeated_calls"] = repeated_calls(result.trajectories)
    last = [next((m for m in reversed(t.get("messages", [])) if m.get("role") == "assistant"), None) for t in result.trajectories]
    return score_row(question, system, result.documents, keys, seen_chunks=shown, pruned_chunks=pruned, cost=cost,
                     extra={"stop_reasons": st.get("stop_reasons", []),
                            "last_replies": [str((m or {}).get("content") or "")[:300] for m in last]})


def repeated_calls(trajectories: list[dict]) -> int:
    """Tool calls that repeat an earlier call of the same run word for word (same tool, same
    arguments): a model going round in a loop."""
    n = 0
    for t in trajectories:
        seen = set()
        for m in t.get("messages", []):
            for c in m.get("tool_calls") or []:
                fn = c.get("function") or c
                key = (fn.get("name"), " ".join(str(fn.get("arguments")).split()))
                n += key in seen
                seen.add(key)
    return n


# --- collections -------------------------------------------------------------------------------


def collection_name(dataset: str, fingerprint: str, settings: Settings, embedder_name: str, per_question: bool) -> str:
    """``eval-<dataset>-<hash>`` (``eval-<dataset>-q<hash>`` per question): the hash covers the
    corpus content, the embedder, the chunking and what is indexed with each chunk (its header),
    so any change gives a fresh collection."""
    from c1.index.headers import HEADER_VERSION

    h = hashlib.blake2b(f"{fingerprint}\0{embedder_name}\0{settings.chunk_tokens}\0{settings.chunk_overlap}"
                        f"\0{HEADER_VERSION}".encode(), digest_size=8).hexdigest()
    return f"eval-{dataset}-{'q' if per_question else ''}{h}"


MARKER = "eval-ready.json"


def ensure_collection(settings: Settings, embedder, name: str, passages: list[Passage] | tuple[Passage, ...],
                      files: list[str] | tuple[str, ...] = (), progress: Callable | None = None) -> tuple[Settings, bool]:
    """Settings for collection ``name``, indexing it first unless a complete one exists.

    Returns (settings, built); ``progress`` gets the indexer's progress. Passages are written to ``<home>/eval/corpora/<name>.jsonl`` and
    indexed with the normal indexer (their ``id`` becomes each document's ``source_id``).
    """
    s = dataclasses.replace(settings, collection=name)
    marker = s.collection_dir / MARKER
    if marker.is_file():
        return s, False
    from c1.index.indexer import Indexer

    paths = list(files)
    if passages:
        corpora = settings.home / "eval" / "corpora"
        corpora.mkdir(parents=True, exist_ok=True)
        path = corpora / f"{name}.jsonl"
        tmp = path.with_suffix(".jsonl.tmp")
        with open(tmp, "w", encoding="utf-8") as f:
            for p in passages:
                f.write(json.dumps({"id": p.id, "title": p.title, "text": p.text}, ensure_ascii=False) + "\n")
        os.replace(tmp, path)
        paths.append(str(path))
    if not paths:
        raise C1Error(f"collection {name}: the corpus is empty")
    report = Indexer(s, embedder, progress=progress).run(paths)
    if report.skipped and report.total_chunks == 0:
        raise C1Error(f"collection {name}: nothing could be indexed ({report.skipped[0]['reason']})")
    marker.write_text(json.dumps({"documents": report.documents, "chunks": report.total_chunks,
                                  "skipped": report.skipped[:20]}, ensure_ascii=False))
    return s, True


# --- the run directory -------------------------------------------------------------------------


def config_key(ds: Dataset, options: EvalOptions, settings: Settings, embedder_name: str, model: str | None = None) -> dict:
    """What the results depend on (the list of systems, limit and concurrency are not part of it).

    ``model`` is the model the llm systems resolved to (None without llm systems).
    """
    from c1 import __version__

    return {
        "version": CONFIG_VERSION,
        "c1": __version__,
        "dataset": ds.name,
        "data": ds.fingerprint(),
        "setting": options.setting,
        "split": options.split,
        "k": settings.max_docs,
        "budget": settings.budget,
        "soft_threshold": settings.soft_threshold,
        "hard_cutoff": settings.hard_cutoff,
        "max_turns": settings.max_turns,
        "model": model,
        "temperature": settings.temperature,
        "reasoning_effort": settings.reasoning_effort,
        "seed": options.seed,
        "embedder": embedder_name,
        "chunk_tokens": settings.chunk_tokens,
        "chunk_overlap": settings.chunk_overlap,
    }


def default_run_dir(settings: Settings, key: dict) -> Path:
    h = hashlib.blake2b(json.dumps(key, sort_keys=True).encode(), digest_size=5).hexdigest()
    return settings.home / "eval" / "runs" / f"{key['dataset']}-{key['setting']}-{h}"


def prepare_run_dir(run_dir: Path, key: dict, force: bool, source: str) -> list[str]:
    """Create or check ``run_dir`` against ``key``; returns notes (what ``force`` moved aside)."""
    run_dir.mkdir(parents=True, exist_ok=True)
    cfg_path = run_dir / "config.json"
    notes = []
    if cfg_path.is_file():
        try:
            old = json.loads(cfg_path.read_text()).get("key", {})
        except (OSError, ValueError):
            old = None
        if old != key:
            if not force:
                diff = _diff(old or {}, key)
                raise C1Error(f"{run_dir} holds a run with another config ({diff}): use another --out, "
                              "or --force to start it afresh")
            results = run_dir / "results.jsonl"
            if results.exists():
                aside = run_dir / f"results.replaced-{time.strftime('%Y%m%d-%H%M%S')}.jsonl"
                results.rename(aside)
                notes.append(f"--force: the earlier results (another config) were moved to {aside.name}")
    tmp = cfg_path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"key": key, "source": source}, indent=1, ensure_ascii=False))
    os.replace(tmp, cfg_path)
    return notes


def _diff(old: dict, new: dict) -> str:
    parts = []
    for k in sorted(set(old) | set(new)):
        if old.get(k) != new.get(k):
            a, b = old.get(k), new.get(k)
            if k == "data":
                parts.append("dataset content differs")
            else:
                parts.append(f"{k}: {a!r} → {b!r}")
    return "; ".join(parts[:4]) + ("; …" if len(parts) > 4 else "") if parts else "unreadable config.json"


def load_rows(path: Path) -> list[dict]:
    """Rows of a results.jsonl; a line cut short by a crash is ignored (it is recomputed)."""
    rows = []
    if not path.is_file():
        return rows
    with open(path, encoding="utf-8") as f:
        for line in f:
            try:
                row = json.loads(line)
            except ValueError:
                continue
            if isinstance(row, dict) and "system" in row and "qid" in row:
                rows.append(row)
    return rows


class RowWriter:
    def __init__(self, path: Path):
        if path.is_file() and path.stat().st_size:
            with open(path, "rb") as f:
                f.seek(-1, os.SEEK_END)
                if f.read(1) != b"\n":  # a line cut short by a crash: start on a fresh line
                    with open(path, "a", encoding="utf-8") as g:
                        g.write("\n")
        self.f = open(path, "a", encoding="utf-8")

    def write(self, row: dict) -> None:
        self.f.write(json.dumps(row, ensure_ascii=False) + "\n")
        self.f.flush()

    def close(self) -> None:
        self.f.close()


# --- the run -----------------------------------------------------------------------------------


def run_eval(settings: Settings, options: EvalOptions, progress: ProgressFn = lambda phase, done, total: None,
             note: Callable[[str], None] = lambda line: None) -> EvalRun:
    """Run (or resume) an eval and write its run directory; returns the summary."""
    from c1.store.embedders import make_embedder
    from c1.eval.datasets import load_dataset, select
    from c1.eval.report import aggregate

    started = time.perf_counter()
    if options.setting not in SETTINGS:
        raise C1Error(f"--setting must be one of {', '.join(SETTINGS)}, not {options.setting!r}")
    if options.limit is not None and options.limit < 1:
        raise C1Error("--limit must be at least 1")
    ds = load_dataset(options.dataset, options.path, split=options.split, docs=options.docs)
    per_question = options.setting == "per-question"
    if per_question and not ds.per_question:
        raise C1Error(f"{ds.name} has no per-question corpus: use --setting pooled")
    for line in ds.notes:
        note(line)
    systems = parse_systems(options.systems or settings.policy, settings.parallel)
    choices, systems = _resolve_policies(settings, systems)
    embedder = make_embedder(settings.embed_url, settings.embed_model, settings.embed_api_key)
    models = sorted({str(getattr(c.factory(0), "model", "")) for c in choices.values() if c.name == "llm"})
    key = config_key(ds, options, settings, embedder.name, ", ".join(models) or None)
    run_dir = Path(options.out).expanduser() if options.out else default_run_dir(settings, key)
    notes = prepare_run_dir(run_dir, key, options.force, str(Path(options.path).expanduser().resolve()))
    for line in notes:
        note(line)
    questions = select(ds.questions, options.limit, options.seed)
    results_path = run_dir / "results.jsonl"
    labels = [s.label for s in systems]
    done = {(r["system"], r["qid"]) for r in load_rows(results_path)}
    todo = [(q, [s for s in systems if (s.label, q.id) not in done]) for q in questions]
    todo = [(q, ss) for q, ss in todo if ss]

    # collections
    if per_question:
        collections = {}
        need = [q for q, _ in todo]
        for i, q in enumerate(need):
            progress("index", i, len(need))
            name = collection_name(ds.name, corpus_fingerprint(q.passages, q.files), settings, embedder.name, True)
            collections[q.id] = ensure_collection(settings, embedder, name, q.passages, q.files)[0]
        progress("index", len(need), len(need))
        corpus_note = f"per-question: one collection per question ({len(questions)})"
    else:
        name = collection_name(ds.name, corpus_fingerprint(ds.passages or [], ds.files or []), settings, embedder.name, False)
        size = len(ds.passages) if ds.passages is not None else len(ds.files or [])

        def indexing(p) -> None:  # chunks for passages (short ones are one chunk each), else files
            if ds.passages is not None:
                progress("index", p.chunks_done, max(size, p.chunks_done))
            else:
                progress("index", p.files_done, p.files_total)

        pooled, _ = ensure_collection(settings, embedder, name, ds.passages or [], ds.files or [], indexing)
        corpus_note = f"pooled: collection {name} ({size} {'passages' if ds.passages is not None else 'files'})"

    # searches
    computed = 0
    total = sum(len(ss) for _, ss in todo)
    writer = RowWriter(results_path)
    try:
        if todo:
            progress("search", 0, total)
            if per_question:
                def job(q, ss):
                    return _run_question(collections[q.id], embedder, q, ss, choices, ds.gold_kind)
                computed = _pool_run(todo, job, options.concurrency, writer, progress, total)
            else:
                from c1.retrieval.corpus import Corpus

                corpus = Corpus(pooled, embedder)
                try:
                    computed = _pool_run(
                        todo, lambda q, ss: [run_one(corpus, pooled, q, s, choices.get(s.label), ds.gold_kind) for s in ss],
                        options.concurrency, writer, progress, total)
                finally:
                    corpus.close()
    finally:
        writer.close()

    # summary
    wanted = {q.id for q in questions}
    latest: dict[tuple[str, str], dict] = {}
    for r in load_rows(results_path):
        if r["qid"] in wanted and r["system"] in labels:
            latest[(r["system"], r["qid"])] = r
    summaries = []
    for s in systems:
        rows = [latest[(s.label, q.id)] for q in questions if (s.label, q.id) in latest]
        summaries.append({"system": s.label, "kind": s.kind, **aggregate(rows),
                          "computed": sum(1 for q, ss in todo if s in ss),
                          "note": choices[s.label].note if s.label in choices else f"single-shot {s.kind}, top k documents"})
    summary = {
        "dataset": ds.name,
        "path": str(Path(options.path).expanduser().resolve()),
        "setting": options.setting,
        "k": settings.max_docs,
        "questions": len(questions),
        "corpus": corpus_note,
        "run_dir": str(run_dir),
        "config": {**key, "systems": labels, "limit": options.limit, "concurrency": options.concurrency},
        "systems": summaries,
        "notes": ds.notes + notes,
        "seconds": round(time.perf_counter() - started, 2),
        "plot": None,
    }
    write_reports(summary, run_dir, options.plot, note)
    return EvalRun(summary, run_dir, computed, [latest[k] for k in latest])


def write_reports(summary: dict, run_dir: Path, want_plot: bool, note: Callable[[str], None]) -> None:
    from c1.eval import report

    if want_plot:
        path = run_dir / "plot.png"
        why = report.plot(summary, path)
        if why:
            note(why)
        else:
            summary["plot"] = str(path)
    (run_dir / "report.md").write_text(report.markdown(summary), encoding="utf-8")
    tmp = run_dir / "summary.json.tmp"
    tmp.write_text(json.dumps(summary, indent=1, ensure_ascii=False), encoding="utf-8")
    os.replace(tmp, run_dir / "summary.json")


def _resolve_policies(settings: Settings, systems: list[System]) -> tuple[dict, list[System]]:
    """Choose each agent system's policy once (``auto`` becomes what it resolves to)."""
    from c1.agent.policies import choose_policy

    choices, out = {}, []
    for s in systems:
        if s.kind != "agent":
            out.append(s)
            continue
        choice = choose_policy(dataclasses.replace(settings, policy=s.policy, parallel=s.parallel))
        if s.policy == "auto":
            label = choice.name if s.parallel == 1 else f"{choice.name}@{s.parallel}"
            s = System(label, "agent", choice.name, s.parallel)
        if s.label in choices:
            continue
        choices[s.label] = choice
        out.append(s)
    return choices, out


def _run_question(settings: Settings, embedder, q: Question, systems: list[System], choices: dict, gold_kind: str) -> list[dict]:
    from c1.retrieval.corpus import Corpus

    corpus = Corpus(settings, embedder)
    try:
        return [run_one(corpus, settings, q, s, choices.get(s.label), gold_kind) for s in systems]
    finally:
        corpus.close()


def _pool_run(todo, job, concurrency: int, writer: RowWriter, progress: ProgressFn, total: int) -> int:
    """Run ``job(question, systems)`` over ``todo`` with ``concurrency`` workers; write rows as they come."""
    done = 0
    if concurrency <= 1:
        for q, ss in todo:
            for row in job(q, ss):
                writer.write(row)
                done += 1
            progress("search", done, total)
        return done
    from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait

    pool = ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="c1-eval")
    try:
        items = iter(todo)
        running = set()
        for q, ss in items:  # keep at most 2×concurrency questions in flight
            running.add(pool.submit(job, q, ss))
            if len(running) >= 2 * concurrency:
                break
        while running:
            finished, running = wait(running, return_when=FIRST_COMPLETED)
            for fut in finished:
                for row in fut.result():
                    writer.write(row)
                    done += 1
                progress("search", done, total)
                nxt = next(items, None)
                if nxt is not None:
                    running.add(pool.submit(job, *nxt))
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
    return done
