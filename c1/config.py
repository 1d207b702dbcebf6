"""One Settings object: defaults < TOML config file < ``C1_*`` environment < command-line flags.

The config file is ``$C1_CONFIG`` if set, else ``$XDG_CONFIG_HOME/c1/config.toml``
(``~/.config/c1/config.toml``). Keys are the field names below, at the top level of the file.
The index home is ``$C1_HOME`` (or ``home`` in the file), else ``$XDG_DATA_HOME/c1``.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from c1.errors import C1Error


def _xdg(var: str, fallback: str) -> Path:
    value = os.environ.get(var)
    return Path(value) if value else Path.home() / fallback


@dataclass(frozen=True)
class Settings:
    home: Path = field(default_factory=lambda: _xdg("XDG_DATA_HOME", ".local/share") / "c1")
    collection: str = "default"
    chroma_url: str | None = None
    # embeddings
    embed_url: str | None = None
    embed_model: str | None = None
    embed_api_key: str | None = None
    # indexing
    max_file_mb: float = 50.0
    chunk_tokens: int = 512
    chunk_overlap: int = 48
    # the agent
    policy: str = "auto"
    budget: int = 32768
    soft_threshold: float = 0.5
    hard_cutoff: float = 0.9
    max_turns: int = 24
    max_docs: int = 10
    parallel: int = 1
    # the model server
    base_urls: tuple[str, ...] = ()
    model: str | None = None
    api_key: str | None = None
    temperature: float | None = None
    reasoning_effort: str | None = None
    seed: int | None = None
    max_tokens: int | None = None
    tool_names: str | None = None
    """Renames for the model, e.g. ``search_corpus=SearchTool,grep_corpus=GrepTool``."""

    @property
    def collection_dir(self) -> Path:
        return self.home / "collections" / self.collection

    def with_flags(self, **flags: Any) -> "Settings":
        """Apply command-line values; ``None`` means "flag not given"."""
        given = {k: _coerce(k, v) for k, v in flags.items() if v is not None and v != ()}
        return replace(self, **given)


_FIELDS = {f.name: f for f in fields(Settings)}


def _coerce(name: str, value: Any) -> Any:
    if name not in _FIELDS:
        raise C1Error(f"unknown setting {name!r}")
    kind = str(_FIELDS[name].type)
    try:
        if name == "home":
            return Path(value).expanduser()
        if name == "base_urls":
            if isinstance(value, str):
                return tuple(u.strip() for u in value.split(",") if u.strip())
            return tuple(value)
        if "int" in kind and "float" not in kind:
            return int(value)
        if "float" in kind:
            return float(value)
        return str(value)
    except (TypeError, ValueError):
        raise C1Error(f"setting {name!r}: {value!r} is not a valid {kind.split(' ')[0]}") from None


def config_path() -> Path:
    explicit = os.environ.get("C1_CONFIG")
    return Path(explicit) if explicit else _xdg("XDG_CONFIG_HOME", ".config") / "c1" / "config.toml"


def _from_file(path: Path) -> dict[str, Any]:
    if not path.exists():
        if os.environ.get("C1_CONFIG"):
            raise C1Error(f"config file {path} (from $C1_CONFIG) does not exist")
        return {}
    try:
        data = tomllib.loads(path.read_text())
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise C1Error(f"cannot read config file {path}: {exc}") from None
    unknown = sorted(set(data) - set(_FIELDS))
    if unknown:
        raise C1Error(f"config file {path}: unknown key(s) {', '.join(unknown)}")
    return {k: _coerce(k, v) for k, v in data.items()}


def _from_env() -> dict[str, Any]:
    out = {}
    for name in _FIELDS:
        value = os.environ.get(f"C1_{name.upper()}")
        if value not in (None, ""):
            out[name] = _coerce(name, value)
    return out


def load_settings() -> Settings:
    return Settings(**{**_from_file(config_path()), **_from_env()})
