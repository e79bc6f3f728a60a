"""The statistics layer and the one verdict rule, on constructed data whose answer is known."""
import math

import numpy as np
import pytest
from scipy import stats

from repro.claims import (
    FAILS,
    HOLDS,
    INCONCLUSIVE,
    UNDERPOWERED,
    Claim,
    claims_frame,
    claims_markdown,
    shown,
    underpowered,
    verdict,
    with_paper,
)
from repro.evaluate.stats import (
    MIN_BOOTSTRAP_UNITS,
    TooFewUnits,
    bh,
    bootstrap_ci,
    paired_difference,
    paired_ratio,
    paired_ratio_t,
    paired_t,
    paired_test,
    ppl_ci,
    speed_ratio,
)


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
    difficulty = rng.normal(3.0, 1.0, size=24)
    a = difficulty - 0.05 + rng.normal(0, 0.005, size=24)
    b = difficulty
    ca, cb = ppl_ci(a), ppl_ci(b)
    assert ca[1] > cb[0], "unpaired intervals overlap"
    p = paired_ratio(a, b)
    assert p.estimate == pytest.approx(math.exp(a.mean() - b.mean()))
    assert p.ci[1] < 1 and p.n_better == 24 and p.n_worse == 0
    assert verdict(p.ci) == HOLDS


def test_paired_ratio_no_difference_is_inconclusive():
    rng = np.random.default_rng(1)
    base = rng.normal(3, 1, 32)
    noise = rng.normal(0, 0.1, 32)
    p = paired_ratio(base + noise, base - noise)
    assert p.ci[0] < 1 < p.ci[1] and verdict(p.ci) == INCONCLUSIVE


def test_identical_selection_gives_an_exact_ratio_of_one():
    x = [3.0, 2.5, 4.0] * 7
    p = paired_ratio(x, x)
    assert p.estimate == 1.0 and p.ci == (1.0, 1.0) and verdict(p.ci) == FAILS


def test_paired_ratio_needs_equal_lengths():
    with pytest.raises(ValueError, match="equal-length"):
        paired_ratio([1.0, 2.0], [1.0])


@pytest.mark.parametrize("call", [
    lambda x: bootstrap_ci(x),
    lambda x: paired_ratio(x, x + 0.1),
    lambda x: paired_difference(x, x[::-1]),
])
def test_no_percentile_bootstrap_below_twenty_units(call):
    """Over 3 seeds a percentile interval is [min, max]: every bootstrap refuses fewer than 20 units
    (a profile that shrinks a sample fails loudly); 20 units pass."""
    rng = np.random.default_rng(0)
    with pytest.raises(TooFewUnits, match="at least 20"):
        call(rng.normal(3, 1, MIN_BOOTSTRAP_UNITS - 1))
    call(rng.normal(3, 1, MIN_BOOTSTRAP_UNITS))
    assert MIN_BOOTSTRAP_UNITS == 20


def test_few_units_get_no_interval_or_a_t_interval():
    """A perplexity over 8 windows is shown without an interval (never a false one); a split-half
    comparison of 16 windows gets the t interval, which is wider than the range-like percentile one."""
    rng = np.random.default_rng(2)
    assert ppl_ci(rng.normal(3, 1, 8)) is None and ppl_ci(rng.normal(3, 1, 20)) is not None
    a = rng.normal(3, 1, 16)
    b = a + 0.2 + rng.normal(0, 0.3, 16)
    p = paired_ratio_t(a, b)
    t = paired_t(a, b)
    assert p.estimate == pytest.approx(math.exp(t.estimate)) and p.ci == pytest.approx(tuple(map(math.exp, t.ci)))
    assert p.n_better == int((a < b).sum()) and p.p == t.p


def test_speed_ratio_pairs_rounds():
    """The variant is 10% faster in every round while rounds drift by 2x: paired speed-up ~1.1."""
    drift = np.array([1.0, 1.5, 2.0, 1.2, 1.8, 1.1, 1.6])
    base = 0.100 * drift
    variant = base / 1.1 * (1 + np.array([0.01, -0.01, 0.0, 0.005, -0.005, 0.002, -0.002]))
    s = speed_ratio(base, variant)
    assert s.estimate == pytest.approx(1.1, rel=0.02)
    assert s.estimate == pytest.approx(math.exp(np.mean(np.log(base / variant))))  # geometric mean of the rounds
    assert s.p is not None and s.p < 0.001
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
    assert list(df.columns[:5]) == ["claim", "source", "setting", "measured", "verdict"] and df.verdict[0] == HOLDS


def test_every_row_shows_the_sentence_it_tests():
    """with_sources matches by statement prefix like with_paper; a row without a source shows a dash,
    never another row's sentence."""
    from repro.claims import with_sources

    claims = with_sources([Claim.check("OGAS below Wanda at 50%", "a", "", 0.9, (0.85, 0.95)),
                           Claim.check("MP-G never collapses", "b", "", 0.9, (0.85, 0.95))],
                          {"OGAS below Wanda": '§4.2: "OGAS outperforms Wanda"', "OGAS": "wrong: shorter key"})
    assert claims[0].source == '§4.2: "OGAS outperforms Wanda"' and claims[1].source == ""
    assert shown(claims_frame(claims))["paper says"].tolist() == ['§4.2: "OGAS outperforms Wanda"', "—"]


def test_power_beside_the_verdict():
    """Paper effect x0.903 (distance 0.097 from 1): an interval of half-width 0.15 could not detect it
    (underpowered, whatever its verdict); half-width 0.03 could; no paper number says so; an exact
    quantity is never underpowered."""
    claims = with_paper([Claim.check("OGAS below Wanda at 50%", "a", "", 0.8, (0.65, 0.95), n=8),
                         Claim.check("OGAS below Wanda at 50%", "b", "", 0.99, (0.96, 1.02), n=64),
                         Claim.check("Something else", "c", "", 0.9, (0.8, 1.0), n=32),
                         Claim.check("OGAS below Wanda at 50%", "d", "", 0.9, (0.9, 0.9))],
                        {"OGAS below Wanda": (7.99 / 8.85, "Table 1")})
    assert [c.power for c in claims] == [UNDERPOWERED, "", "no paper number", ""]
    assert claims[0].verdict == HOLDS and claims[0].half_width == pytest.approx(0.15)
    df = claims_frame(claims)
    table = shown(df)
    assert list(table.columns) == ["claim", "paper says", "setting", "measured", "verdict", "power", "n", "paper effect",
                                   "half-width"]
    assert table["n"].tolist() == ["8", "64", "32", ""] and table["paper effect"][0] == "0.903 (Table 1)"
    assert underpowered(df).startswith("1 of 3 rows with a paper number are underpowered") and "(a)" in underpowered(df)


def test_ratio_power_is_judged_on_the_log_scale():
    """z = 2.5 'rescues' x3033 [2038, 4475] where the paper's rescue is x0.039: on the ratio scale
    the half-width (1200) dwarfs the paper's distance from 1 (0.96), on the log scale (0.40 vs 3.24)
    the interval is precise enough; a ratio claim x0.98 [0.80, 1.20] cannot detect x0.903."""
    from repro.claims import ratio_claim
    from repro.evaluate.stats import Paired

    paper = {"z rescues": (0.039, "LLaMA-3-8B 7227 -> 282.8"), "OGAS": (0.903, "Table 1")}
    rescue, ogas = with_paper([ratio_claim("z rescues", "g", "z=2.5 / z=2.0", Paired(3033.0, (2038.0, 4475.0), 32, 0, 32)),
                               ratio_claim("OGAS below", "s", "OGAS / Wanda", Paired(0.98, (0.80, 1.20), 32, 20, 12))],
                              paper)
    assert rescue.log and rescue.power == "" and rescue.half_width == pytest.approx(math.log(4475 / 2038) / 2)
    assert ogas.power == UNDERPOWERED
    table = shown(claims_frame([rescue, ogas]))
    assert table["half-width"][0] == f"x{math.sqrt(4475 / 2038):.3g}" and table["paper effect"][1] == "x0.903 (Table 1)"


def test_paired_difference():
    from repro.evaluate.stats import paired_difference

    a = np.array([1, 1, 0, 1, 1, 1, 0, 1] * 4, dtype=float)
    b = np.array([1, 0, 0, 1, 0, 1, 0, 0] * 4, dtype=float)  # a right wherever b is, and on 3 of 8 more
    p = paired_difference(a, b)
    assert p.estimate == pytest.approx(3 / 8) and p.n_better == 12 and p.n_worse == 0
    assert 0 < p.ci[0] <= p.estimate <= p.ci[1] and verdict(p.ci, 0.0, "above") == HOLDS
    assert paired_difference(a, a).ci == (0.0, 0.0)


# ---- what kind of answer a claim row is, and the sample an inconclusive one needs -------------------

def test_claim_kinds_and_the_sample_for_80_percent_power():
    from repro.claims import CONSTRUCTION, DECIDED, INCONCLUSIVE, UNINFORMATIVE, Claim, claims_frame, claims_markdown

    decided = Claim.check("A beats B", "s", "m", 0.9, (0.85, 0.95), 1.0, "below", 32)
    undecided = Claim.check("A beats B", "t", "m", -1.0, (-3.0, 1.0), 0.0, "below", 5)
    same = Claim.check("A beats B", "u", "identical selections", 1.0, (1.0, 1.0), 1.0, "below", 32)
    built = Claim.check("halves FLOPs", "v", "x0.50", 0.5, (0.5, 0.5), 0.55, "below")
    built.construction = True
    destroyed = Claim.check("A beats B", "w", "both above uniform", 0.8, (0.7, 0.9), 1.0, "below", 32)
    destroyed.uninformative = "both sides worse than a uniform guess"
    assert [c.kind for c in (decided, undecided, same, built, destroyed)] == \
        [DECIDED, INCONCLUSIVE, UNINFORMATIVE, CONSTRUCTION, UNINFORMATIVE]
    assert decided.sample_needed is None and same.sample_needed is None
    # the observed effect -1 against h = 2 over 5 seeds: s = 2 sqrt(5) / t(0.975, 4), and n' the first sample with
    # (t(0.975, n'-1) + t(0.8, n'-1)) s / 1 <= sqrt(n'): the t quantiles the interval itself uses, at n' - 1 df
    s = 2.0 * np.sqrt(5) / stats.t.ppf(0.975, 4)

    def first(spread):
        return next(n for n in range(2, 10**6) if (stats.t.ppf(0.975, n - 1) + stats.t.ppf(0.8, n - 1)) * spread
                    <= np.sqrt(n))
    expect = first(s)
    assert undecided.sample_needed == (expect, "observed") and expect > 5
    undecided.paper_effect = -2.0  # a paper effect twice as large: half the spread per unit of effect
    assert undecided.sample_needed == (first(s / 2), "paper") and first(s / 2) < expect / 2
    text = claims_markdown(claims_frame([decided, undecided, same, built, destroyed]), "**Claims.**")
    heads = [line for line in text.splitlines() if line.startswith("**") and "rows)" in line]
    assert heads == ["**Decided** (1 of 5 rows)", "**Inconclusive** (1 of 5 rows)", "**Uninformative** (2 of 5 rows)",
                     "**True by construction** (1 of 5 rows)"]
    widths = [line.count("|") - 1 for line in text.splitlines() if line.startswith("|")]
    assert max(widths) <= 6 and f"{expect} (observed effect" not in text and "(paper effect, " in text
    undecided.paper_effect = -20.0  # an effect this large would have shown in the 5 seeds we have
    text = claims_markdown(claims_frame([undecided]))
    assert f"{undecided.sample_needed[0]} (paper effect): this sample sufficed" in text
    undecided.paper_effect = -0.01  # ...and one this small needs 10,000 times the sample: counts with separators
    need = undecided.sample_needed[0]
    assert need > 10_000 and f"{need:,} (paper effect, {need / 5:,.0f}x this sample)" in claims_markdown(
        claims_frame([undecided]))


def test_a_sample_that_sufficed_is_never_underpowered():
    """Issue 66: the sample size used z quantiles while the interval beside it used t at the draws' degrees of
    freedom (t_2 = 4.30), so a row of 3 draws could read "this sample sufficed" and "underpowered" at once. With the
    interval's own quantiles, a sufficient sample means the paper's effect lies beyond our half-width."""
    from repro.claims import UNDERPOWERED, Claim

    rng = np.random.default_rng(1)
    seen = 0
    for _ in range(400):
        n = int(rng.integers(2, 40))
        h, d = float(rng.uniform(0.05, 2.0)), float(rng.uniform(0.05, 3.0))
        c = Claim.check("A beats B", "s", "m", 0.1, (-h + 0.1, h + 0.1), 0.0, "below", n)
        c.paper_effect = -d
        need = c.sample_needed
        if need is not None and need[0] <= n:
            seen += 1
            assert c.power != UNDERPOWERED, (n, h, d, need)
    assert seen > 20  # the property was exercised


def test_draws_reduce_to_the_paired_ratio_and_widen_it_by_their_spread():
    from repro.evaluate.stats import paired_ratio_draws, pooled_ppl

    rng = np.random.default_rng(0)
    a, b = rng.normal(3, 0.3, 32), rng.normal(3.2, 0.3, 32)
    one = paired_ratio_draws(a[None], b[None])
    assert one == paired_ratio(a, b)  # one draw per side: exactly the paired ratio
    b3 = np.stack([b - 0.1, b, b + 0.1])  # three draws, the same windows shifted: mean draw = b
    three = paired_ratio_draws(a[None], b3)
    assert three.estimate == pytest.approx(one.estimate)
    assert three.ci[0] < one.ci[0] and three.ci[1] > one.ci[1]  # the draws' spread widens the interval
    same = paired_ratio_draws(a[None], np.stack([b, b, b]))
    assert same.ci == pytest.approx(one.ci)  # identical draws add nothing
    ppl, ci = pooled_ppl(b3)
    assert ppl == pytest.approx(np.exp(b.mean())) and ci[0] < ppl < ci[1]


def test_collapse_is_one_rule_for_every_method():
    """A model collapses above 10x its dense perplexity or at a uniform guess. A comparison is uninformative only
    where every side is at or beyond a uniform guess; every side beyond 10x dense (but below uniform) is a flag
    beside a verdict that stands (the papers compare such models: MP-G's 7,227 -> 282.8 at z = 2.5)."""
    from repro.claims import DECIDED, Claim, beyond_dense, collapsed, destroyed, judged_on

    assert collapsed(float("inf")) and collapsed(None) and not collapsed(50.0)
    assert not collapsed(100.0, dense=10.0) and collapsed(100.1, dense=10.0)  # exactly 10x is not above
    assert collapsed(500.0, dense=100.0, uniform=400.0) and not collapsed(399.0, dense=100.0, uniform=400.0)
    assert destroyed({"A": 150.0, "B": 900.0}, None) == ""  # no bound known: nothing to call destroyed
    assert destroyed({"A": 150.0, "B": 900.0}, 800.0) == ""  # A still predicts better than a uniform guess
    assert destroyed({"A": float("inf"), "B": 900.0}, 800.0).startswith("both models destroyed")
    assert beyond_dense({"A": 150.0, "B": 900.0}, 10.0) == "both beyond 10x dense"
    assert beyond_dense({"A": 90.0, "B": 900.0}, 10.0) == "" and beyond_dense({"A": 150.0}, None) == ""
    # OGAS 680 against SparseGPT 361 at 80% on Gemma (dense 25, uniform 262,144): decided, flagged
    row = judged_on(Claim.check("OGAS lowest at 80%", "gemma", "x1.88", 1.88, (1.77, 2.01)),
                    {"OGAS": 680.0, "SparseGPT": 361.0, "missing": None}, 262_144.0, 25.0)
    assert row.kind == DECIDED and row.verdict == "does not hold" and row.flag == "both beyond 10x dense"
    text = claims_markdown(claims_frame([row]))
    assert "does not hold (both beyond 10x dense)" in text


def test_shared_calibration_draws_are_paired_draw_by_draw():
    """Two methods calibrated on the same three draws: the between-draw spread they share cancels (Wanda against
    itself is exactly x1; OGAS's steady 4% gain is decided), where the independent rule would have added each
    side's spread; a method against one that draws nothing widens by its own draws' spread only."""
    from repro.evaluate.stats import paired_ratio_draws

    rng = np.random.default_rng(0)
    base = rng.normal(3, 0.3, 32)
    shift = np.array([-0.03, 0.0, 0.03])  # what each calibration draw does to both methods alike
    wanda = base + shift[:, None] + rng.normal(0, 0.002, (3, 32))
    ogas = wanda - 0.04 + rng.normal(0, 0.002, (3, 32))
    ids = [("calibration", d) for d in range(3)]
    independent = paired_ratio_draws(ogas, wanda)
    paired = paired_ratio_draws(ogas, wanda, ids, ids)
    assert paired.estimate == pytest.approx(independent.estimate)
    assert independent.ci[0] < 1 < independent.ci[1] and independent.limit == ("draws", 3)  # shared spread added
    assert paired.ci[1] < 1 and paired.note == "paired over 3 shared calibration draws"
    itself = paired_ratio_draws(wanda, wanda, ids, ids)
    assert itself.estimate == 1.0 and itself.ci == (1.0, 1.0)
    magnitude = base[None]  # draws nothing: the draws of the other side are independent of it
    alone = paired_ratio_draws(ogas, magnitude, ids, None)
    assert alone.ci == paired_ratio_draws(ogas, magnitude).ci and alone.limit == ("calibration draws", 3)


def test_a_one_draw_row_is_matched_to_its_own_draw_and_unmatched_samples_are_refused():
    """Table 5's energy-only row ran on draw 0 only: against OGAS's three draws it is compared on draw 0 (like
    with like), not against their mean; two sides drawn from one source that share no draw are refused."""
    from repro.evaluate.stats import UnmatchedSamples, paired_ratio, paired_ratio_draws

    rng = np.random.default_rng(1)
    ogas = rng.normal(3, 0.3, (3, 32)) + np.array([[0.0], [0.2], [0.4]])
    energy = ogas[:1] + 0.01
    ids = [("calibration", d) for d in range(3)]
    matched = paired_ratio_draws(ogas, energy, ids, ids[:1])
    assert matched.estimate == pytest.approx(paired_ratio(ogas[0], energy[0]).estimate)
    assert matched.note == "matched on calibration draw 0 (the only one both ran)"
    with pytest.raises(UnmatchedSamples, match="share no calibration draw"):
        paired_ratio_draws(ogas[1:], energy, ids[1:], ids[:1])


def test_the_unit_that_limits_an_interval_is_the_unit_of_its_power():
    """Where the draws' spread outweighs the windows', the claim counts draws: its n is the draws and the sample
    for 80% power is in draws (more windows could never narrow it)."""
    from repro.claims import INCONCLUSIVE, ratio_claim
    from repro.evaluate.stats import paired_ratio_draws

    rng = np.random.default_rng(2)
    a = rng.normal(3, 0.3, 32)
    b = np.stack([a + s for s in (-0.1, 0.0, 0.12)])  # three seeds of Random, far apart
    c = ratio_claim("A beats B", "m", "A / B", paired_ratio_draws(a[None], b, None, [("seed", s) for s in range(3)]))
    assert c.kind == INCONCLUSIVE and (c.n, c.unit) == (3, "seeds")
    text = claims_markdown(claims_frame([c]))
    assert "| 3 seeds |" in text and " seeds (observed effect" in text


def test_the_trivial_answer_is_the_documents_majority_answer():
    """BoolQ's dense 0.627 against always-yes (62.7% of the gold answers) is not above the trivial answer, though
    it is far above a uniform guess; without recorded gold answers the rule falls back to a uniform guess."""
    from repro.claims import at_chance, pooled_trivial, task_trivial, trivial_answer

    gold = [1] * 627 + [0] * 373
    assert task_trivial("boolq", {"acc": [1.0] * 1000, "gold": gold}) == (0.627, "always 'yes'")
    assert task_trivial("hellaswag", {"acc": [1.0] * 10}) == (0.25, "a uniform guess")
    assert trivial_answer() is None and trivial_answer([2, 2, 0]) == (pytest.approx(2 / 3), "always answer 2")
    correct = [float(g == 1) for g in gold]  # a model that always says yes
    assert at_chance(correct, task_trivial("boolq", {"gold": gold})).endswith("against 0.627 for always 'yes'")
    assert at_chance(correct, (0.5, "a uniform guess")) == ""
    pooled = pooled_trivial({"boolq": {"acc": [0.0] * 1000, "gold": gold}, "hellaswag": {"acc": [0.0] * 1000}})
    assert pooled[0] == pytest.approx((0.627 + 0.25) / 2) and "always 'yes'" in pooled[1]


def test_the_mean_of_ratios_over_settings_is_their_geometric_mean_with_quadrature_halfwidths():
    from repro.evaluate.stats import Paired, mean_ratio

    a = Paired(0.9, (0.9 * np.exp(-0.03), 0.9 * np.exp(0.04)), 32, 20, 12)
    b = Paired(1.0, (np.exp(-0.04), np.exp(0.03)), 32, 16, 16)
    m = mean_ratio([a, b, None])
    assert np.isclose(m.estimate, np.sqrt(0.9)) and (m.n, m.n_better, m.n_worse) == (64, 36, 28)
    assert np.isclose(np.log(m.estimate / m.ci[0]), 0.05 / 2) and np.isclose(np.log(m.ci[1] / m.estimate), 0.05 / 2)
    one = mean_ratio([a])
    assert one.estimate == a.estimate and np.allclose(one.ci, a.ci)


def test_the_documents_a_paired_accuracy_difference_needs_come_from_the_discordant_ones():
    from repro.evaluate.stats import discordant_sample_size

    a = np.r_[np.ones(10), np.zeros(10), np.ones(380)]  # 20 of 400 documents discordant: p_d = 0.05
    b = np.r_[np.zeros(10), np.ones(10), np.ones(380)]
    k, n = discordant_sample_size(a, b, 0.0163)
    assert k == 20 and 1470 <= n <= 1480  # ((1.96 sqrt(.05) + 0.842 sqrt(.05 - .0163^2)) / .0163)^2 = 1475
    assert discordant_sample_size(a, b, 0.05)[1] < n  # a larger effect needs fewer documents
    assert discordant_sample_size(a, a, 0.0163) == (0, None)  # identical answers: cannot be sized


def test_a_pooled_perplexity_interval_never_goes_below_one():
    """Three draws that disagree by orders of magnitude: the widened interval's lower end is cut at
    perplexity 1 (mean NLL 0), not an impossible 0.01."""
    from repro.evaluate.stats import pooled_ppl

    w = np.tile([6.0, 6.5, 7.0, 7.5], 5)
    ppl, (lo, hi) = pooled_ppl([w, w + 10.0, w - 0.4])
    assert lo == 1.0 and hi > ppl > 1.0


def test_the_readme_headline_counts_uninformative_rows_apart_from_verdicts():
    from repro.claims import Claim, claims_frame, headline

    good = Claim.check("A beats B", "m, 12.5%", "x0.8", 0.8, (0.7, 0.9), 1.0, "below", 32)
    gone = Claim.check("A beats B", "m, 50%", "x0.5", 0.5, (0.4, 0.6), 1.0, "below", 32)
    gone.uninformative = "both models collapsed"
    text = headline(claims_frame([gone, good]), "A beats B")
    assert text.startswith("*A beats B*: holds in 1, uninformative in 1 of 2 settings; e.g. m, 12.5%")


@pytest.mark.parametrize("n", [25, 2000])
def test_bootstraps_equal_scipys_paired_bootstrap_bit_for_bit(n):
    """paired_difference and paired_ratio resample the differences, not the pairs: the same indices from the
    same generator, so the same intervals as scipy's own paired bootstrap, exactly (any other draw, e.g. a
    different seed or resampling a and b apart, moves the percentiles)."""
    from repro.evaluate.stats import N_RESAMPLES, paired_difference

    r = np.random.default_rng(n)
    a, b = (r.random(n) < 0.8).astype(float), (r.random(n) < 0.7).astype(float)
    ref = stats.bootstrap((a, b), lambda x, y, axis=-1: np.mean(x - y, axis=axis), paired=True, confidence_level=0.95,
                          n_resamples=N_RESAMPLES, method="percentile", rng=np.random.default_rng(0))
    got = paired_difference(a, b, 0.95, seed=0)
    assert got.ci == (float(ref.confidence_interval.low), float(ref.confidence_interval.high))
    la, lb = r.normal(3, 0.5, n), r.normal(3.1, 0.5, n)
    ref = stats.bootstrap((la, lb), lambda x, y, axis=-1: np.mean(x - y, axis=axis), paired=True, confidence_level=0.95,
                          n_resamples=N_RESAMPLES, method="percentile", rng=np.random.default_rng(0))
    want = (math.exp(ref.confidence_interval.low), math.exp(ref.confidence_interval.high))
    assert paired_ratio(la, lb, 0.95).ci == want and paired_ratio(la, lb, 0.95, seed=1).ci != want


def test_a_paired_comparison_scaled_to_points_keeps_its_counts_and_p():
    from repro.evaluate.stats import Paired

    p = Paired(0.012, (-0.001, 0.02), 50, 20, 10, 0.04).scaled(100)
    assert (p.estimate, p.ci, p.n, p.n_better, p.n_worse, p.p) == (1.2, (-0.1, 2.0), 50, 20, 10, 0.04)
    assert Paired(0.5, None, 3, 0, 0).scaled(100).ci is None


def test_a_weighted_bootstrap_resamples_units_whole():
    """The pseudo-perplexity interval: sequences resampled with their token counts, the statistic sum / sum; the
    same numbers as scipy's paired bootstrap of that ratio (an independent computation), None when every
    sequence has the same per-token value."""
    from scipy import stats as st

    from repro.evaluate.stats import bootstrap_ci

    rng = np.random.default_rng(3)
    n_tokens = rng.integers(10, 40, 30).astype(float)
    totals = n_tokens * rng.gamma(3.0, 0.5, 30)
    ci = bootstrap_ci(totals, weights=n_tokens, transform=np.exp)
    ref = st.bootstrap((totals, n_tokens), lambda a, b, axis=-1: a.sum(axis) / b.sum(axis), paired=True,
                       vectorized=True, n_resamples=2000, method="percentile", rng=np.random.default_rng(0))
    assert ci == (float(np.exp(ref.confidence_interval.low)), float(np.exp(ref.confidence_interval.high)))
    assert ci[0] < np.exp(totals.sum() / n_tokens.sum()) < ci[1]
    assert bootstrap_ci(2 * n_tokens, weights=n_tokens) is None


def test_a_gain_carried_by_answer_bias_is_not_a_verdict():
    """SmolLM2's +0.027 that comes 87% from BoolQ, where OGAS answers 'yes' on every document: the row says so
    instead of a verdict; a gain spread over tasks where both sides read the question stays a verdict."""
    from repro.claims import carried_by_bias, one_answer

    assert one_answer([1] * 100, ("no", "yes")) == "answers 'yes' on 100% of documents"
    assert one_answer([1] * 94 + [0] * 6) == "" and one_answer(None) == ""
    biased = {"boolq": "OGAS answers 'yes' on 100% of documents"}
    why = carried_by_bias({"boolq": 0.0235, "hellaswag": 0.002, "piqa": 0.0015}, biased)
    assert why.startswith("87% of the difference comes from boolq, where OGAS answers 'yes'")
    assert carried_by_bias({"boolq": 0.005, "hellaswag": 0.01, "piqa": 0.01}, biased) == ""
    assert carried_by_bias({"boolq": 0.02, "hellaswag": 0.01}, {}) == ""


def test_a_summary_count_names_one_claim_and_a_metrics_line_counts_by_kind():
    """'(beyond the paper)' matched two different claims, so notebook 1's summary counted rows its table does not
    show under that claim: a prefix naming two claims is refused. The metrics line counts decided rows by verdict
    and the others by kind, as the table shows them."""
    import pandas as pd

    from repro.claims import count_verdicts, kind_counts

    rows = [Claim.check("(beyond the paper) Removal speeds up prefill", "m", "x1.2", 1.2, (1.1, 1.3), 1.0, "above"),
            Claim.check("(beyond the paper) MP-G beats Random", "m", "x0.9", 0.9, (0.8, 1.1))]
    rows[1].uninformative = "both models destroyed"
    claims = claims_frame(rows)
    with pytest.raises(ValueError, match="names 2 claims"):
        count_verdicts(claims, "(beyond the paper)")
    assert count_verdicts(claims, "(beyond the paper) Removal") == "holds: 1"
    assert count_verdicts(claims, ("(beyond the paper) Removal", "(beyond the paper) MP-G")) == \
        "holds: 1; uninformative: 1"
    assert kind_counts(claims) == {"decided": {"holds": 1}, "uninformative": 1}
    assert kind_counts(pd.DataFrame(columns=claims.columns)) == {}
