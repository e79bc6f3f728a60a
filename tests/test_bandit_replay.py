"""Issue 49's search-precision replay (:mod:`repro.methods.replay`) and the sections that ask for it and for the
exploration-constant ablation."""
from __future__ import annotations

import copy
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from repro.errors import ReproError
from repro.evaluate.prefix import UnitEvaluator, lm_batches
from repro.methods.bandit import select_units
from repro.methods.replay import changed_joins, replay_joins
from repro.methods.units import Unit

from conftest import one_thread_context
from helpers import build_tiny

one_thread = pytest.fixture(autouse=True, scope="module")(one_thread_context)


@pytest.fixture(scope="module")
def llama():
    return build_tiny("tiny-llama")


def batches(n: int = 4) -> list[dict]:
    g = torch.Generator().manual_seed(3)
    return lm_batches(torch.randint(4, 260, (2 * n, 12), generator=g), 2)


def replayed(ev, sel, method, params):
    return replay_joins(ev, sel.units, sel.pulled, method, 1, {**sel.params, **params})


@pytest.mark.parametrize("method, params", [("greedy", {}), ("greedy-memory", {}), ("ucb", {}),
                                            ("thompson", {}), ("thompson", {"join": "mean"}),
                                            ("ucb", {"memory": "carry"}), ("ucb", {"memory": "step"})])
def test_a_replay_at_the_search_precision_repeats_every_join(llama, method, params):
    """Replayed in the dtype it was searched in, a search's pulls give back its own damages and its own joins:
    the same mini-batches pull after pull, the same mask at each step and the method's own join rule (a wrong
    stream, mask or rule changes joins or damages)."""
    with UnitEvaluator(llama, batches()) as ev:
        sel = select_units(method, ev, 4, kinds=("head", "mlp"), seed=1, budget=5, pool_size=6, **params)
        out = replayed(ev, sel, method, params)
    assert changed_joins(out) == 0
    assert [s["joined"] for s in out["steps"]] == [str(u) for u in sel.units]
    assert [len(s["damages"]) for s in out["steps"]] == [len(p) for p in sel.pulled]
    if method in ("ucb", "thompson"):  # the bandits record their rewards in pull order
        np.testing.assert_allclose(np.concatenate(out["rewards"]), np.concatenate(sel.rewards), rtol=1e-6)
    if method in ("greedy", "greedy-memory"):  # the joining unit has the lowest mean damage: margins are >= 0
        assert all(np.isnan(st["margin"]) or st["margin"] >= 0 for st in out["steps"])


def test_a_replay_in_another_precision_counts_the_joins_it_would_change(llama):
    """Replayed in bfloat16, a float32 search's damages move but stay paired with the float32 replay's (the same
    pulls, mini-batches and masks); each step says what would have joined."""
    with UnitEvaluator(llama, batches()) as ev:
        sel = select_units("greedy", ev, 6, kinds=("mlp",), seed=1, budget=6, pool_size=8)
        same = replayed(ev, sel, "greedy", {})
    with UnitEvaluator(copy.deepcopy(llama).to(torch.bfloat16), batches()) as ev:
        out = replayed(ev, sel, "greedy", {})
    ours, theirs = (np.concatenate([st["damages"] for st in o["steps"]]) for o in (out, same))
    assert len(ours) == 36 and not np.array_equal(ours, theirs)  # the precision moves the damages
    assert np.corrcoef(ours, theirs)[0, 1] > 0.9  # the same pulls on the same mini-batches and masks
    assert changed_joins(out) == sum(st["joined"] != st["replayed"] for st in out["steps"])


def test_replay_refuses_a_record_whose_pulls_do_not_match_its_units(llama):
    with UnitEvaluator(llama, batches()) as ev:
        with pytest.raises(ReproError, match="one list of pulls per joined unit"):
            replay_joins(ev, [Unit("head", 0, 0)], [], "greedy", 1, {})
        with pytest.raises(ReproError, match="no join rule to replay for 'wanda'"):
            replay_joins(ev, [], [], "wanda", 1, {})


def test_unit_names_round_trip():
    for u in (Unit("head", 3, 1), Unit("mlp", 17, 26)):
        assert Unit.of(str(u)) == u == Unit.of(list(u))
    with pytest.raises(ReproError, match="not a unit name"):
        Unit.of("mlp17")


PARAMS = {"models": ["m"], "unit_settings": {"m": {"head": [0.1], "mlp": [0.03, 0.05]}}, "methods": ["ucb"],
          "seeds": [1, 2], "search": {"budget": 8, "pool_size": 16}, "lambada_limit": None, "vision_models": [],
          "vision_ratio": 0.1, "vision_methods": ["ucb"], "vision_search": {}, "memory": "persist",
          "memory_ablation": False, "join": "posterior", "join_ablation": False, "wide_search": {}, "removal": None,
          "seqlen": 8}


def grid_of(**changes):
    from repro.papers.bandit.grid import BanditGrid
    from repro.papers.bandit.params import BanditParams

    grid = BanditGrid.__new__(BanditGrid)
    asks = SimpleNamespace(grid=SimpleNamespace(ask=lambda *a: ("grid", *a)),
                           replay=SimpleNamespace(ask=lambda *a: ("replay", *a)))
    grid.lm, grid.vision, grid.p = {"m": asks}, {}, BanditParams.of({**PARAMS, **changes})
    return grid


def test_the_exploration_ablation_runs_ucb_again_per_constant_on_the_ablation_settings():
    """Section 5e asks, per (kind, c), MAB-UCB's grid on that kind's ablation ratios with c in its search
    parameters (the seeds, budget, pool and memory of the grid); no constants: no cell."""
    from repro.papers.bandit.grid import BanditGrid

    grid = grid_of(ucb_c_ablation={"m": {"mlp": [0.4, 0.1]}}, ablation_settings={"m": {"mlp": [0.03]}})
    calls = list(BanditGrid.exploration_ablation.steps(grid))
    search = {"budget": 8, "pool_size": 16, "memory": "persist"}
    assert calls == [("grid", {"mlp": [0.03]}, ["ucb"], [1, 2], {**search, "c": c}, None) for c in (0.4, 0.1)]
    assert list(BanditGrid.exploration_ablation.steps(grid_of())) == []


def test_the_precision_replay_asks_for_each_named_search_as_the_grid_ran_it():
    from repro.papers.bandit.grid import BanditGrid

    grid = grid_of(search_replay=[{"model": "m", "kind": "mlp", "ratio": 0.05, "method": "ucb", "seed": 2},
                                  {"model": "m", "kind": "head", "ratio": 0.1, "method": "greedy", "seed": 1}])
    calls = list(BanditGrid.precision_replay.steps(grid))
    assert calls == [("replay", "ucb", ["mlp"], 0.05, 2, {"budget": 8, "pool_size": 16, "memory": "persist"}),
                     ("replay", "greedy", ["head"], 0.1, 1, {"budget": 8, "pool_size": 16})]


@pytest.mark.parametrize("changes, message", [
    ({"ucb_c_ablation": {"x": {"head": [0.2]}}}, r"ucb_c_ablation\['x'\] must map unit kinds of a model"),
    ({"ucb_c_ablation": {"m": {"ffn": [0.2]}}}, "unknown unit kind in ucb_c_ablation 'ffn'"),
    ({"ucb_c_ablation": {"m": {"head": [-1]}}}, r"ucb_c_ablation\['m'\]\['head'\]"),
    ({"search_replay": [{"model": "m", "kind": "mlp", "ratio": 0.08, "method": "ucb", "seed": 1}]},
     r"search_replay\[0\] must name a setting and seed of the grid"),
    ({"search_replay": [{"model": "m", "kind": "mlp", "ratio": 0.05, "method": "wanda", "seed": 1}]},
     r"search_replay\[0\]: 'wanda' is not a sequential search"),
    ({"search_replay": [{"model": "m", "kind": "mlp"}]}, r"search_replay\[0\] must name kind, method, model"),
])
def test_the_new_parameters_are_checked_before_any_model_loads(changes, message):
    from repro.papers.bandit.params import BanditParams

    with pytest.raises(ReproError, match=message):
        BanditParams.of({**PARAMS, **changes})
