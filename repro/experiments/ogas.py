"""Paper 2 (OGAS) from records: the frame of the pruning cells (``repro.experiments.unstructured``),
the paired comparisons, and every table, figure's data, claim and summary line the notebook shows.
Everything here reads records only (no model is run), so it is tested on constructed records.

Functions that take a ``grid`` read the notebook's choices (models, methods, sparsities...) and,
for captions, the setups and model identities from an :class:`~repro.experiments.unstructured.OgasGrid`.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from repro.claims import Claim, claims_frame, count_verdicts, ratio_claim, shown, underpowered, with_paper, with_sources
from repro.evaluate.stats import Paired, bootstrap_ci, paired_difference, paired_ratio
from repro.experiments.base import owned
from repro.experiments.unstructured import ABLATION, QUANTILES, OgasGrid, PruneExperiment, own_headroom
from repro.methods.registry import minmax
from repro.methods.unstructured import PRUNERS
from repro.report import marked_table, to_markdown


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


def frame(grid: OgasGrid) -> pd.DataFrame:
    """The frame of every cell the notebook's grid asked for so far in this session."""
    return prune_frame(grid.store, grid.all_experiments())


# ---- cells of the frame -----------------------------------------------------------------------

PAPER_ZEROSHOT = ("arc_challenge", "boolq", "hellaswag", "winogrande")  # the paper's Table 3 task set
LABELS = PRUNERS.labels(dense="Dense", **{"ogas-exact": "OGAS (exact target)", "ogas-h0.05": "OGAS, S_max headroom 0.05",
                                          "ogas-h0.2": "OGAS, S_max headroom 0.2",
                                          "ogas-wide": "OGAS, wider gamma interval"})


PAPER_GAMMA = (0.05, 1.1)  # the paper's gamma interval


def row_name(method: str, params: dict | None) -> str:
    """Table row of a cell: OGAS with largest-remainder rounding, or with another S_max headroom
    than the default 0.1, is its own row ("ogas-exact", "ogas-h0.05")."""
    params = params or {}
    if method == "ogas" and params.get("rounding") == "exact":
        return "ogas-exact"
    if method == "ogas" and params.get("s_max_headroom", 0.1) != 0.1:
        return f"ogas-h{params['s_max_headroom']:g}"
    if method == "ogas" and tuple(params.get("gamma_bounds", PAPER_GAMMA)) != PAPER_GAMMA:
        return "ogas-wide"
    return method


def headroom_row(sparsity: float, headroom: float) -> str:
    """The row of OGAS with ``S_max`` headroom ``headroom`` at ``sparsity``: its own where it prunes
    differently (:func:`repro.experiments.unstructured.own_headroom`), else the default OGAS cell."""
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
        named = np.array([row_name(m, p) == row for m, p in zip(f.method, f.params)], dtype=bool)
        f = f[named & np.isclose(f.sparsity.astype(float), sparsity) & (f.pattern == pattern).to_numpy()]
        for k, v in params.items():
            f = f[[p.get(k) == v for p in f.params]]
    return None if f.empty else f.iloc[0]


def paired_to(frame, model, data, a, b, sparsity=0.5, pattern="unstructured", **params) -> Paired | None:
    """ppl(a) / ppl(b) with a paired bootstrap CI over the shared windows (None if missing)."""
    ca, cb = find(frame, model, data, a, sparsity, pattern, **params), find(frame, model, data, b, sparsity, pattern)
    return None if ca is None or cb is None else paired_ratio(ca.window_nll, cb.window_nll)


def zeroshot_paired(a: dict, b: dict, tasks: list[str], metric: str = "acc") -> Paired:
    """Mean zero-shot accuracy of result ``a`` minus result ``b`` (lm-eval results of two models)
    over ``tasks``, paired over the same documents (every task has ``limit`` documents, so the
    pooled mean is the mean over tasks)."""
    da = np.concatenate([a["tasks"][t]["per_doc"][metric] for t in tasks])
    db = np.concatenate([b["tasks"][t]["per_doc"][metric] for t in tasks])
    return paired_difference(da, db)


def dense_ppl(frame: pd.DataFrame, grid: OgasGrid) -> dict[str, float]:
    """WikiText-2 perplexity of each dense model."""
    return {n: float(find(frame, n, grid.wt_name, "dense").ppl) for n in grid.models}


def ratio_text(p: Paired, digits: int = 3) -> str:
    """'x0.956 [0.923, 0.993]' (the interval always shown, also when it has no width)."""
    return f"x{p.estimate:.{digits}f} [{p.ci[0]:.{digits}f}, {p.ci[1]:.{digits}f}]"


# ---- tables ------------------------------------------------------------------------------------

def caption(grid: OgasGrid, title: str, frame: pd.DataFrame | None = None) -> str:
    """A table's caption: ``title``, then the profile, models, calibration and evaluation of the
    first model's setups, and how many of ``frame``'s cells were read from cached records."""
    parts = [f"{name} ({e.identity.get('quantisation')}, OGAS {grid.ogas_setting[name]} setting, evaluated on "
             f"{e.windows()})" for name, e in grid.wt.items()]
    cache = f" {grid.store.cache_summary(frame.key)}." if frame is not None and len(frame) else ""
    s, c4 = grid.wt[grid.models[0]].setup, grid.c4[grid.models[0]].setup
    return (f"**{title}** Profile `{grid.profile}`. Models: " + "; ".join(parts) + f". Calibration {s.calib_nsamples} "
            f"x {s.calib_seqlen} tokens ({s.calib_data} for WikiText-2 rows, {c4.calib_data} for C4 rows); perplexity "
            f"on the first windows of {s.data} / {c4.data}, {s.eval_dtype}.{cache}")


def ppl_table(frame: pd.DataFrame, models: list[str], datas: list[str], patterns=("unstructured",), rows=(),
              sparsity: float = 0.5) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Perplexity, its interval and each row's paired ratio to Wanda: three frames, rows = labels,
    one column per (model, data[, pattern]) that has a cell."""
    vals, cis, paired = {}, {}, {}
    for name in models:
        for d in datas:
            for pat in patterns:
                col = f"{name} {d}" + ("" if pat == "unstructured" else f" {pat}")
                for r in rows:
                    c = find(frame, name, d, r, sparsity, pat)
                    vals.setdefault(col, {})[LABELS[r]] = None if c is None else c.ppl
                    cis.setdefault(col, {})[LABELS[r]] = None if c is None else c.ci95
                    p = paired_to(frame, name, d, r, "wanda", sparsity, pat) if r not in ("dense", "wanda") else None
                    paired.setdefault(f"{col}: / Wanda", {})[LABELS[r]] = "—" if p is None else ratio_text(p)
    vals, cis, paired = pd.DataFrame(vals), pd.DataFrame(cis), pd.DataFrame(paired)
    ran = [c for c in vals if vals[c].notna().any()]  # e.g. C4 only for `c4_models`
    return vals[ran], cis[ran], paired[[f"{c}: / Wanda" for c in ran]]


def main_rows(grid: OgasGrid) -> list[str]:
    """Rows of Tables 1-2: dense, every method, OGAS at the exact target."""
    return ["dense", *grid.methods, "ogas-exact"]


def table12(frame: pd.DataFrame, grid: OgasGrid) -> tuple[pd.DataFrame, str, pd.DataFrame]:
    """Tables 1-2 (WikiText-2 and C4 perplexity at the main sparsity, best bold, second underlined,
    paired ratios to Wanda), its caption and the raw perplexities."""
    vals, cis, paired = ppl_table(frame, grid.models, [grid.wt_name, grid.c4_name], rows=main_rows(grid),
                                  sparsity=grid.sparsity)
    for name in grid.models:  # the paper's average column: the mean of the model's two perplexities
        both = [f"{name} {d}" for d in (grid.wt_name, grid.c4_name) if f"{name} {d}" in vals]
        if len(both) == 2:
            vals[f"{name} average"] = vals[both].astype(float).mean(axis=1, skipna=False)
            cis[f"{name} average"] = None
    table = marked_table(vals.astype(float), cis, skip_rows=["Dense"]).join(paired)
    cap = caption(grid, f"Tables 1-2. WikiText-2 test and C4 (held-out half) perplexity at {grid.sparsity:.0%} "
                        "unstructured sparsity, their average per model (the paper's average column: the mean of the "
                        "two perplexities, no interval), and each method's paired ratio to Wanda.", frame)
    return table, cap, vals


def achieved_table(frame: pd.DataFrame, grid: OgasGrid) -> tuple[pd.DataFrame, str]:
    """Achieved sparsity over all pruned linears and pruning seconds of every main cell."""
    rows = []
    for name in grid.models:
        for d in (grid.wt_name, grid.c4_name):
            for r in main_rows(grid)[1:]:
                c = find(frame, name, d, r, grid.sparsity)
                if c is not None:
                    rows.append({"model": name, "data": d, "method": LABELS[r], "target": grid.sparsity,
                                 "achieved": round(c.achieved, 5), "prune seconds": round(c.prune_seconds, 1)})
    return pd.DataFrame(rows), caption(grid, "Achieved sparsity over all pruned linears and pruning time on this "
                                             "machine.", frame)


def rounding_table(frame: pd.DataFrame, grid: OgasGrid) -> tuple[pd.DataFrame, str]:
    """What the paper's rounding is worth: OGAS (floor per row) over OGAS at the exact target,
    paired over windows, where both ran."""
    rows = []
    for name in grid.models:
        for d in (grid.wt_name, grid.c4_name):
            p = paired_to(frame, name, d, "ogas", "ogas-exact", grid.sparsity)
            if p is not None:
                rows.append({"model": name, "data": d, "OGAS paper rounding / exact target (ppl, paired)":
                             ratio_text(p, 4), "windows better": f"{p.n_better}/{p.n}"})
    return pd.DataFrame(rows), caption(grid, "What the paper's rounding is worth: OGAS as published (floor per row) "
                                             "over OGAS at the exact target; below 1 means the rounding flatters OGAS.",
                                       frame)


def nm_table(frame: pd.DataFrame, grid: OgasGrid) -> tuple[pd.DataFrame, str, pd.DataFrame]:
    """N:M perplexity (WikiText-2) of ``nm_methods`` on ``nm_models``, its caption and the raw values."""
    vals, cis, _ = ppl_table(frame, grid.nm_models, [grid.wt_name], grid.nm_patterns, ["dense", *grid.nm_methods],
                             sparsity=0.5)
    return (marked_table(vals.astype(float), cis, skip_rows=["Dense"]),
            caption(grid, "N:M sparsity: WikiText-2 test perplexity at 2:4 and 4:8 (50%).", frame), vals)


def zeroshot_tables(results: dict[str, dict[str, dict]], grid: OgasGrid) -> list[tuple[str, pd.DataFrame, str]]:
    """Tables 3-4, one per zero-shot model: ``(file stem, table, caption)``; ``results``:
    ``{model: {"dense" or method: lm-eval result}}`` (:meth:`OgasGrid.run_zeroshot`). Accuracy per
    task, their mean (and that of the paper's Table 3 tasks, :data:`PAPER_ZEROSHOT`, where more ran),
    and the mean difference to Wanda paired over the same documents."""
    out = []
    tasks = grid.zeroshot_tasks
    for i, (name, res) in enumerate(results.items()):
        t = {}
        for r, result in res.items():
            row = {task: result["tasks"][task]["metrics"]["acc"]["value"] for task in tasks}
            paper = [row[t] for t in tasks if t in PAPER_ZEROSHOT]
            row["mean"] = round(float(np.mean(list(row.values()))), 3)
            if paper and len(paper) < len(tasks):
                row["mean of the paper's tasks"] = round(float(np.mean(paper)), 3)
            p = zeroshot_paired(result, res["wanda"], tasks) if r not in ("dense", "wanda") else None
            row["vs Wanda (paired)"] = "—" if p is None else f"{p.estimate:+.3f} [{p.ci[0]:+.3f}, {p.ci[1]:+.3f}]"
            t[LABELS[r]] = row
        cap = (f"**Table {3 + i}. Zero-shot accuracy, {name}, {grid.sparsity:.0%} unstructured.** lm-eval task "
               f"YAMLs, first {grid.zeroshot_limit} documents per task, {grid.wt[name].setup.eval_dtype}, profile "
               f"`{grid.profile}`; BoolQ passages lack the standard title prefix (local copy).")
        out.append((f"table{3 + i}_zeroshot_{name}", pd.DataFrame(t).T, cap))
    return out


# accuracy of a uniform guess per task: ARC (mostly 4 choices, a few 3 or 5) and HellaSwag 4 endings; BoolQ,
# WinoGrande and PIQA two answers (BoolQ's majority answer, "yes", is right more often than half the time)
CHANCE = {"arc_challenge": 0.25, "arc_easy": 0.25, "hellaswag": 0.25, "openbookqa": 0.25, "boolq": 0.5,
          "winogrande": 0.5, "piqa": 0.5, "sst2": 0.5, "mrpc": 0.5, "rte": 0.5}


def dense_vs_chance(results: dict[str, dict[str, dict]], tasks: list[str]) -> tuple[pd.DataFrame, str]:
    """(table, caption): each zero-shot model's *dense* accuracy per task beside a uniform guess's
    (:data:`CHANCE`), with a 95% bootstrap interval over the documents and where the interval lies
    (above / at / below chance): a dense model at or below chance on a task cannot show what pruning
    costs there, and a dense number far below chance would be a bug in the feeding or scoring."""
    rows = []
    for name, res in results.items():
        d = res["dense"]["tasks"]
        for task in tasks:
            acc = np.asarray(d[task]["per_doc"]["acc"], float)
            ci = bootstrap_ci(acc) or (float(acc.mean()), float(acc.mean()))
            chance = CHANCE.get(task)
            where = ("" if chance is None else "above chance" if ci[0] > chance else
                     "below chance" if ci[1] < chance else "at chance")
            rows.append({"model": name, "task": task, "paper's task": task in PAPER_ZEROSHOT, "documents": acc.size,
                         "dense accuracy": round(float(acc.mean()), 3), "95% interval": f"[{ci[0]:.3f}, {ci[1]:.3f}]",
                         "chance": chance, "dense vs chance": where})
    cap = ("**Dense zero-shot accuracy against a uniform guess.** Per task, the dense model's accuracy (lm-eval "
           "`acc`) over the documents evaluated, its 95% bootstrap interval over documents, and the accuracy of "
           "guessing uniformly among the answers (ARC and HellaSwag: 4 choices; BoolQ, WinoGrande, PIQA: 2). "
           "Where the dense model is at chance, its pruned copies can only tie it or fall below it by noise.")
    return pd.DataFrame(rows), cap


def chance_summary(chance: pd.DataFrame) -> str:
    """One Markdown bullet per model from :func:`dense_vs_chance`'s table: the tasks where its dense
    accuracy lies above, at and below chance (the paper's four tasks marked *)."""
    lines = []
    for name, g in chance.groupby("model", sort=False):
        parts = []
        for where in ("above chance", "at chance", "below chance"):
            t = g[g["dense vs chance"] == where]
            if len(t):
                parts.append(f"{where} on " + ", ".join(f"{task}{'*' if paper else ''} {acc:.2f}" for task, paper, acc
                                                        in zip(t.task, t["paper's task"], t["dense accuracy"])))
        lines.append(f"- **{name}** dense: " + "; ".join(parts) + ".")
    return "\n".join(lines) + "\n\n(* the paper's four tasks; accuracy over the documents evaluated.)"


def ablation_table(frame: pd.DataFrame, grid: OgasGrid) -> tuple[pd.DataFrame, str]:
    """Table 5: Wanda, OGAS energy-only, PAPR-only and OGAS on WikiText-2 for ``ablation_models``,
    each with its lambda, perplexity and ratio to Wanda paired over windows (empty if none ran)."""
    rows = []
    for name in grid.ablation_models:
        for r in ABLATION:
            c = find(frame, name, grid.wt_name, r, grid.sparsity)
            p = paired_to(frame, name, grid.wt_name, r, "wanda", grid.sparsity)
            rows.append({"model": name, "variant": LABELS[r], "lambda": c.params.get("lam", "-"), "ppl": c.ppl,
                         "key": c.key, "vs Wanda (paired)": ratio_text(p)})
    cells = pd.DataFrame(rows)
    cap = caption(grid, f"Table 5. Ablation at {grid.sparsity:.0%} on WikiText-2 test (paper: LLaMA-3.1-8B 8.85 "
                        "Wanda -> 8.16 energy-only / similar PAPR-only -> 7.99 OGAS).", cells)
    return (cells.drop(columns=["key"]).round(3) if len(cells) else cells), cap


# ---- figures' data -----------------------------------------------------------------------------

def figure2_channels(frame: pd.DataFrame, grid: OgasGrid) -> tuple[str, str, dict]:
    """Figure 2: ``(model, layer, {"energy", "peak_ratio", "channel_sparsity": per channel})`` of the
    layer the first model's OGAS cell kept."""
    name, layer = grid.figure_model, grid.figure_layer_name
    return name, layer, find(frame, name, grid.wt_name, "ogas", grid.sparsity).channels[layer]


def figure2_axes(ch: dict, lam: float, target: float) -> dict:
    """Figure 2 on the paper's axes: each channel's normalised log-energy ``x`` and log-PAPR ``y``
    (the two terms of OGAS's importance, ``I = (1 - lam) x + lam y``), its OGAS sparsity ``s``, and
    ``boundary``: the importance ``I*`` at which OGAS's sparsity crosses the target. Wanda prunes
    every output channel at the target, so channels with ``I > I*`` keep more weights under OGAS than
    under Wanda and those below keep fewer; in the (x, y) plane the boundary is the line
    ``(1 - lam) x + lam y = I*``."""
    x = minmax(np.log1p(np.asarray(ch["energy"], float)))
    y = minmax(np.log1p(np.asarray(ch["peak_ratio"], float)))
    s = np.asarray(ch["channel_sparsity"], float)
    imp = (1 - lam) * x + lam * y
    order = np.argsort(imp)
    # s falls as I rises: interpolate I at s = target on the decreasing curve (reversed to increase)
    boundary = float(np.interp(target, s[order][::-1], imp[order][::-1]))
    xs = np.linspace(0, 1, 51)
    line = (xs, (boundary - (1 - lam) * xs) / lam) if lam else (np.full(51, boundary), xs)
    return {"x": x, "y": y, "s": s, "importance": imp, "boundary": boundary, "line": line, "lam": lam,
            "more_pruned": int((s > target).sum()), "less_pruned": int((s < target).sum())}


def figure2(frame: pd.DataFrame, grid: OgasGrid) -> tuple[str, str, dict]:
    """Figure 2's ``(model, layer, figure2_axes(...))`` with the model's own lambda."""
    name, layer, ch = figure2_channels(frame, grid)
    lam = float(grid.params_for(name, "ogas").get("lam", 0.4))
    return name, layer, figure2_axes(ch, lam, grid.sparsity)


def gamma_frames(frame: pd.DataFrame, grid: OgasGrid) -> list[tuple[str, pd.DataFrame, pd.DataFrame]]:
    """Per model whose OGAS cell searched gamma (the LLaMA setting): ``(model, layers, quantiles)``;
    ``layers``: the gamma each layer chose, whether the search ended at a bound, the layer type;
    ``quantiles``: the 5-95% quantiles of each layer's channel sparsity, by layer type."""
    out = []
    for name in grid.models:
        c = find(frame, name, grid.wt_name, "ogas", grid.sparsity)
        if c is None or not any("gamma_evals" in v for v in c.extras.values()):
            continue  # a fixed-gamma setting (Mistral): nothing was searched
        layers = pd.DataFrame([{"layer": n, "gamma": v.get("gamma"), "at_bound": v.get("gamma_at_bound", False),
                                "type": n.rsplit(".", 1)[-1]} for n, v in c.extras.items()])
        q = pd.DataFrame([{"type": n.rsplit(".", 1)[-1], "quantile": k, "s": v}
                          for n, qs in c.channel_quantiles.items() for k, v in zip(QUANTILES, qs)])
        out.append((name, layers, q[q["quantile"].between(0.05, 0.95)]))
    return out


def gamma_bounds_table(frame: pd.DataFrame, grid: OgasGrid) -> tuple[pd.DataFrame, str]:
    """(table, caption): for OGAS and each ablation variant whose gamma was searched, how many layers
    ended the search within its tolerance of the lower and of the upper bound of the interval; and
    the sensitivity row beyond the paper: OGAS searched on a wider interval, its perplexity paired
    against OGAS on the paper's interval (same windows)."""
    rows = []
    for name in grid.models:
        for r in ("ogas", "ogas-energy", "ogas-papr", "ogas-wide"):
            c = find(frame, name, grid.wt_name, r, grid.sparsity)
            if c is None or not any("gamma_evals" in v for v in c.extras.values()):
                continue  # not run, or a fixed gamma (nothing searched)
            (lo, hi), tol = c.params.get("gamma_bounds", PAPER_GAMMA), c.params.get("gamma_tol", 0.05)
            g = np.array([v["gamma"] for v in c.extras.values()])
            p = paired_to(frame, name, grid.wt_name, r, "ogas", grid.sparsity) if r == "ogas-wide" else None
            rows.append({"model": name, "variant": LABELS[r], "interval": f"({lo:g}, {hi:g})", "layers": len(g),
                         "at the lower bound": int((g - lo < tol).sum()), "at the upper bound": int((hi - g < tol).sum()),
                         "median gamma": round(float(np.median(g)), 3),
                         "ppl": round(float(c.ppl), 3), "vs OGAS (paper's interval)": "" if p is None else ratio_text(p)})
    return pd.DataFrame(rows), caption(grid, "Where the gamma search ended. The interval (0.05, 1.1) is the paper's "
                                             "own; a layer counts at a bound when its gamma is within the search's "
                                             "tolerance (0.05) of it. The wider interval is beyond the paper: a "
                                             "sensitivity check, paired against OGAS on the paper's interval.")


def curve_frame(frame: pd.DataFrame, grid: OgasGrid) -> pd.DataFrame:
    """Figure 4: one row per (model, line, sparsity): ``method`` (the data table's row), ``label``
    (the legend's), ``row`` (the frame's row name), ``headroom`` (NaN for the methods' own lines),
    ``ppl`` (NaN where no cell). OGAS with another headroom is drawn above 60% only, from the
    default cell where it prunes the same."""
    rows = []

    def line(name, method, label, headroom, points):
        for sp, r in points:
            c = find(frame, name, grid.wt_name, r, sp)
            rows.append({"model": name, "method": method, "sparsity": sp, "ppl": np.nan if c is None else c.ppl,
                         "label": label, "row": r, "headroom": headroom})

    for name in grid.curve_models:
        for m in grid.methods:
            line(name, LABELS[m], LABELS[m], np.nan, [(sp, m) for sp in grid.curve_sparsities])
        for h in grid.s_max_headrooms:
            line(name, f"OGAS headroom {h}", f"OGAS, S_max headroom {h}", h,
                 [(sp, headroom_row(sp, h)) for sp in grid.curve_sparsities if sp > 0.6])
    return pd.DataFrame(rows, columns=["model", "method", "sparsity", "ppl", "label", "row", "headroom"])


def curve_table(curve: pd.DataFrame, frame: pd.DataFrame, grid: OgasGrid) -> tuple[pd.DataFrame, str]:
    """Figure 4's data as a table: perplexity per line (rows) and sparsity (columns)."""
    return (curve.pivot_table(index="method", columns="sparsity", values="ppl"),
            caption(grid, "Figure 4 data: WikiText-2 test perplexity vs sparsity.", frame))


# ---- claims and what they say ------------------------------------------------------------------

def ogas_claims(frame: pd.DataFrame, models: list[str], sparsity: float, zeroshot_tasks: list[str],
                curve_models: list[str], ablation_models: list[str], high=(0.7, 0.9), wt: str = "wikitext2") -> list:
    """Paper 2's claims, each judged by :func:`repro.claims.verdict` on a paired interval; the
    ablation, zero-shot and curve claims read the ``wt`` (WikiText-2) cells."""
    out = []
    datas = sorted(set(frame.data)) if len(frame) else []
    for model in models:
        for data in datas:
            if find(frame, model, data, "ogas", sparsity) is None:
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
        a, b = find(frame, model, wt, "ogas", sparsity), find(frame, model, wt, "wanda", sparsity)
        if zeroshot_tasks and a is not None and b is not None and a.zeroshot and b.zeroshot:
            tasks = [t for t in zeroshot_tasks if t in PAPER_ZEROSHOT] or zeroshot_tasks
            p = zeroshot_paired(a.zeroshot, b.zeroshot, tasks)
            out.append(Claim.check("OGAS zero-shot mean accuracy above Wanda's (the paper's four tasks)", model,
                                   f"mean accuracy difference {p.estimate:+.3f} [{p.ci[0]:+.3f}, {p.ci[1]:+.3f}] over "
                                   f"{p.n} paired documents ({', '.join(tasks)})", p.estimate, p.ci, 0.0, "above",
                                   p.n))
            if "hellaswag" in zeroshot_tasks:
                h = zeroshot_paired(a.zeroshot, b.zeroshot, ["hellaswag"])
                out.append(Claim.check("OGAS beats Wanda on HellaSwag (+3.39 points in the paper)", model,
                                       f"HellaSwag accuracy difference {100 * h.estimate:+.1f} [{100 * h.ci[0]:+.1f}, "
                                       f"{100 * h.ci[1]:+.1f}] points over {h.n} paired documents",
                                       h.estimate, h.ci, 0.0, "above", h.n))
    lo, hi = high
    for model in curve_models:  # Figure 4's text: OGAS lowest at the two highest sparsities
        for sp in (0.8, 0.9):
            for other in ("magnitude", "wanda", "ria", "sparsegpt"):
                if find(frame, model, wt, "ogas", sp) is not None:
                    out.append(ratio_claim("OGAS has the lowest perplexity at 80% and 90%", f"{model}, {sp:.0%}, vs "
                                           f"{LABELS[other]}", f"OGAS / {LABELS[other]}",
                                           paired_to(frame, model, wt, "ogas", other, sp)))
        dense = find(frame, model, wt, "dense", 0.0)
        for other in ("magnitude", "sparsegpt"):  # "magnitude and SparseGPT collapse at high sparsity"
            c = find(frame, model, wt, other, hi)
            p = None if c is None or dense is None else paired_ratio(c.window_nll, dense.window_nll)
            out.append(ratio_claim(f"Magnitude and SparseGPT collapse at high sparsity (read here: perplexity at "
                                   f"{hi:.0%} at least x{COLLAPSE:.0f} the dense one)", f"{model}, {LABELS[other]}",
                                   f"{LABELS[other]} {hi:.0%} / dense", p, COLLAPSE, "above"))
    for model in curve_models:
        o70, o90 = find(frame, model, wt, "ogas", lo), find(frame, model, wt, "ogas", hi)
        for other in ("magnitude", "wanda", "ria", "sparsegpt"):
            m70, m90 = find(frame, model, wt, other, lo), find(frame, model, wt, other, hi)
            p = None
            if all(c is not None for c in (o70, o90, m70, m90)):
                p = paired_ratio(np.subtract(o90.window_nll, o70.window_nll), np.subtract(m90.window_nll,
                                                                                          m70.window_nll))
            out.append(ratio_claim(f"OGAS degrades least from {lo:.0%} to {hi:.0%} (flattest curve)",
                                   f"{model}, vs {LABELS[other]}",
                                   f"(ppl{hi * 100:.0f}/ppl{lo * 100:.0f} of OGAS) / (same of {LABELS[other]})", p))
    return out


COLLAPSE = 100.0  # our reading of "collapse": a perplexity at least 100x the dense model's (the paper gives none)

# The paper's own effect for a claim, on the claim's scale (a perplexity ratio), where the paper gives a
# number (repro.claims.with_paper): Table 1 and Table 5, LLaMA-3.1-8B, WikiText-2, 50%.
PAPER_EFFECTS = {
    "OGAS below Wanda": (7.99 / 8.85, "Table 1, LLaMA-3.1-8B WikiText-2: Wanda 8.85 -> OGAS 7.99"),
    "Each single signal improves on Wanda": (8.16 / 8.85, "Table 5: Wanda 8.85 -> energy-only 8.16"),
    "Each single signal is improved on by OGAS": (7.99 / 8.16, "Table 5: energy-only 8.16 -> OGAS 7.99"),
    "OGAS beats Wanda on HellaSwag": (0.0339, "Table 3: HellaSwag +3.39 points over Wanda"),
}


# The paper's statement each claim row tests (repro.claims.with_sources), by claim prefix: every row of
# ogas_claims. The paper's full text is not available offline: words in quotation marks are only those that
# issue 15 quotes from the paper; everything else names the table or figure and paraphrases it ("paraphrase:",
# no quotation marks); the numbers are the paper's as the issues give them.
PAPER_SOURCES = {
    "OGAS below Wanda": "Tables 1-2 (WikiText-2 and C4 perplexity, 50% unstructured); Table 1, LLaMA-3.1-8B, "
                        "WikiText-2: Wanda 8.85 -> OGAS 7.99. paraphrase: OGAS has a lower perplexity than Wanda at 50%",
    "OGAS below RIA": "Tables 1-2 (WikiText-2 and C4 perplexity, 50% unstructured). paraphrase: OGAS has a lower "
                      "perplexity than RIA at 50%",
    "OGAS at or below SparseGPT": "Tables 1-2 (WikiText-2 and C4 perplexity, 50% unstructured). paraphrase: OGAS "
                                  "matches or improves on SparseGPT's perplexity at 50%",
    "Each single signal improves on Wanda": "Table 5 (ablation, LLaMA-3.1-8B, WikiText-2, 50%): Wanda 8.85 -> "
                                            "energy-only 8.16, PAPR-only similar. paraphrase: either signal alone "
                                            "(energy, lambda 0; PAPR, lambda 1) improves on Wanda's uniform sparsity",
    "Each single signal is improved on by OGAS": "Table 5 (ablation, LLaMA-3.1-8B, WikiText-2, 50%): energy-only 8.16 "
                                                 "-> OGAS 7.99. paraphrase: combining energy and PAPR improves on "
                                                 "either signal alone",
    "OGAS zero-shot mean accuracy above Wanda's": "Table 3 (LLaMA setting: SmolLM2 here) and Table 4 (Mistral setting: "
                                                  "Gemma here), ARC-Challenge, BoolQ, HellaSwag, WinoGrande and their "
                                                  "mean. paraphrase: OGAS's mean zero-shot accuracy at 50% is at or "
                                                  "above Wanda's",
    "OGAS beats Wanda on HellaSwag": 'Table 3 (LLaMA-3.1-8B, 50%): "HellaSwag +3.39% over Wanda"',
    "OGAS has the lowest perplexity at 80% and 90%": 'Figure 4 (its text): "OGAS has the lowest perplexity at 80% '
                                                     'and 90%"',
    "Magnitude and SparseGPT collapse": 'Figure 4 (its text, as issue 15 quotes it): "magnitude and SparseGPT '
                                        'collapse at high sparsity" (the paper gives no threshold; x100 the dense '
                                        'perplexity is our reading)',
    "OGAS degrades least from": "Figure 4 (perplexity vs sparsity, 30-90%). paraphrase: OGAS's curve rises least "
                                "from 70% to 90% sparsity (the flattest of the methods)",
}


def claims_table(frame: pd.DataFrame, grid: OgasGrid) -> tuple[pd.DataFrame, str, pd.DataFrame]:
    """The claims checked on the grid's cells: the shown columns (with the paper's statement each row
    tests, :data:`PAPER_SOURCES`), the caption, the full frame."""
    claims = claims_frame(with_sources(with_paper(ogas_claims(frame, grid.models, grid.sparsity,
                                                              grid.zeroshot_tasks if grid.zeroshot_models else [],
                                                              grid.curve_models, grid.ablation_models,
                                                              wt=grid.wt_name), PAPER_EFFECTS), PAPER_SOURCES))
    cap = (f"**Claims checked (Paper 2).** Profile `{grid.profile}`; models {', '.join(grid.models)}; verdicts by "
           "one rule from paired 95% intervals. 'paper says': the table or figure a row tests; words in quotation "
           "marks are the paper's, 'paraphrase:' marks ours (the paper's text is not available offline).")
    return shown(claims), cap, claims


def summary(claims: pd.DataFrame, sparsity: float) -> str:
    """'What the results say' as Markdown bullets, counted from the claims frame."""
    return "\n".join([
        f"- **OGAS vs Wanda** at {sparsity:.0%}: {count_verdicts(claims, 'OGAS below Wanda')}; **vs RIA**: "
        f"{count_verdicts(claims, 'OGAS below RIA')}; **vs SparseGPT**: "
        f"{count_verdicts(claims, 'OGAS at or below SparseGPT')}.",
        f"- **Single signals between Wanda and OGAS**: {count_verdicts(claims, 'Each single signal')}.",
        f"- **Zero-shot mean above Wanda**: {count_verdicts(claims, 'OGAS zero-shot mean')}.",
        f"- **Flattest from 70% to 90%**: {count_verdicts(claims, 'OGAS degrades least')}; **lowest at 80% and 90%** "
        f"(Figure 4's text): {count_verdicts(claims, 'OGAS has the lowest')}; **magnitude and SparseGPT collapse**: "
        f"{count_verdicts(claims, 'Magnitude and SparseGPT collapse')}.",
        f"- **HellaSwag above Wanda** (+3.39 points in the paper): {count_verdicts(claims, 'OGAS beats Wanda on')}.",
        "- These are 135M/270M models from 4-bit weights with a few calibration windows; OGAS's signals come from "
        "output statistics of small layers. Its gain over Wanda in the paper is 8.85 -> 7.99 on an 8B model, "
        "x0.903 (9.7% lower perplexity): each claim row states whether our interval could detect an effect that "
        "large.",
        f"- **Power**: {underpowered(claims)}"])


def readme_blocks(table12: tuple[pd.DataFrame, str], claims: tuple[pd.DataFrame, str]) -> dict[str, str]:
    """The README's generated blocks from ``(table, caption)`` of Tables 1-2 and of the claims."""
    return {"ogas-tables": to_markdown(*table12), "ogas-claims": to_markdown(*claims, index=False)}


def metrics(frame: pd.DataFrame, claims: pd.DataFrame, grid: OgasGrid) -> dict:
    """The run's summary numbers (the notebook's last line, read by the smoke test)."""
    return {"dense_ppl": dense_ppl(frame, grid), "n_cells": int(len(frame)), "n_claims": int(len(claims)),
            "verdicts": claims.verdict.value_counts().to_dict()}


# ---- the notebook's experiments and its plan (repro.experiments.plan) ----------------------------------

def build(session) -> OgasGrid:
    """Notebook 2's grid from its parameters: per model a WikiText-2 and a C4 experiment sharing one
    loaded model."""
    p = session.params
    wt = session.experiments(PruneExperiment, p["models"])
    c4 = session.experiments(PruneExperiment, p["models"], shared=wt,
                             changes={"data": p["c4_data"], "calib_data": p["c4_calib"]})
    return OgasGrid.from_params(wt, c4, p)


def plan(session, grid: OgasGrid) -> None:
    """Ask for every cell notebook 2 asks for, section by section (see :func:`repro.experiments.mpg.plan`)."""
    grid.run_main()
    grid.run_nm()
    for name in grid.zeroshot_models:  # the pruned models' zero-shot scores are in their main cells
        grid.wt[name].dense_zeroshot(grid.zeroshot_tasks, grid.zeroshot_limit)
    grid.run_ablation()
    grid.run_curve()
