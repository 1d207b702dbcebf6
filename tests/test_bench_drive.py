"""bench/drive.py (issue 33's speed bench): its folder and its flags; no timing here."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench import drive_folder  # noqa: E402
from bench.textpool import shared_data  # noqa: E402


def test_help_and_bad_runs():
    help_ = subprocess.run([sys.executable, "bench/drive.py", "--help"], cwd=REPO, capture_output=True, text=True)
    assert help_.returncode == 0 and "--parallel 4" in help_.stdout
    bad = subprocess.run([sys.executable, "bench/drive.py", "--runs", "0"], cwd=REPO, capture_output=True, text=True)
    assert bad.returncode == 2 and "at least 1" in bad.stderr


@pytest.mark.skipif(not (shared_data() / "sec").is_dir(), reason="no shared data")
def test_folder_holds_every_kind_and_both_links(tmp_path):
    folder = drive_folder.build(tmp_path / "folder")
    assert len(list((folder / "mail" / "enron" / "cur").iterdir())) == drive_folder.MAILS
    assert len(list((folder / "filings").glob("*.pdf"))) == 3 and len(list((folder / "pdf").glob("*.pdf"))) == 12
    inside, outside = folder / "notes" / "the NDA (link).txt", folder / "outside legal"
    assert inside.is_symlink() and inside.resolve().parent == (folder / "contracts").resolve()
    assert outside.is_symlink() and folder.resolve() not in outside.resolve().parents
    names = [p.name for p in folder.rglob("*")]
    assert any(" " in n and "[" in n for n in names) and any("保密" in n for n in names)
    from openpyxl import load_workbook

    rows = list(load_workbook(folder / "sheets" / "budget 2024 [final].xlsx").active.values)
    assert ("Q2", 75000, 75000, 80000) in rows  # equal neighbouring cells, as in the row
    before = os.stat(folder / "filings" / "3M_2022_10K.pdf").st_mtime_ns
    assert drive_folder.build(folder) == folder  # built once, then reused
    assert os.stat(folder / "filings" / "3M_2022_10K.pdf").st_mtime_ns == before


def test_two_saved_runs_are_compared_question_by_question(tmp_path, monkeypatch, capsys):
    """The warm median of one run moves a great deal between runs (its questions fall in two groups); the
    ratio of the same question's times does not: `--compare` prints it for each paired figure."""
    import json

    from bench import drive

    saved = tmp_path / "drive.jsonl"
    before = {"time": "T1", "commit": "aaa", "warm": [1.0, 2.0, 4.0], "again": [1.0], "par4": [2.0, 2.0]}
    after = {"time": "T2", "commit": "bbb", "warm": [0.5, 1.0, 4.0], "again": [0.25], "par4": [1.0, 3.0]}
    saved.write_text("".join(json.dumps(r) + "\n" for r in (before, after)))
    monkeypatch.setattr(drive, "SAVED", saved)
    assert drive.main(["--compare", "T1", "T2"]) == 0
    out = capsys.readouterr().out
    assert "T2 (bbb) over T1 (aaa)" in out
    assert "warm            n  3  median 0.500" in out and "again           n  1  median 0.250" in out
    assert "par4            n  2  median 1.000" in out and "no_daemon" not in out
    with pytest.raises(SystemExit, match="no saved run at T3"):
        drive.main(["--compare", "T1", "T3"])

