"""Notebook 1's "Try it" exercises: small live experiments on one real model, in float32, each answering in
seconds on 2 CPU cores. Each returns a :class:`repro.report.Table` whose reading is generated from its numbers;
the notebook states the question and asks for a prediction before the cell runs (:meth:`Session.try_it`)."""
from __future__ import annotations

import numpy as np
import pandas as pd

from repro.evaluate.ppl import perplexity
from repro.methods.heads import n_to_prune, score_heads, select_heads
from repro.papers.mpg.params import MpgParams
from repro.report import Table, committed_csv

COMMITTED = MpgParams.model_fields["figures_dir"].default  # the cpu profile's tables, relative to notebooks/


def zero_scores(exp, sparsity: float = 0.125, z_values=(1.0, 1.5, 2.0, 2.5, 3.0)) -> Table:
    """MP-G's scores of ``exp``'s model at each threshold z (weights only, no calibration): how many heads score
    exactly 0, how many of the heads a ``sparsity`` cut prunes were picked by index order among equal scores
    (:func:`by_index`), and how many layers lose every head."""
    rows = []
    for z in z_values:
        s = score_heads("mpg", exp.model, z=z)
        chosen = select_heads(s, sparsity)
        per_layer = np.bincount([layer for layer, _ in chosen], minlength=s.shape[0])
        rows.append({"z": z, "heads": s.size, "score exactly 0": int((s == 0).sum()),
                     "pruned": n_to_prune(sparsity, s.size), "picked by index order": by_index(s, chosen),
                     "layers emptied": int((per_layer == s.shape[1]).sum())})
    t = pd.DataFrame(rows)
    lo, hi = t.iloc[0], t.iloc[-1]
    reading = (f"From z = {lo.z:g} to z = {hi.z:g} the heads scoring exactly 0 go from {lo['score exactly 0']} to "
               f"{hi['score exactly 0']} of {lo.heads}. Of the {lo.pruned} heads a {sparsity:.1%} cut prunes, "
               f"{lo['picked by index order']} at z = {lo.z:g} and {hi['picked by index order']} at z = {hi.z:g} are "
               "picked from a tie that the cut splits, by their (layer, head) index alone: a higher z leaves fewer "
               "features above mu + z sigma, so more heads share the score 0, and once they outnumber the cut the "
               "weights no longer decide which of them go.")
    return Table(t, f"**Try it: MP-G's zero scores against z.** {exp.name}, weights only (no calibration), "
                    f"{sparsity:.1%} of heads.", reading)


def by_index(scores: np.ndarray, chosen) -> int:
    """How many of the ``chosen`` heads the (layer, head) order picked: those sharing the score at the cut, when
    that tie holds more heads than the cut takes (0 when the cut ends at a change of score)."""
    cut = max(scores[layer, head] for layer, head in chosen)
    inside = sum(scores[layer, head] == cut for layer, head in chosen)
    return int(inside) if int((scores == cut).sum()) > inside else 0


def pruned_ppl(exp, sparsity: float = 0.25, methods=("mpg", "mp", "random"), windows: int = 4,
               seqlen: int = 256) -> Table:
    """Perplexity of ``exp``'s model with each calibration-free scorer's ``sparsity`` of heads masked, on the first
    ``windows`` x ``seqlen`` tokens of its evaluation data (float32), beside the dense model's."""
    import torch

    from repro.arch import adapter as get_adapter
    from repro.evaluate.anatomy import head_mask
    from repro.structure import Masks

    model, shape = exp.model, exp.shape
    rows = []

    def ppl() -> float:
        with torch.no_grad():
            return perplexity(model, exp.loaded.tokenizer, exp.data, seqlen, windows, 1, False, exp.bos).ppl

    dense = ppl()
    rows.append({"method": "dense", "heads pruned": 0, "ppl": dense, "x dense": 1.0})
    for m in methods:
        pruned = select_heads(score_heads(m, model), sparsity)
        with Masks(get_adapter(model)) as masks:
            masks.heads = head_mask(shape, pruned)
            p = ppl()
        rows.append({"method": m, "heads pruned": len(pruned), "ppl": p, "x dense": p / dense})
    t = pd.DataFrame(rows).round(3)
    if len(t) == 1:
        return Table(t, f"**Try it: dense perplexity.** {exp.name}; first {windows} x {seqlen} tokens; float32.")
    best = t.iloc[1:].sort_values("ppl").iloc[0]
    reading = (f"On {windows} windows of {seqlen} tokens, the dense model scores {dense:.2f}; with {sparsity:.0%} of "
               f"heads masked the lowest perplexity is {best.method}'s ({best.ppl:.2f}, {best['x dense']:.2f} x "
               "dense). So few windows give a noisy number: the notebook's tables pair many windows and seeds.")
    return Table(t, f"**Try it: perplexity with {sparsity:.0%} of heads masked.** {exp.name}; {exp.data.label}, "
                    f"first {windows} x {seqlen} tokens; float32.", reading)


def committed_zero_scores(model: str = "smollm2-135m", figures: str = COMMITTED) -> str:
    """What the committed records say about zero scores and the cut: MP-G's zero-score heads at each z (section 7),
    and which Table I cells the (layer, head) order decides."""
    counts, ties = committed_csv(figures, "tie_counts_by_z.csv"), committed_csv(figures, "zero_score_ties.csv")
    if counts is None or ties is None:
        return f"(no committed tables under {figures})"
    c = counts[(counts.model == model) & (counts.method == "MP-G")]
    zs = ", ".join(f"{int(r['heads scoring exactly 0'])} at z = {r.z:g}" for _, r in c.iterrows())
    cells = ties[(ties.model == model) & (ties.method == "MP-G")]
    cuts = "; ".join(f"at {r.sparsity} ({int(r['heads cut'])} heads) {r['what decides']}" for _, r in cells.iterrows())
    return (f"Section 7 (profile `cpu`, `tie_counts_by_z.csv`): on {model}, MP-G's heads scoring exactly 0 number "
            f"{zs}, of {int(c.heads.iloc[0])}. At the paper's z = 2, Table I's cuts are decided as follows "
            f"(`zero_score_ties.csv`): {cuts}.")


def committed_pruned_ppl(model: str = "smollm2-135m", sparsity: str = "12.5%", figures: str = COMMITTED) -> str:
    """Table I's dense, MP-G, MP and Random perplexities of ``model`` at ``sparsity``, and MP-G's paired ratio to
    Random over the windows."""
    t, paired = committed_csv(figures, "table1_ppl.csv", header=[0, 1]), committed_csv(figures, "paired_vs_mpg.csv")
    if t is None or paired is None:
        return f"(no committed tables under {figures})"
    col = t[(model, sparsity)]
    r = paired[(paired.model == model) & (paired.sparsity == sparsity) & (paired.vs == "Random")].iloc[0]
    return (f"Table I (profile `cpu`, its windows spread over the split): on {model} at {sparsity}, dense "
            f"{col['Dense']:.2f}, MP-G {col['MP-G']:.2f}, MP {col['MP']:.2f}, Random {col['Random']:.2f} (geometric "
            f"mean of its seeds). Paired over the same windows, MP-G's perplexity is {r['ppl ratio']:.3f} x "
            f"Random's, 95% interval {r['95% CI']}, lower on {r['windows better']} windows. A few short windows give "
            "numbers of the same order, not the same values.")


def exercises(exp):
    """Notebook 1's exercises on ``exp`` (the first model), their default runs the values section 1b's cells start
    with (:class:`repro.papers.exercises.Exercises`)."""
    from repro.papers.exercises import Exercises

    return Exercises(exp, {"zero_scores": zero_scores, "pruned_ppl": pruned_ppl},
                     [("zero_scores", {"sparsity": 0.125, "z_values": [1.0, 1.5, 2.0, 2.5, 3.0]}),
                      ("pruned_ppl", {"sparsity": 0.125, "methods": ["mpg", "mp", "random"], "windows": 4})])
