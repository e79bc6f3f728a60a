"""Notebook 1's section 3's "why" tables, from records only: Table I's sample against the whole split, why
collapsed cells collapse (:meth:`repro.engines.heads.HeadExperiment.anatomy` records), why a calibrated
score empties whole layers (its per-layer scale), the layer-normalised ranking (our remedy ablation), and every
cell above a uniform guess or MP against MP-G by the layers they empty (with their readings here; the others'
are in :mod:`.readings`).
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
                     "z": c.get("z"), "draw": (c.get("calibration") or {}).get("seed"),
                     "n_windows": c["n_windows"], "seqlen": c["seqlen"], **res})
    if not rows:
        return pd.DataFrame(rows)
    order = {m: i for i, m in enumerate(experiments)}, {m: i for i, m in enumerate(LABEL)}
    frame = pd.DataFrame(rows)
    rank = frame.apply(lambda r: (order[0][r.model], order[1].get(r.method, len(LABEL)), r.sparsity), axis=1)
    frame = frame.iloc[sorted(range(len(frame)), key=lambda i: rank.iloc[i])].reset_index(drop=True)
    return frame.assign(cell=cell_labels(frame))


def cell_labels(frame: pd.DataFrame) -> list[str]:
    """Each diagnosed selection as 'Method @ sparsity', with its z where it is not 2 and its calibration draw where
    the same method and sparsity were diagnosed on more than one draw."""
    base = [f"{LABEL[a.method]} @ {pct(a.sparsity)}" + (f", z = {a.z:g}" if a.get("z") not in (None, 2.0) and
                                                      a.get("z") == a.get("z") else "")
            for _, a in frame.iterrows()]
    counts = pd.Series(list(zip(frame.model, base))).value_counts() if len(frame) else {}
    return [b + (f", draw {int(a.draw)}" if counts[(a.model, b)] > 1 and a.get("draw") is not None
                 and a.draw == a.draw else "") for b, (_, a) in zip(base, frame.iterrows())]


def _head(layer_head) -> str:
    return f"{layer_head[0]}.{layer_head[1]}"


def anatomy_table(frame: pd.DataFrame) -> pd.DataFrame:
    """What each diagnosed selection does, in nats of loss on the diagnosis windows: its damage, the
    layers it empties, the later layer whose attention output grows most, the single pruned head whose
    return repairs most, the single extra head whose removal repairs most, and (post-norm families) the
    largest scale-up of a layer's survivors."""
    rows = []
    cells = frame.cell if "cell" in frame else cell_labels(frame)
    for (_, a), cell in zip(frame.iterrows(), cells):
        damage = a.nll - a.nll_dense
        best_back = min(a.restore, key=lambda t: t[2]) if a.restore else None
        best_add = min(a["add"], key=lambda t: t[2]) if a["add"] else None
        grown = a.grown_layer
        rem = a.get("remaining") if isinstance(a.get("remaining"), dict) else {}
        low = min(rem.items(), key=lambda kv: kv[1]) if rem else None
        rows.append({
            "model": a.model, "cells": cell,
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


# ---- every cell above a uniform guess, and MP against MP-G, by the layers they empty ---------------------

def emptied_layers(cell, heads_per_layer: int) -> list[int]:
    """The layers a cell's selection (``cell.pruned``: [layer, head] pairs) prunes entirely."""
    if cell.pruned is None or not len(cell.pruned):
        return []
    counts = np.bincount([layer for layer, _ in cell.pruned])
    return [int(layer) for layer in np.flatnonzero(counts == heads_per_layer)]


def above_uniform(frame: pd.DataFrame, models: list[str], heads_per_layer: dict[str, int],
                  uniform: dict[str, float | None]) -> pd.DataFrame:
    """Every cell of ``frame`` (index tie-break, global ranking, first draw; every z) whose perplexity is at or
    above a uniform guess over the vocabulary (``uniform``): its emptied layers, and the other such cells of the
    same model that empty one of the same layers (``shares a layer with``)."""
    f = frame[frame.tie_break.eq("index") & frame.scale.eq("global") & frame.draw.eq(0) & frame.method.ne("dense")]
    rows = []
    for model in models:
        u = uniform.get(model)
        if not u:
            continue
        for c in f[(f.model == model) & (f.ppl >= u)].itertuples():
            rows.append({"model": model, "method": LABEL[c.method], "z": c.z, "sparsity": pct(c.sparsity),
                         "ppl": c.ppl, "uniform guess": u,
                         "emptied layers": emptied_layers(c, heads_per_layer[model])})
    t = pd.DataFrame(rows)
    if not len(t):
        return t
    name = [f"{r.method}{'' if pd.isna(r.z) else f' z={r.z:g}'} @ {r.sparsity}" for r in t.itertuples()]
    t["shares a layer with"] = [", ".join(n for j, n in enumerate(name) if j != i and t.model[j] == t.model[i]
                                          and set(t["emptied layers"][j]) & set(t["emptied layers"][i]))
                                for i in range(len(t))]
    return t


def mp_against_mpg(frame: pd.DataFrame, models: list[str], heads_per_layer: dict[str, int]) -> pd.DataFrame:
    """MP against MP-G in every (model, z, sparsity) where both ran: their perplexities, the ratio MP / MP-G
    paired over windows, the layers each empties, the heads they share and, per side, the layers where its
    heads differ most from the other's. ``fewer emptied, worse``: the side that empties fewer layers has the
    higher perplexity (the non-monotone pairs a reader asks about)."""
    f = frame[frame.tie_break.eq("index") & frame.scale.eq("global") & frame.draw.eq(0)]
    rows = []
    for model in models:
        for (z, sp), g in f[(f.model == model) & f.method.isin(["mp", "mpg"])].groupby(["z", "sparsity"]):
            cells = {m: g[g.method == m].iloc[0] for m in ("mp", "mpg") if (g.method == m).any()}
            if len(cells) < 2:
                continue
            a, b = cells["mp"], cells["mpg"]
            sa, sb = set(map(tuple, a.pruned)), set(map(tuple, b.pruned))
            ea, eb = emptied_layers(a, heads_per_layer[model]), emptied_layers(b, heads_per_layer[model])
            p = paired_ratio(a.window_nll, b.window_nll)
            only = {k: np.bincount([x for x, _ in s], minlength=1) for k, s in (("mp", sa - sb), ("mpg", sb - sa))}
            rows.append({"model": model, "z": z, "sparsity": pct(sp), "MP": a.ppl, "MP-G": b.ppl,
                         "MP / MP-G": p.estimate, "lo": p.ci[0], "hi": p.ci[1], "MP empties": ea, "MP-G empties": eb,
                         "heads in common": len(sa & sb), "heads each": len(sa),
                         "MP's own heads, most in layer": int(np.argmax(only["mp"])) if len(sa - sb) else None,
                         "MP-G's own heads, most in layer": int(np.argmax(only["mpg"])) if len(sb - sa) else None,
                         "fewer emptied, worse": (len(eb) < len(ea) and b.ppl > a.ppl) or
                                                (len(ea) < len(eb) and a.ppl > b.ppl)})
    return pd.DataFrame(rows)


def _emptied(layers: list[int]) -> str:
    return f"empties layer{'s' * (len(layers) > 1)} {', '.join(map(str, layers))}" if layers else "empties no layer"


def above_uniform_reading(t: pd.DataFrame) -> str:
    """Each above-uniform cell with the layers it empties, and the layers several of them empty."""
    if not len(t):
        return "No cell of Tables I and II reaches a uniform guess over the vocabulary."
    lines = []
    for model, g in t.groupby("model", sort=False):
        layers = pd.Series([x for e in g["emptied layers"] for x in e], dtype=int).value_counts()
        most = int(layers.max()) if len(layers) else 0
        common = sorted(int(x) for x, n in layers.items() if n == most)
        cells = "; ".join(f"{r['method']}{'' if pd.isna(r['z']) else f' (z = {r.z:g})'} at {r['sparsity']}: "
                          f"{r['ppl']:,.0f}, {_emptied(r['emptied layers'])}" for _, r in g.iterrows())
        shared = (f" Layer{'s' * (len(common) > 1)} {', '.join(map(str, common))} "
                  f"{'is' if len(common) == 1 else 'are each'} emptied by "
                  + ("both cells." if most == len(g) == 2 else f"{'all ' if most == len(g) else ''}{most} of these "
                                                               f"{len(g)} cells.") if most > 1 else " No layer is emptied by two of them.")
        lines.append(f"- **{model}** (uniform guess {g['uniform guess'].iloc[0]:,.0f}): {cells}.{shared}")
    return "\n".join(lines)


def mp_against_mpg_reading(t: pd.DataFrame) -> str:
    """The non-monotone MP / MP-G pairs: where the side that empties fewer layers is the worse one, what else
    differs."""
    if not len(t):
        return ""
    odd = t[t["fewer emptied, worse"]]
    if not len(odd):
        return "In no pair does the side that empties fewer layers have the higher perplexity."
    lines = []
    for _, r in odd.iterrows():
        worse = "MP" if r["MP"] > r["MP-G"] else "MP-G"
        own = r[f"{worse}'s own heads, most in layer"]
        where = "nowhere (it cuts no head the other keeps)" if own is None or pd.isna(own) else f"layer {int(own)}"
        lines.append(f"- **{r['model']}, z = {r['z']:g}, {r['sparsity']}**: MP {r['MP']:,.4g} against MP-G "
                     f"{r['MP-G']:,.4g} (MP / MP-G x{r['MP / MP-G']:.3g} [{r['lo']:.3g}, {r['hi']:.3g}] paired over "
                     f"windows); MP {_emptied(r['MP empties'])}, MP-G {_emptied(r['MP-G empties'])}; they share "
                     f"{r['heads in common']} of {r['heads each']} heads, and the heads only {worse} cuts sit mostly in "
                     f"{where}. Counting emptied layers does "
                     "not rank these two: which heads of the surviving layers go does.")
    return "\n".join(lines)
