"""Paper 3's tables from the frames: Table 1 and its per-seed view, rewards, unit layers, budgets (Table
B1), Table 2, Table B2's families, the memory ablation and the removal.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from repro.claims import verdict
from repro.evaluate.stats import bh, paired_difference, paired_ratio, paired_test, speed_ratio
from repro.methods.bandit import SELECTORS, TAU, reward_summary
from repro.methods.bandit_stats import allocation, join_gaps
from repro.papers.bandit.records import CELL, LABELS, LOWER_IS_BETTER, MAB, SETTING, signature, stale_picks
from repro.papers.bandit.seeds import across_seeds, family_counts
from repro.words import unit_pct


def lm_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Per-seed rows of each selection vs dense: perplexity change (%) with its paired CI over
    windows (:func:`vs_dense`), LAMBADA perplexity change (%) and last-word accuracy change."""
    per = vs_dense(frame)
    if per.empty:
        return per
    cell = {}  # (model, method, seed, kinds, ratio) -> its first row in the frame
    for r in frame.itertuples(index=False):
        cell.setdefault((r.model, r.method, r.seed, r.kinds, r.ratio), r)
    dense = {}
    for r in frame[frame.method == "dense"].itertuples(index=False):
        dense.setdefault(r.model, r)
    lam = []
    for r in per.itertuples(index=False):
        d, c = dense[r.model], cell[(r.model, r.method, r.seed, r.kinds, r.ratio)]
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
                         "seed": r.seed, "selection": signature(r.units), "top1_pp": 100 * r.top1, "top1_drop_pp": drop.estimate,
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
    cells = lm.assign(method=lm.method.map(LABELS), units=lm.kinds + " " + lm.ratio.map(unit_pct),
                      cell=[f"{c:+.1f} [{lo:+.1f}, {hi:+.1f}] / {la:+.1f}" if np.isfinite(c) else "inf (failure)"
                            for c, lo, hi, la in zip(lm.change_pct, lm.ci_lo, lm.ci_hi, lm.lambada_change_pct)])
    t = cells.pivot_table(index=["model", "units", "method"], columns="seed", values="cell", aggfunc="first")
    t.columns = [f"seed {int(c)}" for c in t.columns]
    return t.reset_index()


def budget_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Table B1: each selection's budget record (calibration passes, paired evaluations, losses,
    layer forwards, seconds), mean over seeds per (model, units, method)."""
    rows = [{"model": r.model, "units": f"{r.kinds} {unit_pct(r.ratio)}", "method": LABELS[r.method], **(r.budget or {})}
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
    """Rows dense / zeroed / removed of a :func:`repro.engines.bandit.removal_cell` result:
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
        rows.append({"model": model, "units": f"{kinds} {unit_pct(top.ratio.iloc[0])}", "method": method,
                     "seeds": top.seed.nunique(), "pulls": s["n"], "mean reward": s["mean"],
                     "harmful": s["harmful"], "neutral": s["neutral"], "beneficial": s["beneficial"]})
    return pd.DataFrame(rows)


def layer_profile(frame: pd.DataFrame, n_layers: dict[str, int]) -> pd.DataFrame:
    """Where each method's units sit, per (model, units, method), seeds pooled: the mean layer and
    the share of units in the first and in the last tenth of the layers (``early layers``: how many
    layers a tenth is, at least one). ``n_layers``: layers per model."""
    rows = []
    sel = frame[frame.units.map(lambda u: bool(u))] if len(frame) and "units" in frame else frame.iloc[:0]
    for (model, kinds, ratio, method), f in sel.groupby(CELL):
        layers = np.array([u[1] for units in f.units for u in units])
        early = max(1, int(np.ceil(n_layers[model] / 10)))
        rows.append({"model": model, "units": f"{kinds} {unit_pct(ratio)}", "method": method, "seeds": f.seed.nunique(),
                     "mean layer": float(layers.mean()), "early layers": early,
                     "share in early layers": float((layers < early).mean()),
                     "share in last layers": float((layers >= n_layers[model] - early).mean())})
    return pd.DataFrame(rows)


# ---- statistics: per (method, seed) vs dense, MAB vs greedy across seeds, BH over the family ----

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
                   "ppl": r.ppl, "finite": r.finite, "selection": signature(r.units)}
            nll = np.asarray(r.window_nll, dtype=float)
            if r.finite and np.isfinite(nll).all():
                p = paired_ratio(nll, d)
                row.update(change_pct=100 * (p.estimate - 1), ci_lo=100 * (p.ci[0] - 1), ci_hi=100 * (p.ci[1] - 1),
                           p=paired_test(nll, d) if len(d) >= 2 else np.nan)
            else:
                row.update(change_pct=np.inf, ci_lo=np.nan, ci_hi=np.nan, p=np.nan)
            rows.append(row)
    return pd.DataFrame(rows)


def greedy_tests(lm: pd.DataFrame) -> pd.DataFrame:
    """The paper's own comparison, like for like: MAB-UCB and MAB-TS against budgeted greedy on the
    language models, on the WikiText-2 and the LAMBADA perplexity change, across seeds (paired t), one
    test per distinct comparison."""
    values = [v for v in ("change_pct", "lambada_change_pct") if v in lm and lm[v].notna().any()] if len(lm) else []
    tests = [across_seeds(lm, m, "greedy", v, SETTING) for v in values for m in MAB]
    tests = pd.concat(tests or [pd.DataFrame()], ignore_index=True)
    return tests.drop_duplicates(subset=SETTING + ["value", "a", "b"], ignore_index=True) if len(tests) else tests


def mab_tests(lm: pd.DataFrame, vis: pd.DataFrame, lm_skip=("greedy",)) -> pd.DataFrame:
    """The other MAB comparisons: each MAB selector against each of the paper's baselines that ran in the same
    setting, across seeds (paired t), on every data set: the WikiText-2 and LAMBADA perplexity change (``lm``,
    baselines in ``lm_skip`` left to :func:`greedy_tests`) and the top-1 drop (``vis``, every baseline), one test
    per distinct comparison. Our greedy-with-memory control is not a baseline of the paper: its comparisons are
    claim rows of their own (:mod:`.claims`), outside these families."""
    tests = []
    lm_values = [v for v in ("change_pct", "lambada_change_pct") if v in lm and lm[v].notna().any()] if len(lm) else []
    for table, values, skip in ((lm, lm_values, lm_skip), (vis, ["top1_drop_pp"], ())):
        if not len(table):
            continue
        baselines = [m for m in SELECTORS if m not in (*MAB, *skip, "greedy-memory") and m in set(table.method)]
        tests += [across_seeds(table, m, b, v, SETTING) for v in values for m in MAB for b in baselines]
    tests = pd.concat(tests or [pd.DataFrame()], ignore_index=True)
    return tests.drop_duplicates(subset=SETTING + ["value", "a", "b"], ignore_index=True) if len(tests) else tests


ALL_FAMILY = "every MAB vs baseline comparison on every data set (the paper's kind of BH family)"
PAPER_FAMILY = "MAB vs budgeted greedy, language models, WikiText-2 and LAMBADA (the paper's comparison)"
OTHER_FAMILY = "MAB vs the other baselines, and every vision comparison (ours)"
DENSE_FAMILY = "each distinct selection vs dense (per seed)"
PAPER_COUNTS = {"comparisons": 28, "CI excludes 0": 23, "p < 0.05": 11, "q < 0.05": 6}  # its Table B2
PAPER_BH = {"tests": 116, "q < 0.05": 6}  # the paper corrects every data set's MAB-vs-baseline tests together


def all_tests(lm: pd.DataFrame, vis: pd.DataFrame) -> pd.DataFrame:
    """The paper's kind of multiple-testing family: every MAB-vs-baseline comparison on every data set
    (:func:`greedy_tests` and :func:`mab_tests` together), one test per distinct comparison."""
    parts = [t for t in (greedy_tests(lm), mab_tests(lm, vis)) if len(t)]
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def family_summary(per_seed: pd.DataFrame, families: dict[str, pd.DataFrame], alpha: float = 0.05) -> tuple:
    """Test families, each with its own Benjamini-Hochberg q: ``families`` (``{name: across-seed tests}``,
    e.g. :func:`greedy_tests` and :func:`mab_tests`), and the per-seed comparisons of each *distinct*
    selection with dense (a selection that several seeds share counts once; its copies get its q).
    Returns the per-seed frame and each family with ``q``, and a summary like the paper's Table B2 (of
    how many comparisons the CI excludes zero, p < alpha, q < alpha), with the paper's own counts
    beside the family that is its comparison (:data:`PAPER_FAMILY`)."""
    per_seed = per_seed.copy()
    families = {n: t.assign(q=bh(t.p.to_numpy(float))) if len(t) else t for n, t in families.items()}
    if len(per_seed):
        distinct = ~per_seed.duplicated(subset=["model", "selection"])
        q = pd.Series(bh(per_seed.p[distinct].to_numpy(float)), index=per_seed.index[distinct])
        key = per_seed.model + "|" + per_seed.selection
        per_seed["q"] = key.map(dict(zip(key[distinct], q)))
        once = per_seed[distinct]
    else:
        per_seed["q"], once = np.array([]), per_seed
    rows = [family_counts(t, n, alpha) for n, t in families.items() if len(t)]
    rows.append(family_counts(once, DENSE_FAMILY, alpha, int((~once.finite).sum()) if len(once) else 0))
    summary = pd.DataFrame(rows)
    paper = " / ".join(str(PAPER_COUNTS[k]) for k in ("CI excludes 0", "p < 0.05", "q < 0.05"))
    said = {PAPER_FAMILY: f"{paper} of {PAPER_COUNTS['comparisons']} (CI / p / q)",
            ALL_FAMILY: f"{PAPER_BH['q < 0.05']} with q < 0.05 of {PAPER_BH['tests']}"}
    summary["the paper"] = [said.get(n, "") for n in summary.family]
    return per_seed, families, summary


# ---- claims ---------------------------------------------------------------------------------

def memory_ablation(main: pd.DataFrame, other: pd.DataFrame, main_frame: pd.DataFrame, other_frame: pd.DataFrame,
                    value: str, rule: str, main_rule: str = "persist") -> pd.DataFrame:
    """Per setting and MAB policy: the searches under the notebook's memory rule (``main_rule``, the
    per-seed rows ``main`` of :func:`lm_table` / :func:`vision_table`) against the same searches under
    ``rule`` (``other``), same seeds, budget and pool: the mean difference other - main of ``value`` over
    seeds with its t interval and paired t-test (:func:`across_seeds`; for a lower-is-better value, above
    0: the main rule degrades less), the paired evaluations of each (matched by construction) and the
    share of each rule's joins made without a pull under the mask they joined (:func:`stale_picks`)."""
    rows = []
    for m in MAB:
        both = pd.concat([main[main.method == m], other[other.method == m].assign(method=f"{m}:{rule}")])
        t = across_seeds(both, f"{m}:{rule}", m, value, SETTING) if len(both) else pd.DataFrame()
        for _, r in t.iterrows():
            runs = [f[(f.model == r.model) & (f.kinds == r.kinds) & (f.ratio == r.ratio) & (f.method == m)]
                    for f in (main_frame, other_frame)]
            evals = [f.budget.map(lambda b: (b or {}).get("paired_evaluations")).mean() for f in runs]
            unbacked = [float(np.nanmean([stale_picks(u, p) for u, p in zip(f.units, f.pulled)])) for f in runs]
            rows.append({"model": r.model, "kinds": r.kinds, "ratio": r.ratio, "method": LABELS[m], "value": value,
                         "rule": rule, "seeds": r.seeds, main_rule: r.mean_b, "other rule": r.mean_a,
                         "other - main": r.mean_diff, "ci_lo": r.ci_lo, "ci_hi": r.ci_hi, "p": r.p,
                         f"verdict ({main_rule} better)": verdict((r.ci_lo, r.ci_hi), 0.0,
                                                                   "above" if value in LOWER_IS_BETTER else "below"),
                         "paired evaluations (main / other)": f"{evals[0]:.0f} / {evals[1]:.0f}",
                         "joins unpulled under their mask (main / other)": f"{unbacked[0]:.0%} / {unbacked[1]:.0%}"})
    return pd.DataFrame(rows)


def allocation_table(frames: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """How the sequential searches spent their pulls, per (model, units, method, memory rule), mean over
    seeds (:func:`repro.methods.bandit_stats.allocation`): distinct units per step against pulls per step,
    pulls per unit over the run, the most pulls of one unit, the pulls a join was decided on, and the
    share of joins backed by a pull under the joining mask. ``frames``: ``{rule: frame}`` of one rule's
    cells each (greedy, which has no memory, counted once per search setting: it decides on one step's
    trials); searches with another budget or pool (the frame's ``search``) are rows of their own."""
    rows, seen = [], set()
    for rule, frame in frames.items():
        runs = frame[frame.method.isin(SELECTORS.names(sequential=True))] if len(frame) else frame
        by = [*CELL, "search"] if "search" in runs else CELL
        for (model, kinds, ratio, method, *search), f in (runs.groupby(by, sort=False) if len(runs) else []):
            own = {"greedy-memory": "persist"}.get(method, "-")  # greedy with memory: always the persist rule
            key = (model, kinds, ratio, method, *search, rule if method in MAB else own)
            if key in seen:
                continue
            seen.add(key)
            a = pd.DataFrame([allocation(u, p, "step" if key[-1] in ("step", "-") else key[-1])
                              for u, p in zip(f.units, f.pulled) if p])
            if a.empty:
                continue
            rows.append({"model": model, "units": f"{kinds} {unit_pct(ratio)}", "method": LABELS[method], "memory": key[-1],
                         "seeds": len(a), **a.mean().round(3).to_dict()})
    order = {r: i for i, r in enumerate(frames)} | {"-": -1}
    return (pd.DataFrame(rows).sort_values(["model", "units", "pulls_per_step", "memory", "method"],
                                           key=lambda c: c.map(order)
                                           if c.name == "memory" else c, kind="stable", ignore_index=True)
            if rows else pd.DataFrame())


def join_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Thompson's two join rules replayed on ``frame``'s MAB-TS searches
    (:func:`repro.methods.bandit_stats.join_gaps`), per (model, units, join rule that ran): the joins,
    those where the posterior mean and the mean reward pick different units, how many of those the
    posterior's pick had fewer pulls, and the mean and largest damage of the posterior's pick above the
    mean reward's (nats; a gap counted only where the picks differ)."""
    runs = frame[(frame.method == "thompson") & frame.pulled.map(bool)] if len(frame) else frame
    rows = []
    for (model, kinds, ratio, join), f in (runs.groupby([*SETTING, "join"], sort=False) if len(runs) else []):
        gaps = [g for _, r in f.iterrows()
                for g in join_gaps(r.units, r.pulled, r.rewards, r.tau or TAU, r.memory)]
        differ = [g for g in gaps if g["posterior"] != g["mean"]]
        rows.append({"model": model, "units": f"{kinds} {unit_pct(ratio)}", "join that ran": join, "seeds": len(f),
                     "joins": len(gaps), "picks differ": len(differ),
                     "posterior's pick had fewer pulls": sum(g["pulls_posterior"] < g["pulls_mean"] for g in differ),
                     "mean damage gap (nats)": float(np.mean([g["damage_gap"] for g in differ])) if differ else 0.0,
                     "largest damage gap (nats)": max((g["damage_gap"] for g in differ), default=0.0)})
    return pd.DataFrame(rows).round(4)


def labelled(table: pd.DataFrame) -> pd.DataFrame:
    """``table`` with its methods' labels instead of their names (an empty table as it is)."""
    return table.assign(method=table.method.map(LABELS)) if len(table) else table



def seed_gaps(lm: pd.DataFrame, baseline: str = "greedy", value: str = "change_pct") -> pd.DataFrame:
    """Per setting, bandit and seed: the bandit's ``value`` minus ``baseline``'s on the same seed (the paired
    differences the MAB-vs-greedy claims average; below 0: the bandit degrades perplexity less), finite seeds
    only. The per-seed figure plots these on a linear scale, where gaps of a few points stay visible."""
    rows = []
    for (model, kinds, ratio), t in (lm.groupby(SETTING, sort=False) if len(lm) else []):
        base = t[t.method == baseline].set_index("seed")[value].astype(float)
        for m in MAB:
            own = t[t.method == m].set_index("seed")[value].astype(float)
            for seed in sorted(set(own.index) & set(base.index)):
                gap = own[seed] - base[seed]
                if np.isfinite(gap):
                    rows.append({"model": model, "kinds": kinds, "ratio": ratio, "setting": f"{model}\n{kinds} "
                                 f"{unit_pct(ratio)}", "bandit": LABELS[m], "seed": seed, "gap": gap})
    return pd.DataFrame(rows)
