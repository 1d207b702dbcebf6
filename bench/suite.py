#!/usr/bin/env python3
"""The development suite: every kind of corpus in ../shared/data, one table per run.

Kinds (each its own collection, built once and kept under ``bench/out/suite/<kind>-<embedder>``, so a
re-run costs only the searches; a new default embedder gets new collections):

- ``hotpotqa``: the 200 HotpotQA dev-distractor questions over all their paragraphs pooled;
- ``musique``: the 99 MuSiQue-Ans questions (2-4 hops) over all their paragraphs pooled;
- ``financebench``: the 18 FinanceBench questions over their 18 filings and the 3 SEC filings (21
  PDFs); rank 1 = the right filing first, full = the right filing in the top k, found = a gold page
  among the returned chunks;
- ``mail``: the 993 Enron messages (the maildir as a folder); the question is a message's subject line
  ("RE:" dropped; subjects of 3+ words that one message alone carries), the gold is that message and
  its copies in other folders (bench/known_item.py's rule);
- ``legal``: the 165 LegalBench-RAG questions over ../shared/data/legal/files indexed as a FOLDER of
  .txt files, as a user would; gold = the question's file, found = a returned chunk overlaps a gold span;
- ``sheets``: a personal folder built here from fixed rules: a sales workbook (.xlsx), an inventory and
  a contacts sheet (.csv), a budget workbook with the same columns as the sales one, meeting notes that
  name a contact, and 150 HotpotQA paragraphs as unrelated notes. Questions: a row by its values
  ("West region Q4 sales 2023", gold the workbook, found = the row's figure among the returned chunks),
  a row by a column name and a value ("email of Dana Whitfield"), and a hop from a note to the contacts
  sheet ("phone number of the person I met about the warehouse lease": gold the note AND contacts.csv);
- ``scifact``: SciFact's 5,183 abstracts pooled; a claim is the question, gold = its evidence abstracts.
  Only the claims of even number are run (``--split dev``); the odd half is held out (``--split held``,
  kind ``scifact-held``) for figures nobody tuned on.

Natural questions (``--natural also``, the default): where ``bench/natural/<kind>.jsonl`` exists, its
hand-written questions run on the same collection as kind ``<kind>-nat`` (and ``<kind>-nat-lc``),
beside the benchmark's; ``--natural only`` runs them alone, ``--natural no`` leaves them out.

Every kind also runs lower-cased (``<kind>-lc``: the same questions, ``question.lower()``; goal: every
figure within 0.02 of the original's). Systems: ``hybrid`` (one search, c1/eval's baseline),
``builtin`` (the built-in policy, one run) and ``builtin@4`` (four runs fused), all at the same k.
Columns: answer found (an answer string among the returned texts; kinds without one: a gold document
returned), full recall (every gold document returned), rank 1 (the first document is gold), the median
seconds per question. Then each figure's 95 % bootstrap interval over questions, the paired interval of
every difference (each later system − each earlier one, lower-cased − typed, and with ``--vs LABEL`` this
run − a saved one, paired by question id; ``*`` = the interval excludes 0: bench/suite_tables.py), and
the built-in policy's calibration per kind: the expected calibration error (10 equal bands) and the gold
share in each confidence band. Each run's rows are kept in ``bench/out/suite-runs/<label or last>.jsonl``.

    python bench/suite.py                                     # everything (long: hours on 2 shared cores)
    python bench/suite.py --limit 20 --kinds legal,mail       # a quick look (~minutes once built)
    python bench/suite.py --limit 30 --systems hybrid,builtin --no-lower
    python bench/suite.py --kinds legal,scifact --label before        # then, after a change:
    python bench/suite.py --kinds legal,scifact --vs before           # paired against it
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.suite_tables import ece  # noqa: E402,F401  (bench/calibration_fit.py reads it here)
from bench.textpool import shared_data  # noqa: E402

OUT = REPO / "bench" / "out"
SUITE = OUT / "suite"
RUNS = OUT / "suite-runs"
KINDS = ("hotpotqa", "musique", "financebench", "mail", "legal", "sheets", "scifact")
SYSTEMS = ("hybrid", "builtin", "builtin@4")
"""Also ``llm`` (the model policy, with ``--base-url``: bench/llm_eval.py --kinds starts a llama.cpp
server and runs it so)."""
COSTS = ("turns", "tool_calls", "pruned", "prompt_tokens", "completion_tokens", "errors", "cut_retries")
"""What an agent run's stats say of its cost, kept in each row (``cost``) beside its stop reasons."""
SHEETS_VERSION = 1


@dataclasses.dataclass
class Item:
    qid: str
    question: str
    gold: tuple[str, ...]
    """Keys of the documents needed (what ``Case.key`` gives a returned document)."""
    answers: tuple[str, ...] = ()
    pages: tuple[str, ...] = ()
    """FinanceBench: the gold ``<file>#p<page>`` keys."""
    spans: tuple[tuple[str, int, int], ...] = ()
    """Legal: the gold ``(relpath, start, end)`` character spans."""
    copies: dict = dataclasses.field(default_factory=dict)
    """A gold key → the keys of its copies (a returned copy counts as the gold document)."""


@dataclasses.dataclass
class Case:
    kind: str
    home: Path
    collection: str
    items: list[Item]
    key: str = "source_id"
    """How a returned document maps onto a gold key: ``source_id``, ``relpath`` (path under ``root``),
    ``basename`` or ``id``."""
    root: str = ""


# --- the collections -------------------------------------------------------------------------


def _embedder(name: str = ""):
    """c1's default embedder for new collections, or ``minilm`` (the one before bge-small)."""
    from c1.store.embedders import MiniLMEmbedder, make_embedder

    return MiniLMEmbedder() if name == "minilm" else make_embedder()


def _index_folder(home: Path, folders: list[Path], embedder) -> None:
    """Index ``folders`` into ``home`` (collection ``suite``) unless done."""
    from c1.config import load_settings
    from c1.index.indexer import Indexer

    settings = load_settings().with_flags(home=str(home), collection="suite")
    marker = settings.collection_dir / "suite-ready.json"
    if marker.is_file():
        return
    print(f"indexing {', '.join(str(f) for f in folders)} into {home} (once)", file=sys.stderr)
    report = Indexer(settings, embedder).run([str(f) for f in folders])
    marker.write_text(json.dumps({"documents": report.documents, "chunks": report.total_chunks}))


def passage_case(kind: str, embedder, split: str = "dev") -> Case:
    """A passage corpus pooled into one collection: HotpotQA, MuSiQue, or SciFact (its claims of ``split``)."""
    from bench.multihop import FILES
    from c1.config import load_settings
    from c1.eval.datasets import corpus_fingerprint, load_dataset
    from c1.eval.collection import collection_name, ensure_collection

    if kind == "scifact":  # the generic jsonl layout: corpus.jsonl beside the claims
        ds = load_dataset("jsonl", shared_data() / "scifact" / "claims_train.jsonl")
    else:
        folder, name = FILES[kind]
        ds = load_dataset(kind, shared_data() / folder / name)
    home = SUITE / f"{kind}-{embedder.name}"
    settings = load_settings().with_flags(home=str(home))
    coll = collection_name(kind, corpus_fingerprint(ds.passages, []), settings, embedder.name, False)
    settings, built = ensure_collection(settings, embedder, coll, ds.passages)
    questions = [q for q in ds.questions if kind != "scifact" or scifact_split(q.id) == split]
    items = [Item(q.id, q.question, tuple(q.gold), tuple(q.answers)) for q in questions]
    return Case(kind if kind != "scifact" or split == "dev" else "scifact-held", home, coll, items)


def scifact_split(qid: str) -> str:
    """``dev`` for a claim whose number is even (``train-12``), ``held`` for an odd one: the held half is
    kept out of development (``--split held`` measures it)."""
    m = re.search(r"(\d+)$", qid)
    return "dev" if m and int(m[1]) % 2 == 0 else "held"


def financebench_case(embedder) -> Case:
    from c1.eval.datasets import load_financebench

    from bench.financebench import COLLECTION, build

    home = SUITE / f"financebench-{embedder.name}"
    data = shared_data()
    build(home, embedder)  # bench/financebench.py's collection of the 21 filings (long to build: once)
    ds = load_financebench(data / "financebench" / "financebench_dev_18.jsonl", data / "financebench" / "pdfs")
    items = [Item(q.id, q.question, (q.meta["doc_name"] + ".pdf",), pages=tuple(q.gold)) for q in ds.questions]
    return Case("financebench", home, COLLECTION, items, key="basename")


def mail_case(embedder) -> Case:
    from bench.known_item import mail_items
    from c1.retrieval.corpus import Corpus
    from c1.config import load_settings

    home = SUITE / f"mail-{embedder.name}"
    _index_folder(home, [shared_data() / "enron" / "maildir"], embedder)
    cache = home / "items.json"
    if cache.is_file():
        items = [Item(**x) for x in json.loads(cache.read_text())]
    else:
        corpus = Corpus(load_settings().with_flags(home=str(home), collection="suite"), embedder)
        try:
            got = [i for i in mail_items(corpus, 10_000) if i.kind == "subject"]
        finally:
            corpus.close()
        items = [Item(f"subject-{n}", i.question, tuple(i.gold)) for n, i in enumerate(got)]
        cache.write_text(json.dumps([dataclasses.asdict(i) for i in items], ensure_ascii=False))
    return Case("mail", home, "suite", items, key="id")


def legal_case(embedder) -> Case:
    root = shared_data() / "legal" / "files"
    home = SUITE / f"legal-{embedder.name}"
    _index_folder(home, [root], embedder)
    items = []
    for line in (shared_data() / "legal" / "queries.jsonl").read_text().splitlines():
        if line.strip():
            r = json.loads(line)
            spans = tuple((f, int(a), int(b)) for f, a, b in r.get("gold_spans", ()))
            items.append(Item(r["id"], r["question"], tuple(r["gold_ids"]), spans=spans))
    return Case("legal", home, "suite", items, key="relpath", root=str(root.resolve()))


# --- the spreadsheet case --------------------------------------------------------------------

def _sheets_files(folder: Path) -> list[Item]:
    """Write the spreadsheet folder (fixed seed) and return its questions (bench/suite_sheets.py)."""
    from bench import suite_sheets

    return suite_sheets.write(folder, Item)


def _interleaved(items: list[Item]) -> list[Item]:
    from bench import suite_sheets

    return suite_sheets.interleaved(items)


def sheets_case(embedder) -> Case:
    root = SUITE / f"sheets-files-v{SHEETS_VERSION}"
    cache = root.parent / f"sheets-items-v{SHEETS_VERSION}.json"
    if cache.is_file() and root.is_dir():
        items = _interleaved([Item(**x) for x in json.loads(cache.read_text())])
    else:
        items = _sheets_files(root)
        cache.write_text(json.dumps([dataclasses.asdict(i) for i in items], ensure_ascii=False))
    home = SUITE / f"sheets-v{SHEETS_VERSION}-{embedder.name}"
    _index_folder(home, [root], embedder)
    return Case("sheets", home, "suite", items, key="relpath", root=str(root.resolve()))


CASES = {"hotpotqa": lambda e, split: passage_case("hotpotqa", e),
         "musique": lambda e, split: passage_case("musique", e),
         "scifact": lambda e, split: passage_case("scifact", e, split),
         "financebench": lambda e, split: financebench_case(e), "mail": lambda e, split: mail_case(e),
         "legal": lambda e, split: legal_case(e), "sheets": lambda e, split: sheets_case(e)}


def natural_case(case: Case, kind: str, natural: Path | None = None) -> Case | None:
    """``<kind>-nat``: the kind's natural questions (bench/natural/<kind>.jsonl) on the same collection,
    or None without a file. Mail's are keyed by the message's path under the maildir."""
    from bench import suite_natural

    items = suite_natural.items(kind, Item, natural)
    if items is None:
        return None
    nat = dataclasses.replace(case, kind=f"{kind}-nat", items=items)
    if kind == "mail":
        nat = dataclasses.replace(nat, key="relpath", root=str((shared_data() / "enron" / "maildir").resolve()))
    return nat


# --- running ---------------------------------------------------------------------------------


def _key(case: Case, doc: dict) -> str:
    import os

    if case.key == "source_id":
        return doc.get("source_id") or doc["id"]
    if case.key == "id":
        return doc["id"]
    path = doc.get("path") or ""
    if case.key == "basename":
        return os.path.basename(path)
    real = os.path.realpath(path)
    return os.path.relpath(real, case.root) if real.startswith(case.root + os.sep) else path


def keys_of(case: Case, it: Item, docs: list[dict]) -> list[str]:
    """The gold keys of the returned documents (a copy of a gold document counts as it)."""
    alias = {c: g for g, copies in it.copies.items() for c in copies}
    return [alias.get(k, k) for k in (_key(case, d) for d in docs)]


def span_hit(spans: tuple, keys: list[str], docs: list[dict]) -> bool:
    """Whether a returned chunk overlaps a gold span of its own document."""
    for key, d in zip(keys, docs):
        for c in d.get("chunks", []):
            at = c.get("span")
            if at and any(f == key and at[0] < end and start < at[1] for f, start, end in spans):
                return True
    return False


def found(it: Item, keys: list[str], docs: list[dict], corpus) -> bool:
    """A gold page among the returned chunks (FinanceBench), else a chunk in a gold span (legal), else an
    answer string among the returned texts, else a gold document returned."""
    from c1.eval.metrics import contains_answer
    from c1.eval.scoring import Keys

    if it.pages:
        pk = Keys(corpus, it.pages, "page")
        return any(x in set(it.pages) for d in docs for x in pk.document(d))
    if it.spans:
        return span_hit(it.spans, keys, docs)
    if it.answers:
        texts = ["\n".join([d.get("title") or "", *(c["text"] for c in d.get("chunks", []))]) for d in docs]
        return any(contains_answer(a, texts) for a in it.answers)
    return bool(set(it.gold) & set(keys))


def unsupported(case: Case, n: int, seed: int = 0) -> list[Item]:
    """``n`` questions that no document of the case supports: three to five content words of its
    questions drawn at random (seeded), as in "quantum sourdough starters Mars" — every word is in the
    corpus, the combination in no document (bench/confidence_fit.py's ``nonsense``). Their gold is
    empty: whatever is returned for them is junk, so they show what confidence junk gets."""
    from bench.confidence_fit import nonsense

    return [Item(f"unsupported-{i}", q, ()) for i, q in enumerate(nonsense([it.question for it in case.items], n, seed))]


def run_case(case: Case, systems: list[str], k: int, limit: int | None, lower: bool, embedder,
             n_unsupported: int = 0, model: dict | None = None) -> list[dict]:
    """Every question of ``case`` through each system. ``model``: the settings the agent runs take besides
    the policy (``base_urls`` and ``model`` for ``llm``; ``budget``, ``max_turns``: the same for every
    policy), from :func:`_model_settings`."""
    from c1.retrieval.corpus import Corpus
    from c1.agent.policies import choose_policy
    from c1.agent.search import run_search
    from c1.retrieval.confidence import calibration
    from c1.config import load_settings
    from c1.eval.baselines import retrieve

    settings = load_settings().with_flags(home=str(case.home), collection=case.collection, max_docs=k)
    corpus = Corpus(settings, embedder)
    items = case.items[:limit] if limit else case.items
    variants = [("", lambda q: q)] + ([("-lc", str.lower)] if lower else [])
    junk = unsupported(case, n_unsupported) if n_unsupported else []
    rows = []
    try:
        for system in systems:
            name, _, n = system.partition("@")
            parallel = int(n or 1)
            own = {f: v for f, v in (model or {}).items() if name == "llm" or f in ("budget", "max_turns")}
            choice = None if name == "hybrid" else choose_policy(settings.with_flags(policy=name, **own))
            s = settings.with_flags(policy=name, parallel=parallel, **own) if choice else settings
            runs = [(suffix, form, items) for suffix, form in variants]
            if junk and choice is not None:
                runs.append(("-none", lambda q: q, junk))
            for suffix, form, questions in runs:
                for it in questions:
                    q = form(it.question)
                    corpus.clear_query_cache()
                    t0 = time.perf_counter()
                    stats = {}
                    if choice is None:
                        docs = retrieve(corpus, "hybrid", q, k)
                    else:
                        result = run_search(corpus, s, q, choice.factory)
                        docs, stats = result.documents, result.stats
                    seconds = time.perf_counter() - t0
                    keys = keys_of(case, it, docs)
                    gold = set(it.gold)
                    rows.append({
                        "kind": case.kind + suffix, "system": system, "qid": it.qid, "question": q,
                        "found": found(it, keys, docs, corpus), "full": gold <= set(keys),
                        "rank1": bool(keys) and keys[0] in gold, "seconds": round(seconds, 3), "returned": keys,
                        "scores": [d.get("score") for d in docs], "gold_flags": [x in gold for x in keys],
                        **({"supported": stats["supported"], "calibration": calibration()} if "supported" in stats else {}),
                        **({"cost": _cost(stats), "stop": stats.get("stop_reasons") or []} if stats else {}),
                    })
                print(f"  {case.kind}{suffix} {system}: {len(questions)} questions", file=sys.stderr)
    finally:
        corpus.close()
    return rows


def _cost(stats: dict) -> dict:
    """``COSTS`` from a search's stats (the tokens are under ``stats["tokens"]``)."""
    tokens = stats.get("tokens") or {}
    return {c: stats.get(c, tokens.get(c.removesuffix("_tokens"))) for c in COSTS}


# --- the command -----------------------------------------------------------------------------


def _args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kinds", default=",".join(KINDS), help=f"from {', '.join(KINDS)}")
    ap.add_argument("--systems", default=",".join(SYSTEMS))
    ap.add_argument("-k", type=int, default=5)
    ap.add_argument("--limit", type=int, default=0, help="the first N questions of each kind")
    ap.add_argument("--no-lower", action="store_true", help="leave out the lower-cased variants")
    ap.add_argument("--natural", choices=("also", "only", "no"), default="also",
                    help="the natural questions of bench/natural/<kind>.jsonl (kind <kind>-nat): beside the "
                         "benchmark's (also), alone (only) or not at all (no)")
    ap.add_argument("--split", choices=("dev", "held"), default="dev",
                    help="scifact: the claims of even number (dev) or the held-out odd ones (held)")
    ap.add_argument("--unsupported", type=int, default=0, metavar="N",
                    help="also N questions per kind that nothing supports (kind <kind>-none, built-in systems only)")
    ap.add_argument("--rows", type=Path, help="per-question rows (JSONL) here")
    ap.add_argument("--label", default="", help="a name for this run in bench/out/suite.jsonl; its rows are kept "
                    "in bench/out/suite-runs/LABEL.jsonl (unlabelled: last.jsonl)")
    ap.add_argument("--vs", default="", metavar="LABEL",
                    help="compare with a saved run (a --label, 'last', or a --rows file), paired by question")
    ap.add_argument("--embedder", default="", choices=("", "minilm"), help="minilm: the embedder before bge-small")
    ap.add_argument("--base-url", default="", help="the OpenAI-compatible server of system llm")
    ap.add_argument("--model", default="", help="its model name")
    ap.add_argument("--budget", type=int, default=0, help="the context budget of every agent run (0: c1's default)")
    ap.add_argument("--max-turns", type=int, default=0, help="the turn limit of every agent run (0: c1's default)")
    return ap.parse_args(argv)


def _model_settings(args) -> dict:
    """What ``run_case`` gives every agent run besides its policy (temperature 0 and a seed for a model)."""
    out = {"budget": args.budget or None, "max_turns": args.max_turns or None}
    if args.base_url:
        out.update(base_urls=(args.base_url,), model=args.model or None, temperature=0.0, seed=0)
    return {k: v for k, v in out.items() if v is not None}


def _cases(kinds: list[str], args, embedder) -> list[tuple[Case, int]]:
    """(case, questions nothing supports) to run, in order: each kind, then its natural questions."""
    from bench import suite_natural

    out = []
    for kind in kinds:
        case = CASES[kind](embedder, args.split)
        if args.natural != "only":
            out.append((case, args.unsupported))
        if args.natural != "no":
            nat = natural_case(case, kind)
            if nat is not None:
                out.append((nat, 0))
            elif args.natural == "only":
                print(f"suite: no {suite_natural.path_for(kind)}; {kind} left out", file=sys.stderr)
    return out


def main(argv: list[str] | None = None) -> int:
    from bench import suite_natural, suite_tables

    args = _args(argv)
    kinds = [x.strip() for x in args.kinds.split(",") if x.strip()]
    bad = [x for x in kinds if x not in CASES]
    if bad:
        print(f"suite: unknown kind {bad[0]!r} (kinds: {', '.join(KINDS)})", file=sys.stderr)
        return 2
    try:
        saved = (args.vs, suite_tables.load_run(RUNS, args.vs)) if args.vs else None
        if args.natural != "no":  # every file's form before any collection is built
            for kind in kinds:
                if suite_natural.path_for(kind).is_file():
                    suite_natural.read(suite_natural.path_for(kind))
    except ValueError as exc:
        print(f"suite: {exc}", file=sys.stderr)
        return 2
    systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    if "llm" in systems and not args.base_url:
        print("suite: system llm needs --base-url (bench/llm_eval.py --kinds starts a server)", file=sys.stderr)
        return 2
    embedder = _embedder(args.embedder)
    started = time.perf_counter()
    rows = []
    for case, junk in _cases(kinds, args, embedder):
        rows += run_case(case, systems, args.k, args.limit or None, not args.no_lower, embedder, junk, _model_settings(args))
    text, summary = suite_tables.tables(rows, systems, saved)
    print(f"\ndevelopment suite, k = {args.k}, limit {args.limit or 'none'}, embedder {embedder.name}, "
          f"scifact split {args.split}, {time.perf_counter() - started:.0f} s\n")
    print(text)
    from bench.report import save

    report = {"bench": "suite", "label": args.label, "k": args.k, "limit": args.limit or None, "embedder": embedder.name,
              "split": args.split, "vs": args.vs or None, "time": time.strftime("%Y-%m-%dT%H:%M:%S"), "summary": summary}
    save(report, OUT / "suite.jsonl", rows, args.rows)
    RUNS.mkdir(parents=True, exist_ok=True)
    with open(suite_tables.run_path(RUNS, args.label), "w") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
