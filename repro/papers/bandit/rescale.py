"""Layer scale in notebook 3, from measurements made by :mod:`repro.evaluate.rescale`:

- Gemma's post-sublayer norms: how much masking a unit rescales the rest of its sublayer
  (``benchmarks/results/gemma_rescale.json``, ``benchmarks/gemma_rescale.py``), set beside the damages this
  run's searches measured for the same units (:func:`reading`);
- why a one-shot score ranked across layers empties a few layers: each layer's median score beside the
  measured post-norm gain and share of the residual stream (``benchmarks/results/layer_scale.json``,
  ``benchmarks/layer_scale.py``; :func:`score_layers`, :func:`score_layers_reading`).
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats
from scipy.special import logit

from repro.methods.bandit import TAU
from repro.papers.bandit.records import MAB, unit_of


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
    sels = [s for s in check.get("selections") or [] if s.get("kind", "head") == "head"]
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


# ---- a one-shot score ranked across layers: what scale does it carry? ----------------------------------

def score_layers(frame: pd.DataFrame, scales: dict | None = None, method: str = "wanda") -> pd.DataFrame:
    """Per (model, unit kind, layer): the median one-shot score of ``method`` over the layer's units (every
    calibration seed's scores pooled, one record per seed), that median over the model's median of all
    layers (``relative score``), the layer's relative depth, and where ``scales`` measured the model
    (``benchmarks/results/layer_scale.json``, :func:`repro.evaluate.rescale.layer_scales`) the sublayer's
    post-norm ``gain``, ``share`` of the residual stream and the ``stream``'s RMS entering the layer."""
    if "scores" not in frame or not len(frame):
        return pd.DataFrame()
    sel = frame[(frame.method == method) & frame.scores.map(bool)].drop_duplicates(["model", "kinds", "seed"])
    measured = {(m, r["kind"], r["layer"]): r for m, v in ((scales or {}).get("models") or {}).items()
                for r in v["layers"]}
    rows = []
    for (model, kinds), f in sel.groupby(["model", "kinds"], sort=False):
        per: dict[int, list[float]] = {}
        for scores in f.scores:
            for name, v in scores.items():
                per.setdefault(unit_of(name).layer, []).append(v)
        med = {layer: float(np.median(v)) for layer, v in sorted(per.items())}
        overall, last = float(np.median(list(med.values()))), max(med)
        for layer, m in med.items():
            r = measured.get((model, kinds, layer), {})
            rows.append({"model": model, "kinds": kinds, "layer": layer, "depth": layer / max(last, 1),
                         "median score": m, "relative score": m / overall, "gain": r.get("gain", np.nan),
                         "share": r.get("share", np.nan), "stream": r.get("stream_rms", np.nan),
                         "post norm": r.get("post_norm", False)})
    return pd.DataFrame(rows)


def _layer_counts(units) -> pd.Series:
    """How many of ``units`` (Units, or [kind, layer, index] lists) sit in each layer, most first."""
    return pd.Series([u[1] for u in units]).value_counts()


def _layers_of(counts: pd.Series) -> str:
    """'layer 17: 57, layer 16: 35' from :func:`_layer_counts`."""
    shown = ", ".join(f"layer {layer}: {n}" for layer, n in counts.head(3).items())
    more = len(counts) - 3
    return shown + (f" and {more} more layer{'s' if more > 1 else ''}" if more > 0 else "")


def _x(v: float) -> str:
    return f"x{v:,.0f}" if v >= 100 else f"x{v:.2g}"


def score_layers_reading(sl: pd.DataFrame, frame: pd.DataFrame, rescale: dict | None = None,
                         method: str = "wanda", scales: dict | None = None) -> str:
    """What the score-by-layer figure shows, per (model, unit kind): how the median score moves with depth
    (Spearman over layers) and where the selections of the largest ratio sit; where the layers were measured,
    the share of the residual stream the chosen layers write against the other layers', the post-norm's gain
    at both ends, and where the same k units sit when each score is put on the stream's scale
    (score x gain / stream); from ``rescale`` (``gemma_rescale.json``), what the selections leave of the output
    RMS of the layer they cut most. ``scales`` (``layer_scale.json``) names the measurement's dtype and tokens."""
    where = ", ".join(x for x in ((scales or {}).get("dtype"), (scales or {}).get("windows")) if x)
    where = f"`layer_scale.json`{', ' + where if where else ''}"
    lines = []
    for (model, kinds), g in sl.groupby(["model", "kinds"], sort=False):
        runs = frame[(frame.method == method) & (frame.model == model) & (frame.kinds == kinds)]
        runs = runs[runs.ratio == runs.ratio.max()].sort_values("seed")
        if not len(runs):
            continue
        run, rho = runs.iloc[0], stats.spearmanr(g.layer, g["median score"])[0]
        trend = ("falls with depth" if rho <= -0.5 else "rises with depth" if rho >= 0.5 else
                 "has no steady trend with depth")
        units = [unit_of(name) for name in run.scores]
        chosen, per_layer = _layer_counts(run.units), _layer_counts(units)
        top = chosen.head(3)
        emptied = ", ".join(f"{n / per_layer[layer]:.0%}" for layer, n in top.items())
        whose = "that layer's" if len(top) == 1 else "those layers'"
        lines.append(f"- **{model}, {kinds}**: the median unit score {trend} (Spearman {rho:+.2f} over {len(g)} layers), "
                     f"so ranked across layers the {int(run.k)} units of seed {int(run.seed)} "
                     f"(ratio {run.ratio:.0%}) sit in {_layers_of(chosen)}: {emptied} of "
                     f"{whose} units.")
        if g.share.isna().any():
            continue
        share = dict(zip(g.layer, g.share))
        inside = np.median([share[i] for i in chosen.index])
        outside = np.median([v for i, v in share.items() if i not in chosen.index])
        text = (f"  Measured ({where}): those layers' sublayers write {inside:.2f} of the residual stream's "
                f"RMS at the median, the other layers' {outside:.2f}"
                + (" (so the stream's scale does not single these layers out)" if inside < 1.2 * outside else ""))
        if g["post norm"].all():
            first, last = g.iloc[0], g.iloc[-1]
            text += (f"; the post-sublayer norm multiplies the output by {_x(first.gain)} in layer {first.layer} and "
                     f"{_x(last.gain)} in layer {last.layer}, after the score is measured")
        gain, stream = dict(zip(g.layer, g.gain)), dict(zip(g.layer, g.stream))
        scaled = sorted(units, key=lambda u: run.scores[str(u)] * gain[u.layer] / stream[u.layer])
        moved = _layer_counts(scaled[:int(run.k)])
        lines.append(text + f". Put on the stream's scale (score x gain / stream), the lowest {int(run.k)} units sit in "
                     f"{_layers_of(moved)}"
                     + (": elsewhere, but as concentrated." if moved.head(3).sum() >= 0.8 * run.k else "."))
        cut = list({s["seed"]: min(s["remaining_by_layer"].values()) for s in (rescale or {}).get("selections", [])
                    if s.get("kind") == kinds and s["method"] == method and s.get("ratio") == run.ratio}.values())
        if cut and g["post norm"].all():
            left = float(np.median(cut))
            lines.append(f"  Gemma's selections ({len(cut)} seeds) leave {left:.2f} of the output RMS of the layer they "
                         "cut most (median): " + ("that sublayer is gone, nothing is left to rescale." if left < 0.05 else
                                                  f"the norm scales its surviving units up by {_x(1 / left)}."))
    return "\n".join(lines)
