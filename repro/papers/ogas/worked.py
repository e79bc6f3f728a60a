"""Notebook 2's worked one-layer example: small frames and sentences on a ``prune-worked`` record
(:meth:`repro.engines.prune.PruneExperiment.worked_layer`, via :meth:`repro.papers.ogas.grid.OgasGrid.worked`):
OGAS's terms on one real layer, every number from the record (:mod:`repro.methods.ogas_terms` defines them).

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


# ---- the numbers in words -------------------------------------------------------------------------------------

def _shape(gammas: np.ndarray, losses: np.ndarray) -> str:
    d = np.diff(losses)
    if (d <= 0).all():
        return "falls monotonically, so its minimum on the interval is at the upper end"
    if (d >= 0).all():
        return "rises monotonically, so its minimum on the interval is at the lower end"
    i = int(np.argmin(losses))
    return f"is not monotone: on the grid it is lowest at gamma = {gammas[i]:.3g} (L = {losses[i]:.4f})"


def gamma_reading(record: dict) -> str:
    """Which gamma OGAS used on the layer, where it sits in the search interval, and why: the shape of
    ``L(gamma)`` over the interval on the grid, how much it varies there, and the grid's minimum beyond it."""
    t = trace_of(record)
    lo, hi = t["gamma_bounds"]
    tol, g, used = t["gamma_tol"], t["gamma"], used_setting(t)
    c = loss_curve(t)
    grid = c[c.source == "grid"].sort_values("gamma")
    inside = grid[grid.inside]
    gi, li = inside.gamma.to_numpy(), inside.L.to_numpy()
    shape = (f"Over the interval ({lo:g}, {hi:g}), L(gamma) goes from {li[0]:.4f} at gamma = {gi[0]:g} to "
             f"{li[-1]:.4f} at {gi[-1]:g} and {_shape(gi, li)}; it varies by "
             f"{100 * (li.max() - li.min()) / li.min():.2g}% of its minimum there")
    best = grid.loc[grid.L.idxmin()]
    beyond = (f"; on the whole grid ({grid.gamma.min():g} to {grid.gamma.max():g}) its minimum is at gamma = "
              f"{best.gamma:.3g} (L = {best.L:.4f}){', outside the interval' if not best.inside else ''}"
              if len(grid) > len(inside) else "")
    if not t["search"]:
        return (f"The setting fixes gamma = {g:g} (no search); L there is {used['rel_error']:.4f}. {shape}{beyond}.")
    where = ("within its tolerance of the lower end" if g - lo < tol else "within its tolerance of the upper end"
             if hi - g < tol else "inside the interval, away from both ends")
    n = len(t["search_path"]["gamma"])
    return (f"The search chose gamma = {g:.3g} for {t['layer']} after {n} "
            f"evaluations of L (tolerance {tol:g}), with L = {used['rel_error']:.4f}: {where}. {shape}{beyond}. "
            f"The search's L is {100 * (used['rel_error'] - li.min()) / li.min():+.2g}% against the interval's grid "
            f"minimum.")


def reallocation_reading(record: dict, tol: float = 0.01) -> str:
    """How much OGAS moves the channels off the uniform target at the gamma used (the 5-95% range of ``s``
    against the room ``[S_min, S_max]``), and at the interval's ends."""
    t = trace_of(record)
    r = reallocation_table(t, tol)
    mm = r[r.normalisation == "min-max"]
    u = mm[mm.gamma == t["gamma"]].iloc[0]
    room = t["s_max"] - t["s_min"]
    s = np.asarray(used_setting(t)["s"])
    less, more = int((s < t["target"] - 1e-12).sum()), int((s > t["target"] + 1e-12).sum())
    ends = "; ".join(f"{row.q05:.3f} to {row.q95:.3f} at gamma = {row.gamma:g} ({row.role})"
                     for row in mm.itertuples() if row.gamma != t["gamma"])
    return (f"At gamma = {t['gamma']:.3g}, 90% of the {t['rows']} channels get a sparsity between {u.q05:.3f} and "
            f"{u.q95:.3f} (5-95%; median {u.q50:.3f}, std {u['std']:.3f}) around the {t['target']:.0%} target, "
            f"{100 * (u.q95 - u.q05) / room:.2g}% of the room from S_min = {t['s_min']:g} to S_max = {t['s_max']:g}, "
            f"and {u.within:.0%} lie within {tol:g} of the target; the extremes are {u['min']:.3f} and {u['max']:.3f}. "
            f"{less} channels are pruned less than Wanda's uniform {t['target']:.0%}, {more} more. For comparison, the "
            f"5-95% range is {ends}.")


def _outliers(st: dict, label: str, what: str) -> str:
    out = st["outliers"]
    far = (f"{len(out)} channel{'s' * (len(out) != 1)} ({', '.join(map(str, out[:3]))}{', ...' if len(out) > 3 else ''}) "
           f"lie beyond Tukey's far-out fences" if out else "no channel lies beyond Tukey's far-out fences")
    return (f"For {label}, channel {st['top']} has the largest {what} ({st['top_value']:.3g}, {st['top_over_median']:.3g}x "
            f"the median channel's {st['median_value']:.3g}) and {far}; the min-max range is {st['range_ratio']:.3g}x "
            f"that of the channels between percentiles {st['lo']:g} and {st['hi']:g}, which land in x = {st['bulk'][0]:.2f} to "
            f"{st['bulk'][1]:.2f}, and the median channel sits at x = {st['median_x']:.2f} "
            f"({st['median_x_robust']:.2f} with the values beyond percentiles {st['lo']:g} and {st['hi']:g} clipped)")


def stretch_reading(record: dict) -> str:
    """What stretches min-max normalisation on the layer (its outlier channels and where the median channel
    lands), and the spread of ``s`` that robust normalisation would give at the same gamma."""
    t = trace_of(record)
    r = reallocation_table(t)
    mm = r[(r.normalisation == "min-max") & (r.gamma == t["gamma"])].iloc[0]
    rb = r[r.normalisation != "min-max"].iloc[0]
    e, p = stretch(_arr(t, "energy"), *ROBUST), stretch(_arr(t, "peak_ratio"), *ROBUST)
    return (f"{_outliers(e, 'log(1+E)', 'energy')}. {_outliers(p, 'log(1+P)', 'peak ratio')}. With both terms "
            f"normalised between their percentiles {ROBUST[0]:g} and {ROBUST[1]:g} instead (channels beyond clipped to 0 or 1), the same "
            f"gamma = {t['gamma']:.3g} would spread the channel sparsities over {rb.q05:.3f} to {rb.q95:.3f} (5-95%, std "
            f"{rb['std']:.3f}) instead of {mm.q05:.3f} to {mm.q95:.3f} (std {mm['std']:.3f}).")


def root_reading(record: dict, target: float | None = None) -> str:
    """Why alpha is unique (``f`` non-decreasing, checked on its grid) and where it is, or why there is none
    at ``target`` (default the record's; :func:`alpha_curve`'s three cases)."""
    t = trace_of(record)
    c = root_curve(t, target)
    f, a = np.asarray(c["f"]), np.asarray(c["alpha"])
    mono = bool((np.diff(f) >= -1e-12).all())
    crossings = int(((f[:-1] < 0) & (f[1:] >= 0)).sum())
    head = (f"At gamma = {t['gamma']:.3g} and a {100 * c['target']:g}% target, f(alpha) = mean s - target "
            f"{'never decreases' if mono else 'DECREASES somewhere'} on its {len(a)} grid points, from "
            f"{f[0]:+.3f} at alpha = 0 (every channel at S_min = {t['s_min']:g}) to {f[-1]:+.4f} at alpha = "
            f"{c['alpha_hi']:.3g}, where every channel with I < 1 has reached S_max = {t['s_max']:g} (the largest mean "
            f"S_max allows is {c['max_mean']:.4f})")
    if c["root"] == "unique":
        return (f"{head}; it crosses zero {'once' if crossings == 1 else f'{crossings} times'}, at alpha = "
                f"{c['alpha_root']:.4f}: the alpha OGAS uses.")
    if c["root"] == "at alpha_hi":
        return (f"{head}; the target is exactly that largest mean, so f reaches zero only at alpha = {c['alpha_hi']:.4g} "
                f"and stays there: every larger alpha gives the same sparsities, and the root is not unique.")
    if c["root"] == "at 0":
        return f"{head}; the target is at or below S_min, so alpha = 0 and every channel keeps S_min."
    return (f"{head}; it stays below zero, so there is no root: OGAS takes alpha = {c['alpha_root']:.4g} "
            f"(alpha_at_bound) and the layer's mean sparsity falls {c['target'] - c['max_mean']:.4f} short of the target.")


def same_pruning_reading(record: dict, zeros_sha256: str | None) -> str:
    """Whether the worked example pruned the model exactly as the table's OGAS cell (its ``zeros_sha256``)."""
    rec = record.get("result", record)
    if zeros_sha256 is None:
        return "The table's OGAS cell has no mask fingerprint to compare with."
    same = rec["zeros_sha256"] == zeros_sha256
    return (f"The worked example's pruned model has {'the same' if same else 'a DIFFERENT'} zero pattern "
            f"{'as' if same else 'from'} the OGAS cell of Tables 1-2 (sha256 {rec['zeros_sha256'][:12]}...): "
            f"{'tracing changes nothing that is pruned' if same else 'the trace does not describe that cell'}.")
