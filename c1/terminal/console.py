"""Where things are printed: rich output to stderr, results to stdout. Nothing heavy at import.

Every string that comes from the user, a file or a library (paths, collection names, titles,
exception messages, install hints such as ``c1[mcp]``) is text, never rich markup: ``error``,
``warn`` and ``note`` take plain text, and code that builds markup around such a string passes
it through :func:`escape` first. Unescaped, ``no[/]such`` raises rich's MarkupError and
``[draft] notes`` or ``c1[mcp]`` silently lose their brackets.
"""

from __future__ import annotations

import json
import sys
from functools import cache


@cache
def err():
    from rich.console import Console

    return Console(stderr=True, highlight=False, emoji=False)


def out():
    """A rich console on stdout, for output that is the result itself (``c1 eval``'s tables)."""
    from rich.console import Console

    return Console(highlight=False, emoji=False)


def escape(value) -> str:
    """``value`` as text that rich prints literally inside markup (brackets and a trailing backslash)."""
    from rich.markup import escape as rich_escape

    return rich_escape(str(value))


_CONTROLS = {i: f"\\x{i:02x}" for i in (*range(32), *range(127, 160))} | {9: "\\t", 10: "\\n", 13: "\\r",
                                                                        0x2028: "\\u2028", 0x2029: "\\u2029"}


def printable(value) -> str:
    """``value`` on one line: control characters (a newline in a file name) as escapes, ``\\n``."""
    return str(value).translate(_CONTROLS)


def error(message: str) -> None:
    err().print(f"[bold red]c1: error:[/] {escape(message)}", highlight=False, soft_wrap=True)


def warn(message: str) -> None:
    err().print(f"[yellow]c1: warning:[/] {escape(message)}", soft_wrap=True)


def note(message: str) -> None:
    """A dim line of information on stderr (the policy in use, what a repair did)."""
    err().print(f"[dim]{escape(message)}[/]", soft_wrap=True)


def emit_json(obj) -> None:
    sys.stdout.write(json.dumps(obj, ensure_ascii=False) + "\n")
    sys.stdout.flush()


def stderr_is_tty() -> bool:
    return sys.stderr.isatty()


def passage_score(score: float) -> str:
    """A passage's score as a person reads it: two decimals, and "<0.01" for a listed passage whose score
    rounds to 0.00 (it was kept: the scorer was unsure of everything, and it is the best there is)."""
    return f"{score:.2f}" if score >= 0.005 else "<0.01"
