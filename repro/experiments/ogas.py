"""Paper 2 (OGAS) from records: the frame of the pruning cells (``repro.experiments.unstructured``),
the paired comparisons, tables and claims the notebook shows. Everything here reads records only
(no model is run), so it is tested on constructed records.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from repro.experiments.base import owned
from repro.experiments.unstructured import QUANTILES, PruneExperiment  # noqa: F401 (the notebook's)
from repro.methods.unstructured import PRUNERS


def prune_frame(store, experiments: list[PruneExperiment], session: bool = True) -> pd.DataFrame:
    """One row per prune-ppl cell of the current protocol under one of ``experiments``' setups;
    ``session``: only the cells asked for in this session (``store.status``), so records of an
    earlier run with other settings never slip into a table."""
    rows = []
    for r, e in owned(store, "prune-ppl", experiments, session):
        c, res = r["config"], r["result"]
        rep = res.get("report", {})
        rows.append({"key": ("prune-ppl", r["key"]), "model": e.name, "data": e.data.name, "method": c["method"],
                     "sparsity": c.get("sparsity", 0.0) or 0.0, "pattern": c.get("pattern", "dense"),
                     "params": c.get("params", {}), "ppl": res["ppl"], "ci95": res["ci95"],
                     "window_nll": res["window_nll"], "achieved": rep.get("overall", 0.0),
                     "prune_seconds": rep.get("seconds"), "timings": rep.get("timings"), "extras": rep.get("extras"),
                     "zeros_sha256": res.get("zeros_sha256"), "zeroshot": res.get("zeroshot"),
                     "channels": res.get("channels"), "channel_quantiles": res.get("channel_quantiles")})
    return pd.DataFrame(rows)


# ---- tables and claims from the frame ---------------------------------------------------------

LABELS = PRUNERS.labels(dense="Dense", **{"ogas-exact": "OGAS (exact target)", "ogas-h0.05": "OGAS, S_max headroom 0.05",
                                          "ogas-h0.2": "OGAS, S_max headroom 0.2"})


def row_name(method: str, params: dict | None) -> str:
    """Table row of a cell: OGAS with largest-remainder rounding, or with another S_max headroom
    than the default 0.1, is its own row ("ogas-exact", "ogas-h0.05")."""
    params = params or {}
    if method == "ogas" and params.get("rounding") == "exact":
        return "ogas-exact"
    if method == "ogas" and params.get("s_max_headroom", 0.1) != 0.1:
        return f"ogas-h{params['s_max_headroom']:g}"
    return method


def select(frame: pd.DataFrame, model: str, data: str, name: str, sparsity: float = 0.5,
           pattern: str = "unstructured", **param_filter) -> pd.Series | None:
    """The cell of (model, data, row name, sparsity, pattern[, params]) or None."""
    if frame.empty:
        return None
    f = frame[(frame.model == model) & (frame.data == data)]
    if name == "dense":
        f = f[f.method == "dense"]
    else:
        named = np.array([row_name(m, p) == name for m, p in zip(f.method, f.params)], dtype=bool)
        f = f[named & np.isclose(f.sparsity.astype(float), sparsity) & (f.pattern == pattern).to_numpy()]
        for k, v in param_filter.items():
            f = f[[p.get(k) == v for p in f.params]]
    return None if f.empty else f.iloc[0]


def paired_to(frame, model, data, a, b, sparsity=0.5, pattern="unstructured", **pf):
    """ppl(a) / ppl(b) with a paired bootstrap CI over the shared windows (None if missing)."""
    from repro.evaluate.stats import paired_ratio

    ca, cb = select(frame, model, data, a, sparsity, pattern, **pf), select(frame, model, data, b, sparsity, pattern)
    return None if ca is None or cb is None else paired_ratio(ca.window_nll, cb.window_nll)


def zeroshot_paired(ca: pd.Series, cb: pd.Series, tasks: list[str], metric: str = "acc"):
    """Mean zero-shot accuracy of A minus B over ``tasks``, paired over the same documents (every
    task has ``limit`` documents, so the pooled mean is the mean over tasks)."""
    from repro.evaluate.stats import paired_difference

    a = np.concatenate([ca.zeroshot["tasks"][t]["per_doc"][metric] for t in tasks])
    b = np.concatenate([cb.zeroshot["tasks"][t]["per_doc"][metric] for t in tasks])
    return paired_difference(a, b)


def ogas_claims(frame: pd.DataFrame, models: list[str], sparsity: float, zeroshot_tasks: list[str],
                curve_models: list[str], ablation_models: list[str], high=(0.7, 0.9), wt: str = "wikitext2") -> list:
    """Paper 2's claims, each judged by :func:`repro.claims.verdict` on a paired interval; the
    ablation, zero-shot and curve claims read the ``wt`` (WikiText-2) cells."""
    from repro.claims import Claim, fmt_ratio
    from repro.evaluate.stats import paired_ratio

    out = []

    def ratio_claim(claim, setting, what, p, threshold=1.0, side="below"):
        if p is None:
            return Claim(claim, setting, "not run", "inconclusive")
        return Claim.check(claim, setting, f"{what} {fmt_ratio(p)} (windows better {p.n_better}/{p.n})",
                           p.estimate, p.ci, threshold, side)

    datas = sorted(set(frame.data)) if len(frame) else []
    for model in models:
        for data in datas:
            if select(frame, model, data, "ogas", sparsity) is None:
                continue  # this model was not run on this data
            for other, claim in (("wanda", "OGAS below Wanda"), ("ria", "OGAS below RIA"),
                                 ("sparsegpt", "OGAS at or below SparseGPT")):
                out.append(ratio_claim(f"{claim} at {sparsity:.0%}", f"{model}, {data}", f"OGAS / {LABELS[other]}",
                                       paired_to(frame, model, data, "ogas", other, sparsity)))
    for model in ablation_models:
        for single in ("ogas-energy", "ogas-papr"):
            out.append(ratio_claim("Each single signal improves on Wanda", f"{model}, {LABELS[single]}",
                                   f"{LABELS[single]} / Wanda", paired_to(frame, model, wt, single, "wanda",
                                                                          sparsity)))
            out.append(ratio_claim("Each single signal is improved on by OGAS", f"{model}, {LABELS[single]}",
                                   f"OGAS / {LABELS[single]}", paired_to(frame, model, wt, "ogas", single,
                                                                         sparsity)))
    for model in models:
        a, b = select(frame, model, wt, "ogas", sparsity), select(frame, model, wt, "wanda", sparsity)
        if zeroshot_tasks and a is not None and b is not None and a.zeroshot and b.zeroshot:
            p = zeroshot_paired(a, b, zeroshot_tasks)
            out.append(Claim.check("OGAS zero-shot mean accuracy above Wanda's", model,
                                   f"mean accuracy difference {p.estimate:+.3f} [{p.ci[0]:+.3f}, {p.ci[1]:+.3f}] over "
                                   f"{p.n} paired documents ({len(zeroshot_tasks)} tasks)", p.estimate, p.ci, 0.0,
                                   "above"))
    lo, hi = high
    for model in curve_models:
        o70, o90 = select(frame, model, wt, "ogas", lo), select(frame, model, wt, "ogas", hi)
        for other in ("magnitude", "wanda", "ria", "sparsegpt"):
            m70, m90 = select(frame, model, wt, other, lo), select(frame, model, wt, other, hi)
            p = None
            if all(c is not None for c in (o70, o90, m70, m90)):
                p = paired_ratio(np.subtract(o90.window_nll, o70.window_nll), np.subtract(m90.window_nll,
                                                                                          m70.window_nll))
            out.append(ratio_claim(f"OGAS degrades least from {lo:.0%} to {hi:.0%} (flattest curve)",
                                   f"{model}, vs {LABELS[other]}",
                                   f"(ppl{hi * 100:.0f}/ppl{lo * 100:.0f} of OGAS) / (same of {LABELS[other]})", p))
    return out
