"""The CLI's surface: version, help, commands that have not landed, and a fast start."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

import c1

HEAVY = ("chromadb", "onnxruntime", "numpy", "tantivy", "pypdf", "torch", "transformers", "tokenizers")


def test_version(run_c1):
    rc, out, err = run_c1("--version")
    assert rc == 0, err
    assert out.strip() == f"c1 {c1.__version__}"


def test_help_lists_every_command(run_c1):
    rc, out, err = run_c1("--help")
    assert rc == 0, err
    listed = set(re.findall(r"^\s+(\w+)\s", out, re.M))
    assert {"index", "search", "serve", "train", "eval", "status"} <= listed, out


@pytest.mark.parametrize("command", ["index", "status", "rm"])
def test_subcommand_help(invoke_c1, command):
    rc, out, err = invoke_c1(command, "--help")
    assert rc == 0, err
    assert "--collection" in out and "--json" in out


def test_unknown_command_is_a_usage_error(invoke_c1):
    rc, out, err = invoke_c1("frobnicate")
    assert rc == 2
    assert "Traceback" not in err


def _imported_modules(*python_args: str) -> set[str]:
    proc = subprocess.run([sys.executable, "-X", "importtime", *python_args],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    names = set()
    for line in proc.stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            names.add(line.rsplit("|", 1)[1].strip())
    assert names, "no -X importtime output"
    return names


def _heavy(names: set[str]) -> list[str]:
    return sorted(n for n in names if n.split(".")[0] in HEAVY)


def test_import_cli_is_light():
    """`c1 --help` must be instant: no heavy library is imported with the CLI module."""
    assert _heavy(_imported_modules("-c", "import c1.cli")) == []


@pytest.mark.parametrize("args", [["--help"], ["index", "--help"], ["--version"]])
def test_help_and_version_import_nothing_heavy(args):
    assert _heavy(_imported_modules("-m", "c1", *args)) == []


def test_import_cli_loads_no_agent_or_corpus_module():
    """The CLI's help strings come from c1.config: no policy registry, context or watcher is loaded
    for `c1 --help` (they cost 15-20 ms of every command's start-up)."""
    loaded = sorted(n for n in _imported_modules("-c", "import c1.cli")
                    if n.startswith(("c1.agent", "c1.index", "c1.store", "c1.retrieval")))
    assert loaded == []


def test_a_command_that_is_not_train_or_eval_makes_neither_groups_options():
    """Making the ``train`` and ``eval`` groups' options was some 35 ms of every start (``c1 search``
    through the resident process included): they are made where the command line names them or asks
    for every command (help, a name c1 does not know), and ``c1.cli.app`` is still the whole tree."""
    groups = {"c1.commands.train_group", "c1.commands.eval_group"}
    assert not groups & _imported_modules("-m", "c1", "search", "--help")
    assert not groups & _imported_modules("-m", "c1", "rm", "--help")
    assert "c1.commands.train_group" in _imported_modules("-m", "c1", "train", "--help")
    assert groups <= _imported_modules("-m", "c1", "--help")
    assert groups <= _imported_modules("-c", "from c1.cli import app; assert {g.name for g in app.registered_groups} == {'train', 'eval'}")


def test_the_policy_names_of_the_settings_are_the_registrys():
    from c1.agent.policies import NAMES
    from c1.config import CHOICES

    assert CHOICES["policy"] == NAMES


def test_ctrl_c_while_the_cli_is_imported_exits_130_in_one_line():
    """A Ctrl-C in the first few tenths of a second of any command, while Python was importing the CLI,
    printed a traceback: the entry point turns it into the one line and exit code a running command gives."""
    import subprocess
    import sys

    script = ("import builtins\n"
              "real = builtins.__import__\n"
              "def interrupted(name, *args, **kwargs):\n"
              "    if name == 'c1.cli':\n"
              "        raise KeyboardInterrupt\n"
              "    return real(name, *args, **kwargs)\n"
              "builtins.__import__ = interrupted\n"
              "from c1.__main__ import run\n"
              "run()\n")
    got = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert got.returncode == 130 and got.stderr == "c1: interrupted\n", got.stderr
    import tomllib
    from pathlib import Path

    scripts = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["c1"] == "c1.__main__:run"
