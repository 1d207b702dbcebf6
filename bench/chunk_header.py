#!/usr/bin/env python3
"""What the per-chunk context header (c1/index/headers.py) costs: room in the embedder's input,
embedding speed, index size.

The embedder reads at most 256 word pieces of each input; a header of h pieces in front of a chunk
longer than that pushes h pieces of the chunk out. Measured on the chunks of a built collection
(default: the 21 FinanceBench + SEC filings of bench/financebench.py), side by side in one run:

- header length in word pieces (mean, p95) and the share of chunks whose text is cut anyway;
- chunk word pieces the embedder sees, without a header (as before: the title line alone, when
  the chunk does not start with it) and with the header;
- embedding speed of a sample of chunks, both ways, in alternated batches (the machine is noisy:
  both ways share its ups and downs); chunks/s and the ratio;
- the lexical index built from scratch both ways from the same chunks (the header adds the
  file-name words to the title field and the heading to the text field): size on disk;
- with ``--before HOME``: the on-disk size of each part of two collections of the same files
  (one indexed before chunk headers); Chroma stores the chunk text, never the header.

    python bench/chunk_header.py                          # the collection bench/financebench.py built
    python bench/chunk_header.py --home H --before H0     # H0: the same files indexed by older code
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.report import OUT, save  # noqa: E402


def title_only(title: str, text: str) -> str:
    """What was embedded before chunk headers: the title first unless the chunk starts with it."""
    return f"{title}\n{text}" if title and not text.lstrip().startswith(title[:40]) else text


def inputs(home: Path, collection: str) -> tuple[list[str], list[str], list[str], list[tuple], list[tuple]]:
    """(embedder input without header, with header, header alone, lexical rows without header,
    lexical rows with header) for every chunk of the collection."""
    from c1.index.headers import stored_contexts
    from c1.store.manifest import Manifest

    m = Manifest(home / "collections" / collection / "manifest.sqlite", readonly=True)
    try:
        before, after, headers, lex_before, lex_after = [], [], [], [], []
        for d in sorted(m.all_docs(), key=lambda d: d.doc_id):
            chunks = m.doc_chunks(d.doc_id)
            ctx = stored_contexts(d, chunks)
            for c in chunks:
                before.append(title_only(d.title, c.text))
                full = ctx[c.id].embed_text(c.text)
                after.append(full)
                headers.append(full[: len(full) - len(c.text)] if full != c.text else "")
                lex_before.append((c.id, c.doc_id, d.title, c.text))
                lex_after.append((c.id, c.doc_id, ctx[c.id].identity, ctx[c.id].lexical_text(c.text)))
        return before, after, headers, lex_before, lex_after
    finally:
        m.close()


def lexical_bytes(rows: list[tuple]) -> int:
    """Size on disk of a lexical index built from scratch from ``rows``."""
    import tempfile

    from c1.store.lexical import LexicalIndex

    with tempfile.TemporaryDirectory() as tmp:
        index = LexicalIndex(Path(tmp) / "lexical")
        for row in rows:
            index.add(*row)
        index.close()
        return sum(f.stat().st_size for f in Path(tmp).rglob("*") if f.is_file())


def part_sizes(home: Path, collection: str) -> dict[str, int]:
    def size(p: Path) -> int:
        return sum(f.stat().st_size for f in p.rglob("*") if f.is_file()) if p.exists() else 0

    cdir = home / "collections" / collection
    return {"chroma": size(home / "chroma"), "lexical": size(cdir / "lexical"),
            "manifest": sum(f.stat().st_size for f in cdir.glob("manifest.sqlite*"))}


def main(argv: list[str] | None = None) -> int:
    from tokenizers import Tokenizer

    from c1.store.embedders import MiniLMEmbedder

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--home", type=Path, default=OUT / "fb_home", help="a built collection (default: bench/financebench.py's)")
    ap.add_argument("--collection", default="fb")
    ap.add_argument("--before", type=Path, help="the same files indexed without headers (sizes)")
    ap.add_argument("--sample", type=int, default=512, help="chunks embedded each way")
    ap.add_argument("--batch", type=int, default=32, help="chunks per alternated batch")
    args = ap.parse_args(argv)

    before, after, headers, lex_before, lex_after = inputs(args.home, args.collection)
    emb = MiniLMEmbedder()
    whole = Tokenizer.from_str(emb._tokenizer.to_str())
    whole.no_truncation()
    count = lambda texts: [len(e.ids) for e in whole.encode_batch(texts, add_special_tokens=True)]  # noqa: E731
    n_before, n_after, n_chunk = count(before), count(after), count([a[len(h):] for a, h in zip(after, headers)])
    n_head = [max(0, n - 2) for n in count(headers)]  # without [CLS] and [SEP]
    limit = emb.max_tokens
    with_header = [i for i, h in enumerate(headers) if h]
    # word pieces of the chunk itself that the embedder reads, both ways (2: [CLS] and [SEP])
    read_before = [max(0, min(nb, limit) - 2 - (nb - nc)) for nb, nc in zip(n_before, n_chunk)]
    read_after = [max(0, min(na, limit) - 2 - nh) for na, nh in zip(n_after, n_head)]
    cut = sum(1 for n in n_chunk if n > limit) / len(n_chunk)

    rng = random.Random(0)
    idx = rng.sample(range(len(after)), min(args.sample, len(after)))
    spent = {"without header": 0.0, "with header": 0.0}
    emb.embed(["warm up"])
    for start in range(0, len(idx), args.batch):
        part = idx[start : start + args.batch]
        for name, texts in (("without header", before), ("with header", after)):
            t0 = time.perf_counter()
            emb.embed([texts[i] for i in part])
            spent[name] += time.perf_counter() - t0
    med = {k: len(idx) / v for k, v in spent.items()}
    lex = {"without header": lexical_bytes(lex_before), "with header": lexical_bytes(lex_after)}

    report = {
        "bench": "chunk_header", "home": str(args.home), "chunks": len(after),
        "chunks_with_header": len(with_header),
        "header_pieces_mean": statistics.fmean(n_head[i] for i in with_header) if with_header else 0.0,
        "header_pieces_p95": sorted(n_head[i] for i in with_header)[int(0.95 * len(with_header))] if with_header else 0,
        "chunks_over_limit": round(cut, 3),
        "chunk_pieces_read_before": statistics.fmean(read_before),
        "chunk_pieces_read_after": statistics.fmean(read_after),
        "pieces_embedded_before": statistics.fmean(min(n, limit) for n in n_before),
        "pieces_embedded_after": statistics.fmean(min(n, limit) for n in n_after),
        "embed_chunks_per_s": med,
        "speed_ratio": med["with header"] / med["without header"],
        "lexical_bytes": lex,
    }
    print(f"{len(after)} chunks of {args.home}/{args.collection}; {len(with_header)} get a header "
          f"({report['header_pieces_mean']:.1f} word pieces on average, p95 {report['header_pieces_p95']})")
    print(f"chunks longer than the embedder's {limit}-piece input: {cut:.1%}")
    print(f"chunk word pieces the embedder reads: {report['chunk_pieces_read_before']:.1f} with the title line alone, "
          f"{report['chunk_pieces_read_after']:.1f} with the header "
          f"({report['chunk_pieces_read_after'] / report['chunk_pieces_read_before'] - 1:+.1%})")
    print(f"word pieces embedded per chunk: {report['pieces_embedded_before']:.1f} without header, "
          f"{report['pieces_embedded_after']:.1f} with (what the embedding costs is proportional to them)")
    print(f"embedding {len(idx)} chunks in alternated batches of {args.batch}: "
          f"{med['without header']:.1f} chunks/s without header, {med['with header']:.1f} with "
          f"(ratio {report['speed_ratio']:.2f})")
    print(f"lexical index built from scratch: {lex['without header'] / 1e6:.2f} MB without header, "
          f"{lex['with header'] / 1e6:.2f} MB with ({lex['with header'] / lex['without header'] - 1:+.1%})")
    if args.before:
        b, a = part_sizes(args.before, args.collection), part_sizes(args.home, args.collection)
        report["bytes_before"], report["bytes_after"] = b, a
        for part in b:
            print(f"{part:<9} {b[part] / 1e6:8.1f} MB before  {a[part] / 1e6:8.1f} MB after  "
                  f"({a[part] / b[part] - 1:+.1%})" if b[part] else f"{part}: -")
        tb, ta = sum(b.values()), sum(a.values())
        print(f"{'total':<9} {tb / 1e6:8.1f} MB before  {ta / 1e6:8.1f} MB after  ({ta / tb - 1:+.1%})")
    save({**report, "time": time.strftime("%Y-%m-%dT%H:%M:%S")}, OUT / "chunk_header.jsonl")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
