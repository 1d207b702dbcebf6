"""Counting without the library's encoder: c1's o200k byte-pair merges (c1/tokens.py) and a message's
count from its harmony frames (c1/model/harmony.py) give what openai-harmony renders, on real text of
every kind and on the shapes that stress a tokenizer (long runs of one script, look-alikes of special
tokens); the preamble's count is kept on disk, so that a search in a new process loads no encoder."""

from __future__ import annotations

import base64
import json
import random
import subprocess
import sys

import pytest

from c1 import tokens
from c1.model import harmony as hm


def _encoder():
    return tokens.harmony()[1]


def _texts(shared: "Path") -> list[str]:  # noqa: F821
    """Lines and 3,000-character blocks of every kind of the shared data (its text files: mail, contracts,
    claims, Wikipedia paragraphs), some 40,000 in all."""
    files = sorted(p for p in shared.rglob("*") if p.is_file() and p.suffix in ("", ".jsonl", ".txt", ".md")
                   and p.stat().st_size < 20_000_000)
    rng = random.Random(7)
    out: list[str] = []
    for path in files[:: max(1, len(files) // 400)]:
        text = path.read_bytes().decode("utf-8", "replace")[:200_000]
        lines = text.split("\n")
        out += rng.sample(lines, min(len(lines), 100))
        out += [text[i:i + 3000] for i in range(0, min(len(text), 30_000), 3000)]
    return out


def test_counts_are_the_encoders_on_the_shared_data(shared_data):
    texts = _texts(shared_data)
    assert len(texts) > 10_000
    enc = _encoder()
    wrong = [t[:80] for t in texts if tokens.count_tokens(t) != len(enc.encode(t, disallowed_special=()))]
    assert not wrong, wrong[:5]


def test_counts_are_the_encoders_where_a_piece_is_long_or_strange():
    """A run of CJK characters, a long word, repeated letters and marks are one piece each: merged through the
    heap (over ``SHORT`` bytes), they must merge as the encoder does; so must mixed scripts, emoji, special-token
    look-alikes, surrogate-free odd code points."""
    rng = random.Random(11)
    enc = _encoder()
    pool = ([chr(rng.randint(0x4E00, 0x9FFF)) for _ in range(300)] + [chr(rng.randint(0x3040, 0x30FF)) for _ in range(80)]
            + [chr(rng.randint(0x20, 0x2FFF)) for _ in range(300)] + [chr(rng.randint(0x1F300, 0x1FAFF)) for _ in range(40)]
            + ["\n", " ", "\t", "\r\n", "<|end|>", "'s", "1234", "ß", "é"])
    texts = ["".join(rng.choice(pool) for _ in range(rng.randint(1, 400))) for _ in range(600)]
    texts += ["合同" * 800, "a" * 3000, "ab" * 2000, " " * 3000, "!" * 2500, "9" * 1000, "Donaudampfschiff" * 90,
              "".join(chr(rng.randint(0x4E00, 0x9FFF)) for _ in range(4000)), "ÄÖÜ" * 500 + "x"]
    for text in texts:
        assert tokens.count_tokens(text) == len(enc.encode(text, disallowed_special=())), repr(text[:60])


def test_long_and_short_merging_agree():
    """The heap (pieces over ``SHORT`` bytes) and the scan (the others) merge every word alike."""
    ranks, _ = tokens._vocabulary()
    rng = random.Random(3)
    letters = "abcdefghijklmnopqrstuvwxyzäéß中文日本語 -_'"
    words = ["".join(rng.choice(letters) for _ in range(rng.randint(2, 60))).encode() for _ in range(3000)]
    assert any(len(w) > tokens.SHORT for w in words) and any(len(w) <= tokens.SHORT for w in words)
    for word in words:
        scan = _scan(word, ranks)
        assert tokens._merged(word, ranks) == scan and tokens._merged_long(word, ranks) == scan, word


def _scan(word: bytes, ranks: dict) -> int:
    parts = [word[i:i + 1] for i in range(len(word))]
    while True:
        pairs = [(ranks[a + b], i) for i, (a, b) in enumerate(zip(parts, parts[1:])) if a + b in ranks]
        if not pairs:
            return len(parts)
        _, i = min(pairs)
        parts[i:i + 2] = [parts[i] + parts[i + 1]]


def test_a_pieces_rank_is_its_line_in_the_vocabulary():
    lines = tokens.VOCAB.read_bytes().split(b"\n")
    ranks = [int(line.split()[1]) for line in lines if line]
    assert ranks == list(range(len(ranks)))
    assert len(tokens._vocabulary()[0]) == len(ranks), "no piece twice"


def _messages(rng: random.Random) -> list[tuple[dict, str]]:
    texts = ["", "hello", " lead", "<|end|>", "a\nb", "合同终止 text", '{"query": "3M net sales"}', "😀", "\n\n", "# x",
             "  ", "/path", "Kündigung am 1. März"]
    names = ["search_corpus", "grep_corpus", "read_document", "prune_chunks", "x", "two words", "名前", "a.b", ""]
    out = []
    for _ in range(1500):
        text = rng.choice(texts) + rng.choice(texts)
        kind = rng.choice(["user", "system", "developer", "tool", "answer", "call", "calls"])
        if kind in ("user", "system", "developer"):
            msg = {"role": kind, "content": text}
        elif kind == "tool":
            msg = {"role": "tool", "content": text, "tool_call_id": "c"}
            if rng.random() < 0.5:
                msg["name"] = rng.choice(names)
        else:
            msg = {"role": "assistant", "content": text}
            if rng.random() < 0.5:
                msg["reasoning"] = rng.choice(texts)
            if kind != "answer":
                msg["tool_calls"] = [{"id": f"c{i}", "function": {"name": rng.choice(names), "arguments": rng.choice(texts)}}
                                     for i in range(1 if kind == "call" else rng.randint(2, 3))]
        out.append((msg, rng.choice(names)))
    return out


def test_a_messages_count_is_its_render():
    enc = _encoder()
    for msg, tool_name in _messages(random.Random(2)):
        rendered = sum(len(enc.render(m)) for m in hm.message(msg, tool_name))
        assert hm.count_message(msg, tool_name) == rendered, (msg, tool_name)


def test_the_preambles_count_does_not_depend_on_the_dates_value():
    """Why the count is kept without its date: every YYYY-MM-DD renders in as many tokens."""
    h, enc = tokens.harmony()
    tools = [{"type": "function", "function": {"name": "search_corpus", "description": "Search.",
                                               "parameters": {"type": "object", "properties": {"query": {"type": "string"}}}}}]
    counts = set()
    rng = random.Random(4)
    for _ in range(60):
        date = f"{rng.randint(1990, 2199)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
        conv = h.Conversation.from_messages(hm.preamble("Find documents.", tools, start_date=date))
        counts.add(len(enc.render_conversation_for_completion(conv, h.Role.ASSISTANT)))
    assert len(counts) == 1


PROBE = """
import json, sys
from c1 import tokens
from c1.model import harmony as hm
tools = [{"type": "function", "function": {"name": "read_document", "description": "Read.",
                                           "parameters": {"type": "object", "properties": {"doc_id": {"type": "string"}}}}}]
n = hm.count_preamble("Find the documents.", tools, start_date=sys.argv[1])
print(json.dumps({"count": n, "loaded": tokens.harmony.cache_info().currsize, "imported": "openai_harmony" in sys.modules}))
"""


def _probe(env: dict, date: str) -> dict:
    done = subprocess.run([sys.executable, "-c", PROBE, date], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_the_preamble_is_counted_once_and_kept(tmp_path):
    """A first process counts the preamble with the library and keeps the count; the next, on another day,
    reads it without importing the library; a cache it cannot write still gets the count."""
    import os

    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    env.pop("C1_CACHE_DIR", None)
    first = _probe(env, "2026-12-06")
    assert first["loaded"] == 1 and first["count"] > 40
    kept = list((tmp_path / "cache" / "c1" / "counts").iterdir())
    assert len(kept) == 1 and kept[0].read_text() == str(first["count"])
    again = _probe(env, "2027-01-31")
    assert again == {"count": first["count"], "loaded": 0, "imported": False}
    kept[0].write_text("garbage")  # a damaged entry is counted again
    assert _probe(env, "2026-12-07")["loaded"] == 1
    assert kept[0].read_text() == str(first["count"])
    kept[0].unlink()
    os.chmod(kept[0].parent, 0o500)
    try:
        assert _probe(env, "2026-12-08")["count"] == first["count"]
        if not os.access(kept[0].parent, os.W_OK):  # (root writes anyway)
            assert not list(kept[0].parent.iterdir())
    finally:
        os.chmod(kept[0].parent, 0o700)


def test_the_count_exactly_as_rendered_after_the_kept_preamble(tmp_path, monkeypatch):
    """What ``count_preamble`` reads back from disk is the render's count for another date too."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("C1_CACHE_DIR", raising=False)
    h, enc = tokens.harmony()
    tools = [{"type": "function", "function": {"name": "grep_corpus", "description": "Grep.",
                                               "parameters": {"type": "object", "properties": {"pattern": {"type": "string"}}}}}]
    first = hm.count_preamble("Find it.", tools, start_date="2026-01-01")
    hm._COUNTS.clear()
    later = hm.count_preamble("Find it.", tools, start_date="2031-07-15")
    conv = h.Conversation.from_messages(hm.preamble("Find it.", tools, start_date="2031-07-15"))
    assert first == later == len(enc.render_conversation_for_completion(conv, h.Role.ASSISTANT))


def test_the_ranks_are_kept_in_the_cache_folder_and_a_damaged_copy_is_decoded_afresh(tmp_path, monkeypatch):
    """The first load decodes the vocabulary and keeps its ranks; the next reads them back without the
    vocabulary file; a damaged copy is decoded again and kept anew; a cache that cannot be written still
    gives the ranks, and leaves nothing behind."""
    import os

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("C1_CACHE_DIR", raising=False)
    lines = tokens.VOCAB.read_bytes().split(b"\n")
    truth = {base64.b64decode(line.split()[0]): int(line.split()[1]) for line in lines if line}
    assert tokens._ranks() == truth
    kept = list((tmp_path / "cache" / "c1" / "o200k").iterdir())
    assert len(kept) == 1 and not kept[0].name.endswith(".part")
    whole = kept[0].read_bytes()

    real = tokens.VOCAB
    monkeypatch.setattr(tokens, "VOCAB", tmp_path / "gone.tiktoken")
    assert tokens._ranks() == truth, "read back from the kept copy, not the vocabulary"

    damaged = bytearray(whole)
    damaged[len(damaged) // 2] ^= 0xFF
    kept[0].write_bytes(bytes(damaged))
    with pytest.raises(tokens.TokenizerError, match="missing"):
        tokens._ranks()  # the damaged copy is not used: the vocabulary is needed again
    monkeypatch.setattr(tokens, "VOCAB", real)
    assert tokens._ranks() == truth
    assert kept[0].read_bytes() == whole, "kept anew"

    kept[0].unlink()
    os.chmod(kept[0].parent, 0o500)
    try:
        assert tokens._ranks() == truth
        if not os.access(kept[0].parent, os.W_OK):  # (root writes anyway)
            assert not list(kept[0].parent.iterdir())
    finally:
        os.chmod(kept[0].parent, 0o700)
