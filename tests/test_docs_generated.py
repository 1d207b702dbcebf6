"""The checked-in completions and man page are what scripts/gen_docs.py makes from the CLI today."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
FILES = ["completions/c1.bash", "completions/_c1", "completions/c1.fish", "man/c1.1"]
FIX = "run `python scripts/gen_docs.py` and commit the result"


@pytest.fixture(scope="module")
def generated(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("gen-docs")
    proc = subprocess.run([sys.executable, str(REPO / "scripts" / "gen_docs.py"), "--out", str(out)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return out


@pytest.mark.parametrize("rel", FILES)
def test_checked_in_file_is_up_to_date(generated: Path, rel: str):
    fresh = (generated / rel).read_text(encoding="utf-8")
    checked_in = REPO / rel
    assert checked_in.exists(), f"{rel} is missing: {FIX}"
    assert checked_in.read_text(encoding="utf-8") == fresh, f"{rel} is out of date with the CLI: {FIX}"


def test_generation_is_deterministic(generated: Path, tmp_path: Path):
    subprocess.run([sys.executable, str(REPO / "scripts" / "gen_docs.py"), "--out", str(tmp_path)],
                   check=True, capture_output=True, timeout=120)
    for rel in FILES:
        assert (tmp_path / rel).read_bytes() == (generated / rel).read_bytes(), rel


def test_generated_files_cover_every_command(generated: Path):
    from typer.main import get_command

    from c1.cli import app

    commands = list(get_command(app).commands)
    assert {"index", "status", "search", "serve", "train", "eval"} <= set(commands)
    man = (generated / "man/c1.1").read_text()
    for section in ("NAME", "SYNOPSIS", "DESCRIPTION", "COMMANDS", "EXIT STATUS", "ENVIRONMENT", "FILES"):
        assert f".SH {section}" in man, section
    for code in ("0", "1", "2", "130"):
        assert f".TP\n\\fB{code}\\fR\n" in man, f"exit status {code}"
    for var in ("C1_HOME", "C1_CONFIG", "C1_COLLECTION"):
        assert var in man, var
    for name in commands:
        assert f'.SS "c1 {name} ' in man, name
        assert f"-a {name} " in (generated / "completions/c1.fish").read_text(), name
        assert f"'{name}:" in (generated / "completions/_c1").read_text(), name
        assert f"        {name})" in (generated / "completions/c1.bash").read_text(), name
    text = "".join((generated / rel).read_text() for rel in FILES)
    assert all(ord(ch) < 128 for ch in text), "keep the generated files ASCII"


@pytest.mark.skipif(shutil.which("groff") is None, reason="groff is not installed")
def test_man_page_renders_without_warnings(generated: Path):
    proc = subprocess.run(["groff", "-man", "-Tutf8", "-ww", "-z", str(generated / "man/c1.1")],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr


def _bash_complete(script: Path, words: list[str]) -> list[str]:
    """Run the bash completion function as bash would for ``words`` (the last one is being typed)."""
    line = " ".join(f"'{w}'" for w in words)
    program = (f"source '{script}'; COMP_WORDS=({line}); COMP_CWORD={len(words) - 1}; "
               "_c1; printf '%s\\n' \"${COMPREPLY[@]}\"")
    proc = subprocess.run(["bash", "--norc", "--noprofile", "-c", program],
                          capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0, proc.stderr
    return [w for w in proc.stdout.splitlines() if w]


def test_bash_completion_works(generated: Path, tmp_path: Path, monkeypatch):
    script = REPO / "completions/c1.bash"
    assert subprocess.run(["bash", "-n", str(script)], capture_output=True).returncode == 0
    assert set(_bash_complete(script, ["c1", ""])) >= {"index", "status", "search", "serve", "train", "eval"}
    assert _bash_complete(script, ["c1", "st"]) == ["status"]
    assert "--collection" in _bash_complete(script, ["c1", "index", "--co"])
    assert "--json" in _bash_complete(script, ["c1", "status", "--"])
    (tmp_path / "docs").mkdir()
    (tmp_path / "notes.txt").write_text("x")
    monkeypatch.chdir(tmp_path)
    assert set(_bash_complete(script, ["c1", "index", ""])) == {"docs", "notes.txt"}
    assert _bash_complete(script, ["c1", "index", "--home", ""]) == ["docs"]
    assert _bash_complete(script, ["c1", "index", "-c", ""]) == []  # a collection name: nothing to offer
