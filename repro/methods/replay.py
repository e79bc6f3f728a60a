"""A committed search's joins replayed at another precision (issue 49: is the search's numeric noise below the gaps
it decides?).

The search's own pulls are repeated in order, under the mask each step had, on the same mini-batches (the seed's
stream, :func:`repro.methods.bandit.batch_stream`), with the evaluator's model in the replay's dtype. At each step
the method's own join rule is applied to the replayed measurements: budgeted greedy, the lowest mean damage of the
step's trials (``memory="persist"``: of all a unit's trials since it entered the pool); MAB-UCB and MAB-TS with
``join="mean"``, the best mean reward; MAB-TS, the best posterior mean. The mask then grows by the unit the search
really joined, so every step is replayed under the search's own mask, and a changed join is counted once, where it
happens (what it would have changed later is not followed). ``margin`` is how close the decision was: the lowest
replayed mean damage among the other candidates that may join, minus that of the unit that would join (NaN where the
step pulled one unit only).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from repro.errors import ReproError
from repro.methods.bandit import BATCHES_PER_EVAL, batch_stream
from repro.methods.units import TAU, Evaluator, Unit, reward


def _value(method: str, params: dict):
    """The join rule of ``method`` as a value to maximise over a unit's kept damages."""
    tau = params.get("tau", TAU)
    if method in ("greedy", "greedy-memory"):
        return lambda ds: -float(np.mean(ds))
    if method == "ucb" or (method == "thompson" and params.get("join") == "mean"):
        return lambda ds: float(np.mean(reward(np.asarray(ds), tau)))
    if method == "thompson":
        return lambda ds: float((1 + np.sum(reward(np.asarray(ds), tau))) / (2 + len(ds)))
    raise ReproError(f"no join rule to replay for {method!r} (a sequential search: greedy, greedy-memory, ucb, "
                     "thompson)")


def _memory(method: str, params: dict) -> str:
    if method == "greedy":
        return "step"
    return params.get("memory", "persist")


def replay_joins(ev: Evaluator, units: Sequence[Unit], pulled: Sequence[Sequence[Unit]], method: str, seed: int,
                 params: dict) -> dict:
    """Replay the search that joined ``units`` after pulling ``pulled`` (one list per step) on ``ev`` (reset here):
    per step the replayed damages of its pulls (in pull order), the unit that joined, the one the replayed
    measurements would join (``replayed``) and their ``margin``; and the replayed rewards, step by step."""
    if len(units) != len(pulled):
        raise ReproError(f"a search's record has one list of pulls per joined unit, got {len(pulled)} for "
                         f"{len(units)} units")
    value, memory, tau = _value(method, params), _memory(method, params), params.get("tau", TAU)
    stream = batch_stream(ev, seed, params.get("batches_per_eval", BATCHES_PER_EVAL))
    ev.reset()
    kept: dict[Unit, list[float]] = {}  # a unit's replayed damages while it stays in the pool (memory rule)
    steps, rewards = [], []
    for joined, pulls in zip(units, pulled):
        if memory == "step":
            kept = {}
        damages = []
        for u in pulls:
            d = float(ev.damage(u, stream.next()))
            damages.append(d)
            kept.setdefault(u, []).append(d)
        may_join = list(kept) if memory == "carry" else list(dict.fromkeys(pulls))
        ranked = sorted(may_join, key=lambda u: -value(kept[u]))  # stable: ties to the earlier pull
        best = ranked[0]
        others = [float(np.mean(kept[u])) for u in ranked[1:]]
        margin = min(others) - float(np.mean(kept[best])) if others else float("nan")
        steps.append({"damages": damages, "joined": str(joined), "replayed": str(best), "margin": margin})
        rewards.append([float(r) for r in reward(np.asarray(damages), tau)])
        ev.add(joined)
        kept.pop(joined, None)
    return {"steps": steps, "rewards": rewards}


def changed_joins(result: dict) -> int:
    """How many of a replay's steps would have joined another unit."""
    return sum(s["joined"] != s["replayed"] for s in result["steps"])
