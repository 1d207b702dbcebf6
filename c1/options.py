"""A command's options declared once: a dataclass whose fields carry their flag, default, help and bounds
(:func:`option`). c1/cli.py makes the Typer options from it (``options_from``) and the command body
receives one instance, so a default or a help text is written in one place. Standard library only:
``c1 --help`` reads these."""

from __future__ import annotations

from dataclasses import field
from typing import Any


def option(flags: str | tuple[str, ...], default: Any = None, help: str | None = None, **typer_kwargs: Any):
    """A dataclass field that is also a command-line option: ``flags`` (``"--name"``, or with a short one
    ``("--name", "-n")``), the default, the help, and Typer's ``min``/``max``/``envvar``."""
    names = (flags,) if isinstance(flags, str) else tuple(flags)
    return field(default=default, metadata={"flags": names, "help": help, "typer": typer_kwargs})


def same_as(cls, name: str):
    """Field ``name`` of another command's flag dataclass ``cls``, declared there once (the same flag,
    default, help and bounds: ``--lora-rank`` of ``c1 train sft`` is ``c1 train rl``'s)."""
    from dataclasses import fields

    f = next(f for f in fields(cls) if f.name == name)
    return field(default=f.default, metadata=f.metadata)
