"""Where things are printed: rich output to stderr, results to stdout. Nothing heavy at import."""

from __future__ import annotations

import json
import sys
from functools import cache


@cache
def err():
    from rich.console import Console

    return Console(stderr=True, highlight=False)


def error(message: str) -> None:
    err().print(f"[bold red]c1: error:[/] {message}", markup=True, highlight=False, soft_wrap=True)


def warn(message: str) -> None:
    err().print(f"[yellow]c1: warning:[/] {message}", soft_wrap=True)


def emit_json(obj) -> None:
    sys.stdout.write(json.dumps(obj, ensure_ascii=False) + "\n")
    sys.stdout.flush()


def stderr_is_tty() -> bool:
    return sys.stderr.isatty()
