"""Bootstrap intervals (c1/eval/stats.py) against cases computed by hand.

A resampled mean of n 0/1 values with k ones is Binomial(n, k/n)/n, so the percentile interval's
ends are the binomial's 2.5 % and 97.5 % quantiles, up to the noise of 2000 resamples.
"""

from __future__ import annotations

import math

import pytest

from c1.eval.stats import excludes_zero, half_width, interval, pair, paired_interval, smallest_gain


def test_constant_values_have_a_zero_width_interval():
    assert interval([1.0] * 30) == (1.0, 1.0)
    assert interval([0.0] * 7) == (0.0, 0.0)


def test_two_questions_one_right():
    # resampled means: 0 (1/4), 0.5 (1/2), 1 (1/4): both tails hold more than 2.5 %
    assert interval([0, 1]) == (0.0, 1.0)


def test_one_in_a_hundred():
    # Binomial(100, 0.01): P(0) = 0.366 > 0.025, P(<= 2) = 0.921 < 0.975 <= P(<= 3) = 0.982
    assert interval([1] + [0] * 99) == (0.0, 0.03)


def test_ten_in_a_hundred():
    # Binomial(100, 0.1): P(<= 4) = 0.024, P(<= 5) = 0.058; P(<= 15) = 0.960, P(<= 16) = 0.979
    lo, hi = interval([1] * 10 + [0] * 90)
    assert lo in (0.04, 0.05)
    assert hi in (0.16, 0.17)


def test_the_same_seed_gives_the_same_interval_and_another_seed_may_not():
    values = [1] * 37 + [0] * 63
    assert interval(values) == interval(values)
    assert interval(values, seed=1) == interval(values, seed=1)
    assert len({interval(values, seed=s) for s in range(6)}) > 1


def test_a_proportion_near_one_half_matches_the_normal_approximation():
    lo, hi = interval([1, 0] * 200)  # p = 0.5, n = 400: ± 1.96 · 0.025 = ± 0.049
    assert lo == pytest.approx(0.451, abs=0.01)
    assert hi == pytest.approx(0.549, abs=0.01)


def test_paired_difference_is_the_bootstrap_of_per_question_differences():
    base = [1, 0] * 50
    better = list(base)
    better[1] = 1  # one question of 100 gained, none lost
    diff, lo, hi = paired_interval(better, base)
    assert diff == pytest.approx(0.01)
    assert (lo, hi) == (0.0, 0.03)
    assert not excludes_zero(lo, hi)
    # unpaired, each figure alone spans about ± 0.1
    a_lo, a_hi = interval(better)
    assert a_hi - a_lo > 0.15


def test_paired_difference_that_excludes_zero():
    base = [0] * 100
    better = [1] * 10 + [0] * 90
    diff, lo, hi = paired_interval(better, base)
    assert diff == pytest.approx(0.10)
    assert lo in (0.04, 0.05) and hi in (0.16, 0.17)
    assert excludes_zero(lo, hi)
    d2, lo2, hi2 = paired_interval(base, better)
    assert d2 == pytest.approx(-0.10) and excludes_zero(lo2, hi2) and hi2 < 0


def test_a_constant_shift_has_a_zero_width_paired_interval():
    a = [0.2, 0.9, 0.4, 0.7]
    assert paired_interval([x + 0.5 for x in a], a) == pytest.approx((0.5, 0.5, 0.5))


def test_paired_values_must_be_the_same_length():
    with pytest.raises(ValueError, match="differ in length"):
        paired_interval([1, 0], [1])


def test_no_values_give_nan():
    lo, hi = interval([])
    assert math.isnan(lo) and math.isnan(hi)


def test_excludes_zero():
    assert excludes_zero(0.01, 0.2) and excludes_zero(-0.3, -0.01)
    assert not excludes_zero(0.0, 0.1) and not excludes_zero(-0.1, 0.1)


def test_half_width_by_hand():
    assert half_width(0.5, 100) == pytest.approx(1.959964 * 0.05, rel=1e-5)
    assert half_width(0.9, 100) == pytest.approx(1.959964 * 0.03, rel=1e-5)
    assert half_width(1.0, 30) == 0.0
    assert math.isnan(half_width(0.5, 0))


def test_pair_keeps_the_shared_questions_in_the_first_runs_order():
    ids, a, b = pair({"q3": 1.0, "q1": 0.0, "q2": 1.0}, {"q1": 1.0, "q3": 1.0, "q9": 0.0})
    assert ids == ["q3", "q1"]
    assert a == [1.0, 0.0] and b == [1.0, 1.0]


def test_smallest_gain_by_hand():
    # no loss: the interval's low end is 0 while P(a resample draws no gained question) = (1 - g/n)^n
    # exceeds 2.5 %: n = 100, g = 3: 0.97^100 = 0.048; g = 4: 0.96^100 = 0.017
    assert smallest_gain(100) == 4
    assert smallest_gain(30) == 4  # 0.9^30 = 0.042; (26/30)^30 = 0.014
    with_losses = smallest_gain(100, lost=3)
    assert with_losses is not None and with_losses > 4 + 3
    assert smallest_gain(3, lost=2) is None
