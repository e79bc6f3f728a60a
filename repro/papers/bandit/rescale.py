"""Gemma's post-sublayer norms in notebook 3: how much masking a unit rescales the rest of its sublayer
(``benchmarks/results/gemma_rescale.json``, made by ``benchmarks/gemma_rescale.py`` with
:mod:`repro.evaluate.rescale`), set beside the damages this run's searches measured for the same units.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats
from scipy.special import logit

from repro.methods.bandit import TAU
from repro.papers.bandit.records import MAB


def read_check(path: str | Path) -> dict | None:
    """The committed measurement, None when the file is absent."""
    p = Path(path)
    return json.loads(p.read_text()) if p.exists() else None


def unit_damage(frame: pd.DataFrame, model: str, kinds: str = "head") -> pd.Series:
    """Mean damage per unit ('head17.2') over every pull of ``model``'s MAB searches of ``kinds`` in
    ``frame`` (their rewards are kept in pull order: ``damage = -tau logit(r)``)."""
    rows = frame[(frame.model == model) & (frame.kinds == kinds) & frame.method.isin(MAB)]
    pulls: dict[str, list[float]] = {}
    for pulled, rewards in zip(rows.pulled, rows.rewards):
        for units, rs in zip(pulled or [], rewards or []):
            for u, r in zip(units, rs):
                pulls.setdefault(u, []).append(float(-TAU * logit(np.clip(r, 1e-12, 1 - 1e-12))))
    return pd.Series({u: float(np.mean(v)) for u, v in pulls.items()}, dtype=float)


def reading(check: dict | None, frame: pd.DataFrame, model: str = "gemma3-270m", focus: str = "head17.2") -> str:
    """What the measurement shows, as Markdown bullets: single heads' and MLP groups' remaining output RMS
    (survivors scaled up by its inverse), ``focus`` among its layer's heads, the selections' layers, and
    whether the heads whose masking rescales most are the ones the searches found most damaging."""
    if check is None:
        return "- The measurement `benchmarks/results/gemma_rescale.json` is not here: run `benchmarks/gemma_rescale.py`."
    u = pd.DataFrame(check["units"])
    u["unit"] = u.kind + u.layer.astype(str) + "." + u["index"].astype(str)
    heads, mlp = u[u.kind == "head"], u[u.kind == "mlp"]
    q = heads.remaining.quantile([0, 0.5, 1])
    lines = [f"- **Single heads** ({len(heads)}, {check['windows']}, {check['dtype']}): masking one leaves "
             f"{q[0.5]:.2f} of its layer's attention-output RMS at the median ({q[0]:.2f}-{q[1]:.2f}), so the "
             f"post-attention norm scales the layer's other heads up by x{1 / q[0.5]:.2f} at the median and up to "
             f"x{1 / q[0]:.2f}. In a pre-norm model (SmolLM2) the same mask leaves the others as they were."]
    if len(mlp):
        lines.append(f"- **MLP groups** ({len(mlp)}): median {mlp.remaining.median():.3f}; "
                     f"{int((mlp.remaining < 0.9).sum())} of {len(mlp)} leave less than 0.9: one group of 32 channels "
                     "rarely carries enough of its MLP's output to rescale the rest.")
    if focus in set(u.unit):
        f = u[u.unit == focus].iloc[0]
        layer = heads[heads.layer == f.layer].sort_values("remaining")
        less = f.remaining >= layer.remaining.median()
        lines.append(f"- **{focus}** leaves {f.remaining:.3f} (its layer: "
                     + ", ".join(f"{r.unit} {r.remaining:.3f}" for _, r in layer.iterrows()) + "): "
                     + ("masking it rescales its layer's other heads less than most of the layer's heads do, so its "
                        "LAMBADA effect is not the rescaling." if less else
                        "masking it rescales its layer's other heads more than most of the layer's heads do."))
    sels = check.get("selections") or []
    if sels:
        low = [min(s["remaining_by_layer"].values()) for s in sels]
        lines.append(f"- **The {len(sels)} head selections** (every method, seed and memory rule): in the layer they "
                     f"cut most, the attention output keeps {np.median(low):.2f} of its RMS at the median "
                     f"({min(low):.2f}-{max(low):.2f}).")
    dmg = unit_damage(frame, model)
    both = pd.DataFrame({"damage": dmg}).join(heads.set_index("unit").remaining, how="inner")
    if len(both) >= 3:
        rho, p = stats.spearmanr(1 - both.remaining, both.damage)
        lines.append(f"- **Does the rescaling predict the damage?** Over the {len(both)} heads this run's bandit searches "
                     f"pulled, the Spearman correlation of how much a head's masking rescales (1 - remaining) with its "
                     f"mean measured damage is {rho:+.2f} (p = {p:.2g}; rho squared {rho ** 2:.2f}): "
                     + ("the heads whose masking rescales their layer most tend to be the most damaging, which is "
                        "part of, not all of, why the rewards saturate." if p < 0.05 and rho > 0 else
                        "over these heads the rescaling does not detectably predict which heads damage most.")
                     + f" Their mean damage is {both.damage.mean():+.3f} nats, "
                     f"{both.damage.mean() / TAU:.1f} tau: the reward sigma(-d / tau) of such a pull is near 0.")
    return "\n".join(lines)
