"""MP-G's siblings on the worked layer: every head scorer of notebook 1 on the same real layer, from its score
record (the scores each method computed for the whole model, one calibration draw), side by side.

- Wanda-Head (eq. 4): :math:`\\sum |W_{ij}|\\,\\lVert X_j \\rVert_2` over the head's Q/K/V rows and O columns, X the
  inputs of each projection over the calibration windows;
- SparseGPT-Head: :math:`\\sum W_{ij}^2 H_{jj}`, the OBS saliency with the Hessian's diagonal
  :math:`H = \\tfrac{2}{n} X^\\top X`;
- Gradient-Head: :math:`\\sum |W_{ij} g_{ij}|`, g the language-model loss's gradient over the calibration windows;
- Hybrid: min-max(Magnitude-Head) + min-max(MP) + min-max(Wanda-Head);
- MP / MP-G (eqs. 1-3): the excess of each feature's norm over :math:`\\mu + z\\sigma`, K/V counted in full (MP) or
  divided by the group size g (MP-G).

Low scores are pruned first; the ranking is global over every head of the model.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats

from repro.methods.heads import n_to_prune
from repro.papers.mpg.records import LABEL, find_scores

SCORERS = ("mpg", "mp", "magnitude-head", "wanda-head", "sparsegpt-head", "gradient-head", "hybrid")


def side_by_side(scores: pd.DataFrame, model: str, layer: int, sparsity: float = 0.25) -> pd.DataFrame:
    """Per head of ``layer``: each scorer's score, its global rank (1: pruned first, ties by index as the notebooks
    break them) and whether the scorer prunes it at ``sparsity``."""
    rows = {}
    for m in SCORERS:
        rec = find_scores(scores, model, m)
        if rec is None:
            continue
        s = np.asarray(rec.scores, dtype=float)
        order = np.argsort(s.ravel(), kind="stable")  # index tie-break: the lowest flat index first
        rank = np.empty(s.size, dtype=int)
        rank[order] = np.arange(1, s.size + 1)
        rank = rank.reshape(s.shape)
        k = n_to_prune(sparsity, s.size)
        for h in range(s.shape[1]):
            row = rows.setdefault(h, {"head": h})
            row[LABEL[m]], row[f"{LABEL[m]} rank"] = s[layer, h], int(rank[layer, h])
            row[f"{LABEL[m]} prunes"] = bool(rank[layer, h] <= k)
    return pd.DataFrame(list(rows.values()))


def shown(t: pd.DataFrame) -> pd.DataFrame:
    """The table as the notebook shows it: the head, MP-G's score, and per method its global rank, "*" where it
    prunes the head."""
    if not len(t):
        return t
    out = pd.DataFrame({"head": t["head"], "MP-G score": t[LABEL["mpg"]].round(4)})
    for m in SCORERS:
        if LABEL[m] in t:
            out[LABEL[m]] = [f"{r}{'*' if p else ''}" for r, p in zip(t[f"{LABEL[m]} rank"], t[f"{LABEL[m]} prunes"])]
    return out


def side_by_side_reading(t: pd.DataFrame, layer: int, sparsity: float) -> str:
    """What the table shows: how many of the layer's heads each scorer prunes, and how each calibrated score orders
    the layer's heads against MP-G (Spearman over the layer's heads)."""
    if not len(t) or LABEL["mpg"] not in t:
        return ""
    pruned = {c.removesuffix(" prunes"): int(t[c].sum()) for c in t.columns if c.endswith(" prunes")}
    rho = []
    for m in ("wanda-head", "sparsegpt-head", "gradient-head"):
        if LABEL[m] in t and t[LABEL["mpg"]].nunique() > 1:
            rho.append(f"{LABEL[m]} {stats.spearmanr(t[LABEL['mpg']], t[LABEL[m]]).statistic:+.2f}")
    zeros = int((t[LABEL["mpg"]] == 0).sum())
    return (f"At {sparsity:.0%}, of layer {layer}'s {len(t)} heads " + ", ".join(f"{k} prunes {v}" for k, v in
                                                                               pruned.items())
            + f". MP-G scores {zeros} of them exactly 0"
            + (f"; within the layer the calibrated scores order the heads against MP-G with Spearman {', '.join(rho)}"
               if rho else "") + ": what decides a head's fate is its rank among all of the model's heads, which the "
            "table's rank columns give.")
