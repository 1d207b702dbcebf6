"""Real sentences from ../shared/data, recombined into as many chunk-sized texts as a benchmark needs."""

from __future__ import annotations

import json
import os
import random
import re
from pathlib import Path


def shared_data() -> Path:
    env = os.environ.get("C1_SHARED_DATA")
    return Path(env) if env else Path(__file__).resolve().parents[2] / "shared" / "data"


def shared_data_or_exit(folder: str) -> Path:
    """The shared data folder, or exit with a one-line message when its ``folder`` is missing."""
    path = shared_data()
    if not (path / folder).is_dir():
        raise SystemExit(f"shared data not found at {path} (set C1_SHARED_DATA)")
    return path


def hotpot_records() -> list[dict]:
    path = shared_data() / "hotpotqa" / "hotpotqa_dev_distractor_200.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def sentence_pool() -> list[str]:
    """HotpotQA sentences plus Enron message bodies split into sentences."""
    pool = [s.strip() for r in hotpot_records() for _, sents in r["context"] for s in sents if s.strip()]
    maildir = shared_data() / "enron" / "maildir"
    for path in sorted(maildir.rglob("*")):
        if path.is_file():
            body = path.read_text(errors="replace").split("\n\n", 1)[-1]
            pool.extend(s.strip() for s in re.split(r"(?<=[.!?])\s+", body) if 20 < len(s.strip()) < 400)
    return pool


def chunk_texts(n: int, chars: int = 1200, seed: int = 0) -> list[str]:
    """``n`` texts of about ``chars`` characters made of consecutive-ish real sentences."""
    rng = random.Random(seed)
    pool = sentence_pool()
    out = []
    for _ in range(n):
        i = rng.randrange(len(pool))
        parts, size = [], 0
        while size < chars:
            s = pool[i % len(pool)]
            parts.append(s)
            size += len(s) + 1
            i += rng.choice((1, 1, 1, 7, 31))
        out.append(" ".join(parts))
    return out


def docs_of_chunks(chunk_ids: list[str], k: int) -> list[str]:
    """The first ``k`` documents of a chunk ranking (a chunk id is ``{doc}_{n}``), in order."""
    out: list[str] = []
    for cid in chunk_ids:
        d = cid.rsplit("_", 1)[0]
        if d not in out:
            out.append(d)
            if len(out) == k:
                break
    return out
