"""What keeps a command's start-up short: Typer builds only the command asked for, and values that need
no validation skip Typer's pydantic coercion. Neither changes what a command accepts or prints."""

from __future__ import annotations

import re
from typing import Optional

_FULL = None
"""The app's commands before :func:`build_only` left out all but one; None when it did not."""


def build_only(app, first: list[str], groups: dict) -> None:
    """Build only the command asked for: Typer turns the signature of every registered command into click
    parameters at each start, a cost every command pays, while ``c1 search`` needs only its own (repeated
    searches from the shell are meant to be fast; bench/startup.py; docs/benchmarks.md, "From the shell").
    ``groups`` (name → what makes the group's Typer app) are added only where ``first`` names one of them,
    or names no command: ``--help``, ``--version`` and unknown names still see every command."""
    global _FULL
    from typer.main import get_command_name

    name = first[0] if first and not first[0].startswith("-") else None
    commands = [c for c in app.registered_commands if (c.name or get_command_name(c.callback.__name__)) == name]
    if commands or name in groups:
        _FULL = app.registered_commands
        app.registered_commands = commands
    if name in groups:
        add_groups(app, {name: groups[name]})
    elif not commands:
        add_groups(app, groups)


def add_groups(app, groups: dict) -> None:
    """Add each of ``groups`` (name → what makes its Typer app) that ``app`` does not have yet."""
    have = {g.name for g in app.registered_groups}
    for name, make in groups.items():
        if name not in have:
            app.add_typer(make(), name=name)


def every_command(app, groups: dict) -> None:
    """Give the app every command and group :func:`build_only` left out (the completion generator reads them all)."""
    if _FULL is not None:
        app.registered_commands = _FULL
    add_groups(app, groups)


_INT = re.compile(r"-?[0-9]+")
_FLOAT = re.compile(r"-?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)")


def coerce_lightly() -> None:
    """Typer (0.2x) coerces each parameter of the command run through a pydantic TypeAdapter, absent ones
    included: importing pydantic and building the adapters was most of what a ``c1 search`` through the
    resident process cost beyond ``c1 --help`` (``python -X importtime``). Values that need no validation
    skip it here — an absent option, a plain string, a bool, a whole or decimal number inside its
    ``min``/``max`` — and every other value (out of range, a list, a path, a choice) takes Typer's own
    path, with its own error. With a Typer that has no such class, nothing is changed."""
    try:
        from typer.core import _TyperParameter
        from typer.core import _click as click
    except ImportError:
        return
    missing = click.exceptions.MissingParameter
    original = getattr(_TyperParameter, "process_value", None)
    if original is None or getattr(original, "c1_light", False):
        return

    def process_value(self, ctx, value):
        done, value = _plain(self, value)
        if not done:
            return original(self, ctx, value)
        if self.required and self.value_is_missing(value):
            raise missing(ctx=ctx, param=self)
        if self.callback is not None:
            value = self.callback(ctx, self, value)
        return value

    process_value.c1_light = True
    _TyperParameter.process_value = process_value


def _plain(param, value) -> tuple[bool, object]:
    """(True, the value) when it needs no coercion by Typer; (False, value) otherwise."""
    desc = getattr(param, "type_descriptor", None)
    info = getattr(desc, "parameter_info", None)
    if desc is None or info is None or getattr(info, "parser", None) is not None or desc.file_annotation is not None:
        return False, value
    multi = param.multiple or param.nargs == -1
    if value is None:
        return True, (() if multi else None)
    if multi:
        return False, value
    kind = desc.annotation
    if kind in (Optional[str], str) and isinstance(value, str):
        return True, value
    if kind in (Optional[bool], bool) and isinstance(value, bool):
        return True, value
    if getattr(info, "clamp", False) or isinstance(value, bool):
        return False, value
    text = isinstance(value, str)
    if kind in (Optional[int], int) and (type(value) is int or text and _INT.fullmatch(value)):
        number = int(value)
    elif kind in (Optional[float], float) and (type(value) in (int, float) or text and _FLOAT.fullmatch(value)):
        number = float(value)
    else:
        return False, value
    low, high = getattr(info, "min", None), getattr(info, "max", None)
    if (low is not None and number < low) or (high is not None and number > high):
        return False, value  # Typer says what the range is
    return True, number
