"""The checked-in completions and man page are what scripts/gen_docs.py makes from the CLI today."""

from __future__ import annotations

import os
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
    monkeypatch.setenv("C1_HOME", str(tmp_path / "home"))
    assert _bash_complete(script, ["c1", "index", "-c", ""]) == []  # no collection yet: nothing to offer
    for name in ("mail", "notes-2019"):
        (tmp_path / "home" / "collections" / name).mkdir(parents=True)
    assert _bash_complete(script, ["c1", "search", "-c", ""]) == ["mail", "notes-2019"]
    assert set(_bash_complete(script, ["c1", "search", "-c", "m"])) == {"mail"}
    assert set(_bash_complete(script, ["c1", "status", "--collection", ""])) >= {"mail"}


def test_values_are_completed(tmp_path):
    """Only commands and option names were completed: not --policy's values, nor eval's --setting."""
    script = REPO / "completions/c1.bash"
    assert _bash_complete(script, ["c1", "search", "--policy", ""]) == ["auto", "llm", "builtin"]
    assert _bash_complete(script, ["c1", "search", "--policy", "b"]) == ["builtin"]
    assert _bash_complete(script, ["c1", "search", "--reasoning-effort", ""]) == ["low", "medium", "high"]
    assert _bash_complete(script, ["c1", "eval", "hotpotqa", "--setting", ""]) == ["pooled", "per-question"]
    zsh = (REPO / "completions/_c1").read_text()
    assert "--policy[" in zsh and ":(auto llm builtin)'" in zsh and ":_c1_collections'" in zsh
    fish = (REPO / "completions/c1.fish").read_text()
    assert "-l policy -x -a 'auto llm builtin'" in fish and "-l collection -x -a '(__c1_collections)'" in fish


@pytest.mark.parametrize("shell,rel", [("bash", "completions/c1.bash"), ("zsh", "completions/_c1"),
                                       ("fish", "completions/c1.fish")])
def test_c1_completions_prints_the_script(shell, rel):
    """`pip install .` gave no way to the completions: `c1 completions SHELL` prints them."""
    proc = subprocess.run([sys.executable, "-m", "c1", "completions", shell], capture_output=True, text=True,
                          timeout=120, cwd=REPO)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    assert proc.stdout == (REPO / rel).read_text(encoding="utf-8")


def test_c1_completions_of_an_unknown_shell_is_one_line():
    proc = subprocess.run([sys.executable, "-m", "c1", "completions", "tcsh"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.strip().splitlines() == ["c1: error: no completion for 'tcsh': bash, zsh or fish"]


@pytest.mark.skipif(shutil.which("man") is None, reason="man is not installed")
@pytest.mark.slow
def test_the_package_installs_the_man_page_and_the_completions(tmp_path):
    """`pip install .` installed neither: `man c1` found nothing."""
    source = tmp_path / "source"  # a copy: building writes build/ and c1.egg-info beside the sources
    source.mkdir()
    for rel in ("pyproject.toml", "README.md"):
        shutil.copyfile(REPO / rel, source / rel)
    for rel in ("c1", "man", "completions"):
        shutil.copytree(REPO / rel, source / rel, ignore=shutil.ignore_patterns("__pycache__"))
    wheel = tmp_path / "wheel"
    clean = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # pip must not take this checkout for c1
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(wheel),
                    str(source)], check=True, capture_output=True, timeout=600, cwd=tmp_path, env=clean)
    prefix = tmp_path / "prefix"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--ignore-installed",
                    "--prefix", str(prefix), *map(str, wheel.glob("*.whl"))], check=True, capture_output=True,
                   timeout=600, env=clean)
    share = prefix / "share"
    for rel, source in [("man/man1/c1.1", "man/c1.1"), ("bash-completion/completions/c1.bash", "completions/c1.bash"),
                        ("zsh/site-functions/_c1", "completions/_c1"), ("fish/vendor_completions.d/c1.fish",
                                                                          "completions/c1.fish")]:
        assert (share / rel).read_bytes() == (REPO / source).read_bytes(), rel
    env = {**os.environ, "PATH": f"{prefix / 'bin'}:{os.environ['PATH']}"}
    env.pop("MANPATH", None)
    found = subprocess.run(["man", "-w", "c1"], capture_output=True, text=True, env=env, timeout=60)
    assert found.returncode == 0 and found.stdout.strip() == str(share / "man/man1/c1.1"), found.stderr
