"""Text checks of the evidence model (c1/retrieval/evidence.py) that must keep their meaning when made faster."""

from __future__ import annotations

import random
import re

from c1.retrieval.bridges import _mid_sentence


def _by_regex(text: str, word: str) -> bool:
    return re.search(r"[a-z0-9,;:)]\s+" + re.escape(word) + r"(?![\w])", text) is not None


def test_a_name_mid_sentence_is_found_as_the_regex_finds_it():
    assert _mid_sentence("the deal with Enron closed", "Enron")
    assert _mid_sentence("signed (2001)\n\tEnron's board", "Enron")
    assert not _mid_sentence("Effective January 1. Enron", "Enron")  # only after a full stop: starts a sentence
    assert not _mid_sentence("the Enronite", "Enron")
    assert not _mid_sentence("Enron", "Enron")
    rng = random.Random(7)
    alphabet = list("abcXYZ ,;:)\n\t.'_-é1") + ["Ann", "Bob", "Ann's", "Annex"]
    for _ in range(5000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40)))
        word = rng.choice(["Ann", "Bob", "X", "Ann's"])
        assert _mid_sentence(text, word) == _by_regex(text, word), (text, word)
