"""The formats c1 reads: one module per format in this package, each with one :func:`register` call.

A :class:`Format` names its kind (stored in the manifest), the file extensions that select it,
the function that loads a file, and — for formats that need an optional dependency — the extra
to install and the modules it provides. ``walk`` takes its extensions from here, so a new format
is one new module and nothing else.
"""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass

from c1.index.documents import Document

Loaded = tuple[list[Document], list[str]]
"""What a loader returns: the documents of one file and the non-fatal problems met."""

OnPage = Callable[[int, int], None]
"""``on_page(number, pages)``, called by a paged loader as it reads each page (1-based ``number`` of
``pages``): ``c1 index`` shows it while a long file is read."""


@dataclass(frozen=True)
class Format:
    kind: str
    """Stored in the manifest and in :class:`~c1.index.walk.Source` (``"pdf"``, ``"docx"``...)."""
    extensions: tuple[str, ...]
    """Lower-case, with the dot: ``(".htm", ".html")``. Empty for kinds found otherwise (Maildir)."""
    load: Callable[[str], Loaded]
    """Path → (documents, warnings); raises :class:`~c1.index.documents.Skip` when unreadable."""
    extra: str | None = None
    """The optional-dependency group that provides ``modules`` (``pip install 'c1[extra]'``)."""
    modules: tuple[str, ...] = ()
    """Modules the loader imports; when one cannot be imported, files are skipped with a hint."""
    walk_without_extra: bool = True
    """False: without its modules, the folder walk passes these files by (they are counted with
    the unsupported ones) instead of listing each as skipped — for kinds as common as images."""
    pages: bool = False
    """``load(path, on_page=...)`` reports each page as it is read (:data:`OnPage`)."""

    def installed(self) -> bool:
        """Are its modules there (found, not imported: cheap enough for every walk)?"""
        try:
            return all(importlib.util.find_spec(name) is not None for name in self.modules)
        except ValueError:  # blocked: sys.modules[name] is None
            return False

    def missing(self) -> str | None:
        """The skip reason when a module this format needs cannot be imported, else None."""
        for name in self.modules:
            try:
                importlib.import_module(name)
            except Exception as exc:  # not installed, or a native library it needs is missing
                what = self.extensions[0] if self.extensions else self.kind
                hint = f"install c1[{self.extra}] to index {what} files" if self.extra else f"{name} is not installed"
                return hint if isinstance(exc, ImportError) else f"{hint} ({name} failed to load: {type(exc).__name__})"
        return None


_FORMATS: dict[str, Format] = {}
_EXTENSIONS: dict[str, str] = {}
_discovered = False
_walked: dict[str, str] | None = None


def register(fmt: Format) -> Format:
    """Add a format; called once, at import, by the module that implements it."""
    if fmt.kind in _FORMATS and _FORMATS[fmt.kind] != fmt:
        raise ValueError(f"format {fmt.kind!r} registered twice")
    for ext in fmt.extensions:
        if _EXTENSIONS.get(ext, fmt.kind) != fmt.kind:
            raise ValueError(f"extension {ext!r} claimed by {_EXTENSIONS[ext]!r} and {fmt.kind!r}")
        _EXTENSIONS[ext] = fmt.kind
    _FORMATS[fmt.kind] = fmt
    global _walked
    _walked = None
    return fmt


def _discover() -> None:
    """Import every module of this package: format modules register themselves, helper modules
    are harmless (all are cheap to import: heavy libraries load on first use)."""
    global _discovered
    if _discovered:
        return
    package = __name__.rsplit(".", 1)[0]
    path = importlib.import_module(package).__path__
    for info in sorted(pkgutil.iter_modules(path), key=lambda m: m.name):
        if not info.name.startswith("_"):
            importlib.import_module(f"{package}.{info.name}")
    _discovered = True


def formats() -> dict[str, Format]:
    """Kind → format, for every format of the package."""
    _discover()
    return dict(_FORMATS)


def format_of(kind: str) -> Format | None:
    _discover()
    return _FORMATS.get(kind)


def extensions() -> dict[str, str]:
    """Extension (``".pdf"``) → kind, for the formats the folder walk takes (do not modify)."""
    global _walked
    _discover()
    if _walked is None:
        _walked = {ext: kind for ext, kind in _EXTENSIONS.items()
                   if _FORMATS[kind].walk_without_extra or _FORMATS[kind].installed()}
    return _walked


def needs_extra(extension: str) -> str | None:
    """For an extension the walk passes by only because its format's extra is missing: the
    skip reason that says what to install ("install c1[ocr] to index .png files")."""
    _discover()
    kind = _EXTENSIONS.get(extension)
    if kind is None or extension in extensions():
        return None
    return f"install c1[{_FORMATS[kind].extra}] to index {extension} files"
