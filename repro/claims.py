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

**Power beside every verdict.** Each row carries its sample size ``n``, the paper's own effect for
that claim on the same scale (where the paper gives a number: :func:`with_paper`), and the
half-width of our interval. A row whose half-width exceeds the distance from the paper's effect to
the threshold could not have detected an effect as large as the paper's: it is marked
"underpowered" beside its verdict (:attr:`Claim.power`), whatever the verdict.

**What kind of answer a row is** (:attr:`Claim.kind`), so that only real tests are read as verdicts:

- *decided*: holds or does not hold by the rule above;
- *true by construction*: the quantity follows from how the claim is counted, not from a measurement
  (the paper module marks it: ``construction=True``);
- *uninformative*: the design could not have shown the effect (``uninformative``: why, e.g. both sides
  destroyed, the dense model at chance; and, found here for every row, an exact quantity equal to its
  threshold: two identical selections);
- *inconclusive*: the interval contains the threshold. Such a row says the sample that would detect the
  effect at 80% power (:attr:`Claim.sample_needed`): the paper's effect where the paper gives one, else
  the effect measured here, against the spread measured here;
- *depends on a variant*: the same comparison, judged by the same rule under each value the notebook ran of a
  choice the paper does not fix (an ``S_max`` headroom, a calibration draw, a z), holds under one and does not
  hold under another (:func:`across`): the row shows the flip instead of a verdict.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np
from scipy import stats

from repro.evaluate.stats import bootstrap_ci, t_test_sample_size

HOLDS, FAILS, INCONCLUSIVE = "holds", "does not hold", "inconclusive"
UNDERPOWERED = "underpowered"
DECIDED, CONSTRUCTION, UNINFORMATIVE = "decided", "true by construction", "uninformative"
DEPENDS = "depends on a variant"
KINDS = (DECIDED, DEPENDS, INCONCLUSIVE, UNINFORMATIVE, CONSTRUCTION)  # the order a claims table shows them in
POWER, ALPHA = 0.8, 0.05


COLLAPSE = 10.0  # a pruned model "collapses" beyond this multiple of its dense perplexity (our definition, every paper)


def collapsed(ppl: float | None, dense: float | None = None, uniform: float | None = None) -> bool:
    """Whether a pruned model's perplexity ``ppl`` says it is destroyed: not finite, at or above ``uniform``
    (a uniform guess over the vocabulary), or above ``COLLAPSE`` x its ``dense`` perplexity. Ten times
    the dense perplexity is 2.3 nats per token of extra loss: a word-bigram table's level on WikiText-2
    (perplexity in the hundreds), where a model has lost what its context gave it, so that which of two such
    models is "better" no longer says which method preserved the model. The same rule for every method."""
    if ppl is None or not math.isfinite(ppl):
        return True
    return bool((uniform and ppl >= uniform) or (dense and ppl > COLLAPSE * dense))


def destroyed(ppls: dict[str, float], uniform: float | None) -> str:
    """Why a comparison of perplexities ``ppls`` (``{side: perplexity}``) cannot inform a claim: every side is at
    or beyond ``uniform``, the perplexity of a uniform guess over the vocabulary (or not finite), so neither
    model predicts anything and which is "better" says nothing about the method; "" where a side still predicts
    (or the bound is unknown). Far above dense but below a uniform guess is not this: the papers compare such
    models themselves (:func:`beyond_dense` flags them)."""
    if not ppls or not uniform or not all(v is None or not math.isfinite(v) or v >= uniform for v in ppls.values()):
        return ""
    sides = " and ".join(f"{k} {v:,.0f}" for k, v in ppls.items())
    return f"both models destroyed: perplexity {sides}, at or above a uniform guess over the {uniform:,.0f}-word vocabulary"


def classifier_destroyed(sides: dict[str, tuple[float, float]], n_classes: int | None) -> str:
    """:func:`destroyed` for classifiers (``sides``: ``{side: (accuracy, cross-entropy)}``): every side at or past a
    uniform guess over ``n_classes`` (cross-entropy >= ln n_classes, or accuracy <= 1 / n_classes, the trivial
    answer on a balanced set); "" where a side still classifies (or the classes are unknown)."""
    if not sides or not n_classes:
        return ""
    ln = math.log(n_classes)
    if not all(ce >= ln or acc <= 1 / n_classes for acc, ce in sides.values()):
        return ""
    said = " and ".join(f"{k} {acc:.1%} / {ce:.2f} nats" for k, (acc, ce) in sides.items())
    return (f"both classifiers destroyed: accuracy / cross-entropy {said}, at or past a uniform guess over the "
            f"{n_classes} classes ({1 / n_classes:.0%}, ln {n_classes} = {ln:.2f} nats)")


def beyond_dense(ppls: dict[str, float], dense: float | None) -> str:
    """A flag for a comparison whose every side is above ``COLLAPSE`` x the ``dense`` perplexity (both collapsed,
    by this repository's definition): the verdict stands, and the row says that it compares two collapsed models;
    "" otherwise."""
    if not ppls or not dense or not all(collapsed(v, dense) for v in ppls.values()):
        return ""
    return f"both beyond {COLLAPSE:g}x dense"


def judged_on(claim: "Claim", ppls: dict[str, float | None], uniform: float | None, dense: float | None) -> "Claim":
    """``claim`` (a comparison of the perplexities ``ppls``, ``{side: perplexity}``; None: a cell not run) under the
    two rules every paper applies to such a row: uninformative where every side is at a uniform guess
    (:func:`destroyed`), flagged where every side is beyond ``COLLAPSE`` x ``dense`` (:func:`beyond_dense`)."""
    ppls = {k: v for k, v in ppls.items() if v is not None}
    claim.uninformative = claim.uninformative or destroyed(ppls, uniform)
    claim.flag = beyond_dense(ppls, dense)
    return claim


def trivial_answer(gold=None, n_choices: int | None = None, names=None) -> tuple[float, str] | None:
    """The accuracy a model gets on these documents without reading them, and that answer in words: always giving
    the documents' most frequent gold answer (``gold``: per-document answer indices; ``names``: the answers'
    names, e.g. BoolQ's ("no", "yes")), else, where the gold answers are not recorded, a uniform guess among
    ``n_choices``; None where neither is known."""
    if gold is not None and len(gold):
        counts = np.bincount(np.asarray(gold, dtype=int))
        k = int(counts.argmax())
        name = f"always '{names[k]}'" if names is not None and k < len(names) else f"always answer {k}"
        return float(counts[k] / counts.sum()), name
    if n_choices:
        return 1.0 / n_choices, "a uniform guess"
    return None


def task_trivial(task: str, per_doc: dict) -> tuple[float, str] | None:
    """:func:`trivial_answer` of one lm-eval task's documents (``per_doc``: the record's per-document lists, its
    ``gold`` answers where recorded)."""
    from repro.evaluate.zeroshot import ANSWER_NAMES, CHANCE

    chance = CHANCE.get(task)
    return trivial_answer(per_doc.get("gold"), round(1 / chance) if chance else None, ANSWER_NAMES.get(task))


def pooled_trivial(tasks: dict[str, dict]) -> tuple[float, str] | None:
    """The trivial answer's accuracy over several tasks' documents pooled (``tasks``: ``{task: per_doc}``): each
    task's :func:`task_trivial`, weighted by its documents; None where one is unknown."""
    levels = [(len(d["acc"]), task_trivial(t, d)) for t, d in tasks.items()]
    if not levels or any(x is None for _, x in levels):
        return None
    n = sum(k for k, _ in levels)
    names = sorted({x[1] for _, x in levels})
    return sum(k * x[0] for k, x in levels) / n, "each task's trivial answer (" + ", ".join(names) + ")"


ONE_ANSWER = 0.95  # a model giving one answer on at least this share of a task's documents answers without reading


def one_answer(pred, names=None) -> str:
    """'answers 'yes' on 100% of documents' where the per-document answers ``pred`` give one answer on at least
    :data:`ONE_ANSWER` of them; "" otherwise (or where no answers are recorded)."""
    if pred is None or not len(pred):
        return ""
    counts = np.bincount(np.asarray(pred, dtype=int))
    k, share = int(counts.argmax()), float(counts.max() / counts.sum())
    if share < ONE_ANSWER:
        return ""
    name = f"'{names[k]}'" if names is not None and k < len(names) else f"answer {k}"
    return f"answers {name} on {share:.0%} of documents"


def carried_by_bias(gains: dict[str, float], biased: dict[str, str]) -> str:
    """Why a pooled accuracy difference is not the method's: more than half of it (``gains``: each task's share of
    the pooled difference, summing to it) comes from tasks where a side gives one answer on nearly every document
    (``biased``: ``{task: "OGAS answers 'yes' on 100% of documents"}``, :func:`one_answer`), so it measures which
    answer a model leans to, not what it knows; "" otherwise."""
    total = sum(gains.values())
    carried = {t: g for t, g in gains.items() if t in biased and g * total > 0}
    if not total or sum(carried.values()) / total <= 0.5:
        return ""
    return (f"{sum(carried.values()) / total:.0%} of the difference comes from "
            + "; ".join(f"{t}, where {biased[t]}" for t in carried) + ": answer bias, not a verdict on the method")


def at_chance(correct, trivial: tuple[float, str] | None, what: str = "the dense model") -> str:
    """Why a comparison of zero-shot accuracies on these documents cannot inform a claim: ``what``'s
    per-document correctness ``correct`` (its 95% bootstrap interval) does not lie above the ``trivial`` answer's
    accuracy (:func:`trivial_answer`: the majority gold answer, such as BoolQ's always-yes), so a pruned copy can
    only tie it or fall below it by noise; "" where it lies above (or the trivial answer is unknown)."""
    x = np.asarray(correct, dtype=float)
    if trivial is None or x.size < 2:
        return ""
    level, name = trivial
    ci = bootstrap_ci(x) or (float(x.mean()), float(x.mean()))
    if ci[0] > level:
        return ""
    return (f"{what} is not above the trivial answer here: accuracy {x.mean():.3f} [{ci[0]:.3f}, {ci[1]:.3f}] over "
            f"{x.size} documents against {level:.3f} for {name}")


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


def with_paper(claims: list[Claim], effects: dict) -> list[Claim]:
    """Attach the paper's own effect to every claim whose statement starts with a key of ``effects``
    (``{statement prefix: (effect on the claim's scale, where the paper gives it)}``). A key may also be
    ``(statement prefix, text in the setting)`` for an effect the paper gives for one setting only (e.g. its
    C4 table); such a key wins over a plain prefix."""
    def matches(key, c: Claim) -> bool:
        prefix, where = key if isinstance(key, tuple) else (key, "")
        return c.claim.startswith(prefix) and where in c.setting

    order = sorted(effects, key=lambda k: not isinstance(k, tuple))  # setting-specific keys first
    for c in claims:
        hit = next((effects[k] for k in order if matches(k, c)), None)
        if hit is not None:
            c.paper_effect, c.paper = hit
    return claims


def with_sources(claims: list[Claim], sources: dict[str, str]) -> list[Claim]:
    """Attach to every claim whose statement starts with a key of ``sources`` the paper's own words it
    tests, with the section they come from (``{statement prefix: '§4.2: "..."'}``). A sentence in
    quotation marks is the paper's; one without is our paraphrase of where the paper says it (the
    paper modules say which). A claim with no entry keeps ``source == ""`` and shows "—"; a row
    beyond the paper says so in its source ("beyond the paper: ...")."""
    for c in claims:
        hit = next((v for k, v in sources.items() if c.claim.startswith(k)), None)
        if hit is not None:
            c.source = hit
    return claims


def across(claim: Claim, variants: dict[str, Claim], choice: str) -> Claim:
    """``claim`` (a comparison at the notebook's own value of ``choice``, a choice the paper does not fix: "S_max
    headroom", "calibration draw") judged again under each other value the notebook ran (``variants``: ``{label:
    the same comparison there}``, e.g. ``{"headroom 0.05": ...}``). Where the decided verdicts among them include
    both "holds" and "does not hold", the order is the choice's, not the method's: the row's verdict becomes
    "depends on <choice>" and :attr:`Claim.depends` lists each value's verdict and measurement, so its kind is
    *depends on a variant*. An inconclusive or uninformative variant flips nothing (it decides nothing); a row that
    no variant flips is returned unchanged."""
    decided = {label: c for label, c in variants.items() if c.kind == DECIDED}
    if claim.kind not in (DECIDED, INCONCLUSIVE) or not decided:
        return claim
    verdicts = {c.verdict for c in decided.values()} | ({claim.verdict} if claim.kind == DECIDED else set())
    if verdicts != {HOLDS, FAILS}:
        return claim
    claim.depends = "; ".join([f"this notebook's: {claim.verdict}"]
                              + [f"{label}: {c.verdict} ({c.measured})" for label, c in variants.items()])
    claim.verdict = f"depends on {choice}"
    return claim


COLUMNS = ["claim", "source", "setting", "measured", "verdict", "kind", "flag", "why uninformative", "power", "n", "unit",
           "n for 80% power", "effect sized", "paper effect", "half-width", "effect", "ci", "threshold", "side", "paper",
           "log", "depends"]


def once(claims: list[Claim]) -> list[Claim]:
    """Each comparison counted once: a row whose measurement is another row's (the same effect up to its sign, the
    same interval mirrored, over the same sample: one comparison read by two claims) says which row it repeats and is
    not a second verdict (*uninformative*). Exact quantities (zero-width intervals) are left alone."""
    seen: dict[tuple, Claim] = {}
    for c in claims:
        if c.ci is None or c.effect is None or c.ci[0] == c.ci[1] or not all(np.isfinite([c.effect, *c.ci])):
            continue
        scale = np.log if c.log else float  # a ratio's mirror is its reciprocal
        key = (round(abs(scale(c.effect)), 12), tuple(sorted(round(abs(scale(v)), 12) for v in c.ci)), c.n, c.log)
        if key in seen and not c.uninformative:
            first = seen[key]
            c.uninformative = (f"the same comparison as the row *{first.claim}* ({first.setting}): one measurement, "
                               "counted there")
        seen.setdefault(key, c)
    return claims


def claims_frame(claims: list[Claim]):
    """Claims as a DataFrame (the columns a reader needs first, the numbers after), each comparison counted once
    (:func:`once`)."""
    import pandas as pd

    rows = []
    for c in once(list(claims)):
        need = c.sample_needed
        rows.append({**asdict(c), "kind": c.kind, "why uninformative": c.why_uninformative, "power": c.power,
                     "half-width": c.half_width, "paper effect": c.paper_effect,
                     "n for 80% power": None if need is None else need[0], "effect sized": None if need is None else need[1]})
    return pd.DataFrame(rows, columns=COLUMNS)


def _paper_effect(row) -> str:
    e = row["paper effect"]
    if e is None or e != e:
        return "no paper number"
    return f"{'x' if row['log'] else ''}{e:.3g} ({row['paper']})"


def _count(n, unit="") -> str:
    if n is None or n != n:
        return ""
    return f"{int(n)} {unit}" if isinstance(unit, str) and unit else str(int(n))


def _counts(f) -> list[str]:
    units = f["unit"] if "unit" in f else [""] * len(f)
    return [_count(n, u) for n, u in zip(f.n, units)]


POWER_NOTE = ("*n for 80% power*: the sample, in the row's units, that a two-sided 5% test would need to "
              "detect the effect named with the spread measured here. \"This sample sufficed\": the paper's "
              "effect would have shown, so the effect here is smaller than the paper's. A large multiple of "
              "this sample: the effect measured here is so close to the threshold that only a far larger "
              "sample could decide it.")


def claims_markdown(claims, caption: str = "") -> str:
    """A claims table (``claims``: :func:`claims_frame`) as Markdown split by kind of answer, at most six
    columns each, with the paper's sentences as numbered notes below: decided rows (verdict, the paper's
    effect, n, power), inconclusive rows (with the sample that would decide them at 80% power),
    uninformative rows (why) and rows true by construction."""
    import pandas as pd

    if not len(claims):
        return (caption.strip() + "\n\n" if caption else "") + "No claim checked in this run.\n"
    notes = list(dict.fromkeys(s for s in claims["source"] if isinstance(s, str) and s))
    mark = {s: f"[{i + 1}]" for i, s in enumerate(notes)}
    def claim(row):
        return f"{row['claim']} {mark[row['source']]}" if row["source"] in mark else row["claim"]
    def needed(row):
        need, n = row["n for 80% power"], row["n"]
        if need is None or need != need:
            return "not sizeable"
        unit = row.get("unit")
        text = f"{int(need):,}{' ' + unit if isinstance(unit, str) and unit else ''} ({row['effect sized']} effect"
        if n is None or n != n or not n:
            return text + ")"
        if need <= n:  # the effect sized would have been detected: an inconclusive row argues it is smaller
            return text + "): this sample sufficed"
        return text + f", {need / n:,.{0 if need >= 10 * n else 1}f}x this sample)"
    parts = [caption.strip()] if caption else []
    views = {
        DECIDED: lambda f: pd.DataFrame({"claim": f.apply(claim, axis=1), "setting": f.setting, "measured": f.measured,
                                         "verdict": [v + (f" ({'; '.join(x)})" if (x := [t for t in (
                                                         p if p == UNDERPOWERED else "", g) if t]) else "")
                                                     for v, p, g in zip(f.verdict, f.power, _flags(f))],
                                         "paper effect": f.apply(_paper_effect, axis=1), "n": _counts(f)}),
        INCONCLUSIVE: lambda f: pd.DataFrame({"claim": f.apply(claim, axis=1), "setting": f.setting,
                                              "measured": [m + (f" ({g})" if g else "") for m, g in
                                                           zip(f.measured, _flags(f))], "paper effect": f.apply(_paper_effect, axis=1),
                                              "n": _counts(f), "n for 80% power": f.apply(needed, axis=1)}),
        DEPENDS: lambda f: pd.DataFrame({"claim": f.apply(claim, axis=1), "setting": f.setting, "measured": f.measured,
                                         "verdict": f.verdict, "under each variant": f.depends, "n": _counts(f)}),
        UNINFORMATIVE: lambda f: pd.DataFrame({"claim": f.apply(claim, axis=1), "setting": f.setting,
                                               "measured": f.measured, "why uninformative": f["why uninformative"],
                                               "n": _counts(f)}),
        CONSTRUCTION: lambda f: pd.DataFrame({"claim": f.apply(claim, axis=1), "setting": f.setting,
                                              "measured": f.measured, "verdict": f.verdict}),
    }
    for kind in KINDS:
        f = claims[claims.kind == kind]
        if len(f):
            parts.append(f"**{kind.capitalize()}** ({len(f)} of {len(claims)} rows)\n\n" +
                         views[kind](f).to_markdown(index=False))
            if kind == INCONCLUSIVE:
                parts.append(POWER_NOTE)
    if notes:
        parts.append("What the paper says: " + " ".join(f"{mark[s]} {s}" for s in notes))
    return "\n\n".join(parts) + "\n"


def _flags(f) -> list[str]:
    return [g if isinstance(g, str) else "" for g in (f["flag"] if "flag" in f else [""] * len(f))]


SHOWN = ["claim", "paper says", "setting", "measured", "verdict", "power", "n", "paper effect", "half-width"]


def shown(claims):
    """The columns a claims table shows (``claims``: :func:`claims_frame`), the paper's effect with
    where it comes from, the half-width to three significant figures."""
    def paper(row):
        e = row["paper effect"]
        if e is None or e != e:
            return ""
        return f"{'x' if row['log'] else ''}{e:.3g} ({row['paper']})"
    def half(row):
        h = row["half-width"]
        if h is None or h != h:
            return ""
        return f"x{np.exp(h):.3g}" if row["log"] else f"{h:.3g}"
    said = claims["source"].map(lambda s: s if isinstance(s, str) and s else "—") if "source" in claims else ""
    out = claims.assign(**{"paper says": said,
                           "paper effect": claims.apply(paper, axis=1) if len(claims) else [],
                           "half-width": claims.apply(half, axis=1) if len(claims) else [],
                           "n": claims["n"].map(lambda n: "" if n is None or n != n else str(int(n)))})
    return out[SHOWN]


def underpowered(claims) -> str:
    """The discussion's list: '3 of 12 rows are underpowered: <claim> (<setting>); ...'."""
    u = claims[claims.power == UNDERPOWERED]
    known = claims[claims.power != "no paper number"]
    if not len(known):
        return "No row has a paper number to size its power against."
    head = f"{len(u)} of {len(known)} rows with a paper number are underpowered (interval wider than the paper's effect)"
    if not len(u):
        return head + "."
    return head + ": " + "; ".join(f"{c} ({s})" for c, s in zip(u.claim, u.setting)) + "."


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


def kind_counts(claims) -> dict:
    """A claims table's rows counted as it shows them: decided rows by verdict, the other kinds by kind
    (``{"decided": {"holds": 3, "does not hold": 1}, "inconclusive": 2, "uninformative": 1}``), so that a summary
    line never counts a row the table does not."""
    out: dict = {}
    for kind in KINDS:
        rows = claims[claims["kind"] == kind] if len(claims) else claims
        if len(rows):
            out[kind] = ({v: int(n) for v, n in rows.verdict.value_counts().items()} if kind == DECIDED
                         else int(len(rows)))
    return out


def count_verdicts(claims, prefix: str | tuple[str, ...]) -> str:
    """'holds: 2, inconclusive: 1' for the rows of a claims frame whose claim starts with ``prefix``; rows
    that are no verdict (uninformative, true by construction) are counted apart: '...; uninformative: 4'. A prefix
    that names more than one claim is refused: a summary line counts the rows of the claims it names, no others
    (a tuple of prefixes, one per claim, counts several together)."""
    for p in (prefix,) if isinstance(prefix, str) else prefix:
        named = claims.claim[claims.claim.str.startswith(p)].unique()
        if len(named) > 1:
            raise ValueError(f"{p!r} names {len(named)} claims ({'; '.join(named)}): a count must name one")
    c = claims[claims.claim.str.startswith(prefix)]
    kind = c["kind"] if "kind" in c else c.verdict.map(lambda _: DECIDED)
    answered = c[kind.isin([DECIDED, INCONCLUSIVE])]
    text = ", ".join(f"{v}: {k}" for v, k in answered.verdict.value_counts().items())
    other = ", ".join(f"{v}: {k}" for v, k in kind[~kind.isin([DECIDED, INCONCLUSIVE])].value_counts().items())
    return "; ".join(t for t in (text, other) if t) or "not run"


def headline(claims, claim: str) -> str:
    """One generated line for the README: how the rows of the paper's headline ``claim`` (rows whose
    claim starts with it, in ``claims``: a claims table as shown) came out, and the measurement of
    the first decided row (else the first row)."""
    rows = claims[claims["claim"].astype(str).str.startswith(claim)] if len(claims) else claims
    if not len(rows):
        return f"*{claim}*: not checked in this run."
    apart = rows["kind"].isin([UNINFORMATIVE, CONSTRUCTION, DEPENDS]) if "kind" in rows else rows["verdict"].isna()
    counts = rows[~apart]["verdict"].value_counts()
    others = rows[apart]["kind"].value_counts().items() if apart.any() else []  # not verdicts: counted apart
    said = ", ".join([f"{v} in {counts[v]}" for v in (HOLDS, FAILS, INCONCLUSIVE) if v in counts]
                     + [f"{k} in {n}" for k, n in others])
    decided = rows[~apart & rows["verdict"].isin([HOLDS, FAILS])]
    first = (decided if len(decided) else rows).iloc[0]
    return (f"*{rows['claim'].iloc[0]}*: {said} of {len(rows)} settings; e.g. {first['setting']}: "
            f"{first['measured']} ({first['verdict']}).")
