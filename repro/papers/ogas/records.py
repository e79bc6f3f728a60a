"""Paper 2 (OGAS) records as frames: row names, labels, finders, paired ratios and captions.
Reads records only (no model is run).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from repro.evaluate.stats import Paired, paired_difference
from repro.methods.unstructured import PRUNERS
from repro.papers.ogas.grid import OgasGrid, own_headroom
from repro.report import caption as caption_line
from repro.report import lm_setting, paired_cells

# ---- cells of the frame -----------------------------------------------------------------------

PAPER_ZEROSHOT = ("arc_challenge", "boolq", "hellaswag", "winogrande")  # the paper's Table 3 task set
LABELS = PRUNERS.labels(dense="Dense", **{"ogas-exact": "OGAS (exact target)", "ogas-h0.05": "OGAS, S_max headroom 0.05",
                                          "ogas-h0.2": "OGAS, S_max headroom 0.2",
                                          "ogas-wide": "OGAS, wider gamma interval",
                                          "ogas-gamma-fixed": "OGAS, gamma fixed (LLaMA setting, Mistral's gamma)",
                                          "ogas-gamma-search": "OGAS, gamma searched (Mistral setting)"})


PAPER_GAMMA = (0.05, 1.1)  # the paper's gamma interval


def row_name(method: str, params: dict | None, own_gamma=None) -> str:
    """Table row of a cell: OGAS with largest-remainder rounding, or with another S_max headroom
    than the default 0.1, is its own row ("ogas-exact", "ogas-h0.05"); so is OGAS with the other gamma
    rule than its model's setting (``own_gamma``: "search" or a number), "ogas-gamma-fixed" or
    "ogas-gamma-search"."""
    params = params or {}
    if method == "ogas" and params.get("rounding") == "exact":
        return "ogas-exact"
    if method == "ogas" and params.get("s_max_headroom", 0.1) != 0.1:
        return f"ogas-h{params['s_max_headroom']:g}"
    if method == "ogas" and tuple(params.get("gamma_bounds", PAPER_GAMMA)) != PAPER_GAMMA:
        return "ogas-wide"
    if method == "ogas" and own_gamma is not None and "gamma" in params and params["gamma"] != own_gamma:
        return "ogas-gamma-search" if params["gamma"] == "search" else "ogas-gamma-fixed"
    return method


def headroom_row(sparsity: float, headroom: float) -> str:
    """The row of OGAS with ``S_max`` headroom ``headroom`` at ``sparsity``: its own where it prunes
    differently (:func:`repro.engines.prune.own_headroom`), else the default OGAS cell."""
    return f"ogas-h{headroom:g}" if own_headroom(sparsity, headroom) else "ogas"


def find(frame: pd.DataFrame, model: str, data: str, row: str, sparsity: float = 0.5,
         pattern: str = "unstructured", **params) -> pd.Series | None:
    """The cell of (model, data, row name, sparsity, pattern[, parameter values]) or None."""
    if frame.empty:
        return None
    f = frame[(frame.model == model) & (frame.data == data)]
    if row == "dense":
        f = f[f.method == "dense"]
    else:
        own = f["own_gamma"] if "own_gamma" in f else [None] * len(f)
        named = np.array([row_name(m, p, g) == row for m, p, g in zip(f.method, f.params, own)], dtype=bool)
        f = f[named & np.isclose(f.sparsity.astype(float), sparsity) & (f.pattern == pattern).to_numpy()]
        for k, v in params.items():
            f = f[[p.get(k) == v for p in f.params]]
    return None if f.empty else f.iloc[0]


def paired_to(frame, model, data, a, b, sparsity=0.5, pattern="unstructured", **params) -> Paired | None:
    """ppl(a) / ppl(b) with a paired bootstrap CI over the shared windows (None if missing); two calibrated
    methods paired on the calibration draws both ran, a calibrated one against one that reads no data with the
    interval widened by its draws' spread (:func:`repro.report.paired_cells`)."""
    ca, cb = find(frame, model, data, a, sparsity, pattern, **params), find(frame, model, data, b, sparsity, pattern)
    return None if ca is None or cb is None else paired_cells(ca, cb)


def zeroshot_docs(a: dict, b: dict, tasks: list[str], metric: str = "acc") -> tuple[np.ndarray, np.ndarray]:
    """Per-document scores of results ``a`` and ``b`` over ``tasks``, concatenated in the same order."""
    return (np.concatenate([a["tasks"][t]["per_doc"][metric] for t in tasks]),
            np.concatenate([b["tasks"][t]["per_doc"][metric] for t in tasks]))


def zeroshot_paired(a: dict, b: dict, tasks: list[str], metric: str = "acc") -> Paired:
    """Mean zero-shot accuracy of result ``a`` minus result ``b`` (lm-eval results of two models)
    over ``tasks``, paired over the same documents (every task has ``limit`` documents, so the
    pooled mean is the mean over tasks)."""
    return paired_difference(*zeroshot_docs(a, b, tasks, metric))


def dense_ppl(frame: pd.DataFrame, grid: OgasGrid) -> dict[str, float]:
    """WikiText-2 perplexity of each dense model."""
    return {n: float(find(frame, n, grid.wt_name, "dense").ppl) for n in grid.models}


def ratio_text(p: Paired, digits: int = 3) -> str:
    """'x0.956 [0.923, 0.993]' (the interval always shown, also when it has no width)."""
    return f"x{p.estimate:.{digits}f} [{p.ci[0]:.{digits}f}, {p.ci[1]:.{digits}f}]"


# ---- tables ------------------------------------------------------------------------------------

def caption(grid: OgasGrid, title: str, frame: pd.DataFrame | None = None) -> str:
    """A table's caption (:func:`repro.report.caption`): ``title``, the models with WikiText-2 test / C4 and
    their sample and dtype, the profile, and how many of ``frame``'s cells were read from cached records
    (what each model is and its calibration: the *This run* block, :meth:`Report.provenance`)."""
    cache = grid.store.cache_summary(frame.key) if frame is not None and len(frame) else ""
    wt, c4 = grid.wt[grid.models[0]], grid.c4[grid.models[0]]
    setting = lm_setting(grid.wt, f"{wt.setup.data} / {c4.setup.data}")  # the samples' full labels: This run
    return caption_line(title, setting, grid.p.profile, cache)


def calibration_words(grid: OgasGrid, frame: pd.DataFrame | None = None, c4: bool = True) -> str:
    """What a table of calibrated methods calibrated on: each data set's calibration text, the windows (samples x
    tokens) and how many draws its cells pool (from ``frame``'s ``n_draws``: the most any calibrated cell has)."""
    e = next(iter(grid.wt.values()))
    s = e.setup
    drawn = frame[frame.drawn.notna()] if frame is not None and len(frame) and "drawn" in frame else None
    draws = int(drawn.n_draws.max()) if drawn is not None and len(drawn) and "n_draws" in drawn else 1
    def text(x) -> str:  # the calibration text's label (its setup's name where the experiment has no text loaded)
        return x.calib_text.label if hasattr(x, "calib_text") else x.setup.calib_data
    texts = text(e) + (f" (C4 rows: {text(next(iter(grid.c4.values())))})" if c4 and grid.c4 else "")
    return (f"Calibration: {texts}, {s.calib_nsamples} x {s.calib_seqlen} tokens"
            + (f", {draws} draws pooled (geometric mean over the draws)." if draws > 1 else ", one draw."))


def main_rows(grid: OgasGrid) -> list[str]:
    """Rows of Tables 1-2: dense, every method, OGAS at the exact target."""
    return ["dense", *grid.p.methods, "ogas-exact"]



