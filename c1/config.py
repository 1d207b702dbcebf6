"""One Settings object: defaults < TOML config file < ``C1_*`` environment < command-line flags.

The config file is ``$C1_CONFIG`` if set, else ``$XDG_CONFIG_HOME/c1/config.toml``
(``~/.config/c1/config.toml``). Keys are the field names below, at the top level of the file.
The index home is ``$C1_HOME`` (or ``home`` in the file), else ``$XDG_DATA_HOME/c1``.
"""

from __future__ import annotations

import os
import re
import tomllib
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from c1.errors import C1Error


DEFAULT_BUDGET = 32768
"""The agent's context budget T in model tokens (Context-1's); vLLM's window in ``c1 serve`` is sized from it."""


def _xdg(var: str, fallback: str) -> Path:
    value = os.environ.get(var)
    return Path(value) if value else Path.home() / fallback


def default_cache_dir() -> Path:
    """``$C1_CACHE_DIR``, else ``$XDG_CACHE_HOME/c1`` (an absolute one: the XDG spec ignores a relative
    one), else ``~/.cache/c1``."""
    if os.environ.get("C1_CACHE_DIR"):
        return Path(os.environ["C1_CACHE_DIR"]).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg and os.path.isabs(xdg) else Path("~/.cache").expanduser()) / "c1"


@dataclass(frozen=True)
class Settings:
    home: Path = field(default_factory=lambda: _xdg("XDG_DATA_HOME", ".local/share") / "c1")
    collection: str = "default"
    chroma_url: str | None = None
    # embeddings
    embed_url: str | None = None
    embed_model: str | None = None
    embed_api_key: str | None = None
    embedder: str | None = None
    """Built-in embedder of a new collection (bge, minilm) [default: bge]; a built one keeps its own."""
    rerank: str = "auto"
    """Cross-encoder re-ranking: auto (where it was measured to win), off, onnx (everywhere), or a /rerank URL."""
    # indexing
    max_file_mb: float = 50.0
    follow: bool = False
    """Follow symbolic links out of the folders named to ``c1 index`` (as ripgrep's ``--follow``)."""
    chunk_tokens: int = 512
    chunk_overlap: int = 48
    # the agent
    policy: str = "auto"
    budget: int = DEFAULT_BUDGET
    soft_threshold: float = 0.5
    hard_cutoff: float = 0.9
    max_turns: int = 24
    max_docs: int = 10
    parallel: int = 1
    evidence_tokens: int = 2000
    """Tokens of passages handed over with the documents (c1/retrieval/passages.py); 0: documents only. A few
    passages fit a downstream model's context beside its own work."""
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
    # the resident process (c1/daemon)
    daemon: bool = True
    """``c1 search`` and ``c1 status`` go through a warm resident process per home (``--no-daemon``: not)."""
    daemon_idle: float = 300.0
    """Seconds without a request after which the resident process exits."""

    @property
    def collection_dir(self) -> Path:
        return self.home / "collections" / self.collection

    def with_flags(self, **flags: Any) -> "Settings":
        """Apply command-line values; ``None`` means "flag not given"."""
        given = {k: _coerce(k, v, _flag(k)) for k, v in flags.items() if v is not None and v != ()}
        return check_together(replace(self, **given))


_FIELDS = {f.name: f for f in fields(Settings)}


def default_text(name: str) -> str:
    """``[default: X]`` for the help of the flag that sets ``name``: the Settings default itself, so that the
    help and the behaviour cannot disagree."""
    value = _FIELDS[name].default
    return f"[default: {value:g}]" if isinstance(value, float) else f"[default: {value}]"

COLLECTION_NAME = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]{0,61}[A-Za-z0-9])?")
"""A collection name: what Chroma accepts after the ``c1-`` prefix (letters, digits, ``. _ -``, starting
and ending with a letter or digit, no ``..``), at most 63 characters. It is also a safe single path
component: no separator, never ``.`` or ``..``, so a collection never lives outside ``$C1_HOME``."""


def collection_name_problem(name: str) -> str | None:
    """Why ``name`` cannot be a collection name, or None."""
    if COLLECTION_NAME.fullmatch(name) and ".." not in name:
        return None
    return (f"{name!r} is not a collection name: use 1-63 letters, digits, '.', '_' or '-', "
            "starting and ending with a letter or digit")


EVAL_COLLECTION = re.compile(r"eval-.+-q?[0-9a-f]{16}")
"""The collections ``c1 eval`` makes (c1/eval/collection.py ``collection_name``): ``eval-<dataset>-<hash>``."""


def is_eval_collection(name: str) -> bool:
    """Whether ``name`` is a collection of ``c1 eval``'s (kept apart from the user's in listings)."""
    return EVAL_COLLECTION.fullmatch(name) is not None


RANGES: dict[str, tuple[float | None, float | None, bool]] = {
    # name: (minimum, maximum, minimum excluded)
    "max_file_mb": (0, None, True),
    "chunk_tokens": (32, None, False),
    "chunk_overlap": (0, None, False),
    "budget": (1024, 1_048_576, False),
    "soft_threshold": (0.05, 1.0, False),
    "hard_cutoff": (0.1, 1.0, False),
    "max_turns": (1, 256, False),
    "max_docs": (1, 100, False),
    "evidence_tokens": (0, None, False),
    "parallel": (1, 32, False),
    "temperature": (0, None, False),
    "max_tokens": (1, None, False),
    "daemon_idle": (0, None, True),
}
"""The bounds of every setting, whoever gives it: the command-line flags (c1/cli.py), the config file
and ``C1_*`` variables (``C1_PARALLEL=1000`` would otherwise start a thousand agents), the search API
and MCP (c1/service/search_service.py): one set of limits."""

MAX_QUERY_CHARS = 4000
"""The longest question, on the command line, in ``--batch`` and through the API."""

MIN_ROOM = 512
"""Tokens that ``budget × hard_cutoff`` must leave: the built-in policy's instructions and a short question
take most of them (``c1 search --json`` counts them: ``stats.tokens.context_peak``; docs/benchmarks.md,
"Figures that were in the code"), a search result needs room beside them; below this every search
ended in "nothing found" (``errors: 1``)."""


def bounds(name: str) -> tuple[float | None, float | None]:
    """(minimum, maximum) of a setting, for a flag's ``min=``/``max=`` and the API's checks."""
    low, high, _ = RANGES[name]
    return low, high


def query_problem(query: str) -> str | None:
    """Why a question cannot be searched, or None."""
    if not query.strip():
        return "the question is empty"
    if len(query) > MAX_QUERY_CHARS:
        return f"the question is {len(query):,} characters long; at most {MAX_QUERY_CHARS:,} are searched"
    return None


def check_together(settings: "Settings") -> "Settings":
    """Settings that are each valid but not together: one line saying which and why."""
    soft, hard = settings.soft_threshold, settings.hard_cutoff
    room = int(settings.budget * hard)
    if room < MIN_ROOM:
        raise C1Error(f"budget {settings.budget} × hard cutoff {hard:g} leaves {room} tokens, less than the {MIN_ROOM} "
                      "that the instructions, the question and one result need: raise --budget or --hard-cutoff")
    if soft > hard:
        raise C1Error(f"soft threshold {soft:g} is above hard cutoff {hard:g}: pruning is urged past the soft "
                      "threshold, before the hard cutoff accepts nothing else (--soft-threshold, --hard-cutoff)")
    return settings


DEBOUNCE = 0.5
"""Seconds a changed file must stay quiet before ``c1 index --watch`` indexes it (the default of --debounce)."""

CHOICES = {"policy": ("auto", "llm", "builtin"), "reasoning_effort": ("low", "medium", "high")}

EMBEDDERS = ("bge-small-en-v1.5-int8", "minilm-l6-int8")
"""The built-in embedders, by the name a collection records; their classes are in c1/store/embedders.py
(a test checks that the two agree), which the settings do not import."""
EMBEDDER_ALIASES = {"bge": EMBEDDERS[0], "bge-small": EMBEDDERS[0], "minilm": EMBEDDERS[1]}


def embedder_problem(name: str) -> str | None:
    """What is wrong with an ``embedder`` setting (a recorded name or an alias), or None."""
    if EMBEDDER_ALIASES.get(name, name) in EMBEDDERS:
        return None
    return f"unknown embedder {name!r}: use one of {', '.join([*EMBEDDER_ALIASES, *EMBEDDERS])}"


_SHORT = {"max_docs": "-k/", "collection": "-c/"}
"""Short flags, named beside the long one in messages (a user who typed ``-k 0`` reads ``-k``)."""


def _flag(name: str) -> str:
    return "--base-url" if name == "base_urls" else _SHORT.get(name, "") + "--" + name.replace("_", "-")


def _check(name: str, value: Any) -> str | None:
    """What is wrong with an already-typed value, or None."""
    if name == "collection":
        return collection_name_problem(value)
    if name == "embedder":
        return embedder_problem(value)
    if name == "rerank" and value not in ("auto", "off", "onnx") and not re.match(r"https?://\S+$", value):
        return f"{value!r} is not auto, off, onnx or an http(s):// URL of a /rerank server"
    if name in CHOICES and value not in CHOICES[name]:
        return f"{value!r} is not one of {', '.join(CHOICES[name])}"
    if name in RANGES:
        low, high, open_low = RANGES[name]
        if value != value:  # NaN
            return "not a number"
        if low is not None and (value <= low if open_low else value < low):
            return f"{value:g} must be {'greater than' if open_low else 'at least'} {low:g}"
        if high is not None and value > high:
            return f"{value:g} must be at most {high:g}"
    return None


def url_problem(url: str) -> str | None:
    """Why ``url`` is not a server's URL (``http(s)://host[:port][/path]``, or ``host:port``), or None.
    A bare word is refused: it was taken for ``http://notaurl/v1`` and failed later as a server that is down."""
    from urllib.parse import urlsplit

    text = str(url).strip()
    bare = "://" not in text
    try:
        parts = urlsplit("http://" + text if bare else text)
        port = parts.port
    except ValueError:
        return "is not a URL like http://127.0.0.1:8000/v1 (bad port)"
    if parts.scheme not in ("http", "https"):
        return f"is not a URL like http://127.0.0.1:8000/v1 (scheme {parts.scheme!r})"
    if any(c.isspace() for c in text):
        return "is not a URL like http://127.0.0.1:8000/v1 (it holds a space)"
    if not parts.hostname or (bare and port is None):
        return "is not a URL like http://127.0.0.1:8000/v1 (give the scheme, or host:port)"
    return None


def _coerce(name: str, value: Any, source: str) -> Any:
    """``value`` converted to the field's type and checked; errors name the setting and ``source``
    (the flag, the ``C1_*`` variable or the config file) in one line."""
    if name not in _FIELDS:
        raise C1Error(f"unknown setting {name!r}")
    kind = str(_FIELDS[name].type)
    try:
        if name == "home":
            return Path(value).expanduser()
        if name == "base_urls":
            urls = tuple(u.strip() for u in value.split(",") if u.strip()) if isinstance(value, str) else tuple(value)
            for url in urls:
                if problem := url_problem(url):
                    raise C1Error(f"--base-url {url!r} {problem} ({source})" if source != "--base-url"
                                  else f"--base-url {url!r} {problem}")
            return urls
        if kind == "bool":
            typed: Any = _boolean(value)
        elif "int" in kind and "float" not in kind:
            if isinstance(value, float) and not value.is_integer():
                raise ValueError(value)
            typed = int(value)
        elif "float" in kind:
            typed = float(value)
        else:
            typed = str(value)
    except (TypeError, ValueError):
        raise C1Error(f"setting {name!r}: {value!r} is not a valid {kind.split(' ')[0]} ({source})") from None
    problem = _check(name, typed)
    if problem:
        raise C1Error(f"setting {name!r}: {problem} ({source})")
    return typed


_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")


def _boolean(value: Any) -> bool:
    """A boolean from TOML (true/false) or a variable (1/0, true/false, yes/no, on/off)."""
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in _TRUE or text in _FALSE:
        return text in _TRUE
    raise ValueError(value)


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
    return {k: _coerce(k, v, f"config file {path}") for k, v in data.items()}


def _from_env() -> dict[str, Any]:
    out = {}
    for name in _FIELDS:
        value = os.environ.get(f"C1_{name.upper()}")
        if value not in (None, ""):
            out[name] = _coerce(name, value, "$C1_" + name.upper())
    return out


def load_settings() -> Settings:
    """Defaults < config file < ``C1_*``; checked together once the flags are applied (:meth:`Settings.with_flags`:
    a flag may mend what the file set), except the chunking, which no search flag changes."""
    settings = Settings(**{**_from_file(config_path()), **_from_env()})
    if settings.chunk_overlap * 2 > settings.chunk_tokens:
        raise C1Error(f"setting 'chunk_overlap': {settings.chunk_overlap} must be at most half of chunk_tokens "
                      f"({settings.chunk_tokens})")
    return settings
