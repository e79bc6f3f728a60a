"""Design detectors: why a comparison could not have shown an effect (both sides destroyed, a model at its
trivial answer, a difference carried by answer bias), and the flag for two collapsed models."""
from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from repro.evaluate.stats import bootstrap_ci

if TYPE_CHECKING:
    from repro.claims.rule import Claim

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
