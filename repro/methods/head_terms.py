"""MP and MP-G (eqs. 1-3) taken apart on a model's real weights, for teaching (notebook 1's worked example,
read in words by :mod:`repro.papers.mpg.readings`).

Every number is recomputed from the weights with the functions :func:`repro.methods.heads.mp` and
:func:`~repro.methods.heads.mpg` use (:func:`~repro.methods.heads.norms`, :func:`~repro.methods.heads.excess`),
and the scores here equal theirs exactly:

* :func:`layer_terms` (:func:`all_terms` for every layer): each head's Q, O, K, V excess sums, its KV term
  as MP counts it (K+V in full) and as MP-G does ((K+V)/g), both scores and both ranks;
* :func:`rank_disagreement`, :func:`pick_layer`, :func:`global_shifts`: where MP and MP-G order heads differently;
* :func:`zero_score_arithmetic`: why many heads score exactly 0 (real counts; a normal approximation beside them);
* :func:`single_kv_constant`: with one KV head per layer the KV term is a per-layer constant;
* :func:`collapse_anatomy`, :func:`collapse_compare`: per layer, the heads a global selection prunes, emptied layers.

Ranks: 1 = highest score = the last head pruned; tied scores share the best rank ("min" ranking), so all
zero-score heads of a layer share one rank.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.stats import norm, rankdata

from repro.arch import Adapter
from repro.arch import adapter as get_adapter
from repro.errors import ReproError
from repro.methods.heads import ROLES, excess, norms, select_heads


def _adapter(model) -> Adapter:
    return model if isinstance(model, Adapter) else get_adapter(model)


def _rank(scores) -> np.ndarray:
    return rankdata(-np.asarray(scores, dtype=float), method="min").astype(int)


# ---- the scores taken apart ---------------------------------------------------------------------------------

def layer_terms(model, layer: int, z: float = 2.0) -> pd.DataFrame:
    """One row per query head of ``layer``: ``q``/``o`` (the excess summed over its own Q rows / O columns),
    ``k``/``v`` (over its KV group's K / V rows), ``qo`` = q + o, ``kv_mp`` = k + v (MP counts it in full),
    ``kv_mpg`` = (k + v) / g (MP-G), the scores ``mp`` = qo + kv_mp and ``mpg`` = qo + kv_mpg, and each head's
    rank within the layer under each (``rank_mp``, ``rank_mpg``). ``model``: a model or its adapter."""
    attn = _adapter(model).attention(layer)
    g, d, n = attn.group_size, attn.head_dim, attn.n_heads
    # per-unit sums exactly as repro.methods.heads sums them (float64, blocks of head_dim features)
    unit = {r: excess(norms(attn, r), z).reshape(-1, d).sum(1).cpu().numpy() for r in ROLES}
    group = np.arange(n) // g
    kv = (unit["k"] + unit["v"])[group]
    t = pd.DataFrame({"layer": layer, "head": np.arange(n), "kv_group": group, "g": g,
                      "q": unit["q"], "o": unit["o"], "k": unit["k"][group], "v": unit["v"][group],
                      "qo": unit["q"] + unit["o"], "kv_mp": kv, "kv_mpg": kv / g})
    t["mp"] = t.qo + t.kv_mp
    t["mpg"] = t.qo + t.kv_mpg
    t["rank_mp"], t["rank_mpg"] = _rank(t.mp), _rank(t.mpg)
    return t


def all_terms(model, z: float = 2.0) -> pd.DataFrame:
    """:func:`layer_terms` of every layer, plus each head's rank among all L*H heads (``grank_mp``, ``grank_mpg``)."""
    ad = _adapter(model)
    t = pd.concat([layer_terms(ad, i, z) for i in range(ad.n_layers)], ignore_index=True)
    t["grank_mp"], t["grank_mpg"] = _rank(t.mp), _rank(t.mpg)
    return t


def _discordant(a: np.ndarray, b: np.ndarray) -> int:
    """Pairs of heads that ``a`` and ``b`` order differently (a pair tied under one only counts)."""
    sa, sb = np.sign(a[:, None] - a[None, :]), np.sign(b[:, None] - b[None, :])
    return int(np.triu(sa != sb, 1).sum())


def rank_disagreement(model, z: float = 2.0) -> pd.DataFrame:
    """Per layer: the pairs of heads MP and MP-G order differently (of ``pairs``), the heads whose within-layer
    rank moves, the largest move, each score's top head (lowest index among ties) and ``disagree``."""
    rows = []
    for layer, t in all_terms(model, z).groupby("layer", sort=True):
        n = len(t)
        rows.append({"layer": layer, "g": int(t.g.iloc[0]), "heads": n,
                     "discordant_pairs": _discordant(t.mp.to_numpy(), t.mpg.to_numpy()), "pairs": n * (n - 1) // 2,
                     "heads_moved": int((t.rank_mp != t.rank_mpg).sum()),
                     "max_rank_shift": int((t.rank_mp - t.rank_mpg).abs().max()),
                     "top_mp": int(t["head"][t.rank_mp == 1].iloc[0]), "top_mpg": int(t["head"][t.rank_mpg == 1].iloc[0])})
    frame = pd.DataFrame(rows)
    frame["disagree"] = frame.discordant_pairs > 0
    return frame


def pick_layer(model, z: float = 2.0) -> int | None:
    """The layer where MP and MP-G disagree most (most discordant pairs, then the largest rank move, then the
    lowest index), or None where they order every layer alike (MHA, g = 1; or one KV head per layer)."""
    d = rank_disagreement(model, z)
    if not d.disagree.any():
        return None
    d = d.sort_values(["discordant_pairs", "max_rank_shift", "layer"], ascending=[False, False, True])
    return int(d.layer.iloc[0])


def global_shifts(model, z: float = 2.0, top: int = 10) -> pd.DataFrame:
    """The ``top`` heads whose rank among all L*H heads differs most between MP and MP-G
    (``shift`` = grank_mpg - grank_mp: positive = MP-G ranks it lower, so prunes it sooner)."""
    t = all_terms(model, z)
    t["shift"] = t.grank_mpg - t.grank_mp
    t = t.assign(_abs=t["shift"].abs()).sort_values(["_abs", "layer", "head"], ascending=[False, True, True])
    return t[["layer", "head", "qo", "kv_mp", "kv_mpg", "mp", "mpg", "grank_mp", "grank_mpg", "shift"]].head(top)


# ---- why so many heads score exactly 0 ---------------------------------------------------------------------

def zero_score_arithmetic(model, z: float = 2.0) -> dict:
    """Real counts over all layers: per role the features (rows of W_Q/W_K/W_V, columns of W_O) above
    mu + z*sigma of their projection, and the heads with no feature above it among their Q, O and their KV
    group's K, V features: exactly those score 0, under MP and MP-G alike. For comparison, *approximations*:
    ``normal_tail`` = P(X > mu + z*sigma) for a normal X, ``normal_p_head_zero`` = (1 - normal_tail)^(4*head_dim)
    and ``independent_p_head_zero`` = prod over roles of (1 - observed fraction)^head_dim, both assuming
    independent features."""
    ad = _adapter(model)
    roles = {r: {"features": 0, "above": 0} for r in ROLES}
    zero = total = 0
    dims = set()
    for i in range(ad.n_layers):
        attn = ad.attention(i)
        d = attn.head_dim
        dims.add(d)
        hit = {}
        for r in ROLES:
            pos = (excess(norms(attn, r), z) > 0).cpu().numpy()
            roles[r]["features"] += pos.size
            roles[r]["above"] += int(pos.sum())
            hit[r] = pos.reshape(-1, d).any(1)
        group = np.arange(attn.n_heads) // attn.group_size
        scored = hit["q"] | hit["o"] | (hit["k"] | hit["v"])[group]
        zero += int((~scored).sum())
        total += attn.n_heads
    if len(dims) != 1:
        raise ReproError(f"zero_score_arithmetic needs one head_dim in every layer, got {sorted(dims)}")
    d = dims.pop()
    for v in roles.values():
        v["fraction"] = v["above"] / v["features"]
    n_feat, n_above = sum(v["features"] for v in roles.values()), sum(v["above"] for v in roles.values())
    tail = float(norm.sf(z))
    return {"z": z, "head_dim": d, "features_per_head": 4 * d, "roles": roles,
            "features": n_feat, "above": n_above, "fraction_above": n_above / n_feat,
            "heads_zero": zero, "heads_total": total, "fraction_zero": zero / total,
            "normal_tail": tail, "normal_p_head_zero": (1 - tail) ** (4 * d),
            "independent_p_head_zero": float(np.prod([(1 - v["fraction"]) ** d for v in roles.values()]))}


# ---- one KV head per layer: the KV term is a per-layer constant --------------------------------------------

def single_kv_constant(model, z: float = 2.0) -> pd.DataFrame:
    """For a model with one KV head per layer (g = H): per layer, the single KV head's K+V excess, the KV term
    every query head gets under MP (in full) and MP-G (/g), whether it is indeed the same for every head
    (``kv_constant``, checked on the per-head terms), the range of the heads' own Q+O terms, and whether MP,
    MP-G and Q+O alone order the layer's heads alike (``same_order``): a constant shifts a layer's heads together,
    so it moves the layer against the others in the global ranking, never the order within the layer."""
    ad = _adapter(model)
    rows = []
    for i in range(ad.n_layers):
        n_kv = ad.attention(i).n_kv_heads
        if n_kv != 1:
            raise ReproError(f"layer {i} has {n_kv} KV heads: single_kv_constant is for one KV head per layer")
        t = layer_terms(ad, i, z)
        qo_rank = _rank(t.qo)
        rows.append({"layer": i, "g": int(t.g.iloc[0]), "kv_excess": float(t.k.iloc[0] + t.v.iloc[0]),
                     "kv_mp": float(t.kv_mp.iloc[0]), "kv_mpg": float(t.kv_mpg.iloc[0]),
                     "kv_constant": bool(t.kv_mp.nunique() == 1 and t.kv_mpg.nunique() == 1),
                     "qo_min": float(t.qo.min()), "qo_max": float(t.qo.max()), "qo_spread": float(t.qo.max() - t.qo.min()),
                     "same_order": bool((t.rank_mp.to_numpy() == qo_rank).all() and (t.rank_mpg.to_numpy() == qo_rank).all())})
    return pd.DataFrame(rows)


# ---- which layers a global selection empties ---------------------------------------------------------------

def collapse_anatomy(scores: np.ndarray, sparsity: float, tie_break: str = "index", seed: int = 0) -> pd.DataFrame:
    """Per layer of an [L, H] score array: the heads :func:`repro.methods.heads.select_heads` prunes at
    ``sparsity``, those kept, and ``emptied`` (all of the layer's heads pruned)."""
    s = np.asarray(scores, dtype=float)
    pruned = np.zeros(s.shape[0], dtype=int)
    for layer, _ in select_heads(s, sparsity, tie_break, seed):
        pruned[layer] += 1
    return pd.DataFrame({"layer": np.arange(s.shape[0]), "heads": s.shape[1], "pruned": pruned,
                         "kept": s.shape[1] - pruned, "emptied": pruned == s.shape[1]})


def collapse_compare(scores: dict[str, np.ndarray], sparsity: float) -> pd.DataFrame:
    """:func:`collapse_anatomy` of several score arrays ({label: scores}, e.g. MP and MP-G) side by side:
    columns ``<label> pruned`` and ``<label> emptied`` per label."""
    out = None
    for label, s in scores.items():
        a = collapse_anatomy(s, sparsity)
        a = a[["layer", "heads", "pruned", "emptied"]].rename(columns={"pruned": f"{label} pruned",
                                                                      "emptied": f"{label} emptied"})
        out = a if out is None else out.merge(a, on=["layer", "heads"])
    return out
