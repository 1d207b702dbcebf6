"""Files c1 keeps in its cache folder (``$XDG_CACHE_HOME/c1``) only to start faster: each is written whole
or not at all, and a folder that cannot be written costs only the time to work the file out again."""

from __future__ import annotations

import os
from pathlib import Path


def cache_path(*parts: str) -> Path:
    from c1.config import default_cache_dir

    return default_cache_dir().joinpath(*parts)


def write_whole(path: Path, data: bytes) -> bool:
    """Write ``data`` to ``path`` through a file of this process's own, renamed over it; False (and nothing
    left behind) where the folder cannot be written."""
    part = path.with_name(f"{path.name}.{os.getpid()}.part")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        part.write_bytes(data)
        os.replace(part, path)
        return True
    except OSError:
        try:
            part.unlink(missing_ok=True)
        except OSError:
            pass
        return False
