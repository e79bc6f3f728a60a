"""Paper 1 (MP-G) records as frames: the method sets and labels, the finders over a frame, paired
comparisons and the values tables and claims share. Reads records only (no model is run).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from repro.claims import claims_markdown, headline, kind_counts
from repro.engines.base import owned
from repro.evaluate.stats import Paired, paired_difference
from repro.methods.heads import HEAD_METHODS, select_heads
from repro.report import Table, paired_cells, rank_marks, to_markdown
from repro.report import pool_draws as pool_by_cell
from repro.store import Store

TABLE3_METRIC = {"mrpc": "f1"}  # the paper's Table III reports MRPC in F1, the other GLUE tasks in accuracy
PAPER_METHODS = HEAD_METHODS.names(paper=True)    # the paper's Table IV set
EXTRA_METHODS = HEAD_METHODS.names(paper=False, ablation=False)   # ours: sanity baselines
CALIBRATED = HEAD_METHODS.names(calibration_free=False)
Z_METHODS = [m for m in HEAD_METHODS.names(calibration_free=True, ablation=False)
             if "z" in HEAD_METHODS[m].params]  # Table II
LABEL = HEAD_METHODS.labels(dense="Dense")


def pct(sparsity: float) -> str:
    return f"{sparsity:.1%}"


def kv_heads_of(e) -> int:
    """Layer 0's K/V heads, from the model card."""
    return e.structure["kv_heads_per_layer"][0]


def group_size_of(e) -> int:
    """Query heads per K/V head in layer 0, from the model card."""
    return e.structure["heads_per_layer"][0] // e.structure["kv_heads_per_layer"][0]


def describe(experiments) -> str:
    """One line per model: its source, shape and evaluation windows."""
    return "\n".join(f"{name}: {e.identity.get('upstream', e.identity['source'])}; "
                     f"L x H = {e.shape[0]} x {e.shape[1]}, KV heads {kv_heads_of(e)}; "
                     f"eval {e.data.label}, {e.windows()}"
                     for name, e in experiments.items())


# ---- records -> frames ------------------------------------------------------------------------

def _drawn(method: str) -> str | None:
    """What a method's draws are drawn from: Random's seeds, a calibration-based scorer's calibration draws
    (None for one that draws nothing)."""
    if method in HEAD_METHODS and "seed" in HEAD_METHODS[method].params:
        return "seed"
    return "calibration" if method in HEAD_METHODS and HEAD_METHODS[method].calibration else None


def _draw(config: dict) -> int:
    """Which draw of its method a cell is: Random's seed, a calibration-based scorer's calibration seed
    (0 for a method that draws nothing)."""
    method = config["method"]
    if method in HEAD_METHODS and "seed" in HEAD_METHODS[method].params:
        return int(config.get("seed", 0))
    return int((config.get("calibration") or {}).get("seed", 0))


def ppl_frame(store: Store, experiments, session: bool = True, pool: bool = True,
              records: str = "heads-ppl") -> pd.DataFrame:
    """One row per perplexity cell of ``experiments`` (HeadExperiments) under their current setup
    (data, seqlen, windows, batch size, dtype); ``session``: only cells asked for in this session.
    ``pool``: the draws of a method drawn several times (Random's seeds, calibration draws) as one row
    (:func:`pool_draws`), else one row per draw. ``records``: their record folder ("heads-mlm": the masked
    LMs' pseudo-perplexity cells, in the same shape)."""
    rows = []
    for r, _ in owned(store, records, experiments, session):
        c, res = r["config"], r["result"]
        rows.append({"key": (records, r["key"]), "model": c["model"]["name"], "method": c["method"],
                     "draw": _draw(c), "drawn": _drawn(c["method"]), "scale": c.get("scale", "global"),
                     "z": c.get("z"), "sparsity": c.get("sparsity", 0.0), "tie_break": c.get("tie_break", "index"),
                     "tie_seed": c.get("tie_seed"), "data": f'{c["data"]["name"]}:{c["data"]["split"]}',
                     "seqlen": c["seqlen"], "n_windows": res["n_windows"], "n_tokens": res["n_tokens"],
                     "dtype": res["dtype"], "ppl": res["ppl"], "ci95": res["ci95"], "window_nll": res["window_nll"],
                     "pruned": res.get("pruned"), "calibration": c.get("calibration"), "seconds": r.get("seconds")})
    cols = ["key", "model", "method", "draw", "drawn", "scale", "z", "sparsity", "tie_break", "tie_seed", "data", "seqlen", "n_windows",
            "n_tokens", "dtype", "ppl", "ci95", "window_nll", "pruned", "calibration", "seconds"]
    frame = pd.DataFrame(rows, columns=cols)
    return pool_draws(frame) if pool else frame


CELL = ["model", "method", "scale", "z", "sparsity", "tie_break", "tie_seed"]  # what names a cell apart from its draw


def pool_draws(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per cell of a per-draw :func:`ppl_frame` (:func:`repro.report.pool_draws` over :data:`CELL`):
    ``key``, ``draw`` and ``pruned`` are the first draw's."""
    if "scale" not in frame:  # frames of records made before the remedy ablation
        frame = frame.assign(scale="global")
    return pool_by_cell(frame, CELL)


def vision_frame(store: Store, experiments, session: bool = True) -> pd.DataFrame:
    """One row per evaluated cell of ``experiments`` (VisionHeadExperiments): top-1 and mean
    cross-entropy on the test images, and both per image (for paired comparisons). The columns
    :func:`find` reads are those of :func:`ppl_frame`."""
    rows = []
    for r, _ in owned(store, "heads-vision", experiments, session):
        c, res = r["config"], r["result"]
        rows.append({"key": ("heads-vision", r["key"]), "model": c["model"]["name"], "method": c["method"],
                     "z": c.get("z"), "sparsity": c.get("sparsity", 0.0), "tie_break": c.get("tie_break", "index"),
                     "tie_seed": c.get("tie_seed"), "n_eval": res["n_eval"], "dtype": c["dtype"],
                     "top1": res["top1"], "ce": res["ce"], "per_image_ce": res["per_image_ce"],
                     "per_image_correct": res["per_image_correct"], "pruned": res.get("pruned"),
                     "n_pruned": res.get("n_pruned", 0), "calibration": c.get("calibration")})
    cols = ["key", "model", "method", "z", "sparsity", "tie_break", "tie_seed", "n_eval", "dtype", "top1", "ce",
            "per_image_ce", "per_image_correct", "pruned", "n_pruned", "calibration"]
    return pd.DataFrame(rows, columns=cols)


def main_cells(frame: pd.DataFrame, scale: str = "global") -> pd.DataFrame:
    """The cells of Table I: index tie-break, z = 2 for the methods that take z, scores ranked ``scale``
    ("layer": the remedy ablation's cells)."""
    scales = frame.scale if "scale" in frame else pd.Series("global", index=frame.index)
    keep = scales.eq(scale) | frame.method.eq("dense")
    return frame[keep & frame.tie_break.eq("index") & (frame.z.isna() | frame.z.eq(2.0))]


def scores_frame(store: Store, experiments, session: bool = True) -> pd.DataFrame:
    """One row per head-score record of ``experiments``: the scores (an L x H array), what scoring
    cost on its own ("seconds", its calibration pass included) and the calibration windows read."""
    rows = []
    for r, _ in owned(store, "heads-scores", experiments, session):
        c = r["config"]
        rows.append({"key": ("heads-scores", r["key"]), "model": c["model"]["name"], "method": c["method"],
                     "z": c.get("z"), "seed": c.get("seed"), "calibration": c.get("calibration"),
                     "scores": np.asarray(r["result"]["scores"]), "seconds": r["result"]["seconds"]})
    return pd.DataFrame(rows, columns=["key", "model", "method", "z", "seed", "calibration", "scores", "seconds"])


def find(frame: pd.DataFrame, model: str, method: str, sparsity: float = 0.0, z: float = 2.0,
         tie_seed: int | None = None, scale: str = "global") -> pd.Series | None:
    """The cell of (model, method, sparsity[, z for methods that take z]) with the index tie-break
    (``tie_seed``: the random tie-break of that seed); the dense row for ``method="dense"``. Of a method
    drawn several times (Random's seeds, calibration draws: :func:`draws`), the first draw; ``scale``: the
    cells ranked globally (Table I's) or by layer-normalised scores ("layer", the remedy ablation's)."""
    f = draws(frame, model, method, sparsity, z, tie_seed, scale)
    return None if f.empty else f.iloc[0]


def draws(frame: pd.DataFrame, model: str, method: str, sparsity: float = 0.0, z: float = 2.0,
          tie_seed: int | None = None, scale: str = "global") -> pd.DataFrame:
    """Every draw of the cell :func:`find` names (Random's seeds, a calibrated scorer's calibration
    draws; one row for the other methods), by draw."""
    f = frame[(frame.model == model) & (frame.method == method)]
    if "scale" in f and method != "dense":
        f = f[f.scale.eq(scale)]
    f = f[f.tie_break.eq("index")] if tie_seed is None else f[f.tie_break.eq("random") & f.tie_seed.eq(tie_seed)]
    if method != "dense":
        f = f[np.isclose(f.sparsity.astype(float), sparsity)]
        if "z" in HEAD_METHODS[method].params:
            f = f[f.z == z]
    return f.sort_values("draw", kind="stable") if "draw" in f else f


def tie_break_only(z: float, zeros: float, n_heads: int, cut: int) -> str:
    """Why a row that reads MP-G's cell (threshold ``z``, ``cut`` heads pruned of ``n_heads``, ``zeros`` of them
    scoring exactly 0) is evidence about MP-G's tie-break, not its scores: more heads score 0 than it prunes, so which
    of them go is the (layer, head) order's choice; "" otherwise (every zero-score head pruned: the scores decide).
    The one rule for every table whose rows read MP-G's selections (Table III, the MHA encoders)."""
    if not cut < zeros:
        return ""
    return (f"evidence about MP-G's tie-break, not its scores: at z = {z:g} it scores {zeros:.0f} of {n_heads} heads "
            f"exactly 0, more than the {cut} it prunes, so its selection is that tie taken in index order")


def find_scores(scores: pd.DataFrame, model: str, method: str, z: float = 2.0, seed: int = 0) -> pd.Series | None:
    """The score record of (model, method[, z, seed for methods that take them])."""
    f = scores[(scores.model == model) & (scores.method == method)]
    params = HEAD_METHODS[method].params
    if "z" in params:
        f = f[f.z == z]
    if "seed" in params:
        f = f[f.seed == seed]
    return None if f.empty else f.iloc[0]


def grid(frame: pd.DataFrame, field: str, methods: list[str], models: list[str], sparsities: list[float],
         z: float = 2.0, dense: bool = True) -> pd.DataFrame:
    """``field`` of each (method, model, sparsity) cell: rows = method labels (Dense first, its value
    repeated in every column of its model), columns = (model, "12.5%")."""
    cols = pd.MultiIndex.from_tuples([(m, pct(s)) for m in models for s in sparsities])
    rows = (["dense"] if dense else []) + list(methods)
    out = pd.DataFrame(index=[LABEL[m] for m in rows], columns=cols, dtype=object)
    for method in rows:
        for model in models:
            for sp in sparsities:
                c = find(frame, model, method, sp, z)
                out.at[LABEL[method], (model, pct(sp))] = None if c is None else c[field]
    return out


def curve(frame: pd.DataFrame, model: str, method: str, sparsities: list[float]) -> list[float]:
    """Perplexity of ``method`` at sparsity 0 (the dense model) and at each of ``sparsities``
    (NaN where a cell is missing)."""
    cells = [find(frame, model, "dense")] + [find(frame, model, method, sp) for sp in sparsities]
    return [np.nan if c is None else c.ppl for c in cells]


def rank_counts(values: pd.DataFrame, rows: list[str]) -> pd.DataFrame:
    """Best / second-best counts of ``rows`` (labels) over the columns of ``values`` (lower is
    better; ties share a mark, as in the marked tables)."""
    v = values.loc[rows].astype(float)
    marks = [rank_marks(v[c]) for c in v.columns]
    return pd.DataFrame({k: [sum(mk.get(r) == k for mk in marks) for r in rows] for k in ("best", "second")},
                        index=rows)


def best_calibrated(frame: pd.DataFrame, model: str, sparsity: float) -> str:
    """The calibration-based method with the lowest perplexity at ``sparsity`` (Table I's cells)."""
    return min(CALIBRATED, key=lambda m: c.ppl if (c := find(frame, model, m, sparsity)) is not None else np.inf)


def zeroshot_cells(frame: pd.DataFrame, model: str, sparsities: list[float]) -> list[tuple[str, float]]:
    """The Table III analogue's cells of ``model``: dense, then MP-G, MP and the best
    calibration-based method of Table I at each of ``sparsities``."""
    cells = [("dense", 0.0)]
    for sp in sparsities:  # SparseGPT-Head always: the paper calls it the most robust downstream
        cells += list(dict.fromkeys([("mpg", sp), ("mp", sp), (best_calibrated(frame, model, sp), sp),
                                     ("sparsegpt-head", sp)]))
    return cells


def paired_vs(frame: pd.DataFrame, model: str, a: str, b: str, sparsity: float, z_a: float = 2.0,
              z_b: float = 2.0, sparsity_b: float | None = None) -> Paired | None:
    """ppl(a) / ppl(b) on the same windows with its paired bootstrap CI (None if a cell is missing); methods
    drawn from the same source (calibration draws) paired on the draws both ran, independent draws (Random's
    seeds) widening the interval (:func:`repro.report.paired_cells`)."""
    ca = find(frame, model, a, sparsity, z_a)
    cb = find(frame, model, b, sparsity if sparsity_b is None else sparsity_b, z_b)
    return None if ca is None or cb is None else paired_cells(ca, cb)


def paired_table(frame: pd.DataFrame, models: list[str], sparsities: list[float], reference: str = "mpg",
                 others: list[str] | None = None) -> pd.DataFrame:
    """``reference`` against every other method in every setting: ppl ratio (< 1: reference better)
    with its paired 95% CI over windows, and on how many windows the reference was better."""
    others = others or [m for m in PAPER_METHODS + EXTRA_METHODS if m != reference]
    rows = []
    for model in models:
        for sp in sparsities:
            for m in others:
                p = paired_vs(frame, model, reference, m, sp)
                if p is None:
                    continue
                rows.append({"model": model, "sparsity": pct(sp), "vs": LABEL[m], "ppl ratio": p.estimate,
                             "95% CI": None if p.ci is None else f"[{p.ci[0]:.3f}, {p.ci[1]:.3f}]",
                             "windows better": f"{p.n_better}/{p.n}"})
    return pd.DataFrame(rows)


def metrics(main: pd.DataFrame, frame: pd.DataFrame, claims: pd.DataFrame, models: list[str]) -> dict:
    """What tests and CI assert of an executed notebook: dense perplexities, cell and claim counts."""
    return {"dense_ppl": {n: float(find(main, n, "dense").ppl) for n in models}, "n_cells": int(len(frame)),
            "n_claims": int(len(claims)), "verdicts": kind_counts(claims)}


HEADLINE = "Calibration-free MP-G matches or beats the best calibration-based head score"  # the README's line


def readme_blocks(table1: Table, claims: Table) -> dict[str, str]:
    """The generated blocks from Table I and the claims: the README's headline, Table I and the claims table
    (docs/results.md)."""
    return {"mpg-headline": headline(claims.frame, HEADLINE),
            "mpg-table1": to_markdown(table1.frame, table1.caption),
            "mpg-claims": claims_markdown(claims.frame, claims.caption)}


# ---- tables with their captions ---------------------------------------------------------------

def half_of(values, which: int) -> np.ndarray:
    """The first (0) or second (1) half of a model's windows: one chooses, the other tests."""
    v = np.asarray(values, dtype=float)
    return v[: len(v) // 2] if which == 0 else v[len(v) // 2:]


def per_unit(cell: pd.Series, field: str) -> np.ndarray:
    return np.asarray(cell[field], dtype=float)


def vision_paired(frame: pd.DataFrame, model: str, a: str, b: str, sparsity: float, field: str = "per_image_ce",
                  z_a: float = 2.0, z_b: float = 2.0) -> Paired | None:
    """mean(a) - mean(b) of ``field`` over the same test images (cross-entropy in nats, or
    correctness in 0/1) with its paired bootstrap CI; None if a cell is missing."""
    ca, cb = find(frame, model, a, sparsity, z_a), find(frame, model, b, sparsity, z_b)
    if ca is None or cb is None:
        return None
    return paired_difference(per_unit(ca, field), per_unit(cb, field))


def identical_scores(scores: pd.DataFrame, model: str, z_values, sparsities) -> dict | None:
    """MP-G against MP on ``model`` for every z: the largest absolute score difference and the
    (z, sparsity) cells whose selected heads differ (None without both score records)."""
    diffs, differ, n = [], [], 0
    for z in z_values:
        a, b = find_scores(scores, model, "mpg", z), find_scores(scores, model, "mp", z)
        if a is None or b is None:
            continue
        n += 1
        diffs.append(float(np.abs(a["scores"] - b["scores"]).max()))
        differ += [(z, sp) for sp in sparsities if select_heads(a["scores"], sp) != select_heads(b["scores"], sp)]
    return None if not n else {"max_abs_diff": max(diffs), "differ": differ, "n_z": n}


def paired_text(p: Paired | None, scale: float, digits: int) -> str:
    if p is None:
        return "-"
    return f"{scale * p.estimate:+.{digits}f} [{scale * p.ci[0]:+.{digits}f}, {scale * p.ci[1]:+.{digits}f}]"
