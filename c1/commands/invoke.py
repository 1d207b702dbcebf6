"""How c1/cli.py calls a command body: the settings from every layer, the body's result as the exit code,
and whatever goes wrong as one line on stderr (a user's error, a usage error, a bug), never a traceback.

Light, as ``c1 --help`` imports it: the standard library and Typer at import, the rest inside the functions."""

from __future__ import annotations

import os
import sys

import typer


def one_line_usage_errors() -> None:
    """A usage error (an unknown option, a missing argument, a bad value) in one line on stderr, with the
    hint, instead of click's usage frame of three: ``c1: error: no such option: --foo (try 'c1 search
    --help')``, exit 2. A group asked with no command still shows its help (click's own subclass)."""
    try:
        from typer.core import _click as click  # Typer 0.2x ships its own click
    except ImportError:
        import click

    def show(self, file=None) -> None:
        from c1.terminal.console import error

        message = " ".join(self.format_message().split()).rstrip(".")
        if message[:1].isupper() and message[1:2].islower():
            message = message[0].lower() + message[1:]
        error(f"{message} (try '{self.ctx.command_path if self.ctx is not None else 'c1'} --help')")

    click.exceptions.UsageError.show = show


def settings(**flags):
    """Settings from every layer; a bad config file, variable or flag is a one-line error."""
    from c1.config import load_settings
    from c1.terminal.console import error
    from c1.errors import C1Error

    try:
        return load_settings().with_flags(**flags)
    except C1Error as exc:
        error(str(exc))
        raise typer.Exit(exc.code) from None


def server_must_answer(settings, policy_flag: str | None, base_urls_flag: tuple[str, ...]):
    """A model server named for this command (``--base-url`` or ``$C1_BASE_URLS``) with no policy asked for
    anywhere: it must answer, as with ``--policy llm`` (one line, exit 2), instead of the built-in policy
    silently taking its place. A server of the config file is a standing default, and ``--policy auto``
    asks for the fallback: both still fall back, with a warning."""
    if settings.policy != "auto" or policy_flag is not None or os.environ.get("C1_POLICY"):
        return settings
    if not (base_urls_flag or os.environ.get("C1_BASE_URLS")) or "policy" in _config_keys():
        return settings
    import dataclasses

    return dataclasses.replace(settings, policy="llm")


def _config_keys() -> set[str]:
    """The keys the config file sets (it was read and checked once already: a problem here is none)."""
    import tomllib

    from c1.config import config_path

    try:
        return set(tomllib.loads(config_path().read_text()))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return set()


def run(fn, *args, **kwargs) -> None:
    """Call a command body; turn user errors into one line and an exit code, never a traceback."""
    from c1.terminal.console import error
    from c1.errors import C1Error

    try:
        code = fn(*args, **kwargs)
    except C1Error as exc:
        error(str(exc))
        raise typer.Exit(exc.code) from None
    except KeyboardInterrupt as exc:
        from c1.terminal.console import err, escape

        # the user's own Ctrl-C is no error; a command may say what it kept (c1 index)
        err().print(f"c1: {escape(str(exc) or 'interrupted')}", highlight=False, soft_wrap=True)
        _exit_now_if_busy(130)  # a loader thread inside PDFium or ONNX (OCR): finalising under it aborts
        raise typer.Exit(130) from None
    except BrokenPipeError:  # `c1 search ... | head -1`: the reader has what it wanted; stop quietly, as ripgrep does
        _drop_stdout()
        _exit_now_if_busy(0)
        raise typer.Exit(0) from None
    except Exception as exc:  # a bug: one line, not a traceback, unless asked for
        if os.environ.get("C1_DEBUG"):
            raise
        error(f"internal error: {type(exc).__name__}: {exc} (set C1_DEBUG=1 for the traceback)")
        raise typer.Exit(70) from None
    raise typer.Exit(code or 0)


def _drop_stdout() -> None:
    """Point stdout at /dev/null, so that the interpreter's last flush does not fail on the closed pipe."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.close(devnull)
    except OSError:
        pass


def _exit_now_if_busy(code: int) -> None:
    """Exit at once while other threads still run (``--parallel`` agents inside ONNX or Chroma calls, the
    indexer's loader inside PDFium or OCR): letting the interpreter finalise under them aborts the process
    ("terminate called without an active exception"). The work was left in ``finally`` blocks already."""
    import threading

    if threading.active_count() > 1:
        readonly = sys.modules.get("c1.store.readonly")
        if readonly is not None:
            readonly.cleanup()
        sys.stderr.flush()
        os._exit(code)
