"""Notebook 3's "Try it" exercises: short searches on one real model, live in float32, each answering in
seconds on 2 CPU cores; and the toy problem of section 1b under settings the student picks. Each returns a
:class:`repro.report.Table` with a reading generated from its numbers."""
from __future__ import annotations

import pandas as pd

from repro.evaluate.prefix import UnitEvaluator
from repro.methods.bandit import allocation, select_units
from repro.papers.bandit import synthetic
from repro.papers.bandit.params import BanditParams
from repro.report import Table, committed_csv

COMMITTED = BanditParams.model_fields["figures_dir"].default  # the cpu profile's tables, relative to notebooks/


def exploration(exp, kind: str = "head", steps: int = 4, cs=(1.5, 0.2), budget: int = 4, pool_size: int = 8,
                seed: int = 1) -> Table:
    """MAB-UCB at each exploration constant ``c`` in ``cs``, and budgeted greedy, for ``steps`` joins of ``kind``
    units on ``exp``'s model (float32; the seed's calibration mini-batches): distinct units pulled per step, the
    share of pulls that go to the step's newest pool entrants, the pulls a join rests on, and the units joined."""
    batches, _ = exp.calibration_batches(seed)
    runs = [("greedy", {})] + [("ucb", {"c": c}) for c in cs]
    rows = []
    with UnitEvaluator(exp.model, batches, exp.group_size) as ev:
        for method, extra in runs:
            sel = select_units(method, ev, steps, kinds=[kind], seed=seed, budget=budget, pool_size=pool_size, **extra)
            a = allocation(sel.units, sel.pulled, "step" if method == "greedy" else "persist")
            rows.append({"method": method if method == "greedy" else f"ucb, c = {extra['c']:g}",
                         "distinct units per step": a["distinct_per_step"],
                         "share of pulls to newest entrants": a["to_newcomers"],
                         "pulls per join": a["join_evidence"],
                         "joined": " ".join(f"{u.layer}.{u.index}" for u in sel.units)})
    t = pd.DataFrame(rows).round(2)
    ucb = t.iloc[1:]
    big, small = ucb.iloc[0], ucb.iloc[-1]
    reading = (f"With {budget} pulls per step over a pool of {pool_size}, greedy pulls "
               f"{t.iloc[0]['distinct units per step']:.1f} distinct units per step; UCB at {big.method.split(', ')[1]} "
               f"pulls {big['distinct units per step']:.1f} and at {small.method.split(', ')[1]} "
               f"{small['distinct units per step']:.1f}. Its bonus c sqrt(ln t / n) is on the scale of c, while one "
               "step's rewards differ by a few hundredths: a large c spends the pulls evening out pull counts, a "
               "small one lets the rewards decide.")
    return Table(t, f"**Try it: UCB's exploration on a short search.** {exp.name}, {kind} units, {steps} joins, "
                    f"{budget} pulls per step over a pool of {pool_size}, calibration seed {seed}; float32.", reading)


def toy(budget: int = 8, c: float = 1.5, noise: float = synthetic.NOISE, seeds: int = 10) -> Table:
    """Section 1b's toy problem (known arm means, a new draw per seed) at the student's ``budget``, ``noise`` and
    UCB constant ``c``: greedy, UCB at ``c`` and Thompson, over ``seeds`` seeds; the regret (mean true damage of
    the units chosen above the best possible) and the distinct arms pulled per step."""
    runs = []
    for s in range(seeds):
        means = synthetic.arms(seed=s)
        runs += [synthetic.run(policy, means, synthetic.GOOD, budget, noise, s, c=c)
                 for policy in ("greedy", "ucb", "thompson")]
    f = pd.DataFrame(runs).groupby("policy", sort=False)
    t = pd.DataFrame({"regret (mean)": f.regret.mean(), "regret (sd over seeds)": f.regret.std(),
                      "distinct arms per step": f.distinct_per_step.mean()}).reset_index().round(4)
    best = t.sort_values("regret (mean)").iloc[0]
    reading = (f"With {budget} pulls per step and reward noise {noise:g}, {best.policy} chooses the least damaging "
               f"arms (regret {best['regret (mean)']:.4f} on average over {seeds} seeds; 0 is the best possible "
               f"{synthetic.GOOD}).")
    return Table(t, f"**Try it: the toy problem.** {synthetic.POOL} arms, the {synthetic.GOOD} least damaging to "
                    f"find; budget {budget} per step, noise {noise:g}, UCB's c = {c:g}; {seeds} seeds.", reading)


def committed_toy(figures: str = COMMITTED) -> str:
    """Section 1b's toy table as committed: per budget, greedy's regret and the lowest, with the seeds it wins."""
    t = committed_csv(figures, "synthetic_arms.csv")
    if t is None:
        return f"(no committed tables under {figures})"
    parts = []
    for budget, g in t.groupby("budget"):
        greedy, best = g[g.policy == "greedy"].iloc[0], g.sort_values("mean regret").iloc[0]
        parts.append(f"at {budget} pulls per step greedy's mean regret is {greedy['mean regret']:.4f} and the lowest "
                     f"is {best.policy} ({best.memory}) at {best['mean regret']:.4f}, better than greedy on "
                     f"{int(best['seeds better than greedy'])} of {int(best.seeds)} seeds")
    return (f"Section 1b (profile `cpu`, `synthetic_arms.csv`, noise {synthetic.NOISE:g}): " + "; ".join(parts) +
            ". More noise needs more pulls to tell arms apart; a small c trusts early means, which can lock a search "
            "onto an arm that looked good once.")


def committed_exploration(model: str = "smollm2-135m", figures: str = COMMITTED) -> str:
    """Section 5e's table as committed for ``model``'s heads: distinct units per step, the share of index-decided
    pulls to a least-pulled candidate, and the paired change of perplexity, per c."""
    t = committed_csv(figures, "table_exploration.csv")
    if t is None:
        return f"(no committed tables under {figures})"
    h = t[(t.model == model) & t.units.str.startswith("head")]
    rows = "; ".join(f"c = {r.c:g}: {r.distinct_per_step:.2f} distinct heads per step, "
                     f"{r['decided to least-pulled']:.0%} of the pulls its index decides to a least-pulled candidate"
                     + ("" if not isinstance(r["change - c=1.5"], str) else
                        f", ppl change {r['change - c=1.5']} points against c = 1.5") for _, r in h.iterrows())
    return (f"Section 5e (profile `cpu`, `table_exploration.csv`; {h.units.iloc[0]} of {model}, {int(h.seeds.iloc[0])} seeds, the "
            f"profile's budget and pool): {rows}. A smaller constant changes how the pulls are spent; whether it "
            "changes what the search finds is the interval's question.")


def exercises(exp):
    """Notebook 3's exercises (the toy, and ``exp``: the first language model), their default runs the values section
    1c's cells start with (:class:`repro.papers.exercises.Exercises`)."""
    from repro.papers.exercises import Exercises

    return Exercises(exp, {"toy": toy, "exploration": exploration},
                     [("toy", {"budget": 32, "c": 1.5, "noise": 0.05}), ("toy", {"budget": 32, "c": 0.1, "noise": 0.05}),
                      ("exploration", {"kind": "head", "steps": 3, "cs": [1.5, 0.2], "budget": 4, "pool_size": 8})])
