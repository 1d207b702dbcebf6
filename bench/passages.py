#!/usr/bin/env python3
"""Passages, not the pile: what c1 hands over for a question, measured at the character level.

Two corpora the project does not contain, each indexed once into bench/out/passages_<corpus>:

  legal         ../shared/data/legal: 22 contracts, NDAs and merger agreements, 165 questions,
                gold = file + character spans
  financebench  ../shared/data/financebench: 18 filings (3,841 pages), 18 analyst questions,
                gold = filing + page

Systems, side by side (the same questions, the same index):

  builtin-pile      today: every chunk the built-in policy's run saw of each returned document
  builtin-passages  the passages c1 returns now (c1/retrieval/passages.py) for those documents
  hybrid-chunks     one hybrid search's top chunks (``Corpus.hybrid``, ``--chunks``, default 5)
  hybrid-passages   the passages of that search's documents

Measures (per question, then averaged):

  gold1     the top document is the gold one
  hit@top   a gold span overlaps what is handed over for the top document (legal); |gold1: among
            the questions whose top document is the gold one
  hit       a gold span overlaps anything handed over
  page      a gold page is among the pages of what is handed over for the gold filing (financebench)
  prec      gold characters handed over / characters handed over (overlaps counted once)
  recall    gold characters handed over / gold characters
  n         passages (or chunks) handed over; n@top for the top document
  tokens    o200k tokens handed over
  why       the justification lies in a gold span (at least half of it; legal), or on a gold page
            of the gold filing (financebench)

The built-in policy's runs are cached per question in bench/out/passages_runs_<corpus>.jsonl (the
passages are recomputed from the cached documents at every run: ``--fresh`` runs the searches again).

    python bench/passages.py --limit 40                      # both corpora
    python bench/passages.py --corpus legal --scorer terms,reranker
    python bench/passages.py --corpus legal --limit 60 --scorer auto --dump after.jsonl   # diff two versions
    python bench/passages.py --corpus legal --scorer auto --systems builtin --misses       # why each miss
    python bench/passages.py --corpus legal --scorer auto --systems builtin --choose lead_chunks=1,0
    python bench/passages.py --corpus legal --scorer auto --systems builtin --choose order=fitted   # bench/passage_fit.py
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.textpool import shared_data  # noqa: E402

OUT = REPO / "bench" / "out"


def corpus_folder(name: str) -> Path:
    data = shared_data()
    return data / "legal" / "files" if name.startswith("legal") else data / "financebench" / "pdfs"


def build(name: str, home: Path) -> dict:
    """Index the corpus into ``home`` once (with the default embedder; reused after)."""
    from c1.config import load_settings
    from c1.store.embedders import make_embedder
    from c1.index.indexer import Indexer

    settings = load_settings().with_flags(home=str(home), collection=name)
    marker = settings.collection_dir / "built.json"
    if marker.is_file():  # searched with the embedder it records (delete the home to build it anew)
        return json.loads(marker.read_text())
    embedder = make_embedder(settings.embed_url, settings.embed_model, settings.embed_api_key)
    print(f"indexing {corpus_folder(name)} into {home} (once)", file=sys.stderr)
    report = Indexer(settings, embedder).run([str(corpus_folder(name))])
    built = {"seconds": round(report.seconds, 1), "chunks": report.total_chunks, "documents": report.documents,
             "embedder": embedder.name}
    marker.write_text(json.dumps(built))
    return built


SUITE_INDEX = {"legal": ("legal", "suite", "suite-ready.json"), "financebench": ("financebench", "fb", "built.json")}
SUITE_INDEX |= {f"{k}-nat": v for k, v in SUITE_INDEX.items()}  # the natural questions (bench/natural/), same index
"""bench/suite.py's collections of the same files (financebench: the 18 filings and 3 more), used
when they exist: building the filings' index takes ~25 minutes on 2 cores."""


def index_of(name: str) -> tuple[Path, str]:
    """(home, collection) searched for ``name``: bench/suite.py's collection with the default
    embedder when built (bench/out/suite/<kind>-<embedder>), else this bench's own (built once)."""
    from c1.store.embedders import DEFAULT_EMBEDDER

    kind, collection, marker = SUITE_INDEX[name]
    home = OUT / "suite" / f"{kind}-{DEFAULT_EMBEDDER}"
    if (home / "collections" / collection / marker).is_file():
        return home, collection
    home = OUT / f"passages_{name}"
    build(name, home)
    return home, name


# --- questions and gold ---------------------------------------------------------------------------
def questions(name: str) -> list[dict]:
    """{id, question, gold: file name (legal: path under files/), spans: [(start, end)], pages: {n}}."""
    data = shared_data()
    out = []
    if name.endswith("-nat"):
        return natural_questions(name.removesuffix("-nat"))
    if name == "legal":
        for line in (data / "legal" / "queries.jsonl").read_text().splitlines():
            q = json.loads(line)
            out.append({"id": q["id"], "question": q["question"], "gold": q["gold_ids"][0],
                        "spans": [(s, e) for p, s, e in q["gold_spans"] if p == q["gold_ids"][0]], "pages": set()})
    else:
        for line in (data / "financebench" / "financebench_dev_18.jsonl").read_text().splitlines():
            q = json.loads(line)
            out.append({"id": q["financebench_id"], "question": q["question"], "gold": q["doc_name"] + ".pdf", "spans": [],
                        "pages": {e["evidence_page_num"] + 1 for e in q["evidence"]}})
    return out


def natural_questions(kind: str) -> list[dict]:
    """The kind's natural questions (bench/natural/<kind>.jsonl) in :func:`questions`' form: the first gold
    file, its spans (legal) or pages (FinanceBench)."""
    out = []
    for line in (REPO / "bench" / "natural" / f"{kind}.jsonl").read_text().splitlines():
        if not line.strip():
            continue
        r = json.loads(line)
        gold = r["gold"][0]
        out.append({"id": r["id"], "question": r["question"], "gold": gold,
                    "spans": [(a, b) for p, a, b in r.get("spans", []) if p == gold],
                    "pages": {int(p.rsplit("#p", 1)[1]) for p in r.get("pages", []) if p.startswith(gold + "#p")}})
    return out


def sample(qs: list[dict], limit: int | None) -> list[dict]:
    """``limit`` questions evenly spaced over the list (every subset of the legal set takes part)."""
    if not limit or limit >= len(qs):
        return qs
    step = len(qs) / limit
    return [qs[int(i * step)] for i in range(limit)]


def is_gold(path: str, gold: str) -> bool:
    return path.replace("\\", "/").endswith("/" + gold)


# --- measures ------------------------------------------------------------------------------------------
def union(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[list[int]] = []
    for s, e in sorted(spans):
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return [(s, e) for s, e in out]


def overlap(a: list[tuple[int, int]], b: list[tuple[int, int]]) -> int:
    return sum(max(0, min(e1, e2) - max(s1, s2)) for s1, e1 in union(a) for s2, e2 in union(b))


def pages_of(meta: dict, start: int, end: int, first_page) -> set[int]:
    starts = meta.get("page_starts") if meta else None
    if not starts:
        return {first_page} if first_page is not None else set()
    return {n for i, (s, n) in enumerate(starts) if s < end and (i + 1 == len(starts) or starts[i + 1][0] > start)}


def measure(q: dict, handed: list[dict], justification: tuple[str, tuple[int, int] | None] | None, count) -> dict:
    """``handed``: [{doc rank, path, meta, spans: [(start, end, page, text)]}] in document order."""

    chars = gold_chars = 0
    hit = hit_top = page = False
    n = n_top = tokens = 0
    gold_total = sum(e - s for s, e in union(q["spans"]))
    for rank, d in enumerate(handed):
        spans = [(s, e) for s, e, _, _ in d["spans"]]
        n += len(spans)
        tokens += sum(count(t) for _, _, _, t in d["spans"])
        chars += sum(e - s for s, e in union(spans))
        if rank == 0:
            n_top = len(spans)
        if not is_gold(d["path"], q["gold"]):
            continue
        got = overlap(spans, q["spans"])
        gold_chars += got
        if got:
            hit = True
            hit_top = hit_top or rank == 0
        if q["pages"] and any(pages_of(d["meta"], s, e, p) & q["pages"] for s, e, p, _ in d["spans"]):
            page = True
    why = None
    if justification is not None and handed:
        text, span = justification
        top = handed[0]
        if span is not None and is_gold(top["path"], q["gold"]):
            if q["spans"]:
                why = overlap([span], q["spans"]) >= 0.5 * (span[1] - span[0])
            else:
                why = bool(pages_of(top["meta"], span[0], span[1], None) & q["pages"])
        else:
            why = False
    first = bool(handed) and is_gold(handed[0]["path"], q["gold"])
    return {"hit_top": hit_top, "gold_first": first, "hit_top_if_first": hit_top if first else None, "hit": hit, "page": page, "prec": gold_chars / chars if chars else 0.0,
            "recall": gold_chars / gold_total if gold_total else 0.0, "n": n, "n_top": n_top, "tokens": tokens, "why": why}


# --- the runs ------------------------------------------------------------------------------------------------
def runs(name: str, settings, corpus, qs: list[dict], fresh: bool) -> dict[str, dict]:
    """The built-in policy's result and one hybrid search's chunks per question (cached)."""
    from c1.retrieval.evidence import document_order
    from c1.service.search_service import search_here

    cache = OUT / f"passages_runs_{name}.jsonl"
    got: dict[str, dict] = {}
    if cache.is_file() and not fresh:
        for line in cache.read_text().splitlines():
            row = json.loads(line)
            got[row["id"]] = row
    new = [q for q in qs if q["id"] not in got]
    with cache.open("a" if not fresh else "w") as f:
        for i, q in enumerate(new, 1):
            t = time.perf_counter()
            result = search_here(settings.with_flags(evidence_tokens=0), q["question"], lambda *a: None, corpus=corpus)
            seconds = time.perf_counter() - t
            hits = corpus.hybrid(q["question"], corpus.CANDIDATES)
            row = {"id": q["id"], "seconds": round(seconds, 2), "documents": result.documents,
                   "hybrid": [h.chunk.id for h in hits], "hybrid_docs": document_order(hits)[: settings.max_docs]}
            f.write(json.dumps(row) + "\n")
            f.flush()
            got[q["id"]] = row
            print(f"  [{name}] run {i}/{len(new)} ({seconds:.1f}s)", file=sys.stderr)
    return got


def original_span(corpus, doc_id: str, text: str) -> tuple[int, int] | None:
    """Where a verbatim justification lies in its document (today's justifications are verbatim)."""
    if not text:
        return None
    for c in corpus.doc_chunks(doc_id):
        i = c.text.find(text[:200])
        if i >= 0:
            return c.start + i, c.start + i + len(text)
    return None


def evaluate(name: str, limit: int | None, scorers: list[str], k_chunks: int, fresh: bool, budget: int,
             systems: tuple[str, ...] = ("builtin", "hybrid"), options: dict | None = None,
             misses: bool = False) -> list[dict]:
    from c1.retrieval import passages as P
    from c1.retrieval.scorers import make_scorer
    from c1.retrieval.corpus import Corpus
    from c1.config import load_settings

    home, collection = index_of(name)
    settings = load_settings().with_flags(home=str(home), collection=collection, daemon=False)
    corpus = Corpus(settings)
    qs = sample(questions(name), limit)
    got = runs(name, settings, corpus, qs, fresh)
    count = P._count
    options = options or {}
    rows = []
    for i, q in enumerate(qs, 1):
        if i % 10 == 0:
            print(f"  [{name}] passages {i}/{len(qs)}", file=sys.stderr)
        row = got[q["id"]]
        docs = row["documents"]
        meta = {d["id"]: (corpus.doc(d["id"]).meta if corpus.doc(d["id"]) else {}) for d in docs}
        pile = [{"path": d["path"], "meta": meta[d["id"]],
                 "spans": [(c["span"][0], c["span"][1], c.get("page"), c["text"]) for c in d["chunks"]]} for d in docs]
        why0 = (docs[0]["justification"], original_span(corpus, docs[0]["id"], docs[0]["justification"])) if docs else None
        rows.append({"system": "builtin-pile", "q": q["id"], **measure(q, pile, why0, count)})
        hchunks = corpus.chunks(row["hybrid"][:k_chunks])
        by_doc: dict[str, list] = {}
        for c in hchunks:
            by_doc.setdefault(c.doc_id, []).append((c.start, c.end, c.page, c.text))
        hy = [{"path": corpus.doc(d).path, "meta": corpus.doc(d).meta, "spans": s} for d, s in by_doc.items()]
        rows.append({"system": f"hybrid-chunks{k_chunks}", "q": q["id"], **measure(q, hy, None, count)})
        for kind in scorers:
            try:
                scorer = make_scorer(corpus, kind)
            except ImportError as exc:
                print(f"scorer {kind}: not available here ({exc})", file=sys.stderr)
                continue
            confidence = {d["id"]: d.get("score") or 0.0 for d in docs}
            seen = {"builtin": {d["id"]: [c["id"] for c in d["chunks"]] for d in docs}, "hybrid": {}}
            for c in corpus.chunks(row["hybrid"]):  # what one hybrid search found of each document
                seen["hybrid"].setdefault(c.doc_id, []).append(c.id)
            for system, ids in (("builtin", [d["id"] for d in docs]), ("hybrid", row["hybrid_docs"])):
                if system not in systems:
                    continue
                scored: list[tuple[str, float]] = []  # (text, score) of every pair the scorer read
                use = _traced(scorer, scored)
                t, cpu = time.perf_counter(), time.process_time()
                chosen = P.choose(corpus, q["question"], ids, budget, use,
                                  weights=confidence if system == "builtin" else None,
                                  seen=seen[system], **options)
                seconds, cpu = time.perf_counter() - t, time.process_time() - cpu
                handed = [{"path": corpus.doc(d).path, "meta": corpus.doc(d).meta,
                           "spans": [(p.start, p.end, p.page, p.text) for p in chosen[d]]} for d in ids]
                top = chosen[ids[0]] if ids else []
                why = (top[0].why, top[0].sentence) if top else ("", None)
                got_row = {"system": f"{system}-passages[{kind}]", "q": q["id"], "seconds": seconds, "cpu": cpu,
                           "pairs": len(scored), **measure(q, handed, why, count)}
                rows.append(got_row)
                # what was handed over (``--dump``: two versions compared question by question)
                got_row["passages"] = {d: [[p.start, p.end, p.page, p.score, p.why] for p in chosen[d]] for d in ids}
                if misses and system == "builtin" and not (got_row["hit_top"] or got_row["page"]):
                    got_row["miss"] = show_miss(corpus, q, ids, chosen, scored)
    return rows


def _value(text: str):
    """A ``--choose`` value: a number (``2``, ``0.5``) or a word (``order=fitted``)."""
    try:
        return float(text) if "." in text else int(text)
    except ValueError:
        return text


def _traced(scorer, scored: list):
    """``scorer``, keeping every (text, score) it gives in ``scored``."""
    def traced(question: str, texts: list[str]) -> list[float]:
        got = scorer(question, texts)
        scored.extend(zip(texts, got))
        return got
    return traced


def show_miss(corpus, q: dict, ids: list[str], chosen: dict, scored: list[tuple[str, float]]) -> str:
    """A question whose gold span (page) is not among the top document's passages: the gold, whether the
    scorer read a sentence of it (and its rank among all it read), then what was handed over instead
    (``--misses``). Returns "scored" (read but outranked), "unscored" (never read) or "other" (the top
    document is not the gold one, or the gold is a page)."""
    top = corpus.doc(ids[0]) if ids else None
    print(f"\nMISS {q['id']}: {q['question']}", file=sys.stderr)
    print(f"  top doc {top.path if top else None}; gold {q['gold']} pages {sorted(q['pages'])}", file=sys.stderr)
    kind = "other"
    if top is not None and is_gold(top.path, q["gold"]) and q["spans"]:
        chunks = corpus.doc_chunks(ids[0])
        for s, e in q["spans"][:3]:
            for c in chunks:
                if c.start <= s < c.end:
                    print(f"  GOLD [{s},{e}] {' '.join(c.text[s - c.start:e - c.start].split())[:300]}", file=sys.stderr)
                    break
        text = _doc_text(chunks)
        gold = [v for t, v in scored if _in_spans(text, t.split("\n")[-1][:60], q["spans"])]
        kind = "scored" if gold else "unscored"
        if gold:
            rank = 1 + sum(1 for _, v in scored if v > max(gold))
            print(f"  gold read by the scorer: best {max(gold):.3f}, rank {rank} of {len(scored)}", file=sys.stderr)
        else:
            print(f"  gold never read by the scorer ({len(scored)} texts read)", file=sys.stderr)
    for p in (chosen.get(ids[0]) or [])[:5]:
        print(f"  got  [{p.start},{p.end}] p{p.page} {p.score:.3f} {' '.join(p.text.split())[:160]}", file=sys.stderr)
    return kind


def _doc_text(chunks: list) -> str:
    """A document's text from its chunks (overlaps read once; a gap, if any, as spaces)."""
    out: list[str] = []
    for c in sorted(chunks, key=lambda c: c.start):
        have = len(out)
        if c.end > have:
            out.extend(" " * max(0, c.start - have))
            out.extend(c.text[max(0, have - c.start):])
    return "".join(out)


def _in_spans(text: str, sentence: str, spans: list[tuple[int, int]]) -> bool:
    """Whether an occurrence of ``sentence`` in ``text`` overlaps a gold span."""
    at = text.find(sentence) if sentence.strip() else -1
    while at >= 0:
        if any(at < e and s < at + len(sentence) for s, e in spans):
            return True
        at = text.find(sentence, at + 1)
    return False


PAIRED = ("hit_top", "why", "page", "prec", "pairs", "cpu")
"""The per-question figures a --dump keeps and --vs compares."""


def compare(name: str, rows: list[dict], earlier: Path) -> None:
    """This run against an earlier --dump of the same corpus: per system, each figure's paired
    difference (now − then) over the questions both have, with its 95 % bootstrap interval; * where
    the interval excludes 0."""
    from c1.eval.stats import excludes_zero, paired_interval

    then: dict[tuple[str, str], dict] = {}
    for line in earlier.read_text().splitlines():
        r = json.loads(line)
        if r.get("corpus") == name:
            then[(r["system"], r["q"])] = r
    for system in dict.fromkeys(r["system"] for r in rows if "pairs" in r):
        both = [(r, then[(system, r["q"])]) for r in rows if r["system"] == system and (system, r["q"]) in then]
        if not both:
            continue
        cells = []
        for k in PAIRED:
            pairs = [(float(a[k]), float(b[k])) for a, b in both if a.get(k) is not None and b.get(k) is not None]
            if pairs:
                d, lo, hi = paired_interval([a for a, _ in pairs], [b for _, b in pairs])
                cells.append(f"{k} {d:+.3f} [{lo:+.3f}, {hi:+.3f}]{'*' if excludes_zero(lo, hi) else ''}")
        print(f"  vs {earlier.name}, {system} ({len(both)} questions): " + "; ".join(cells))


def summary(rows: list[dict]) -> dict[str, dict]:
    out = {}
    for system in dict.fromkeys(r["system"] for r in rows):
        mine = [r for r in rows if r["system"] == system]
        s = {k: statistics.fmean(float(r[k]) for r in mine) for k in ("hit_top", "hit", "page", "prec", "recall", "n",
                                                                       "n_top", "tokens")}
        firsts = [r["hit_top_if_first"] for r in mine if r["hit_top_if_first"] is not None]
        s["hit_if_first"] = statistics.fmean(float(w) for w in firsts) if firsts else float("nan")
        s["gold_first"] = statistics.fmean(float(r["gold_first"]) for r in mine)
        whys = [r["why"] for r in mine if r["why"] is not None]
        s["why"] = statistics.fmean(float(w) for w in whys) if whys else float("nan")
        pairs = [r["pairs"] for r in mine if "pairs" in r]
        s["pairs"] = statistics.fmean(pairs) if pairs else float("nan")
        secs = [r["seconds"] for r in mine if "seconds" in r]
        s["s"] = statistics.median(secs) if secs else float("nan")
        cpus = [r["cpu"] for r in mine if "cpu" in r]
        s["cpu"] = statistics.fmean(cpus) if cpus else float("nan")
        s["questions"] = len(mine)
        out[system] = s
    return out


def main() -> None:
    from c1.config import Settings

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", default="legal,financebench")
    ap.add_argument("--limit", type=int, default=None, help="N questions of each corpus, evenly spaced")
    ap.add_argument("--scorer", default="terms", help="passage scorers to compare: terms, lexical, reranker, auto (comma-separated)")
    ap.add_argument("--systems", default="builtin,hybrid", help="whose documents get passages: builtin, hybrid")
    ap.add_argument("--chunks", type=int, default=5, help="top chunks of the hybrid search, for hybrid-chunks")
    ap.add_argument("--evidence-tokens", type=int, default=Settings.evidence_tokens)
    ap.add_argument("--per-doc", default=None, help="passages of the first document and of each other, e.g. 5,1")
    ap.add_argument("--keep", type=float, default=None, help="share of the best score a kept passage needs")
    ap.add_argument("--choose", action="append", default=[], metavar="NAME=VALUE",
                    help="a setting of passages.choose, e.g. lead_chunks=1,0 or anchors=2 (repeatable)")
    ap.add_argument("--fresh", action="store_true", help="run the searches again (not the cached runs)")
    ap.add_argument("--build-only", action="store_true")
    ap.add_argument("--misses", action="store_true", help="print each question whose gold is not among the top document's passages")
    ap.add_argument("--vs", type=Path, help="a --dump of an earlier run: each figure's paired difference with its 95 %% "
                                           "bootstrap interval, question by question")
    ap.add_argument("--dump", type=Path, help="write every question's passages (spans, pages, scores, justifications) here, "
                                             "JSON lines: two versions' files compare with diff")
    args = ap.parse_args()
    dump = args.dump.open("w") if args.dump else None
    for name in args.corpus.split(","):
        if args.build_only:
            print(name, build(name, OUT / f"passages_{name}"))
            continue
        options = {}
        if args.per_doc:
            options["per_doc"] = tuple(int(x) for x in args.per_doc.split(","))
        if args.keep is not None:
            options["keep"] = args.keep
        for setting in args.choose:
            key, _, value = setting.partition("=")
            values = [_value(v) for v in value.split(",")]
            options[key] = tuple(values) if len(values) > 1 else values[0]
        rows = evaluate(name, args.limit, args.scorer.split(","), args.chunks, args.fresh, args.evidence_tokens,
                        tuple(args.systems.split(",")), options, args.misses)
        for r in rows if dump else []:
            if "passages" in r:
                dump.write(json.dumps({"corpus": name, **{k: r[k] for k in ("system", "q", *PAIRED, "passages")}}) + "\n")
        table = summary(rows)
        print(f"\n{name}: {table[next(iter(table))]['questions']} questions, --evidence-tokens {args.evidence_tokens}")
        print(f"{'system':<28}{'gold1':>6}{'hit@top':>8}{'|gold1':>7}{'hit':>6}{'page':>6}{'prec':>7}{'recall':>7}"
              f"{'n':>6}{'n@top':>6}{'tokens':>8}{'why':>6}{'pairs':>6}{'s':>6}{'cpu':>6}")
        for system, s in table.items():
            print(f"{system:<28}{s['gold_first']:>6.3f}{s['hit_top']:>8.3f}{s['hit_if_first']:>7.3f}{s['hit']:>6.3f}"
                  f"{s['page']:>6.3f}{s['prec']:>7.3f}{s['recall']:>7.3f}"
                  f"{s['n']:>6.1f}{s['n_top']:>6.1f}{s['tokens']:>8.0f}{s['why']:>6.3f}{s['pairs']:>6.1f}{s['s']:>6.2f}"
                  f"{s['cpu']:>6.2f}")
        if args.vs:
            compare(name, rows, args.vs)
        kinds = [r["miss"] for r in rows if "miss" in r]
        if kinds:
            print(f"misses of the built-in policy's top document: {len(kinds)}; the gold read by the scorer but "
                  f"outranked: {kinds.count('scored')}, never read: {kinds.count('unscored')}, other: {kinds.count('other')}")
        OUT.mkdir(parents=True, exist_ok=True)
        with (OUT / "passages.jsonl").open("a") as f:
            f.write(json.dumps({"bench": "passages", "time": time.strftime("%Y-%m-%dT%H:%M:%S"), "corpus": name,
                                "limit": args.limit, "evidence_tokens": args.evidence_tokens, "summary": table}) + "\n")


if __name__ == "__main__":
    main()
