"""Files c1 keeps in its cache folder (``$XDG_CACHE_HOME/c1``) only to start faster: each is written whole
or not at all, and a folder that cannot be written costs only the time to work the file out again."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path


def cache_path(*parts: str) -> Path:
    from c1.config import default_cache_dir

    return default_cache_dir().joinpath(*parts)


def part_of(path: Path) -> Path:
    """The file of this process's own that becomes ``path`` once whole (renamed over it)."""
    return path.with_name(f"{path.name}.{os.getpid()}.part")


def write_whole(path: Path, data: bytes) -> bool:
    """Write ``data`` to ``path`` through :func:`part_of`; False (and nothing left behind) where the folder
    cannot be written."""
    part = part_of(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        part.write_bytes(data)
        os.replace(part, path)
        return True
    except OSError:
        with contextlib.suppress(OSError):
            part.unlink(missing_ok=True)
        return False
