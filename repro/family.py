"""A notebook's claims as one family of tests: how many decided verdicts would stay at a level corrected for the
number of comparisons made (Bonferroni), read back from each row's own 95% interval.

Every row is decided at 95% on its own (:func:`repro.claims.verdict`). Over M comparisons where no effect existed,
about 5% of them would still be decided by chance. A row's interval gives its standard error: the distance from the
estimate to the interval's end on the threshold's side, divided by the quantile the interval used (the t quantile
over ``n - 1`` degrees of freedom for an interval over seeds or draws, the normal one for a bootstrap over windows,
documents or images; on the log scale for a ratio). The row stays decided at the family level where its estimate
lies more than the ``1 - alpha / (2M)`` quantile of those standard errors from the threshold. Exact quantities (a
zero-width interval) have no sampling error and always stay. An approximation: a percentile bootstrap is not exactly
normal.
"""
from __future__ import annotations

import math

import pandas as pd
from scipy import stats

from repro.claims import DECIDED, DEPENDS, INCONCLUSIVE

T_UNITS = ("seeds", "draws")  # intervals over these units use t quantiles (repro.evaluate.stats)


def _quantile(p: float, n, unit) -> float:
    if isinstance(unit, str) and unit in T_UNITS and n == n and n and n > 1:
        return float(stats.t.ppf(p, int(n) - 1))
    return float(stats.norm.ppf(p))


def stays(row, m: int, alpha: float = 0.05) -> bool:
    """Whether a decided claims-frame ``row`` keeps its verdict at the Bonferroni level ``alpha / m``."""
    lo, hi = row["ci"]
    if lo == hi:
        return True
    scale = math.log if row["log"] else float
    est, t = scale(row["effect"]), scale(row["threshold"])
    end = scale(lo) if est > t else scale(hi)  # the interval's end on the threshold's side
    se = abs(est - end) / _quantile(1 - alpha / 2, row["n"], row.get("unit"))
    return se == 0 or abs(est - t) / se > _quantile(1 - alpha / (2 * m), row["n"], row.get("unit"))


def family_note(claims: pd.DataFrame, alpha: float = 0.05) -> str:
    """One paragraph on ``claims`` (a claims frame) as a family: how many rows are tests, how many are decided, how
    many a chance rate of ``alpha`` would decide with no effect anywhere, and how many decided rows stay at the
    Bonferroni level, with those that do not."""
    tests = claims[claims["kind"].isin([DECIDED, INCONCLUSIVE, DEPENDS])]
    decided = tests[tests["kind"] == DECIDED]
    if not len(decided):
        return ""
    m = len(tests)
    gone = decided[[not stays(r, m, alpha) for _, r in decided.iterrows()]]
    text = (f"**The claims as one family.** {len(decided)} of the {m} rows that are tests are decided, each by its "
            f"own 95% interval, with no correction for the {m} comparisons: were there no effect anywhere, about "
            f"{alpha * m:.0f} of them ({alpha:.0%}) would be decided by chance alone. At the Bonferroni level "
            f"{alpha:g} / {m} (each interval's standard error read back from its width: repro.family), "
            f"{len(decided) - len(gone)} of the {len(decided)} decided rows keep their verdict")
    if not len(gone):
        return text + "."
    return text + f"; {len(gone)} would become inconclusive: " + "; ".join(
        f"*{r['claim']}* ({r['setting']}, {r['verdict']})" for _, r in gone.iterrows()) + "."
