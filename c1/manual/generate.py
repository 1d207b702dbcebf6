"""Generate the shell completions and the man page from the c1 command tree.

    python scripts/gen_docs.py              # rewrite completions/ and man/c1.1 in the repository
    python scripts/gen_docs.py --out DIR    # write them under DIR instead
    python scripts/gen_docs.py --check      # exit 1 and list the files that are out of date

Outputs: ``completions/c1.bash``, ``completions/_c1`` (zsh), ``completions/c1.fish`` and
``man/c1.1``. tests/test_docs_generated.py fails when the checked-in files differ from what this
script produces, so run it after changing a command, an option or a help text.

The completion scripts are static: every subcommand, option and value kind is written out, so a
TAB costs no Python start-up and does not depend on a completion protocol inside the program.
Values are completed where they are known: the choices of ``--policy``, ``--setting``,
``--reasoning-effort`` and ``--embedder``, and collection names (``-c``), read from ``$C1_HOME/collections`` by the
shell itself. Output is deterministic: no dates, no versions, stable ordering.

``c1 completions bash|zsh|fish`` prints the same scripts from the installed package, and the
package installs them, with the man page, under its prefix's ``share/`` (pyproject.toml).

This module writes the completions and drives the rest: the command tree is read by
c1/manual/tree.py, the man page written by c1/manual/man_page.py.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from c1.manual.man_page import man
from c1.manual.tree import HEADER, PROG, Cmd, Opt, command_tree

REPO = Path(__file__).resolve().parents[2]


# --- bash -------------------------------------------------------------------------------------


def _bash_value_case(opts: list[Opt], indent: str) -> list[str]:
    lines = []
    for o in opts:
        if not o.takes_value:
            continue
        pattern = "|".join(o.sorted_names)
        if o.kind == "dir":
            action = 'compopt -o filenames 2>/dev/null; COMPREPLY=( $(compgen -d -- "$cur") )'
        elif o.kind == "path":
            action = 'compopt -o filenames 2>/dev/null; COMPREPLY=( $(compgen -f -- "$cur") )'
        elif o.kind == "choice":
            action = f'COMPREPLY=( $(compgen -W "{" ".join(o.choices)}" -- "$cur") )'
        elif o.kind == "collection":
            action = f'COMPREPLY=( $(compgen -W "$(_{PROG}_collections)" -- "$cur") )'
        else:
            action = "COMPREPLY=()"
        lines.append(f"{indent}{pattern}) {action}; return 0 ;;")
    return lines


def _bash_branch(c: Cmd, indent: str) -> list[str]:
    """Completion of one runnable command's options and arguments."""
    opts = " ".join(n for o in c.options for n in o.sorted_names)
    out = []
    value_case = _bash_value_case(c.options, indent + "    ")
    if value_case:
        out += [f'{indent}case "$prev" in', *value_case, f"{indent}esac"]
    out.append(f'{indent}if [[ "$cur" == -* ]]; then')
    out.append(f'{indent}    COMPREPLY=( $(compgen -W "{opts}" -- "$cur") )')
    if any(a.kind in ("path", "dir") for a in c.arguments):
        flag = "-d" if all(a.kind == "dir" for a in c.arguments) else "-f"
        out.append(f"{indent}else")
        out.append(f'{indent}    compopt -o filenames 2>/dev/null; COMPREPLY=( $(compgen {flag} -- "$cur") )')
    out.append(f"{indent}fi ;;")
    return out


def bash(root: Cmd, subs: list[Cmd]) -> str:
    words = " ".join([c.name for c in subs] + [n for o in root.options for n in o.sorted_names])
    out = [
        f"# bash completion for {PROG}: {HEADER}.",
        f"# Install: source this file, or copy it to ~/.local/share/bash-completion/completions/{PROG}",
        "",
        f"_{PROG}_collections() {{",
        f'    local home="${{C1_HOME:-${{XDG_DATA_HOME:-$HOME/.local/share}}/{PROG}}}" d',
        '    for d in "$home"/collections/*/; do [[ -d "$d" ]] && d="${d%/}" && printf \'%s\\n\' "${d##*/}"; done',
        "}",
        "",
        f"_{PROG}() {{",
        '    local cur="${COMP_WORDS[COMP_CWORD]}" prev="${COMP_WORDS[COMP_CWORD-1]}" cmd="" sub="" i j',
        "    for ((i = 1; i < COMP_CWORD; i++)); do",
        '        case "${COMP_WORDS[i]}" in',
        "            -*) ;;",
        '            *) cmd="${COMP_WORDS[i]}"; break ;;',
        "        esac",
        "    done",
        '    case "$cmd" in',
        '        "")',
        f'            COMPREPLY=( $(compgen -W "{words}" -- "$cur") ) ;;',
    ]
    for c in subs:
        out.append(f"        {c.name})")
        if not c.children:
            out += _bash_branch(c, "            ")
            continue
        out += [
            "            for ((j = i + 1; j < COMP_CWORD; j++)); do",
            '                case "${COMP_WORDS[j]}" in -*) ;; *) sub="${COMP_WORDS[j]}"; break ;; esac',
            "            done",
            '            case "$sub" in',
            '                "")',
            f'                    COMPREPLY=( $(compgen -W "{" ".join(k.name for k in c.children)} --help" -- "$cur") ) ;;',
        ]
        for k in c.children:
            out.append(f"                {k.name})")
            out += _bash_branch(k, "                    ")
        out.append("            esac ;;")
    out += ["    esac", "    return 0", "}", "", f"complete -F _{PROG} {PROG}", ""]
    return "\n".join(out)


# --- zsh --------------------------------------------------------------------------------------


def _zq(text: str) -> str:
    """Inside a zsh single-quoted string."""
    return text.replace("'", "'\\''")


def _zdesc(text: str) -> str:
    """An _arguments description: brackets and colons escaped."""
    return re.sub(r"([\\\[\]:])", r"\\\1", text)


def _zsh_spec(o: Opt) -> list[str]:
    if o.takes_value:
        action = {"dir": "_files -/", "path": "_files", "choice": f"({' '.join(o.choices)})",
                  "collection": f"_{PROG}_collections"}.get(o.kind, " ")
        value = f":{o.metavar.lower()}:{action}"
    else:
        value = ""
    desc = f"[{_zdesc(o.help)}]"
    names = o.sorted_names
    if len(names) == 1:
        return [f"'{_zq(names[0] + desc + value)}'"]
    exclusion = "(" + " ".join(names) + ")"
    return [f"'{exclusion}'{{{','.join(names)}}}'{_zq(desc + value)}'"]


def _zsh_arguments(c: Cmd, indent: str) -> list[str]:
    specs = [s for o in c.options for s in _zsh_spec(o)]
    for a in c.arguments:
        action = {"dir": "_files -/", "path": "_files"}.get(a.kind, " ")
        prefix = "*" if a.many else ""
        specs.append(f"'{_zq(prefix + ':' + a.name + ':' + action)}'")
    if not specs:
        return [f"{indent}_arguments ;;"[:-3]]
    return [f"{indent}_arguments \\"] + [f"{indent}  {s} \\" for s in specs[:-1]] + [f"{indent}  {specs[-1]}"]


def zsh(root: Cmd, subs: list[Cmd]) -> str:
    out = [
        f"#compdef {PROG}",
        f"# zsh completion for {PROG}: {HEADER}.",
        f"# Install: put this file, named _{PROG}, in a folder on $fpath (then: autoload -U compinit; compinit)",
        "",
        f"_{PROG}_collections() {{",
        "  local -a names",
        f'  names=( "${{C1_HOME:-${{XDG_DATA_HOME:-$HOME/.local/share}}/{PROG}}}"/collections/*(N/:t) )',
        "  _describe -t collections 'collection' names",
        "}",
        "",
        f"_{PROG}_commands() {{",
        "  local -a commands",
        "  commands=(",
    ]
    for c in subs:
        out.append(f"    '{_zq(c.name.replace(':', chr(92) + ':') + ':' + c.summary)}'")
    out += ["  )", f"  _describe -t commands '{PROG} command' commands", "}", "", f"_{PROG}() {{",
            '  local curcontext="$curcontext" state line', "  typeset -A opt_args",
            "  _arguments -C \\"]
    for o in root.options:
        out.append(f"    '(- *)'{_zsh_spec(o)[0]} \\")
    out += [f"    '1: :_{PROG}_commands' \\", "    '*:: :->args'", "  case $state in", "    args)",
            f'      curcontext="${{curcontext%:*:*}}:{PROG}-$words[1]:"', "      case $words[1] in"]
    for c in subs:
        out.append(f"        {c.name})")
        if not c.children:
            out += _zsh_arguments(c, "          ")
        else:
            values = " ".join(f"'{_zq(k.name + '[' + k.summary.replace(']', ')') + ']')}'" for k in c.children)
            out += ["          if (( CURRENT == 2 )); then", f"            _values '{c.name} command' {values}",
                    "          else", "            case $words[2] in"]
            for k in c.children:
                out.append(f"              {k.name})")
                out += _zsh_arguments(k, "                ") + ["                ;;"]
            out += ["            esac", "          fi"]
        out.append("          ;;")
    out += ["      esac", "      ;;", "  esac", "}", "", f'_{PROG} "$@"', ""]
    return "\n".join(out)


# --- fish -------------------------------------------------------------------------------------


def _fq(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _fish_opt(o: Opt, condition: str) -> str:
    parts = [f"complete -c {PROG} -n {_fq(condition)}"]
    parts += [f"-s {n[1:]}" for n in o.short] + [f"-l {n[2:]}" for n in o.long]
    if o.takes_value:
        if o.kind == "dir":
            parts.append("-x -a '(__fish_complete_directories)'")
        elif o.kind == "path":
            parts.append("-r -F")
        elif o.kind == "choice":
            parts.append(f"-x -a {_fq(' '.join(o.choices))}")
        elif o.kind == "collection":
            parts.append(f"-x -a '(__{PROG}_collections)'")
        else:
            parts.append("-x")
    parts.append(f"-d {_fq(o.help)}")
    return " ".join(parts)


def _fish_command(c: Cmd, condition: str) -> list[str]:
    out = [_fish_opt(o, condition) for o in c.options]
    if any(a.kind in ("path", "dir") for a in c.arguments):
        out.append(f"complete -c {PROG} -n {_fq(condition)} -F")
    return out


def fish(root: Cmd, subs: list[Cmd]) -> str:
    out = [
        f"# fish completion for {PROG}: {HEADER}.",
        f"# Install: copy to ~/.config/fish/completions/{PROG}.fish",
        "",
        f"function __{PROG}_collections",
        "    set -l home $C1_HOME",
        "    if test -z \"$home\"",
        "        set -l data $XDG_DATA_HOME",
        "        test -n \"$data\"; or set data $HOME/.local/share",
        f"        set home $data/{PROG}",
        "    end",
        "    for d in $home/collections/*/",
        "        basename $d",
        "    end",
        "end",
        "",
        f"complete -c {PROG} -f",
    ]
    for o in root.options:
        out.append(_fish_opt(o, "__fish_use_subcommand"))
    for c in subs:
        out.append(f"complete -c {PROG} -n __fish_use_subcommand -a {c.name} -d {_fq(c.summary)}")
    for c in subs:
        condition = f"__fish_seen_subcommand_from {c.name}"
        if not c.children:
            out += _fish_command(c, condition)
            continue
        names = " ".join(k.name for k in c.children)
        for k in c.children:
            out.append(f"complete -c {PROG} -n {_fq(condition + '; and not __fish_seen_subcommand_from ' + names)} "
                       f"-a {k.name} -d {_fq(k.summary)}")
        for k in c.children:
            out += _fish_command(k, f"{condition}; and __fish_seen_subcommand_from {k.name}")
    out.append("")
    return "\n".join(out)


# --- driver -----------------------------------------------------------------------------------

OUTPUTS = {
    "completions/c1.bash": bash,
    "completions/_c1": zsh,
    "completions/c1.fish": fish,
    "man/c1.1": man,
}


SHELLS = {"bash": "completions/c1.bash", "zsh": "completions/_c1", "fish": "completions/c1.fish"}
"""``c1 completions SHELL`` → the script it prints."""


def completion_script(shell: str, app) -> str:
    root, subs = command_tree(app)
    return OUTPUTS[SHELLS[shell]](root, subs)


def generate(app) -> dict[str, str]:
    root, subs = command_tree(app)
    return {path: render(root, subs) for path, render in OUTPUTS.items()}


def main(app, argv: list[str] | None = None) -> int:
    """scripts/gen_docs.py with the c1 ``app``."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=REPO, help="write under this folder (default: the repository)")
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if a file is out of date")
    args = parser.parse_args(argv)
    stale = []
    for rel, text in generate(app).items():
        target = args.out / rel
        if args.check:
            if not target.exists() or target.read_text(encoding="utf-8") != text:
                stale.append(rel)
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
        print(f"wrote {target}")
    if stale:
        print("out of date: " + ", ".join(stale) + "; run: python scripts/gen_docs.py", file=sys.stderr)
        return 1
    return 0
