"""The live view on stderr: a consumer of loop events, nothing more.

One run: a log, one block per turn — the tool calls with their arguments, each result block
headed by the call it answers, the chunks that came back (id, title, score), pruned chunks struck
out, and a budget bar.

Several runs (``--parallel N``): one compact panel per run, side by side and redrawn in place as
events arrive (rich's ``Live``): the run's turn and budget bar, its last calls each on one line
with what came back, and how it ended. A terminal shows the panels update; any other console gets
them once, when the last run has finished. ``close()`` ends the display early (an interrupted
search).
"""

from __future__ import annotations

import atexit
from dataclasses import dataclass, field

from rich.console import Console, Group
from rich.live import Live
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from c1.agent import events as ev
from c1.agent.tools import PRUNE, SEARCH
from c1.terminal.console import passage_score

BAR = 24
SHOW = 6
ARGS = 100
PANEL_CALLS = 6
"""Calls listed in a run's panel (the earlier ones are counted)."""
PANEL_COLUMNS = 2
SHORT_TOOLS = {"search_corpus": "search", "grep_corpus": "grep", "read_document": "read", "prune_chunks": "prune"}
"""A tool's name in a narrow panel (an 80-column terminal), so that what came back stays on the line."""
NARROW_ARGS = 12
"""A tool is named short in a panel where its full name leaves less than this for its arguments."""
RESULT_ROOM = 11
"""Characters a call's line keeps for what came back: " → 100 0.89"."""


def budget_bar(used: int, budget: int, soft: float = 0.5, hard: float = 0.9, width: int = BAR) -> Text:
    frac = min(1.0, used / budget) if budget else 0.0
    filled = round(frac * width)
    style = "red" if frac >= hard else "yellow" if frac >= soft else "green"
    return Text.assemble("budget ", ("█" * filled, style), ("░" * (width - filled), "dim"), f" {used:,}/{budget:,}")


def call_text(name: str, arguments: dict, limit: int = ARGS) -> str:
    args = ", ".join(f"{k}={v!r}" for k, v in arguments.items())
    if len(args) > limit:
        args = args[: limit - 1] + "…"
    return f"{name}({args})"


def repeat_mark(seen: dict, run: int, name: str, arguments: dict) -> str:
    """" #N" for the Nth call of a run with the same tool and arguments (a search paged further shows its
    unseen chunks: the same call, new results), "" for the first; ``seen`` counts them."""
    key = (run, name, repr(sorted(arguments.items())))
    seen[key] = n = seen.get(key, 0) + 1
    return f" #{n}" if n > 1 else ""


def packed(parts: list[str], width: int, sep: str = ", ") -> str:
    """``parts`` joined by ``sep``, broken into lines of at most ``width`` between parts (a part longer
    than a line is broken by words), so that a narrow panel wraps them whole instead of cutting them."""
    import textwrap

    lines: list[str] = []
    for i, part in enumerate(parts):
        more = len(sep.rstrip()) if i < len(parts) - 1 else 0  # the separator a later break leaves at the end
        if lines and len(lines[-1]) + len(sep) + len(part) + more <= width:
            lines[-1] += sep + part
        elif lines:
            lines[-1] += sep.rstrip()
            lines.extend(textwrap.wrap(part, width) or [""])
        else:
            lines.extend(textwrap.wrap(part, width) or [""])
    return "\n".join(lines)


def clip(text: str, limit: int) -> str:
    """``text`` on one line, at most ``limit`` characters, cut after a whole word with "…"."""
    text = " ".join(str(text).split())
    if len(text) <= limit:
        return text
    cut = text.rfind(" ", 0, limit)
    return (text[: cut if cut > limit // 2 else limit - 1]).rstrip(" ,;:") + "…"


def shown_score(score: float | None, tool: str | None = None) -> str:
    """A chunk's score on the scale of every score shown, [0, 1]: a search adds up to ``Corpus.W_DOC``
    of document evidence to a re-ranked score in [0, 1], so its scores are divided by 1 + W_DOC."""
    if score is None:
        return ""
    if tool == SEARCH:
        from c1.retrieval.corpus import Corpus

        score = score / (1.0 + Corpus.W_DOC)
    return f"{max(0.0, min(1.0, score)):.2f}"


class LiveView:
    def __init__(self, console: Console, parallel: int = 1, soft: float = 0.5, hard: float = 0.9):
        self.console = console
        self.parallel = parallel
        self.soft, self.hard = soft, hard
        self._panels = _Panels(console, parallel, soft, hard) if parallel > 1 else None
        self._calls: dict[str, str] = {}
        self._seen: dict = {}

    def close(self) -> None:
        if self._panels is not None:
            self._panels.close()

    def kept(self, documents: list[dict]) -> None:
        """After the runs: which passages were kept for the answer — each document's, with its page,
        its score and the chunk it comes from (the chunks above that gave them are the ones listed)."""
        self.close()
        n = sum(len(d.get("passages") or []) for d in documents)
        if not n:
            return
        grid = Table.grid(padding=(0, 1))
        grid.add_column(width=3, no_wrap=True)
        grid.add_column(ratio=1, no_wrap=True, overflow="ellipsis")
        grid.add_column(no_wrap=True, justify="right")
        for d in documents:
            for p in d.get("passages") or []:
                page = f"p.{p['page']} " if p.get("page") is not None else ""
                grid.add_row(Text("  ✓", style="green"), Text(clip(d.get("title") or d["id"], 60)),
                             Text.assemble((page, "cyan"), (passage_score(p["score"]) + " ", "green"), (p.get("chunk", ""), "dim")))
        shown = sum(len(d.get("passages") or []) for d in documents)
        self.console.print(Text(f"kept {shown} passage{'s' if shown != 1 else ''} of "
                                f"{sum(1 for d in documents if d.get('passages'))} documents", style="bold"))
        self.console.print(grid)

    def __call__(self, e: ev.Event) -> None:
        if self._panels is not None:
            self._panels(e)
            return
        out = self.console
        if isinstance(e, ev.RunStarted):
            who = e.policy + (f" · {e.model}" if e.model else "")
            out.print(Text.assemble((f"searching with {who}", "bold"), f" — {e.query}"))
        elif isinstance(e, ev.TurnStarted):
            out.print(Text.assemble((f"turn {e.turn}  ", "bold magenta")) + budget_bar(e.used, e.budget, self.soft, self.hard))
        elif isinstance(e, ev.ToolCalled):
            again = repeat_mark(self._seen, e.run, e.name, e.arguments)
            self._calls[e.call_id] = call_text(e.name, e.arguments) + again
            out.print(Text.assemble(("  → ", "dim"), (e.name, "bold"), call_text("", e.arguments), (again, "dim")))
        elif isinstance(e, ev.ToolResult):
            self._result(e)
        elif isinstance(e, ev.ChunksPruned):
            for c in e.chunks[:SHOW]:
                out.print(Text.assemble(("    ✂ ", "red"), (f"{c.id}  {c.title}", "strike dim")))
            more = f" (… and {len(e.chunks) - SHOW} more)" if len(e.chunks) > SHOW else ""
            out.print(Text(f"    pruned {len(e.chunks)} chunks{more}, freed {e.freed:,} tokens", style="dim"))
        elif isinstance(e, ev.BudgetWarning):
            style = "red" if e.level == "hard" else "yellow"
            out.print(Text(f"  ! context past the {e.level} limit: {e.used:,}/{e.budget:,}", style=style))
        elif isinstance(e, ev.ReplyTruncated):
            out.print(Text(f"  ! {truncated_text(e)}", style="yellow"))
        elif isinstance(e, ev.RunError):
            out.print(Text(f"  error: {e.message}", style="bold red"))
        elif isinstance(e, ev.Finished):
            out.print(Text(_finished(e), style="bold"))

    def _result(self, e: ev.ToolResult) -> None:
        """A result block, headed by the call it answers (several calls of a turn answer in a row)."""
        out = self.console
        head = Text.assemble(("  ← ", "dim"), (self._calls.get(e.call_id, e.name), "dim"))
        if e.error:
            out.print(head + Text(f"  ✗ {e.error}", style="red"))
            return
        if e.chunks:
            out.print(head + Text(f"  {len(e.chunks)} chunk{'s' if len(e.chunks) != 1 else ''}", style="dim"))
        elif e.note and e.tool != PRUNE:
            out.print(head + Text(f"  {e.note}", style="dim"))
        elif e.tool != PRUNE:
            out.print(head)
        for c in e.chunks[:SHOW]:
            score = shown_score(c.score, e.tool)
            page = f" p.{c.page}" if c.page is not None else ""
            line = Text.assemble((f"    {c.id}", "green"), f" {score}" if score else "", f"  {c.title}{page}")
            line.no_wrap, line.overflow = True, "ellipsis"
            out.print(line)
        if len(e.chunks) > SHOW:
            out.print(Text(f"    … and {len(e.chunks) - SHOW} more chunks", style="dim"))


def _finished(e: ev.Finished) -> str:
    return ", ".join(_finished_parts(e))


def _finished_parts(e: ev.Finished) -> list[str]:
    s = e.stats
    return [f"done ({e.stop_reason}): {len(e.documents)} documents", f"{s.get('turns', 0)} turns",
            f"{s.get('tool_calls', 0)} tool calls", f"{s.get('pruned', 0)} pruned", f"{s.get('seconds', 0):.2f}s"]


@dataclass
class _Run:
    turn: int = 0
    used: int = 0
    budget: int = 0
    calls: list[Text] = field(default_factory=list)
    pending: dict[str, int] = field(default_factory=dict)
    """call id → its line in ``calls`` (filled in when its result comes)."""
    done: str | None = None
    warning: str | None = None


class _Panels:
    """One panel per run, redrawn in place."""

    def __init__(self, console: Console, parallel: int, soft: float, hard: float):
        self.console = console
        self.parallel = parallel
        self.soft, self.hard = soft, hard
        self.runs: dict[int, _Run] = {}
        self.query = ""
        self.who = ""
        self._live: Live | None = None
        self._seen: dict = {}
        self._closed = False
        self._finished = 0

    def __call__(self, e: ev.Event) -> None:
        run = self.runs.setdefault(e.run, _Run())
        if isinstance(e, ev.RunStarted):
            self.query, self.who = e.query, e.policy + (f" · {e.model}" if e.model else "")
            run.budget = e.budget
        elif isinstance(e, ev.TurnStarted):
            run.turn, run.used, run.budget = e.turn, e.used, e.budget
        elif isinstance(e, ev.ToolCalled):
            run.pending[e.call_id] = len(run.calls)
            again = repeat_mark(self._seen, e.run, e.name, e.arguments)
            name = self._tool_name(e)
            run.calls.append(Text.assemble((f"t{e.turn} ", "dim"), call_text(name, e.arguments, self._args_width(name, e.turn)),
                                           (again, "dim")))
        elif isinstance(e, ev.ToolResult):
            line = run.calls[run.pending.pop(e.call_id)] if e.call_id in run.pending else Text(e.name)
            if e.error:
                self._append_error(line, e.error)
            elif e.chunks:
                best = max(e.chunks, key=lambda c: c.score if c.score is not None else -1.0)
                score = shown_score(best.score, e.tool)
                line.append(f" → {len(e.chunks)}", style="green")
                line.append(f" {score}" if score else "", style="green")
                room = self._inner() - line.cell_len - 2  # the title gets what is left of the line
                if room >= 8:
                    line.append(f"  {clip(best.title, min(28, room))}", style="dim")
            elif e.tool != PRUNE:
                line.append(" → 0", style="dim")
        elif isinstance(e, ev.ChunksPruned):
            run.calls.append(Text(f"✂ {len(e.chunks)} chunks, freed {e.freed:,}", style="red"))
        elif isinstance(e, ev.BudgetWarning):
            run.warning = f"past the {e.level} limit"
        elif isinstance(e, ev.ReplyTruncated):
            run.warning = "reply cut at its token cap"
        elif isinstance(e, ev.RunError):
            run.calls.append(Text(packed([f"error: {clip(e.message, 3 * self._inner())}"], self._inner()),
                                  style="bold red"))
        elif isinstance(e, ev.Finished):
            first, *counts, seconds = _finished_parts(e)  # the time beside the documents: two lines at 80 columns
            run.done = packed([first, seconds, *counts], self._inner())
            self._finished += 1
        self._show()
        if self._finished >= self.parallel:
            self.close()

    def render(self) -> Group:
        grid = Table.grid(expand=True, padding=(0, 1))
        columns = min(PANEL_COLUMNS, self.parallel)
        for _ in range(columns):
            grid.add_column(ratio=1)
        panels = [self._panel(i, self.runs.get(i, _Run())) for i in range(self.parallel)]
        for i in range(0, len(panels), columns):
            row = panels[i : i + columns]
            grid.add_row(*(row + [Text("")] * (columns - len(row))))
        head = Text.assemble((f"searching with {self.who}", "bold"), f" — {self.query} ", (f"({self.parallel} runs)", "dim"))
        return Group(head, grid)

    def _inner(self) -> int:
        """Characters inside a panel (its borders and padding taken off)."""
        columns = min(PANEL_COLUMNS, self.parallel)
        return max(20, (self.console.width - (columns - 1)) // columns - 4)

    def _tool_name(self, e: ev.ToolCalled) -> str:
        """The call's tool as the model named it, or short in a narrow panel."""
        if self._inner() - len(f"t{e.turn} {e.name}()") - RESULT_ROOM >= NARROW_ARGS:
            return e.name
        return SHORT_TOOLS.get(e.tool or e.name, e.name)

    def _args_width(self, name: str, turn: int) -> int:
        """Characters of a call's arguments that leave room, on a panel's line, for what came back."""
        fit = self._inner() - len(f"t{turn} {name}()") - RESULT_ROOM
        return max(8, min(max(16, min(48, self._inner() - 40)), fit))

    def _append_error(self, line: Text, error: str) -> None:
        """A failed call's error after it, or under it, wrapped, when the line has no room for it."""
        text = " ".join(error.split())
        if line.cell_len + 3 + len(text) <= self._inner():
            line.append(f"  ✗ {text}", style="red")
            return
        lines = packed([f"✗ {clip(text, 2 * (self._inner() - 2))}"], self._inner() - 2).splitlines()
        line.append("".join(f"\n  {part}" for part in lines), style="red")

    def _panel(self, i: int, run: _Run) -> Panel:
        numbers = len(f"budget  {run.used:,}/{run.budget or 1:,}")
        bar = max(4, min(16, self._inner() - numbers))
        lines: list[Text] = [budget_bar(run.used, run.budget or 1, self.soft, self.hard, width=bar)]
        if len(run.calls) > PANEL_CALLS:
            lines.append(Text(f"… {len(run.calls) - PANEL_CALLS} earlier calls", style="dim"))
        for line in run.calls[-PANEL_CALLS:]:  # one line each: what does not fit ends in "…"
            line = line.copy()
            line.no_wrap, line.overflow = True, "ellipsis"
            lines.append(line)
        if run.warning:
            lines.append(Text(run.warning, style="yellow"))
        if run.done:
            lines.append(Text(run.done, style="bold"))
        title = Text.assemble((f"run {i}", "bold cyan"), f" · turn {run.turn}" if run.turn else "")
        return Panel(Group(*lines), title=title, title_align="left", border_style="dim")

    def _show(self) -> None:
        if self._closed:
            return
        if self._live is None:
            self._live = Live(self.render(), console=self.console, auto_refresh=False, transient=False,
                              redirect_stdout=False, redirect_stderr=False)
            self._live.start()
            atexit.register(self.close)  # an interrupted search leaves the terminal as it found it
        elif self.console.is_terminal:
            self._live.update(self.render(), refresh=True)

    def close(self) -> None:
        live, self._live = self._live, None
        self._closed = True
        if live is not None:
            live.update(self.render())
            live.stop()
            atexit.unregister(self.close)


def truncated_text(e) -> str:
    cap = f" at its {e.cap:,}-token cap" if e.cap else ""
    return (f"the model's reply was cut{cap} before it finished: no answer; "
            f"returning the {e.documents} document(s) it was shown")
