"""Layer scale in notebook 3: the numbers its readings (:mod:`.readings`) set beside measurements made by
:mod:`repro.evaluate.rescale`:

- Gemma's post-sublayer norms: how much masking a unit rescales the rest of its sublayer
  (``benchmarks/results/gemma_rescale.json``, ``benchmarks/gemma_rescale.py``), beside the damages this
  run's searches measured for the same units (:func:`unit_damage`; :func:`.readings.rescale_reading`);
- why a one-shot score ranked across layers empties a few layers: each layer's median score beside the
  measured post-norm gain and share of the residual stream (``benchmarks/results/layer_scale.json``,
  ``benchmarks/layer_scale.py``; :func:`score_layers`, :func:`.readings.score_layers_reading`).
"""
from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.special import logit

from repro.methods.bandit import TAU
from repro.papers.bandit.lambada import read_check  # noqa: F401  (the notebook's RS.read_check: one reader)
from repro.papers.bandit.records import MAB, unit_of


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


def layer_counts(units) -> pd.Series:
    """How many of ``units`` (Units, or [kind, layer, index] lists) sit in each layer, most first."""
    return pd.Series([u[1] for u in units]).value_counts()
