"""Messages are text, never markup: hostile names through every command's error and warning paths.

Rich reads ``[...]`` as markup: unescaped, ``no[/]such`` raised MarkupError (a traceback, exit 1,
after the indexing itself had succeeded in the warning case) and ``[draft] notes`` or
``pip install 'c1[mcp]'`` printed without their brackets. Error paths run in-process with the CLI
runner (a real process adds nothing to a one-line error); the index warnings run in a real process.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

from conftest import copy_file, invoke_cli

HOSTILE = ["no[/]such", "foo[/x]", "[draft] notes", "w[/i]", "[bold]loud"]


def assert_literal_error(args: list[str], literal: str, code: int = 2) -> str:
    rc, _out, err = invoke_cli(*args)
    assert "Traceback" not in err and "MarkupError" not in err, err
    assert rc == code, (rc, err)
    flat = " ".join(err.split())
    assert literal in flat, f"{literal!r} not printed literally in {err!r}"
    return flat


@pytest.mark.parametrize("name", HOSTILE)
def test_index_missing_path(c1_home, tmp_path, name):
    assert_literal_error(["index", tmp_path / name], f"{tmp_path / name}: no such file or directory")


@pytest.mark.parametrize("name", HOSTILE)
@pytest.mark.parametrize("command", [["search", "question"], ["status"], ["rm"], ["index", "."], ["mcp"]])
def test_bad_collection_name_is_printed_as_given(c1_home, name, command):
    assert_literal_error([*command, "-c", name], f"{name!r} is not a collection name")


@pytest.mark.parametrize("name", HOSTILE)
def test_eval_missing_dataset(c1_home, tmp_path, name):
    assert_literal_error(["eval", "jsonl", tmp_path / name], str(tmp_path / name))


@pytest.mark.parametrize("name", HOSTILE)
def test_train_collect_missing_tasks(c1_home, tmp_path, name):
    assert_literal_error(["train", "collect", "--tasks", tmp_path / name, "--out", tmp_path / "o.jsonl",
                          "--base-url", "http://127.0.0.1:9/v1"], str(tmp_path / name))


@pytest.mark.parametrize("name", HOSTILE)
def test_serve_missing_model_folder(c1_home, tmp_path, name, monkeypatch):
    monkeypatch.setenv("C1_CACHE_DIR", str(tmp_path / "cache"))
    assert_literal_error(["serve", "--vllm-model", tmp_path / name, "--no-api"], f"model folder {tmp_path / name} does not exist")


def test_search_save_trajectory_folder(c1_home, tmp_path):
    target = tmp_path / "w[/i]" / "run.json"
    assert_literal_error(["search", "q", "--save-trajectory", target], str(target))


def test_install_hints_keep_their_brackets(c1_home, tmp_path, monkeypatch):
    for name in ["mcp", *(m for m in sys.modules if m.startswith("mcp."))]:  # the SDK "not installed":
        monkeypatch.setitem(sys.modules, name, None)  # importing it (or any part already loaded) raises ImportError
    assert_literal_error(["mcp"], "pip install 'c1[mcp]'")
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "trl" else real(name, *a))
    (tmp_path / "t.jsonl").write_text("{}\n")
    assert_literal_error(["train", "sft", "--trajectories", tmp_path / "t.jsonl", "--model", tmp_path,
                          "--out", tmp_path / "out"], "pip install 'c1[train]'")
    monkeypatch.setenv("C1_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr("c1.model.plan.find_vllm", lambda override=None: None)
    assert_literal_error(["serve", "--no-api"], "pip install 'c1[gpu]'")


def test_status_of_a_folder_with_a_hostile_name(c1_home):
    (c1_home / "collections" / "[draft] notes").mkdir(parents=True)
    rc, out, err = invoke_cli("status")
    assert rc == 1 and "Traceback" not in err
    assert out.startswith("[draft] notes\tBROKEN\t")
    assert "[draft] notes" in err


@pytest.mark.slow
def test_index_warnings_about_hostile_paths(c1_home, run_c1, tmp_path, shared_data):
    """The run succeeds, then warns about files under folders named like markup: all printed as named."""
    folder = tmp_path / "corpus"
    (folder / "w[/i]").mkdir(parents=True)
    (folder / "w[/i]" / "latin1.txt").write_bytes("Caf\u00e9 r\u00e9sum\u00e9 of the trader.\n".encode("cp1252"))
    (folder / "[draft] notes").mkdir()
    (folder / "[draft] notes" / "empty.txt").write_bytes(b"")
    rows = [{"id": "[/x]", "title": "t", "text": "Gas pipeline report."}, {"id": "[/x]", "title": "t2", "text": "Again."}]
    (folder / "ids.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    copy_file(shared_data / "pdf/pdfplumber_tests/password-example.pdf", folder / "[bold]loud" / "locked.pdf")

    result = run_c1("index", folder)
    assert result.rc == 0, result.stderr
    assert "Traceback" not in result.stderr
    flat = " ".join(result.stderr.split())
    assert f"{folder / 'w[/i]' / 'latin1.txt'}:" in flat
    assert f"{folder / '[draft] notes' / 'empty.txt'}:" in flat
    assert f"{folder / '[bold]loud' / 'locked.pdf'}:" in flat
    assert "duplicate id '[/x]'" in flat

    search = run_c1("search", "gas pipeline report")
    assert search.rc == 0 and "Traceback" not in search.stderr


@pytest.mark.slow
def test_a_path_with_a_newline_stays_on_its_result_line(c1_home, run_c1, tmp_path):
    """A file named with a newline split its result line in two (and a skipped one its warning line)."""
    folder = tmp_path / "corpus"
    folder.mkdir()
    (folder / "two\nlines.md").write_text("# Lighthouse\n\nThe lighthouse keeper logs the fog horn hours.\n")
    (folder / "empty\nnote.txt").write_bytes(b"")
    index = run_c1("index", folder)
    assert index.rc == 0, index.stderr
    assert f"{folder}/empty\\nnote.txt: empty file" in index.stderr
    found = run_c1("search", "lighthouse keeper fog horn")
    assert found.rc == 0, found.stderr
    first = found.stdout.splitlines()[0]
    assert first.startswith(" 1. ") and f"  {folder}/two\\nlines.md  score " in first, first  # one line, escaped
    assert run_c1("search", "lighthouse keeper fog horn", "--json").json()["documents"][0]["path"] == str(
        folder / "two\nlines.md"), "JSON keeps the real name"


@pytest.mark.slow
def test_the_policy_note_is_said_once_per_home(c1_home, run_c1, tmp_path):
    """Every search printed "using the built-in policy..."; only -q silenced it, which hides the live view too."""
    folder = tmp_path / "corpus"
    folder.mkdir()
    (folder / "a.md").write_text("# Lighthouse\n\nThe lighthouse keeper logs the fog horn hours.\n")
    assert run_c1("index", folder, "-q").rc == 0
    first = run_c1("search", "lighthouse keeper")
    assert first.rc == 0 and "using the built-in policy" in first.stderr
    again = run_c1("search", "fog horn hours")
    assert again.rc == 0 and again.stdout.startswith(" 1. ") and "built-in policy" not in again.stderr, again.stderr
    as_json = run_c1("search", "fog horn hours", "--json")
    assert "using the built-in policy" in as_json.stderr and "built-in policy" in as_json.json()["stats"]["policy_note"]
    other = {"C1_HOME": str(tmp_path / "other-home")}
    assert run_c1("index", folder, "-q", env=other).rc == 0
    assert "using the built-in policy" in run_c1("search", "fog horn hours", env=other).stderr, "once per home"
