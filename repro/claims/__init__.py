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
from repro.claims.combine import across, once, with_paper, with_sources
from repro.claims.detect import (
                                 COLLAPSE,
                                 ONE_ANSWER,
                                 at_chance,
                                 beyond_dense,
                                 carried_by_bias,
                                 classifier_destroyed,
                                 collapsed,
                                 destroyed,
                                 judged_on,
                                 one_answer,
                                 pooled_trivial,
                                 task_trivial,
                                 trivial_answer,
)
from repro.claims.render import (
                                 COLUMNS,
                                 POWER_NOTE,
                                 SHOWN,
                                 claims_frame,
                                 claims_markdown,
                                 count_verdicts,
                                 headline,
                                 kind_counts,
                                 shown,
                                 underpowered,
)
from repro.claims.rule import (
                                 ALPHA,
                                 CONSTRUCTION,
                                 DECIDED,
                                 DEPENDS,
                                 FAILS,
                                 HOLDS,
                                 INCONCLUSIVE,
                                 KINDS,
                                 POWER,
                                 UNDERPOWERED,
                                 UNINFORMATIVE,
                                 Claim,
                                 difference_claim,
                                 fmt_ratio,
                                 ratio_claim,
                                 verdict,
)

__all__ = [
    "ALPHA",
    "COLLAPSE",
    "COLUMNS",
    "CONSTRUCTION",
    "Claim",
    "DECIDED",
    "DEPENDS",
    "FAILS",
    "HOLDS",
    "INCONCLUSIVE",
    "KINDS",
    "ONE_ANSWER",
    "POWER",
    "POWER_NOTE",
    "SHOWN",
    "UNDERPOWERED",
    "UNINFORMATIVE",
    "across",
    "at_chance",
    "beyond_dense",
    "carried_by_bias",
    "claims_frame",
    "claims_markdown",
    "classifier_destroyed",
    "collapsed",
    "count_verdicts",
    "destroyed",
    "difference_claim",
    "fmt_ratio",
    "headline",
    "judged_on",
    "kind_counts",
    "once",
    "one_answer",
    "pooled_trivial",
    "ratio_claim",
    "shown",
    "task_trivial",
    "trivial_answer",
    "underpowered",
    "verdict",
    "with_paper",
    "with_sources",
]
