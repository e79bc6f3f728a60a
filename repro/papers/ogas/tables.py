"""Paper 2's tables and figures' data, each with its caption, from the frame of the notebook's records.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from repro.engines.prune import QUANTILES
from repro.evaluate.stats import bootstrap_ci
from repro.methods.registry import minmax
from repro.papers.ogas.grid import ABLATION, OgasGrid
from repro.papers.ogas.records import (
    CHANCE,
    LABELS,
    PAPER_GAMMA,
    PAPER_ZEROSHOT,
    caption,
    find,
    headroom_row,
    main_rows,
    paired_to,
    ratio_text,
    zeroshot_paired,
)
from repro.report import marked_table


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
    cap = caption(grid, f"Tables 1-2. WikiText-2 test and C4 perplexity at {grid.sparsity:.0%} unstructured sparsity, "
                        "their mean (the paper's average column) and each method's paired ratio to Wanda.", frame)
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
    cap = ("**Dense zero-shot accuracy against a uniform guess among each task's answers.** lm-eval `acc` with its "
           "95% bootstrap interval over the documents evaluated; where the dense model is at chance, its pruned "
           "copies can only tie it or fall below it by noise.")
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
    """Table 5: Wanda, OGAS energy-only, PAPR-only and OGAS on WikiText-2 for ``ablation_models``, and OGAS
    with the other setting's gamma rule (fixed or searched) for ``gamma_rule_models``; each with its lambda,
    perplexity and ratio to Wanda paired over windows (empty if none ran)."""
    rows = []
    for name in dict.fromkeys([*grid.ablation_models, *grid.gamma_rule_models]):
        for r in [*ABLATION, "ogas-gamma-fixed", "ogas-gamma-search"]:
            c = find(frame, name, grid.wt_name, r, grid.sparsity)
            if c is None and (r not in ABLATION or name not in grid.ablation_models):
                continue  # a model in gamma_rule_models only: Wanda, OGAS and its other gamma rule
            p = paired_to(frame, name, grid.wt_name, r, "wanda", grid.sparsity)
            rows.append({"model": name, "variant": LABELS[r], "lambda": c.params.get("lam", "-"),
                         "gamma": c.params.get("gamma", "-"), "ppl": c.ppl,
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
    return pd.DataFrame(rows), caption(grid, "Where the gamma search ended: layers within its tolerance of each bound; "
                                             "(0.05, 1.1) is the paper's own interval, a wider one (beyond the paper) "
                                             "is paired against it.")


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
