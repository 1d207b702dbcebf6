"""The plain output of a search (``c1 search`` without ``--json``): the ranked documents as a person reads
them, rendered with rich. Rendered where the search ran: in the command's process, or in the resident
process at the width the command asked for, so that a warm search's command imports no renderer."""

from __future__ import annotations

import os
import sys

from c1.terminal.console import passage_score, printable

PIPE_WIDTH = 4096
"""Columns of the plain output when stdout is not a terminal."""


def plain_form() -> tuple[int, bool, bool]:
    """The width, colour and ``NO_COLOR`` of the plain output, as rich decides them for stdout: wrapped to
    the terminal for a person, in colour; a pipe gets whole lines (a path or an excerpt is never cut for
    grep), without. Sent to the resident process, which renders with its own environment. A pipe is
    told without importing rich (a fifth of a warm search's time outside the resident process): rich
    calls stdout a terminal only where it is one or ``TTY_COMPATIBLE`` or ``FORCE_COLOR`` says so."""
    no_color = os.environ.get("NO_COLOR", "") != ""
    if not ({"TTY_COMPATIBLE", "FORCE_COLOR"} & os.environ.keys() or sys.stdout.isatty()):
        return PIPE_WIDTH, False, no_color
    from rich.console import Console

    probe = Console(file=sys.stdout)
    return (probe.width, True, no_color) if probe.is_terminal else (PIPE_WIDTH, False, no_color)


def plain_text(documents: list[dict], question: str, width: int, colour: bool, no_color: bool = False) -> str:
    """The plain output of a search's documents (what :func:`plain_result` shows, as text)."""
    return render_text(plain_result(documents, question), width, colour, no_color)


def render_text(renderable, width: int, colour: bool = False, no_color: bool | None = None) -> str:
    """``renderable`` as text ``width`` columns wide (ANSI styles only with ``colour``; bold and italic
    without colours with ``no_color``; None: as ``NO_COLOR`` says here), without the spaces rich pads
    lines with."""
    import io
    import re

    from rich.console import Console

    buf = io.StringIO()
    Console(file=buf, width=width, force_terminal=colour, color_system="standard" if colour else None,
            highlight=False, emoji=False, markup=False, no_color=no_color).print(renderable)
    pad = re.compile(r" +((?:\x1b\[[0-9;]*m)*)$")
    return "".join(pad.sub(r"\1", line) + "\n" for line in buf.getvalue().splitlines())


def plain_result(documents: list[dict], question: str):
    """The ranked documents as a person reads them (a rich renderable): each with its rank, title, where
    it is and its score; its justification; then its passages, each with its page, its score and a
    short excerpt with the question's terms in bold. Wrapped lines stay in their column at any width."""
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    from c1.retrieval.excerpt import excerpt

    rows = []
    for rank, d in enumerate(documents, start=1):
        where = printable(d["path"]) + (f":{d['page']}" if d.get("page") is not None else "")
        grid = Table.grid(padding=(0, 1))
        grid.add_column(width=3, justify="right", no_wrap=True)
        grid.add_column(ratio=1, overflow="fold")
        head = Text.assemble((printable(d.get("title") or d["id"]), "bold"), "  ", (where, "cyan"), "  ",
                             (f"score {d['score']:.4f}", "green"), "  ", (d["id"], "dim"))
        grid.add_row(Text(f"{rank}."), head)
        for other in d.get("paths", [])[1:]:  # byte-identical copies (c1/retrieval/copies.py)
            grid.add_row(Text(""), Text(f"also {printable(other)}", style="dim"))
        if d.get("justification"):
            grid.add_row(Text(""), Text(printable(d["justification"]), style="italic"))
        passages = d.get("passages") or []
        if passages:
            inner = Table.grid(padding=(0, 1))
            inner.add_column(no_wrap=True, style="cyan", justify="right")
            inner.add_column(no_wrap=True, style="green")
            inner.add_column(ratio=1, overflow="fold")
            for p in passages:
                shown, marks = excerpt(p["text"], question)
                text = Text(printable(shown))
                for a, b in marks:
                    text.stylize("bold yellow", a, b)
                inner.add_row(f"p.{p['page']}" if p.get("page") is not None else "", passage_score(p["score"]), text)
            grid.add_row(Text(""), inner)
        rows.append(grid)
    return Group(*rows)
