"""Paper 2's tables (each a :class:`repro.report.Table`: frame, caption and raw numbers; :class:`.report.Report`
adds its reading) and figures' data, from the frame of the notebook's records.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from repro.claims import collapsed, task_trivial
from repro.engines.prune import QUANTILES
from repro.evaluate.stats import bootstrap_ci
from repro.evaluate.zeroshot import ANSWER_NAMES
from repro.methods.registry import minmax
from repro.papers.ogas.grid import ABLATION, OgasGrid
from repro.papers.ogas.records import (
    LABELS,
    PAPER_GAMMA,
    PAPER_ZEROSHOT,
    calibration_words,
    caption,
    find,
    headroom_row,
    main_rows,
    paired_to,
    ratio_text,
    zeroshot_paired,
)
from repro.report import Table, marked_table


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


def table12(frame: pd.DataFrame, grid: OgasGrid) -> Table:
    """Tables 1-2 (WikiText-2 and C4 perplexity at the main sparsity, best bold, second underlined,
    paired ratios to Wanda), its caption and the raw perplexities."""
    vals, cis, paired = ppl_table(frame, grid.models, [grid.wt_name, grid.c4_name], rows=main_rows(grid),
                                  sparsity=grid.p.sparsity)
    for name in grid.models:  # the paper's average column: the mean of the model's two perplexities
        both = [f"{name} {d}" for d in (grid.wt_name, grid.c4_name) if f"{name} {d}" in vals]
        if len(both) == 2:
            vals[f"{name} average"] = vals[both].astype(float).mean(axis=1, skipna=False)
            cis[f"{name} average"] = None
    table = marked_table(vals.astype(float), cis, skip_rows=["Dense"]).join(paired)
    cap = caption(grid, f"Tables 1-2. WikiText-2 test and C4 perplexity at {grid.p.sparsity:.0%} unstructured sparsity, "
                        "their mean (the paper's average column) and each method's paired ratio to Wanda. "
                        + calibration_words(grid, frame), frame)
    return Table(table, cap, raw=vals)


def sample_vs_split(frame: pd.DataFrame, grid: OgasGrid, refs: dict[str, dict[str, dict]]) -> pd.DataFrame:
    """Per model, the dense WikiText-2 test perplexity on the tables' sample and on its references
    (``refs``: ``{model: {"first short", "spread short", "whole split": dense record}}``,
    :meth:`OgasGrid.run_references`): the earlier sample's first windows of the shorter length, as many
    shorter windows spread over the split, and every window of the split at the tables' length."""
    rows = []
    for name, r in refs.items():
        d = find(frame, name, grid.wt_name, "dense")
        res = {k: v["result"] for k, v in r.items()}
        rows.append({"model": name,
                     **{f"{k} ({v['n_windows']} x {v['seqlen']})": round(v["ppl"], 3) for k, v in res.items()
                        if k != "whole split"},
                     "tables' sample": None if d is None else round(float(d.ppl), 3),
                     "whole split": f"{res['whole split']['ppl']:.3f} ({res['whole split']['n_windows']} x "
                                    f"{res['whole split']['seqlen']})" if "whole split" in res else None})
    return pd.DataFrame(rows)


def achieved_table(frame: pd.DataFrame, grid: OgasGrid) -> Table:
    """Achieved sparsity over all pruned linears and pruning seconds of every main cell."""
    rows = []
    for name in grid.models:
        for d in (grid.wt_name, grid.c4_name):
            for r in main_rows(grid)[1:]:
                c = find(frame, name, d, r, grid.p.sparsity)
                if c is not None:
                    rows.append({"model": name, "data": d, "method": LABELS[r], "target": grid.p.sparsity,
                                 "achieved": round(c.achieved, 5), "prune seconds": round(c.prune_seconds, 1)})
    return Table(pd.DataFrame(rows), caption(grid, "Achieved sparsity over all pruned linears and pruning time on "
                                                   "this machine.", frame))


def rounding_table(frame: pd.DataFrame, grid: OgasGrid) -> Table:
    """What the paper's rounding is worth: OGAS (floor per row) over OGAS at the exact target,
    paired over windows, where both ran."""
    rows = []
    for name in grid.models:
        for d in (grid.wt_name, grid.c4_name):
            p = paired_to(frame, name, d, "ogas", "ogas-exact", grid.p.sparsity)
            if p is not None:
                rows.append({"model": name, "data": d, "OGAS paper rounding / exact target (ppl, paired)":
                             ratio_text(p, 4), "windows better": f"{p.n_better}/{p.n}"})
    return Table(pd.DataFrame(rows), caption(grid, "What the paper's rounding is worth: OGAS as published (floor per "
                                                   "row) over OGAS at the exact target; below 1 means the rounding "
                                                   "flatters OGAS.", frame))


def rounding_keys(frame: pd.DataFrame, grid: OgasGrid) -> list:
    """The records (every draw) behind :func:`rounding_table`."""
    return _keys(frame, [(n, d, r) for n in grid.models for d in (grid.wt_name, grid.c4_name)
                         for r in ("ogas", "ogas-exact")], grid.p.sparsity)


def _keys(frame: pd.DataFrame, cells, sparsity: float) -> list:
    found = (find(frame, n, d, r, sparsity) for n, d, r in cells)
    return [k for c in found if c is not None for k in (c["keys"] if "keys" in c else [c.key])]


def nm_table(frame: pd.DataFrame, grid: OgasGrid) -> Table:
    """N:M perplexity (WikiText-2) of ``nm_methods`` on ``nm_models``, its caption and the raw values."""
    vals, cis, _ = ppl_table(frame, grid.p.nm_models, [grid.wt_name], grid.p.nm_patterns, ["dense", *grid.p.nm_methods],
                             sparsity=0.5)
    return Table(marked_table(vals.astype(float), cis, skip_rows=["Dense"]),
                 caption(grid, "N:M sparsity: WikiText-2 test perplexity at 2:4 and 4:8 (50%).", frame), raw=vals)


def zeroshot_tables(results: dict[str, dict[str, dict]], grid: OgasGrid) -> list[tuple[str, Table]]:
    """Tables 3-4, one per zero-shot model: ``(file stem, table)``; ``results``:
    ``{model: {"dense" or method: lm-eval result}}`` (:meth:`OgasGrid.run_zeroshot`). Accuracy per
    task, their mean (and that of the paper's Table 3 tasks, :data:`PAPER_ZEROSHOT`, where more ran),
    and the mean difference to Wanda paired over the same documents."""
    out = []
    tasks = grid.p.zeroshot_tasks
    for i, (name, res) in enumerate(results.items()):
        t = {}
        for r, result in res.items():
            row = {task: result["tasks"][task]["metrics"]["acc"]["value"] for task in tasks}
            paper = [row[t] for t in tasks if t in PAPER_ZEROSHOT]
            row["mean"] = round(float(np.mean(list(row.values()))), 3)
            if paper and len(paper) < len(tasks):
                row["mean of the paper's tasks"] = round(float(np.mean(paper)), 3)
            norm = [result["tasks"][t]["metrics"].get("acc_norm", result["tasks"][t]["metrics"]["acc"])["value"]
                    for t in tasks if t in PAPER_ZEROSHOT or len(paper) == 0]
            row["same, acc_norm where reported"] = round(float(np.mean(norm)), 3)
            p = zeroshot_paired(result, res["wanda"], tasks) if r not in ("dense", "wanda") else None
            row["vs Wanda (paired)"] = "—" if p is None else f"{p.estimate:+.3f} [{p.ci[0]:+.3f}, {p.ci[1]:+.3f}]"
            t[LABELS[r]] = row
        cap = (f"**Table {3 + i}. Zero-shot accuracy, {name}, {grid.p.sparsity:.0%} unstructured.** lm-eval task "
               f"YAMLs, first {grid.p.zeroshot_limit} documents per task, {grid.wt[name].setup.eval_dtype}, profile "
               f"`{grid.p.profile}`; BoolQ passages lack the standard title prefix (local copy). Task columns: lm-eval's "
               "`acc` (the highest log-likelihood answer); the last column: the paper's tasks' mean with `acc_norm` "
               "(log-likelihood per character) where lm-eval reports it (ARC, HellaSwag, PIQA), `acc` for BoolQ and "
               "WinoGrande. The paper does not say which it reports; the claims read `acc`.")
        out.append((f"table{3 + i}_zeroshot_{name}", Table(pd.DataFrame(t).T, cap)))
    return out




def answer_bias(results: dict[str, dict[str, dict]], tasks: list[str]) -> Table:
    """Per zero-shot model and task, the answer its *dense* model gives most often, how
    often the gold answer is that one, and how often the dense and every pruned model give it (from the
    per-document ``pred``/``gold`` lm-eval scored; tasks whose records predate them are left out). A model
    that always gives one answer scores that answer's gold share without reading the question: on BoolQ,
    the "yes" rate."""
    rows = []
    for name, res in results.items():
        for task in tasks:
            d = res["dense"]["tasks"][task]["per_doc"]
            if "pred" not in d or any("pred" not in r["tasks"][task]["per_doc"] for r in res.values()):
                continue
            k = int(np.bincount(d["pred"]).argmax())
            names = ANSWER_NAMES.get(task)
            row = {"model": name, "task": task, "answer": names[k] if names else f"choice {k}",
                   "gold share": round(float(np.mean(np.asarray(d["gold"]) == k)), 3)}
            row.update({LABELS[r]: round(float(np.mean(np.asarray(out["tasks"][task]["per_doc"]["pred"]) == k)), 3)
                        for r, out in res.items()})
            rows.append(row)
    cap = ("**Answer bias.** Per task, the answer each dense model gives most often: the share of documents whose "
           "gold answer it is, and the share of documents on which each model gives it. A model that always gives "
           "it scores the gold share without reading the question.")
    return Table(pd.DataFrame(rows), cap)


def dense_vs_chance(results: dict[str, dict[str, dict]], tasks: list[str]) -> Table:
    """Each zero-shot model's *dense* accuracy per task beside the trivial answer's
    (:func:`repro.claims.task_trivial`: always the documents' most frequent gold answer, e.g. BoolQ's "yes"; a
    uniform guess where the records hold no gold answers), with a 95% bootstrap interval over the documents and
    where the interval lies (above / at / below it): a dense model at or below the trivial answer on a task cannot
    show what pruning costs there, and a dense number far below it would be a bug in the feeding or scoring."""
    rows = []
    for name, res in results.items():
        d = res["dense"]["tasks"]
        for task in tasks:
            acc = np.asarray(d[task]["per_doc"]["acc"], float)
            ci = bootstrap_ci(acc) or (float(acc.mean()), float(acc.mean()))
            trivial = task_trivial(task, d[task]["per_doc"])
            level = None if trivial is None else trivial[0]
            where = ("" if level is None else "above" if ci[0] > level else "below" if ci[1] < level else "at")
            rows.append({"model": name, "task": task, "paper's task": task in PAPER_ZEROSHOT, "documents": acc.size,
                         "dense accuracy": round(float(acc.mean()), 3), "95% interval": f"[{ci[0]:.3f}, {ci[1]:.3f}]",
                         "trivial answer": "" if trivial is None else trivial[1],
                         "trivial accuracy": None if level is None else round(level, 3), "dense vs trivial": where})
    cap = ("**Dense zero-shot accuracy against the trivial answer of each task's documents** (always the most "
           "frequent gold answer, such as BoolQ's \"yes\"; a uniform guess where no gold answer is recorded). lm-eval "
           "`acc` with its 95% bootstrap interval over the documents evaluated; where the dense model is not above "
           "the trivial answer, its pruned copies can only tie it or fall below it by noise.")
    return Table(pd.DataFrame(rows), cap)


ABLATION_ROWS = (*ABLATION, "ogas-gamma-fixed", "ogas-gamma-search")  # Table 5's rows, the gamma rules included


def ablation_table(frame: pd.DataFrame, grid: OgasGrid) -> Table:
    """Table 5: Wanda, OGAS energy-only, PAPR-only and OGAS on WikiText-2 for ``ablation_models``, and OGAS
    with the other setting's gamma rule (fixed or searched) for ``gamma_rule_models``; each with its lambda,
    perplexity and ratio to Wanda paired over windows (empty if none ran)."""
    rows = []
    for name in dict.fromkeys([*grid.p.ablation_models, *grid.p.gamma_rule_models]):
        for r in ABLATION_ROWS:
            c = find(frame, name, grid.wt_name, r, grid.p.sparsity)
            if c is None and (r not in ABLATION or name not in grid.p.ablation_models):
                continue  # a model in gamma_rule_models only: Wanda, OGAS and its other gamma rule
            p = paired_to(frame, name, grid.wt_name, r, "wanda", grid.p.sparsity)
            rows.append({"model": name, "variant": LABELS[r], "lambda": c.params.get("lam", "-"),
                         "gamma": c.params.get("gamma", "-"), "ppl": c.ppl,
                         "key": c.key, "vs Wanda (paired)": ratio_text(p)})
    cells = pd.DataFrame(rows)
    cap = caption(grid, f"Table 5. Ablation at {grid.p.sparsity:.0%} on WikiText-2 test (paper: LLaMA-3.1-8B 8.85 "
                        "Wanda -> 8.16 energy-only / similar PAPR-only -> 7.99 OGAS). "
                        + calibration_words(grid, frame, c4=False), cells)
    return Table(cells.drop(columns=["key"]).round(3) if len(cells) else cells, cap)


def ablation_keys(frame: pd.DataFrame, grid: OgasGrid) -> list:
    """The records (every draw) behind :func:`ablation_table`."""
    names = dict.fromkeys([*grid.p.ablation_models, *grid.p.gamma_rule_models])
    return _keys(frame, [(n, grid.wt_name, r) for n in names for r in ABLATION_ROWS], grid.p.sparsity)


# ---- figures' data -----------------------------------------------------------------------------

def figure2_channels(frame: pd.DataFrame, grid: OgasGrid) -> tuple[str, str, dict]:
    """Figure 2: ``(model, layer, {"energy", "peak_ratio", "channel_sparsity": per channel})`` of the
    layer the first model's OGAS cell kept."""
    name, layer = grid.figure_model, grid.figure_layer_name
    return name, layer, find(frame, name, grid.wt_name, "ogas", grid.p.sparsity).channels[layer]


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
    # what is drawn is placed to 1e-9 of the axes (far below a pixel): the same PNG whatever the CPU's last bits
    x, y, line = np.round(x, 9), np.round(y, 9), tuple(np.round(v, 9) for v in line)
    return {"x": x, "y": y, "s": s, "importance": imp, "boundary": boundary, "line": line, "lam": lam,
            "more_pruned": int((s > target).sum()), "less_pruned": int((s < target).sum())}


def figure2(frame: pd.DataFrame, grid: OgasGrid) -> tuple[str, str, dict]:
    """Figure 2's ``(model, layer, figure2_axes(...))`` with the model's own lambda."""
    name, layer, ch = figure2_channels(frame, grid)
    lam = float(grid.params_for(name, "ogas").get("lam", 0.4))
    return name, layer, figure2_axes(ch, lam, grid.p.sparsity)


def gamma_frames(frame: pd.DataFrame, grid: OgasGrid) -> list[tuple[str, pd.DataFrame, pd.DataFrame]]:
    """Per model whose OGAS cell searched gamma (the LLaMA setting): ``(model, layers, quantiles)``;
    ``layers``: the gamma each layer chose, whether the search ended at a bound, the layer type;
    ``quantiles``: the 5-95% quantiles of each layer's channel sparsity, by layer type."""
    out = []
    for name in grid.models:
        c = find(frame, name, grid.wt_name, "ogas", grid.p.sparsity)
        if c is None or not any("gamma_evals" in v for v in c.extras.values()):
            continue  # a fixed-gamma setting (Mistral): nothing was searched
        layers = pd.DataFrame([{"layer": n, "gamma": v.get("gamma"), "at_bound": v.get("gamma_at_bound", False),
                                "type": n.rsplit(".", 1)[-1]} for n, v in c.extras.items()])
        q = pd.DataFrame([{"type": n.rsplit(".", 1)[-1], "quantile": k, "s": v}
                          for n, qs in c.channel_quantiles.items() for k, v in zip(QUANTILES, qs)])
        out.append((name, layers, q[q["quantile"].between(0.05, 0.95)]))
    return out


def gamma_bounds_table(frame: pd.DataFrame, grid: OgasGrid) -> Table:
    """For OGAS and each ablation variant whose gamma was searched, how many layers
    ended the search within its tolerance of the lower and of the upper bound of the interval; and
    the sensitivity row beyond the paper: OGAS searched on a wider interval, its perplexity paired
    against OGAS on the paper's interval (same windows)."""
    rows = []
    for name in grid.models:
        for r in ("ogas", "ogas-energy", "ogas-papr", "ogas-wide"):
            c = find(frame, name, grid.wt_name, r, grid.p.sparsity)
            if c is None or not any("gamma_evals" in v for v in c.extras.values()):
                continue  # not run, or a fixed gamma (nothing searched)
            (lo, hi), tol = c.params.get("gamma_bounds", PAPER_GAMMA), c.params.get("gamma_tol", 0.05)
            g = np.array([v["gamma"] for v in c.extras.values()])
            p = paired_to(frame, name, grid.wt_name, r, "ogas", grid.p.sparsity) if r == "ogas-wide" else None
            rows.append({"model": name, "variant": LABELS[r], "interval": f"({lo:g}, {hi:g})", "layers": len(g),
                         "at the lower bound": int((g - lo < tol).sum()), "at the upper bound": int((hi - g < tol).sum()),
                         "median gamma": round(float(np.median(g)), 3),
                         "ppl": round(float(c.ppl), 3), "vs OGAS (paper's interval)": "" if p is None else ratio_text(p)})
    return Table(pd.DataFrame(rows), caption(grid, "Where the gamma search ended: layers within its tolerance of each "
                                                   "bound; (0.05, 1.1) is the paper's own interval, a wider one (beyond "
                                                   "the paper) is paired against it."))


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

    for name in grid.p.curve_models:
        for m in grid.p.methods:
            line(name, LABELS[m], LABELS[m], np.nan, [(sp, m) for sp in grid.p.curve_sparsities])
        for h in grid.p.s_max_headrooms:
            line(name, f"OGAS headroom {h}", f"OGAS, S_max headroom {h}", h,
                 [(sp, headroom_row(sp, h)) for sp in grid.p.curve_sparsities if sp > 0.6])
    return pd.DataFrame(rows, columns=["model", "method", "sparsity", "ppl", "label", "row", "headroom"])


def falls_after_collapse(curve: pd.DataFrame, dense: dict[str, float], uniform: dict[str, float | None]) -> list[dict]:
    """Where a method's own line *falls* as sparsity rises (pruning more lowers its perplexity) between two
    points that have both collapsed (:func:`repro.claims.collapsed`): ``{model, label, from, to, ppl_from,
    ppl_to, of_uniform}`` (``of_uniform``: each point's perplexity as a fraction of a uniform guess's). Above
    collapse a perplexity measures how a destroyed model is wrong (near uniform, or confidently wrong), not what
    it kept, so such a fall is not a recovery."""
    out = []
    for (model, label), g in curve[curve.headroom.isna()].groupby(["model", "label"], sort=False):
        g = g.dropna(subset=["ppl"]).sort_values("sparsity")
        points = list(zip(g.sparsity, g.ppl))
        for (sa, pa), (sb, pb) in zip(points, points[1:]):
            u = uniform.get(model)
            if pb < pa and collapsed(pa, dense.get(model), u) and collapsed(pb, dense.get(model), u):
                out.append({"model": model, "label": label, "from": sa, "to": sb, "ppl_from": pa, "ppl_to": pb,
                            "of_uniform": (pa / u, pb / u) if u else None})
    return out


def curve_table(curve: pd.DataFrame, frame: pd.DataFrame, grid: OgasGrid) -> Table:
    """Figure 4's data as a table: perplexity per model and line (rows) and sparsity (columns), each cell one
    record's (never a mean over models)."""
    rows = pd.MultiIndex.from_tuples(list(dict.fromkeys(zip(curve.model, curve.method))), names=["model", "method"])
    table = curve.pivot_table(index=["model", "method"], columns="sparsity", values="ppl", aggfunc="first")
    table = table.reindex(rows).reset_index()  # the figure's order, model and line as columns
    table.columns.name = None
    return Table(table,
                 caption(grid, "Figure 4 data: WikiText-2 test perplexity vs sparsity.", frame))


def calibration_size(scaled: pd.DataFrame, paper: pd.DataFrame, grid: OgasGrid) -> pd.DataFrame:
    """Each calibrated method's Tables 1-2 cell at the profile's calibration (``scaled``: the main frame) and at the
    paper's (``paper``: section 2b's frame): both perplexities and paper's / profile's paired on the windows
    (:func:`repro.report.paired_cells`). A seed draws other windows at another window length, so the two sizes'
    draws are independent, never paired draw by draw: each side's spread over its draws widens the interval."""
    from repro.methods.unstructured import get_pruner
    from repro.report import paired_cells

    rows = []
    for name in grid.models:
        for data in (grid.wt_name, grid.c4_name):
            for m in [m for m in grid.p.methods if get_pruner(m).calibrated]:
                a, b = find(paper, name, data, m, grid.p.sparsity), find(scaled, name, data, m, grid.p.sparsity)
                if a is None or b is None:
                    continue
                if isinstance(a.get("draws"), list):  # another source than the profile's draws: independent
                    a = a.copy()
                    a["draws"] = [("calibration at the paper's size", d) for _, d in a.draws]
                r = paired_cells(a, b)
                rows.append({"model": name, "data": data, "method": LABELS[m], "profile's": b.ppl, "paper's": a.ppl,
                             "paper's / profile's": r.estimate, "lo": r.ci[0], "hi": r.ci[1],
                             "draws": f"{int(a.get('n_draws', 1))} / {int(b.get('n_draws', 1))}"})
    return pd.DataFrame(rows)
