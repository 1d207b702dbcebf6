#!/usr/bin/env python3
"""How many numbers are set by hand in the ranking code (issue 30): named numeric constants (UPPER_CASE, at
module or class level) other than 0, and numeric defaults other than 0 and 1 (a dataclass's fields, a
function's parameters: 1 is the neutral weight or count), in c1/retrieval and c1/agent/policies; each name
of ``K1, B = 1.2, 0.75``, and a name behind an underscore too. Cache
sizes, timeouts and retries are left out: they set no ranking. Prints the count per file and the names.

    python bench/constants.py            # the ranking numbers
    python bench/constants.py --all      # cache sizes, timeouts and retries too
"""

from __future__ import annotations

import argparse
import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ROOTS = ("c1/retrieval", "c1/agent/policies")
ENGINEERING = ("cache", "timeout", "retries", "backoff", "texts", "chars")


def _number(node) -> bool:
    if isinstance(node, ast.Constant):
        return isinstance(node.value, (int, float)) and not isinstance(node.value, bool)
    if isinstance(node, ast.UnaryOp):
        return _number(node.operand)
    if isinstance(node, ast.Tuple):
        return bool(node.elts) and all(_number(e) for e in node.elts)
    if isinstance(node, ast.BinOp):
        return _number(node.left) and _number(node.right)
    return False


def _kept(name: str, every: bool) -> bool:
    return every or not any(w in name.lower() for w in ENGINEERING)


def _assigned(st) -> list[tuple]:
    """Each name an assignment binds with the value it gets: ``K1, B = 1.2, 0.75`` binds two."""
    targets = st.targets if isinstance(st, ast.Assign) else [st.target]
    out = []
    for target in targets:
        if isinstance(target, ast.Tuple) and isinstance(st.value, ast.Tuple) and len(target.elts) == len(st.value.elts):
            out += list(zip(target.elts, st.value.elts))
        else:
            out.append((target, st.value))
    return out


def numbers(path: Path, every: bool = False) -> list[str]:
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, (ast.Module, ast.ClassDef)):
            for st in node.body:
                if not isinstance(st, (ast.Assign, ast.AnnAssign)) or st.value is None:
                    continue
                for target, value_node in _assigned(st):
                    if not isinstance(target, ast.Name) or not _number(value_node):
                        continue
                    name = target.id
                    value = value_node.value if isinstance(value_node, ast.Constant) else None
                    constant = name.isupper() and value != 0
                    default = isinstance(node, ast.ClassDef) and not name.isupper() and value not in (0, 1)
                    if (constant or default) and _kept(name, every):
                        out.append(name)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            a = node.args
            pairs = list(zip(a.args[len(a.args) - len(a.defaults):], a.defaults)) + list(zip(a.kwonlyargs, a.kw_defaults))
            for arg, default in pairs:
                if default is not None and _number(default) and _kept(arg.arg, every) \
                        and not (isinstance(default, ast.Constant) and default.value in (0, 1)):
                    out.append(f"{node.name}({arg.arg}=)")
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--all", action="store_true", help="count cache sizes, timeouts and retries too")
    args = ap.parse_args()
    found = {p: numbers(p, args.all) for root in ROOTS for p in sorted((REPO / root).rglob("*.py"))}
    for path, names in sorted(found.items(), key=lambda kv: -len(kv[1])):
        if names:
            print(f"{len(names):3d}  {path.relative_to(REPO)}  {' '.join(names)}")
    print(f"total {sum(len(n) for n in found.values())}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
