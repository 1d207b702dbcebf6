"""bench/constants.py counts every number set by hand that it is meant to count (issue 30)."""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench import constants  # noqa: E402


def test_every_kind_of_hand_set_number_is_counted_and_the_neutral_ones_are_not(tmp_path):
    src = tmp_path / "knobs.py"
    src.write_text(
        "K1, B = 1.2, 0.75\n"          # two numbers bound at once
        "FLOOR = 0.02\n"
        "PAIR = (0.25, 0.55)\n"
        "NONE = 0\n"                   # 0 is no number set
        "_private = 3\n"
        "CACHE_SIZE = 512\n"           # an engineering bound, not a ranking number
        "NAMES = ('a', 'b')\n"
        "class Knobs:\n"
        "    depth: int = 4\n"
        "    weight: float = 1.0\n"    # the neutral weight
        "def pick(k=5, n=1, cache_texts=100):\n"
        "    return k\n")
    assert sorted(constants.numbers(src)) == sorted(["K1", "B", "FLOOR", "PAIR", "depth", "pick(k=)"])
    assert "CACHE_SIZE" in constants.numbers(src, every=True)
