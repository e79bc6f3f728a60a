"""Notebook 1's worked one-layer example in words: the sentences on :mod:`repro.methods.head_terms`' frames
(MP and MP-G taken apart on a model's real weights, every number from the weights)."""
from __future__ import annotations

import pandas as pd

from repro.methods.head_terms import (  # noqa: F401  (the notebook reads the frames from here too)
    all_terms,
    collapse_anatomy,
    collapse_compare,
    global_shifts,
    layer_terms,
    pick_layer,
    rank_disagreement,
    single_kv_constant,
    zero_score_arithmetic,
)
from repro.words import ordinal

# ---- the numbers in words ------------------------------------------------------------------------------------

def layer_reading(terms: pd.DataFrame) -> str:
    """One sentence on a :func:`layer_terms` frame: the head MP-G ranks lower than MP by most places (only a
    head with a KV excess can fall), why, and a head MP-G puts above it that MP put at or below it."""
    layer, g, n = int(terms.layer.iloc[0]), int(terms.g.iloc[0]), len(terms)
    fall = terms.rank_mpg - terms.rank_mp
    if fall.max() <= 0:
        why = "g = 1, so MP-G is MP" if g == 1 else f"no head's rank moves when the KV term is divided by g = {g}"
        return f"In layer {layer}, MP and MP-G rank the {n} heads alike ({why})."
    h = terms.assign(_fall=fall).sort_values(["_fall", "kv_mp", "head"], ascending=[False, False, True]).iloc[0]
    past = terms[(terms.mp <= h.mp) & (terms.mpg > h.mpg)].sort_values("mpg", ascending=False).iloc[0]
    return (f"In layer {layer}, MP ranks head {int(h['head'])} {ordinal(int(h.rank_mp))} of {n} while MP-G ranks it "
            f"{ordinal(int(h.rank_mpg))}: its own Q+O excess is {h.qo:.2f}, and its KV group's K+V excess, "
            f"{h.kv_mp:.2f}, counts in full under MP and as {h.kv_mp:.2f}/{g} = {h.kv_mpg:.2f} under MP-G, so head "
            f"{int(past['head'])} (Q+O {past.qo:.2f}, its group's K+V {past.kv_mp:.2f}) overtakes it.")


def _pct(p: float) -> str:
    return "0%" if p == 0 else "under 0.01%" if p < 1e-4 else f"{100 * p:.2g}%"


def zero_reading(arith: dict) -> str:
    """Three sentences on a :func:`zero_score_arithmetic` dict: real counts, approximations, the two compared."""
    a, d = arith, arith["head_dim"]
    zero, expected = a["heads_zero"], a["independent_p_head_zero"] * a["heads_total"]
    than = ("more than" if zero >= 2 * expected and zero - expected >= 1 else
            "fewer than" if zero <= expected / 2 and expected - zero >= 1 else "close to")
    cluster = ": the features above the threshold cluster in fewer heads" if than == "more than" else ""
    return (f"With {d} rows per head and {_pct(a['fraction_above'])} of all Q/K/V rows and O columns above "
            f"mu + {a['z']:g} sigma of their projection ({a['above']} of {a['features']}), {a['heads_zero']} of "
            f"{a['heads_total']} heads ({_pct(a['fraction_zero'])}) have none of their {a['features_per_head']} Q, O, "
            f"K and V features above it, and so score exactly 0. Were the features independent, the observed "
            f"fractions would leave {_pct(a['independent_p_head_zero'])} of heads at 0 (a normal distribution puts "
            f"{_pct(a['normal_tail'])} beyond {a['z']:g} sigma, which would leave {_pct(a['normal_p_head_zero'])}; both "
            f"approximations). The real count, {zero}, is {than} the {expected:.1f} heads independence predicts{cluster}.")


def collapse_reading(compare: pd.DataFrame, sparsity: float) -> str:
    """One sentence on a :func:`collapse_compare` frame: the layers each score empties at ``sparsity``."""
    parts = []
    for col in [c for c in compare.columns if c.endswith(" emptied")]:
        layers = compare.layer[compare[col]].tolist()
        what = f"empties layer{'s' * (len(layers) > 1)} {', '.join(map(str, layers))}" if layers else "empties no layer"
        parts.append(f"{col[:-len(' emptied')]} {what}")
    return f"At {sparsity:.0%} sparsity, " + "; ".join(parts) + "."


def single_kv_reading(kv: pd.DataFrame) -> str:
    """One sentence on a :func:`single_kv_constant` frame (records): the KV term's range across layers, and
    whether it is constant, and the order MP's, within every layer."""
    return (f"The KV term ranges from {kv.kv_mpg.min():.3g} to {kv.kv_mpg.max():.3g} across layers under MP-G; it is "
            f"the same for every head of a layer in {int(kv.kv_constant.sum())} of {len(kv)} layers, and MP-G orders "
            f"the heads within a layer as MP does in {int(kv.same_order.sum())} of {len(kv)}.")


def emptied_reading(scores: pd.DataFrame, model: str, sparsity: float) -> str:
    """Which layers MP and MP-G empty at ``sparsity`` on ``model`` (``scores``: the notebook's score records,
    z = 2), in one sentence; "" without both records."""
    from repro.papers.mpg.records import find_scores

    got = {label: r["scores"] for label, m in (("MP", "mp"), ("MP-G", "mpg"))
           if (r := find_scores(scores, model, m)) is not None}
    return collapse_reading(collapse_compare(got, sparsity), sparsity) if len(got) == 2 else ""
