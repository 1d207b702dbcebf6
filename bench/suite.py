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
  .txt files, as a user would; gold = the question's file;
- ``sheets``: a personal folder built here from fixed rules: a sales workbook (.xlsx), an inventory and
  a contacts sheet (.csv), a budget workbook with the same columns as the sales one, meeting notes that
  name a contact, and 150 HotpotQA paragraphs as unrelated notes. Questions: a row by its values
  ("West region Q4 sales 2023", gold the workbook, found = the row's figure among the returned chunks),
  a row by a column name and a value ("email of Dana Whitfield"), and a hop from a note to the contacts
  sheet ("phone number of the person I met about the warehouse lease": gold the note AND contacts.csv).

Every kind also runs lower-cased (``<kind>-lc``: the same questions, ``question.lower()``; goal: every
figure within 0.02 of the original's). Systems: ``hybrid`` (one search, c1/eval's baseline),
``builtin`` (the built-in policy, one run) and ``builtin@4`` (four runs fused), all at the same k.
Columns: answer found (an answer string among the returned texts; kinds without one: a gold document
returned), full recall (every gold document returned), rank 1 (the first document is gold), the median
seconds per question. A second table gives the built-in policy's calibration per kind: the expected
calibration error (10 equal bands) and the gold share in each confidence band.

    python bench/suite.py                                     # everything (long: hours on 2 shared cores)
    python bench/suite.py --limit 20 --kinds legal,mail       # a quick look (~minutes once built)
    python bench/suite.py --limit 30 --systems hybrid,builtin --no-lower
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import random
import re
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.textpool import shared_data  # noqa: E402

OUT = REPO / "bench" / "out"
SUITE = OUT / "suite"
KINDS = ("hotpotqa", "musique", "financebench", "mail", "legal", "sheets")
SYSTEMS = ("hybrid", "builtin", "builtin@4")
BANDS = ((0.8, 1.01, "≥ 0.8"), (0.5, 0.8, "0.5-0.8"), (0.2, 0.5, "0.2-0.5"), (0.05, 0.2, "0.05-0.2"), (0.0, 0.05, "< 0.05"))
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


def passage_case(kind: str, embedder) -> Case:
    from bench.multihop import FILES
    from c1.config import load_settings
    from c1.eval.datasets import corpus_fingerprint, load_dataset
    from c1.eval.runner import collection_name, ensure_collection

    folder, name = FILES[kind]
    ds = load_dataset(kind, shared_data() / folder / name)
    home = SUITE / f"{kind}-{embedder.name}"
    settings = load_settings().with_flags(home=str(home))
    coll = collection_name(ds.name, corpus_fingerprint(ds.passages, []), settings, embedder.name, False)
    settings, built = ensure_collection(settings, embedder, coll, ds.passages)
    items = [Item(q.id, q.question, tuple(q.gold), tuple(q.answers)) for q in ds.questions]
    return Case(kind, home, coll, items)


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
            items.append(Item(r["id"], r["question"], tuple(r["gold_ids"])))
    return Case("legal", home, "suite", items, key="relpath", root=str(root.resolve()))


# --- the spreadsheet case --------------------------------------------------------------------

REGIONS = ("North", "South", "East", "West", "Central")
PRODUCTS = ("Widgets", "Gaskets", "Valves")
FIRST = ("Dana", "Marcus", "Priya", "Tomasz", "Elena", "Kwame", "Hiroshi", "Sofia", "Liam", "Aisha", "Mateo", "Ingrid",
         "Rahul", "Chloe", "Oskar", "Yara", "Felix", "Nadia", "Victor", "Greta")
LAST = ("Whitfield", "Okafor", "Lindqvist", "Brennan", "Castellano", "Nakamura", "Abernathy", "Kowalczyk", "Delacroix",
        "Haddad", "Romero", "Sorensen", "Mwangi", "Petrov", "Quintero", "Fairbanks", "Iyer", "Moreau", "Holloway", "Varga")
COMPANIES = ("Corvel Logistics", "Brightwater Foods", "Halcyon Freight", "Tessaro Plastics", "Northgate Supply",
             "Alder & Finch", "Meridian Tooling", "Bluecrest Energy", "Oakmont Realty", "Quarry Lane Media")
TOPICS = ("the warehouse lease", "the spring catalogue", "the forklift maintenance contract", "the new packaging line",
          "the Denver trade show", "the freight rates for next year", "the office move", "the safety audit",
          "the payroll software", "the holiday shipping schedule")
WAREHOUSES = ("Reno", "Dayton", "Savannah", "Tacoma")


def _sheets_files(folder: Path) -> list[Item]:
    """Write the spreadsheet folder (fixed seed) and return its questions."""
    import csv

    import openpyxl

    from bench.textpool import hotpot_records

    rng = random.Random(18)
    folder.mkdir(parents=True, exist_ok=True)
    items: list[Item] = []
    # sales workbook: one row per region, quarter, year, product
    book = openpyxl.Workbook()
    sheet = book.active
    sheet.title = "Sales"
    sheet.append(["Region", "Quarter", "Year", "Product", "Units", "Sales (USD)"])
    rows = []
    for year in (2022, 2023):
        for q in ("Q1", "Q2", "Q3", "Q4"):
            for region in REGIONS:
                for product in PRODUCTS:
                    units = rng.randint(120, 990)
                    sales = units * rng.choice((37, 41, 53, 68))
                    sheet.append([region, q, year, product, units, sales])
                    rows.append((region, q, year, product, units, sales))
    book.save(folder / "regional_sales.xlsx")
    # budget workbook: the same region / quarter / year columns, other figures
    book = openpyxl.Workbook()
    sheet = book.active
    sheet.title = "Budget"
    sheet.append(["Region", "Quarter", "Year", "Department", "Budget (USD)"])
    for year in (2022, 2023):
        for q in ("Q1", "Q2", "Q3", "Q4"):
            for region in REGIONS:
                for dept in ("Marketing", "Operations"):
                    sheet.append([region, q, year, dept, rng.randint(20, 90) * 1000])
    book.save(folder / "department_budget.xlsx")
    # inventory
    with open(folder / "inventory.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["SKU", "Product", "Warehouse", "On hand", "Reorder level"])
        inv = []
        for i, (product, wh) in enumerate((p, w_) for p in PRODUCTS for w_ in WAREHOUSES):
            row = (f"SKU-{4100 + i}", product, wh, rng.randint(10, 900), rng.randint(50, 200))
            w.writerow(row)
            inv.append(row)
    # contacts, and one meeting note per topic naming one of them
    people = []
    names = [(a, b) for a in FIRST for b in LAST]
    rng.shuffle(names)
    for i, (first, last) in enumerate(names[:40]):
        company = COMPANIES[i % len(COMPANIES)]
        email = f"{first.lower()}.{last.lower()}@{re.sub(r'[^a-z]', '', company.lower())}.com"
        phone = f"+1 555 {rng.randint(100, 999)} {rng.randint(1000, 9999)}"
        people.append((f"{first} {last}", company, rng.choice(("Buyer", "Account manager", "Director", "Engineer")),
                       email, phone, rng.choice(("Boston", "Austin", "Denver", "Chicago", "Seattle"))))
    with open(folder / "contacts.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["Name", "Company", "Role", "Email", "Phone", "City"])
        w.writerows(people)
    notes = folder / "notes"
    notes.mkdir(exist_ok=True)
    for i, topic in enumerate(TOPICS):
        person = people[3 * i]
        first = person[0].split()[0]
        (notes / f"meeting-{i + 1:02d}.md").write_text(
            f"# Meeting notes {i + 1}\n\nMet {person[0]} ({person[1]}) today about {topic}. {first} wants a written "
            f"proposal by the end of the month and will check the figures with their team. Next step: send the "
            f"draft and book a follow-up call.\n")
        items.append(Item(f"hop-{i}", f"What is the phone number of the person I met about {topic}?",
                          (f"notes/meeting-{i + 1:02d}.md", "contacts.csv"), (person[4],)))
    for i, rec in enumerate(hotpot_records()[:30]):
        for title, sents in rec["context"][:5]:
            safe = re.sub(r"[^A-Za-z0-9]+", "_", title)[:60]
            (notes / f"wiki-{i:03d}-{safe}.txt").write_text(f"{title}\n\n{''.join(sents)}\n")
    # questions: rows by their values, rows by a column name and a value
    for n, (region, q, year, product, units, sales) in enumerate(rng.sample(rows, 15)):
        items.append(Item(f"row-{n}", f"{region} region {q} {product} sales {year}", ("regional_sales.xlsx",),
                          (str(sales),)))
    for n, person in enumerate(rng.sample(people, 10)):
        col, value = rng.choice((("email", person[3]), ("phone", person[4])))
        items.append(Item(f"contact-{n}", f"{col} of {person[0]}", ("contacts.csv",), (value,)))
    for n, (sku, product, wh, on_hand, _) in enumerate(rng.sample(inv, 5)):
        items.append(Item(f"stock-{n}", f"How many {product} are on hand in the {wh} warehouse?", ("inventory.csv",),
                          (str(on_hand),)))
    return _interleaved(items)


def _interleaved(items: list[Item]) -> list[Item]:
    """The questions of each sort in turn (hop, row, contact, stock, hop, ...): ``--limit`` keeps all sorts."""
    sorts: dict[str, list[Item]] = {}
    for it in items:
        sorts.setdefault(it.qid.split("-")[0], []).append(it)
    out = []
    while any(sorts.values()):
        for group in sorts.values():
            if group:
                out.append(group.pop(0))
    return out


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


CASES = {"hotpotqa": lambda e: passage_case("hotpotqa", e), "musique": lambda e: passage_case("musique", e),
         "financebench": financebench_case, "mail": mail_case, "legal": legal_case, "sheets": sheets_case}


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


def unsupported(case: Case, n: int, seed: int = 0) -> list[Item]:
    """``n`` questions that no document of the case supports: three to five content words of its
    questions drawn at random (seeded), as in "quantum sourdough starters Mars" — every word is in the
    corpus, the combination in no document (bench/confidence_fit.py's ``nonsense``). Their gold is
    empty: whatever is returned for them is junk, so they show what confidence junk gets."""
    from bench.confidence_fit import nonsense

    return [Item(f"unsupported-{i}", q, ()) for i, q in enumerate(nonsense([it.question for it in case.items], n, seed))]


def run_case(case: Case, systems: list[str], k: int, limit: int | None, lower: bool, embedder,
             n_unsupported: int = 0) -> list[dict]:
    from c1.retrieval.corpus import Corpus
    from c1.agent.policies import choose_policy
    from c1.agent.search import run_search
    from c1.config import load_settings
    from c1.eval.baselines import retrieve
    from c1.eval.metrics import contains_answer
    from c1.eval.runner import Keys

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
            choice = None if name == "hybrid" else choose_policy(settings.with_flags(policy=name))
            s = settings.with_flags(policy=name, parallel=parallel) if choice else settings
            runs = [(suffix, form, items) for suffix, form in variants]
            if junk and choice is not None:
                runs.append(("-none", lambda q: q, junk))
            for suffix, form, questions in runs:
                for it in questions:
                    q = form(it.question)
                    corpus.clear_query_cache()
                    t0 = time.perf_counter()
                    if choice is None:
                        docs = retrieve(corpus, "hybrid", q, k)
                    else:
                        docs = run_search(corpus, s, q, choice.factory).documents
                    seconds = time.perf_counter() - t0
                    keys = [_key(case, d) for d in docs]
                    gold = set(it.gold)
                    texts = ["\n".join([d.get("title") or "", *(c["text"] for c in d.get("chunks", []))]) for d in docs]
                    if it.pages:
                        pk = Keys(corpus, it.pages, "page")
                        found = any(x in set(it.pages) for d in docs for x in pk.document(d))
                    elif it.answers:
                        found = any(contains_answer(a, texts) for a in it.answers)
                    else:
                        found = bool(gold & set(keys))
                    rows.append({
                        "kind": case.kind + suffix, "system": system, "qid": it.qid, "question": q,
                        "found": found, "full": gold <= set(keys), "rank1": bool(keys) and keys[0] in gold,
                        "seconds": round(seconds, 3), "returned": keys,
                        "scores": [d.get("score") for d in docs], "gold_flags": [x in gold for x in keys],
                    })
                print(f"  {case.kind}{suffix} {system}: {len(questions)} questions", file=sys.stderr)
    finally:
        corpus.close()
    return rows


# --- the tables ------------------------------------------------------------------------------


def ece(pairs: list[tuple[float, bool]], bins: int = 10) -> float | None:
    """Expected calibration error of (confidence, gold) pairs over ``bins`` equal-width bands."""
    if not pairs:
        return None
    total = 0.0
    for b in range(bins):
        lo, hi = b / bins, (b + 1) / bins
        inside = [(s, g) for s, g in pairs if lo <= s < hi or (b == bins - 1 and s == 1.0)]
        if inside:
            total += len(inside) * abs(statistics.fmean(s for s, _ in inside) - statistics.fmean(g for _, g in inside))
    return total / len(pairs)


def summarise(rows: list[dict]) -> dict:
    n = len(rows)
    return {"n": n, "found": statistics.fmean(r["found"] for r in rows), "full": statistics.fmean(r["full"] for r in rows),
            "rank1": statistics.fmean(r["rank1"] for r in rows), "seconds": statistics.median(r["seconds"] for r in rows),
            "returned": statistics.fmean(len(r["returned"]) for r in rows),
            "top_score": statistics.fmean((r["scores"][0] or 0.0) if r["scores"] else 0.0 for r in rows)}


def calibration(rows: list[dict]) -> dict:
    pairs = [(s, g) for r in rows for s, g in zip(r["scores"], r["gold_flags"]) if s is not None]
    bands = []
    for lo, hi, label in BANDS:
        inside = [g for s, g in pairs if lo <= s < hi]
        bands.append({"band": label, "documents": len(inside), "gold_share": statistics.fmean(inside) if inside else None})
    top = [(r["scores"][0], r["gold_flags"][0]) for r in rows if r["scores"] and r["scores"][0] is not None]
    return {"ece": ece(pairs), "ece_top": ece(top), "bands": bands, "documents": len(pairs)}


def tables(rows: list[dict], systems: list[str]) -> tuple[str, dict]:
    kinds = list(dict.fromkeys(r["kind"] for r in rows))
    lines = [f"| kind | n | " + " | ".join(f"{s} found / full / rank 1 / s" for s in systems) + " |",
             "|---|---|" + "---|" * len(systems)]
    summary: dict = {}
    for kind in kinds:
        cells, n = [], 0
        summary[kind] = {}
        for s in systems:
            mine = [r for r in rows if r["kind"] == kind and r["system"] == s]
            if not mine:
                cells.append("-")
                continue
            m = summarise(mine)
            n = m["n"]
            summary[kind][s] = m
            if kind.endswith("-none"):  # nothing supports these: what is returned, at what confidence
                cells.append(f"{m['returned']:.2f} returned, first at {m['top_score']:.3f} / {m['seconds']:.2f}")
                continue
            cells.append(f"{m['found']:.3f} / {m['full']:.3f} / {m['rank1']:.3f} / {m['seconds']:.2f}")
        lines.append(f"| {kind} | {n} | " + " | ".join(cells) + " |")
    lines += ["", "calibration of the built-in policy (one run): ECE over all returned documents, ECE of the first "
              "document, gold share (documents) per confidence band", "",
              "| kind | ECE | ECE rank 1 | " + " | ".join(label for _, _, label in BANDS) + " |",
              "|---|---|---|" + "---|" * len(BANDS)]
    for kind in kinds:
        mine = [r for r in rows if r["kind"] == kind and r["system"] == "builtin"]
        if not mine:
            continue
        c = calibration(mine)
        summary[kind]["calibration"] = c
        cells = [f"{b['gold_share']:.2f} ({b['documents']})" if b["documents"] else "-" for b in c["bands"]]
        lines.append(f"| {kind} | {c['ece']:.3f} | {c['ece_top']:.3f} | " + " | ".join(cells) + " |")
    return "\n".join(lines), summary


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kinds", default=",".join(KINDS), help=f"from {', '.join(KINDS)}")
    ap.add_argument("--systems", default=",".join(SYSTEMS))
    ap.add_argument("-k", type=int, default=5)
    ap.add_argument("--limit", type=int, default=0, help="the first N questions of each kind")
    ap.add_argument("--no-lower", action="store_true", help="leave out the lower-cased variants")
    ap.add_argument("--unsupported", type=int, default=0, metavar="N",
                    help="also N questions per kind that nothing supports (kind <kind>-none, built-in systems only)")
    ap.add_argument("--rows", type=Path, help="per-question rows (JSONL) here")
    ap.add_argument("--label", default="", help="a name for this run in bench/out/suite.jsonl")
    ap.add_argument("--embedder", default="", choices=("", "minilm"), help="minilm: the embedder before bge-small")
    args = ap.parse_args(argv)
    kinds = [x.strip() for x in args.kinds.split(",") if x.strip()]
    bad = [x for x in kinds if x not in CASES]
    if bad:
        print(f"suite: unknown kind {bad[0]!r} (kinds: {', '.join(KINDS)})", file=sys.stderr)
        return 2
    systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    embedder = _embedder(args.embedder)
    started = time.perf_counter()
    rows = []
    for kind in kinds:
        case = CASES[kind](embedder)
        rows += run_case(case, systems, args.k, args.limit or None, not args.no_lower, embedder, args.unsupported)
    text, summary = tables(rows, systems)
    print(f"\ndevelopment suite, k = {args.k}, limit {args.limit or 'none'}, embedder {embedder.name}, "
          f"{time.perf_counter() - started:.0f} s\n")
    print(text)
    from bench.report import save

    report = {"bench": "suite", "label": args.label, "k": args.k, "limit": args.limit or None, "embedder": embedder.name,
              "time": time.strftime("%Y-%m-%dT%H:%M:%S"), "summary": summary}
    save(report, OUT / "suite.jsonl", rows, args.rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
