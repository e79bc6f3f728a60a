"""Confidence intervals, paired comparisons and multiple testing, all from ``scipy.stats``.

Every method is evaluated on the *same* windows (or batches, or timing rounds), so two methods
are compared *paired*: the bootstrap resamples windows and keeps each window's two numbers
together, which removes the window-to-window variation both methods share. That is why a
difference far inside two overlapping unpaired CIs can still be decisive.

- :func:`bootstrap_ci`, :func:`ppl_ci`: one sample (e.g. a perplexity's CI over windows).
- :func:`paired_ratio`: perplexity ratio ``ppl_a / ppl_b = exp(mean(nll_a - nll_b))`` with a paired
  bootstrap CI over windows.
- :func:`paired_ratio_draws`, :func:`pooled_ppl`: the same for methods drawn several times (seeds,
  calibration draws): the draws' geometric mean, its window interval widened by the between-draw t term.
- :func:`speed_ratio`: speed-up ``t_base / t_variant`` from round-robin timing rounds, paired by round.
- :func:`paired_t`: the mean paired difference across a handful of units (seeds) with the t interval
  and the paired t-test's p-value, one statistic for both (a bootstrap over 3-5 seeds would only
  give their range).
- :func:`paired_test`: Wilcoxon signed-rank or paired t (per-window and per-image tests).
- :func:`bh`: Benjamini-Hochberg q-values over a declared family of p-values.

**No percentile bootstrap over fewer than** :data:`MIN_BOOTSTRAP_UNITS` **resampling units.** Over
3 seeds a percentile interval is just [min, max], over 4 windows not a 95% interval either: the
bootstrap functions raise :class:`TooFewUnits` instead, so a profile that shrinks a sample below
that fails loudly rather than print a false interval. Where the units are few by design (seeds,
timing rounds, half of a window sample) the t interval of the paired mean is used
(:func:`paired_t`, :func:`speed_ratio`, :func:`paired_ratio_t`): exact under normal differences,
and never the sample's range.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from scipy import stats

from repro.errors import ReproError

LEVEL = 0.95
N_RESAMPLES = 4000
MIN_BOOTSTRAP_UNITS = 20  # fewer units: a percentile bootstrap is refused (TooFewUnits)


class TooFewUnits(ReproError):
    """A percentile bootstrap asked for over fewer than :data:`MIN_BOOTSTRAP_UNITS` units."""


def require_units(n: int, what: str = "units") -> None:
    """Refuse a percentile bootstrap over fewer than :data:`MIN_BOOTSTRAP_UNITS` resampling units."""
    if n < MIN_BOOTSTRAP_UNITS:
        raise TooFewUnits(f"a percentile bootstrap over {n} {what} is not a 95% interval: at least "
                          f"{MIN_BOOTSTRAP_UNITS} are needed (raise the sample size of the profile)")


def bootstrap_ci(values, statistic=np.mean, level: float = LEVEL, n_resamples: int = N_RESAMPLES // 2,
                 seed: int = 0, transform=None, weights=None) -> tuple[float, float] | None:
    """Percentile bootstrap CI of ``statistic(values)``; ``transform`` maps the ends (e.g. exp for
    perplexity from mean NLL). With ``weights`` (e.g. each sequence's scored tokens) the statistic is the
    weighted mean sum(values) / sum(weights) of per-unit totals ``values``, units resampled whole (value and
    weight together). None when all values (per weight) are equal; :class:`TooFewUnits` below
    :data:`MIN_BOOTSTRAP_UNITS` values."""
    x = np.asarray(values, dtype=float)
    require_units(x.size, "values")
    if weights is not None:
        w = np.asarray(weights, dtype=float)
        if np.all(x / w == x[0] / w[0]):
            return None
        res = stats.bootstrap((x, w), lambda a, b, axis=-1: a.sum(axis) / b.sum(axis), paired=True, vectorized=True,
                              confidence_level=level, n_resamples=n_resamples, method="percentile",
                              rng=np.random.default_rng(seed))
    elif np.all(x == x[0]):
        return None
    else:
        res = stats.bootstrap((x,), statistic, confidence_level=level, n_resamples=n_resamples,
                              method="percentile", rng=np.random.default_rng(seed))
    lo, hi = float(res.confidence_interval.low), float(res.confidence_interval.high)
    return (transform(lo), transform(hi)) if transform else (lo, hi)


def ppl_ci(window_nll, level: float = LEVEL, seed: int = 0) -> tuple[float, float] | None:
    """CI of perplexity = exp(mean window NLL), resampling windows; None (no interval shown, never a
    false one) below :data:`MIN_BOOTSTRAP_UNITS` windows: a perplexity alone is still a number, but
    every comparison built on so few windows refuses (:func:`paired_ratio`)."""
    if len(window_nll) < MIN_BOOTSTRAP_UNITS:
        return None
    return bootstrap_ci(window_nll, level=level, seed=seed, transform=lambda v: float(np.exp(v)))


@dataclass(frozen=True)
class Paired:
    """A paired comparison of A against B on the same n units (windows, rounds, seeds).

    ``estimate`` is the effect (a ratio here: < 1 means A's value is smaller), ``ci`` its paired
    bootstrap interval (None when A and B agree on every unit: the effect is exact), ``n_better``
    how many units favour A (smaller value) and ``n_worse`` how many favour B."""
    estimate: float
    ci: tuple[float, float] | None
    n: int
    n_better: int
    n_worse: int
    p: float | None = None  # the two-sided p-value of the same statistic, where one is computed
    # the unit that limits the interval and how many there are, where it is not the n units above: e.g.
    # ("draws", 3) when the spread between calibration draws outweighs the spread over windows
    limit: tuple[str, int] | None = None
    note: str = ""  # how the sides were matched, where it is not unit by unit ("paired over 3 shared draws")

    def as_dict(self) -> dict:
        return {"estimate": self.estimate, "ci": self.ci, "n": self.n, "n_better": self.n_better,
                "n_worse": self.n_worse, "p": self.p}

    def scaled(self, factor: float) -> "Paired":
        """The same comparison in other units (``factor`` 100: a difference of shares in percentage points)."""
        ci = None if self.ci is None else (factor * self.ci[0], factor * self.ci[1])
        return Paired(factor * self.estimate, ci, self.n, self.n_better, self.n_worse, self.p, self.limit, self.note)


def _paired_log_ratio(a: np.ndarray, b: np.ndarray, statistic, level: float, seed: int) -> Paired:
    """Effect exp(statistic(a - b)) for log-scale numbers a, b paired by position. Memoised on the differences'
    values (:func:`_log_ratio`), as :func:`paired_difference` is: notebook 3's sections set the same searches
    against the dense model again and again."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.shape != b.shape or a.ndim != 1 or a.size == 0:
        raise ValueError(f"a paired comparison needs two equal-length 1-D samples, got {a.shape} and {b.shape}")
    d = a - b
    require_units(d.size, "paired units")
    return _log_ratio(d.tobytes(), statistic, level, seed)


@lru_cache(maxsize=8192)
def _log_ratio(d_bytes: bytes, statistic, level: float, seed: int) -> Paired:
    d = np.frombuffer(d_bytes)
    est = float(np.exp(statistic(d)))
    ci = None
    if not np.all(d == d[0]):
        # resampling the differences = the paired bootstrap, bit for bit (see paired_difference)
        res = stats.bootstrap((d,), lambda x, axis=-1: statistic(x, axis=axis), confidence_level=level,
                              n_resamples=N_RESAMPLES, method="percentile", rng=np.random.default_rng(seed))
        ci = (float(np.exp(res.confidence_interval.low)), float(np.exp(res.confidence_interval.high)))
    else:
        ci = (est, est)  # every unit moves by the same amount: no sampling spread
    return Paired(est, ci, int(d.size), int((d < 0).sum()), int((d > 0).sum()))


def paired_ratio(nll_a, nll_b, level: float = LEVEL, seed: int = 0) -> Paired:
    """``ppl_a / ppl_b`` on the same windows: ``exp(mean(nll_a) - mean(nll_b))``, with a paired
    bootstrap CI over windows (``scipy.stats.bootstrap(..., paired=True)``). Windows have equal
    token counts in the perplexity protocol, so the mean of window NLLs is the token mean."""
    return _paired_log_ratio(nll_a, nll_b, np.mean, level, seed)


def _draw_se(*samples: np.ndarray) -> tuple[float, int]:
    """The standard error that the draws of each side ([draws, windows]) add to a mean over their windows,
    and its degrees of freedom: ``sqrt(sum s_d^2 / D)`` over the sides drawn more than once, ``s_d`` the
    spread of their per-draw mean NLLs; (0, 0) when no side is drawn twice."""
    var, dof = 0.0, []
    for x in samples:
        if len(x) > 1:
            var += float(np.var(x.mean(axis=1), ddof=1)) / len(x)
            dof.append(len(x) - 1)
    return float(np.sqrt(var)), min(dof, default=0)


def _widen(ci: tuple[float, float], centre: float, se: float, dof: int, level: float) -> tuple[float, float]:
    """``ci`` (log scale, around ``centre``) with the draws' t term added in quadrature to each half-width."""
    if not dof:
        return ci
    t = float(stats.t.ppf(0.5 + level / 2, dof)) * se
    return (centre - float(np.hypot(centre - ci[0], t)), centre + float(np.hypot(ci[1] - centre, t)))


class UnmatchedSamples(ReproError):
    """Two sides drawn from the same source (calibration draws, seeds) share no draw: comparing them would set
    one sample against another."""


DRAW_UNIT = {"calibration": "calibration draw", "seed": "seed"}  # one draw of a source, in words


def match_draws(draws_a, draws_b) -> tuple[list[int], list[int], str] | None:
    """Where both sides are drawn from one source (``draws_*``: each draw's ``(source, id)``; None for a side that
    draws nothing), the rows of each that hold the draws they share, in one order, and that source; None where
    they share no source. Sides drawn from one source that share no draw are refused (:class:`UnmatchedSamples`):
    like is compared with like, or not at all."""
    ids_a = [tuple(d) for d in draws_a or ()]
    ids_b = [tuple(d) for d in draws_b or ()]
    sources = {s for s, _ in ids_a} & {s for s, _ in ids_b}
    if not sources:
        return None
    common = [d for d in ids_a if d in ids_b]
    if not common:
        raise UnmatchedSamples(f"the two sides share no {sources.pop()} draw ({[d[1] for d in ids_a]} against "
                               f"{[d[1] for d in ids_b]}): a comparison of unmatched samples is refused")
    return [ids_a.index(d) for d in common], [ids_b.index(d) for d in common], common[0][0]


def paired_ratio_draws(nll_a, nll_b, draws_a=None, draws_b=None, level: float = LEVEL, seed: int = 0) -> Paired:
    """``ppl_a / ppl_b`` where either side is a method drawn several times (Random's seeds, a calibrated
    scorer's calibration draws): ``nll_a`` [Da, W] and ``nll_b`` [Db, W] window NLLs of each draw on the
    same W windows; ``draws_a``, ``draws_b``: each row's draw, ``(source, id)`` (None: a side that draws nothing,
    or draws not named).

    * **Shared draws are paired.** Where both sides are drawn from one source (two methods calibrated on the same
      calibration draws), only the draws both ran are compared (:func:`match_draws`), draw by draw: the estimate
      is ``exp`` of the mean over draws and windows of ``a_d - b_d``; its interval is the paired bootstrap over
      windows of the per-window mean difference, each half-width widened in quadrature (log scale) by
      ``t_{0.975, D-1} s / sqrt(D)``, ``s`` the spread of the per-draw mean differences. What the draws share
      cancels; a method against itself is exactly x1.
    * **Independent draws are widened.** Otherwise (a drawn side against a deterministic one, Random's seeds against
      calibration draws) the estimate compares the draws' mean NLL per window, ``exp(mean_w(mean_d a - mean_d b))``
      (each side's geometric-mean perplexity over its draws), and the interval is widened by
      ``t_{0.975, D-1} sqrt(sum s_d^2 / D)`` over the sides drawn more than once.

    Draws are few (3-5), so they are never bootstrapped (:data:`MIN_BOOTSTRAP_UNITS`). Where the draws' term is
    the larger half of the interval, :attr:`Paired.limit` names them: more windows could not narrow it. With one
    draw per side this is :func:`paired_ratio` exactly."""
    a, b = np.atleast_2d(np.asarray(nll_a, float)), np.atleast_2d(np.asarray(nll_b, float))
    matched = match_draws(draws_a, draws_b)
    note = ""
    if matched is not None:
        rows_a, rows_b, source = matched
        a, b = a[rows_a], b[rows_b]
        d, unit = len(rows_a), DRAW_UNIT.get(source, "draw")
        note = (f"paired over {d} shared {unit}s" if d > 1 else f"matched on {unit} {tuple(draws_a[rows_a[0]])[1]}"
                + (" (the only one both ran)" if max(len(draws_a), len(draws_b)) > 1 else ""))
        means = (a - b).mean(axis=1)
        se, dof = (float(np.std(means, ddof=1) / np.sqrt(d)), d - 1) if d > 1 else (0.0, 0)
    else:
        se, dof = _draw_se(a, b)
        sources = [tuple(ids[0])[0] for x, ids in ((a, draws_a), (b, draws_b)) if len(x) > 1 and ids]
        unit = DRAW_UNIT.get(sources[0], "draw") if sources else "draw"
    p = paired_ratio(a.mean(0), b.mean(0), level, seed)
    if not dof or p.ci is None:
        return Paired(p.estimate, p.ci, p.n, p.n_better, p.n_worse, p.p, None, note)
    centre = float(np.log(p.estimate))
    window = (float(np.log(p.ci[0])), float(np.log(p.ci[1])))
    log_ci = _widen(window, centre, se, dof, level)
    draws_term = float(stats.t.ppf(0.5 + level / 2, dof)) * se
    limit = (unit + "s", dof + 1) if draws_term > max(centre - window[0], window[1] - centre) else None
    return Paired(p.estimate, (float(np.exp(log_ci[0])), float(np.exp(log_ci[1]))), p.n, p.n_better, p.n_worse,
                  None, limit, note)


def mean_ratio(ratios: list[Paired]) -> Paired:
    """The geometric mean of paired ratios measured in separate settings (models, data sets: disjoint
    windows), e.g. a paper's "average" column: its log is the mean of the settings' log ratios, and each
    side of its interval combines the settings' own half-widths (log scale) in quadrature, divided by
    their number k (the variance of a mean of k independent estimates is the sum of theirs over k^2)."""
    ok = [r for r in ratios if r is not None and r.ci is not None]
    if not ok:
        raise ValueError("mean_ratio needs at least one paired ratio with an interval")
    logs = np.log([r.estimate for r in ok])
    lo = np.log([r.ci[0] for r in ok])
    hi = np.log([r.ci[1] for r in ok])
    k, centre = len(ok), float(logs.mean())
    down, up = float(np.sqrt(np.sum((logs - lo) ** 2))) / k, float(np.sqrt(np.sum((hi - logs) ** 2))) / k
    return Paired(float(np.exp(centre)), (float(np.exp(centre - down)), float(np.exp(centre + up))),
                  sum(r.n for r in ok), sum(r.n_better for r in ok), sum(r.n_worse for r in ok))


def discordant_sample_size(a, b, effect: float, level: float = LEVEL, power: float = 0.8) -> tuple[int, int | None]:
    """Paired right/wrong outcomes ``a``, ``b`` (1 = correct, per document): ``(discordant, n_needed)``, the
    documents where exactly one side is right, and the documents a paired test (McNemar's) needs to detect
    an accuracy difference ``effect`` at ``power`` with the discordance rate seen here, ``p_d``:
    ``n = ((z_{1-alpha/2} sqrt(p_d) + z_power sqrt(p_d - effect^2)) / effect)^2`` (Connor 1987). Only
    discordant documents inform a paired accuracy difference: two models that agree on 95% of documents
    need many documents however many were scored. ``n_needed`` is None where it cannot be sized (no
    discordant document, or an effect the discordance cannot produce)."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    k = int(np.sum(a != b))
    p_d = k / max(a.size, 1)
    if not k or effect == 0 or p_d <= effect ** 2:
        return k, None
    z_a, z_b = stats.norm.ppf(0.5 + level / 2), stats.norm.ppf(power)
    return k, math.ceil(((z_a * math.sqrt(p_d) + z_b * math.sqrt(p_d - effect ** 2)) / abs(effect)) ** 2)


def pooled_ppl(draw_nll, level: float = LEVEL, seed: int = 0) -> tuple[float, tuple[float, float] | None]:
    """A method drawn several times ([D, W] window NLLs): its geometric-mean perplexity over the draws,
    ``exp(mean)``, and the interval of :func:`ppl_ci` over windows of the per-window mean over draws,
    widened like :func:`paired_ratio_draws` by the between-draw spread (None below
    :data:`MIN_BOOTSTRAP_UNITS` windows)."""
    x = np.atleast_2d(np.asarray(draw_nll, float))
    centre = float(x.mean())
    ci = ppl_ci(x.mean(0), level, seed)
    if ci is None:
        return float(np.exp(centre)), None
    lo, hi = _widen((float(np.log(ci[0])), float(np.log(ci[1]))), centre, *_draw_se(x), level)
    # a perplexity is at least 1 (a mean NLL at least 0): draws that disagree wildly can push the t term's
    # lower end below it, and the interval is cut there (what is left still says the draws disagree)
    return float(np.exp(centre)), (max(1.0, float(np.exp(lo))), float(np.exp(hi)))


def speed_ratio(times_base, times_variant, level: float = LEVEL) -> Paired:
    """Speed-up ``t_base / t_variant`` from timing rounds paired by round (round-robin timing puts
    one pass of each model in every round): the geometric mean of the per-round ratios with the t
    interval of the mean log ratio (:func:`paired_t`: timing rounds are few, 5-20, and a percentile
    bootstrap over them would be refused). > 1 means the variant is faster; ``n_better`` counts
    rounds where it was."""
    p = paired_t(np.log(times_base), np.log(times_variant), level)
    ci = None if p.ci is None else (float(np.exp(p.ci[0])), float(np.exp(p.ci[1])))
    return Paired(float(np.exp(p.estimate)), ci, p.n, p.n_better, p.n_worse, p.p)


def paired_ratio_t(nll_a, nll_b, level: float = LEVEL) -> Paired:
    """``ppl_a / ppl_b`` on the same windows as :func:`paired_ratio`, with the t interval of the mean
    NLL difference instead of a bootstrap: for samples split by design below
    :data:`MIN_BOOTSTRAP_UNITS` windows (e.g. half of 32 windows chooses, the other half tests)."""
    p = paired_t(nll_a, nll_b, level)
    ci = None if p.ci is None else (float(np.exp(p.ci[0])), float(np.exp(p.ci[1])))
    return Paired(float(np.exp(p.estimate)), ci, p.n, p.n_worse, p.n_better, p.p)


def paired_difference(a, b, level: float = LEVEL, seed: int = 0) -> Paired:
    """``mean(a) - mean(b)`` on the same units (e.g. per-document accuracy of two models on the
    same documents) with a paired bootstrap CI; ``n_better`` counts units where ``a > b``.

    Memoised on the two samples' values (:func:`_paired_difference`): notebook 3's sections compare the
    same two searches' 2000 per-image results again and again (107 distinct pairs among 360 calls). The
    result is a frozen :class:`Paired`."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.shape != b.shape or a.ndim != 1 or a.size == 0:
        raise ValueError(f"a paired comparison needs two equal-length 1-D samples, got {a.shape} and {b.shape}")
    require_units(a.size, "paired units")
    return _paired_difference(a.tobytes(), b.tobytes(), level, seed)


@lru_cache(maxsize=4096)
def _paired_difference(a_bytes: bytes, b_bytes: bytes, level: float, seed: int) -> Paired:
    a, b = np.frombuffer(a_bytes), np.frombuffer(b_bytes)
    d = a - b
    est = float(d.mean())
    if not np.all(d == d[0]):
        # the paired bootstrap of mean(a - b) resamples unit indices; resampling the differences themselves
        # draws the same indices from the same generator, so it gives the same distribution bit for bit
        # (tested), an order of magnitude faster: one gather instead of two and a subtraction
        res = stats.bootstrap((d,), np.mean, confidence_level=level, n_resamples=N_RESAMPLES, method="percentile",
                              rng=np.random.default_rng(seed))
        ci = (float(res.confidence_interval.low), float(res.confidence_interval.high))
    else:
        ci = (est, est)
    return Paired(est, ci, int(d.size), int((d > 0).sum()), int((d < 0).sum()))


def paired_t(a, b, level: float = LEVEL) -> Paired:
    """``mean(a - b)`` over units paired by position (e.g. one number per seed) with the t interval
    of ``scipy.stats.ttest_rel(a, b).confidence_interval()`` and that test's two-sided p-value, so a
    verdict read from the interval and a test read from p can never disagree. Equal differences on
    every unit: a zero-width interval and no p-value; fewer than 2 units: no interval."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.shape != b.shape or a.ndim != 1 or a.size == 0:
        raise ValueError(f"a paired comparison needs two equal-length 1-D samples, got {a.shape} and {b.shape}")
    d = a - b
    est = float(d.mean())
    counts = (int(d.size), int((d > 0).sum()), int((d < 0).sum()))
    if d.size < 2:
        return Paired(est, None, *counts)
    if np.all(d == d[0]):
        return Paired(est, (est, est), *counts)
    res = stats.ttest_rel(a, b)
    ci = res.confidence_interval(confidence_level=level)
    return Paired(est, (float(ci.low), float(ci.high)), *counts, p=float(res.pvalue))


WILCOXON_MIN_N = 6  # the smallest n whose exact two-sided Wilcoxon p can fall below 0.05 (2 / 2^6 = 0.031)


def paired_test_name(n: int, test: str = "auto") -> str:
    """The test ``paired_test`` runs on ``n`` pairs: ``auto`` is Wilcoxon signed-rank from
    :data:`WILCOXON_MIN_N` pairs on, the paired t-test below (where Wilcoxon's exact p-value can
    never reach 0.05: with 3 seeds its smallest value is 0.25)."""
    if test == "auto":
        return "wilcoxon" if n >= WILCOXON_MIN_N else "ttest"
    return test


def paired_test(x, y, test: str = "wilcoxon") -> float:
    """Two-sided p-value that paired samples ``x`` and ``y`` (e.g. one number per seed) differ:
    Wilcoxon signed-rank (``scipy.stats.wilcoxon``, exact for small n), paired t
    (``scipy.stats.ttest_rel``), or ``auto`` (:func:`paired_test_name`). NaN when every pair is equal."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if x.shape != y.shape or x.size < 2:
        raise ValueError(f"a paired test needs two equal-length samples of at least 2, got {x.shape} and {y.shape}")
    if np.all(x == y):
        return float("nan")
    return _paired_p(x.tobytes(), y.tobytes(), paired_test_name(x.size, test))


@lru_cache(maxsize=8192)
def _paired_p(x_bytes: bytes, y_bytes: bytes, test: str) -> float:
    """:func:`paired_test`'s p-value, memoised on the samples' values."""
    x, y = np.frombuffer(x_bytes), np.frombuffer(y_bytes)
    if test == "wilcoxon":
        return float(stats.wilcoxon(x, y).pvalue)
    if test == "ttest":
        return float(stats.ttest_rel(x, y).pvalue)
    raise ValueError(f"unknown paired test {test!r}; known: wilcoxon, ttest, auto")


def bh(pvalues) -> np.ndarray:
    """Benjamini-Hochberg q-values (``scipy.stats.false_discovery_control``) over the declared
    family ``pvalues``; NaN entries (no test possible) stay NaN and do not enlarge the family."""
    p = np.asarray(pvalues, dtype=float)
    q = np.full_like(p, np.nan)
    ok = ~np.isnan(p)
    if ok.any():
        q[ok] = stats.false_discovery_control(p[ok], method="bh")
    return q


METRICS = ("accuracy", "f1")  # classification metrics: accuracy, F1 of the positive class (label 1)


def classification_metric(metric: str, y, pred, axis: int = -1):
    """``metric`` of predictions ``pred`` against labels ``y`` along ``axis`` (vectorised, so the
    bootstrap can resample): accuracy, or F1 of label 1 (0 where nothing is predicted or true positive)."""
    y, pred = np.asarray(y), np.asarray(pred)
    if metric == "accuracy":
        return np.mean(y == pred, axis=axis)
    if metric == "f1":
        tp = np.sum((pred == 1) & (y == 1), axis=axis)
        wrong = np.sum(pred != y, axis=axis)
        return np.divide(2.0 * tp, 2.0 * tp + wrong, out=np.zeros(np.shape(tp)), where=(2 * tp + wrong) > 0)
    raise ReproError(f"unknown metric {metric!r}; known: {', '.join(METRICS)}")


def paired_metric_difference(metric: str, y, a, b, level: float = LEVEL, seed: int = 0) -> Paired:
    """``metric(y, a) - metric(y, b)`` on the same examples, with a paired bootstrap CI over examples
    (``scipy.stats.bootstrap(..., paired=True)``: an example's label and both predictions stay
    together). ``a``, ``b``: one prediction array, or a list of them whose metric is averaged (Random's
    seeds). ``n_better`` / ``n_worse``: examples that the first of ``a`` gets right and the first of ``b``
    wrong / the other way round."""
    a = [np.asarray(p) for p in (a if isinstance(a, (list, tuple)) else [a])]
    b = [np.asarray(p) for p in (b if isinstance(b, (list, tuple)) else [b])]
    y = np.asarray(y)
    if any(p.shape != y.shape for p in a + b) or y.ndim != 1:
        raise ValueError("a paired comparison needs one prediction per labelled example on both sides")
    require_units(y.size, "paired examples")
    return _metric_difference(metric, _frozen(y), tuple(map(_frozen, a)), tuple(map(_frozen, b)), level, seed)


def _frozen(x: np.ndarray) -> tuple[str, tuple, bytes]:
    """An array as a hashable value (dtype, shape, bytes), for the memoised comparisons below."""
    return x.dtype.str, x.shape, x.tobytes()


def _thawed(f: tuple[str, tuple, bytes]) -> np.ndarray:
    return np.frombuffer(f[2], dtype=np.dtype(f[0])).reshape(f[1])


@lru_cache(maxsize=4096)
def _metric_difference(metric: str, y, a: tuple, b: tuple, level: float, seed: int) -> Paired:
    """:func:`paired_metric_difference`, memoised on the labels' and predictions' values: Table III's cells and
    its claim rows set the same folds' predictions side by side."""
    y, a, b = _thawed(y), [_thawed(p) for p in a], [_thawed(p) for p in b]
    na = len(a)

    def diff(y_, *preds, axis=-1):
        return (np.mean([classification_metric(metric, y_, p, axis) for p in preds[:na]], axis=0)
                - np.mean([classification_metric(metric, y_, p, axis) for p in preds[na:]], axis=0))

    est = float(diff(y, *a, *b))
    if all(np.array_equal(a[0], p) for p in a[1:] + b):
        ci = (est, est)
    else:
        res = stats.bootstrap((y, *a, *b), diff, paired=True, confidence_level=level, n_resamples=N_RESAMPLES,
                              method="percentile", rng=np.random.default_rng(seed))
        ci = (float(res.confidence_interval.low), float(res.confidence_interval.high))
    right_a, right_b = a[0] == y, b[0] == y
    return Paired(est, ci, int(y.size), int((right_a & ~right_b).sum()), int((right_b & ~right_a).sum()))


def t_test_sample_size(spread_over_effect: float, alpha: float = 0.05, power: float = 0.8, limit: int = 10**9) -> int:
    """The smallest ``n >= 2`` with ``(t_{1-alpha/2, n-1} + t_{power, n-1}) * r <= sqrt(n)``, ``r`` the per-unit
    spread over the effect: the sample at which a two-sided test at level ``alpha`` has the given power (normal
    approximation of the shifted statistic), with t quantiles at the sample's own degrees of freedom, as the
    intervals beside it use them (z quantiles would call a sample of 3 draws enough where t_2 = 4.30 says not)."""
    from scipy import stats as st

    def short(n: int) -> bool:
        return (st.t.ppf(1 - alpha / 2, n - 1) + st.t.ppf(power, n - 1)) * spread_over_effect > math.sqrt(n)

    lo = hi = 2
    while short(hi) and hi < limit:
        lo, hi = hi, min(hi * 2, limit)
    if not short(lo):
        return lo
    while hi - lo > 1:  # short(lo), not short(hi): the quantiles fall and sqrt(n) grows with n
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if short(mid) else (lo, mid)
    return hi
