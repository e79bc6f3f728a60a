"""Claims of a paper checked against measurements: one verdict rule, written once, for every
claim of every paper.

A claim is stated as "the effect lies below (or above) a threshold": a perplexity ratio below 1
(A beats B), a speed-up of at most 1.035, a parameter saving of at least 8%. The verdict follows
the effect's confidence interval (a *paired* one wherever two methods ran on the same windows,
batches, rounds or seeds: see :mod:`repro.evaluate.stats`):

- **holds** — the whole interval lies on the claimed side of the threshold;
- **does not hold** — the whole interval lies on the other side;
- **inconclusive** — the interval contains the threshold (or there is none).

A quantity with no sampling spread (a parameter count, a FLOP ratio, two methods that pruned
the same heads) has a zero-width interval ``(x, x)``, so the same rule applies; ``x`` equal to
the threshold does not hold (a claim of "better" is not met by "identical"). Nothing else decides
a verdict.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

HOLDS, FAILS, INCONCLUSIVE = "holds", "does not hold", "inconclusive"


def verdict(ci, threshold: float = 1.0, side: str = "below") -> str:
    """The rule above for the claim ``effect < threshold`` (``side="below"``) or
    ``effect > threshold`` (``side="above"``). An interval touching the threshold is
    inconclusive; a zero-width one (an exact quantity) equal to it does not hold."""
    if side not in ("below", "above"):
        raise ValueError(f"side must be 'below' or 'above', got {side!r}")
    if ci is None or any(v is None or not np.isfinite(v) for v in ci):
        return INCONCLUSIVE
    lo, hi = float(min(ci)), float(max(ci))
    if side == "above":  # mirror: effect > t  <=>  -effect < -t
        lo, hi, threshold = -hi, -lo, -threshold
    if hi < threshold:
        return HOLDS
    if lo > threshold or (lo == hi == threshold):
        return FAILS
    return INCONCLUSIVE


@dataclass
class Claim:
    """One row of a claims table."""
    claim: str      # the paper's statement, paraphrased
    setting: str    # model, sparsity, ...
    measured: str   # the numbers, in words
    verdict: str
    effect: float | None = None
    ci: tuple[float, float] | None = None
    threshold: float | None = None
    side: str | None = None

    @classmethod
    def check(cls, claim: str, setting: str, measured: str, effect: float | None, ci, threshold: float = 1.0,
              side: str = "below") -> "Claim":
        """A claim whose verdict comes from ``ci`` by :func:`verdict`."""
        return cls(claim, setting, measured, verdict(ci, threshold, side), effect,
                   None if ci is None else (float(ci[0]), float(ci[1])), threshold, side)


def claims_frame(claims: list[Claim]):
    """Claims as a DataFrame (the columns a reader needs first, the numbers after)."""
    import pandas as pd

    return pd.DataFrame([asdict(c) for c in claims],
                        columns=["claim", "setting", "measured", "verdict", "effect", "ci", "threshold", "side"])


def fmt_ratio(p, digits: int = 3) -> str:
    """'x0.912 [0.871, 0.950]' for a :class:`repro.evaluate.stats.Paired` ratio."""
    s = f"x{p.estimate:.{digits}f}"
    if p.ci is not None and p.ci[0] != p.ci[1]:
        s += f" [{p.ci[0]:.{digits}f}, {p.ci[1]:.{digits}f}]"
    return s


def ratio_claim(claim: str, setting: str, what: str, p, threshold: float = 1.0, side: str = "below") -> Claim:
    """A claim about a paired ratio ``p`` (:class:`repro.evaluate.stats.Paired`, None: a cell not
    run), e.g. "MP-G / Wanda-Head x0.912 [0.871, 0.950] (windows better 7/8)"."""
    if p is None:
        return Claim(claim, setting, "not run", INCONCLUSIVE)
    return Claim.check(claim, setting, f"{what} {fmt_ratio(p)} (windows better {p.n_better}/{p.n})",
                       p.estimate, p.ci, threshold, side)


def difference_claim(claim: str, setting: str, what: str, p, side: str = "below", unit: str = "pp",
                     over: str = "seeds", threshold: float = 0.0) -> Claim:
    """A claim about a paired mean difference ``p`` over ``over`` (None: not run); nats get four
    decimals, everything else two."""
    if p is None:
        return Claim(claim, setting, "not run", INCONCLUSIVE)
    f = "+.4f" if unit == "nats" else "+.2f"
    return Claim.check(claim, setting, f"{what} {p.estimate:{f}} [{p.ci[0]:{f}}, {p.ci[1]:{f}}] {unit} over "
                                       f"{p.n} {over}", p.estimate, p.ci, threshold, side)


def count_verdicts(claims, prefix: str) -> str:
    """'holds: 2, inconclusive: 1' for the rows of a claims frame whose claim starts with ``prefix``."""
    c = claims[claims.claim.str.startswith(prefix)]
    return ", ".join(f"{v}: {k}" for v, k in c.verdict.value_counts().items()) or "not run"
