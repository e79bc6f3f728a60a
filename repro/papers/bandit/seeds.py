"""Paper 3's comparisons across seeds: one value per seed and method, two methods compared over the seeds they
share (a paired t interval and p-value: :func:`repro.evaluate.stats.paired_t`), and one test family's counts in the
paper's Table B2 form."""
from __future__ import annotations

import numpy as np
import pandas as pd

from repro.evaluate.stats import paired_t


def per_seed(table, method: str, value: str):
    """``value`` of ``method`` indexed by seed (one setting's rows of ``table``)."""
    return table[table.method == method].set_index("seed")[value].astype(float)


def shared_seeds(x, y) -> list:
    """The seeds where both series are finite, sorted."""
    return [s for s in sorted(set(x.index) & set(y.index)) if np.isfinite(x[s]) and np.isfinite(y[s])]


def seed_diff(table, a: str, b: str, value: str):
    """Mean over shared seeds of a - b with its t interval and paired t p-value across seeds
    (:func:`repro.evaluate.stats.paired_t`; None without a shared seed)."""
    x, y = per_seed(table, a, value), per_seed(table, b, value)
    seeds = shared_seeds(x, y)
    return None if not seeds else paired_t(x.loc[seeds].to_numpy(), y.loc[seeds].to_numpy())


def across_seeds(table, a: str, b: str, value: str, by=("model", "kinds", "ratio")):
    """``a`` against ``b`` per setting (the ``by`` columns), paired over the seeds where both are
    finite: mean of each, the mean difference with its t interval and the paired t-test's p-value
    (:func:`repro.evaluate.stats.paired_t`, the statistic the claims read too)."""
    rows = []
    for setting, f in table.groupby(list(by)):
        p = seed_diff(f, a, b, value)
        if p is None:
            continue
        x, y = per_seed(f, a, value), per_seed(f, b, value)
        seeds = shared_seeds(x, y)
        ci = p.ci or (np.nan, np.nan)
        rows.append({**dict(zip(by, setting)), "value": value, "a": a, "b": b, "seeds": p.n,
                     "mean_a": x.loc[seeds].mean(), "mean_b": y.loc[seeds].mean(), "mean_diff": p.estimate,
                     "ci_lo": ci[0], "ci_hi": ci[1], "a_better_seeds": p.n_worse,
                     "p": np.nan if p.p is None else p.p, "test": "paired t"})
    return pd.DataFrame(rows)


def family_counts(frame, name: str, alpha: float, failures=None) -> dict:
    """One test family's row in the paper's Table B2 form: comparisons, how many CIs exclude 0, how
    many p and Benjamini-Hochberg q values fall below ``alpha`` (``frame``: ci_lo, ci_hi, p, q)."""
    excl = (frame.ci_lo > 0) | (frame.ci_hi < 0) if len(frame) else pd.Series(dtype=bool)
    return {"family": name, "comparisons": len(frame), "CI excludes 0": int(excl.sum()),
            f"p < {alpha}": int((frame.p < alpha).sum()) if len(frame) else 0,
            f"q < {alpha}": int((frame.q < alpha).sum()) if len(frame) else 0, "failures (non-finite)": failures}
