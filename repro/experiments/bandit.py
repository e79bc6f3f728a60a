"""Paper 3 (damage-aware bandit pruning) from records: frames of the selection and evaluation
cells (``repro.experiments.units``), the per-seed and across-seed statistics, the notebook's tables
(Table 1, its per-seed view, rewards, unit layers, Table B1, Table 2, Table B2, removal) with their
captions, and the claims. Everything here reads records only (no model is run), so it is tested on
constructed frames.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from repro.claims import (
    Claim,
    claims_frame,
    count_verdicts,
    difference_claim,
    shown,
    underpowered,
    verdict,
    with_paper,
    with_sources,
)
from repro.evaluate.stats import bh, paired_difference, paired_ratio, paired_t, paired_test, speed_ratio
from repro.experiments.base import owned
from repro.experiments.units import LAMBADA, BanditExperiment, VisionBanditExperiment, removal_parts
from repro.methods.bandit import SELECTORS, reward_summary
from repro.report import to_markdown
from repro.store import Store
from repro.structure import removal_counts

MAB = ("ucb", "thompson")  # the bandit selectors (greedy is the sequential baseline they are compared with)
LABELS = SELECTORS.labels(dense="Dense")
MAB_VS_GREEDY = "MAB degrades perplexity less than budgeted greedy"
SETTING = ["model", "kinds", "ratio"]
CELL = SETTING + ["method"]


# ---- frames: one row per evaluated cell ------------------------------------------------------

def _keep(rows: list[dict], memory: str) -> pd.DataFrame:
    """The rows of the MAB searches run with ``memory`` (``repro.methods.bandit``: "step", the
    default, or the "carry" variant), and every other row (dense, baselines: they have no memory)."""
    return pd.DataFrame([r for r in rows if r["memory"] in (None, memory)])


def bandit_frame(store: Store, experiments, session: bool = True, memory: str = "step") -> pd.DataFrame:
    """One row per evaluated cell (dense included) of ``experiments`` (a list or ``{name:
    BanditExperiment}``); ``session``: only the cells asked for in this session; ``memory``: which
    MAB searches (:func:`_keep`)."""
    selections = {r["key"]: r for r in store.records("bandit-select")}
    rows = []
    for r, e in owned(store, "bandit-ppl", experiments, session):
        c, res = r["config"], r["result"]
        lam = (res.get("lambada") or {}).get("tasks", {}).get(LAMBADA)
        rows.append({"key": ("bandit-ppl", r["key"]), "model": e.name, "method": c["method"],
                     **_selection_fields(selections.get(c.get("selection"), {})),
                     "ppl": res["ppl"], "window_nll": res["window_nll"],
                     "lambada_ppl": None if lam is None else lam["metrics"]["perplexity"]["value"],
                     "lambada_acc": None if lam is None else lam["metrics"]["acc"]["value"],
                     "lambada_per_doc": None if lam is None else lam["per_doc"],
                     "finite": bool(np.isfinite(res["ppl"]))})
    return _keep(rows, memory)


def vision_frame(store: Store, experiments, session: bool = True, memory: str = "step") -> pd.DataFrame:
    """One row per evaluated vision cell (dense included) of ``experiments`` (a list or ``{name:
    VisionBanditExperiment}``); ``memory`` as in :func:`bandit_frame`."""
    selections = {r["key"]: r for r in store.records("bandit-select")}
    rows = []
    for r, e in owned(store, "bandit-vision", experiments, session):
        c, res = r["config"], r["result"]
        rows.append({"key": ("bandit-vision", r["key"]), "model": e.name, "method": c["method"],
                     **_selection_fields(selections.get(c.get("selection"), {})),
                     "top1": res["top1"], "ce": res["ce"], "per_image_ce": res["per_image_ce"],
                     "per_image_correct": res["per_image_correct"]})
    return _keep(rows, memory)


def _selection_fields(sel: dict) -> dict:
    """The frame columns a cell takes from its selection record (empty record: the dense cell)."""
    sc, sr = sel.get("config", {}), sel.get("result", {})
    memory = sc["params"]["memory"] if sc.get("method") in MAB else None
    return {"kinds": "+".join(sc.get("kinds", [])) or "dense", "ratio": sc.get("ratio", 0.0), "k": sc.get("k", 0),
            "candidates": sc.get("candidates"), "seed": sc.get("seed"), "units": sr.get("units"),
            "budget": sr.get("budget"), "pulls": sr.get("pulls"), "rewards": sr.get("rewards"),
            "damages": sr.get("damages"), "pulled": sr.get("pulled"), "memory": memory}


def stale_picks(units, pulled) -> float:
    """The share of a sequential run's joined units that had no pull in the step they joined (under
    the mask they joined): 0 by construction for ``memory="step"``; what carry-over allows."""
    if not units or not pulled:
        return np.nan
    return float(np.mean([f"{u[0]}{u[1]}.{u[2]}" not in step for u, step in zip(units, pulled)]))


def first_run(frame: pd.DataFrame, model: str, method: str, kinds: str, ratio: float):
    """The row of ``method``'s lowest seed in the setting (model, kinds, ratio); None if it did not run."""
    run = frame[(frame.model == model) & (frame.method == method) & (frame.kinds == kinds) & (frame.ratio == ratio)]
    return run.sort_values("seed").iloc[0] if len(run) else None


def head_maps(frame: pd.DataFrame, shapes: dict[str, tuple[int, int]]) -> dict[str, tuple[np.ndarray, int]]:
    """Per model, how many times each (layer, head) was selected by the sequential searches
    (seeds and ratios pooled), with the number of seeds. ``shapes``: (layers, heads) per model."""
    runs = frame[(frame.kinds == "head") & frame.method.isin(SELECTORS.names(sequential=True))]
    out = {}
    for model, f in runs.groupby("model"):
        grid = np.zeros(shapes[model])
        for units in f.units:
            for _, layer, index in units:
                grid[layer, index] += 1
        out[model] = (grid, f.seed.nunique())
    return out


# ---- per-cell tables -------------------------------------------------------------------------

def lm_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Per-seed rows of each selection vs dense: perplexity change (%) with its paired CI over
    windows (:func:`vs_dense`), LAMBADA perplexity change (%) and last-word accuracy change."""
    per = vs_dense(frame)
    if per.empty:
        return per
    lam = []
    for _, r in per.iterrows():
        f = frame[(frame.model == r.model)]
        d = f[f.method == "dense"].iloc[0]
        c = f[(f.method == r.method) & (f.seed == r.seed) & (f.kinds == r.kinds) & (f.ratio == r.ratio)].iloc[0]
        ok = c.lambada_ppl is not None and d.lambada_ppl is not None
        lam.append({"lambada_change_pct": 100 * (c.lambada_ppl / d.lambada_ppl - 1) if ok else np.nan,
                    "lambada_acc_change": c.lambada_acc - d.lambada_acc if ok else np.nan})
    return pd.concat([per.reset_index(drop=True), pd.DataFrame(lam)], axis=1)


def vision_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Per-seed vision rows: top-1 (percentage points) and its drop vs dense with a paired bootstrap
    CI over the test images (also as ``ci_lo`` / ``ci_hi``, so the rows join the per-seed family of
    :func:`family_summary`), cross-entropy, its increase and the Wilcoxon p-value of the per-image
    cross-entropy differences."""
    rows = []
    for model, f in frame.groupby("model"):
        dense = f[f.method == "dense"]
        if dense.empty:
            continue
        d = dense.iloc[0]
        for _, r in f[f.method != "dense"].iterrows():
            drop = paired_difference(np.asarray(d.per_image_correct, float) * 100, np.asarray(r.per_image_correct,
                                                                                                 float) * 100)
            rows.append({"model": model, "kinds": r.kinds, "ratio": r.ratio, "k": r.k, "method": r.method,
                         "seed": r.seed, "selection": _signature(r.units), "top1_pp": 100 * r.top1, "top1_drop_pp": drop.estimate,
                         "drop_ci_lo": drop.ci[0], "drop_ci_hi": drop.ci[1], "ce": r.ce, "ce_increase": r.ce - d.ce,
                         "paired_evaluations": (r.budget or {}).get("paired_evaluations"),
                         "ci_lo": drop.ci[0], "ci_hi": drop.ci[1], "finite": bool(np.isfinite(r.ce)),
                         "p": paired_test(r.per_image_ce, d.per_image_ce)})
    return pd.DataFrame(rows)


def summary(table: pd.DataFrame, value: str) -> pd.DataFrame:
    """Per (model, kinds, ratio, method): mean and sd over seeds of the finite ``value`` s, the
    number of seeds and of failures (non-finite values, never averaged)."""
    g = table.groupby(CELL)[value]
    out = pd.DataFrame({"mean": g.apply(lambda v: v[np.isfinite(v)].mean()),
                        "sd": g.apply(lambda v: v[np.isfinite(v)].std()),
                        "seeds": g.size(), "failures": g.apply(lambda v: int((~np.isfinite(v)).sum()))})
    return out.reset_index()


def lm_summary(lm: pd.DataFrame, frame: pd.DataFrame) -> pd.DataFrame:
    """Table 1: per (model, kinds, ratio, method) the WikiText-2 perplexity change (mean and sd over
    seeds, seeds, failures), the mean LAMBADA perplexity and accuracy changes, and k (from
    ``frame``). ``lm``: :func:`lm_table`."""
    ppl, lam = summary(lm, "change_pct"), summary(lm, "lambada_change_pct")
    table = ppl.rename(columns={"mean": "WikiText-2 ppl change %"}).merge(
        lam[CELL + ["mean"]].rename(columns={"mean": "LAMBADA ppl change %"}), on=CELL)
    acc = lm.groupby(CELL).lambada_acc_change.mean().rename("LAMBADA acc change")
    table = table.merge(acc.reset_index(), on=CELL)
    table["method"] = table.method.map(LABELS)
    k_of = frame.groupby(SETTING).k.first()
    table["k"] = [k_of.get((r.model, r.kinds, r.ratio)) for r in table.itertuples()]
    return table.round(3)


def per_seed_table(lm: pd.DataFrame) -> pd.DataFrame:
    """Table 1 per seed: one column per seed, each cell 'ppl change % [paired 95% CI] / LAMBADA
    ppl change %' ('inf (failure)' for a non-finite perplexity)."""
    cells = lm.assign(method=lm.method.map(LABELS), units=lm.kinds + " " + lm.ratio.map("{:.0%}".format),
                      cell=[f"{c:+.1f} [{lo:+.1f}, {hi:+.1f}] / {la:+.1f}" if np.isfinite(c) else "inf (failure)"
                            for c, lo, hi, la in zip(lm.change_pct, lm.ci_lo, lm.ci_hi, lm.lambada_change_pct)])
    t = cells.pivot_table(index=["model", "units", "method"], columns="seed", values="cell", aggfunc="first")
    t.columns = [f"seed {int(c)}" for c in t.columns]
    return t.reset_index()


def budget_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Table B1: each selection's budget record (calibration passes, paired evaluations, losses,
    layer forwards, seconds), mean over seeds per (model, units, method)."""
    rows = [{"model": r.model, "units": f"{r.kinds} {r.ratio:.0%}", "method": LABELS[r.method], **(r.budget or {})}
            for r in frame[frame.method != "dense"].itertuples()]
    return pd.DataFrame(rows).groupby(["model", "units", "method"]).mean(numeric_only=True).round(1).reset_index()


def vision_summary(vis: pd.DataFrame, n_heads: dict[str, int]) -> pd.DataFrame:
    """Table 2: per (model, k, method) the top-1 and its drop (mean, sd over seeds), the
    cross-entropy increase, paired evaluations per run, seeds, and the effective ratio k / heads.
    ``vis``: :func:`vision_table`; ``n_heads``: heads per model."""
    t = vis.groupby(["model", "k", "method"]).agg(top1_pp=("top1_pp", "mean"), drop_pp=("top1_drop_pp", "mean"),
                                                  drop_sd=("top1_drop_pp", "std"), ce_increase=("ce_increase", "mean"),
                                                  paired_evaluations=("paired_evaluations", "mean"),
                                                  seeds=("seed", "nunique")).reset_index()
    t["method"] = t.method.map(LABELS)
    t["effective ratio"] = [k / n_heads[m] for m, k in zip(t.model, t.k)]
    return t.round(3)


def removal_table(result: dict, batches) -> pd.DataFrame:
    """Rows dense / zeroed / removed of a :func:`repro.experiments.units.removal_cell` result:
    parameters, checkpoint MB, median prefill ms per batch size, and the prefill speed-up against
    dense with its 95% CI paired by round-robin round (:func:`repro.evaluate.stats.speed_ratio`)."""
    rows = []
    for v in ("dense", "zeroed", "removed"):
        r = result[v]
        row = {"model": v, "params": r["params"], "checkpoint MB": r["checkpoint_bytes"] / 1e6}
        for b in batches:
            t, base = r[f"prefill_b{b}"]["times_s"], result["dense"][f"prefill_b{b}"]["times_s"]
            sp = speed_ratio(base, t)
            row[f"prefill b{b} (ms)"] = 1000 * r[f"prefill_b{b}"]["median_s"]
            row[f"speed-up b{b} [95% CI]"] = ("1" if v == "dense" else
                                              f"x{sp.estimate:.3f} (one round: no interval)" if sp.ci is None else
                                              f"x{sp.estimate:.3f} [{sp.ci[0]:.3f}, {sp.ci[1]:.3f}]")
        rows.append(row)
    return pd.DataFrame(rows)


def reward_table(frame: pd.DataFrame) -> pd.DataFrame:
    """The distribution of rewards the sequential searches produced, per (model, units, method),
    pooled over seeds: pulls, mean reward and the shares of harmful / neutral / beneficial pulls
    (:func:`repro.methods.bandit.reward_summary`). Only each setting's largest ratio counts (a
    smaller ratio's steps are its first steps, so they would count twice)."""
    seq = frame[frame.rewards.map(lambda r: bool(r))] if len(frame) and "rewards" in frame else frame.iloc[:0]
    rows = []
    for (model, kinds, method), f in seq.groupby(["model", "kinds", "method"]):
        top = f[f.ratio == f.ratio.max()]
        s = reward_summary([r for rs in top.rewards for r in rs])
        rows.append({"model": model, "units": f"{kinds} {top.ratio.iloc[0]:.0%}", "method": method,
                     "seeds": top.seed.nunique(), "pulls": s["n"], "mean reward": s["mean"],
                     "harmful": s["harmful"], "neutral": s["neutral"], "beneficial": s["beneficial"]})
    return pd.DataFrame(rows)


def layer_profile(frame: pd.DataFrame, n_layers: dict[str, int]) -> pd.DataFrame:
    """Where each method's units sit, per (model, units, method), seeds pooled: the mean layer and
    the share of units in the first tenth of the layers (``early layers``: at least one).
    ``n_layers``: layers per model."""
    rows = []
    sel = frame[frame.units.map(lambda u: bool(u))] if len(frame) and "units" in frame else frame.iloc[:0]
    for (model, kinds, ratio, method), f in sel.groupby(CELL):
        layers = np.array([u[1] for units in f.units for u in units])
        early = max(1, int(np.ceil(n_layers[model] / 10)))
        rows.append({"model": model, "units": f"{kinds} {ratio:.0%}", "method": method, "seeds": f.seed.nunique(),
                     "mean layer": float(layers.mean()), "early layers": early,
                     "share in early layers": float((layers < early).mean())})
    return pd.DataFrame(rows)


# ---- statistics: per (method, seed) vs dense, MAB vs greedy across seeds, BH over the family ----

def _signature(units) -> str:
    """One string per distinct set of selected units (two seeds of a deterministic selector, e.g.
    magnitude, select the same units: one comparison with dense, not one per seed)."""
    return ";".join(sorted("{}.{}.{}".format(*u) for u in units or []))


def vs_dense(frame: pd.DataFrame) -> pd.DataFrame:
    """Each evaluated selection against the dense model on the same windows: perplexity change
    (%) with a paired bootstrap 95% CI over windows, and a Wilcoxon p-value of the per-window NLL
    differences. Non-finite perplexities stay as failures (no CI, no p-value)."""
    rows = []
    for model, f in frame.groupby("model"):
        dense = f[f.method == "dense"]
        if dense.empty:
            continue
        d = np.asarray(dense.iloc[0].window_nll)
        for _, r in f[f.method != "dense"].iterrows():
            row = {"model": model, "kinds": r.kinds, "ratio": r.ratio, "k": r.k, "method": r.method, "seed": r.seed,
                   "ppl": r.ppl, "finite": r.finite, "selection": _signature(r.units)}
            nll = np.asarray(r.window_nll, dtype=float)
            if r.finite and np.isfinite(nll).all():
                p = paired_ratio(nll, d)
                row.update(change_pct=100 * (p.estimate - 1), ci_lo=100 * (p.ci[0] - 1), ci_hi=100 * (p.ci[1] - 1),
                           p=paired_test(nll, d) if len(d) >= 2 else np.nan)
            else:
                row.update(change_pct=np.inf, ci_lo=np.nan, ci_hi=np.nan, p=np.nan)
            rows.append(row)
    return pd.DataFrame(rows)


def across_seeds(table: pd.DataFrame, a: str, b: str, value: str = "change_pct") -> pd.DataFrame:
    """``a`` against ``b`` per (model, kinds, ratio), paired over the seeds where both are finite:
    mean of each, the mean difference with its t interval and the paired t-test's p-value
    (:func:`repro.evaluate.stats.paired_t`, the statistic the claims read too)."""
    rows = []
    for (model, kinds, ratio), f in table.groupby(SETTING):
        p = _seed_diff(f, a, b, value)
        if p is None:
            continue
        x, y = _per_seed(f, a, value), _per_seed(f, b, value)
        seeds = _shared_seeds(x, y)
        ci = p.ci or (np.nan, np.nan)
        rows.append({"model": model, "kinds": kinds, "ratio": ratio, "value": value, "a": a, "b": b, "seeds": p.n,
                     "mean_a": x.loc[seeds].mean(), "mean_b": y.loc[seeds].mean(), "mean_diff": p.estimate,
                     "ci_lo": ci[0], "ci_hi": ci[1], "a_better_seeds": p.n_worse,
                     "p": np.nan if p.p is None else p.p, "test": "paired t"})
    return pd.DataFrame(rows)


def mab_tests(lm: pd.DataFrame, vis: pd.DataFrame) -> pd.DataFrame:
    """Table B2's family, as the paper builds it: each MAB selector against each baseline that ran
    in the same setting, across seeds (paired t), on the perplexity change (``lm``) and on the top-1
    drop (``vis``), one test per distinct comparison."""
    tests = []
    for table, value in ((lm, "change_pct"), (vis, "top1_drop_pp")):
        if not len(table):
            continue
        baselines = [m for m in SELECTORS if m not in MAB and m in set(table.method)]
        tests += [across_seeds(table, m, b, value) for m in MAB for b in baselines]
    tests = pd.concat(tests or [pd.DataFrame()], ignore_index=True)
    return tests.drop_duplicates(subset=SETTING + ["a", "b"], ignore_index=True) if len(tests) else tests


def _family(frame: pd.DataFrame, name: str, alpha: float, failures=None) -> dict:
    excl = (frame.ci_lo > 0) | (frame.ci_hi < 0) if len(frame) else pd.Series(dtype=bool)
    return {"family": name, "comparisons": len(frame), "CI excludes 0": int(excl.sum()),
            f"p < {alpha}": int((frame.p < alpha).sum()) if len(frame) else 0,
            f"q < {alpha}": int((frame.q < alpha).sum()) if len(frame) else 0, "failures (non-finite)": failures}


def family_summary(per_seed: pd.DataFrame, tests: pd.DataFrame, alpha: float = 0.05) -> tuple:
    """Two families, each with its own Benjamini-Hochberg q: Table B2's MAB-vs-baseline tests across
    seeds (:func:`mab_tests`), and the per-seed comparisons of each *distinct* selection with dense
    (a selection that several seeds share counts once; its copies get its q). Returns both frames
    with ``q`` and a summary like the paper's Table B2: of how many comparisons the CI excludes
    zero, p < alpha, q < alpha."""
    per_seed, tests = per_seed.copy(), tests.copy()
    tests["q"] = bh(tests.p.to_numpy(float)) if len(tests) else np.array([])
    if len(per_seed):
        distinct = ~per_seed.duplicated(subset=["model", "selection"])
        q = pd.Series(bh(per_seed.p[distinct].to_numpy(float)), index=per_seed.index[distinct])
        key = per_seed.model + "|" + per_seed.selection
        per_seed["q"] = key.map(dict(zip(key[distinct], q)))
        once = per_seed[distinct]
    else:
        per_seed["q"], once = np.array([]), per_seed
    summary = pd.DataFrame([
        _family(tests, "MAB vs each baseline, across seeds (paired t)", alpha),
        _family(once, "each distinct selection vs dense (per seed)", alpha,
                int((~once.finite).sum()) if len(once) else 0),
    ])
    return per_seed, tests, summary


# ---- claims ---------------------------------------------------------------------------------

def _per_seed(table: pd.DataFrame, method: str, value: str) -> pd.Series:
    return table[table.method == method].set_index("seed")[value].astype(float)


def _shared_seeds(x: pd.Series, y: pd.Series) -> list:
    return [s for s in sorted(set(x.index) & set(y.index)) if np.isfinite(x[s]) and np.isfinite(y[s])]


def _seed_diff(table, a: str, b: str, value: str):
    """mean over shared seeds of a - b with its t interval and paired t p-value across seeds
    (:func:`repro.evaluate.stats.paired_t`; None without a shared seed)."""
    x, y = _per_seed(table, a, value), _per_seed(table, b, value)
    seeds = _shared_seeds(x, y)
    return None if not seeds else paired_t(x.loc[seeds].to_numpy(), y.loc[seeds].to_numpy())


def memory_ablation(step: pd.DataFrame, carry: pd.DataFrame, step_frame: pd.DataFrame, carry_frame: pd.DataFrame,
                    value: str) -> pd.DataFrame:
    """Per setting and MAB policy: the paper's conditioning (``memory="step"``, the per-seed rows
    ``step`` of :func:`lm_table` / :func:`vision_table`) against carried-over statistics (``carry``),
    same seeds, budget and pool: the mean difference carry - step of ``value`` over seeds with its t
    interval and paired t-test (:func:`across_seeds`), the paired evaluations of each (matched by
    construction) and the share of carry-over picks made without a pull under the mask they joined
    (:func:`stale_picks`)."""
    rows = []
    for m in MAB:
        both = pd.concat([step[step.method == m], carry[carry.method == m].assign(method=f"{m}:carry")])
        t = across_seeds(both, f"{m}:carry", m, value) if len(both) else pd.DataFrame()
        for _, r in t.iterrows():
            at = [(f.model == r.model) & (f.kinds == r.kinds) & (f.ratio == r.ratio) & (f.method == m)
                  for f in (step_frame, carry_frame)]
            runs = [f[a] for f, a in zip((step_frame, carry_frame), at)]
            evals = [f.budget.map(lambda b: (b or {}).get("paired_evaluations")).mean() for f in runs]
            rows.append({"model": r.model, "kinds": r.kinds, "ratio": r.ratio, "method": LABELS[m], "value": value,
                         "seeds": r.seeds, "step (paper)": r.mean_b, "carry-over": r.mean_a,
                         "carry - step": r.mean_diff, "ci_lo": r.ci_lo, "ci_hi": r.ci_hi, "p": r.p,
                         "verdict (step better)": verdict((r.ci_lo, r.ci_hi), 0.0,
                                                          "above" if value in LOWER_IS_BETTER else "below"),
                         "paired evaluations (step / carry)": f"{evals[0]:.0f} / {evals[1]:.0f}",
                         "carry-over picks with no pull under their mask": float(np.nanmean(
                             [stale_picks(u, p) for u, p in zip(runs[1].units, runs[1].pulled)]))})
    return pd.DataFrame(rows)


LOWER_IS_BETTER = ("change_pct", "top1_drop_pp", "ce", "lambada_change_pct")


def bandit_claims(lm: pd.DataFrame, vision: pd.DataFrame | None = None) -> list:
    """Paper 3's claims, each judged by :func:`repro.claims.verdict` on an interval paired over
    seeds (:func:`repro.claims.difference_claim`)."""
    out = []
    for (model, kinds, ratio), t in (lm.groupby(SETTING) if len(lm) else []):
        setting = f"{model}, {kinds} {ratio:.0%}"
        for m in MAB:
            out.append(difference_claim(MAB_VS_GREEDY, f"{setting}, {LABELS[m]}", f"change {LABELS[m]} - greedy",
                                        _seed_diff(t, m, "greedy", "change_pct")))
        if t.lambada_change_pct.notna().any():
            means = t.groupby("method").lambada_change_pct.mean()
            best_mab = min((m for m in MAB if m in means), key=lambda m: means[m], default=None)
            others = means.drop(list(MAB), errors="ignore")
            if best_mab is not None and len(others):
                rival = others.idxmin()
                out.append(difference_claim("MAB has the lowest LAMBADA degradation",
                                            f"{setting}, {LABELS[best_mab]} vs best other ({LABELS.get(rival, rival)})",
                                            "LAMBADA ppl change difference",
                                            _seed_diff(t, best_mab, rival, "lambada_change_pct")))
    if vision is not None and len(vision):
        for (model, kinds, ratio), t in vision.groupby(SETTING):
            setting = f"{model}, {kinds} {ratio:.0%} (k={int(t.k.iloc[0])})"
            out.append(difference_claim("MAB-TS loses less top-1 than budgeted greedy at a matched budget", setting,
                                        "top-1 TS - greedy", _seed_diff(t, "thompson", "greedy", "top1_pp"),
                                        side="above"))
            out.append(difference_claim("MAB-UCB raises cross-entropy less than budgeted greedy (the paper: on "
                                        "Swin-Tiny)", setting, "cross-entropy UCB - greedy",
                                        _seed_diff(t, "ucb", "greedy", "ce"), unit="nats"))
    mlp = lm[lm.kinds == "mlp"] if len(lm) else lm
    for (model, kinds, ratio), t in (mlp.groupby(SETTING) if len(mlp) else []):  # "MAB-UCB best at every MLP ratio"
        means = t[np.isfinite(t.change_pct)].groupby("method").change_pct.mean().drop("ucb", errors="ignore")
        if "ucb" in set(t.method) and len(means):
            rival = means.idxmin()
            out.append(difference_claim("MAB-UCB is best at every MLP ratio", f"{model}, mlp {ratio:.0%}, vs best other "
                                        f"({LABELS.get(rival, rival)})", "change UCB - best other",
                                        _seed_diff(t, "ucb", rival, "change_pct")))
    out += summary_claims(mab_tests(lm, vision if vision is not None else pd.DataFrame()))
    return out


PAPER_SUMMARY = {"CI excludes 0": 23, "p < 0.05": 11, "q < 0.05": 6}  # of 28 MAB-vs-baseline comparisons
PAPER_COMPARISONS = 28


def summary_claims(tests: pd.DataFrame, alpha: float = 0.05) -> list:
    """The paper's own summary of its MAB-vs-baseline tests ("23/28 CIs exclude zero, 11/28 p < 0.05,
    6/28 q < 0.05") as claims: our share of this family's comparisons beside the paper's; it holds
    when ours is at least the paper's share (evidence as strong as the paper's)."""
    if not len(tests):
        return []
    f = _family(tests.assign(q=bh(tests.p.to_numpy(float))), "", alpha)
    out = []
    for key, theirs in PAPER_SUMMARY.items():
        ours, share = f[key], f[key] / f["comparisons"]
        out.append(Claim.check(f"Paper's summary: {theirs}/{PAPER_COMPARISONS} MAB-vs-baseline comparisons with "
                               f"{key}", "all settings, across seeds",
                               f"ours {ours}/{f['comparisons']} ({share:.0%}) vs paper {theirs / PAPER_COMPARISONS:.0%}",
                               share, (share, share), theirs / PAPER_COMPARISONS, "above", f["comparisons"]))
    return out


# The paper's own effect for a claim, on the claim's scale, where the paper gives a number
# (repro.claims.with_paper): MAB-TS against budgeted greedy, top-1 drop 2.05 vs 3.02 points.
PAPER_EFFECTS = {
    "MAB-TS loses less top-1 than budgeted greedy": (3.02 - 2.05, "top-1 drop MAB-TS 2.05 vs greedy 3.02 pp"),
}


# The paper's words each claim row tests (repro.claims.with_sources). The paper's full text is not
# available here: words in quotation marks are the paper's as quoted in this project's issues; the
# rest names where the paper makes the claim and paraphrases it.
PAPER_SOURCES = {
    MAB_VS_GREEDY: "paraphrase: language-model results (Table 1), MAB selection degrades perplexity less than "
                   "budgeted greedy at the same budget",
    "MAB has the lowest LAMBADA degradation": "paraphrase: cross-dataset LAMBADA results, MAB has the lowest "
                                              "degradation",
    "MAB-TS loses less top-1": "paraphrase: vision results at a matched budget (ViT), MAB-TS top-1 drop 2.05 vs "
                               "budgeted greedy 3.02 points",
    "MAB-UCB raises cross-entropy less": "paraphrase: vision results, MAB-UCB's cross-entropy increase below "
                                         "budgeted greedy's on Swin-Tiny",
    "MAB-UCB is best at every MLP ratio": '"MAB-UCB best at every MLP ratio" (MLP channel groups at 3, 5 and 8%)',
    "Paper's summary": 'summary of the statistical tests (Table B2): "23/28 CIs exclude zero, 11/28 p < 0.05, '
                       '6/28 q < 0.05"',
}


def claims_summary(claims: pd.DataFrame) -> str:
    """The sentence on how configuration-dependent the MAB-vs-greedy verdicts are."""
    n = int(claims.claim.str.startswith(MAB_VS_GREEDY).sum())
    return (f"The paper itself cautions that the advantage is configuration-dependent: across the {n} (setting, "
            f"MAB variant) comparisons with greedy here the verdicts are {count_verdicts(claims, MAB_VS_GREEDY)}. "
            f"Power: {underpowered(claims)}")


def readme_blocks(table1: pd.DataFrame, table1_caption: str, claims: pd.DataFrame, claims_caption: str) -> dict:
    """The README's generated blocks of Paper 3: Table 1 and the claims, as Markdown."""
    return {"bandit-tables": to_markdown(table1, table1_caption, index=False),
            "bandit-claims": to_markdown(claims, claims_caption, index=False)}


def discussion(frame: pd.DataFrame, lm: pd.DataFrame, vis: pd.DataFrame, claims: pd.DataFrame, search: dict,
               batch: str, ablation: pd.DataFrame | None = None) -> str:
    """What the results say, as Markdown bullets generated from the records: the dense references,
    the best method of each setting (mean over seeds) against the two bandits, and what the verdicts
    mean (with the rows too imprecise to decide). ``search``: the language-model searches' budget and
    pool; ``batch``: what one of their mini-batches holds; ``ablation``: :func:`memory_ablation`'s rows."""
    lines = []
    dense = frame[frame.method == "dense"] if len(frame) else frame
    if len(dense):
        lines.append("- **Dense references** (the same windows and documents every method is paired with): " +
                     "; ".join(f"{r.model}: WikiText-2 {r.ppl:.2f}" +
                               (f", LAMBADA {r.lambada_ppl:.2f} (last-word accuracy {r.lambada_acc:.3f})"
                                if getattr(r, "lambada_ppl", None) is not None and np.isfinite(r.lambada_ppl) else "")
                               for r in dense.itertuples()) + ".")
    for table, value, what in ((lm, "change_pct", "WikiText-2 perplexity change"),
                               (vis, "top1_drop_pp", "top-1 drop (points)")):
        if not len(table):
            continue
        for (model, kinds, ratio), t in table.groupby(SETTING):
            means = t[np.isfinite(t[value])].groupby("method")[value].mean().sort_values()
            if means.empty:
                continue
            best = means.index[0]
            ranks = {m: int(list(means.index).index(m)) + 1 for m in MAB if m in means}
            mab = ", ".join(f"{LABELS[m]} {means[m]:+.2f} (rank {ranks[m]} of {len(means)})" for m in ranks)
            lines.append(f"- **{model}, {kinds} {ratio:.0%}**: lowest mean {what} over seeds is "
                         f"{LABELS.get(best, best)}'s ({means.iloc[0]:+.2f}); {mab}.")
    if len(claims):
        lines.append(f"- **Verdicts**: {', '.join(f'{v}: {k}' for v, k in claims.verdict.value_counts().items())}. "
                     "*Inconclusive* means the 95% interval over seeds contains no difference: with five seeds the "
                     "t interval is wide (t = 2.78 times the standard error), so an effect of the paper's size is "
                     f"often not resolvable. {underpowered(claims)}")
    lower = _below_dense(lm)
    if lower:
        lines.append("- **Pruning that lowers LAMBADA perplexity below dense**: " + lower +
                     ". The same selections raise WikiText-2 perplexity, and every seed is scored on the same LAMBADA "
                     "documents, so the seeds' agreement is not independent evidence; what we found when we "
                     "investigated it follows this list.")
    if ablation is not None and len(ablation):
        what = {"change_pct": "ppl change", "top1_drop_pp": "top-1 drop"}
        rows = "; ".join(f"{r.model} {r.kinds} {r.ratio:.0%} {r.method}: {r['carry - step']:+.2f} [{r.ci_lo:+.2f}, "
                         f"{r.ci_hi:+.2f}] {what.get(r.value, r.value)}, {r['verdict (step better)']}, "
                         f"{r['carry-over picks with no pull under their mask']:.0%} of carry-over picks unpulled "
                         "under their mask" for _, r in ablation.iterrows())
        lines.append("- **The paper's conditioning against carried-over statistics** (section 5b, carry - step, "
                     f"mean over seeds [t interval]; positive: the paper's rule degrades less): {rows}. With "
                     f"{search.get('budget')} pulls a step on a pool of {search.get('pool_size')}, the paper's rule "
                     "leaves UCB no room to exploit (it measures the pool's first candidates once each step); "
                     "carry-over lets it, at the price of picks on damages measured under smaller masks.")
    lines.append("- **Likely reasons where a one-shot score beats the bandits** (e.g. Fisher on SmolLM2 heads, "
                 "magnitude on the Fashion-MNIST ViT): the one-shot scorers rank every candidate at once from the "
                 f"whole calibration set, while each bandit step sees only its pool ({search.get('pool_size')} "
                 f"candidates, chosen by magnitude) and {search.get('budget')} paired evaluations on mini-batches of "
                 f"{batch}, so its damage estimates are noisy; on the ViT trained here, weight magnitude tracks "
                 "usefulness well. These are readings of the numbers above, not tested claims.")
    return "\n".join(lines)


def _below_dense(lm: pd.DataFrame) -> str:
    """'<model> <kinds> <ratio> <method> -4.9% (4 of 5 seeds lower, last-word accuracy +0.036)' for each
    setting and method whose mean LAMBADA perplexity change over seeds is below zero ('' if none)."""
    if not len(lm) or "lambada_change_pct" not in lm or not lm.lambada_change_pct.notna().any():
        return ""
    out = []
    for (model, kinds, ratio, method), t in lm.groupby(CELL):
        x = t.lambada_change_pct.dropna()
        if len(x) and x.mean() < 0:
            out.append(f"{model} {kinds} {ratio:.0%} {LABELS.get(method, method)} {x.mean():+.1f}% ({int((x < 0).sum())} "
                       f"of {len(x)} seeds lower, last-word accuracy {t.lambada_acc_change.mean():+.3f})")
    return "; ".join(out)


# ---- one notebook session's tables with their captions ------------------------------------------

class BanditReport:
    """The notebook's tables, each with its caption: ``params`` (the notebook's parameters:
    profile, seeds, search budgets, LAMBADA limit, unit settings, removal), its language-model
    and vision experiments (``{name: experiment}``, for what the captions say about the models)
    and ``store`` (how many cells were read from records). Every method returns
    ``(table, caption)`` (the claims also their raw frame)."""

    def __init__(self, params: dict, lm: dict[str, BanditExperiment], vision: dict[str, VisionBanditExperiment],
                 store: Store):
        self.params, self.lm, self.vision, self.store = params, lm, vision, store

    @property
    def settings(self) -> list[tuple[str, str, float]]:
        """Every (model, unit type, ratio) of the language-model grid, in the notebook's order."""
        units = self.params["unit_settings"]
        return [(m, k, r) for m in self.lm for k, rs in units.get(m, {}).items() for r in rs]

    @property
    def n_heads(self) -> dict[str, int]:
        return {n: sum(e.structure["heads_per_layer"]) for n, e in self.vision.items()}

    def describe(self) -> str:
        """One line per model: what it is, its evaluation and calibration data."""
        lines = [f"{n}: {e.identity.get('upstream')}; {e.structure['n_layers']} layers; evaluation {e.data.label}, "
                 f"first {e.setup.max_windows} x {e.setup.seqlen} tokens; calibration {e.setup.calib_nsamples} x "
                 f"{e.setup.calib_seqlen} tokens per seed in mini-batches of {e.calib_batch_size}"
                 for n, e in self.lm.items()]
        lines += [f"{n}: {e.identity['source']}, seed {e.identity['seed']}, test top-1 "
                  f"{e.identity.get('test_top1', float('nan')):.3f}; calibration {e.n_calib} training images "
                  f"per seed; evaluation on the first {e.n_eval} test images" for n, e in self.vision.items()]
        return "\n".join(lines)

    def caption(self, title: str, frame: pd.DataFrame | None = None, vision: bool = False) -> str:
        """``title`` with the profile, models, data, search budget and seeds (of the vision
        experiments with ``vision``), and how many of ``frame``'s cells were read from records."""
        p = self.params
        cache = f" {self.store.cache_summary(frame.key)}." if frame is not None and len(frame) else ""
        if vision:
            what = "; ".join(f"{n} ({e.identity['source']}, test top-1 "
                             f"{e.identity.get('test_top1', float('nan')):.3f})" for n, e in self.vision.items())
            e = next(iter(self.vision.values()))
            return (f"**{title}** Profile `{p['profile']}`. Models: {what}. Calibration {e.n_calib} training images "
                    f"per seed (mini-batches of {e.calib_batch_size}); evaluation on the first {e.n_eval} test "
                    f"images, {e.setup.eval_dtype}; search budget {p['vision_search']} per step, losses in "
                    f"{e.search_dtype}; seeds {p['seeds']}.{cache}")
        e0 = next(iter(self.lm.values()))
        s = e0.setup
        parts = "; ".join(f"{n} ({e.identity.get('quantisation')}, evaluated on {e.windows()})"
                          for n, e in self.lm.items())
        return (f"**{title}** Profile `{p['profile']}`. Models: {parts}. Calibration {s.calib_nsamples} x "
                f"{s.calib_seqlen} tokens of {s.calib_data} per seed (mini-batches of {e0.calib_batch_size}); "
                f"perplexity on the first windows of {s.data}, {s.eval_dtype}; LAMBADA "
                f"first {p['lambada_limit']} documents; search budget {p['search']} per step, losses in "
                f"{e0.search_dtype}; seeds {p['seeds']}.{cache}")

    def table1(self, lm: pd.DataFrame, frame: pd.DataFrame) -> tuple[pd.DataFrame, str]:
        return lm_summary(lm, frame), self.caption(
            "Table 1. Perplexity change against dense (mean and sd over seeds), LAMBADA perplexity and last-word "
            "accuracy change.", frame)

    def table1_per_seed(self, lm: pd.DataFrame, frame: pd.DataFrame) -> tuple[pd.DataFrame, str]:
        return per_seed_table(lm), self.caption(
            "Table 1 per seed: WikiText-2 ppl change % [paired 95% CI] / LAMBADA ppl change %.", frame)

    def rewards(self, frame: pd.DataFrame) -> tuple[pd.DataFrame, str]:
        t = reward_table(frame)
        return (_labelled(t).round(3),
                self.caption("Rewards produced by r = sigmoid(-damage / 0.02).", frame))

    def layers(self, frame: pd.DataFrame) -> tuple[pd.DataFrame, str]:
        t = layer_profile(frame, {n: e.structure["n_layers"] for n, e in self.lm.items()})
        return (_labelled(t).round(3), self.caption(
            "Where the selected units sit: mean layer and share in the first tenth of the layers.", frame))

    def head_maps(self, frame: pd.DataFrame) -> dict[str, tuple[np.ndarray, int]]:
        """:func:`head_maps` with each model's (layers, heads per layer)."""
        return head_maps(frame, {n: (e.structure["n_layers"], e.structure["heads_per_layer"][0]) for n, e in self.lm.items()})

    def budget(self, frame: pd.DataFrame) -> tuple[pd.DataFrame, str]:
        return budget_table(frame), self.caption(
            "Table B1. Budget per run (mean over seeds): calibration passes, paired evaluations, losses, layer "
            "forwards, seconds on this machine.", frame)

    def table2(self, vis: pd.DataFrame, vframe: pd.DataFrame) -> tuple[pd.DataFrame, str]:
        return vision_summary(vis, self.n_heads), self.caption(
            "Table 2. Vision: top-1 and its drop against dense (percentage points, mean and sd over seeds), "
            "cross-entropy increase, paired evaluations per run.", vframe, vision=True)

    def statistics(self, lm: pd.DataFrame, vis: pd.DataFrame, frame: pd.DataFrame) -> tuple[tuple, tuple]:
        """Table B2 (how many comparisons of the declared family are significant) and the
        across-seed tests with their BH q-values, each with its caption."""
        _, tests, b2 = family_summary(pd.concat([lm, vis], ignore_index=True), mab_tests(lm, vis))
        if len(tests):
            tests = tests.assign(a=tests.a.map(LABELS), b=tests.b.map(LABELS)).round(4)
        return ((b2, self.caption("Table B2. How many comparisons have a 95% CI excluding zero, p < 0.05, q < 0.05; "
                                  "BH within each family: MAB against every baseline across seeds (t interval and "
                                  "paired t-test, one statistic), and each distinct selection against dense (paired "
                                  "over windows or images; a selection several seeds share counts once).", frame)),
                (tests, self.caption("MAB against every baseline across seeds (WikiText-2 ppl change %; vision: "
                                     "top-1 drop, pp): mean difference with its 95% t interval and the paired t-test; "
                                     "q: BH over this family (Table B2's first row).", frame)))

    def memory_ablation(self, lm: pd.DataFrame, frame: pd.DataFrame, vis: pd.DataFrame,
                        vframe: pd.DataFrame) -> tuple[pd.DataFrame, str]:
        """:func:`memory_ablation` on the language models (WikiText-2 perplexity change) and the vision
        models (top-1 drop): this session's carry-over cells against the default ones."""
        carry = bandit_frame(self.store, self.lm, memory="carry")
        vcarry = vision_frame(self.store, self.vision, memory="carry")
        parts = [memory_ablation(lm, lm_table(carry), frame, carry, "change_pct") if len(carry) else None,
                 memory_ablation(vis, vision_table(vcarry), vframe, vcarry, "top1_drop_pp") if len(vcarry) else None]
        t = pd.concat([x for x in parts if x is not None and len(x)] or [pd.DataFrame()], ignore_index=True)
        cap = self.caption(
            "Ablation: damage conditioned on the current mask (step, the paper's rule and our default) against "
            "arm statistics carried over from earlier, smaller masks (carry-over), same seeds, per-step budget and "
            "pool. carry - step: mean over seeds of the WikiText-2 ppl change (%; vision: top-1 drop, pp) with its "
            "95% t interval and paired t-test; the verdict is the one rule for \"step is better\". Language models "
            f"{self.params['search']}, vision {self.params['vision_search']} per step.",
            pd.concat([carry, vcarry], ignore_index=True) if len(carry) or len(vcarry) else None)
        return (t.round(4) if len(t) else t), cap

    def claims(self, lm: pd.DataFrame, vis: pd.DataFrame) -> tuple[pd.DataFrame, str, pd.DataFrame]:
        """The claims table (claim, setting, measured, verdict), its caption, and every claim's numbers."""
        claims = claims_frame(with_sources(with_paper(bandit_claims(lm, vis), PAPER_EFFECTS), PAPER_SOURCES))
        caption = (f"**Claims checked (Paper 3).** Profile `{self.params['profile']}`; seeds {self.params['seeds']}; "
                   f"verdicts from 95% t intervals of the difference paired over seeds.")
        return shown(claims), caption, claims

    def discussion(self, frame: pd.DataFrame, lm: pd.DataFrame, vis: pd.DataFrame, claims: pd.DataFrame,
                   ablation: pd.DataFrame | None = None) -> str:
        """The generated discussion (:func:`discussion`) with this run's search parameters."""
        p = self.params
        return discussion(frame, lm, vis, claims, p["search"],
                          f"{p['calib_batch_size']} window(s) of {p['calib_seqlen']} tokens", ablation)

    def removal(self, record: dict) -> tuple[pd.DataFrame, str]:
        """The removal record of the ``removal`` parameter's (model, method, seed) as a table
        (:func:`removal_table`) and its caption."""
        rm, c, res = self.params["removal"], record["config"], record["result"]
        which = " and ".join(f"{k[0]} {r:.0%}" for k, r in removal_parts(self.params["unit_settings"][rm["model"]]))
        sels = [r for r in self.store.records("bandit-select") if r["key"] in c.get("selections", [])]
        heads = list(dict.fromkeys((u[1], u[2]) for r in sels for u in r["result"]["units"] if u[0] == "head"))
        st = self.lm[rm["model"]].structure
        n = removal_counts((st["heads_per_layer"], st["kv_heads_per_layer"]), heads) if heads else None
        split = "" if n is None else (f" selected ({n['removed']} physically removed, {n['kept_as_zeros']} kept as "
                                      f"zero heads by GQA padding, so the parameter drop is {n['removed']} heads' worth)")
        caption = (f"**Removal.** {rm['model']}, {LABELS[rm['method']]} seed {rm['seed']}: {res['heads']} heads{split} "
                   f"and {res['mlp_channels']} MLP channels ({which}: its own selections above); prefill of "
                   f"{c['seqlen']} tokens, median of {c['repeats']} round-robin repeats, speed-up paired by round, "
                   f"{c['dtype']}; removed vs zeroed logits differ by at most "
                   f"{res['removed_vs_zeroed_max_abs_logit_diff']:.1e}. Profile `{self.params['profile']}`.")
        return removal_table(res, c["batches"]).round(2), caption

    def metrics(self, frame: pd.DataFrame, vframe: pd.DataFrame, claims: pd.DataFrame) -> dict:
        """The run's summary numbers: dense perplexity per model, cells, claims and verdicts."""
        return {"dense_ppl": {n: float(frame[(frame.model == n) & (frame.method == "dense")].ppl.iloc[0])
                              for n in self.lm},
                "n_cells": int(len(frame) + len(vframe)), "n_claims": int(len(claims)),
                "verdicts": claims.verdict.value_counts().to_dict()}


def _labelled(table: pd.DataFrame) -> pd.DataFrame:
    """``table`` with its methods' labels instead of their names (an empty table as it is)."""
    return table.assign(method=table.method.map(LABELS)) if len(table) else table


# ---- the notebook's experiments and its plan (repro.experiments.plan) ----------------------------------

def build(session) -> tuple[dict, dict]:
    """Notebook 3's experiments from its parameters: ``({model: BanditExperiment},
    {model: VisionBanditExperiment})``."""
    p = session.params
    lm = session.experiments(BanditExperiment, p["models"], calib_batch_size=p["calib_batch_size"],
                             search_dtype=p["search_dtype"])
    vision = session.experiments(VisionBanditExperiment, p["vision_models"], n_calib=p["vision_n_calib"],
                                 n_eval=p["vision_n_eval"], calib_batch_size=p["vision_calib_batch_size"],
                                 search_dtype=p["search_dtype"])
    return lm, vision


def plan(session, built: tuple[dict, dict]) -> None:
    """Ask for every cell notebook 3 asks for (see :func:`repro.experiments.mpg.plan`)."""
    p, (lm, vision) = session.params, built
    for name, e in lm.items():
        e.grid(p["unit_settings"].get(name, {}), p["methods"], p["seeds"], p["search"], p["lambada_limit"])
    for e in vision.values():
        e.grid({"head": [p["vision_ratio"]]}, p["vision_methods"], p["seeds"], p["vision_search"])
    if p.get("memory_ablation"):  # the carry-over variant of the MAB searches, same seeds and budgets
        for name, e in lm.items():
            e.grid(p["unit_settings"].get(name, {}), list(MAB), p["seeds"], {**p["search"], "memory": "carry"},
                   p["lambada_limit"])
        for e in vision.values():
            e.grid({"head": [p["vision_ratio"]]}, list(MAB), p["seeds"], {**p["vision_search"], "memory": "carry"})
    rm = p["removal"]
    if rm["model"] in lm:
        lm[rm["model"]].removal(rm["method"], p["unit_settings"][rm["model"]], rm["seed"], p["search"], rm["batches"],
                                p["seqlen"], rm["repeats"])
