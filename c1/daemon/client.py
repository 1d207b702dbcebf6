"""The commands' side: find the home's resident process (or start it), send one request, read the replies.

Whenever the resident process cannot be used — no private runtime folder, it failed to start, it
belongs to another home, it stopped before answering — the caller is told so (``Unavailable`` or
``None``) and works in-process: the daemon only ever saves time, it never changes what a command
prints. A process of another build refuses, removes its socket and exits; a fresh one is started.
A socket left by a killed process refuses connections: it is removed and a fresh one started.
"""

from __future__ import annotations

import os
import socket
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from c1.daemon import protocol
from c1.errors import C1Error

START_TIMEOUT_S = 20.0
"""How long a command waits for a new resident process to listen (it listens before loading anything)."""


WARM_REPLY_S = 5.0
"""How long ``warm`` waits for the resident process to accept (it does before importing anything)."""

LOG_LIMIT = 1 << 20
"""The resident process's log (start, stop, failures with their traceback) is started afresh past this size."""


class Unavailable(Exception):
    """The resident process cannot be used for this request (nothing was received from it)."""


class Lost(Exception):
    """The resident process went away in the middle of its answer."""


def replies(settings, request: dict) -> Iterator[dict]:
    """Send ``request`` to the resident process of ``settings.home``; yield its replies up to the final one.
    Raises Unavailable before the first reply, Lost after it."""
    home = protocol.real_home(settings.home)
    where = protocol.paths(home)
    if where is None:
        raise Unavailable("no private runtime folder for the socket")
    message = protocol.dumps({**request, "build": protocol.build_id(), "home": home})
    for _attempt in range(2):
        sock = _open(where, settings)
        try:
            try:
                sock.sendall(message)
                reader = sock.makefile("rb")
                line = reader.readline()
            except OSError:
                continue  # it was exiting (idle) or was killed: start a fresh one
            if not line:
                continue
            reply = protocol.loads(line)
            if reply.get("type") == "refused":
                if reply.get("reason") == "build":
                    continue  # it has removed its socket and is exiting: start one of this build
                raise Unavailable(reply.get("message", "refused"))
            if reply.get("type") == "failed":
                raise Unavailable(reply.get("message", "failed"))
            yield reply
            while reply.get("type") not in protocol.FINAL:
                try:
                    line = reader.readline()
                except OSError:
                    line = b""
                if not line:
                    raise Lost()
                reply = protocol.loads(line)
                if reply.get("type") == "failed":
                    raise Lost()
                yield reply
            return
        finally:
            sock.close()
    raise Unavailable("the resident process stopped twice")


def _connect(path: Path) -> socket.socket | None:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(str(path))
        return sock
    except OSError:  # not there, or left by a process that is gone (connection refused)
        sock.close()
        return None


def _open(where: tuple[Path, Path, Path], settings) -> socket.socket:
    sock_path, lock_path, log_path = where
    sock = _connect(sock_path)
    return sock if sock is not None else _start(where, settings)


def _start(where: tuple[Path, Path, Path], settings) -> socket.socket:
    """Start the home's resident process (one starter at a time: a file lock) and connect to it."""
    import fcntl
    import subprocess

    import c1

    sock_path, lock_path, log_path = where
    try:
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600)
    except OSError as exc:
        raise Unavailable(f"cannot create {lock_path}: {exc.strerror}") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        sock = _connect(sock_path)  # another command started it while this one waited for the lock
        if sock is not None:
            return sock
        try:
            sock_path.unlink()  # left by a killed process
        except FileNotFoundError:
            pass
        package_root = str(Path(c1.__file__).resolve().parent.parent)
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH", "")) if p)
        # Appended (the process it replaces may still be writing its last lines), cut when it grew large.
        mode = "wb" if log_path.exists() and log_path.stat().st_size > LOG_LIMIT else "ab"
        with open(log_path, mode) as log:
            proc = subprocess.Popen(
                [sys.executable, "-m", "c1.daemon", "--home", protocol.real_home(settings.home),
                 "--idle", str(settings.daemon_idle)],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, cwd="/", env=env,
                start_new_session=True,
            )
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            sock = _connect(sock_path)
            if sock is not None:
                return sock
            if proc.poll() is not None:
                raise Unavailable(f"the resident process exited at start (see {log_path})")
            time.sleep(0.01)
        raise Unavailable("the resident process did not start in time")
    finally:
        os.close(fd)  # releases the lock


def search_via_daemon(settings, query: str, on_open: Callable[[str, str | None, list[str]], None],
                      on_event: Callable | None, trajectories: bool = False, plain: tuple[int, bool, bool] | None = None):
    """A search through the resident process: the SearchResult, or None when it could not be used.
    ``plain`` (width, colour, no colour): the result comes with its plain output rendered (``SearchResult.plain``).

    ``on_open`` and ``on_event`` are called as an in-process search calls them. If the process goes away
    before any event was shown, None (the caller searches in-process; ``on_open`` must then say nothing
    twice); after events were shown, a one-line error."""
    from c1.agent.result import SearchResult

    request = {"op": "search", "settings": protocol.settings_to_json(settings), "query": query,
               "events": on_event is not None, "trajectories": trajectories, "plain": plain}
    shown = False
    try:
        for reply in replies(settings, request):
            kind = reply["type"]
            if kind == "opened":
                on_open(reply["note"], reply.get("warning"), reply["warnings"])
            elif kind == "event":
                from c1.agent.events import from_json

                shown = True
                on_event(from_json(reply["event"]))
            elif kind == "error":
                raise C1Error(reply["message"], reply.get("code"))
            elif kind == "result":
                data = reply["result"]
                return SearchResult(data["query"], data["policy"], data["model"], data["budget"], data["documents"],
                                    data["stats"], trajectories=reply.get("trajectories") or [], plain=reply.get("plain"))
    except Unavailable:
        return None
    except Lost:
        if shown:
            raise C1Error("the resident c1 process stopped in the middle of the search: run it again "
                          "(or with --no-daemon)", 70) from None
        return None
    return None


def status_via_daemon(settings, names: list[str]) -> list[dict] | None:
    """``c1 status`` rows from the resident process, or None when it could not be used."""
    request = {"op": "status", "settings": protocol.settings_to_json(settings), "names": names}
    try:
        for reply in replies(settings, request):
            if reply["type"] == "rows":
                return reply["rows"]
            if reply["type"] == "error":
                raise C1Error(reply["message"], reply.get("code"))
    except (Unavailable, Lost):
        return None
    return None


def serves(settings) -> bool:
    """Whether the resident process answers this home's searches: the daemon setting is on and the
    built-in policy runs (with a model server every turn costs seconds of model time: searches run in
    their own process)."""
    builtin = settings.policy == "builtin" or (settings.policy == "auto" and not settings.base_urls)
    return bool(settings.daemon) and builtin


WARM_JOIN_S = 5.0
"""After a commit of ``c1 index``: how long it waits for its start of the resident process to be done."""


@contextmanager
def kept_warm(settings, keep: bool = False):
    """Around ``c1 index``: the home's resident process is started as indexing begins (in a thread: the
    indexing does not wait; the collection may be half made yet); once indexing ended, it is asked to
    open the collection (:func:`warm`), so that it has seen the last commit and run a first search when
    the user's ``c1 search`` comes. ``keep`` (``--watch``): asked again every ``daemon_idle / 2`` seconds, so that it does not idle
    out while the collection is watched. Gives the function to call after each commit. Nothing is done
    where it would not answer the searches (:func:`serves`)."""
    import threading

    if not serves(settings):
        yield lambda: None
        return
    stop, started = threading.Event(), threading.Event()

    def keep_warm() -> None:
        warm(settings, collection=False)  # the collection may be half made yet: opened once committed
        started.set()
        while keep and not stop.wait(max(1.0, settings.daemon_idle / 2)):
            warm(settings)

    def committed() -> None:
        started.wait(WARM_JOIN_S)  # its start is done (it listens), unless it takes long
        warm(settings, start=False)

    thread = threading.Thread(target=keep_warm, name="c1-keep-warm", daemon=True)
    thread.start()
    try:
        yield committed
    except BaseException:  # Ctrl-C, an error: the command exits now (the next search starts it if need be)
        stop.set()
        raise
    stop.set()
    committed()


def warm(settings, start: bool = True, collection: bool = True) -> bool:
    """Have the home's resident process (started if ``start`` and none runs) open the collection of
    ``settings`` and run a first search on it, so that the user's next ``c1 search`` is answered warm
    (``c1 index`` calls it as it starts, with ``collection=False``: only started, and once it has
    committed). The request is sent, not waited for: True once the process accepted it. Never raises;
    whatever goes wrong leaves the next search to start it."""
    home = protocol.real_home(settings.home)
    try:
        where = protocol.paths(home)
        if where is None:
            return False
        message = protocol.dumps({"op": "warm", "settings": protocol.settings_to_json(settings) if collection else None,
                                  "build": protocol.build_id(), "home": home})
        for _attempt in range(2):
            sock = _open(where, settings) if start else _connect(where[0])
            if sock is None:
                return False
            with sock:
                sock.settimeout(WARM_REPLY_S)
                sock.sendall(message)
                line = sock.makefile("rb").readline()
            reply = protocol.loads(line) if line else {}
            if reply.get("type") == "accepted":
                return True
            if reply.get("reason") != "build":  # a process of another build exits: start one of this build
                return False
        return False
    except (Unavailable, OSError, ValueError):
        return False


def control(settings, op: str) -> dict | None:
    """``ping`` or ``stop`` a running resident process (never starts one): its reply, or None."""
    home = protocol.real_home(settings.home)
    where = protocol.paths(home)
    if where is None:
        return None
    sock = _connect(where[0])
    if sock is None:
        return None
    with sock:
        try:
            sock.sendall(protocol.dumps({"op": op, "build": protocol.build_id(), "home": home}))
            line = sock.makefile("rb").readline()
        except OSError:
            return None
    return protocol.loads(line) if line else None
