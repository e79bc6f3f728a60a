"""Paper 3's engine: in-place masks, exact prefix reuse, the bandit policies, baselines, budgets.

Tiny models only. Everything runs on one thread (restored afterwards): on tiny models a second
thread only adds synchronisation, which dominates on a busy machine.
"""
import numpy as np
import pytest
import torch

from repro.arch import adapter
from repro.calib import Calibration, image_windows, input_sumsq
from repro.calib.blocks import InputSumSq
from repro.calib.budget import Budget
from repro.errors import ReproError, UnknownNameError
from repro.evaluate.prefix import UnitEvaluator, example_loss, image_batches, lm_batches, token_nll
from repro.methods.bandit import (
    SELECTORS,
    UCB,
    Pool,
    Thompson,
    Unit,
    allocation,
    bandit_search,
    candidates,
    greedy_search,
    magnitudes,
    reward,
    reward_summary,
    select_units,
)
from repro.methods.heads import score_heads
from repro.structure.masks import MaskError, Masks, group_range, n_groups

from conftest import one_thread_context
from helpers import build_tiny, channel_masks, head_mask, inputs, output

LMS = ["tiny-llama", "tiny-qwen2", "tiny-mistral", "tiny-gemma3", "tiny-gpt2", "tiny-opt", "tiny-neox"]
VISION = ["tiny-vit", "tiny-deit"]


one_thread = pytest.fixture(autouse=True, scope="module")(one_thread_context)


def calib(name: str, n_batches: int = 2) -> list[dict]:
    g = torch.Generator().manual_seed(7)
    if name in VISION:
        return image_batches(torch.randn(3 * n_batches, 1, 28, 28, generator=g),
                             torch.randint(0, 10, (3 * n_batches,), generator=g), 3)
    return lm_batches(torch.randint(4, 260, (2 * n_batches, 12), generator=g), 2)


def reference_loss(model, batch: dict, heads: torch.Tensor, chans: list[torch.Tensor]) -> float:
    """The model's own loss (HF ``labels=``) under masks built from scratch with the whole-mask setters."""
    kw = dict(batch) if "labels" in batch else {"input_ids": batch["input_ids"], "labels": batch["input_ids"]}
    with Masks(adapter(model)) as m, torch.no_grad():
        m.heads, m.channels = heads, chans
        return float(model(**kw).loss)


def scratch_masks(ad, units, g0: int):
    heads = head_mask(ad.n_layers, ad.attention(0).n_heads, [(u.layer, u.index) for u in units if u.kind == "head"])
    off: dict = {}
    for u in units:
        if u.kind == "mlp":
            off.setdefault(u.layer, []).extend(group_range(ad.mlp(u.layer).n_channels, g0, u.index))
    return heads, channel_masks([ad.mlp(i).n_channels for i in range(ad.n_layers)], off)


# ---- prefix reuse is exact -------------------------------------------------------------------

@pytest.mark.parametrize("name", LMS + VISION)
def test_prefix_damage_equals_full_forward(name):
    """For every family, heads and MLP groups in every layer, with a current mask of two units
    (one in the last layer, one in the first, so the cache is recomputed from layer 0 after the
    second): the prefix-reuse damage equals a full forward's, and both equal the model's own
    loss under masks built from scratch. The prefix path runs L - l layers for a unit of layer l."""
    model, g0 = build_tiny(name), 32
    batches = calib(name)
    ad = adapter(model)
    L = ad.n_layers
    committed = [Unit("mlp", L - 1, 0), Unit("head", 0, 1)]
    probe = [Unit(k, i, j) for i in range(L) for k, j in (("head", 2), ("mlp", 1))]
    got = {}
    for prefix in (True, False):
        with UnitEvaluator(model, batches, group_size=g0, prefix=prefix) as ev:
            ev.add(committed[0])
            ev.loss(0)  # build the cache under the first unit, so the second one makes it stale
            ev.add(committed[1])
            got[prefix] = [ev.damage(u, [0, 1]) for u in probe]
            before = ev.budget.layer_forwards
            ev.loss(1, Unit("head", L - 1, 0))
            assert ev.budget.layer_forwards - before == (1 if prefix else L)
    base = [reference_loss(model, b, *scratch_masks(ad, committed, g0)) for b in batches]
    ref = [np.mean([reference_loss(model, b, *scratch_masks(ad, committed + [u], g0)) - base[i]
                    for i, b in enumerate(batches)]) for u in probe]
    np.testing.assert_allclose(got[True], got[False], rtol=0, atol=1e-5)
    np.testing.assert_allclose(got[True], ref, rtol=0, atol=1e-5)
    assert np.abs(ref).max() > 1e-4, "the probed units must change the loss"
    assert len(set(np.round(ref, 7))) == len(ref), "different units, different damages"


def test_per_example_losses():
    model = build_tiny("tiny-llama")
    b = calib("tiny-llama")[0]
    with torch.no_grad():
        out = model(input_ids=b["input_ids"], labels=b["input_ids"])
    nll = token_nll(out.logits, b["input_ids"])
    assert nll.shape == (2, 11)
    torch.testing.assert_close(example_loss(out.logits, b), nll.mean(1))
    torch.testing.assert_close(nll.mean(), out.loss, rtol=1e-6, atol=1e-6)
    vit = build_tiny("tiny-vit")
    v = calib("tiny-vit")[0]
    with torch.no_grad():
        o = vit(**v)
    per = example_loss(o.logits, v)
    assert per.shape == (3,)
    torch.testing.assert_close(per.mean(), o.loss, rtol=1e-6, atol=1e-6)
    with pytest.raises(ReproError):
        example_loss(o.logits, {"pixel_values": v["pixel_values"]})


# ---- masks in place ----------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["tiny-llama", "tiny-gpt2"])
def test_inplace_masks_equal_masks_from_scratch(name):
    model = build_tiny(name)
    ad = adapter(model)
    kw = inputs(name)
    L, H = ad.n_layers, ad.attention(0).n_heads
    C = [ad.mlp(i).n_channels for i in range(L)]
    dense = output(model, kw)
    with Masks(ad) as m:
        m.set_head(0, 1, False)
        m.set_head(2, 3, 0)
        m.set_head(2, 0, False)
        m.set_head(2, 0, True)          # switched back on
        m.set_channels(1, [3, 5, 8], False)
        m.set_unit("mlp", 0, 1, False, group_size=32)
        m.set_unit("head", 1, 2, False)
        inplace = output(model, kw)
        feats = {k: v.clone() for k, v in m._feat.items() if v is not None}
        state_h, state_c = m.heads, m.channels
        heads = head_mask(L, H, [(0, 1), (2, 3), (1, 2)])
        chans = channel_masks(C, {1: [3, 5, 8], 0: list(range(32, 64))})
        m.heads, m.channels = heads, chans      # whole masks replace the in-place state
        scratch = output(model, kw)
        assert m.heads is heads and m.channels is chans
        for key, f in feats.items():
            torch.testing.assert_close(m._feat[key], f, rtol=0, atol=0)
        m.heads = m.channels = None
        m.set_head(1, 0, False)         # in place from an empty mask: other layers stay unmasked
        assert m.heads[0].tolist() == [1.0] * H and m.heads[1].tolist() == [0.0] + [1.0] * (H - 1)
    torch.testing.assert_close(inplace, scratch, rtol=0, atol=0)
    assert not torch.allclose(inplace, dense, atol=1e-4)
    torch.testing.assert_close(torch.stack(state_h), heads, rtol=0, atol=0)
    for a, b in zip(state_c, chans):
        torch.testing.assert_close(a, b, rtol=0, atol=0)


def test_mask_errors():
    model = build_tiny("tiny-llama")
    ad = adapter(model)
    L, H, C = ad.n_layers, ad.attention(0).n_heads, ad.mlp(0).n_channels
    with Masks(ad) as m:
        for bad in (torch.ones(L - 1, H), torch.ones(L, H + 1), torch.full((L, H), 0.5), 2 * torch.ones(L, H)):
            with pytest.raises(MaskError):
                m.heads = bad
        with pytest.raises(MaskError):
            m.channels = [torch.ones(C)] * (L - 1)
        with pytest.raises(MaskError):
            m.channels = [torch.ones(C + 1)] + [torch.ones(C)] * (L - 1)
        m.heads = torch.ones(L, H).int()   # integer and bool 0/1 masks are fine
        m.channels = [torch.ones(C, dtype=torch.bool)] * L
        bad_calls = [lambda: m.set_head(L, 0, False), lambda: m.set_head(0, H, False), lambda: m.set_head(-1, 0, 0),
                     lambda: m.set_head(0, 0, 0.5), lambda: m.set_head(0, 0, 2), lambda: m.set_head(0, 1.0, 0),
                     lambda: m.set_channels(0, [C], False), lambda: m.set_channels(0, [], False),
                     lambda: m.set_unit("attn", 0, 0, False), lambda: m.set_unit("mlp", 0, 3, False, group_size=32),
                     lambda: m.set_unit("mlp", 0, 0, False, group_size=0),
                     lambda: m.set_unit("mlp", 0, 0, False, group_size=C + 1)]
        for call in bad_calls:
            with pytest.raises(MaskError):
                call()
        assert all(f is None or bool(f.eq(1).all()) for f in m._feat.values()), "failed calls change nothing"
    assert isinstance(MaskError("x"), ReproError)


def test_group_sizes():
    assert n_groups(96, 32) == 3 and n_groups(48, 32) == 2 and n_groups(5, 1) == 5
    assert group_range(48, 32, 1) == range(32, 48)  # the last group is shorter
    vit = adapter(build_tiny("tiny-vit"))  # 48 MLP channels
    assert [u for u in candidates(vit, ("mlp",), 32)] == [Unit("mlp", i, g) for i in range(2) for g in range(2)]
    llama = build_tiny("tiny-llama")  # 96 MLP channels
    for g0 in (0, -1, 97, 2.0, True):
        with pytest.raises(ReproError):
            candidates(adapter(llama), ("mlp",), g0)
        with pytest.raises(ReproError):
            UnitEvaluator(llama, calib("tiny-llama"), group_size=g0)
    with pytest.raises(UnknownNameError):
        candidates(adapter(llama), ("heads",), 32)


# ---- policies on a synthetic bandit ---------------------------------------------------------

class FakeEvaluator:
    """A damage oracle with known per-arm means and Gaussian noise; ignores the mask."""

    def __init__(self, means: dict, noise: float, seed: int, n_batches: int = 4):
        self.means, self.noise = means, noise
        self.rng = np.random.default_rng(seed)
        self.n_batches, self.group_size = n_batches, 32
        self.pulled, self.batches_seen, self.added = [], [], []
        self.budget = Budget()

    def reset(self):
        self.budget, self.added = Budget(), []

    def add(self, unit):
        self.added.append(unit)

    def damage(self, unit, batches):
        self.budget.paired_evaluations += 1
        self.pulled.append(unit)
        self.batches_seen.append(tuple(batches))
        return float(self.means[unit] + self.noise * self.rng.standard_normal())


def synthetic(n_arms: int, best: list[int], seed: int):
    units = [Unit("head", 0, i) for i in range(n_arms)]
    means = {u: 0.01 + 0.04 * (i / n_arms) for i, u in enumerate(units)}
    for i in best:
        means[units[i]] = -0.02
    return units, FakeEvaluator(means, noise=0.015, seed=seed)


@pytest.mark.parametrize("policy", [UCB(), Thompson()], ids=["ucb", "thompson"])
def test_policies_find_the_best_arms(policy):
    """20 arms, three beneficial (damage -0.02) among harmful ones (0.01..0.05), noise sd 0.015;
    the magnitude ranking puts the good arms last. Both policies select exactly the three in at
    least 18 of 20 seeded runs; choosing uniformly at random would almost never."""
    best = [13, 17, 19]
    hits = 0
    for seed in range(20):
        units, ev = synthetic(20, best, seed)
        sel = bandit_search(ev, units, np.arange(20), k=3, policy=policy, seed=seed, budget=32, pool_size=48)
        hits += sorted(u.index for u in sel.units) == best
        assert ev.added == sel.units and len(set(sel.units)) == 3
    assert hits >= 18, f"{policy.name} found the best arms in {hits}/20 runs"


@pytest.mark.parametrize("policy", [UCB(), Thompson()], ids=["ucb", "thompson"])
def test_unevaluated_arms_are_pulled_first_when_statistics_carry_over(policy):
    """memory="carry": 40 arms in a pool of 48, 32 pulls per step: step 1 pulls arms 0..31 once
    each in ranking order; step 2 first pulls the 8 arms never evaluated, then repeats."""
    units, ev = synthetic(40, [5], seed=0)
    ranking = np.arange(40)[::-1].copy()  # lowest score = highest index: the pool order is 39, 38, ...
    sel = bandit_search(ev, units, ranking, k=2, policy=policy, seed=0, budget=32, pool_size=48, memory="carry")
    order = [u.index for u in ev.pulled]
    assert order[:32] == list(range(39, 7, -1))
    assert order[32:40] == list(range(7, -1, -1))
    assert len(set(order[:40])) == 40
    assert sel.units[0].index != sel.units[1].index


def test_step_memory_starts_every_step_afresh():
    """memory="step" (an ablation): UCB pulls the pool in order again at step 2 (its earlier pulls
    no longer count), and Thompson draws unpulled units from its prior instead of pulling them in
    pool order."""
    units, ev = synthetic(40, [5], seed=0)
    ranking = np.arange(40)[::-1].copy()
    sel = bandit_search(ev, units, ranking, k=2, policy=UCB(), seed=0, budget=32, pool_size=48, memory="step")
    order = [u.index for u in ev.pulled]
    first = sel.units[0].index
    assert order[:32] == list(range(39, 7, -1))
    assert order[32:] == [i for i in range(39, -1, -1) if i != first][:32]
    units, ev = synthetic(40, [5], seed=0)
    bandit_search(ev, units, ranking, k=2, policy=Thompson(), seed=0, budget=32, pool_size=48, memory="step")
    assert [u.index for u in ev.pulled][:32] != list(range(39, 7, -1))


class MaskAwareEvaluator(FakeEvaluator):
    """Arms 0 and 1 are each beneficial alone (damage -0.03) but redundant: once one is in the mask
    the other's damage is +0.05; arms 2..5 cost 0.01..0.02 whatever the mask."""

    def damage(self, unit, batches):
        d = super().damage(unit, batches)
        if unit.index in (0, 1) and any(a.index in (0, 1) for a in self.added):
            d += 0.08
        return d


def redundant_pair(seed: int):
    units = [Unit("head", 0, i) for i in range(6)]
    means = {u: (-0.03 if i < 2 else 0.01 + 0.0025 * i) for i, u in enumerate(units)}
    return units, MaskAwareEvaluator(means, noise=0.002, seed=seed)


@pytest.mark.parametrize("policy", [UCB(), Thompson()], ids=["ucb", "thompson"])
def test_damage_is_conditioned_on_the_current_mask(policy):
    """Under memory="step" every joined unit was pulled in the step it joined, its recorded damage is
    the mean of that step's pulls, and the redundant partner of the first pick never joins second
    (its damage under the current mask is +0.05). Under "persist" (the default) every join is backed
    by a pull under its mask too, but the partner's stale estimate from the empty mask still counts
    and makes it join second in several seeds (UCB 10, Thompson at least 3 of these 10), as under
    "carry": the price of accumulating evidence across steps, which the ablation measures."""
    stale = {"persist": 0, "carry": 0}
    for seed in range(10):
        units, ev = redundant_pair(seed)
        sel = bandit_search(ev, units, np.arange(6), k=2, policy=policy, seed=seed, budget=8, pool_size=6,
                            memory="step")
        assert {sel.units[0].index, sel.units[1].index} != {0, 1}
        for unit, pulled in zip(sel.units, sel.pulled):
            assert unit in pulled
        for memory in stale:
            units, ev = redundant_pair(seed)
            sel = bandit_search(ev, units, np.arange(6), k=2, policy=policy, seed=seed, budget=8, pool_size=6,
                                memory=memory)
            stale[memory] += {sel.units[0].index, sel.units[1].index} == {0, 1}
            if memory == "persist":
                assert all(unit in pulled for unit, pulled in zip(sel.units, sel.pulled))
    assert min(stale.values()) >= 3, f"stale evidence joined the redundant pair in {stale} of 10 runs"


@pytest.mark.parametrize("policy", [UCB(), Thompson()], ids=["ucb", "thompson"])
def test_the_default_memory_allocates_pulls_when_the_budget_is_below_the_pool(policy):
    """The notebook's language-model setting: 8 pulls per step over a pool of 16. Under the default
    ("persist") a unit's pulls accumulate over the steps it spends in the pool (some units pulled
    three times or more) and every join is backed by a pull under its mask; under "step" UCB pulls 8
    distinct units per step, the first 8 of the pool, and each decides on one pull (greedy in
    disguise). This fails if the default degenerates to "each unit once" again."""
    units, ev = synthetic(24, [13, 17, 19], seed=0)
    sel = bandit_search(ev, units, np.arange(24), k=6, policy=policy, seed=0, budget=8, pool_size=16)
    a = allocation(sel.units, sel.pulled)
    assert a["pulls_per_step"] == 8 and a["most_pulls"] >= 3 and a["joins_backed"] == 1.0
    assert a["join_evidence"] >= 2
    units, ev = synthetic(24, [13, 17, 19], seed=0)
    step = bandit_search(ev, units, np.arange(24), k=6, policy=UCB(), seed=0, budget=8, pool_size=16, memory="step")
    b = allocation(step.units, step.pulled, "step")
    assert b["distinct_per_step"] == 8 and b["join_evidence"] == 1.0


def test_allocation_counts_from_a_record():
    """On a record's string form: 2 steps of 3 pulls; the second join was not pulled in its step. Step 2 spends
    two of its three pulls on head0.4, new in that step (the pool's newest entrant)."""
    a = allocation(["head0.1", "head0.2"], [["head0.1", "head0.1", "head0.3"], ["head0.3", "head0.4", "head0.4"]])
    assert a == pytest.approx({"distinct_per_step": 2.0, "pulls_per_step": 3.0, "pulls_per_unit": 2.0, "most_pulls": 2,
                               "joins_backed": 0.5, "join_evidence": 1.0, "to_newcomers": (1 + 2 / 3) / 2,
                               "joins_new": 0.5})
    assert allocation(["head0.3"], [["head0.3"], ["head0.3", "head0.3"]][:1])["join_evidence"] == 1.0
    assert allocation(["head0.4", "head0.3"], [["head0.3", "head0.4"], ["head0.3", "head0.3"]])["join_evidence"] == 2.0
    assert allocation(["head0.4", "head0.3"], [["head0.3", "head0.4"], ["head0.3", "head0.3"]],
                      "step")["join_evidence"] == 1.5
    assert allocation([], []) == {}


def test_memory_errors():
    units, ev = synthetic(6, [1], seed=0)
    with pytest.raises(ReproError, match="memory must be one of persist, step, carry"):
        bandit_search(ev, units, np.arange(6), k=1, policy=UCB(), memory="forever")


def test_policy_formulas():
    """UCB pulls argmax mean + 1.5 sqrt(ln t / n) and keeps the best mean; Thompson draws from
    Beta(1 + sum r, 1 + n - sum r) and keeps the best posterior mean."""
    from repro.methods.bandit import Arm

    a, b, c = Unit("head", 0, 0), Unit("head", 0, 1), Unit("head", 0, 2)
    arms = {a: Arm(10, 9.0), b: Arm(10, 1.0), c: Arm(1, 0.1)}
    rng = np.random.default_rng(0)
    assert UCB().choose([a, b], arms, 20, rng) == a          # same n: the better mean
    assert UCB().choose([a, c], arms, 21, rng) == c          # 0.9 + 0.83 < 0.1 + 2.62: explore
    assert UCB(c=0.1).choose([a, c], arms, 21, rng) == a     # 0.9 + 0.06 > 0.1 + 0.17: exploit
    assert UCB().best([a, b, c], arms) == a
    assert Thompson().best([b, c], arms) == c                # (1.1 / 3) > (2 / 12)
    d, e = Unit("head", 0, 3), Unit("head", 0, 4)
    arms |= {d: Arm(5, 1.25), e: Arm(1, 0.05)}               # means 0.25 and 0.05, both below the prior's 0.5
    assert Thompson().best([d, e], arms) == e                # 1.05 / 3 > 2.25 / 7: the prior favours fewer pulls
    assert Thompson("mean").best([d, e], arms) == d          # the better mean reward
    with pytest.raises(ReproError, match="unknown Thompson join rule 'median'"):
        Thompson("median")
    assert [Thompson().choose([a, b], arms, 20, rng) for _ in range(50)].count(a) >= 48
    assert (arms[a].alpha, arms[a].beta) == (10.0, 2.0)


def test_pool_refresh():
    ranked = [Unit("head", 0, i) for i in range(5)]
    pool = Pool(ranked, size=3)
    assert pool.members == ranked[:3]
    assert pool.remove(ranked[1]) == ranked[3] and pool.members == [ranked[0], ranked[2], ranked[3]]
    assert pool.remove(ranked[0]) == ranked[4]
    assert pool.remove(ranked[4]) is None and pool.members == [ranked[2], ranked[3]]


def test_seed_changes_batch_order_only_through_the_seed():
    runs = {}
    for seed in (0, 0, 1):
        units, ev = synthetic(12, [3], seed=0)  # same oracle noise; only the search seed varies
        sel = bandit_search(ev, units, np.arange(12), k=2, policy=Thompson(), seed=seed, budget=16)
        runs.setdefault(seed, []).append((ev.batches_seen, [u.index for u in ev.pulled], sel.units, sel.rewards))
    assert runs[0][0] == runs[0][1]
    assert runs[0][0][0] != runs[1][0][0], "another seed, another mini-batch order"
    assert all(len(set(b)) == 2 for b in runs[0][0][0]), "two distinct mini-batches per evaluation"
    counts = np.bincount([b for pair in runs[0][0][0] for b in pair], minlength=4)
    assert counts.max() - counts.min() <= 2, "every mini-batch used about equally often"


# ---- rewards ---------------------------------------------------------------------------------

def test_reward_map_and_summary():
    r = reward([-1.0, -0.02, 0.0, 0.02, 1.0])
    assert r[2] == 0.5 and r[0] > 0.999 and r[-1] < 0.001
    assert np.all(np.diff(r) < 0)
    np.testing.assert_allclose(r[1] + r[3], 1.0)
    np.testing.assert_allclose(reward(0.01, tau=0.01), 1 / (1 + np.e))
    with pytest.raises(ReproError):
        reward(0.1, tau=0)
    s = reward_summary([list(reward([0.05, 0.0, 0.001])), list(reward([-0.05]))])
    assert s["n"] == 4 and (s["harmful"], s["neutral"], s["beneficial"]) == (0.25, 0.5, 0.25)
    assert sum(s["histogram"]["counts"]) == 4 and s["quantiles"]["median"] == pytest.approx(0.5 - 0.0125 / 2, abs=1e-3)
    assert reward_summary([]) == {"n": 0}


# ---- selectors on tiny-llama -----------------------------------------------------------------

@pytest.fixture(scope="module")
def llama():
    return build_tiny("tiny-llama")


@pytest.mark.parametrize("kinds", [("head",), ("mlp",), ("head", "mlp")])
def test_every_selector_returns_k_distinct_units(llama, kinds):
    n_batches = 2
    with UnitEvaluator(llama, calib("tiny-llama", n_batches)) as ev:
        all_units = set(candidates(ev.adapter, kinds, 32))
        for name, s in SELECTORS.items():
            sel = select_units(name, ev, 4, kinds=kinds, seed=1, **({"budget": 4} if s.sequential else {}))
            assert len(sel.units) == 4 and len(set(sel.units)) == 4, name
            assert set(sel.units) <= all_units, name
            b = sel.budget
            assert b.calibration_passes == (n_batches if name in ("wanda", "taylor", "fisher") else 0), name
            assert b.backward_passes == (n_batches if name in ("taylor", "fisher") else 0), name
            assert b.paired_evaluations == (16 if s.sequential else 0), name
            assert sel.params["kinds"] == list(kinds) and sel.params["group_size"] == 32
            if s.sequential:  # the record holds every parameter, defaults included
                assert (sel.params["budget"], sel.params["pool_size"], sel.params["tau"]) == (4, 48, 0.02)
                assert sel.params["batches_per_eval"] == 2 and sel.params.get("c", 1.5) == 1.5
                assert [len(r) for r in sel.rewards] == [4] * 4 and len(sel.damages) == 4
            if name in ("magnitude", "wanda", "taylor", "fisher"):
                assert len(sel.scores) == len(all_units)
                assert set(sel.units) == set(sorted(sel.scores, key=sel.scores.get)[:4]) or len(kinds) > 1


def test_one_shot_scores_by_hand(llama):
    """Magnitude and Taylor scores of head (1, 2) and MLP group (2, 1) computed by hand."""
    ad = adapter(llama)
    a, m = ad.attention(1), ad.mlp(2)
    hd, g = a.head_dim, a.group_size
    blk, kv = slice(2 * hd, 3 * hd), slice((2 // g) * hd, (2 // g + 1) * hd)
    q, k, v, o = (s.module.weight for s in a.sites)
    sq = (q[blk] ** 2).sum() + (o[:, blk] ** 2).sum() + ((k[kv] ** 2).sum() + (v[kv] ** 2).sum()) / g
    ch = slice(32, 64)
    gate, up, down = (s.module.weight for s in m.sites)
    sq_m = (gate[ch] ** 2).sum() + (up[ch] ** 2).sum() + (down[:, ch] ** 2).sum()
    units = [Unit("head", 1, 2), Unit("mlp", 2, 1)]
    np.testing.assert_allclose(magnitudes(ad, units, 32), [sq.sqrt().item(), sq_m.sqrt().item()], rtol=1e-6)

    batches = calib("tiny-llama")
    llama.zero_grad(set_to_none=True)
    for b in batches:  # gradient of the mean loss over mini-batches
        (llama(input_ids=b["input_ids"], labels=b["input_ids"]).loss / len(batches)).backward()
    gw = lambda w: w * w.grad  # noqa: E731
    t_head = gw(q)[blk].sum() + gw(o)[:, blk].sum() + (gw(k)[kv].sum() + gw(v)[kv].sum()) / g
    t_mlp = gw(gate)[ch].sum() + gw(up)[ch].sum() + gw(down)[:, ch].sum()
    llama.zero_grad(set_to_none=True)
    with UnitEvaluator(llama, batches) as ev:
        sel = select_units("taylor", ev, 1, kinds=("head", "mlp"))
    np.testing.assert_allclose([sel.scores[u] for u in units], [abs(t_head.item()), abs(t_mlp.item())], rtol=1e-4)
    assert all(p.grad is None for p in llama.parameters()), "gradients are cleared"


def test_wanda_consumers_share_one_statistic():
    """One accumulation (repro.calib.stats) under the three Wanda-style consumers. On tiny-vit (g = 1,
    so the bandit's 1/g share of K/V is the identity) the bandit's Wanda-style head scores are
    Wanda-Head's bit for bit from the same batches; the head scorers' statistic is the sum of
    squares of the inputs a hook captures; the unstructured pruners' observer gets the same sums
    but adds each batch's squares in float32, as the committed masks were made."""
    vit = build_tiny("tiny-vit")
    g = torch.Generator().manual_seed(3)
    px, labels = torch.randn(8, 1, 28, 28, generator=g), torch.randint(0, 10, (8,), generator=g)
    heads = score_heads("wanda-head", vit, Calibration(image_windows(px, labels)))  # batches of 4
    with UnitEvaluator(vit, image_batches(px, labels, 4)) as ev:
        sel = select_units("wanda", ev, 1, kinds=("head",))
    bandit = [[sel.scores[Unit("head", i, h)] for h in range(heads.shape[1])] for i in range(heads.shape[0])]
    assert np.array_equal(np.array(bandit), heads)

    q = adapter(vit).attention(1).site("q").module
    seen = []
    hook = q.register_forward_pre_hook(lambda m, args: seen.append(args[0].detach()))
    with torch.no_grad():
        for b in px.split(4):
            vit(pixel_values=b)
    hook.remove()
    x = torch.cat(seen).reshape(-1, seen[0].shape[-1]).double()
    stats = input_sumsq(vit, [q], image_windows(px, labels), progress=False)[q]
    assert stats.n == len(x) == 8 * seen[0].shape[1]
    torch.testing.assert_close(stats.sumsq, x.square().sum(0), rtol=1e-12, atol=0)
    ob = InputSumSq()
    for xb in seen:
        ob.add(ob.measure(xb, None, 0))
    assert ob.n == stats.n
    assert torch.equal(ob.sumsq, sum(xb.reshape(-1, xb.shape[-1]).float().square().sum(0).double() for xb in seen))
    torch.testing.assert_close(ob.sumsq, stats.sumsq, rtol=1e-5, atol=0)
    assert not torch.equal(ob.sumsq, stats.sumsq)  # float32 sums: other bits than the float64 ones


def test_same_seed_same_selection_and_budget_accounting(llama):
    """UCB, k = 3 steps of 32 pulls: paired evaluations = 3 * 32, two mini-batch losses each,
    the current mask's loss once per mini-batch at the start and after each change, and layer
    forwards = the sum of (L - layer) over candidate forwards and cache recomputes. Without
    prefix reuse every forward is L layers; the selected units are the same."""
    batches, k, L = calib("tiny-llama"), 3, 3
    runs = {}
    for prefix in (True, False):
        with UnitEvaluator(llama, batches, prefix=prefix) as ev:
            runs[prefix] = [select_units("ucb", ev, k, kinds=("head", "mlp"), seed=3) for _ in range(2)]
    a, b = runs[True]
    assert a.units == b.units and a.rewards == b.rewards and a.pulls == b.pulls
    assert [u for u in runs[False][0].units] == a.units
    np.testing.assert_allclose(runs[False][0].damages, a.damages, atol=1e-5)
    bu = a.budget
    assert bu.paired_evaluations == k * 32 == sum(a.pulls.values())
    assert bu.candidate_losses == 2 * bu.paired_evaluations
    assert bu.baseline_losses == len(batches) * k
    assert [len(r) for r in a.rewards] == [32] * k and len(a.damages) == k
    expect = (sum(2 * n * (L - u.layer) for u, n in a.pulls.items()) + len(batches) * L
              + sum(len(batches) * (L - u.layer) for u in a.units[:-1]))
    assert bu.layer_forwards == expect
    full = runs[False][0].budget
    assert full.layer_forwards == L * (full.candidate_losses + full.baseline_losses)
    assert bu.layer_forwards < full.layer_forwards
    assert bu.calibration_passes == 0 and bu.seconds > 0
    with UnitEvaluator(llama, batches) as ev:  # Thompson's draws follow the seed
        t = [select_units("thompson", ev, k, kinds=("head", "mlp"), seed=s, budget=8) for s in (3, 3, 4)]
    assert t[0].pulls == t[1].pulls and t[0].units == t[1].units
    assert t[0].pulls != t[2].pulls


@pytest.mark.parametrize("budget", [5, 17])
def test_greedy_uses_exactly_its_budget(llama, budget):
    """Per step exactly ``budget`` trials from the pool (12 heads: 17 trials repeat some)."""
    with UnitEvaluator(llama, calib("tiny-llama")) as ev:
        sel = select_units("greedy", ev, 2, kinds=("head",), budget=budget)
    assert sel.budget.paired_evaluations == 2 * budget == sum(sel.pulls.values())
    assert [len(r) for r in sel.rewards] == [budget, budget]
    if budget > 12:
        assert len(sel.pulls) == 12, "a permutation of the pool before any repeat"


def test_greedy_picks_lowest_damage():
    units, ev = synthetic(10, [4], seed=0)
    ev.noise = 0.0
    sel = greedy_search(ev, units, np.arange(10), k=1, budget=10)
    assert sel.units == [units[4]] and sel.damages == [pytest.approx(-0.02)]


def test_registry_errors(llama):
    with UnitEvaluator(llama, calib("tiny-llama")) as ev:
        with pytest.raises(UnknownNameError, match="unit selector"):
            select_units("bandit", ev, 2)
        with pytest.raises(ReproError, match="takes"):
            select_units("magnitude", ev, 2, budget=3)
        with pytest.raises(ReproError):
            select_units("ucb", ev, 0)
        with pytest.raises(ReproError):
            select_units("magnitude", ev, 10_000)
        ev.add(Unit("head", 0, 0))
        with pytest.raises(ReproError, match="already"):
            ev.damage(Unit("head", 0, 0), [0])
    b = calib("tiny-llama")[0]
    for bad in ([], [{**b, "attention_mask": torch.ones_like(b["input_ids"])}], [{"pixel_values": b["input_ids"]}]):
        with pytest.raises(ReproError):
            UnitEvaluator(llama, bad)


@pytest.mark.parametrize("name", list(SELECTORS))
def test_a_prefix_of_a_longer_run_is_the_shorter_run(llama, name):
    """One run to k = 5 serves k = 2: units, damages, rewards, pulls and the budget of its first
    two steps equal a run to k = 2 (a selector whose steps depended on k, or a random draw that
    is not a prefix of one permutation, would fail here)."""
    s = SELECTORS[name]
    params = {"budget": 6, "pool_size": 8} if s.sequential else {}
    with UnitEvaluator(llama, calib("tiny-llama")) as ev:
        long = select_units(name, ev, 5, kinds=("head", "mlp"), seed=7, **params)
        short = select_units(name, ev, 2, kinds=("head", "mlp"), seed=7, **params)
    p = long.prefix(2)
    assert p.units == short.units and p.params == short.params
    assert long.units[:2] == short.units and len(long.units) == 5
    if s.sequential:
        assert p.pulls == short.pulls and p.rewards == short.rewards and p.pulled == short.pulled
        np.testing.assert_allclose(p.damages, short.damages, atol=1e-6)
        drop = ("seconds",)
        pb, sb = ({k: v for k, v in vars(b).items() if k not in drop} for b in (p.budget, short.budget))
        assert pb == sb and pb["paired_evaluations"] == 12
        assert long.budget.paired_evaluations == 30 and p.as_dict()["steps"] == long.as_dict()["steps"][:2]
    with pytest.raises(ReproError, match="k"):
        long.prefix(6)


@pytest.mark.parametrize("name", ["tiny-llama", "tiny-gemma3", "tiny-vit"])  # tied head, Gemma, a classifier
def test_taylor_and_fisher_scores_are_the_same_bits_when_only_the_read_weights_get_gradients(name, monkeypatch):
    """Backward computes the gradients of the unit sites' weights only (the embedding, norms and,
    for heads, MLP weights are frozen meanwhile): the scores are bit-identical to those from every
    weight's gradient, and every parameter is trainable again afterwards."""
    import contextlib

    import repro.methods.unit_scores as unit_scores

    model, batches = build_tiny(name), calib(name)
    kinds = ("head",) if name == "tiny-vit" else ("head", "mlp")
    next(model.parameters()).requires_grad_(False)  # a parameter frozen before stays frozen
    trainable = [p.requires_grad for p in model.parameters()]

    def scores():
        out = {}
        for method in ("taylor", "fisher"):
            with UnitEvaluator(model, batches) as ev:
                out[method] = select_units(method, ev, 1, kinds=kinds).scores
        return out

    fast = scores()
    assert [p.requires_grad for p in model.parameters()] == trainable
    monkeypatch.setattr(unit_scores, "gradients_only_for", lambda *a: contextlib.nullcontext())
    assert scores() == fast  # exact: same floats for every unit


def test_synthetic_arms_show_where_adaptive_allocation_helps():
    """The teaching section's toy (repro.papers.bandit.synthetic): with a budget of twice the pool,
    Thompson sampling under the default memory finds units of lower true damage than budgeted greedy
    on the same arms and noise (mean regret over 40 seeds at most 0.7x greedy's; measured 0.48x); with
    a budget of half the pool it cannot do much better (at least 0.8x)."""
    from repro.papers.bandit import synthetic as S

    runs = S.compare(budgets=(8, 32), memories=("persist",))
    s = S.summary(runs).set_index(["budget", "policy"])["mean regret"]
    assert s[(32, "thompson")] <= 0.7 * s[(32, "greedy")]
    assert s[(8, "thompson")] >= 0.8 * s[(8, "greedy")]
    w = S.worked_pull(damage=0.0)
    assert w["reward"] == 0.5 and w["after"] == (1.5, 1.5) and w["mean after"] == 0.5


@pytest.mark.parametrize("join", ["posterior", "mean"])
@pytest.mark.parametrize("memory", ["persist", "step", "carry"])
def test_join_gaps_replays_thompsons_joins_from_the_record(join, memory):
    """Every removal harmful (rewards below 0.5), 8 pulls per step over a pool of 16: replaying the
    record's pulls and rewards gives back the unit each join rule chose (so the replay is the search's
    own rule, and the notebook's reading of a record's joins is exact)."""
    from repro.methods.bandit import join_gaps

    units = [Unit("head", 0, i) for i in range(24)]
    ev = FakeEvaluator({u: 0.02 + 0.002 * i for i, u in enumerate(units)}, noise=0.01, seed=1)
    sel = bandit_search(ev, units, np.arange(24), k=6, policy=Thompson(join), seed=1, budget=8, pool_size=16,
                        memory=memory)
    gaps = join_gaps(sel.units, sel.pulled, sel.rewards, 0.02, memory)
    assert [g["joined"] for g in gaps] == [g[join] for g in gaps] == [str(u) for u in sel.units]
    other = "mean" if join == "posterior" else "posterior"
    assert all((g["damage_gap"] == 0) == (g[other] == g[join]) for g in gaps)


class _Scripted:
    """An evaluator whose unit u returns the damages ``script[u]`` in order, one per trial, whatever the mask."""
    n_batches, group_size, adapter = 4, 32, None

    def __init__(self, script):
        from repro.calib.budget import Budget
        self.script, self.calls, self.budget = script, {u: 0 for u in script}, Budget()

    def reset(self):
        pass

    def add(self, unit):
        pass

    def damage(self, unit, batches):
        self.budget.paired_evaluations += 1
        self.calls[unit] += 1
        return self.script[unit][self.calls[unit] - 1]


def test_greedy_with_memory_keeps_its_trials_and_spends_them_as_greedy_does():
    """Our control for Paper 3: budgeted greedy whose trials persist across steps under the bandits' rule. A
    scores 0.40 then 0.12, C 0.20 then 0.14: plain greedy reads only this step's trials (A joins at step 2),
    the control reads them all (C's mean beats A's); both try every unit exactly as often, and a unit joins
    only after a trial under the mask it joins."""
    from repro.methods.bandit import Unit, greedy_search

    a, b, c = (Unit("head", 0, i) for i in range(3))
    script = {a: [0.40, 0.12, 0.12], b: [0.05], c: [0.20, 0.14, 0.14]}
    evs = {m: _Scripted(script) for m in ("step", "persist")}
    runs = {m: greedy_search(evs[m], [a, b, c], np.arange(3.0), 2, budget=3, pool_size=3, memory=m) for m in evs}
    assert runs["step"].units == [b, a] and runs["persist"].units == [b, c]
    assert runs["persist"].damages[1] == pytest.approx(np.mean(script[c][:evs["persist"].calls[c]]))
    assert runs["persist"].method == "greedy-memory"
    assert [sorted(p) for p in runs["step"].pulled] == [sorted(p) for p in runs["persist"].pulled]
    assert all(u in pulled for u, pulled in zip(runs["persist"].units, runs["persist"].pulled))
    with pytest.raises(ReproError, match="greedy memory must be one of step, persist"):
        greedy_search(_Scripted(script), [a, b, c], np.arange(3.0), 2, budget=3, pool_size=3, memory="carry")
