"""Token counting in one unit: gpt-oss's own tokenizer (o200k_harmony), offline.

The vocabulary, ``o200k_base.tiktoken`` (MIT, OpenAI's public tiktoken encodings), ships inside c1
(``c1/data``) and is checked against the SHA-256 that tiktoken itself pins for it. The official
``openai-harmony`` package reads it from there (``TIKTOKEN_ENCODINGS_BASE``) instead of downloading
it, and gives both the tokenizer and the harmony rendering that vLLM applies to gpt-oss prompts,
so a context is counted exactly as the model will see it (:mod:`c1.agent.context`).

Counting ordinary text needs no more than the vocabulary, so :func:`count_tokens` does it here: o200k's
split pattern, then byte-pair merges by rank (the lowest-ranked adjacent pair first, the leftmost of
equals), as tiktoken's encoder does. Loading the vocabulary so takes 0.13 s; loading the library's
encoder took 0.44 s of a cold search, all of it holding the interpreter lock (docs/performance.md,
"Twelfth look"). The tests hold the two counts equal on every text of the shared data.

``chars_for_tokens`` is the cheap size rule of the chunker (about four characters per token of
English prose); it sizes chunks, it counts nothing.
"""

from __future__ import annotations

import binascii
import heapq
import os
import re
import threading
from functools import lru_cache
from pathlib import Path

from c1.pinned import checked

CHARS_PER_TOKEN = 4
DATA = Path(__file__).parent / "data"
VOCAB = DATA / "o200k_base.tiktoken"
VOCAB_SHA256 = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"
"""tiktoken's own pin for o200k_base (tiktoken_ext/openai_public.py)."""

_lock = threading.Lock()


class TokenizerError(Exception):
    """The vocabulary or the harmony package is missing or altered; the message is for the user."""


def chars_for_tokens(tokens: int) -> int:
    return tokens * CHARS_PER_TOKEN


@lru_cache(maxsize=1)
def harmony():
    """``(openai_harmony module, the HARMONY_GPT_OSS encoding)``, loaded once, offline."""
    with _lock:
        checked(VOCAB, VOCAB_SHA256, "the o200k_base vocabulary", TokenizerError)
        try:
            import openai_harmony as h
        except ImportError as exc:
            raise TokenizerError(f"the harmony tokenizer is missing: pip install openai-harmony ({exc})") from None
        previous = os.environ.get("TIKTOKEN_ENCODINGS_BASE")
        os.environ["TIKTOKEN_ENCODINGS_BASE"] = str(DATA)  # read ours, never download
        try:
            return h, h.load_harmony_encoding(h.HarmonyEncodingName.HARMONY_GPT_OSS)
        except Exception as exc:  # HarmonyError
            raise TokenizerError(f"cannot load the o200k_harmony tokenizer: {exc}") from None
        finally:
            if previous is None:
                os.environ.pop("TIKTOKEN_ENCODINGS_BASE", None)
            else:
                os.environ["TIKTOKEN_ENCODINGS_BASE"] = previous


def encoding():
    return harmony()[1]


def count_tokens(text: str) -> int:
    """o200k_harmony tokens of ``text`` as ordinary text (special-token look-alikes included): what
    ``encoding().encode(text, disallowed_special=())`` gives, without loading that encoder."""
    if not text:
        return 0
    ranks, split = _vocabulary()
    count = 0
    for piece in split(text):
        word = piece.encode("utf-8", "surrogatepass")
        count += 1 if word in ranks else _piece_tokens(word)
    return count


_LINE_START = re.compile(r"(?<=\n)(?=[^\W_]|<)")
"""Where a line starts with a letter, a digit or ``<``: no o200k piece runs on from a line's end into
such a character (a piece holds a newline only at its end, or followed by white space or "/")."""


def count_lines(text: str) -> int:
    """:func:`count_tokens` of ``text``, added up from its lines (split only where no token can cross),
    each line's count remembered: a chunk is shown again by the next question, the next run of
    ``--parallel`` and the next turn's read, and its lines are most of what is counted."""
    return sum(map(_line_tokens, _LINE_START.split(text)))


@lru_cache(maxsize=65536)
def _line_tokens(line: str) -> int:
    return count_tokens(line)


O200K_SPLIT = "|".join([
    r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
    r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
    r"""\p{N}{1,3}""",
    r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
    r"""\s*[\r\n]+""",
    r"""\s+(?!\S)""",
    r"""\s+""",
])
"""o200k_base's split pattern (tiktoken_ext/openai_public.py): no token crosses a piece's end."""

_loaded: tuple | None = None


def _vocabulary() -> tuple[dict[bytes, int], object]:
    """(each mergeable piece's rank, the split pattern's ``findall``), loaded once."""
    global _loaded
    if _loaded is None:
        with _lock:
            if _loaded is None:
                import regex

                _loaded = (_ranks(), regex.compile(O200K_SPLIT).findall)
    return _loaded


def _ranks() -> dict[bytes, int]:
    """Each mergeable piece's rank: its line in the vocabulary file, which is in rank order (checked by the
    tests). Decoding the file's base64 takes 0.13-0.18 s holding the interpreter lock, on a cold search's
    main thread; so the ranks are also kept in the cache folder as Python's own serial form, which loads
    in 0.05 s, with its SHA-256 before it: a damaged or foreign copy is decoded afresh and kept anew."""
    import hashlib
    import marshal
    import sys

    from c1.cache_files import cache_path, write_whole

    kept = cache_path("o200k", f"{VOCAB_SHA256[:16]}.{sys.implementation.cache_tag}.m{marshal.version}")
    try:
        data = kept.read_bytes()
        if hashlib.sha256(data[32:]).digest() == data[:32]:
            ranks = marshal.loads(data[32:])
            if isinstance(ranks, dict):
                return ranks
    except (OSError, ValueError, EOFError, TypeError):
        pass
    checked(VOCAB, VOCAB_SHA256, "the o200k_base vocabulary", TokenizerError)
    with open(VOCAB, "rb") as lines:  # line by line: 27 MB held, not 44 (0.03 s slower)
        ranks = {binascii.a2b_base64(line[:line.index(b" ")]): rank for rank, line in enumerate(lines)}
    blob = marshal.dumps(ranks)
    write_whole(kept, hashlib.sha256(blob).digest() + blob)
    return ranks


SHORT = 64
"""Up to this many bytes a piece is merged by scanning its pairs at each step; a longer one (a run of CJK
characters is one piece) through a heap, so that it takes n log n steps, not n²."""


@lru_cache(maxsize=65536)
def _piece_tokens(word: bytes) -> int:
    """:func:`_merged` of a piece, remembered: a word the vocabulary lacks comes back in the next chunk."""
    return _merged(word, _vocabulary()[0])


def _merged(word: bytes, ranks: dict[bytes, int]) -> int:
    """How many tokens ``word`` (a piece of the split, not itself a token) merges into."""
    if len(word) > SHORT:
        return _merged_long(word, ranks)
    get = ranks.get
    parts = [word[i:i + 1] for i in range(len(word))]
    pairs = [get(a + b) for a, b in zip(parts, parts[1:])]  # the rank of each adjacent pair (None: no token)
    while True:
        best, at = None, -1
        for i, rank in enumerate(pairs):
            if rank is not None and (best is None or rank < best):
                best, at = rank, i
        if best is None:
            return len(parts)
        parts[at:at + 2] = [parts[at] + parts[at + 1]]
        del pairs[at]
        if at < len(pairs):
            pairs[at] = get(parts[at] + parts[at + 1])
        if at > 0:
            pairs[at - 1] = get(parts[at - 1] + parts[at])


def _merged_long(word: bytes, ranks: dict[bytes, int]) -> int:
    """:func:`_merged` through a heap of (rank, start of the left part, start and end of the right part): the
    same merges in the same order (an entry whose parts have changed since is skipped)."""
    n = len(word)
    end = list(range(1, n + 1))  # the part that starts at i ends before end[i]; -1: none starts there now
    before = list(range(-1, n - 1))  # the start of the part before it (-1: none)
    heap = [(ranks[word[i:i + 2]], i, i + 1, i + 2) for i in range(n - 1) if word[i:i + 2] in ranks]
    heapq.heapify(heap)
    parts = n
    while heap:
        _, left, right, stop = heapq.heappop(heap)
        if end[left] != right or end[right] != stop:
            continue
        end[left], end[right] = stop, -1
        if stop < n:
            before[stop] = left
        parts -= 1
        for a, b in ((before[left], left), (left, stop)):
            if a >= 0 and b < n and (rank := ranks.get(word[a:end[b]])) is not None:
                heapq.heappush(heap, (rank, a, b, end[b]))
    return parts
