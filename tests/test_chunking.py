"""The chunker on real text: exact spans, sizes near the target, overlap, sentence boundaries."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from c1.index.chunking import chunk_spans
from c1.tokens import chars_for_tokens

SENTENCE_END = tuple('.!?…"\')]')


@pytest.fixture(scope="module")
def prose(shared_data: Path) -> str:
    """Real encyclopedic prose: 300 HotpotQA paragraphs, blank lines between them."""
    paragraphs = []
    with open(shared_data / "hotpotqa" / "hotpotqa_dev_distractor_200.jsonl", encoding="utf-8") as f:
        for line, _ in zip(f, range(30)):
            paragraphs += ["".join(sentences).strip() for _, sentences in json.loads(line)["context"]]
    return "\n\n".join(paragraphs)


@pytest.fixture(scope="module")
def mail_text(shared_data: Path) -> str:
    """A real Enron message, raw: headers, quoted replies, signatures, odd line breaks."""
    messages = sorted((shared_data / "enron" / "maildir").glob("*/*/*"), key=lambda p: -p.stat().st_size)
    return messages[0].read_bytes().decode("latin-1")


def check_exact(text: str, spans) -> None:
    """Spans are ordered, trimmed slices that together cover every non-blank character."""
    covered = bytearray(len(text))
    prev_start = -1
    for s in spans:
        assert 0 <= s.start < s.end <= len(text)
        piece = text[s.start : s.end]
        assert piece == piece.strip(), f"untrimmed chunk at {s.start}"
        assert s.start > prev_start, "chunks must move forward"
        prev_start = s.start
        covered[s.start : s.end] = b"\x01" * (s.end - s.start)
    missing = [i for i, ch in enumerate(text) if not ch.isspace() and not covered[i]]
    assert not missing, f"text not covered at offsets {missing[:5]}: {text[missing[0]:missing[0] + 40]!r}"


@pytest.mark.parametrize("tokens,overlap", [(512, 48), (256, 48), (128, 24), (64, 0)])
def test_spans_are_exact_and_cover_the_text(prose, mail_text, tokens, overlap):
    for text in (prose, mail_text):
        check_exact(text, chunk_spans(text, tokens, overlap))


def test_sizes_near_the_target(prose):
    max_chars = chars_for_tokens(512)
    spans = chunk_spans(prose, 512, 48)
    sizes = [s.end - s.start for s in spans]
    assert max(sizes) <= max_chars
    # Greedy packing of sentences: every chunk but the last is well filled.
    assert min(sizes[:-1]) >= max_chars // 2, sizes
    assert sum(sizes[:-1]) / len(sizes[:-1]) >= 0.75 * max_chars


def test_consecutive_chunks_overlap_by_whole_sentences(prose):
    overlap_chars = chars_for_tokens(48)
    spans = chunk_spans(prose, 512, 48)
    overlaps = [a.end - b.start for a, b in zip(spans, spans[1:])]
    assert max(overlaps) <= overlap_chars
    assert sum(o > 0 for o in overlaps) >= 0.6 * len(overlaps), overlaps
    for a, b in zip(spans, spans[1:]):
        if a.end > b.start:  # the shared part is a sentence tail of a, starting at a boundary
            assert _at_start_boundary(prose, b.start), prose[b.start - 40 : b.start + 40]


def test_no_overlap_asked_none_given(prose):
    spans = chunk_spans(prose, 256, 0)
    assert all(a.end <= b.start for a, b in zip(spans, spans[1:]))


def _at_start_boundary(text: str, i: int) -> bool:
    """Chunk starts: the text's first word, a new paragraph, or the word after a sentence end."""
    before = text[:i].rstrip()
    return not before or text[len(before) : i].count("\n") >= 2 or before.endswith(SENTENCE_END)


def _at_end_boundary(text: str, i: int) -> bool:
    """Chunk ends: the text's end, a paragraph's end, or a sentence end (closing quotes included)."""
    rest = text[i:]
    gap = rest[: len(rest) - len(rest.lstrip())]
    return not rest.strip() or gap.count("\n") >= 2 or text[:i].endswith(SENTENCE_END)


@pytest.mark.parametrize("tokens", [512, 128])
def test_chunks_start_and_end_at_sentence_or_paragraph_bounds(prose, tokens):
    # Only sentences longer than a whole chunk may be cut inside; keep paragraphs without them.
    limit = chars_for_tokens(tokens) // 2
    text = "\n\n".join(p for p in prose.split("\n\n") if max(map(len, re.split(r"(?<=[.!?])\s+", p))) < limit)
    spans = chunk_spans(text, tokens, 24)
    assert len(spans) > 10
    for s in spans:
        assert _at_start_boundary(text, s.start), text[max(0, s.start - 40) : s.start + 40]
        assert _at_end_boundary(text, s.end), text[max(0, s.end - 40) : s.end + 40]


def test_closing_quotes_stay_with_their_sentence():
    text = 'He said "the sound of Jeff Porcaro." Then he left. She asked (why?) and (wait.) Nobody knew. ' * 60
    spans = chunk_spans(text, 64, 16)
    check_exact(text, spans)
    for s in spans:
        assert not text[s.start : s.end].startswith(('"', ")")), text[s.start : s.start + 30]


def test_paragraphs_are_never_glued_mid_sentence():
    paragraphs = ["First paragraph has a heading line without a full stop", "Second one. It has two sentences."]
    text = "\n\n".join(paragraphs * 200)
    spans = chunk_spans(text, 64, 8)
    check_exact(text, spans)
    for s in spans:
        assert _at_start_boundary(text, s.start) and _at_end_boundary(text, s.end)


def test_giant_sentenceless_blob_is_still_split():
    words = " ".join(f"token{i}" for i in range(6000))  # ~50k characters, no punctuation, no newline
    max_chars = chars_for_tokens(128)
    spans = chunk_spans(words, 128, 16)
    check_exact(words, spans)
    assert len(spans) >= len(words) // max_chars
    for s in spans:
        assert s.end - s.start <= max_chars
        assert s.start == 0 or words[s.start - 1] == " ", "cut inside a word"
        assert s.end == len(words) or words[s.end] == " ", "cut inside a word"


def test_blob_without_any_space_is_cut_hard():
    blob = "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo" * 600  # base64-like, 21,000 characters
    spans = chunk_spans(blob, 128, 16)
    check_exact(blob, spans)
    assert all(s.end - s.start <= chars_for_tokens(128) for s in spans)
    assert "".join(blob[s.start : s.end] for s in spans) == blob  # hard cuts, nothing lost or doubled


@pytest.mark.parametrize("text", ["", " ", "\n\n\t  \n", "\u00a0\u2003"])
def test_empty_text_gives_no_chunks(text):
    assert chunk_spans(text) == []


def test_short_text_is_one_trimmed_chunk():
    text = "\n\n  Meeting moved to 3pm.  \n"
    spans = chunk_spans(text)
    assert len(spans) == 1
    assert text[spans[0].start : spans[0].end] == "Meeting moved to 3pm."


def test_non_latin_text_spans_are_exact():
    text = ("東京は日本の首都である。人口は約1400万人。 " * 80 + "\n\n" + "Émile a dit « bonjour » ! 🎉 Ça va? " * 80)
    spans = chunk_spans(text, 64, 8)
    check_exact(text, spans)
    assert all(s.end - s.start <= chars_for_tokens(64) for s in spans)


def test_spans_depend_only_on_the_text_and_the_sizes(prose):
    """No state carried from call to call, nothing hash-ordered: a fresh process with another hash
    seed cuts the same spans (an index rebuilt later gets the same chunk ids), and the sizes matter."""
    import subprocess
    import sys

    expected = [(s.start, s.end) for s in chunk_spans(prose, 256, 32)]
    chunk_spans(prose[::-1], 64, 0)  # an unrelated call in between
    assert [(s.start, s.end) for s in chunk_spans(prose, 256, 32)] == expected
    code = ("import json, sys; from c1.index.chunking import chunk_spans; "
            "print(json.dumps([(s.start, s.end) for s in chunk_spans(sys.stdin.read(), 256, 32)]))")
    for hash_seed in ("1", "4242"):
        out = subprocess.run([sys.executable, "-c", code], input=prose, capture_output=True, text=True, check=True,
                             env={**os.environ, "PYTHONHASHSEED": hash_seed}, encoding="utf-8")
        assert [tuple(x) for x in json.loads(out.stdout)] == expected
    assert [(s.start, s.end) for s in chunk_spans(prose, 128, 32)] != expected
