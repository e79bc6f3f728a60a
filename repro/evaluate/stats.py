"""Confidence intervals and multiple-testing helpers (scipy / statsmodels, not hand-written)."""
from __future__ import annotations

import numpy as np
from scipy import stats


def bootstrap_ci(values, statistic=np.mean, level: float = 0.95, n_resamples: int = 2000, seed: int = 0,
                 transform=None) -> tuple[float, float] | None:
    """Percentile bootstrap CI of ``statistic(values)``; ``transform`` maps the ends (e.g. exp for
    perplexity from mean NLL). None when fewer than 2 values or all equal."""
    x = np.asarray(values, dtype=float)
    if x.size < 2 or np.all(x == x[0]):
        return None
    res = stats.bootstrap((x,), statistic, confidence_level=level, n_resamples=n_resamples,
                          method="percentile", rng=np.random.default_rng(seed))
    lo, hi = float(res.confidence_interval.low), float(res.confidence_interval.high)
    return (transform(lo), transform(hi)) if transform else (lo, hi)


def ppl_ci(window_nll, level: float = 0.95, seed: int = 0) -> tuple[float, float] | None:
    """CI of perplexity = exp(mean window NLL), resampling windows."""
    return bootstrap_ci(window_nll, level=level, seed=seed, transform=lambda v: float(np.exp(v)))
