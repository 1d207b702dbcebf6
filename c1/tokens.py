"""Token counting in one unit: gpt-oss's own tokenizer (o200k_harmony), offline.

The vocabulary, ``o200k_base.tiktoken`` (MIT, OpenAI's public tiktoken encodings), ships inside c1
(``c1/data``) and is checked against the SHA-256 that tiktoken itself pins for it. The official
``openai-harmony`` package reads it from there (``TIKTOKEN_ENCODINGS_BASE``) instead of downloading
it, and gives both the tokenizer and the harmony rendering that vLLM applies to gpt-oss prompts,
so a context is counted exactly as the model will see it (:mod:`c1.agent.context`).

``chars_for_tokens`` is the cheap size rule of the chunker (about four characters per token of
English prose); it sizes chunks, it counts nothing.
"""

from __future__ import annotations

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
    """o200k_harmony tokens of ``text`` as ordinary text (special-token look-alikes included)."""
    if not text:
        return 0
    return len(encoding().encode(text, disallowed_special=()))


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
