"""Paper 2 (OGAS) cells: prune a copy of the model block by block on calibration windows, then
evaluate it (perplexity on the setup's data; optionally lm-eval zero-shot), one record per cell.

WikiText-2 rows are calibrated on WikiText-2 train and evaluated on WikiText-2 test; C4 rows are
calibrated on the calibration half of the C4 sample and evaluated on its held-out half: two
:class:`PruneExperiment` objects sharing one loaded model, each with its own :class:`Setup`.
"""
from __future__ import annotations

import copy

import numpy as np
import pandas as pd

from repro.assets import parse_dtype
from repro.experiments.base import Experiment
from repro.methods.unstructured import get_pruner, parse_pattern, prune_model
from repro.structure.sparsity import zeros_sha256

QUANTILES = np.linspace(0, 1, 21)  # per-layer summary of OGAS's channel sparsities


class PruneExperiment(Experiment):
    """Unstructured / N:M pruning cells of one model under one setup (calibration + evaluation)."""

    def prune_config(self, method: str, sparsity: float | None, pattern: str = "unstructured",
                     params: dict | None = None) -> dict:
        pruner = get_pruner(method)(sparsity, pattern, **(params or {}))  # validates everything up front
        cfg = {"method": method, "sparsity": pruner.sparsity, "pattern": str(pruner.pattern),
               "params": {k: (list(v) if isinstance(v, tuple) else v) for k, v in pruner.params.items()}}
        if pruner.calibrated:
            cfg["calibration"] = self.calibration().source
        return cfg

    def prune(self, method: str, sparsity: float | None, pattern: str = "unstructured", params: dict | None = None):
        """A pruned float32 copy of the model and its :class:`PruneReport`."""
        model = copy.deepcopy(self.model)
        calib = self.calibration().windows if get_pruner(method).calibrated else None
        report = prune_model(model, method, sparsity, calib, pattern=parse_pattern(pattern), progress=self.progress,
                             **(params or {}))
        return model, report

    def dense(self) -> dict:
        return self.run("prune-ppl", {**self.base_config(), "method": "dense"}, lambda: self.ppl(self.eval_model()))

    def cell(self, method: str, sparsity: float | None, pattern: str = "unstructured", params: dict | None = None,
             zeroshot_tasks: list[str] | None = None, zeroshot_limit: int | None = None,
             keep_layers: tuple[str, ...] = ()) -> dict:
        """Prune, evaluate perplexity (and zero-shot tasks if given). ``keep_layers``: layer names
        whose per-channel OGAS arrays (energy, peak ratio, sparsity) the record keeps for figures."""
        cfg = {**self.base_config(), **self.prune_config(method, sparsity, pattern, params)}
        if zeroshot_tasks:
            cfg["zeroshot"] = {"tasks": list(zeroshot_tasks), "limit": zeroshot_limit}
        if keep_layers:
            cfg["keep_layers"] = list(keep_layers)

        def compute():
            model, report = self.prune(method, sparsity, pattern, params)
            out = {"report": report.to_dict(), "zeros_sha256": zeros_sha256(model)}
            out["channels"] = {n: {k: np.asarray(e[k]).tolist() for k in ("energy", "peak_ratio", "channel_sparsity")
                                   if k in e} for n, e in report.extras.items() if n in keep_layers}
            out["channel_quantiles"] = {n: np.quantile(e["channel_sparsity"], QUANTILES).tolist()
                                        for n, e in report.extras.items() if "channel_sparsity" in e}
            model = model.to(parse_dtype(self.setup.eval_dtype))
            out.update(self.ppl(model))
            if zeroshot_tasks:
                out["zeroshot"] = self.zeroshot(model, zeroshot_tasks, zeroshot_limit)
            return out
        return self.run("prune-ppl", cfg, compute)


def prune_frame(store, experiments: list[PruneExperiment], session: bool = True) -> pd.DataFrame:
    """One row per prune-ppl cell of the current protocol under one of ``experiments``' setups;
    ``session``: only the cells asked for in this session (``store.status``), so records of an
    earlier run with other settings never slip into a table."""
    rows = []
    for r in store.current("prune-ppl", session):
        c, res = r["config"], r["result"]
        e = next((e for e in experiments if c["model"]["name"] == e.name
                  and all(c.get(k) == v for k, v in e.base_config().items())), None)
        if e is None:
            continue
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

LABELS = {"dense": "Dense", "magnitude": "Magnitude", "wanda": "Wanda", "ria": "RIA", "sparsegpt": "SparseGPT",
          "ogas": "OGAS", "ogas-exact": "OGAS (exact target)", "ogas-energy": "OGAS energy-only (lambda 0)",
          "ogas-papr": "OGAS PAPR-only (lambda 1)", "ogas-h0.05": "OGAS, S_max headroom 0.05",
          "ogas-h0.2": "OGAS, S_max headroom 0.2"}


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
