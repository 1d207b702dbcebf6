"""``c1 search``: open the corpus, pick the policy, run the agent(s), print the result."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from c1.config import Settings, query_problem
from c1.terminal.console import emit_json, err, note, stderr_is_tty, warn
from c1.terminal.plain import plain_form, plain_text
from c1.errors import C1Error
from c1.terminal.said_once import first_time


def run_search_command(settings: Settings, query: str | None, *, json_out: bool, jsonl: bool, quiet: bool,
                       save_trajectory: Path | None, batch: str | None = None, jobs: int = 1) -> int:
    if batch is not None:
        if query is not None:
            raise C1Error("give a QUESTION or --batch FILE, not both")
        if jsonl or save_trajectory:
            raise C1Error(f"--batch prints one JSON result per question; it takes no {'--jsonl' if jsonl else '--save-trajectory'}")
        from c1.commands.batch import run_batch_command

        return run_batch_command(settings, batch, jobs=jobs, quiet=quiet)
    if query is None:
        raise C1Error("give a QUESTION (or --batch FILE)")
    if jobs != 1:
        raise C1Error("--jobs goes with --batch")
    if problem := query_problem(query):  # the API's limit too (c1.config)
        raise C1Error(problem)
    if json_out and jsonl:
        raise C1Error("--json and --jsonl are exclusive")
    if save_trajectory:
        check_writable(save_trajectory, "--save-trajectory")
    show = _Shown(settings, jsonl, quiet, json_out)
    result = None
    if uses_daemon(settings):
        from c1.daemon.client import search_via_daemon

        result = search_via_daemon(settings, query, show.opened, show.event if show.consumers else None,
                                   trajectories=save_trajectory is not None,
                                   plain=None if json_out or jsonl else plain_form())
    if result is None:
        from c1.service.search_service import search_here

        result = search_here(settings, query, show.opened, show.event if show.consumers else None)
    show.kept(result.documents)
    if result.documents and result.stats.get("supported") is False and not quiet:
        note("c1: nothing in the collection seems to answer this question; these are only the closest documents")
    if save_trajectory:
        _save(save_trajectory, result)
    if jsonl:
        emit_json({"event": "result", **result.to_json()})
    elif json_out:
        emit_json(result.to_json())
    else:
        _print_plain(result)
    return 0 if result.documents else 1


def uses_daemon(settings: Settings) -> bool:
    """Whether this search goes through the resident process: only the built-in policy's (with a model
    server, every turn costs seconds of model time), and only for a collection that exists (the errors
    of one that does not are cheap to find here)."""
    from c1.daemon.client import serves

    return serves(settings) and (settings.collection_dir / "manifest.sqlite").exists()


class _Shown:
    """What the user sees on stderr while a search runs: the policy note, the corpus warnings, the live
    view, and the ``--jsonl`` events — fed by an in-process search or by the resident process alike."""

    def __init__(self, settings: Settings, jsonl: bool, quiet: bool, json_out: bool = False):
        self.jsonl, self.quiet, self.json_out, self.home = jsonl, quiet, json_out, settings.home
        self.consumers = []
        self.said = False
        if not quiet and stderr_is_tty():
            from c1.terminal.live_view import LiveView

            self.consumers.append(LiveView(err(), settings.parallel, settings.soft_threshold, settings.hard_cutoff))
        if jsonl:
            self.consumers.append(lambda e: emit_json(e.to_json()))

    def opened(self, policy_note: str, policy_warning: str | None, warnings: list[str]) -> None:
        if self.said:  # the resident process stopped before any event: the search runs again here
            return
        self.said = True
        if policy_warning:  # the user named a model server that cannot be used: said even with --quiet
            warn(policy_warning)
        elif not self.quiet and not self.jsonl and (first_time(self.home, "policy", policy_note) or self.json_out):
            note(f"c1: {policy_note}")  # once per home (c1/terminal/said_once.py), every time with --json
        for line in warnings:
            warn(line)

    def kept(self, documents: list[dict]) -> None:
        """The live view marks the passages kept for the answer."""
        for consume in self.consumers:
            if hasattr(consume, "kept"):
                consume.kept(documents)

    def event(self, e) -> None:
        for consume in self.consumers:
            consume(e)


def check_writable(path: Path, flag: str) -> None:
    """Fail before the work when ``path`` cannot be written (not after it, losing the result)."""
    parent = path.parent if str(path.parent) else Path(".")
    if path.is_dir():
        raise C1Error(f"{flag} {path}: is a directory")
    if not parent.is_dir():
        raise C1Error(f"{flag} {path}: the folder {parent} does not exist")
    if not os.access(path if path.exists() else parent, os.W_OK):
        raise C1Error(f"{flag} {path}: not writable")


def _save(path: Path, result) -> None:
    try:
        path.write_text(json.dumps({**result.to_json(), "trajectories": result.trajectories}, ensure_ascii=False, indent=1))
    except OSError as exc:
        raise C1Error(f"cannot write trajectory to {path}: {exc.strerror}") from None


def _print_plain(result) -> None:
    if not result.documents:
        err().print("nothing found")
        return
    # rendered by the resident process where it ran the search (importing the renderer here would cost
    # a warm search a fifth of its time outside the resident process: docs/performance.md)
    sys.stdout.write(result.plain if result.plain is not None else plain_text(result.documents, result.query,
                                                                              *plain_form()))
    sys.stdout.flush()
