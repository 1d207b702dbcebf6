"""The house's sizes (issue 32): a reader never scrolls through one function, a module holds one idea,
and the CLI wires and does nothing else. Measured on the source, so a change that grows a unit past its
bound fails here, not in review."""

from __future__ import annotations

import ast
from pathlib import Path

C1 = Path(__file__).resolve().parents[1] / "c1"
FUNCTION_LINES = 80
MODULE_LINES = 500
CLI_LINES = 300


def _modules() -> list[Path]:
    return sorted(C1.rglob("*.py"))


def test_no_function_is_longer_than_a_screen():
    long = []
    for path in _modules():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                if lines > FUNCTION_LINES:
                    long.append(f"{path.relative_to(C1.parent)}:{node.lineno} {node.name} ({lines} lines)")
    assert not long, "functions over %d lines:\n%s" % (FUNCTION_LINES, "\n".join(long))


def test_no_module_holds_more_than_one_idea_s_worth_of_lines():
    big = [f"{p.relative_to(C1.parent)} ({n} lines)" for p in _modules()
           if (n := len(p.read_text(encoding="utf-8").splitlines())) > MODULE_LINES]
    assert not big, "modules over %d lines:\n%s" % (MODULE_LINES, "\n".join(big))


def test_the_cli_wires_and_nothing_else():
    cli = C1 / "cli.py"
    assert len(cli.read_text(encoding="utf-8").splitlines()) <= CLI_LINES
