"""The built-in embedder's batching (c1/corpus/embedders.py): runs bounded by padded word pieces."""

from __future__ import annotations

import numpy as np
import pytest

from c1.corpus.embedders import MiniLMEmbedder


def test_runs_hold_at_most_the_token_budget_and_keep_every_text_once():
    emb = MiniLMEmbedder(batch_tokens=256, batch_size=8)
    lengths = [10] * 30 + [60] * 5 + [200] * 3
    order = sorted(range(len(lengths)), key=lengths.__getitem__)
    runs = emb._batches(order, lengths)
    assert sorted(i for run in runs for i in run) == list(range(len(lengths)))
    for run in runs:
        assert len(run) <= 8 and len(run) * max(lengths[i] for i in run) <= 256 or len(run) == 1
    assert [len(r) for r in runs][-3:] == [1, 1, 1], "a long text runs alone"
    assert max(len(r) for r in runs) == 8, "short texts share a run, up to batch_size"


@pytest.fixture(scope="module")
def embedder():
    return MiniLMEmbedder()


def test_a_long_chunk_gets_the_same_vector_whatever_its_neighbours(embedder):
    """A chunk's vector does not depend on how it was batched (the run sizes are a speed setting only)."""
    long_text = " ".join(["The quarterly report lists revenue, margins and the outlook for each segment."] * 20)
    others = ["short note", "A second text of a different length, somewhat longer than the first one."]
    alone = embedder.embed([long_text])[0]
    together = embedder.embed([others[0], long_text, others[1]])
    assert np.array_equal(together[1], alone)
    assert np.allclose(np.linalg.norm(together, axis=1), 1.0, atol=1e-5)
    # The long text runs alone; the two short ones share a run (the shorter padded to the longer's width)
    # and still get the vectors they get alone.
    lengths = embedder.token_counts([others[0], long_text, others[1]])
    assert embedder._batches(sorted(range(3), key=lengths.__getitem__), lengths) == [[0, 2], [1]]
    assert np.array_equal(together[0], embedder.embed([others[0]])[0])
    assert np.array_equal(together[2], embedder.embed([others[1]])[0])
