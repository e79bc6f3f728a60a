"""MAB-UCB worked on a real search: the index of every candidate at one step, rebuilt from a committed selection
record (no model), and how often that rebuilt index names the unit the search really pulled.

Under ``memory="persist"`` a candidate's statistics are every pull it has had since it entered the pool, and a
unit leaves the pool only by joining, so a record's pulls and rewards (per step, in pull order) give each
candidate's pull count n and mean reward at any moment, and the run's pull count t. A pool unit never pulled is
pulled first (its bonus is infinite); every other pull is argmax of mean reward + c sqrt(ln t / n)
(:meth:`repro.methods.bandit.UCB.bonus`).
"""
from __future__ import annotations

import pandas as pd

from repro.methods.bandit import UCB, Arm, Unit


def _replay(result: dict):
    """Walk the record's pulls: yield ``(step, pull, t, arms, pulled unit, fresh)`` before each pull, ``arms``
    the statistics of every candidate pulled so far that has not joined."""
    arms: dict[str, Arm] = {}
    t = 0
    for step, (units, rewards) in enumerate(zip(result["pulled"], result["rewards"])):
        for j, (u, r) in enumerate(zip(units, rewards)):
            fresh = u not in arms
            yield step, j, t, dict(arms), u, fresh
            arm = arms.setdefault(u, Arm())
            arm.n, arm.reward_sum = arm.n + 1, arm.reward_sum + r
            t += 1
        arms.pop(str(Unit.of(result["units"][step])), None)


def ucb_step(result: dict, step: int, c: float, pull: int | None = None) -> pd.DataFrame:
    """Every candidate's mean reward, pulls, bonus and UCB index before pull ``pull`` of ``step`` (None: the
    first that the index decides, not a first pull of a fresh entrant), and which unit the search pulled there,
    from a ``memory="persist"`` MAB-UCB selection record's ``result``."""
    ucb = UCB(c)
    for s, j, t, arms, u, fresh in _replay(result):
        if s == step and not fresh and (pull is None or j == pull):
            rows = [{"unit": name, "pulls": a.n, "mean reward": a.mean_reward, "bonus": ucb.bonus(a.n, t),
                     "index": a.mean_reward + ucb.bonus(a.n, t), "pulled": name == u} for name, a in arms.items()]
            out = pd.DataFrame(rows).sort_values("index", ascending=False, ignore_index=True)
            return out.assign(step=step, pull=j, t=t)
    raise ValueError(f"step {step} has no pull that the index decides")


def replay_agreement(result: dict, c: float) -> tuple[int, int]:
    """``(agreeing, decided)``: of the pulls the index decides (not fresh entrants' first pulls), how many the
    rebuilt index names (ties to the earlier candidate, as the search breaks them): a check that the record and
    the rule it was made by agree."""
    ucb, agree, decided = UCB(c), 0, 0
    for _, _, t, arms, u, fresh in _replay(result):
        if fresh:
            continue
        decided += 1
        agree += max(arms, key=lambda name: arms[name].mean_reward + ucb.bonus(arms[name].n, t)) == u
    return agree, decided


def pull_reasons(result: dict, c: float) -> pd.DataFrame:
    """Every pull the index decides (not a fresh entrant's first pull) of a ``memory="persist"`` MAB-UCB record's
    ``result``, with why: whether the pulled unit had the fewest pulls among the candidates (``least_pulled``)
    and whether it had the best mean reward (``best_mean``). Where the bonus dominates the index, decided pulls go
    to the least-pulled candidate whatever its reward."""
    ucb, rows = UCB(c), []
    for s, j, t, arms, u, fresh in _replay(result):
        if fresh or not arms:
            continue
        fewest = min(a.n for a in arms.values())
        best = max(a.mean_reward for a in arms.values())
        rows.append({"step": s, "pull": j, "t": t, "unit": u, "least_pulled": arms[u].n == fewest,
                     "best_mean": arms[u].mean_reward == best,
                     "bonus": ucb.bonus(arms[u].n, t), "mean reward": arms[u].mean_reward})
    return pd.DataFrame(rows, columns=["step", "pull", "t", "unit", "least_pulled", "best_mean", "bonus",
                                       "mean reward"])


def bonus_decided_pull(result: dict, c: float) -> tuple[int, int] | None:
    """``(step, pull)`` of the first decided pull that goes to a unit other than the best mean reward (the
    bonus, not the reward, chose it): the pull the notebook works through. None if every decided pull follows
    the best mean."""
    reasons = pull_reasons(result, c)
    picked = reasons[~reasons.best_mean]
    return (int(picked.step.iloc[0]), int(picked.pull.iloc[0])) if len(picked) else None
