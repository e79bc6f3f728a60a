"""Notebook 1's section 3's "why" tables, from records only: Table I's sample against the whole split, why
collapsed cells collapse (:meth:`repro.engines.heads.HeadExperiment.anatomy` records), why a calibrated
score empties whole layers (its per-layer scale), and the layer-normalised ranking (our remedy ablation).
What they show in words: :mod:`.readings`.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from repro.claims import collapsed
from repro.evaluate.stats import paired_ratio
from repro.methods.heads import select_heads
from repro.papers.mpg.records import LABEL, find, find_scores, pct
from repro.report import fmt_ci
from repro.store import Store

# ---- Table I's sample against the whole split ------------------------------------------------------

def sample_vs_split(main: pd.DataFrame, full: dict[str, dict], experiments: dict) -> pd.DataFrame:
    """Per model: the dense perplexity on Table I's windows and over every window of the split."""
    rows = []
    for name, rec in full.items():
        d = find(main, name, "dense")
        res = rec["result"]
        rows.append({"model": name, "Table I sample": experiments[name].windows(),
                     "dense on the sample": None if d is None else fmt_ci(d.ppl, d.ci95, 3),
                     "whole split": f"{res['ppl']:.3f} ({res['n_windows']} x {res['seqlen']} tokens)",
                     "sample / whole": None if d is None else round(d.ppl / res["ppl"], 3)})
    return pd.DataFrame(rows)


# ---- anatomy of collapsed cells --------------------------------------------------------------------

def anatomy_frame(store: Store, experiments: dict, session: bool = True) -> pd.DataFrame:
    """One row per ``heads-anatomy`` record of ``experiments`` (their model, evaluation data and dtype)."""
    rows = []
    for r in store.current("heads-anatomy", session):
        c, res = r["config"], r["result"]
        e = experiments.get(c["model"]["name"])
        if e is None or c["data"] != e.base_config()["data"] or c["dtype"] != e.setup.eval_dtype:
            continue
        rows.append({"model": c["model"]["name"], "method": c["method"], "sparsity": c["sparsity"],
                     "n_windows": c["n_windows"], "seqlen": c["seqlen"], **res})
    if not rows:
        return pd.DataFrame(rows)
    order = {m: i for i, m in enumerate(experiments)}, {m: i for i, m in enumerate(LABEL)}
    frame = pd.DataFrame(rows)
    rank = frame.apply(lambda r: (order[0][r.model], order[1].get(r.method, len(LABEL)), r.sparsity), axis=1)
    return frame.iloc[sorted(range(len(frame)), key=lambda i: rank.iloc[i])].reset_index(drop=True)


def _head(layer_head) -> str:
    return f"{layer_head[0]}.{layer_head[1]}"


def anatomy_table(frame: pd.DataFrame) -> pd.DataFrame:
    """What each diagnosed selection does, in nats of loss on the diagnosis windows: its damage, the
    layers it empties, the later layer whose attention output grows most, the single pruned head whose
    return repairs most, the single extra head whose removal repairs most, and (post-norm families) the
    largest scale-up of a layer's survivors."""
    rows = []
    for _, a in frame.iterrows():
        damage = a.nll - a.nll_dense
        best_back = min(a.restore, key=lambda t: t[2]) if a.restore else None
        best_add = min(a["add"], key=lambda t: t[2]) if a["add"] else None
        grown = a.grown_layer
        rem = a.get("remaining") if isinstance(a.get("remaining"), dict) else {}
        low = min(rem.items(), key=lambda kv: kv[1]) if rem else None
        rows.append({
            "model": a.model, "cells": f"{LABEL[a.method]} @ {pct(a.sparsity)}",
            "damage (nats)": round(damage, 3),
            "emptied layers": ", ".join(map(str, a.emptied)) or "none",
            "largest attention-output RMS vs dense": "-" if grown is None else
            f"layer {grown}: x{a.rms_ratio[f'head:{grown}']:.2f}",
            "best single restore": "-" if best_back is None else
            f"{_head(best_back)}: {best_back[2] - a.nll:+.3f} ({(a.nll - best_back[2]) / damage:.0%} of the damage)"
            if damage > 0 else f"{_head(best_back)}: {best_back[2] - a.nll:+.3f}",
            "best extra cut": "-" if best_add is None else f"{_head(best_add)}: {best_add[2] - a.nll:+.3f}",
            "survivors scaled up (post-norm)": "no post-norm" if not a.get("post_norm") else
            ("-" if low is None else f"layer {low[0]}: x{1 / max(low[1], 1e-12):.2f}")})
    return pd.DataFrame(rows)


def best_restore(a) -> tuple[str, float] | None:
    """(head as layer.head, share of the damage its return alone removes) of a diagnosed selection (a row of
    :func:`anatomy_frame`); None without damage."""
    damage = a.nll - a.nll_dense
    if not a.restore or damage <= 0:
        return None
    back = min(a.restore, key=lambda t: t[2])
    return _head(back), (a.nll - back[2]) / damage


# ---- why a score empties whole layers ----------------------------------------------------------------

def layer_scale(scores: pd.DataFrame, model: str, methods: list[str], sparsity: float) -> pd.DataFrame:
    """Per layer and method: the layer's median head score over the median of all heads (a score's scale
    with depth), and the heads the method prunes there at ``sparsity``. For an activation-weighted score
    (Wanda-Head) its ratio to Magnitude-Head's per-layer scale isolates the activations' share."""
    rows = {}
    for m in methods:
        r = find_scores(scores, model, m)
        if r is None:
            continue
        s = np.asarray(r["scores"], float)
        med = np.median(s) or 1.0
        cut = np.bincount([l for l, _ in select_heads(s, sparsity)], minlength=s.shape[0])
        rows[f"{LABEL[m]} scale"] = np.median(s, axis=1) / med
        rows[f"{LABEL[m]} pruned"] = cut
    return pd.DataFrame(rows).rename_axis("layer").reset_index()


# ---- the remedy ablation -------------------------------------------------------------------------

def remedy_table(frame: pd.DataFrame, models: list[str], methods: list[str], sparsities: list[float],
                 heads_per_layer: dict[str, int]) -> pd.DataFrame:
    """Each ``method`` ranked globally (Table I, first draw) and by layer-normalised scores, paired on the
    same windows (``frame``: one row per draw): perplexities, the ratio normalised / global with its
    interval (``lo``, ``hi``), how many layers each selection empties, and whether both sides collapsed
    (:func:`repro.claims.collapsed`: then which ranking is "better" says nothing)."""
    rows = []
    f = frame[frame.draw.eq(0)]
    for model in models:
        dense = find(f, model, "dense")

        def emptied(cell) -> int:
            per_layer = np.bincount([layer for layer, _ in cell.pruned or []]) if cell.pruned else np.zeros(1)
            return int((per_layer == heads_per_layer[model]).sum())
        for sp in sparsities:
            for m in methods:
                g, lay = find(f, model, m, sp), find(f, model, m, sp, scale="layer")
                if g is None or lay is None:
                    continue
                p = paired_ratio(lay.window_nll, g.window_nll)
                rows.append({"model": model, "sparsity": pct(sp), "method": LABEL[m], "ranked globally": g.ppl,
                             "layer-normalised": lay.ppl, "ratio": p.estimate, "lo": p.ci[0], "hi": p.ci[1],
                             "layers emptied (global -> normalised)": f"{emptied(g)} -> {emptied(lay)}",
                             "both collapsed": dense is not None and all(collapsed(c.ppl, dense.ppl) for c in (g, lay))})
    return pd.DataFrame(rows)
