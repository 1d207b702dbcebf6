#!/usr/bin/env python3
"""The built-in embedders side by side, on corpora of several kinds (docs/embedders.md has the figures).

For each embedder configuration, one home per corpus under ``bench/out/emb/<config>/<corpus>`` is
indexed once by c1's own indexer and reused; then every question is searched:

  hotpot   the 200 shared HotpotQA questions over their 2,000 paragraphs pooled: recall@5 of the gold
           titles (dense alone, and c1's hybrid), and both gold in the top 10 (hybrid)
  legal    ../shared/data/legal/files as a folder of .txt files, its 165 questions: the gold file at
           rank 1 (dense, hybrid), and a gold clause in the first 5 chunks (span@5)
  enron    the 993 shared Enron messages (Maildir); the query is a message's subject, lower-cased
           (subjects of 3+ words that name one message only): that message at rank 1 (dense, hybrid)

Configurations: ``minilm`` (all-MiniLM-L6-v2, 256 word pieces), ``bge`` (bge-small-en-v1.5, 256),
``bge512`` (bge-small reading 512 word pieces: what the rest of a 512-token chunk adds).

    nice -n 10 python bench/embedders.py --configs minilm,bge --corpora hotpot,legal,enron
    nice -n 10 python bench/embedders.py --configs bge512 --corpora legal,enron
    nice -n 10 python bench/embedders.py --speed --configs minilm,bge   # chunks/s side by side
"""

from __future__ import annotations

import argparse
import email
import json
import re
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.textpool import docs_of_chunks, hotpot_records, shared_data  # noqa: E402

OUT = REPO / "bench" / "out" / "emb"


def make(config: str):
    from c1.store.embedders import BgeSmallEmbedder, MiniLMEmbedder

    return {"minilm": lambda: MiniLMEmbedder(), "bge": lambda: BgeSmallEmbedder(),
            "bge512": lambda: BgeSmallEmbedder(max_tokens=512, batch_tokens=512)}[config]()


# corpora: (paths to index, questions as (query, gold keys), how a document is keyed) -------------
def hotpot(home: Path):
    from bench.search_quality import pooled_paragraphs

    records = hotpot_records()
    src = home / "hotpot_pool.jsonl"
    if not src.exists():
        home.mkdir(parents=True, exist_ok=True)
        with open(src, "w", encoding="utf-8") as f:
            for p in pooled_paragraphs(records):
                f.write(json.dumps(p, ensure_ascii=False) + "\n")
    qs = [(r["question"], frozenset(t for t, _ in r["supporting_facts"])) for r in records]
    return [str(src)], qs, lambda d: d.source_id or d.title


def legal(home: Path):
    root = shared_data() / "legal"
    qs = [(q["question"], frozenset(q["gold_ids"]))
          for q in map(json.loads, (root / "queries.jsonl").read_text().splitlines()) if q]
    files = root / "files"
    return [str(files)], qs, lambda d: str(Path(d.path).resolve().relative_to(files.resolve()))


def enron(home: Path):
    root = shared_data() / "enron" / "maildir"
    by_subject: dict[str, list[str]] = {}
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        msg = email.message_from_bytes(path.read_bytes())
        subject = re.sub(r"\s+", " ", str(msg.get("Subject") or "")).strip()
        subject = re.sub(r"^((re|fw|fwd)\s*:\s*)+", "", subject, flags=re.I)
        if len(subject.split()) >= 3:
            by_subject.setdefault(subject.lower(), []).append(str(path.resolve()))
    qs = [(s, frozenset(p)) for s, p in by_subject.items() if len(p) == 1]
    return [str(root)], qs, lambda d: str(Path(d.path).resolve())


CORPORA = {"hotpot": hotpot, "legal": legal, "enron": enron}


def ensure(config: str, corpus: str, embedder):
    from c1.config import Settings
    from c1.index.indexer import Indexer

    home = OUT / config / corpus
    paths, qs, key = CORPORA[corpus](home)
    settings = Settings(home=home, collection="default", daemon=False)
    built = None
    if not (settings.collection_dir / "manifest.sqlite").exists():
        t = time.perf_counter()
        report = Indexer(settings, embedder).run(paths)
        built = {"chunks": report.total_chunks, "seconds": round(time.perf_counter() - t, 1)}
        print(f"{config}/{corpus}: indexed {report.documents} documents, {report.total_chunks} chunks "
              f"in {built['seconds']}s", file=sys.stderr)
    return settings, qs, key, built


def evaluate(config: str, corpus: str, limit: int | None) -> dict:
    from c1.retrieval.corpus import Corpus

    embedder = make(config)
    settings, qs, key, built = ensure(config, corpus, embedder)
    qs = qs[:limit] if limit else qs
    c = Corpus(settings, embedder)
    keys = {d.doc_id: key(d) for d in c.store.manifest.all_docs()}
    spans = legal_spans() if corpus == "legal" else {}
    rows = []
    t0 = time.perf_counter()
    for q, gold in qs:
        vec = c.embed_query(q)
        dense_ids = [cid for cid, _ in c.dense(vec, 50)]
        hybrid_ids = [h.chunk.id for h in c.hybrid(q, c.CANDIDATES, vector=vec)]
        row = {"dense": [keys[d] for d in docs_of_chunks(dense_ids, 10)],
               "hybrid": [keys[d] for d in docs_of_chunks(hybrid_ids, 10)], "gold": sorted(gold)}
        if q in spans:  # the gold clause: one of the first 5 chunks overlaps a gold span
            for system, ids in (("dense", dense_ids), ("hybrid", hybrid_ids)):
                row[f"{system}_span"] = any(
                    keys[ch.doc_id] == f and ch.start < e and s < ch.end
                    for ch in c.chunks(ids[:5]) for f, s, e in spans[q])
        rows.append(row)
    seconds = time.perf_counter() - t0
    c.close()

    def recall(r, system, k):
        return len(set(r[system][:k]) & set(r["gold"])) / len(r["gold"])

    n = len(rows)
    out = {"config": config, "corpus": corpus, "questions": n, "chunks": c.size, "search_s": round(seconds / n, 3),
           "built": built}
    for system in ("dense", "hybrid"):
        out[f"{system}_r@5"] = round(sum(recall(r, system, 5) for r in rows) / n, 3)
        out[f"{system}_rank1"] = round(sum(r[system][:1] == r["gold"][:1] and len(r["gold"]) == 1 for r in rows) / n, 3)
        out[f"{system}_all@10"] = round(sum(recall(r, system, 10) == 1.0 for r in rows) / n, 3)
        if rows and f"{system}_span" in rows[0]:
            out[f"{system}_span@5"] = round(sum(r[f"{system}_span"] for r in rows) / n, 3)
    return out


def legal_spans() -> dict[str, list]:
    path = shared_data() / "legal" / "queries.jsonl"
    return {q["question"]: q["gold_spans"] for q in map(json.loads, path.read_text().splitlines()) if q}


def speed(configs: list[str], n: int, rounds: int, pieces: int = 200) -> dict:
    """Chunks/s of each configuration (and the cross-encoder's pairs/s) on the same real texts cut to
    ``pieces`` word pieces, round-robin over ``rounds`` in this process (side by side: the load is shared)."""
    from bench.textpool import chunk_texts
    from c1.retrieval.rerankers import OnnxReranker

    models = {c: make(c) for c in configs}
    tok = models[configs[0]]._tokenizer
    texts = []
    for t in chunk_texts(n, chars=1400):
        enc = tok.encode(t, add_special_tokens=False)
        texts.append(t[: enc.offsets[min(pieces, len(enc.offsets)) - 1][1]])
    reranker = OnnxReranker()
    runs = {**{c: (lambda m=m: m.embed(texts)) for c, m in models.items()},
            "cross-encoder": lambda: reranker.score("what does the agreement say about termination?", texts)}
    for m in models.values():
        m.embed(texts[:2])
    reranker.score("x", texts[:2])
    times: dict[str, list[float]] = {c: [] for c in runs}
    for _ in range(rounds):
        for c, run in runs.items():
            t = time.perf_counter()
            run()
            times[c].append(time.perf_counter() - t)
    import statistics

    out = {c: round(n / statistics.median(v), 1) for c, v in times.items()}
    return {"speed": f"{pieces} word pieces, {n} texts, median of {rounds} interleaved rounds (per second)", **out}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--configs", default="minilm,bge")
    ap.add_argument("--corpora", default="hotpot,legal,enron")
    ap.add_argument("--limit", type=int, default=None, help="first N questions of each corpus")
    ap.add_argument("--out", type=Path, default=OUT / "results.jsonl")
    ap.add_argument("--speed", action="store_true", help="only the speed of each configuration (chunks/s at 200 word pieces)")
    ap.add_argument("--texts", type=int, default=48, help="with --speed")
    ap.add_argument("--rounds", type=int, default=3, help="with --speed")
    args = ap.parse_args(argv)
    if args.speed:
        res = speed(args.configs.split(","), args.texts, args.rounds)
        print(json.dumps(res))
        with open(args.out, "a", encoding="utf-8") as f:
            f.write(json.dumps(res) + "\n")
        return 0
    for corpus in args.corpora.split(","):
        for config in args.configs.split(","):
            res = evaluate(config, corpus, args.limit)
            print(json.dumps(res, ensure_ascii=False))
            args.out.parent.mkdir(parents=True, exist_ok=True)
            with open(args.out, "a", encoding="utf-8") as f:
                f.write(json.dumps(res, ensure_ascii=False) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
