"""Text checks of the evidence model (c1/retrieval/evidence.py) that must keep their meaning when made faster."""

from __future__ import annotations

import random
import re

from c1.retrieval.bridges import _after_lower, _mid_sentence


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


def test_the_words_after_a_lower_case_word_are_those_mid_sentence_finds_in_the_joined_chunks():
    """A one-word name is looked up in the set read chunk by chunk, not searched for in the pivot's whole
    text: the set must hold exactly the words that the search finds in the chunks joined by newlines, the
    joins included (a chunk that ends in a lower-case word, one that is only white space)."""
    rng = random.Random(11)
    alphabet = list("abcXYZ ,;:)\n\t.'_-é1") + ["Ann", "Bob", "Ann's", "Annex", "Bob_2"]
    for _ in range(3000):
        contents = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12))) for _ in range(rng.randint(1, 4))]
        body, got = "\n".join(contents), _after_lower(contents)
        for word in ("Ann", "Bob", "X", "Annex", "Bob_2", "é1"):
            assert (word in got) == _mid_sentence(body, word), (contents, word)


def test_a_copy_of_a_pivot_gets_nothing_from_it_and_no_document_is_read_for_copies_unless_it_must_be(monkeypatch):
    """A message filed in two folders is one message: neither copy links, back-links or bridges to the
    other, while a document a pivot names still gets the link. Whether two documents are copies needs
    their content words, worked out only for a document that something would reach."""
    from c1.retrieval import in_view
    from c1.retrieval.evidence import DocView, Ranker

    text = "Alpha Band is a rock group. Its drummer later joined Beta Records in Houston. The album Gamma was recorded there."
    docs = {
        "a": DocView("a", "Alpha Band", [("a_0", text)]),
        "a2": DocView("a2", "Alpha Band (copy)", [("a2_0", text)]),
        "b": DocView("b", "Beta Records", [("b_0", "Beta Records is a label founded in Houston. It signed Alpha Band in 1990.")]),
        "e": DocView("e", "Epsilon", [("e_0", "epsilon minutes of a quiet meeting, nothing else")]),
    }
    read: list[str] = []
    make = in_view.Lazy.__missing__
    monkeypatch.setattr(in_view.Lazy, "__missing__", lambda self, d: read.append(d) or make(self, d))
    r = Ranker("Which label did the drummer of Alpha Band join?").rank(
        docs, ["a", "a2", "b", "e"], {"a_0": 0.8, "a2_0": 0.79, "b_0": 0.6, "e_0": 0.1})
    assert "a" not in r.sources["a2"] and "a2" not in r.sources["a"]
    assert {"a", "a2"} <= r.sources["b"] and r.features["b"]["link"] > 0
    assert "e" not in read and {"a", "a2", "b"} <= set(read)


def test_a_documents_first_names_are_its_chunks_first_names_together():
    """A pivot's bare first names are read chunk by chunk and remembered (its bridges are read again at
    each turn that shows one more chunk): the same names as read from the chunks' content joined,
    since neither a capitalised name nor a greeting line runs on past a line's end."""
    from c1.retrieval.bridges import _first_names
    from c1.retrieval.text import bare_first_names

    rng = random.Random(11)
    pieces = ["Tom", "Tom Alonso", "Hi Zoë,", "Thanks, Tom", "Mery", "the deal", "\n", " ", "Enron Corp", ",", "1999",
              "Dear Ann", "of", "Bob", "Regards,\nBob Smith", "\n\n", "signed by", "Ann"]
    for _ in range(3000):
        contents = ["".join(rng.choice(pieces) for _ in range(rng.randint(0, 12))).strip("\n")
                    for _ in range(rng.randint(1, 4))]
        assert set().union(*map(_first_names, contents)) == bare_first_names("\n".join(contents)), contents


def test_a_documents_normal_form_in_view_is_that_of_its_chunks_joined():
    """A document's normal form is put together from its chunks' (each worked out once a search): it must be
    the normal form of its text in view as one string, whatever the chunks hold at their edges."""
    from c1.retrieval import text as tx
    from c1.retrieval.evidence import DocView, Ranker
    from c1.retrieval.in_view import InView

    rng = random.Random(13)
    pieces = ["Müller's", "’s", "s ", "'", "Ann", "café", "Σ", "ΟΔΟΣ", " ", "\n", "-", "e\u0301", "\u0301x", "1,200", ""]
    ranker = Ranker("who signed?")
    for _ in range(500):
        chunks = [(f"c{i}", "".join(rng.choice(pieces) for _ in range(rng.randint(0, 6)))) for i in range(rng.randint(0, 4))]
        read = InView(ranker, {"d": DocView("d", "The Title", chunks)})
        assert read.norms["d"] == f" {tx.norm('The Title')} {tx.norm(' '.join(t for _, t in chunks))} ", chunks
        assert read.texts["d"] == " ".join(t for _, t in chunks)
