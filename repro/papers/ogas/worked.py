"""Notebook 2's worked one-layer example: small frames on a ``prune-worked`` record
(:meth:`repro.engines.prune.PruneExperiment.worked_layer`, via :meth:`repro.papers.ogas.grid.OgasGrid.worked`):
OGAS's terms on one real layer, every number from the record (:mod:`repro.methods.ogas_terms` defines them).
Their sentences are in :mod:`.readings`.

Each function takes the record (or its ``result``, or the trace itself)."""
from __future__ import annotations

import numpy as np
import pandas as pd

from repro.methods.ogas_terms import (  # noqa: F401  (the notebook reads the pure functions from here too)
    GAMMA_GRID,
    GAMMAS,
    alpha_curve,
    normalised_terms,
    reallocation,
    robust_minmax,
    robust_sparsity,
    stretch,
)
from repro.methods.registry import n_lowest
from repro.methods.unstructured import OGAS_SETTINGS

SIGNALS = {"energy": "log(1+E)", "peak_ratio": "log(1+P)"}
ROBUST = (1.0, 99.0)  # the percentiles of the robust normalisation the worked example compares with


def trace_of(record: dict) -> dict:
    """The trace of a ``prune-worked`` record (also accepts its ``result`` or the trace itself)."""
    record = record.get("result", record)
    return record.get("trace", record)


def _arr(t: dict, key: str) -> np.ndarray:
    return np.asarray(t[key], dtype=float)


def used_setting(record: dict) -> dict:
    """The trace's entry of the gamma OGAS pruned with (its ``s``, ``alpha``, ``rel_error``, ``removed``)."""
    return next(s for s in trace_of(record)["settings"] if s["used"])


def role(record: dict, gamma: float) -> str:
    """What a gamma of the trace is: the one used (searched or fixed), an end of the search interval, or the
    Mistral setting's fixed gamma."""
    t = trace_of(record)
    lo, hi = t["gamma_bounds"]
    if gamma == t["gamma"]:
        return "chosen by the search" if t["search"] else "the setting's fixed gamma"
    if gamma == lo or gamma == hi:
        return f"{'lower' if gamma == lo else 'upper'} end of the search interval"
    return "the Mistral setting's fixed gamma" if gamma == OGAS_SETTINGS["mistral"]["gamma"] else ""


# ---- frames ---------------------------------------------------------------------------------------------------

def channel_terms(record: dict, n: int = 5) -> pd.DataFrame:
    """The ``n`` most and ``n`` least important channels (by ``I``): ``E``, ``P``, ``x``, ``y``, ``I``, their
    sparsity ``s`` at the gamma used, the weights removed from the row and ``vs Wanda`` (removed minus Wanda's
    ``floor(C_in * target)``: negative keeps more weights)."""
    t = trace_of(record)
    u = used_setting(t)
    f = pd.DataFrame({"channel": np.arange(t["rows"]), "E": t["energy"], "P": t["peak_ratio"], "x": t["x"],
                      "y": t["y"], "I": t["importance"], "s": u["s"], "removed": u["removed"]})
    f["vs Wanda"] = f.removed - n_lowest(t["target"], t["cols"])
    order = f.sort_values(["I", "channel"], ascending=[False, True])
    return pd.concat([order.head(n).assign(group="most important"), order.tail(n).assign(group="least important")],
                     ignore_index=True)


def loss_curve(record: dict) -> pd.DataFrame:
    """``L(gamma)`` on the recorded grid (``source="grid"``) and at each gamma the search evaluated, in its
    order (``source="search"``, ``step``); ``inside``: within the search interval."""
    t = trace_of(record)
    lo, hi = t["gamma_bounds"]
    g = pd.DataFrame({"gamma": t["grid"]["gamma"], "L": t["grid"]["rel_error"], "source": "grid", "step": np.nan})
    s = pd.DataFrame({"gamma": t["search_path"]["gamma"], "L": t["search_path"]["rel_error"], "source": "search",
                      "step": np.arange(1, len(t["search_path"]["gamma"]) + 1, dtype=float)})
    f = pd.concat([g, s], ignore_index=True) if len(s) else g
    f["inside"] = (f.gamma >= lo - 1e-12) & (f.gamma <= hi + 1e-12)
    return f


def reallocation_table(record: dict, tol: float = 0.01) -> pd.DataFrame:
    """Per gamma of the trace: its role, ``alpha`` (and whether it hit its bound), ``L`` and
    :func:`reallocation` of ``s`` (5/50/95% quantiles, std, the share within ``tol`` of the target); last, the
    gamma used with the importance normalised robustly (:func:`robust_sparsity`, 1st-99th percentile clipped;
    no ``L``: the record has no Gram matrix to evaluate another mask with)."""
    t = trace_of(record)
    rows = [{"gamma": s["gamma"], "role": role(t, s["gamma"]), "normalisation": "min-max", "alpha": s["alpha"],
             "alpha_at_bound": s["alpha_at_bound"], "L": s["rel_error"], **reallocation(s["s"], t["target"], tol)}
            for s in sorted(t["settings"], key=lambda s: s["gamma"])]
    s, alpha, at_bound = _robust(t)
    rows.append({"gamma": t["gamma"], "role": role(t, t["gamma"]), "normalisation": f"{ROBUST[0]:g}-{ROBUST[1]:g}% clipped", "alpha": alpha,
                 "alpha_at_bound": at_bound, "L": np.nan, **reallocation(s, t["target"], tol)})
    return pd.DataFrame(rows).drop(columns=["tol"])


def _robust(t: dict, lo: float = ROBUST[0], hi: float = ROBUST[1]):
    return robust_sparsity(_arr(t, "energy"), _arr(t, "peak_ratio"), t["lam"], t["gamma"], t["target"], t["s_min"],
                           t["s_max"], lo, hi)


def stretch_table(record: dict) -> pd.DataFrame:
    """:func:`stretch` of ``E`` and ``P``, one row each."""
    t = trace_of(record)
    return pd.DataFrame([{"signal": label, **stretch(_arr(t, k), *ROBUST)} for k, label in SIGNALS.items()])


def sparsity_frame(record: dict) -> pd.DataFrame:
    """Long form for a plot of ``s_i`` against ``I_i``: one row per channel and gamma of the trace (and the
    gamma used under robust normalisation, against its own importance)."""
    t = trace_of(record)
    parts = [pd.DataFrame({"channel": np.arange(t["rows"]), "I": t["importance"], "s": s["s"], "gamma": s["gamma"],
                           "curve": f"gamma = {s['gamma']:.3g}" + (f" ({role(t, s['gamma'])})" if role(t, s["gamma"]) else "")})
             for s in sorted(t["settings"], key=lambda s: s["gamma"])]
    imp = (1 - t["lam"]) * robust_minmax(np.log1p(_arr(t, "energy")), *ROBUST) + \
        t["lam"] * robust_minmax(np.log1p(_arr(t, "peak_ratio")), *ROBUST)
    parts.append(pd.DataFrame({"channel": np.arange(t["rows"]), "I": imp, "s": _robust(t)[0], "gamma": t["gamma"],
                               "curve": f"gamma = {t['gamma']:.3g}, {ROBUST[0]:g}-{ROBUST[1]:g}% clipped"}))
    return pd.concat(parts, ignore_index=True)


def root_curve(record: dict, target: float | None = None) -> dict:
    """``f(alpha)`` at the gamma used (:func:`alpha_curve`): the record's at its own target, or recomputed from
    the recorded importance at another ``target`` (e.g. ``S_max``, where no root exists)."""
    t = trace_of(record)
    if target is None or target == t["target"]:
        return {k: (np.asarray(v) if isinstance(v, list) else v) for k, v in t["root"].items()}
    return alpha_curve(_arr(t, "importance"), t["gamma"], target, t["s_min"], t["s_max"], len(t["root"]["alpha"]))
