"""bench/calibration_fit.py: the answer's calibration is fitted from saved answers and written where c1 reads it."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench import calibration_fit  # noqa: E402
from c1.retrieval import confidence  # noqa: E402


def _rows(params: tuple[float, float, float], n: int = 4000, seed: int = 0) -> list[dict]:
    """Answers of two documents whose gold flags are drawn from ``params``' calibrated probability, saved
    with no calibration (as ``--saved none`` reads them)."""
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        scores = sorted((rng.uniform(0.01, 0.99) for _ in range(2)), reverse=True)
        gold = [rng.random() < confidence.calibrated(s, place, params) for place, s in enumerate(scores)]
        rows.append({"kind": "mail" if i % 2 else "legal", "system": "builtin", "scores": [round(s, 4) for s in scores],
                     "gold_flags": gold})
    return rows


def test_the_fit_recovers_the_map_that_made_the_answers():
    truth = (0.7, -0.9, 1.8)
    data = calibration_fit.examples(_rows(truth), (1.0, 0.0, 0.0))
    slope, bias, first = calibration_fit.fit(data)
    assert slope == pytest.approx(truth[0], abs=0.15)
    assert bias == pytest.approx(truth[1], abs=0.2)
    assert first == pytest.approx(truth[2], abs=0.3)


def test_write_puts_the_fit_where_c1_reads_it(tmp_path, monkeypatch):
    rows = tmp_path / "rows.jsonl"
    rows.write_text("".join(json.dumps(r) + "\n" for r in _rows((0.5, -0.5, 1.0), n=1500)))
    out = tmp_path / "calibration.json"
    got = subprocess.run([sys.executable, "bench/calibration_fit.py", str(rows), "--saved", "none", "--write", "--out", str(out)],
                         cwd=REPO, capture_output=True, text=True)
    assert got.returncode == 0, got.stderr
    written = json.loads(out.read_text())
    assert written["slope"] == pytest.approx(0.5, abs=0.2) and written["first"] > 0
    monkeypatch.setattr(confidence, "CALIBRATION_FILE", out)
    confidence.calibration.cache_clear()
    try:
        assert confidence.calibration() == (written["slope"], written["bias"], written["first"])
        out.write_text("{not json")
        confidence.calibration.cache_clear()
        with pytest.raises(Exception, match="calibration file .* cannot be read"):
            confidence.calibration()
    finally:
        confidence.calibration.cache_clear()
