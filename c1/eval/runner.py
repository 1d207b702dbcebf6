"""Running an eval: dataset → collection(s) → every system on every question → scored rows.

The run lives in a directory (:mod:`c1.eval.run_dir`); a restarted run computes only the
(system, question) pairs missing from it. The collections are built, or reused, by
:mod:`c1.eval.collection`; each pair is run and scored by :mod:`c1.eval.scoring`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from c1.config import Settings
from c1.eval.collection import collection_name, ensure_collection
from c1.eval.datasets import SETTINGS, Dataset, Question, corpus_fingerprint
from c1.eval.run_dir import RowWriter, config_key, default_run_dir, load_rows, prepare_run_dir, write_reports
from c1.eval.scoring import run_one
from c1.eval.settings import EvalOptions
from c1.eval.systems import System, parse_systems, resolve_policies
from c1.errors import C1Error


@dataclass
class EvalRun:
    summary: dict
    run_dir: Path
    computed: int
    rows: list[dict] = field(default_factory=list)


ProgressFn = Callable[[str, int, int], None]
"""(phase, done, total): phase is ``index`` (collections) or ``search`` (questions)."""


def run_eval(settings: Settings, options: EvalOptions, progress: ProgressFn = lambda phase, done, total: None,
             note: Callable[[str], None] = lambda line: None) -> EvalRun:
    """Run (or resume) an eval and write its run directory; returns the summary."""
    from c1.store.embedders import make_embedder
    from c1.eval.datasets import load_dataset, select

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
    choices, systems = resolve_policies(settings, systems)
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

    if per_question:
        collections = _index_per_question(settings, embedder, ds, [q for q, _ in todo], progress)
        corpus_note = f"per-question: one collection per question ({len(questions)})"
    else:
        pooled, corpus_note = _index_pooled(settings, embedder, ds, progress)

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
                computed = _search_pooled(pooled, embedder, todo, choices, ds.gold_kind, options.concurrency,
                                          writer, progress, total)
    finally:
        writer.close()

    latest = _latest_rows(results_path, {q.id for q in questions}, labels)
    summary = {
        "dataset": ds.name,
        "path": str(Path(options.path).expanduser().resolve()),
        "setting": options.setting,
        "k": settings.max_docs,
        "questions": len(questions),
        "corpus": corpus_note,
        "run_dir": str(run_dir),
        "config": {**key, "systems": labels, "limit": options.limit, "concurrency": options.concurrency},
        "systems": _system_summaries(systems, questions, latest, todo, choices),
        "notes": ds.notes + notes,
        "seconds": round(time.perf_counter() - started, 2),
        "plot": None,
    }
    write_reports(summary, run_dir, options.plot, note)
    return EvalRun(summary, run_dir, computed, [latest[k] for k in latest])


def _index_per_question(settings: Settings, embedder, ds: Dataset, need: list[Question],
                        progress: ProgressFn) -> dict[str, Settings]:
    """The collection of each question in ``need`` (question id → its settings), built when missing."""
    collections = {}
    for i, q in enumerate(need):
        progress("index", i, len(need))
        name = collection_name(ds.name, corpus_fingerprint(q.passages, q.files), settings, embedder.name, True)
        collections[q.id] = ensure_collection(settings, embedder, name, q.passages, q.files)[0]
    progress("index", len(need), len(need))
    return collections


def _index_pooled(settings: Settings, embedder, ds: Dataset, progress: ProgressFn) -> tuple[Settings, str]:
    """The one collection of the whole corpus, built when missing; and the summary's line about it."""
    name = collection_name(ds.name, corpus_fingerprint(ds.passages or [], ds.files or []), settings, embedder.name, False)
    size = len(ds.passages) if ds.passages is not None else len(ds.files or [])

    def indexing(p) -> None:  # chunks for passages (short ones are one chunk each), else files
        if ds.passages is not None:
            progress("index", p.chunks_done, max(size, p.chunks_done))
        else:
            progress("index", p.files_done, p.files_total)

    pooled, _ = ensure_collection(settings, embedder, name, ds.passages or [], ds.files or [], indexing)
    return pooled, f"pooled: collection {name} ({size} {'passages' if ds.passages is not None else 'files'})"


def _search_pooled(pooled: Settings, embedder, todo, choices: dict, gold_kind: str, concurrency: int,
                   writer: RowWriter, progress: ProgressFn, total: int) -> int:
    """Every question of ``todo`` on the pooled collection, opened once for all of them."""
    from c1.retrieval.corpus import Corpus

    corpus = Corpus(pooled, embedder)
    try:
        return _pool_run(todo, lambda q, ss: [run_one(corpus, pooled, q, s, choices.get(s.label), gold_kind) for s in ss],
                         concurrency, writer, progress, total)
    finally:
        corpus.close()


def _latest_rows(results_path: Path, wanted: set[str], labels: list[str]) -> dict[tuple[str, str], dict]:
    """(system, question id) → the last row of the run directory's results, for this run's systems and questions."""
    latest: dict[tuple[str, str], dict] = {}
    for r in load_rows(results_path):
        if r["qid"] in wanted and r["system"] in labels:
            latest[(r["system"], r["qid"])] = r
    return latest


def _system_summaries(systems: list[System], questions: list[Question], latest: dict, todo, choices: dict) -> list[dict]:
    from c1.eval.report import aggregate

    summaries = []
    for s in systems:
        rows = [latest[(s.label, q.id)] for q in questions if (s.label, q.id) in latest]
        summaries.append({"system": s.label, "kind": s.kind, **aggregate(rows),
                          "computed": sum(1 for q, ss in todo if s in ss),
                          "note": choices[s.label].note if s.label in choices else f"single-shot {s.kind}, top k documents"})
    return summaries


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
