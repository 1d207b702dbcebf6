"""``c1 eval DATASET PATH`` and ``c1 eval compare A B``: flags → options → one call, then print."""

from __future__ import annotations

import json
from pathlib import Path

from c1.config import Settings
from c1.terminal.console import emit_json, err, escape, out, stderr_is_tty
from c1.errors import C1Error
from c1.commands.eval_flags import EvalFlags


def run_eval_command(settings: Settings, dataset: str, path: str, flags: EvalFlags = EvalFlags(), *,
                     json_out: bool = False, quiet: bool = False) -> int:
    from c1.eval.report import summary_tables

    from c1.eval.runner import run_eval

    options = flags.options(dataset, path)
    con = err()

    def note(line: str) -> None:
        if not quiet:
            con.print(f"[dim]c1: {escape(line)}[/]", soft_wrap=True)

    with _Progress(not quiet and stderr_is_tty(), lines=not quiet) as progress:
        run = run_eval(settings, options, progress, note)
    s = run.summary
    if not quiet:
        for system in s["systems"]:
            if system["kind"] == "agent":
                note(f"{system['system']}: {system['note']}")
    if not (quiet and json_out):  # the tables are the output: stdout, unless --json has it (then stderr)
        shown = err() if json_out else out()
        for table in summary_tables(s):
            shown.print(table)
    if not quiet:
        fresh = run.computed
        con.print(f"[dim]{fresh} result(s) computed, {sum(x['n'] for x in s['systems']) - fresh} reused · "
                  f"{s['seconds']:.1f}s · report: {escape(str(run.run_dir / 'report.md'))}[/]", soft_wrap=True)
    if json_out:
        emit_json(s)
    return 0


def load_summary(path: str | Path) -> dict:
    """A run's summary: ``summary.json`` itself or the run directory that holds it."""
    p = Path(path).expanduser()
    if p.is_dir():
        p = p / "summary.json"
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise C1Error(f"{p}: no such file (give a run's summary.json or its run directory)") from None
    except (OSError, ValueError) as exc:
        raise C1Error(f"{p}: not a c1 eval summary ({exc})") from None
    if not isinstance(data, dict) or not isinstance(data.get("systems"), list):
        raise C1Error(f"{p}: not a c1 eval summary (no 'systems')")
    return data


def run_compare_command(a: str | Path, b: str | Path, *, json_out: bool = False, quiet: bool = False) -> int:
    from c1.eval.report import compare, compare_table

    sa, sb = load_summary(a), load_summary(b)
    cmp = compare(sa, sb)
    cmp["a"]["path"], cmp["b"]["path"] = str(a), str(b)
    con = err()
    if not quiet:
        for side, s in (("A", sa), ("B", sb)):
            con.print(f"[dim]{side}: {escape(s.get('dataset'))} ({escape(s.get('setting'))}, k={escape(s.get('k'))}, "
                      f"{escape(s.get('questions'))} questions) — {escape(str(s.get('run_dir') or side))}[/]", soft_wrap=True)
        if (sa.get("dataset"), sa.get("config", {}).get("data")) != (sb.get("dataset"), sb.get("config", {}).get("data")):
            con.print("[yellow]c1: warning:[/] the two runs are on different data", soft_wrap=True)
    if not (quiet and json_out):  # the table is the output: stdout, unless --json has it (then stderr)
        (con if json_out else out()).print(compare_table(cmp, str(a), str(b)))
    if json_out:
        emit_json(cmp)
    return 0


class _Progress:
    """Progress on stderr: a rich bar on a terminal; otherwise (logs, CI) a line when a phase starts
    and at most every 30 seconds; nothing when quiet."""

    EVERY = 30.0

    def __init__(self, bar: bool, lines: bool = False):
        self.show = bar
        self.lines = lines and not bar

    def __enter__(self):
        if not self.show:
            return self._lines if self.lines else (lambda phase, done, total: None)
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

        self.bar = Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                            TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(), console=err(), transient=True)
        self.bar.__enter__()
        self.tasks: dict[str, int] = {}

        def update(phase: str, done: int, total: int) -> None:
            if phase not in self.tasks:
                self.tasks[phase] = self.bar.add_task(_LABELS.get(phase, phase), total=total)
            self.bar.update(self.tasks[phase], completed=done, total=total)

        return update

    def _lines(self, phase: str, done: int, total: int) -> None:
        import time

        now = time.monotonic()
        last = getattr(self, "_last", {})
        self._last = last
        if phase not in last or (now - last[phase] >= self.EVERY and done < total):
            last[phase] = now
            err().print(f"[dim]c1: {escape(_LABELS.get(phase, phase))} {done}/{total}[/]", soft_wrap=True)

    def __exit__(self, *exc):
        if self.show:
            self.bar.__exit__(*exc)


_LABELS = {"index": "indexing", "search": "searching"}
