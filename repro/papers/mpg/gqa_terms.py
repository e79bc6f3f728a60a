"""Why dividing by g picks MP-G's own cuts (issue 67): eq. 3's two terms of every head, read back from its MP and MP-G
scores, for the heads that only one of the two methods prunes.

MP scores a head by its own Q and O excess plus its group's shared K and V excess, MP-G by the same with the K/V
term divided by the group size g:

    MP(h) = QO(h) + KV(h),        MP-G(h) = QO(h) + KV(h) / g,

so for g > 1 each head's terms follow from its two scores alone: ``KV = (MP - MP-G) g / (g - 1)`` and
``QO = MP - KV``. A head whose score is mostly its group's K/V excess scores high under MP and low under MP-G (a
g-th of it), so MP-G cuts it where MP keeps it; a head whose score is its own Q/O excess scores the same under both.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from repro.methods.heads import select_heads
from repro.papers.mpg.records import find_scores, pct

COLUMNS = ["layer/head", "pruned by", "Q/O excess", "K/V excess", "K/V / g", "MP score", "MP-G score", "rank under MP",
           "rank under MP-G"]


def terms(mp: np.ndarray, mpg: np.ndarray, g: int) -> tuple[np.ndarray, np.ndarray]:
    """(QO, KV): each head's own Q/O excess and its group's K/V excess, from its MP and MP-G scores (``g`` > 1)."""
    if g <= 1:
        raise ValueError(f"the terms of eq. 3 are apart only for g > 1, got g = {g}")
    kv = (np.asarray(mp, float) - np.asarray(mpg, float)) * g / (g - 1)
    return np.asarray(mp, float) - kv, kv


def differing_heads(scores: pd.DataFrame, model: str, sparsity: float, g: int, z: float = 2.0) -> pd.DataFrame:
    """The heads only one of MP and MP-G prunes at ``sparsity`` (``model``'s score records at ``z``), each with its two
    terms, both scores and its rank under each (1: pruned first)."""
    a, b = find_scores(scores, model, "mp", z), find_scores(scores, model, "mpg", z)
    if a is None or b is None or g <= 1:
        return pd.DataFrame()
    mp, mpg = np.asarray(a["scores"], float), np.asarray(b["scores"], float)
    qo, kv = terms(mp, mpg, g)
    cut_mp, cut_mpg = set(select_heads(mp, sparsity)), set(select_heads(mpg, sparsity))
    rank = {k: _ranks(s) for k, s in (("mp", mp), ("mpg", mpg))}
    rows = [{"layer/head": f"{layer}/{head}", "pruned by": who, "Q/O excess": qo[layer, head], "K/V excess": kv[layer, head],
             "K/V / g": kv[layer, head] / g, "MP score": mp[layer, head], "MP-G score": mpg[layer, head],
             "rank under MP": rank["mp"][(layer, head)], "rank under MP-G": rank["mpg"][(layer, head)]}
            for who, heads in (("MP-G only", cut_mpg - cut_mp), ("MP only", cut_mp - cut_mpg))
            for layer, head in sorted(heads)]
    return pd.DataFrame(rows, columns=COLUMNS).assign(model=model, sparsity=pct(sparsity), g=g)


def _ranks(s: np.ndarray) -> dict[tuple[int, int], int]:
    """Each head's place in the global order a cut takes heads in (lowest score first, ties by (layer, head):
    :func:`repro.methods.heads.select_heads`'s index tie-break), 1 first."""
    layers, heads = np.indices(s.shape)
    order = np.lexsort((heads.ravel(), layers.ravel(), s.ravel()))
    return {(int(layers.ravel()[i]), int(heads.ravel()[i])): r + 1 for r, i in enumerate(order)}


def reading(t: pd.DataFrame) -> str:
    """What the two groups' terms say, per model: the share of each group's MP score that is its group's K/V excess."""
    lines = []
    for model, f in t.groupby("model", sort=False) if len(t) else []:
        def share(who: str) -> tuple[int, float, float]:
            x = f[f["pruned by"] == who]
            s = (x["K/V excess"] / x["MP score"].where(x["MP score"] > 0)).dropna()
            return len(x), float(s.median()) if len(s) else float("nan"), float(x["Q/O excess"].median()) if len(x) else float("nan")
        (n_g, kv_g, qo_g), (n_m, kv_m, qo_m) = share("MP-G only"), share("MP only")
        g, sp = int(f.g.iloc[0]), f.sparsity.iloc[0]
        text = (f"- **{model}** at {sp} (g = {g}): the {n_g} heads only MP-G prunes owe a median {kv_g:.0%} of their MP "
                f"score to their group's K/V excess (own Q/O excess, median {qo_g:.3g}); the {n_m} heads only MP prunes "
                f"{kv_m:.0%} (Q/O, median {qo_m:.3g}).")
        if kv_g > kv_m:
            text += (" Dividing the shared term by g takes most from the heads whose score is their group's, so MP-G "
                     "cuts those (their own Q/O excess is small) and keeps heads with their own excess that MP cuts.")
        else:
            text += " The division does not single out heads that lean on their group's K/V term here."
        lines.append(text)
    return "\n".join(lines)
