"""The live view on stderr: a consumer of loop events, nothing more.

It prints a log, one block per turn and run: the tool calls with their arguments, the chunks
that came back (id, title, score), pruned chunks struck out, and a budget bar. With
``--parallel`` every line carries its run number.
"""

from __future__ import annotations

from rich.console import Console
from rich.text import Text

from c1.agent import events as ev
from c1.agent.tools import PRUNE

BAR = 24
SHOW = 6
ARGS = 100


def budget_bar(used: int, budget: int, soft: float = 0.5, hard: float = 0.9) -> Text:
    frac = min(1.0, used / budget) if budget else 0.0
    filled = round(frac * BAR)
    style = "red" if frac >= hard else "yellow" if frac >= soft else "green"
    bar = Text("█" * filled, style=style) + Text("░" * (BAR - filled), style="dim")
    return Text("budget ") + bar + Text(f" {used:,}/{budget:,}")


class LiveView:
    def __init__(self, console: Console, parallel: int = 1, soft: float = 0.5, hard: float = 0.9):
        self.console = console
        self.parallel = parallel
        self.soft, self.hard = soft, hard

    def _tag(self, e: ev.Event) -> Text:
        return Text(f"[run {e.run}] ", style="cyan") if self.parallel > 1 else Text("")

    def __call__(self, e: ev.Event) -> None:
        out = self.console
        tag = self._tag(e)
        if isinstance(e, ev.RunStarted):
            who = e.policy + (f" · {e.model}" if e.model else "")
            out.print(tag + Text(f"searching with {who}", style="bold") + Text(f" — {e.query}"))
        elif isinstance(e, ev.TurnStarted):
            out.print(tag + Text(f"turn {e.turn}  ", style="bold magenta") + budget_bar(e.used, e.budget, self.soft, self.hard))
        elif isinstance(e, ev.ToolCalled):
            args = ", ".join(f"{k}={v!r}" for k, v in e.arguments.items())
            if len(args) > ARGS:
                args = args[: ARGS - 1] + "…"
            out.print(tag + Text("  → ", style="dim") + Text(e.name, style="bold") + Text(f"({args})"))
        elif isinstance(e, ev.ToolResult):
            if e.error:
                out.print(tag + Text(f"    ✗ {e.error}", style="red"))
            for c in e.chunks[:SHOW]:
                score = f" {c.score:.2f}" if c.score is not None else ""
                page = f" p.{c.page}" if c.page is not None else ""
                out.print(tag + Text(f"    {c.id}", style="green") + Text(f"{score}  {c.title}{page}", style="default"))
            if len(e.chunks) > SHOW:
                out.print(tag + Text(f"    … and {len(e.chunks) - SHOW} more chunks", style="dim"))
            if e.note and not e.chunks and not e.error and e.tool != PRUNE:
                out.print(tag + Text(f"    {e.note}", style="dim"))
        elif isinstance(e, ev.ChunksPruned):
            for c in e.chunks[:SHOW]:
                out.print(tag + Text("    ✂ ", style="red") + Text(f"{c.id}  {c.title}", style="strike dim"))
            more = f" (… and {len(e.chunks) - SHOW} more)" if len(e.chunks) > SHOW else ""
            out.print(tag + Text(f"    pruned {len(e.chunks)} chunks{more}, freed {e.freed:,} tokens", style="dim"))
        elif isinstance(e, ev.BudgetWarning):
            style = "red" if e.level == "hard" else "yellow"
            out.print(tag + Text(f"  ! context past the {e.level} limit: {e.used:,}/{e.budget:,}", style=style))
        elif isinstance(e, ev.RunError):
            out.print(tag + Text(f"  error: {e.message}", style="bold red"))
        elif isinstance(e, ev.Finished):
            s = e.stats
            out.print(tag + Text(
                f"done ({e.stop_reason}): {len(e.documents)} documents, {s.get('turns', 0)} turns, "
                f"{s.get('tool_calls', 0)} tool calls, {s.get('pruned', 0)} pruned, {s.get('seconds', 0):.2f}s",
                style="bold"))
