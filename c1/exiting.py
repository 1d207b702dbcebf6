"""A search's process ends once its output is out, without the interpreter's teardown.

After the last thread is joined and the last ``atexit`` handler has run, the interpreter still frees
every module and object one by one: 0.11-0.13 s of a search of 1.5 s (the ONNX sessions, the o200k
ranks, the chunks kept in memory, the regex caches), the user waiting for nothing. A command that asked
for it (:func:`skip_teardown`) ends there instead: the handler :func:`install` registers first runs last,
after every other (logging's flush, a read-only copy's cleanup, the live view giving the terminal back),
then flushes stdout and stderr and leaves with the exit code. Only commands that write nothing of their
own after their output ask for it: a buffered file left open would lose its last write."""

from __future__ import annotations

import atexit
import os
import sys

_skip = False
_code: object = None


def install() -> None:
    """Register the handler; call it before anything else registers one, so that it runs last."""
    atexit.register(_end)


def skip_teardown() -> None:
    global _skip
    _skip = True


def leaving(main) -> None:
    """Run ``main`` remembering the code the process leaves with, which the handler cannot read:
    ``SystemExit``'s, 130 for an uncaught Ctrl-C, 1 for an uncaught error (as the interpreter would)."""
    global _code
    try:
        main()
    except BaseException as exc:
        _code = exc.code if isinstance(exc, SystemExit) else 130 if isinstance(exc, KeyboardInterrupt) else 1
        raise


def _end() -> None:
    if not _skip:
        return
    code = _code if isinstance(_code, int) else 0 if _code is None else 1
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe (`| head`): what was read is read
            pass
    os._exit(code)
