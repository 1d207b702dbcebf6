"""Retrieval quality on multi-hop questions: the built-in policy against single-shot retrieval.

The 200 shared HotpotQA dev-distractor records, with all their paragraphs (2,000, 1,971 distinct
titles) pooled into one corpus — each question must find its gold paragraphs among every other
question's paragraphs too. Systems, all at the same number k of returned documents:

  bm25        BM25 alone (tantivy), top-k distinct documents
  dense       dense alone (MiniLM, Chroma), top-k distinct documents
  hybrid      single-shot search_corpus ranking: BM25 ∥ dense → RRF → re-rank (Corpus.hybrid)
  builtin     the built-in policy, one run (c1 search --policy builtin -k K)
  builtin×4   the same with --parallel 4 (diversified runs fused with RRF)

Metrics (c1/eval/metrics.py): final answer found, recall, full recall (every gold document
returned), precision, F1; latency per question (mean, median, p95). Gold documents are the
distinct titles of a record's supporting facts. Yes/no answers (comparison questions) are in no
document: they count as found when every gold document is returned.

The policy's rules were tuned on questions 1-100 only; 101-200 are reported apart as held-out.

    python bench/search_quality.py                      # builds bench/out/hotpot_home if missing
    python bench/search_quality.py --home /tmp/hp_home -k 5 --limit 50
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.textpool import docs_of_chunks, hotpot_records  # noqa: E402
from c1.eval import metrics  # noqa: E402

OUT = Path(__file__).resolve().parent / "out"
SYSTEMS = ("bm25", "dense", "hybrid", "builtin", "builtin×4")


@dataclass
class Question:
    n: int
    question: str
    answer: str
    kind: str
    gold: frozenset[str]
    """Gold titles (= source ids in the pooled corpus)."""


def questions(records: list[dict] | None = None) -> list[Question]:
    records = records if records is not None else hotpot_records()
    return [
        Question(i, r["question"], r["answer"], r["type"], frozenset(t for t, _ in r["supporting_facts"]))
        for i, r in enumerate(records)
    ]


def pooled_paragraphs(records: list[dict]) -> list[dict]:
    """One document per distinct title (``id`` = ``title`` = the Wikipedia page), text = its sentences."""
    out, seen = [], set()
    for r in records:
        for title, sentences in r["context"]:
            if title not in seen:
                seen.add(title)
                out.append({"id": title, "title": title, "text": "".join(sentences).strip()})
    return out


def ensure_corpus(home: Path, records: list[dict] | None = None) -> Path:
    """Index the pooled paragraphs into ``home`` (collection ``default``) unless already there."""
    from c1.config import load_settings
    from c1.store.embedders import MiniLMEmbedder
    from c1.index.indexer import Indexer

    if (home / "collections" / "default" / "manifest.sqlite").exists():
        return home
    records = records if records is not None else hotpot_records()
    home.mkdir(parents=True, exist_ok=True)
    src = home / "hotpot_pool.jsonl"
    with open(src, "w", encoding="utf-8") as f:
        for p in pooled_paragraphs(records):
            f.write(json.dumps(p, ensure_ascii=False) + "\n")
    print(f"indexing {src} into {home} (once; about a minute on 2 cores)", file=sys.stderr)
    report = Indexer(load_settings().with_flags(home=str(home), collection="default"), MiniLMEmbedder()).run([str(src)])
    print(f"indexed {report.documents} documents, {report.total_chunks} chunks in {report.seconds:.0f}s", file=sys.stderr)
    return home


class Pool:
    """The opened corpus plus title ↔ doc id maps and document texts."""

    def __init__(self, home: Path, **flags):
        from c1.retrieval.corpus import Corpus
        from c1.config import load_settings

        self.settings = load_settings().with_flags(home=str(home), collection="default", **flags)
        self.corpus = Corpus(self.settings)
        self.title_of: dict[str, str] = {}
        for d in self.corpus.store.manifest.all_docs():
            self.title_of[d.doc_id] = d.source_id or d.title
        self._text: dict[str, str] = {}

    def text(self, doc_id: str) -> str:
        if doc_id not in self._text:
            self._text[doc_id] = " ".join(c.text for c in self.corpus.doc_chunks(doc_id))
        return self._text[doc_id]

    def docs_of_chunks(self, chunk_ids: list[str], k: int) -> list[str]:
        return docs_of_chunks(chunk_ids, k)


# --- systems: question → ranked doc ids -------------------------------------------------------


def system_bm25(pool: Pool, q: str, k: int) -> list[str]:
    return pool.docs_of_chunks([c for c, _ in pool.corpus.bm25(q, 50)], k)


def system_dense(pool: Pool, q: str, k: int) -> list[str]:
    return pool.docs_of_chunks([c for c, _ in pool.corpus.dense(pool.corpus.embed_query(q), 50)], k)


def system_hybrid(pool: Pool, q: str, k: int) -> list[str]:
    return pool.docs_of_chunks([h.chunk.id for h in pool.corpus.hybrid(q, pool.corpus.CANDIDATES)], k)


def make_builtin(parallel: int) -> Callable[[Pool, str, int], list[str]]:
    from dataclasses import replace

    from c1.agent.policies.builtin import BuiltinPolicy
    from c1.agent.search import run_search

    def run(pool: Pool, q: str, k: int) -> list[str]:
        settings = replace(pool.settings, parallel=parallel, max_docs=k)
        result = run_search(pool.corpus, settings, q, lambda i: BuiltinPolicy(max_docs=k, variant=i))
        run.last = result
        return [d["id"] for d in result.documents]

    run.last = None
    return run


def systems(names: list[str]) -> dict[str, Callable]:
    table = {"bm25": system_bm25, "dense": system_dense, "hybrid": system_hybrid}
    out = {}
    for name in names:
        if name == "builtin":
            out[name] = make_builtin(1)
        elif name.startswith("builtin×") or name.startswith("builtinx"):
            out[name] = make_builtin(int(name[8:]))
        else:
            out[name] = table[name]
    return out


# --- running and reporting ---------------------------------------------------------------------


def evaluate(pool: Pool, qs: list[Question], run: Callable, k: int) -> list[dict]:
    rows = []
    for q in qs:
        pool.corpus.clear_query_cache()  # every system pays for its own query embeddings
        t0 = time.perf_counter()
        docs = run(pool, q.question, k)[:k]
        ms = (time.perf_counter() - t0) * 1000
        titles = [pool.title_of.get(d, d) for d in docs]
        s = metrics.score(q.answer, titles, [pool.text(d) for d in docs], q.gold)
        rows.append({"n": q.n, "kind": q.kind, "ms": ms, "titles": titles, **s.to_json()})
    return rows


def summary(rows: list[dict]) -> dict:
    ms = sorted(r["ms"] for r in rows)
    out = metrics.summarise(metrics.Scores(r["answer_found"], r["recall"], r["full_recall"], r["precision"], r["f1"])
                            for r in rows)
    out.update(ms_mean=statistics.fmean(ms) if ms else 0.0, ms_median=statistics.median(ms) if ms else 0.0,
               ms_p95=percentile(ms, 95))
    return out


def percentile(sorted_values: list[float], p: float) -> float:
    """Nearest-rank percentile of an ascending list."""
    if not sorted_values:
        return 0.0
    i = max(0, min(len(sorted_values) - 1, round(p / 100 * len(sorted_values) + 0.5) - 1))
    return sorted_values[i]


def table(results: dict[str, dict], title: str) -> str:
    cols = ("answer_found", "recall", "full_recall", "precision", "f1", "ms_mean", "ms_median", "ms_p95")
    heads = ("answer found", "recall", "full recall", "precision", "F1", "ms mean", "ms median", "ms p95")
    lines = [title, f"{'system':<12}" + "".join(f"{h:>13}" for h in heads)]
    for name, s in results.items():
        cells = [f"{s[c]:>13.3f}" if not c.startswith("ms") else f"{s[c]:>13.0f}" for c in cols]
        lines.append(f"{name:<12}" + "".join(cells))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--home", type=Path, default=OUT / "hotpot_home", help="C1_HOME of the pooled corpus (built if missing)")
    ap.add_argument("-k", type=int, default=5, help="documents returned by every system")
    ap.add_argument("--limit", type=int, default=0, help="first N questions only")
    ap.add_argument("--start", type=int, default=0, help="skip the first N questions")
    ap.add_argument("--systems", default=",".join(SYSTEMS), help=f"comma-separated, from {', '.join(SYSTEMS)}")
    ap.add_argument("--json-out", type=Path, default=OUT / "search_quality.jsonl", help="append one JSON line here")
    ap.add_argument("--rows", type=Path, help="write per-question rows (JSONL) here")
    ap.add_argument("--floor-study", action="store_true", help="measure the relevance floor (the embedder's support_sim)")
    args = ap.parse_args(argv)

    records = hotpot_records()
    ensure_corpus(args.home, records)
    qs = questions(records)[args.start:]
    if args.limit:
        qs = qs[: args.limit]
    if args.floor_study:
        return floor_study(args, qs)
    pool = Pool(args.home)
    names = [s.strip() for s in args.systems.split(",") if s.strip()]
    all_rows: dict[str, list[dict]] = {}
    for name, run in systems(names).items():
        run(pool, "warm up", args.k)  # load the embedder, open Chroma, fill caches
        all_rows[name] = evaluate(pool, qs, run, args.k)
        print(f"  {name}: done", file=sys.stderr)
    pool.corpus.close()

    halves = [("all", lambda n: True), ("tune (1-100)", lambda n: n < 100), ("held-out (101-200)", lambda n: n >= 100)]
    report = {"bench": "search_quality", "k": args.k, "questions": len(qs), "corpus_docs": len(pool.title_of),
              "systems": {}, "halves": {}}
    print(f"\nHotpotQA dev distractor, {len(qs)} questions, all paragraphs pooled ({len(pool.title_of)} documents); "
          f"k = {args.k} documents returned by every system")
    for label, keep in halves:
        res = {name: summary([r for r in rows if keep(r["n"])]) for name, rows in all_rows.items()}
        if not all(s["n"] for s in res.values()):
            continue
        n = next(iter(res.values()))["n"]
        print("\n" + table(res, f"{label}: {n} questions"))
        report["halves"][label] = res
    for kind in ("bridge", "comparison"):
        res = {name: summary([r for r in rows if r["kind"] == kind]) for name, rows in all_rows.items()}
        if all(s["n"] for s in res.values()):
            print("\n" + table(res, f"{kind} questions: {next(iter(res.values()))['n']}"))
            report["halves"][kind] = res
    report["systems"] = report["halves"].get("all", {})
    print("\nnotes: answer found = a returned document contains the answer string (case-insensitive); yes/no answers "
          "count as found when every gold document is returned. The built-in policy was tuned on questions 1-100 "
          "(the same shared data; there is no other dev split): 101-200 are the held-out half. Latency is wall time "
          "per question on this machine, shared with other work.")
    from bench.report import save

    save({**report, "time": time.strftime("%Y-%m-%dT%H:%M:%S")}, args.json_out,
         [{"system": name, **r} for name, rows in all_rows.items() for r in rows], args.rows)
    print(json.dumps(report))
    return 0


# --- the relevance floor ---------------------------------------------------------------------


def floor_study(args, qs: list[Question]) -> int:
    """How close nonsense gets (top-1 cosine of random letter strings) against what the floor would
    drop from real questions (candidates found only by dense search that share no word with the query)."""
    import random
    import string

    from c1.retrieval.terms import content_terms, coverage

    pool = Pool(args.home)
    c = pool.corpus
    rng = random.Random(1)
    word = lambda: "".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(4, 9)))  # noqa: E731
    tops = sorted(c.dense(c.embed_query(" ".join(word() for _ in range(rng.randint(1, 3)))), 1)[0][1] for _ in range(200))
    no_overlap, gold = [], []
    for q in qs:
        fused, known, lexical = c.candidates(q.question, set(), c.embed_query(q.question))
        terms = content_terms(q.question)
        for chunk in c.chunks([cid for cid, _ in fused if cid not in lexical]):
            doc = c.doc(chunk.doc_id)
            if coverage(terms, f"{doc.title} {chunk.text}") == 0:
                no_overlap.append(known[chunk.id])
                if pool.title_of[chunk.doc_id] in q.gold:
                    gold.append(known[chunk.id])
    no_overlap.sort()
    print(f"nonsense (200 random letter strings): top-1 cosine p50 {statistics.median(tops):.3f}, "
          f"p95 {percentile(tops, 95):.3f}, max {tops[-1]:.3f}")
    print(f"{len(qs)} real questions: {len(no_overlap)} dense-only candidates share no word with the question "
          f"(cosine p50 {statistics.median(no_overlap) if no_overlap else 0:.3f}, max {no_overlap[-1] if no_overlap else 0:.3f}); "
          f"{len(gold)} of them gold {sorted(round(g, 3) for g in gold)}")
    print(f"floor in use: the embedder's support_sim = {getattr(c.embedder, 'support_sim', None)} — a no-shared-word "
          f"candidate must be at least this close")
    c.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
