"""Issue 33's manners: results on stdout, one-line errors, what the README promises, output that fits 80 columns."""

from __future__ import annotations

import json
import io
import os
from pathlib import Path

import pytest


def _tiny_jsonl_dataset(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    docs = [("d0", "Apples", "Apples are red fruit grown in orchards."),
            ("d1", "Rust", "Rust is a systems programming language."),
            ("d2", "Nile", "The Nile is a river in Africa.")]
    (root / "corpus.jsonl").write_text("".join(json.dumps({"id": i, "title": t, "text": x}) + "\n" for i, t, x in docs))
    questions = [("q1", "Which river is in Africa?", "d2"), ("q2", "What language is Rust?", "d1")]
    (root / "queries.jsonl").write_text(
        "".join(json.dumps({"id": i, "question": q, "gold_ids": [g]}) + "\n" for i, q, g in questions))
    return root


# --- c1 eval: the table is the output ------------------------------------------------------------


@pytest.mark.slow
def test_eval_prints_its_tables_on_stdout(invoke_c1, tmp_path):
    data = _tiny_jsonl_dataset(tmp_path / "ds")
    res = invoke_c1("eval", "jsonl", data, "--systems", "bm25", "--out", tmp_path / "run")
    assert res.rc == 0, res.stderr
    assert "quality" in res.stdout and "bm25" in res.stdout and "p50 s" in res.stdout
    assert "quality" not in res.stderr and "result(s) computed" in res.stderr  # progress stays on stderr
    # --json unchanged: one JSON object on stdout, the tables on stderr
    res = invoke_c1("eval", "jsonl", data, "--systems", "bm25", "--out", tmp_path / "run", "--json")
    assert res.rc == 0, res.stderr
    assert res.json()["systems"][0]["system"] == "bm25"
    assert "quality" in res.stderr


def test_eval_compare_prints_its_table_on_stdout(invoke_c1, tmp_path):
    for name, f1 in (("a", 0.5), ("b", 0.25)):
        s = {"dataset": "hotpotqa", "setting": "pooled", "k": 5, "questions": 4, "config": {"data": "x"},
             "systems": [{"system": "bm25", "kind": "bm25", "n": 4, "f1": f1}]}
        (tmp_path / f"{name}.json").write_text(json.dumps(s))
    res = invoke_c1("eval", "compare", tmp_path / "a.json", tmp_path / "b.json")
    assert res.rc == 0, res.stderr
    assert "F1" in res.stdout and "−0.250" in res.stdout
    assert "0.250" not in res.stderr


# --- the README's one install reads every format it lists -----------------------------------------


def _core_distributions() -> set[str]:
    import re
    import tomllib

    project = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text())["project"]
    return {re.split(r"[\s<>=!~\[;]", dep, maxsplit=1)[0].lower() for dep in project["dependencies"]}


def test_the_core_install_reads_every_format_the_readme_lists():
    """Each extension of the README's `c1 index` paragraph (scanned pages aside: `c1[ocr]`) is read with
    libraries of the core dependencies, none from an extra."""
    import importlib.metadata
    import re

    from c1.index.loaders.registry import formats

    readme = (Path(__file__).parents[1] / "README.md").read_text()
    listed = re.search(r"^Reads (.*?)scanned pages", readme, re.M | re.S).group(1)
    extensions = set(re.findall(r"\.[a-z]+\b", listed))
    assert {".pdf", ".docx", ".pptx", ".epub", ".xlsx"} <= extensions, listed
    by_extension = {ext: fmt for fmt in formats().values() for ext in fmt.extensions}
    core, providers = _core_distributions(), importlib.metadata.packages_distributions()
    for ext in sorted(extensions):
        for module in by_extension[ext].modules:
            dists = {d.lower() for d in providers.get(module, [])}
            assert dists & core, f"{ext} needs {module} ({dists or 'not installed'}), which the core install lacks"


# --- the README's examples never mix c1's own manual into the user's default collection -----------


def _readme_commands(name: str, blocks: slice = slice(None)) -> list[list[str]]:
    """Every ``c1 NAME ...`` of the README's bash blocks, as words (one per ``&&``/``|``/``;`` segment)."""
    import re
    import shlex

    readme = (Path(__file__).parents[1] / "README.md").read_text()
    commands = []
    for block in re.findall(r"```bash\n(.*?)```", readme, re.S)[blocks]:
        for line in block.splitlines():
            for segment in re.split(r"&&|\|\||\||;", line.split("  #")[0]):
                words = shlex.split(segment, comments=True)
                if words[:2] == ["c1", name]:
                    commands.append(words[2:])
    return commands


def _collection(words: list[str]) -> str:
    for flag in ("--collection", "-c"):
        if flag in words:
            return words[words.index(flag) + 1]
    return "default"


def test_readme_never_indexes_the_checkout_into_the_default_collection():
    root = Path(__file__).parents[1]
    indexed = _readme_commands("index")
    assert indexed, "no `c1 index` in the README"
    for words in indexed:
        paths = [w for w in words if not w.startswith("-") and w != _collection(words)]
        own = [p for p in paths if not p.startswith(("~", "/")) and (root / p).exists()]
        assert not own or _collection(words) != "default", f"`c1 index {' '.join(words)}` puts {own} of the checkout into the default collection"
    # the install line's first search asks the collection it has just made
    (first_index,), (first_search,) = _readme_commands("index", slice(1)), _readme_commands("search", slice(1))
    assert _collection(first_search) == _collection(first_index)


# --- a model server named for the command must answer --------------------------------------------


def _closed_port_url() -> str:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


@pytest.fixture
def keyword_collection(invoke_c1, tmp_path):
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "nile.txt").write_text("The Nile is a river in Africa. It flows north into the Mediterranean.\n")
    res = invoke_c1("index", folder, "--keywords-only", "-q")
    assert res.rc == 0, res.stderr
    return folder


def test_a_named_base_url_that_does_not_answer_is_an_error(invoke_c1, keyword_collection, tmp_path, monkeypatch):
    url = _closed_port_url()
    res = invoke_c1("search", "which river is in Africa?", "--base-url", url)
    res.assert_one_line_error(2, url, "unreachable")
    monkeypatch.setenv("C1_BASE_URLS", url)  # the environment names it for this command too
    invoke_c1("search", "which river is in Africa?").assert_one_line_error(2, url)
    monkeypatch.delenv("C1_BASE_URLS")
    # asked for: --policy auto falls back, saying so; a config file's server is a standing default and falls back too
    res = invoke_c1("eval", "jsonl", _tiny_jsonl_dataset(tmp_path / "ds"), "--base-url", url, "--out", tmp_path / "run")
    res.assert_one_line_error(2, url, "unreachable")  # eval's default system is the named server's too
    config = tmp_path / "xdg-config" / "c1" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    for args, config_text in ((("--base-url", url, "--policy", "auto"), ""), ((), f'base_urls = ["{url}"]\n')):
        config.write_text(config_text)
        res = invoke_c1("search", "which river is in Africa?", *args)
        assert "is the server running" not in res.stderr, res.stderr
        if res.rc in (0, 1):  # the fallback ran: it said so
            assert "did not answer" in res.stderr and "using the built-in policy" in res.stderr, res.stderr


# --- the model cache honours XDG_CACHE_HOME ------------------------------------------------------


def test_the_model_cache_is_under_xdg_cache_home(invoke_c1, tmp_path, monkeypatch):
    """`c1 serve` keeps converted checkpoints and vLLM's log under $XDG_CACHE_HOME/c1; $C1_CACHE_DIR wins."""
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text('{"model_type": "gpt_oss"}')
    monkeypatch.delenv("C1_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg-cache"))

    def log_path() -> Path:
        res = invoke_c1("serve", "--dry-run", "--json", "--vllm-model", model, "--no-api")
        return Path(res.json()["log_path"])

    assert log_path().is_relative_to(tmp_path / "xdg-cache" / "c1")
    monkeypatch.setenv("C1_CACHE_DIR", str(tmp_path / "mine"))
    assert log_path().is_relative_to(tmp_path / "mine")
    monkeypatch.delenv("C1_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/cache")  # the XDG spec: ignored
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert log_path().is_relative_to(tmp_path / "home" / ".cache" / "c1")


# --- shell completions know the --embedder values ------------------------------------------------


def test_completions_offer_the_embedder_names(tmp_path):
    """bash completes `c1 index --embedder <TAB>` with the built-in embedders; zsh and fish list them too."""
    import subprocess

    from c1.cli import app
    from c1.manual.generate import completion_script
    from c1.store.embedders import ALIASES, BUILTIN

    repo = Path(__file__).parents[1]
    script = repo / "completions" / "c1.bash"  # the checked-in one (test_docs_generated: it is the generated one)
    program = (f"source '{script}'; COMP_WORDS=(c1 index --embedder ''); COMP_CWORD=3; _c1; "
               "printf '%s\\n' \"${COMPREPLY[@]}\"")
    proc = subprocess.run(["bash", "--norc", "--noprofile", "-c", program], capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0, proc.stderr
    offered = set(proc.stdout.split())
    assert {"bge", "minilm"} <= offered and set(BUILTIN) <= offered and offered <= {*ALIASES, *BUILTIN}
    for shell in ("zsh", "fish"):
        text = completion_script(shell, app)
        line = next(line for line in text.splitlines() if "embedder" in line and "minilm" in line)
        assert "bge" in line, (shell, line)


# --- usage errors in one line, with the hint ----------------------------------------------------


@pytest.mark.parametrize(("args", "fragments"), [
    (("search", "--foo", "q"), ("no such option", "--foo", "try 'c1 search --help'")),
    (("frobnicate",), ("no such command", "frobnicate", "try 'c1 --help'")),
    (("index",), ("missing argument", "paths", "try 'c1 index --help'")),
    (("search", "q", "-k", "abc"), ("--max-docs", "try 'c1 search --help'")),
    (("train", "sft"), ("missing option", "--trajectories", "try 'c1 train sft --help'")),
])
def test_usage_errors_are_one_line_with_the_hint(run_c1, args, fragments):
    res = run_c1(*args)
    line = res.assert_one_line_error(2, *fragments)
    assert line.startswith("c1: error: ") and "Usage:" not in res.stderr and res.stdout == ""


def test_a_group_without_its_command_still_shows_its_help(run_c1):
    res = run_c1("eval")
    assert "hotpotqa" in res.stdout + res.stderr and "Usage:" in res.stdout + res.stderr


# --- the live view's panels at 80 columns -------------------------------------------------------


def _panel_run(run: int):
    from c1.agent import events as ev

    ref = ev.ChunkRef("doc0abc_3", "doc0abc", "Annual Report on Form 10-K for the fiscal year ended December 31, 2017",
                      1.34, 113, 50)
    return [
        ev.RunStarted(run, "How many employees did Coca-Cola have in 2017?", "builtin", None, 32768),
        ev.TurnStarted(run, 1, 12345, 32768),
        ev.ToolCalled(run, 1, "c1", "search_corpus", {"query": "How many employees did Coca-Cola have in 2017?"},
                      "search_corpus"),
        ev.ToolResult(run, 1, "c1", "search_corpus", [ref], tool="search_corpus"),
        ev.ToolCalled(run, 1, "c2", "grep_corpus", {"pattern": "(("}, "grep_corpus"),
        ev.ToolResult(run, 1, "c2", "grep_corpus", [], "invalid regular expression '((': missing )", tool="grep_corpus"),
        ev.RunError(run, "model server http://127.0.0.1:8001/v1 answered 503: Service Unavailable, try later"),
        ev.Finished(run, [{"id": "doc0abc"}], {"turns": 12, "tool_calls": 31, "pruned": 4, "seconds": 10.25}, "answer"),
    ]


def _panel_texts(text: str, columns: int) -> list[str]:
    """The words inside each column of panels, in reading order (borders taken off)."""
    out = [[] for _ in range(columns)]
    for line in text.splitlines():
        cells = line.split("│")[1::2]
        for i, cell in enumerate(cells[:columns]):
            out[i].append(cell.strip())
    return [" ".join(" ".join(col).split()) for col in out]


@pytest.mark.parametrize("parallel", [2, 4])
def test_the_live_view_panels_cut_nothing_that_matters_at_80_columns(parallel):
    from rich.console import Console

    from c1.terminal.live_view import LiveView

    console = Console(record=True, width=80, force_terminal=False, color_system=None, file=io.StringIO())
    view = LiveView(console, parallel=parallel)
    for run in range(parallel):
        for e in _panel_run(run):
            view(e)
    text = console.export_text()
    assert all(len(line) <= 80 for line in text.splitlines()), text
    for column in _panel_texts(text, 2):
        for whole in ("12,345/32,768", "→ 1 0.89", "✗ invalid regular expression '((': missing )",
                      "error: model server http://127.0.0.1:8001/v1 answered 503: Service Unavailable, try later",
                      "done (answer): 1 documents", "10.25s", "12 turns", "31 tool calls", "4 pruned"):
            assert column.count(whole) == parallel // 2, (whole, column)


# --- the index progress counts the chunks as they are written --------------------------------------


@pytest.mark.slow
def test_the_index_progress_counts_chunks_as_they_are_written(c1_home, tmp_path, monkeypatch):
    """The reading line said "0 chunks" all along (it showed the chunks embedded, none before the
    vectors): it shows the chunks committed so far, growing file by file, and no count before the first."""
    import dataclasses
    import re

    import c1.index.indexer as ix
    from c1.commands.index_view import progress_lines
    from c1.config import load_settings
    from c1.store.embedders import make_embedder

    folder = tmp_path / "notes"
    folder.mkdir()
    for i in range(4):
        (folder / f"note {i}.md").write_text(f"# Note {i}\n\n" + f"Paragraph {i} about rivers and deltas. " * (40 * (i + 1)))
    monkeypatch.setattr(ix, "BATCH_CHUNKS", 1)  # a commit per file
    states = []
    report = ix.Indexer(load_settings(), make_embedder(), progress=lambda p: states.append(dataclasses.replace(p)),
                        embed=False).run([str(folder)])
    lines = [progress_lines(s, 30.0, 80)[0] for s in states if s.phase == "reading" and s.files_total]
    assert lines and report.chunks > 4
    assert not any(" 0 chunks" in line for line in lines), lines
    counts = [int(m.group(1).replace(",", "")) for line in lines if (m := re.search(r"([\d,]+) chunks", line))]
    assert len(set(counts)) == 4 and counts == sorted(counts) and counts[-1] == report.chunks, (counts, lines)
