"""The statistics layer and the one verdict rule, on constructed data whose answer is known."""
import math

import numpy as np
import pytest

from repro.claims import FAILS, HOLDS, INCONCLUSIVE, Claim, claims_frame, verdict
from repro.evaluate.stats import bh, paired_ratio, paired_test, ppl_ci, speed_ratio


@pytest.mark.parametrize("ci, threshold, side, expected", [
    ((0.80, 0.95), 1.0, "below", HOLDS),
    ((1.05, 1.30), 1.0, "below", FAILS),
    ((0.90, 1.10), 1.0, "below", INCONCLUSIVE),
    ((0.90, 1.00), 1.0, "below", INCONCLUSIVE),   # touching the threshold is not decisive
    ((1.0, 1.0), 1.0, "below", FAILS),            # exact and equal: "better" is not met by "identical"
    ((0.5, 0.5), 1.0, "below", HOLDS),            # exact quantity below the threshold
    ((0.064, 0.064), 0.08, "above", FAILS),       # 6.4% saved vs "at least 8%"
    ((1.10, 1.25), 1.0, "above", HOLDS),
    ((0.90, 0.99), 1.0, "above", FAILS),
    (None, 1.0, "below", INCONCLUSIVE),
    ((float("nan"), 1.0), 1.0, "below", INCONCLUSIVE),
])
def test_verdict_rule(ci, threshold, side, expected):
    assert verdict(ci, threshold, side) == expected


def test_verdict_rejects_unknown_side():
    with pytest.raises(ValueError, match="side"):
        verdict((0, 1), 1.0, "sideways")


def test_paired_beats_unpaired_when_windows_share_their_difficulty():
    """A is better than B by 0.05 nats on every window, but windows differ by +-1 nat: the unpaired
    perplexity CIs overlap (inconclusive by eye), the paired ratio is decisive: a holds."""
    rng = np.random.default_rng(0)
    difficulty = rng.normal(3.0, 1.0, size=16)
    a = difficulty - 0.05 + rng.normal(0, 0.005, size=16)
    b = difficulty
    ca, cb = ppl_ci(a), ppl_ci(b)
    assert ca[1] > cb[0], "unpaired intervals overlap"
    p = paired_ratio(a, b)
    assert p.estimate == pytest.approx(math.exp(a.mean() - b.mean()))
    assert p.ci[1] < 1 and p.n_better == 16 and p.n_worse == 0
    assert verdict(p.ci) == HOLDS


def test_paired_ratio_no_difference_is_inconclusive():
    rng = np.random.default_rng(1)
    base = rng.normal(3, 1, 32)
    noise = rng.normal(0, 0.1, 32)
    p = paired_ratio(base + noise, base - noise)
    assert p.ci[0] < 1 < p.ci[1] and verdict(p.ci) == INCONCLUSIVE


def test_identical_selection_gives_an_exact_ratio_of_one():
    x = [3.0, 2.5, 4.0]
    p = paired_ratio(x, x)
    assert p.estimate == 1.0 and p.ci == (1.0, 1.0) and verdict(p.ci) == FAILS


def test_paired_ratio_needs_equal_lengths():
    with pytest.raises(ValueError, match="equal-length"):
        paired_ratio([1.0, 2.0], [1.0])


def test_speed_ratio_pairs_rounds():
    """The variant is 10% faster in every round while rounds drift by 2x: paired speed-up ~1.1."""
    drift = np.array([1.0, 1.5, 2.0, 1.2, 1.8, 1.1, 1.6])
    base = 0.100 * drift
    variant = base / 1.1 * (1 + np.array([0.01, -0.01, 0.0, 0.005, -0.005, 0.002, -0.002]))
    s = speed_ratio(base, variant)
    assert s.estimate == pytest.approx(1.1, rel=0.02)
    assert 1.0 < s.ci[0] <= s.ci[1] < 1.2 and s.n_better == 7
    assert verdict(s.ci, 1.0, "above") == HOLDS
    assert verdict(s.ci, 1.035, "below") == FAILS


def test_paired_test_and_bh():
    x = [1.0, 2.0, 3.0, 4.0, 5.0]
    y = [1.5, 2.6, 3.4, 4.7, 5.2]
    assert paired_test(x, y, "wilcoxon") == pytest.approx(0.0625)  # exact: all 5 differences one sign, 2/32
    assert paired_test(x, y, "ttest") < 0.01
    # auto: the t-test below 6 pairs (Wilcoxon cannot reach 0.05 there), Wilcoxon from 6 on
    assert paired_test(x, y, "auto") == paired_test(x, y, "ttest")
    x6, y6 = np.arange(6.0), np.arange(6.0) + 0.5 + 0.01 * np.arange(6)
    assert paired_test(x6, y6, "auto") == paired_test(x6, y6, "wilcoxon") == pytest.approx(2 / 64)
    assert math.isnan(paired_test(x, x))
    with pytest.raises(ValueError, match="unknown paired test"):
        paired_test(x, y, "sign")
    q = bh([0.01, 0.04, 0.03, float("nan")])
    np.testing.assert_allclose(q[:3], [0.03, 0.04, 0.04])  # p * m / rank, monotone
    assert math.isnan(q[3])


def test_claims_frame_columns():
    c = Claim.check("x beats y", "m", "ratio 0.9", 0.9, (0.85, 0.95))
    df = claims_frame([c])
    assert list(df.columns[:4]) == ["claim", "setting", "measured", "verdict"] and df.verdict[0] == HOLDS


def test_paired_difference():
    from repro.evaluate.stats import paired_difference

    a = np.array([1, 1, 0, 1, 1, 1, 0, 1] * 4, dtype=float)
    b = np.array([1, 0, 0, 1, 0, 1, 0, 0] * 4, dtype=float)  # a right wherever b is, and on 3 of 8 more
    p = paired_difference(a, b)
    assert p.estimate == pytest.approx(3 / 8) and p.n_better == 12 and p.n_worse == 0
    assert 0 < p.ci[0] <= p.estimate <= p.ci[1] and verdict(p.ci, 0.0, "above") == HOLDS
    assert paired_difference(a, a).ci == (0.0, 0.0)
