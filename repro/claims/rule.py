"""The verdict rule and the claim row (the package docstring: :mod:`repro.claims`)."""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats

from repro.evaluate.stats import t_test_sample_size

HOLDS, FAILS, INCONCLUSIVE = "holds", "does not hold", "inconclusive"
UNDERPOWERED = "underpowered"
DECIDED, CONSTRUCTION, UNINFORMATIVE = "decided", "true by construction", "uninformative"
DEPENDS = "depends on a variant"
KINDS = (DECIDED, DEPENDS, INCONCLUSIVE, UNINFORMATIVE, CONSTRUCTION)  # the order a claims table shows them in
POWER, ALPHA = 0.8, 0.05

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
    n: int | None = None                 # units the interval is over (windows, documents, seeds, rounds)
    paper_effect: float | None = None    # the paper's own effect for this claim, on the same scale
    paper: str = ""                      # where the paper's number comes from
    log: bool = False                    # a ratio: precision and the paper's effect are compared on the log scale
    source: str = ""                     # the paper's sentence this row tests, with its section (with_sources)
    construction: bool = False           # true by how it is counted, not by a measurement
    uninformative: str = ""              # why the design could not have shown the effect ("" where it could)
    unit: str = ""                       # what n counts where it limits the interval (windows, draws, seeds, documents)
    flag: str = ""                       # what a reader should know beside the verdict (both beyond 10x dense)
    depends: str = ""                    # the variants under which the verdict flips, each with its verdict (across)

    @classmethod
    def check(cls, claim: str, setting: str, measured: str, effect: float | None, ci, threshold: float = 1.0,
              side: str = "below", n: int | None = None) -> "Claim":
        """A claim whose verdict comes from ``ci`` by :func:`verdict`."""
        return cls(claim, setting, measured, verdict(ci, threshold, side), effect,
                   None if ci is None else (float(ci[0]), float(ci[1])), threshold, side, n)

    def _scale(self, v: float) -> float:
        return float(np.log(v)) if self.log else float(v)

    @property
    def half_width(self) -> float | None:
        """Half the width of our interval (0 for an exact quantity; None without an interval); for a
        ratio, on the log scale (a factor ``exp(half_width)`` either way)."""
        if self.ci is None or not all(v is not None and np.isfinite(v) and (v > 0 or not self.log) for v in self.ci):
            return None
        return abs(self._scale(self.ci[1]) - self._scale(self.ci[0])) / 2

    @property
    def kind(self) -> str:
        """What kind of answer the row is (the module docstring): decided, depends on a variant, inconclusive,
        uninformative or true by construction."""
        if self.construction:
            return CONSTRUCTION
        if self.why_uninformative:
            return UNINFORMATIVE
        if self.depends:
            return DEPENDS
        return DECIDED if self.verdict in (HOLDS, FAILS) else INCONCLUSIVE

    @property
    def why_uninformative(self) -> str:
        """The paper module's reason, or an exact quantity equal to its threshold (e.g. two methods
        that selected the same units: x1.000 with zero width)."""
        if self.uninformative:
            return self.uninformative
        if self.ci is not None and self.threshold is not None and self.ci[0] == self.ci[1] == self.threshold:
            return "identical on both sides (an exact quantity equal to the threshold)"
        return ""

    @property
    def sample_needed(self) -> tuple[int, str] | None:
        """For an inconclusive row: the sample (in the row's units: windows, documents, seeds...) that
        would detect the effect at 80% power in a two-sided 5% test, with the spread measured here:
        ``n' = ((t_{0.975, n'-1} + t_{0.8, n'-1}) s / d)^2``, solved for ``n'`` (the quantiles of the t
        distribution the interval itself uses, at the degrees of freedom of the sample asked for), ``s = h
        sqrt(n) / t_{0.975, n-1}`` the per-unit spread behind our half-width ``h``, ``d`` the effect's distance
        from the threshold (both on the log scale for a ratio); and which effect: "paper" where the paper gives
        one, else "observed". A value at or below ``n`` says the present sample would have detected the
        paper's effect, which then lies beyond our half-width (never "underpowered", :attr:`power`). None where it
        cannot be sized (no interval, no effect, or an effect at the threshold)."""
        if self.kind != INCONCLUSIVE or self.n is None or self.n < 2 or self.threshold is None:
            return None
        h = self.half_width
        target, which = (self.paper_effect, "paper") if self.paper_effect is not None else (self.effect, "observed")
        if h is None or h == 0 or target is None or not np.isfinite(target) or (self.log and target <= 0):
            return None
        d = abs(self._scale(target) - self._scale(self.threshold))
        if d == 0:
            return None
        sd = h / stats.t.ppf(1 - ALPHA / 2, self.n - 1) * math.sqrt(self.n)  # per-unit spread
        return t_test_sample_size(sd / d, ALPHA, POWER), which

    @property
    def power(self) -> str:
        """"underpowered" when our interval is wider than the paper's effect (its distance from the
        threshold, on the log scale for a ratio), "" when it is not, "no paper number" where the paper
        gives none."""
        if self.paper_effect is None or self.threshold is None:
            return "no paper number"
        h = self.half_width
        if h is None or h > abs(self._scale(self.paper_effect) - self._scale(self.threshold)):
            return UNDERPOWERED
        return ""

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
    note = f"; {p.note}" if p.note else ""
    unit, n = p.limit or ("windows", p.n)
    c = Claim.check(claim, setting, f"{what} {fmt_ratio(p)} (windows better {p.n_better}/{p.n}{note})",
                    p.estimate, p.ci, threshold, side, n)
    c.log, c.unit = True, unit
    return c


def difference_claim(claim: str, setting: str, what: str, p, side: str = "below", unit: str = "pp",
                     over: str = "seeds", threshold: float = 0.0) -> Claim:
    """A claim about a paired mean difference ``p`` over ``over`` (None: not run); nats get four
    decimals, everything else two."""
    if p is None:
        return Claim(claim, setting, "not run", INCONCLUSIVE)
    f = "+.4f" if unit == "nats" else "+.2f"
    c = Claim.check(claim, setting, f"{what} {p.estimate:{f}} [{p.ci[0]:{f}}, {p.ci[1]:{f}}] {unit} over "
                                    f"{p.n} {over}", p.estimate, p.ci, threshold, side, p.n)
    c.unit = over
    return c
