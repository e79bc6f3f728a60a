"""Damage-aware bandit selection of structured units (Paper 3) and its baselines.

**Units.** A candidate is a typed unit: ``Unit("head", layer, head)`` (an attention head, masked
at its output projection's input) or ``Unit("mlp", layer, group)`` (MLP channels
``[group * g0, (group + 1) * g0)``, g0 = 32 by default; the last group of a layer may be
shorter). The group size lives on the evaluator (``ev.group_size``); one below 1 or above a
layer's channel count is a :class:`~repro.errors.ReproError`.

**Pre-screen and pool.** Every candidate gets a magnitude, the L2 norm of the unit's weights:
a head's Q rows and O columns plus its KV group's K and V rows, whose squares count 1/g to each
of the g heads sharing them (MP-G's sharing); an MLP group's up-side rows (gate and up) and
down-side columns. The sequential searches work on a *pool* of at most ``pool_size`` = 48
lowest-magnitude candidates. *Refresh (our choice):* when a unit joins the mask it leaves the
pool, and the lowest-magnitude candidate that has never been in the pool enters it, with no
statistics. When both kinds are searched together, each kind's scores are divided by that
kind's mean score before ranking (*our choice*: a head and a 32-channel group have different
numbers of weights, so raw norms would fill the pool with one kind).

**Paired damage.** Units that joined stay masked (the *current mask*). At each step a
candidate u is added temporarily and its damage on calibration mini-batch b is
``loss_b(mask + u) - loss_b(mask)``: the same mini-batch on both sides, the mean per-example
loss (token NLL for LMs, cross-entropy for classifiers). One *paired evaluation* (one pull)
averages this over ``batches_per_eval`` = 2 mini-batches, drawn from a seeded stream that
walks through random permutations of the calibration mini-batches.

**Reward (our choice of the smooth bounded map).** ``r = sigmoid(-damage / tau)``, tau = 0.02,
in (0, 1): 0.5 for a neutral removal (damage 0), towards 1 for beneficial removals (the loss
drops), towards 0 for harmful ones. ``|damage| = tau`` gives r = 0.27 / 0.73; these are the
thresholds :func:`reward_summary` uses to count harmful, neutral and beneficial pulls.

**Policies.** Each step spends ``budget`` = 32 pulls on the pool, then the evaluated pool unit
with the best estimate joins the mask; repeat until k units are selected. Never-evaluated pool
units are pulled first, lowest magnitude first.

- MAB-UCB: pull argmax ``mean_r + c sqrt(ln t / n)``, c = 1.5, t = pulls so far in the run,
  n = the unit's pulls; the best empirical mean reward joins.
- Thompson: fractional Beta posterior, prior Beta(1, 1), ``alpha += r``, ``beta += 1 - r`` per
  pull; pull argmax of one Beta draw per unit; the best posterior mean ``(1 + sum r) / (2 + n)`` joins
  (``join="posterior"``, the default), or the best empirical mean reward, as UCB (``join="mean"``).
  The posterior mean shrinks a unit towards the prior's 0.5 less with each pull: where every reward is
  below 0.5, a unit pulled once can outrank one pulled five times with a lower mean damage (the rules
  rarely differ under ``memory="step"``, where pulls are nearly equal; ``join_gaps`` replays them).

**Memory: what a pull keeps counting for.** The paper: "at each step, previously selected units
remain suppressed while a new candidate is temporarily masked ... marginal damage conditioned on the
current selected set", and its policies "allocate repeated evaluations among candidates", with
"unevaluated active candidates ... sampled first when the pull budget permits". Every pull is made
under the current mask; the rules differ in how long its statistics count:

- ``memory="persist"`` (the default): a unit's statistics persist across steps while it stays in the
  pool, so evidence accumulates and the policy may spend repeated pulls where estimates are close or
  uncertain (at c = 1.5 and rewards at tau = 0.02, UCB's bonus outweighs the reward gaps and its pulls mostly
  catch up the pull counts of the pool's newest entrants: notebook 3, sections 3 and 5e); unpulled pool units
  are pulled first; a unit may join only if it was pulled at least once
  under the mask it joins, and among those the best estimate over all its pulls joins. Pulls made under
  earlier, smaller masks still count: where units interact strongly (two redundant units, each harmless
  alone) that stale evidence can outweigh one pull under the new mask (``tests/test_bandit.py``).
- ``memory="step"`` (an ablation): every step starts each pool unit with empty statistics (t counts
  this step's pulls). With a per-step budget below the pool size, UCB then evaluates the step's first
  ``budget`` pool units once each and keeps the least damaging (its bonus is infinite at n = 0): greedy
  in disguise. Thompson draws unpulled units from its Beta(1, 1) prior.
- ``memory="carry"``: ``"persist"`` without the join condition (the rule of this project's earliest
  records): a unit can join on pulls made only under earlier, smaller masks.

:func:`allocation` measures what a search did: distinct units per step, pulls per unit, the share of
joins backed by a pull under the joining mask. Ties go to the earlier pool position.

**Baselines** (``SELECTORS``; one-shot scorers rank every candidate once, on the unmasked
model, and take the k lowest): random; magnitude (the norm above); Wanda-style
(``sum |W| * ||X||`` over the unit's weights, X the inputs of its projections over all
calibration mini-batches); Taylor (``|sum g * w|`` over the unit's weights, g the gradient of
the mean calibration loss); Fisher (``sum_b (sum g_b * w)^2`` over mini-batches b); budgeted
greedy (each step ``budget`` trials on pool units drawn through seeded permutations of the
pool, the lowest mean damage of this step joins); UCB and Thompson. Shared K/V weights count
1/g to each head in every scorer.

**Budget** (:class:`Budget`, as the paper's Table B1 separates them): calibration passes of a
scorer (forward, or forward + backward, over one calibration mini-batch), paired evaluations,
the per-mini-batch candidate losses they consist of, the current mask's losses recomputed after
each change, layer forwards (one decoder/encoder layer on one mini-batch) and seconds.

The losses come from an evaluator (:class:`Evaluator`; ``repro.evaluate.prefix.UnitEvaluator``
computes them exactly with prefix reuse), so this module only decides what to evaluate.
"""
from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, replace
from typing import Callable, Sequence

import numpy as np

from repro.errors import ReproError, UnknownNameError
from repro.methods.bandit_stats import allocation, join_gaps, reward_summary  # noqa: F401 (part of this API)
from repro.methods.registry import Method, Registry
from repro.methods.unit_scores import (  # noqa: F401 (part of this API)
    select_fisher,
    select_magnitude,
    select_random,
    select_taylor,
    select_wanda,
)
from repro.methods.units import (  # noqa: F401 (part of this API)
    TAU,
    Evaluator,
    Selection,
    Unit,
    candidates,
    check_k,
    check_kinds,
    count_pulls,
    finish,
    magnitudes,
    per_kind_normalised,
    reward,
    unit_sums,
)
from repro.structure.masks import KINDS

POOL_SIZE = 48          # pre-screened candidates the sequential searches work on
BUDGET = 32             # paired evaluations per step
UCB_C = 1.5             # UCB exploration constant
BATCHES_PER_EVAL = 2    # mini-batches averaged in one paired evaluation
MEMORY = ("persist", "step", "carry")  # how long a pull's statistics count (the module docstring)


class Pool:
    """The ``size`` lowest-ranked candidates not yet selected; refilled in rank order."""

    def __init__(self, ranked: Sequence[Unit], size: int = POOL_SIZE):
        if size < 1:
            raise ReproError(f"pool size must be positive, got {size}")
        self._queue = list(ranked)
        self.members: list[Unit] = self._queue[:size]
        self._next = len(self.members)

    def remove(self, unit: Unit) -> Unit | None:
        """``unit`` leaves; the next candidate in rank order enters (returned, None if none left)."""
        self.members.remove(unit)
        if self._next < len(self._queue):
            self.members.append(self._queue[self._next])
            self._next += 1
            return self.members[-1]
        return None


class BatchStream:
    """Mini-batch indices for successive paired evaluations: ``per_eval`` at a time, walking
    through seeded random permutations of ``range(n_batches)`` (so every mini-batch is used
    equally often, in an order the seed decides)."""

    def __init__(self, n_batches: int, per_eval: int, rng: np.random.Generator):
        if per_eval < 1 or n_batches < per_eval:
            raise ReproError(f"a paired evaluation averages {per_eval} mini-batches; the calibration set has "
                             f"{n_batches}")
        self.n, self.per_eval, self.rng = n_batches, per_eval, rng
        self._order: list[int] = []

    def next(self) -> list[int]:
        out = []
        while len(out) < self.per_eval:
            if not self._order:
                self._order = self.rng.permutation(self.n).tolist()
            b = self._order.pop(0)
            if b in out:  # a permutation boundary: keep the two batches of one evaluation distinct
                self._order.append(b)
                continue
            out.append(b)
        return out


@dataclass
class Arm:
    n: int = 0
    reward_sum: float = 0.0
    damage_sum: float = 0.0

    @property
    def mean_reward(self) -> float:
        return self.reward_sum / self.n

    @property
    def mean_damage(self) -> float:
        return self.damage_sum / self.n

    @property
    def alpha(self) -> float:
        return 1.0 + self.reward_sum

    @property
    def beta(self) -> float:
        return 1.0 + self.n - self.reward_sum


class UCB:
    """MAB-UCB: pull argmax mean_r + c sqrt(ln t / n); the best empirical mean joins."""
    name = "ucb"
    pulls_unpulled_first = True  # the bonus is infinite at n = 0

    def __init__(self, c: float = UCB_C):
        self.c = c

    def bonus(self, n: int, t: int) -> float:
        """The exploration bonus of a unit pulled ``n`` times after ``t`` pulls in the run: c sqrt(ln t / n)."""
        return self.c * math.sqrt(math.log(max(t, 1)) / n)

    def choose(self, pool: list[Unit], arms: dict[Unit, Arm], t: int, rng: np.random.Generator) -> Unit:
        return pool[int(np.argmax([arms[u].mean_reward + self.bonus(arms[u].n, t) for u in pool]))]

    def best(self, pool: list[Unit], arms: dict[Unit, Arm]) -> Unit:
        return pool[int(np.argmax([arms[u].mean_reward for u in pool]))]


JOINS = ("posterior", "mean")  # Thompson's join rule: best posterior mean, or best empirical mean reward


class Thompson:
    """Fractional-Beta Thompson sampling: Beta(1 + sum r, 1 + sum (1 - r)) per unit; pull argmax
    of one draw each; the best posterior mean joins (``join="mean"``: the best mean reward)."""
    name = "thompson"
    pulls_unpulled_first = False  # an unpulled unit's draw comes from the prior

    def __init__(self, join: str = "posterior"):
        if join not in JOINS:
            raise UnknownNameError("Thompson join rule", join, JOINS)
        self.join = join

    def choose(self, pool: list[Unit], arms: dict[Unit, Arm], t: int, rng: np.random.Generator) -> Unit:
        return pool[int(np.argmax(rng.beta([arms[u].alpha for u in pool], [arms[u].beta for u in pool])))]

    def best(self, pool: list[Unit], arms: dict[Unit, Arm]) -> Unit:
        value = (lambda a: a.mean_reward) if self.join == "mean" else (lambda a: a.alpha / (a.alpha + a.beta))
        return pool[int(np.argmax([value(arms[u]) for u in pool]))]


def _join(sel: Selection, ev: Evaluator, unit: Unit, damage: float, rewards: list[float], pulled: list[Unit],
          t0: float) -> None:
    """End of a sequential step: ``unit`` joins the mask; the step's damage estimate, rewards,
    pulls and the budget spent so far are recorded."""
    ev.add(unit)
    sel.units.append(unit)
    sel.damages.append(damage)
    sel.rewards.append(rewards)
    sel.pulled.append(pulled)
    sel.steps.append(asdict(replace(ev.budget, seconds=time.perf_counter() - t0)))


def _rngs(seed: int) -> tuple[np.random.Generator, np.random.Generator]:
    """Independent generators for the mini-batch stream and the policy."""
    a, b = np.random.SeedSequence(seed).spawn(2)
    return np.random.default_rng(a), np.random.default_rng(b)


def batch_stream(ev: Evaluator, seed: int, batches_per_eval: int = BATCHES_PER_EVAL) -> BatchStream:
    """The mini-batch stream of a sequential search with ``seed``: the same mini-batches, pull after pull, in every
    search of that seed (and in :func:`repro.methods.replay.replay_joins`)."""
    return BatchStream(ev.n_batches, batches_per_eval, _rngs(seed)[0])


def _check_budget(budget: int) -> None:
    if isinstance(budget, bool) or not isinstance(budget, (int, np.integer)) or budget < 1:
        raise ReproError(f"the per-step budget must be a positive integer, got {budget!r}")


def _start(ev: Evaluator, units: Sequence[Unit], ranking: np.ndarray, k: int, seed: int, budget: int,
           pool_size: int, batches_per_eval: int):
    """What every sequential search starts from: checked arguments, an empty mask, the seeded
    mini-batch stream, the pool of the ``pool_size`` lowest-ranked units, and the search's own rng."""
    check_k(k, len(units))
    _check_budget(budget)
    t0 = time.perf_counter()
    ev.reset()
    stream, search_rng = batch_stream(ev, seed, batches_per_eval), _rngs(seed)[1]
    pool = Pool([units[i] for i in np.argsort(ranking, kind="stable")], pool_size)
    return t0, stream, pool, search_rng


def bandit_search(ev: Evaluator, units: Sequence[Unit], ranking: np.ndarray, k: int, policy, seed: int = 0,
                  budget: int = BUDGET, pool_size: int = POOL_SIZE, tau: float = TAU,
                  batches_per_eval: int = BATCHES_PER_EVAL, memory: str = "persist") -> Selection:
    """The sequential bandit over ``units`` pre-screened by ``ranking`` (lowest first); ``memory``
    as in the module's docstring."""
    if memory not in MEMORY:
        raise ReproError(f"memory must be one of {', '.join(MEMORY)}, got {memory!r}")
    t0, stream, pool, policy_rng = _start(ev, units, ranking, k, seed, budget, pool_size, batches_per_eval)
    arms = {u: Arm() for u in pool.members}
    sel = Selection(policy.name, [], ev.budget)
    unpulled_first = memory != "step" or policy.pulls_unpulled_first
    t = 0
    for _ in range(k):
        if memory == "step":  # only pulls under the current mask count
            arms, t = {u: Arm() for u in pool.members}, 0
        step, pulled = [], []
        now = {u: Arm() for u in pool.members}  # this step's pulls, under the current mask
        for _ in range(budget):
            fresh = [u for u in pool.members if arms[u].n == 0] if unpulled_first else []
            u = fresh[0] if fresh else policy.choose(pool.members, arms, t, policy_rng)
            d = ev.damage(u, stream.next())
            r = float(reward(d, tau))
            for arm in (arms[u], now[u]):
                arm.n += 1
                arm.reward_sum += r
                arm.damage_sum += d
            step.append(r)
            pulled.append(u)
            t += 1
        may_join = [u for u in pool.members if (arms if memory == "carry" else now)[u].n > 0]
        best = policy.best(may_join, arms)  # on every pull it has had in the pool ("step": this step's only)
        _join(sel, ev, best, arms.pop(best).mean_damage, step, pulled, t0)
        entered = pool.remove(best)
        if entered is not None:
            arms[entered] = Arm()
    sel.pulls = count_pulls(sel.pulled)
    return finish(sel, ev, t0)


GREEDY_MEMORY = ("step", "persist")  # what budgeted greedy's trials count for (see greedy_search)


def greedy_search(ev: Evaluator, units: Sequence[Unit], ranking: np.ndarray, k: int, seed: int = 0,
                  budget: int = BUDGET, pool_size: int = POOL_SIZE, tau: float = TAU,
                  batches_per_eval: int = BATCHES_PER_EVAL, memory: str = "step") -> Selection:
    """Budgeted greedy: each step exactly ``budget`` trials on pool units (seeded permutations of
    the pool, repeated when the budget exceeds it); the lowest mean damage of the step joins.

    ``memory="persist"`` (*our control*, the greedy-with-memory search): a unit's trials keep counting across
    steps while it stays in the pool, under the bandits' ``persist`` rule (only a unit tried under the mask it
    joins may join; among those the lowest mean damage over all its trials joins). The trials are spread exactly
    as plain greedy spreads them (the same seeded permutations), so against plain greedy it isolates memory, and
    against the bandits at the same budget it isolates adaptive allocation."""
    if memory not in GREEDY_MEMORY:
        raise ReproError(f"greedy memory must be one of {', '.join(GREEDY_MEMORY)}, got {memory!r}")
    t0, stream, pool, trial_rng = _start(ev, units, ranking, k, seed, budget, pool_size, batches_per_eval)
    sel = Selection("greedy" if memory == "step" else "greedy-memory", [], ev.budget)
    kept: dict[Unit, list[float]] = {}  # every trial a pool unit has had ("step": this step's only)
    for _ in range(k):
        if memory == "step":
            kept = {}
        order: list[Unit] = []
        pulled: list[Unit] = []
        trials: dict[Unit, list[float]] = {}  # this step's trials, under the current mask
        for _ in range(budget):
            if not order:
                order = [pool.members[i] for i in trial_rng.permutation(len(pool.members))]
            u = order.pop(0)
            d = ev.damage(u, stream.next())
            trials.setdefault(u, []).append(d)
            kept.setdefault(u, []).append(d)
            pulled.append(u)
        tried = [u for u in pool.members if u in trials]
        best = tried[int(np.argmin([np.mean(kept[u]) for u in tried]))]
        _join(sel, ev, best, float(np.mean(kept.pop(best))),
              [float(r) for ds in trials.values() for r in reward(ds, tau)], pulled, t0)
        pool.remove(best)
    sel.pulls = count_pulls(sel.pulled)
    return finish(sel, ev, t0)


# ---- one-shot scorers ---------------------------------------------------------------------------

def _sequential(run: Callable) -> Callable:
    def select(ev: Evaluator, k: int, kinds=KINDS, seed: int = 0, **params) -> Selection:
        units = candidates(ev.adapter, kinds, ev.group_size)
        ranking = per_kind_normalised(units, magnitudes(ev.adapter, units, ev.group_size))
        return run(ev, units, ranking, k, seed=seed, **params)
    select.__doc__ = run.__doc__
    return select


def _ucb(ev, units, ranking, k, seed=0, c: float = UCB_C, **params) -> Selection:
    """MAB-UCB over the magnitude pool."""
    return bandit_search(ev, units, ranking, k, UCB(c), seed, **params)


def _thompson(ev, units, ranking, k, seed=0, join: str = "posterior", **params) -> Selection:
    """Fractional-Beta Thompson sampling over the magnitude pool."""
    return bandit_search(ev, units, ranking, k, Thompson(join), seed, **params)


def _greedy_memory(ev, units, ranking, k, seed=0, memory: str = "persist", **params) -> Selection:
    """Budgeted greedy whose trials persist across steps (:func:`greedy_search`'s ``memory``): our control."""
    return greedy_search(ev, units, ranking, k, seed, memory=memory, **params)


select_ucb, select_thompson, select_greedy = _sequential(_ucb), _sequential(_thompson), _sequential(greedy_search)
select_greedy_memory = _sequential(_greedy_memory)


_SEQ = {"budget": BUDGET, "pool_size": POOL_SIZE, "tau": TAU, "batches_per_eval": BATCHES_PER_EVAL}
_MAB = _SEQ | {"memory": "persist"}
SELECTORS = Registry("unit selector", [
    Method("random", "Random", select_random),
    Method("magnitude", "Magnitude", select_magnitude),
    Method("wanda", "Wanda-style", select_wanda, calibration="activations"),
    Method("taylor", "Taylor", select_taylor, calibration="gradients"),
    Method("fisher", "Fisher", select_fisher, calibration="gradients"),
    Method("greedy", "Budgeted greedy", select_greedy, _SEQ, calibration="losses"),
    Method("greedy-memory", "Greedy, memory kept", select_greedy_memory, _SEQ | {"memory": "persist"},
           calibration="losses"),
    Method("ucb", "MAB-UCB", select_ucb, _MAB | {"c": UCB_C}, calibration="losses"),
    Method("thompson", "MAB-TS", select_thompson, _MAB | {"join": "posterior"}, calibration="losses"),
])


def get_selector(name: str) -> Method:
    return SELECTORS[name]


def select_units(name: str, ev: Evaluator, k: int, kinds=KINDS, seed: int = 0, **params) -> Selection:
    """Run selector ``name`` for ``k`` units of ``kinds`` on evaluator ``ev`` (which it resets).
    A parameter the selector does not take is an error."""
    s = SELECTORS[name]
    sel = s.impl(ev, k, kinds=kinds, seed=seed, **s.check_params(params, "unit selector"))
    sel.params = {"k": int(k), "kinds": list(check_kinds(kinds)), "seed": seed, "group_size": ev.group_size,
                  **s.defaults, **params}
    return sel
