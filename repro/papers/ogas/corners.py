"""Figure 2's story held to the equations (issue 50), from ``prune-channels`` records
(:meth:`repro.engines.prune.PruneExperiment.channels`): on several real layers of each model, the channels in the
paper's two corners and the sparsity OGAS gives them, against Wanda's (the target on every output channel).

The paper says OGAS prunes "high-energy static redundant" channels (high energy, low peak-to-average ratio) that
Wanda keeps, and saves low-energy channels with a high peak ratio. OGAS's importance is
``I = (1 - lam) x + lam y`` (``x``, ``y``: the normalised log energy and log PAPR) and its sparsity falls as ``I``
rises, so a high-energy channel gets a *lower* sparsity unless ``lam`` weighs its low PAPR more: the corners show
which happens.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats

from repro.claims import FAILS, HOLDS, difference_claim, verdict
from repro.evaluate.stats import paired_t
from repro.methods.registry import minmax

CORNER = 0.25  # a corner: the top and bottom quarter of the layer's channels on each axis
STATIC = "OGAS prunes high-energy, low-PAPR channels more than Wanda"
PEAKY = "OGAS prunes low-energy, high-PAPR channels less than Wanda"


def corners(records: dict[str, dict], target: float, q: float = CORNER) -> pd.DataFrame:
    """Per (model, layer) of ``records`` (``{model: prune-channels record}``): the channels with high energy and
    low PAPR (``x`` in the top ``q``, ``y`` in the bottom ``q`` of the layer) and those with low energy and high
    PAPR, their number and mean OGAS sparsity against ``target`` (Wanda's on every channel), and the Spearman
    correlation of the sparsity with each axis over all channels."""
    rows = []
    for model, rec in records.items():
        for layer, ch in rec["result"]["channels"].items():
            x = minmax(np.log1p(np.asarray(ch["energy"], float)))
            y = minmax(np.log1p(np.asarray(ch["peak_ratio"], float)))
            s = np.asarray(ch["channel_sparsity"], float)
            (xl, xh), (yl, yh) = np.quantile(x, [q, 1 - q]), np.quantile(y, [q, 1 - q])
            static, peaky = (x >= xh) & (y <= yl), (x <= xl) & (y >= yh)
            rows.append({"model": model, "layer": layer, "channels": s.size, "target": target,
                         "high E, low P": int(static.sum()),
                         "sparsity, high E low P": float(s[static].mean()) if static.any() else np.nan,
                         "low E, high P": int(peaky.sum()),
                         "sparsity, low E high P": float(s[peaky].mean()) if peaky.any() else np.nan,
                         "Spearman s~x (energy)": float(stats.spearmanr(x, s)[0]),
                         "Spearman s~y (PAPR)": float(stats.spearmanr(y, s)[0])})
    out = pd.DataFrame(rows)
    if not len(out):
        return out
    depth = out.layer.str.extract(r"\.(\d+)\.")[0].astype(float)  # the block index: layers in model order
    return out.assign(_d=depth).sort_values(["model", "_d"], key=lambda c: c if c.name == "_d" else c.map(
        {m: i for i, m in enumerate(records)}), kind="stable").drop(columns="_d").reset_index(drop=True)


def per_model(t: pd.DataFrame) -> pd.DataFrame:
    """:func:`corners` in one row per model: its layers, the corners' mean sparsity over them (and how many layers
    have channels in each corner) and the median Spearman correlation of the sparsity with each axis."""
    if not len(t):
        return t
    g = t.groupby("model", sort=False)
    return pd.DataFrame({"layers": g.size(), "target": g.target.first(),
                         "layers with high E, low P": g["sparsity, high E low P"].count(),
                         "sparsity, high E low P": g["sparsity, high E low P"].mean().round(3),
                         "layers with low E, high P": g["sparsity, low E high P"].count(),
                         "sparsity, low E high P": g["sparsity, low E high P"].mean().round(3),
                         "median Spearman s~x (energy)": g["Spearman s~x (energy)"].median().round(3),
                         "median Spearman s~y (PAPR)": g["Spearman s~y (PAPR)"].median().round(3)}).reset_index()


def corner_claims(t: pd.DataFrame) -> list:
    """Per model, the paper's two statements as claim rows: each corner's mean sparsity minus Wanda's, in points,
    with its t interval over the model's layers (a layer with an empty corner counts for neither)."""
    out = []
    for model, g in (t.groupby("model", sort=False) if len(t) else []):
        for claim, col, side in ((STATIC, "sparsity, high E low P", "above"),
                                 (PEAKY, "sparsity, low E high P", "below")):
            d = 100 * (g[col] - g.target).dropna().to_numpy()
            p = paired_t(d, np.zeros(len(d))) if len(d) else None
            out.append(difference_claim(claim, f"{model}, {len(d)} down projections", "corner sparsity - Wanda's", p,
                                        side=side, over="layers"))
    return out


def _direction(rho: pd.Series) -> str:
    if (rho < 0).all():
        return f"falls with energy in every layer (Spearman {rho.min():+.2f} to {rho.max():+.2f})"
    if (rho > 0).all():
        return f"rises with energy in every layer (Spearman {rho.min():+.2f} to {rho.max():+.2f})"
    return f"moves with energy one way in some layers and the other way in others (Spearman {rho.min():+.2f} to " \
           f"{rho.max():+.2f})"


def corners_reading(t: pd.DataFrame, lam: dict[str, float]) -> str:
    """Whether the equations do what Figure 2's story says, model by model: the corners' mean sparsity against
    Wanda's, and whether their intervals over the layers (the claim rows) settle the direction."""
    if not len(t):
        return ""
    lines = []
    for model, g in t.groupby("model", sort=False):
        static, peaky = (100 * (g[c] - g.target) for c in ("sparsity, high E low P", "sparsity, low E high P"))
        ps, pp = (paired_t(d.dropna().to_numpy(), np.zeros(d.notna().sum())) for d in (static, peaky))
        first, second = verdict(ps.ci, 0.0, "above"), verdict(pp.ci, 0.0, "below")  # the claim rows' rule
        if first == second == HOLDS:
            said = "The equations follow the figure's story here, both halves by the claim rows' intervals."
        elif first == second == FAILS:
            said = ("The equations do the opposite of the figure's story: OGAS keeps more of the high-energy, steady "
                    "channels than Wanda does and prunes the peaky low-energy ones harder, both by the claim rows' "
                    "intervals.")
        else:
            said = (f"By the claim rows' intervals over the layers ({static.notna().sum()} and {peaky.notna().sum()} "
                    f"with channels in each corner), the story's first half (high energy, low PAPR pruned more) "
                    f"{first}, its second half (low energy, high PAPR pruned less) {second}.")
        lines.append(f"- **{model}** (lambda = {lam.get(model, np.nan):g}): OGAS's sparsity {_direction(g['Spearman s~x (energy)'])}; "
                     f"the high-energy, low-PAPR channels get {static.mean():+.1f} points against Wanda's "
                     f"{g.target.iloc[0]:.0%} on average ({static.min():+.1f} to {static.max():+.1f} by layer) and the "
                     f"low-energy, high-PAPR ones {peaky.mean():+.1f} ({peaky.min():+.1f} to {peaky.max():+.1f}). "
                     + said)
    return "\n".join(lines)
