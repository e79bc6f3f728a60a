"""Synthetic arms: the three sequential searches on a pool whose damage distributions are known (no
model, seconds), for notebook 3's teaching section.

Each arm (unit) has a true mean damage; a pull returns it plus Gaussian noise, whatever the mask (no
interaction between units, unlike a real model). Because the truth is known, a search is judged by
what it selected: the mean true damage of its k units, against the best possible (the k lowest means).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from repro.calib.budget import Budget
from repro.methods.bandit import (
    TAU,
    UCB,
    UCB_C,
    Arm,
    Thompson,
    Unit,
    allocation,
    bandit_search,
    greedy_search,
    reward,
)
from repro.papers.bandit.readings import synthetic_reading
from repro.papers.bandit.worked import pull_reasons
from repro.report import Table

POOL, GOOD, GAP, SPREAD, NOISE, SEEDS = 16, 4, 0.01, 0.03, 0.02, 40  # the teaching section's toy


def describe(budgets=(8, 32)) -> str:
    """The toy's setting in one paragraph, from this module's constants (never typed in the notebook)."""
    return (f"{POOL} candidates: {GOOD} nearly harmless (true mean damage between 0 and {GAP / 2:g}), {POOL - GOOD} "
            f"costing between {GAP:g} and {GAP + SPREAD:g}; a pull returns the true mean plus Gaussian noise of "
            f"standard deviation {NOISE:g}. Each search selects k = {GOOD}; budgets of "
            + " and ".join(f"{b} pulls per step ({b / POOL:g} x the pool)" for b in budgets)
            + f"; {SEEDS} seeds, each with its own arms and noise, shared by every policy.")


def caption() -> str:
    return (f"**Synthetic arms: regret (mean true damage above the best possible set) and how the pulls were spent, "
            f"{SEEDS} seeds per row, paired with greedy on the same arms and noise.** {POOL} arms, k = {GOOD}, noise "
            f"sd {NOISE:g}; no model.")


class SyntheticArms:
    """An evaluator (:class:`repro.methods.bandit.Evaluator`) over ``means`` (one true mean damage per
    unit) with noise of standard deviation ``noise``; ``seed`` draws the noise."""

    group_size = 32
    adapter = None

    def __init__(self, means: dict[Unit, float], noise: float, seed: int, n_batches: int = 8):
        self.means, self.noise, self.n_batches = means, noise, n_batches
        self.rng = np.random.default_rng(seed)
        self.budget = Budget()

    def reset(self) -> None:
        self.budget = Budget()

    def add(self, unit: Unit) -> None:
        pass

    def damage(self, unit: Unit, batches) -> float:
        self.budget.paired_evaluations += 1
        return float(self.means[unit] + self.noise * self.rng.standard_normal())


def arms(n: int = POOL, good: int = GOOD, gap: float = GAP, spread: float = SPREAD, seed: int = 0) -> dict[Unit, float]:
    """``n`` units: ``good`` of them with true damage 0 to ``gap`` / 2, the rest ``gap`` to ``gap`` +
    ``spread``, placed at random pool positions (``seed``), so the magnitude order says nothing."""
    rng = np.random.default_rng(seed)
    means = np.concatenate([rng.uniform(0, gap / 2, good), rng.uniform(gap, gap + spread, n - good)])
    return {Unit("head", 0, i): float(m) for i, m in enumerate(rng.permutation(means))}


def run(policy: str, means: dict[Unit, float], k: int, budget: int, noise: float, seed: int,
        memory: str = "persist", pool_size: int | None = None, c: float = UCB_C) -> dict:
    """One search on synthetic arms: the mean true damage of its k units, how far above the best
    possible k it is (regret), and its :func:`allocation` of pulls. ``pool_size``: the search sees that many
    arms at a time, the next arm in pool order entering as one joins (the real searches' refresh); None: all.
    ``c``: UCB's exploration constant."""
    units = list(means)
    ev = SyntheticArms(means, noise, seed)
    ranking = np.arange(len(units), dtype=float)  # pool order = unit order (random with respect to the truth)
    pool = pool_size or len(units)
    if policy == "greedy":
        sel = greedy_search(ev, units, ranking, k, seed=seed, budget=budget, pool_size=pool)
    else:
        sel = bandit_search(ev, units, ranking, k, UCB(c) if policy == "ucb" else Thompson(), seed=seed,
                            budget=budget, pool_size=pool, memory=memory)
    least = pull_reasons(sel.as_dict(), c).least_pulled.mean() if policy == "ucb" else np.nan
    true = float(np.mean([means[u] for u in sel.units]))
    best = float(np.mean(sorted(means.values())[:k]))
    name = f"{policy} c={c:g}" if policy == "ucb" and c != UCB_C else policy
    return {"policy": name, "memory": memory if policy != "greedy" else "-", "budget": budget, "seed": seed,
            "true damage": true, "regret": true - best, "decided to least-pulled": least,
            **allocation(sel.units, sel.pulled)}


def compare(budgets=(8, 32), pool: int = POOL, k: int = GOOD, noise: float = NOISE, seeds=range(SEEDS),
            memories=("persist", "step")) -> pd.DataFrame:
    """Every policy (greedy; UCB and Thompson under each of ``memories``) at each per-step budget, on
    the same arms and noise per seed: one row per run (:func:`run`)."""
    rows = []
    for seed in seeds:
        means = arms(pool, k, seed=seed)
        for b in budgets:
            rows.append(run("greedy", means, k, b, noise, seed))
            rows += [run(p, means, k, b, noise, seed, m) for p in ("ucb", "thompson") for m in memories]
    return pd.DataFrame(rows)


REFRESH = {"arms": 32, "pool": 8, "k": 8, "budget": 8}  # the refreshing toy: the real searches' pool and budget
SMALL_C = 0.1  # an exploration constant on the scale of the toy's rewards (their sd within a step is about 0.1)


def refresh_compare(seeds=range(SEEDS), noise: float = NOISE, small_c: float = SMALL_C, **shape) -> pd.DataFrame:
    """The toy with a refreshing pool (:data:`REFRESH`, overridable): ``arms`` arms seen ``pool`` at a time, the
    next entering as one joins, ``budget`` pulls per step; greedy, UCB at the paper's c and at ``small_c``, and
    Thompson. One row per (seed, policy): what :func:`run` reports, the share of each step's pulls that go to the
    arms new in it (``to_newcomers``) included."""
    c = {**REFRESH, **shape}
    rows = []
    for seed in seeds:
        means = arms(c["arms"], c["k"], seed=seed)
        for policy, const in (("greedy", UCB_C), ("ucb", UCB_C), ("ucb", small_c), ("thompson", UCB_C)):
            rows.append(run(policy, means, c["k"], c["budget"], noise, seed, pool_size=c["pool"], c=const))
    return pd.DataFrame(rows)


def refresh_table(runs: pd.DataFrame) -> Table:
    """The refreshing toy's table: per policy, the mean regret and its paired difference to greedy on the same
    arms and noise, distinct arms per step, the share of pulls to each step's newest entrants and the share of
    joins first pulled in the step they join."""
    greedy = runs[runs.policy == "greedy"].set_index("seed").regret
    rows = []
    for p, g in runs.groupby("policy", sort=False):
        d = g.set_index("seed").regret - greedy
        rows.append({"policy": p, "seeds": len(g), "mean regret": g.regret.mean(), "vs greedy": d.mean(),
                     "seeds better than greedy": int((d < 0).sum()), "distinct per step": g.distinct_per_step.mean(),
                     "to_newcomers": g.to_newcomers.mean(), "joins_new": g.joins_new.mean(),
                     "decided to least-pulled": g["decided to least-pulled"].mean()})
    t = pd.DataFrame(rows).round(4)
    r = {x["policy"]: x for _, x in t.iterrows()}
    ucb, small = r.get("ucb"), r.get(f"ucb c={SMALL_C:g}")
    reading = "" if ucb is None or small is None else (
        f"With the pool refreshed as arms join, UCB at c = {UCB_C:g} sends {ucb.to_newcomers:.0%} of each step's "
        f"pulls to the arms new in it (greedy's even spread: {r['greedy'].to_newcomers:.0%}), and "
        f"{ucb['decided to least-pulled']:.0%} of the pulls its index decides go to a least-pulled arm: at this c the "
        f"bonus, not the reward, picks the arm, so the search catches up on pull counts. At c = {SMALL_C:g}, on the "
        f"scale of the rewards, {small['decided to least-pulled']:.0%} of decided pulls go to a least-pulled arm and "
        f"{small['distinct per step']:.1f} distinct arms are pulled per step (against {ucb['distinct per step']:.1f}); "
        f"mean regret {ucb['mean regret']:.4f} against {small['mean regret']:.4f} (greedy "
        f"{r['greedy']['mean regret']:.4f}, Thompson {r['thompson']['mean regret']:.4f}).")
    cap = (f"**The toy with a refreshing pool: {REFRESH['arms']} arms seen {REFRESH['pool']} at a time, "
           f"{REFRESH['budget']} pulls per step, k = {REFRESH['k']}, noise sd {NOISE:g}, {runs.seed.nunique()} seeds "
           "shared by every policy.** Regret as in the toy above; no model.")
    return Table(t, cap, reading)


def table(runs: pd.DataFrame) -> Table:
    """The synthetic-arms table: :func:`summary` of ``runs`` (:func:`compare`) with its caption and reading."""
    t = summary(runs).round(4)
    return Table(t, caption(), synthetic_reading(t))


def summary(runs: pd.DataFrame) -> pd.DataFrame:
    """Per (budget, policy, memory): mean regret with its paired difference to greedy on the same seeds
    (negative: the policy found better units), distinct units per step and the most pulls of one unit."""
    greedy = runs[runs.policy == "greedy"].set_index(["budget", "seed"]).regret
    out = []
    for (b, p, m), g in runs.groupby(["budget", "policy", "memory"], sort=False):
        d = g.set_index(["budget", "seed"]).regret - greedy
        out.append({"budget": b, "policy": p, "memory": m, "seeds": len(g), "mean regret": g.regret.mean(),
                    "vs greedy": d.mean(), "seeds better than greedy": int((d < 0).sum()),
                    "seeds worse": int((d > 0).sum()), "distinct per step": g.distinct_per_step.mean(),
                    "most pulls of one unit": g.most_pulls.mean()})
    return pd.DataFrame(out)


def worked_pull(alpha: float = 1.0, beta: float = 1.0, damage: float = 0.01, tau: float = 0.02) -> dict:
    """One fractional-Beta update: the reward ``sigmoid(-damage / tau)`` of a pull, and the posterior
    Beta(alpha + r, beta + 1 - r) with its mean before and after."""
    r = float(reward(damage, tau))
    return {"damage": damage, "tau": tau, "reward": r, "before": (alpha, beta), "after": (alpha + r, beta + 1 - r),
            "mean before": alpha / (alpha + beta), "mean after": (alpha + r) / (alpha + beta + 1)}


def worked_join(few: tuple[int, float] = (1, 0.05), many: tuple[int, float] = (5, 0.25)) -> dict:
    """Two candidates that Thompson's join rules rank differently: ``few`` and ``many`` as (pulls, mean
    reward), both below the prior's 0.5; each one's damage, posterior mean, and each rule's pick ("few" or
    "many", :class:`repro.methods.bandit.Thompson`). In words: :func:`.readings.worked_join_reading`."""
    a, b = Unit("head", 0, 0), Unit("head", 0, 1)
    arms = {a: Arm(few[0], few[0] * few[1]), b: Arm(many[0], many[0] * many[1])}
    which = {a: "few", b: "many"}
    return {"few": few, "many": many, "damage": tuple(-TAU * np.log(r / (1 - r)) for _, r in (few, many)),
            "posterior": tuple((1 + arms[u].reward_sum) / (2 + arms[u].n) for u in (a, b)),
            "posterior picks": which[Thompson("posterior").best([a, b], arms)],
            "mean picks": which[Thompson("mean").best([a, b], arms)]}
