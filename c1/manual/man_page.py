"""The man page, ``man/c1.1``, from the c1 command tree (c1/manual/tree.py): one builder per section,
each a list of roff lines. Deterministic, like the completions: no date, no version."""

from __future__ import annotations

import dataclasses
import re

from c1.manual.tree import HEADER, PROG, Cmd, flattened, one_line


def _roff(text: str) -> str:
    """Escape running text: backslashes, hyphens, and control characters at line starts."""
    text = text.replace("\\", "\\e").replace("-", "\\-")
    return "\n".join(("\\&" + line) if line[:1] in (".", "'") else line for line in text.split("\n"))


def _paragraphs(text: str) -> list[str]:
    return [one_line(p) for p in re.split(r"\n\s*\n", text.strip()) if p.strip()]


EXIT_STATUS = [
    ("0", "Success. Files that could not be indexed are skipped, counted and listed with their reason, with a warning."),
    ("1", "Nothing found, or \\fB--strict\\fR was given and some files were skipped."),
    ("2", "Usage error, bad configuration, a path that does not exist, or an index error "
          "(another run holds the collection, a different embedder, an unreachable server); "
          "one line on standard error says which."),
    ("70", "Internal error (a bug in c1): one line on standard error; set \\fBC1_DEBUG=1\\fR for the traceback."),
    ("130", "Interrupted (Ctrl-C). The next run repairs what the interrupted one left half done."),
]

DESCRIPTION = [
    "{help}",
    "Given a question, {prog} searches a corpus over several turns with lexical (BM25) and dense "
    "search, keeps its own working context small by pruning what is irrelevant, and returns the "
    "ranked supporting documents \\(em never an answer \\(em for a downstream model or a person.",
    "Indexing is incremental: a manifest keeps every file's content hash and chunk ids, so a "
    "re-run embeds only what changed and removes the chunks of deleted files. A run that is "
    "interrupted or killed leaves a state the next run repairs.",
    "Results go to standard output (\\fB\\-\\-json\\fR prints one JSON object); progress, the live "
    "view, warnings and errors go to standard error.",
    "Settings are read, each overriding the one before: built-in defaults, the configuration file, "
    "\\fBC1_*\\fR environment variables, command-line options.",
]


def _settings_rows() -> list[tuple[str, str]]:
    """(key, default) for every setting, from the Settings dataclass itself."""
    from c1.config import Settings

    rows = []
    for f in dataclasses.fields(Settings):
        if f.name == "home":
            default = "$XDG_DATA_HOME/c1"
        elif f.default is not dataclasses.MISSING:
            value = f.default
            default = "unset" if value is None or value == () else str(value)
        else:
            default = "unset"
        rows.append((f.name, default))
    return rows


def _name_line() -> str:
    """From the package docstring, "c1: a retrieval subagent for the command line." """
    import c1

    return one_line(c1.__doc__).split(": ", 1)[-1].rstrip(".")


def _bold(text: str) -> str:
    return f"\\fB{text}\\fR"


def _italic(text: str) -> str:
    return f"\\fI{text}\\fR"


def _hyphens(text: str) -> str:
    """Option names and metavars: every hyphen a minus sign."""
    return text.replace("-", "\\-")


def man(root: Cmd, subs: list[Cmd]) -> str:
    subs = flattened(subs)
    out = [
        f'.\\" {PROG}(1): {HEADER}.',
        f'.TH {PROG.upper()} 1 "" "{PROG}" "User Commands"',
        ".SH NAME",
        f"{PROG} \\- {_roff(_name_line())}",
    ]
    out += _synopsis(root, subs) + _description(root) + _options(root) + _commands(subs) + _exit_status()
    out += _environment() + _files() + _examples() + [".SH SEE ALSO", _bold("chroma") + "(1)", ""]
    return "\n".join(out)


def _synopsis(root: Cmd, subs: list[Cmd]) -> list[str]:
    out = [".SH SYNOPSIS"]
    for c in subs:
        usage = " ".join(a.usage for a in c.arguments)
        out.append(f".B {PROG} {c.name}")
        out.append(f"[{_italic('options')}]" + (f" {_italic(_hyphens(usage))}" if usage else ""))
        out.append(".br")
    out.append(f".B {PROG}")
    out.append(" ".join(f"[{_bold(_hyphens(o.sorted_names[0]))}]" for o in root.options))
    return out


def _description(root: Cmd) -> list[str]:
    out = [".SH DESCRIPTION"]
    for n, para in enumerate(DESCRIPTION):
        if n:
            out.append(".PP")
        out.append(para.format(prog=_bold(PROG), help=_roff(one_line(root.help))))
    return out


def _options(root: Cmd) -> list[str]:
    """The options of ``c1`` itself (``--version``)."""
    out = [".SH OPTIONS"]
    for o in root.options:
        out += [".TP", _bold(_hyphens(", ".join(o.sorted_names))), _roff(o.help)]
    return out


def _commands(subs: list[Cmd]) -> list[str]:
    out = [".SH COMMANDS"]
    for c in subs:
        out += _command(c)
    return out


def _command(c: Cmd) -> list[str]:
    """One command: its usage, its help's paragraphs, then its arguments and options, each a tagged paragraph."""
    usage = " ".join(["[OPTIONS]"] + [a.usage for a in c.arguments])
    out = [f'.SS "{PROG} {c.name} {_hyphens(usage)}"']
    for n, para in enumerate(_paragraphs(c.help)):
        out += ([".PP"] if n else []) + [_roff(para)]
    for a in c.arguments:
        out += [".TP", _italic(_hyphens(a.name.upper() + ("..." if a.many else ""))), _roff(a.help)]
    for o in c.options:
        names = ", ".join(_bold(_hyphens(n)) for n in o.sorted_names)
        value = f" {_italic(o.metavar)}" if o.takes_value else ""
        if o.kind == "choice":
            value = f" {_italic('{' + ','.join(o.choices) + '}')}"
        out += [".TP", names + value, _roff(o.help)]
    return out


def _exit_status() -> list[str]:
    out = [".SH EXIT STATUS"]
    for code, text in EXIT_STATUS:
        out += [".TP", _bold(code), text.replace("--", "\\-\\-")]
    return out


def _environment() -> list[str]:
    """The variables c1 reads, then every setting with its default (the configuration file's keys too)."""
    b = _bold
    out = [
        ".SH ENVIRONMENT",
        ".TP", b("C1_HOME"),
        "Where collections are stored (default: " + b("$XDG_DATA_HOME/c1") + ", that is "
        + b("~/.local/share/c1") + "). Overridden by " + b("\\-\\-home") + ".",
        ".TP", b("C1_CONFIG"),
        "The configuration file (default: " + b("$XDG_CONFIG_HOME/c1/config.toml") + ", that is "
        + b("~/.config/c1/config.toml") + "). If set, the file must exist.",
        ".TP", b("C1_\\fIKEY\\fB"),
        "Any setting below, in upper case (for example " + b("C1_COLLECTION") + "); it overrides the "
        "configuration file, and command-line options override it. Lists (" + b("C1_BASE_URLS")
        + ") are comma-separated.",
        ".TP", b("C1_DEBUG"),
        "If set, an internal error shows its Python traceback instead of one line.",
        ".TP", b("XDG_CONFIG_HOME") + ", " + b("XDG_DATA_HOME"),
        "Base folders for the configuration file and the index home.",
        ".PP",
        "Settings (configuration file keys; environment " + b("C1_\\fIKEY\\fB") + "), with their defaults:",
        ".PP",
        ".RS",
        ".nf",
    ]
    out += [_roff(f"{key:<18} {default}") for key, default in _settings_rows()]
    return out + [".fi", ".RE"]


def _files() -> list[str]:
    b = _bold
    return [
        ".SH FILES",
        ".TP", b("$XDG_CONFIG_HOME/c1/config.toml"),
        "The configuration file: TOML, the keys above at the top level, for example",
        b('collection = "mail"') + ". Unknown keys are an error.",
        ".TP", b("$C1_HOME/collections/\\fINAME\\fB/manifest.sqlite"),
        "The manifest of collection " + _italic("NAME") + ": every indexed file (content hash), its "
        "documents and chunks. It is the source of truth; the other stores are derived from it.",
        ".TP", b("$C1_HOME/collections/\\fINAME\\fB/lexical/"),
        "The lexical (BM25) index of the collection (tantivy).",
        ".TP", b("$C1_HOME/chroma/"),
        "The embedded Chroma store (vectors, chunk text, metadata), unless " + b("\\-\\-chroma\\-url")
        + " names a Chroma server.",
    ]


def _examples() -> list[str]:
    return [
        ".SH EXAMPLES",
        ".nf",
        f"{PROG} index ~/Documents/notes",
        f"{PROG} index ~/Maildir \\-\\-collection mail \\-\\-json",
        f"{PROG} status",
        f'{PROG} search "who approved the budget?" \\-\\-parallel 4 \\-k 5',
        f'{PROG} search "..." \\-\\-json | jq \\-r ".documents[].path"',
        f"{PROG} serve \\-\\-dry\\-run",
        f"{PROG} eval hotpotqa dev.jsonl \\-\\-systems builtin,hybrid \\-k 5",
        ".fi",
    ]
