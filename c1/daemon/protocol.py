"""Where the resident process of a home listens, how a build of c1 is named, and the framing.

The socket lives in a private runtime folder (``$XDG_RUNTIME_DIR/c1``, else ``$TMPDIR/c1-UID``, mode
0700 and owned by this user: anything else and the daemon is not used), named after a hash of the
home's real path, so that it never depends on the home being writable. Messages are JSON objects,
one per line, both ways. Nothing heavy is imported here: the client side runs in every command.
"""

from __future__ import annotations

import hashlib
import os
import stat
import sys
from functools import cache
from pathlib import Path

MAX_SOCKET_PATH = 100
"""Unix socket paths are limited to 107 bytes on Linux (103 on macOS); stay under both."""


def runtime_dir() -> Path | None:
    """The private folder for sockets, created if needed; None when it cannot be made safe."""
    base = os.environ.get("XDG_RUNTIME_DIR")
    if base and os.path.isdir(base):
        path = Path(base) / "c1"
    else:
        path = Path(os.environ.get("TMPDIR") or "/tmp") / f"c1-{os.getuid()}"
    try:
        path.mkdir(mode=0o700, exist_ok=True)
        st = os.lstat(path)
    except OSError:
        return None
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o077:
        return None  # a folder someone else made, or one others can write: not ours to trust
    return path


def home_key(home: Path) -> str:
    return hashlib.blake2b(str(real_home(home)).encode(), digest_size=10).hexdigest()


def real_home(home: Path) -> str:
    return os.path.realpath(os.path.abspath(os.path.expanduser(str(home))))


@cache
def paths(home_real: str) -> tuple[Path, Path, Path] | None:
    """(socket, start lock, log) of a home's resident process; None when no safe place exists."""
    root = runtime_dir()
    if root is None:
        return None
    key = home_key(Path(home_real))
    sock = root / f"{key}.sock"
    if len(str(sock).encode()) > MAX_SOCKET_PATH:
        return None
    return sock, root / f"{key}.lock", root / f"{key}.log"


@cache
def build_id() -> str:
    """This c1: its version, its interpreter, and the size and time of every source file. A resident
    process of another build (an upgrade, an edited checkout, another virtualenv) is not used."""
    import c1

    root = Path(c1.__file__).parent
    h = hashlib.blake2b(digest_size=12)
    h.update(f"{c1.__version__}|{sys.executable}|{sys.version}|{root}".encode())
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(files):
            if name.endswith(".py"):
                st = os.stat(os.path.join(folder, name))
                h.update(f"{folder}/{name}|{st.st_size}|{st.st_mtime_ns}\n".encode())
    return h.hexdigest()


def dumps(obj) -> bytes:
    import orjson

    return orjson.dumps(obj) + b"\n"


def loads(line: bytes):
    import orjson

    return orjson.loads(line)


FINAL = frozenset({"result", "rows", "error", "pong", "stopped", "failed", "warmed"})
"""Reply types that end an exchange (``opened`` and ``event`` come before a ``result``)."""


def settings_to_json(settings) -> dict:
    from dataclasses import asdict

    out = asdict(settings)
    out["home"] = real_home(settings.home)
    out["base_urls"] = list(settings.base_urls)
    return out


def settings_from_json(data: dict):
    from c1.config import Settings

    return Settings(**{**data, "home": Path(data["home"]), "base_urls": tuple(data["base_urls"])})
