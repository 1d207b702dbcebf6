"""A command's options declared once: a dataclass whose fields carry their flag, default, help and bounds
(:func:`option`), from which the Typer options are made (:func:`options_from`); the command body receives
one instance, so a default or a help text is written in one place.

Each command family declares its dataclass beside its commands: ``ServeFlags`` (c1/commands/serve_flags.py),
``SynthFlags``, ``CollectFlags``, ``SftFlags`` and ``RlFlags`` (c1/commands/train_flags.py), ``EvalFlags``
(c1/commands/eval_flags.py). The options several commands share are c1/commands/flags.py's. Light, as
``c1 --help`` reads these: the standard library and Typer."""

from __future__ import annotations

import dataclasses
import functools
import inspect
import typing
from dataclasses import field
from typing import Annotated, Any

import typer


def option(flags: str | tuple[str, ...], default: Any = None, help: str | None = None, **typer_kwargs: Any):
    """A dataclass field that is also a command-line option: ``flags`` (``"--name"``, or with a short one
    ``("--name", "-n")``), the default, the help, and Typer's ``min``/``max``/``envvar``."""
    names = (flags,) if isinstance(flags, str) else tuple(flags)
    return field(default=default, metadata={"flags": names, "help": help, "typer": typer_kwargs})


def same_as(cls, name: str):
    """Field ``name`` of another command's flag dataclass ``cls``, declared there once (the same flag,
    default, help and bounds: ``--lora-rank`` of ``c1 train sft`` is ``c1 train rl``'s)."""
    f = next(f for f in dataclasses.fields(cls) if f.name == name)
    return field(default=f.default, metadata=f.metadata)


def option_of(cls, name: str):
    """The Typer option (an ``Annotated`` type) of field ``name`` of a dataclass of :func:`option` fields."""
    f = next(f for f in dataclasses.fields(cls) if f.name == name)
    kind = _hints(cls)[name]
    return Annotated[kind, typer.Option(*f.metadata["flags"], help=f.metadata["help"], **f.metadata["typer"])]


@functools.lru_cache(maxsize=None)
def _hints(cls) -> dict:
    """``cls``'s field types, its string annotations evaluated once (every ``c1`` start reads them)."""
    return typing.get_type_hints(cls)


def options_from(cls, name: str):
    """Give a command the options declared by dataclass ``cls`` (:func:`option` fields), in their order, where
    its parameter ``name`` stands; the command receives them as one ``cls`` instance ``name``."""
    declared = {f.name: (option_of(cls, f.name), f.default) for f in dataclasses.fields(cls)}

    def wrap(fn):
        sig = inspect.signature(fn, eval_str=True)
        params = []
        for p in sig.parameters.values():
            if p.name == name:
                params += [inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=default, annotation=kind)
                           for n, (kind, default) in declared.items()]
            else:
                params.append(p)

        @functools.wraps(fn)
        def command(**kwargs):
            values = {n: kwargs.pop(n) for n in declared}
            return fn(**{name: cls(**values)}, **kwargs)

        command.__signature__ = sig.replace(parameters=params)
        command.__annotations__ = {p.name: p.annotation for p in params}
        return command

    return wrap
