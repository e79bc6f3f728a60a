"""Paper 3 (damage-aware bandit pruning) from records: frames of the selection and evaluation
cells (``repro.experiments.units``), the per-seed and across-seed statistics, Table B1/B2 and the
claims. Everything here reads records only (no model is run), so it is tested on constructed frames.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from repro.experiments.base import owned
from repro.experiments.units import LAMBADA, BanditExperiment, VisionBanditExperiment, removal_cell  # noqa: F401
from repro.methods.bandit import get_selector  # noqa: F401
from repro.methods.bandit import SELECTORS
from repro.store import Store

def removal_table(result: dict, batches) -> pd.DataFrame:
    """Rows dense / zeroed / removed of a :func:`removal_cell` result: parameters, checkpoint MB,
    median prefill ms per batch size, and the prefill speed-up against dense with its 95% CI
    paired by round-robin round (:func:`repro.evaluate.stats.speed_ratio`)."""
    from repro.evaluate.stats import speed_ratio

    rows = []
    for v in ("dense", "zeroed", "removed"):
        r = result[v]
        row = {"model": v, "params": r["params"], "checkpoint MB": r["checkpoint_bytes"] / 1e6}
        for b in batches:
            t, base = r[f"prefill_b{b}"]["times_s"], result["dense"][f"prefill_b{b}"]["times_s"]
            sp = speed_ratio(base, t)
            row[f"prefill b{b} (ms)"] = 1000 * r[f"prefill_b{b}"]["median_s"]
            row[f"speed-up b{b} [95% CI]"] = ("1" if v == "dense" else
                                              f"x{sp.estimate:.3f} [{sp.ci[0]:.3f}, {sp.ci[1]:.3f}]")
        rows.append(row)
    return pd.DataFrame(rows)


def bandit_frame(store: Store, experiments: list[BanditExperiment], session: bool = True) -> pd.DataFrame:
    """One row per evaluated cell (dense included) of ``experiments``; ``session``: only the cells
    asked for in this session."""
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
    return pd.DataFrame(rows)


def _selection_fields(sel: dict) -> dict:
    """The frame columns a cell takes from its selection record (empty record: the dense cell)."""
    sc, sr = sel.get("config", {}), sel.get("result", {})
    return {"kinds": "+".join(sc.get("kinds", [])) or "dense", "ratio": sc.get("ratio", 0.0), "k": sc.get("k", 0),
            "candidates": sc.get("candidates"), "seed": sc.get("seed"), "units": sr.get("units"),
            "budget": sr.get("budget"), "pulls": sr.get("pulls"), "rewards": sr.get("rewards"),
            "damages": sr.get("damages")}


def reward_table(frame: pd.DataFrame) -> pd.DataFrame:
    """The distribution of rewards the sequential searches produced, per (model, units, method),
    pooled over seeds: pulls, mean reward and the shares of harmful / neutral / beneficial pulls
    (:func:`repro.methods.bandit.reward_summary`). Only each setting's largest ratio counts (a
    smaller ratio's steps are its first steps, so they would count twice)."""
    from repro.methods.bandit import reward_summary

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
    for (model, kinds, ratio, method), f in sel.groupby(["model", "kinds", "ratio", "method"]):
        layers = np.array([u[1] for units in f.units for u in units])
        early = max(1, int(np.ceil(n_layers[model] / 10)))
        rows.append({"model": model, "units": f"{kinds} {ratio:.0%}", "method": method, "seeds": f.seed.nunique(),
                     "mean layer": float(layers.mean()), "early layers": early,
                     "share in early layers": float((layers < early).mean())})
    return pd.DataFrame(rows)


# ---- statistics: per (method, seed) vs dense, MAB vs greedy across seeds, BH over the family ----

def vs_dense(frame: pd.DataFrame) -> pd.DataFrame:
    """Each evaluated selection against the dense model on the same windows: perplexity change
    (%) with a paired bootstrap 95% CI over windows, and a Wilcoxon p-value of the per-window NLL
    differences. Non-finite perplexities stay as failures (no CI, no p-value)."""
    from repro.evaluate.stats import paired_ratio, paired_test

    rows = []
    for model, f in frame.groupby("model"):
        dense = f[f.method == "dense"]
        if dense.empty:
            continue
        d = np.asarray(dense.iloc[0].window_nll)
        for _, r in f[f.method != "dense"].iterrows():
            row = {"model": model, "kinds": r.kinds, "ratio": r.ratio, "k": r.k, "method": r.method, "seed": r.seed,
                   "ppl": r.ppl, "finite": r.finite}
            nll = np.asarray(r.window_nll, dtype=float)
            if r.finite and np.isfinite(nll).all():
                p = paired_ratio(nll, d)
                row.update(change_pct=100 * (p.estimate - 1), ci_lo=100 * (p.ci[0] - 1), ci_hi=100 * (p.ci[1] - 1),
                           p=paired_test(nll, d) if len(d) >= 2 else np.nan)
            else:
                row.update(change_pct=np.inf, ci_lo=np.nan, ci_hi=np.nan, p=np.nan)
            rows.append(row)
    return pd.DataFrame(rows)


def across_seeds(table: pd.DataFrame, a: str, b: str, value: str = "change_pct", test: str = "auto") -> pd.DataFrame:
    """``a`` against ``b`` per (model, kinds, ratio), paired over the seeds both ran: mean of each,
    mean difference, and the paired test's p-value across seeds (NaN with fewer than 2 seeds).
    ``auto``: Wilcoxon signed-rank from 6 seeds on, the paired t-test with fewer
    (:func:`repro.evaluate.stats.paired_test_name`); the ``test`` column says which ran."""
    from repro.evaluate.stats import paired_test, paired_test_name

    rows = []
    for (model, kinds, ratio), f in table.groupby(["model", "kinds", "ratio"]):
        x = f[f.method == a].set_index("seed")[value]
        y = f[f.method == b].set_index("seed")[value]
        seeds = sorted(set(x.index) & set(y.index))
        if not seeds:
            continue
        xs, ys = x.loc[seeds].to_numpy(float), y.loc[seeds].to_numpy(float)
        ok = np.isfinite(xs) & np.isfinite(ys)
        p = paired_test(xs[ok], ys[ok], test) if ok.sum() >= 2 else np.nan
        rows.append({"model": model, "kinds": kinds, "ratio": ratio, "value": value, "a": a, "b": b, "seeds": len(seeds),
                     "mean_a": xs.mean(), "mean_b": ys.mean(), "mean_diff": float(np.mean(xs - ys)),
                     "a_better_seeds": int((xs < ys).sum()), "p": p, "test": paired_test_name(int(ok.sum()), test)})
    return pd.DataFrame(rows)


def family_summary(per_seed: pd.DataFrame, tests: pd.DataFrame, alpha: float = 0.05) -> tuple:
    """Benjamini-Hochberg q over the declared family (every per-seed comparison with dense and
    every across-seed test), and a summary like the paper's Table B2: of how many comparisons the
    CI excludes zero, p < alpha, q < alpha."""
    from repro.evaluate.stats import bh

    per_seed, tests = per_seed.copy(), tests.copy()
    p = np.concatenate([per_seed.get("p", pd.Series(dtype=float)).to_numpy(float),
                        tests.get("p", pd.Series(dtype=float)).to_numpy(float)])
    q = bh(p)
    per_seed["q"], tests["q"] = q[:len(per_seed)], q[len(per_seed):]
    excl = (per_seed.ci_lo > 0) | (per_seed.ci_hi < 0) if len(per_seed) else pd.Series(dtype=bool)
    summary = pd.DataFrame([
        {"family": "each (method, seed) vs dense", "comparisons": len(per_seed),
         "CI excludes 0": int(excl.sum()), f"p < {alpha}": int((per_seed.p < alpha).sum()),
         f"q < {alpha}": int((per_seed.q < alpha).sum()), "failures (non-finite)": int((~per_seed.finite).sum())},
        {"family": "across seeds (paired test)", "comparisons": len(tests), "CI excludes 0": None,
         f"p < {alpha}": int((tests.p < alpha).sum()) if len(tests) else 0,
         f"q < {alpha}": int((tests.q < alpha).sum()) if len(tests) else 0, "failures (non-finite)": None},
    ])
    return per_seed, tests, summary


def vision_frame(store: Store, experiments: list[VisionBanditExperiment], session: bool = True) -> pd.DataFrame:
    """One row per evaluated vision cell (dense included)."""
    selections = {r["key"]: r for r in store.records("bandit-select")}
    rows = []
    for r, e in owned(store, "bandit-vision", experiments, session):
        c, res = r["config"], r["result"]
        rows.append({"key": ("bandit-vision", r["key"]), "model": e.name, "method": c["method"],
                     **_selection_fields(selections.get(c.get("selection"), {})),
                     "top1": res["top1"], "ce": res["ce"], "per_image_ce": res["per_image_ce"],
                     "per_image_correct": res["per_image_correct"]})
    return pd.DataFrame(rows)


# ---- claims ---------------------------------------------------------------------------------

MAB = ("ucb", "thompson")
LABELS = SELECTORS.labels(dense="Dense")


def _per_seed(table: pd.DataFrame, method: str, value: str) -> pd.Series:
    return table[table.method == method].set_index("seed")[value].astype(float)


def _seed_diff(table, a: str, b: str, value: str):
    """mean over shared seeds of a - b with a paired bootstrap CI over seeds (None if < 1 seed)."""
    from repro.evaluate.stats import paired_difference

    x, y = _per_seed(table, a, value), _per_seed(table, b, value)
    seeds = [s for s in sorted(set(x.index) & set(y.index)) if np.isfinite(x[s]) and np.isfinite(y[s])]
    return None if not seeds else paired_difference(x.loc[seeds].to_numpy(), y.loc[seeds].to_numpy())


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


def bandit_claims(lm: pd.DataFrame, vision: pd.DataFrame | None = None) -> list:
    """Paper 3's claims, each judged by :func:`repro.claims.verdict` on an interval paired over seeds."""
    from repro.claims import Claim

    out = []

    def diff_claim(claim, setting, what, p, side="below", unit="pp"):
        if p is None:
            return Claim(claim, setting, "not run", "inconclusive")
        f = "+.4f" if unit == "nats" else "+.2f"  # cross-entropy differences are small
        return Claim.check(claim, setting, f"{what} {p.estimate:{f}} [{p.ci[0]:{f}}, {p.ci[1]:{f}}] {unit} over "
                                           f"{p.n} seeds", p.estimate, p.ci, 0.0, side)

    for (model, kinds, ratio), t in (lm.groupby(["model", "kinds", "ratio"]) if len(lm) else []):
        setting = f"{model}, {kinds} {ratio:.0%}"
        for m in MAB:
            out.append(diff_claim("MAB degrades perplexity less than budgeted greedy", f"{setting}, {LABELS[m]}",
                                  f"change {LABELS[m]} - greedy", _seed_diff(t, m, "greedy", "change_pct")))
        if t.lambada_change_pct.notna().any():
            means = t.groupby("method").lambada_change_pct.mean()
            best_mab = min((m for m in MAB if m in means), key=lambda m: means[m], default=None)
            others = means.drop(list(MAB), errors="ignore")
            if best_mab is not None and len(others):
                rival = others.idxmin()
                out.append(diff_claim("MAB has the lowest LAMBADA degradation", f"{setting}, {LABELS[best_mab]} vs "
                                      f"best other ({LABELS.get(rival, rival)})", "LAMBADA ppl change difference",
                                      _seed_diff(t, best_mab, rival, "lambada_change_pct")))
    if vision is not None and len(vision):
        for (model, kinds, ratio), t in vision.groupby(["model", "kinds", "ratio"]):
            setting = f"{model}, {kinds} {ratio:.0%} (k={int(t.k.iloc[0])})"
            out.append(diff_claim("MAB-TS loses less top-1 than budgeted greedy at a matched budget", setting,
                                  "top-1 TS - greedy", _seed_diff(t, "thompson", "greedy", "top1_pp"), side="above"))
            out.append(diff_claim("MAB-TS raises cross-entropy less than budgeted greedy at a matched budget",
                                  setting, "cross-entropy TS - greedy", _seed_diff(t, "thompson", "greedy", "ce"),
                                  unit="nats"))
    return out


def vision_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Per-seed vision rows: top-1 (percentage points) and its drop vs dense with a paired bootstrap
    CI over the test images (also as ``ci_lo`` / ``ci_hi``, so the rows join the per-seed family of
    :func:`family_summary`), cross-entropy, its increase and the Wilcoxon p-value of the per-image
    cross-entropy differences."""
    from repro.evaluate.stats import paired_difference, paired_test

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
                         "seed": r.seed, "top1_pp": 100 * r.top1, "top1_drop_pp": drop.estimate,
                         "drop_ci_lo": drop.ci[0], "drop_ci_hi": drop.ci[1], "ce": r.ce, "ce_increase": r.ce - d.ce,
                         "paired_evaluations": (r.budget or {}).get("paired_evaluations"),
                         "ci_lo": drop.ci[0], "ci_hi": drop.ci[1], "finite": bool(np.isfinite(r.ce)),
                         "p": paired_test(r.per_image_ce, d.per_image_ce)})
    return pd.DataFrame(rows)

