"""The optimised ONNX graphs kept in the cache folder: a second session loads the kept copy, with the
same outputs bit for bit as a session optimised afresh, and a damaged or unwritable cache costs only time."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from c1.store.embedders import BgeSmallEmbedder, optimised_path

DATA = Path(os.environ.get("C1_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))


def _texts() -> list[str]:
    out = []
    with open(DATA / "scifact" / "corpus.jsonl", encoding="utf-8") as f:
        for line in f:
            d = json.loads(line)
            out.append(f"{d.get('title', '')} {d.get('text', '')}")
            if len(out) >= 40:
                break
    return out + [t[:n] for t, n in zip(out, range(5, 400, 10))]


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    return tmp_path / "c1" / "onnx"


def test_second_session_loads_the_kept_graph_with_the_same_outputs(cache):
    import onnxruntime as ort

    texts = _texts()
    first = BgeSmallEmbedder(threads=1)
    fresh = first.embed(texts)
    kept = optimised_path(first._paths[0], ort.__version__)
    assert kept is not None and kept.parent == cache and kept.exists()
    assert not list(cache.glob("*.part"))
    stamp = kept.stat().st_mtime_ns
    again = BgeSmallEmbedder(threads=1)
    assert np.array_equal(again.embed(texts), fresh)
    assert kept.stat().st_mtime_ns == stamp  # read, not written again


def test_reranker_scores_the_same_from_the_kept_graph(cache):
    from c1.retrieval.rerankers import OnnxReranker

    texts = _texts()[:12]
    fresh = OnnxReranker(threads=1).score("protein folding in cells", texts)
    assert len(list(cache.glob("*.onnx"))) == 1
    assert OnnxReranker(threads=1).score("protein folding in cells", texts) == fresh


def test_a_damaged_copy_is_optimised_again(cache):
    import onnxruntime as ort

    texts = _texts()[:8]
    fresh = BgeSmallEmbedder(threads=1).embed(texts)
    kept = optimised_path(BgeSmallEmbedder()._paths[0], ort.__version__)
    kept.write_bytes(b"not a graph")
    assert np.array_equal(BgeSmallEmbedder(threads=1).embed(texts), fresh)
    assert kept.stat().st_size > 1_000_000  # kept anew


def test_an_unwritable_cache_still_gives_a_session(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))
    vec = BgeSmallEmbedder(threads=1).embed(["a short text"])
    assert vec.shape == (1, 384) and abs(float(np.linalg.norm(vec)) - 1) < 1e-5
