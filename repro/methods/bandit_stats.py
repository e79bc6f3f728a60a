"""What a bandit search did, from its selection or its record: the rewards' distribution
(:func:`reward_summary`), how the pulls were spent (:func:`allocation`) and what Thompson's join rule
chose against the best mean reward (:func:`join_gaps`).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
from scipy.special import expit


def _name(unit) -> str:
    """'head3.1' for a unit given as a string, a ``Unit`` or a record's [kind, layer, index]."""
    return unit if isinstance(unit, str) else "{}{}.{}".format(*unit)


def reward_summary(rewards, bins: int = 10) -> dict:
    """Distribution of rewards (any nesting of lists, e.g. ``Selection.rewards``): count, mean,
    quantiles, the fractions of harmful (damage > tau, r < 0.269), neutral and beneficial
    (damage < -tau, r > 0.731) pulls, and a histogram over [0, 1]."""
    r = np.concatenate([np.ravel(np.asarray(x, dtype=float)) for x in rewards]) if len(rewards) else np.array([])
    if r.size == 0:
        return {"n": 0}
    lo, hi = float(expit(-1.0)), float(expit(1.0))
    counts, edges = np.histogram(r, bins=bins, range=(0.0, 1.0))
    q = np.quantile(r, [0.0, 0.25, 0.5, 0.75, 1.0])
    return {"n": int(r.size), "mean": float(r.mean()), "quantiles": dict(zip(("min", "q25", "median", "q75", "max"),
                                                                              map(float, q))),
            "harmful": float((r < lo).mean()), "neutral": float(((r >= lo) & (r <= hi)).mean()),
            "beneficial": float((r > hi).mean()), "histogram": {"edges": edges.tolist(), "counts": counts.tolist()}}


def allocation(units: Sequence, pulled: Sequence[Sequence], memory: str = "persist") -> dict:
    """How a sequential search spent its pulls (``units``: the selection in join order; ``pulled``: the
    units pulled in each step, as :class:`repro.methods.bandit.Selection` or its record keeps them; a unit
    as a string 'head3.1', a ``Unit`` or a record's [kind, layer, index]):
    distinct units pulled per step (mean), pulls per step, pulls per distinct unit over the run (mean and
    most), the share of joins whose unit was pulled in the step it joined (under the joining mask), and
    the pulls a join was decided on (mean): the joined unit's pulls up to its join, or, under ``memory``
    "step", in its step only (greedy: pass "step"); the share of a step's pulls that go to units first pulled
    in that step (the pool's newest entrants, mean over steps), and the share of joins first pulled in the step
    they join."""
    if not pulled:
        return {}
    counts: dict = {}
    for u in (u for step in pulled for u in step):
        counts[u] = counts.get(u, 0) + 1
    key, steps = [_name(u) for u in units], [[_name(u) for u in step] for step in pulled]
    first: dict = {}
    for i, step in enumerate(steps):
        for u in step:
            first.setdefault(u, i)
    return {"distinct_per_step": float(np.mean([len(set(s)) for s in steps])),
            "pulls_per_step": float(np.mean([len(s) for s in steps])),
            "pulls_per_unit": float(np.mean(list(counts.values()))), "most_pulls": int(max(counts.values())),
            "joins_backed": float(np.mean([u in s for u, s in zip(key, steps)])),
            "join_evidence": float(np.mean([s.count(u) if memory == "step" else sum(t.count(u) for t in steps[:i + 1])
                                            for i, (u, s) in enumerate(zip(key, steps))])),
            "to_newcomers": float(np.mean([sum(first[u] == i for u in s) / len(s) for i, s in enumerate(steps) if s])),
            "joins_new": float(np.mean([first.get(u) == i for i, u in enumerate(key)]))}


def join_gaps(units: Sequence, pulled: Sequence[Sequence], rewards: Sequence[Sequence], tau: float,
              memory: str = "persist") -> list[dict]:
    """Thompson's two join rules replayed on a search's record: at each step, among the units that
    could join (``memory`` as in :func:`allocation`; "carry": every pulled unit not yet joined), the unit
    with the best posterior mean ``(1 + sum r) / (2 + n)`` and the one with the best mean reward, with
    their pulls and the difference of their mean damages (nats, ``d = -tau logit(r)``; above 0: the
    posterior's pick is the more damaging). ``units``, ``pulled`` and ``rewards`` as the record keeps
    them (join order; each step's pulled units and their rewards). Ties go to the earlier first pull."""
    out, joined = [], set()
    n: dict = {}
    s: dict = {}
    d: dict = {}
    for step, (unit, names, rs) in enumerate(zip(units, pulled, rewards)):
        if memory == "step":
            n, s, d = {}, {}, {}
        for u, r in zip(map(_name, names), rs):
            r = min(max(float(r), 1e-12), 1 - 1e-12)
            n[u], s[u], d[u] = n.get(u, 0) + 1, s.get(u, 0.0) + r, d.get(u, 0.0) - tau * float(np.log(r / (1 - r)))
        pool = [u for u in (dict.fromkeys(map(_name, names)) if memory != "carry" else n) if u not in joined]
        post = max(pool, key=lambda u: (1 + s[u]) / (2 + n[u]))
        mean = max(pool, key=lambda u: s[u] / n[u])
        out.append({"step": step, "joined": _name(unit), "posterior": post, "mean": mean,
                    "pulls_posterior": n[post], "pulls_mean": n[mean],
                    "damage_gap": d[post] / n[post] - d[mean] / n[mean]})
        joined.add(_name(unit))
    return out
