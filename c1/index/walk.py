"""Expand the files and folders a user names into the sources the indexer tracks.

A :class:`Source` is one file on disk (one Maildir message, one PDF, one whole mbox ...); the
indexer hashes it and keeps it in its manifest. What a source holds is the loaders' business.

Rules, in short:
- the kind comes from the extension, as the loaders' registry of formats maps it; files with
  other extensions are counted by extension while walking a folder, and reported when the user
  named them explicitly;
- every file in the ``cur/`` and ``new/`` folders of a Maildir is a message (``tmp/`` holds
  messages still being delivered and is left alone);
- a file named like ``1.`` or ``23`` (the CMU Enron layout) is a message when it starts with
  RFC 822 headers;
- hidden entries and ``__pycache__`` are skipped while walking (Maildir++ sub-folders such as
  ``.Sent`` inside a Maildir are the exception);
- symbolic links are followed when they lead to a place inside the named folder; a link out of it
  is reported as skipped, unless ``follow`` (``c1 index --follow``, as ripgrep's and fd's
  ``--follow``) says to follow it. A link to a folder that holds the named one is never followed
  (it would walk the named folder again, and everything beside it), a link back to a folder being
  walked is reported as a loop, and so is a chain of links that never reaches a file. Each folder
  is walked once and each file (device and inode) is taken once, however many paths reach it;
- files larger than ``max_bytes`` are reported, not returned;
- a path the user names is resolved to its real path (``~/link-to-notes`` is ``~/notes``): indexed
  through a link, a folder is not added again as new documents. Inside it, a file reached through a
  link keeps the link's path (removing the link removes the document).
"""

from __future__ import annotations

import errno
import os
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from c1.index.loaders.common import MAIL_HEADERS, cannot_read
from c1.index.loaders.registry import extensions, needs_extra

_NUMBERED_MESSAGE = re.compile(r"^\d+\.?$")
_HEADER_LINE = re.compile(r"^([!-9;-~]+):")  # a field name is printable ASCII without ':'
_MAILDIR_PARTS = {"cur", "new", "tmp"}
_SKIPPED_DIRS = {"__pycache__"}


@dataclass
class Source:
    """One unit the indexer tracks in its manifest (hash, incremental updates)."""

    path: str
    """Absolute path of the file (or of the Maildir message file)."""
    kind: str
    """A kind registered in :mod:`c1.index.loaders.registry` (``"text"``, ``"pdf"``, ``"eml"``...)."""


@dataclass
class Walked:
    """What :func:`scan` found."""

    sources: list[Source] = field(default_factory=list)
    """Sorted by path."""
    skipped: list[tuple[str, str]] = field(default_factory=list)
    """``(path, reason)``: unreadable folders, symlink loops, links out of the folder (without
    ``follow``) or to a folder above it, files over the size limit, explicitly named files of an
    unsupported type."""
    unsupported: Counter = field(default_factory=Counter)
    """Files of unsupported types found inside folders, by lower-case extension
    (``".docx"``; ``"(no extension)"``)."""


NO_EXTENSION = "(no extension)"


def scan(paths: list[str], *, max_bytes: int, follow: bool = False) -> Walked:
    """Expand files and folders into sources; see :class:`Walked` for what else is reported.
    ``follow``: follow symbolic links out of the named folders too.

    Raises ``FileNotFoundError(path)`` for a path that does not exist (checked for all paths
    before anything is walked).
    """
    for path in paths:
        if not os.path.exists(path):
            raise FileNotFoundError(path)
    walker = _Walker(max_bytes, follow)
    walker.roots = [os.path.realpath(p) for p in paths]
    for path in paths:
        walker.add(os.path.realpath(path))  # a folder named through a symlink is the folder: the same paths
    walker.found.sources.sort(key=lambda s: s.path)
    walker.found.skipped.sort()
    return walker.found


def under(path: str, roots: Iterable[str]) -> bool:
    """Whether ``path`` is one of ``roots`` or inside one of them."""
    return any(path == r or path.startswith(r.rstrip(os.sep) + os.sep) for r in roots)


def scan_changed(roots: list[str], paths: list[str], *, max_bytes: int, follow: bool = False) -> Walked:
    """What a walk of ``roots`` finds at ``paths``, files and folders inside them that a file watcher
    saw change: a folder is walked whole, a file is taken when the walk would take it. Paths the
    walk never reaches (hidden, ``__pycache__``, a Maildir's ``tmp/``) and files of unsupported
    types give nothing, not even a count; paths that no longer exist are the caller's business."""
    walker = _Walker(max_bytes, follow)
    walker.roots = list(roots)
    for path in dict.fromkeys(os.path.abspath(p) for p in paths):
        root = next((r for r in roots if under(path, [r])), None)
        if root is None or not os.path.exists(path):
            continue
        if path == root:
            walker.add(path)
            continue
        walker.root = root
        if os.path.islink(path) and (problem := walker.link_problem(path)) is not None:
            if problem:
                walker._skip(path, problem)
            continue
        if not follow and not under(os.path.realpath(path), [root]):
            continue  # below a link out of the folder, which the walk does not follow
        how = _reached(root, path)
        if how == "folder":
            walker._walk_dir(path, frozenset())
        elif how == "mail folder":
            walker._walk_mail_folder(path, frozenset())
        elif how == "message":
            walker._add_file(path, "eml")
        elif how == "file" and (kind := kind_of(path)) is not None:
            walker._add_file(path, kind)
    walker.found.sources.sort(key=lambda s: s.path)
    walker.found.skipped.sort()
    return walker.found


def _reached(root: str, path: str) -> str | None:
    """How a walk of the folder ``root`` meets ``path``, below it: as a ``"file"`` or ``"folder"``, as a
    ``"mail folder"`` (a Maildir's ``cur/`` or ``new/``) or a ``"message"`` in one; None when it never
    does. The same rules as :meth:`_Walker._walk_dir`, applied to each folder on the way down."""
    here = root
    in_mail = _is_maildir_folder(root)
    parts = os.path.relpath(path, root).split(os.sep)
    for i, name in enumerate(parts):
        last = i == len(parts) - 1
        parent, here = here, os.path.join(here, name)
        if in_mail:  # a mail folder's visible files are messages; its sub-folders are not walked
            return "message" if last and not name.startswith(".") and os.path.isfile(here) else None
        if not os.path.isdir(here):
            return "file" if last and not name.startswith(".") else None
        parent_is_maildir = _is_maildir_path(parent)
        if parent_is_maildir and name in _MAILDIR_PARTS:
            if name == "tmp":
                return None
            in_mail = True
        elif name in _SKIPPED_DIRS or (name.startswith(".") and not (parent_is_maildir and _is_maildir_path(here))):
            return None
        if last:
            return "mail folder" if in_mail else "folder"
    return None


def walk(paths: list[str], *, max_bytes: int, follow: bool = False) -> tuple[list[Source], list[tuple[str, str]]]:
    """``(sources, skipped)`` of :func:`scan`, without the count of unsupported files."""
    found = scan(paths, max_bytes=max_bytes, follow=follow)
    return found.sources, found.skipped


def kind_of(path: str) -> str | None:
    """The kind of a file found while walking, or None when it is not indexed."""
    name = os.path.basename(path)
    kind = extensions().get(os.path.splitext(name)[1].lower())
    if kind is None and _NUMBERED_MESSAGE.match(name) and _starts_with_mail_headers(path):
        kind = "eml"
    return kind


def human_size(n: int) -> str:
    """``52428800`` -> ``"50 MB"``; binary units, one decimal at most."""
    for unit, size in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if n >= size:
            return f"{n / size:.1f}".rstrip("0").rstrip(".") + f" {unit}"
    return f"{n} bytes"


class _Walker:
    def __init__(self, max_bytes: int, follow: bool = False) -> None:
        self.max_bytes = max_bytes
        self.follow = follow
        self.root = ""  # the named folder being walked (its real path)
        self.roots: list[str] = []  # all the named paths (real paths)
        self.found = Walked()
        self._seen_files: set[tuple[int, int]] = set()  # (device, inode): a file reached twice is taken once
        self._seen_dirs: set[str] = set()

    def add(self, path: str) -> None:
        """An explicitly named path (absolute, real, known to exist)."""
        self.root = path
        if os.path.isdir(path) and _is_maildir_folder(path):
            self._walk_mail_folder(path, frozenset())
        elif os.path.isdir(path):
            self._walk_dir(path, frozenset())
        elif not os.path.isfile(path):
            self._skip(path, "not a regular file")
        elif (kind := _explicit_kind(path)) is not None:
            self._add_file(path, kind)
        else:
            ext = os.path.splitext(path)[1]
            reason = needs_extra(ext.lower()) or f"unsupported file type ({ext if len(ext) > 1 else 'no extension'})"
            self._skip(path, reason)

    def _walk_dir(self, path: str, ancestors: frozenset[str]) -> None:
        entries = self._enter_dir(path, ancestors)
        if entries is None:
            return
        ancestors = ancestors | {os.path.realpath(path)}
        subdirs = {e.name for e in entries if _is_dir(e)}
        is_maildir = _is_maildir(subdirs)
        for entry in entries:
            name = entry.name
            if is_maildir and name in _MAILDIR_PARTS and name in subdirs:
                if name != "tmp":
                    self._walk_mail_folder(entry.path, ancestors)
            elif name in subdirs:
                if name in _SKIPPED_DIRS:
                    continue
                if name.startswith(".") and not (is_maildir and _is_maildir_path(entry.path)):
                    continue
                if self._may_follow(entry):
                    self._walk_dir(entry.path, ancestors)
            elif name.startswith("."):
                continue
            elif _is_file(entry):
                if (kind := kind_of(entry.path)) is None:
                    self.found.unsupported[_extension(name)] += 1
                elif self._may_follow(entry):
                    self._add_file(entry.path, kind)
            elif entry.is_symlink():
                self._dangling(entry.path)

    def _walk_mail_folder(self, path: str, ancestors: frozenset[str]) -> None:
        """``cur/`` or ``new/`` of a Maildir: every visible file in it is a message."""
        entries = self._enter_dir(path, ancestors)
        for entry in entries or []:
            if not entry.name.startswith(".") and _is_file(entry) and self._may_follow(entry):
                self._add_file(entry.path, "eml")

    def _enter_dir(self, path: str, ancestors: frozenset[str]) -> list[os.DirEntry] | None:
        """The folder's entries sorted by name, or None when it must not be walked."""
        real = os.path.realpath(path)
        if real in ancestors:
            self._skip(path, "symlink loop (links back to a folder being walked)")
            return None
        if real in self._seen_dirs:
            return None  # reached again through another link: already walked
        self._seen_dirs.add(real)
        try:
            with os.scandir(path) as it:
                return sorted(it, key=lambda e: e.name)
        except OSError as exc:
            self._skip(path, f"cannot read folder ({exc.strerror or exc})")
            return None

    def link_problem(self, path: str) -> str | None:
        """Why the symbolic link ``path``, met inside :attr:`root`, is not followed; None: it is;
        "": it is not, and that needs no saying (it leads into another named path, walked as itself)."""
        real = os.path.realpath(path)
        if real != self.root and os.path.isdir(real) and under(self.root, [real]):
            return ("link to a folder that holds the named folder (never followed, even with --follow: "
                    "it would index the folder again)")
        if under(real, [self.root]):
            return None
        if under(real, [r for r in self.roots if r != self.root]):
            return ""
        if self.follow:
            return None
        return f"link outside the folder (to {real}); --follow follows it"

    def _may_follow(self, entry: os.DirEntry) -> bool:
        """False (and the reason reported) for a symbolic link that is not followed."""
        if not entry.is_symlink():
            return True
        problem = self.link_problem(entry.path)
        if problem:
            self._skip(entry.path, problem)
        return problem is None

    def _dangling(self, path: str) -> None:
        """A link that leads to no file or folder: a loop of links is reported, and so is a broken
        link with the name of a file that would be indexed."""
        try:
            os.stat(path)
            return  # a link to a pipe, a socket, a device: left alone, as they are
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                self._skip(path, "symlink loop (a chain of links that leads back to itself)")
            elif kind_of(path) is not None:
                self._skip(path, "broken symbolic link")

    def _add_file(self, path: str, kind: str) -> None:
        try:
            stat = os.stat(path)
        except OSError as exc:
            self._skip(path, str(cannot_read(exc)))
            return
        if (stat.st_dev, stat.st_ino) in self._seen_files:
            return
        self._seen_files.add((stat.st_dev, stat.st_ino))
        size = stat.st_size
        if size > self.max_bytes:
            limit = human_size(self.max_bytes)
            self._skip(path, f"larger than {limit} limit ({human_size(size)})")
            return
        self.found.sources.append(Source(path=path, kind=kind))

    def _skip(self, path: str, reason: str) -> None:
        self.found.skipped.append((path, reason))


def _extension(name: str) -> str:
    ext = os.path.splitext(name)[1].lower()
    return ext if len(ext) > 1 else NO_EXTENSION


def _explicit_kind(path: str) -> str | None:
    """Kind of a file the user named: as when walking, plus messages of a Maildir."""
    return "eml" if _is_maildir_folder(os.path.dirname(path)) else kind_of(path)


def _is_maildir_folder(path: str) -> bool:
    """Is ``path`` the ``cur/`` or ``new/`` folder of a Maildir?"""
    path = os.path.normpath(path)
    return os.path.basename(path) in ("cur", "new") and _is_maildir_path(os.path.dirname(path))


def _is_maildir(subdirs: set[str]) -> bool:
    """Maildirs have cur/, new/ and tmp/; git drops empty folders, so two of them suffice."""
    parts = subdirs & _MAILDIR_PARTS
    return len(parts) >= 2 and bool(parts & {"cur", "new"})


def _is_maildir_path(path: str) -> bool:
    return _is_maildir({p for p in _MAILDIR_PARTS if os.path.isdir(os.path.join(path, p))})


def _starts_with_mail_headers(path: str) -> bool:
    """Sniff the first 1 KB: header lines up to the first blank line, one a usual mail field."""
    try:
        with open(path, "rb") as f:
            head = f.read(1024).decode("latin-1")
    except OSError:
        return False
    lines = head.splitlines()
    if not lines or not _HEADER_LINE.match(lines[0]):
        return False
    for line in lines:
        if not line.strip():
            break
        match = _HEADER_LINE.match(line)
        if match and match.group(1).lower() in MAIL_HEADERS:
            return True
    return False


def _is_dir(entry: os.DirEntry) -> bool:
    try:
        return entry.is_dir()  # follows symlinks
    except OSError:
        return False


def _is_file(entry: os.DirEntry) -> bool:
    try:
        return entry.is_file()
    except OSError:
        return False
