"""The notebooks' "Try it" exercises on tiny random models (the CI variant of the cells the lab profile runs on
the real ones): each answers with a table whose numbers follow from its definition, and a session with
``try_it`` off computes nothing."""
import numpy as np
import pytest

from repro.engines.bandit import BanditExperiment
from repro.engines.base import Setup
from repro.engines.heads import HeadExperiment
from repro.engines.prune import PruneExperiment
from repro.papers.bandit import tryit as TB
from repro.papers.mpg import tryit as TM
from repro.papers.ogas import tryit as TO
from repro.report import Table
from repro.store import Store

SETUP = Setup(data="wiki-sample", seqlen=32, max_windows=2, calib_data="wiki-sample", calib_nsamples=4, calib_seqlen=16)


def test_by_index_counts_only_a_tie_the_cut_splits():
    s = np.array([[0.0, 0.0, 0.0, 1.0], [2.0, 0.0, 3.0, 4.0]])
    assert TM.by_index(s, [(0, 0), (0, 1)]) == 2  # 2 of the 4 zeros: the index chose them
    assert TM.by_index(s, [(0, 0), (0, 1), (0, 2), (1, 1)]) == 0  # every zero is cut: the scores decided
    assert TM.by_index(s, [(0, 0), (0, 1), (0, 2), (1, 1), (0, 3)]) == 0  # the cut ends at a change of score


def test_mpg_zero_scores_and_pruned_ppl():
    e = HeadExperiment("tiny-llama", SETUP, Store(None), progress=False)
    t = TM.zero_scores(e, 0.25, [0.5, 3.0])
    assert isinstance(t, Table) and list(t.frame.z) == [0.5, 3.0]
    n = e.shape[0] * e.shape[1]
    assert (t.frame.heads == n).all() and (t.frame.pruned == n // 4).all()
    assert t.frame["score exactly 0"].is_monotonic_increasing  # a higher z never lifts a score above 0
    assert (t.frame["picked by index order"] <= t.frame.pruned).all()
    p = TM.pruned_ppl(e, 0.25, ("mpg", "random"), windows=2, seqlen=32)
    assert list(p.frame.method) == ["dense", "mpg", "random"]
    assert p.frame.loc[0, "x dense"] == 1.0 and (p.frame.ppl > 1).all()
    assert p.frame.loc[1, "heads pruned"] == n // 4
    dense_again = TM.pruned_ppl(e, 0.25, (), windows=2, seqlen=32).frame.ppl[0]
    assert dense_again == p.frame.ppl[0]  # the masks were lifted: the model is dense again


def test_ogas_gamma_spread_keeps_the_target_and_bends_with_gamma():
    e = PruneExperiment("tiny-llama", SETUP, Store(None), progress=False)
    layer = "model.layers.1.mlp.down_proj"
    t = TO.gamma_spread(e, layer, lam=0.4, gammas=(0.2, 2.0), target=0.5, nsamples=2)
    assert np.allclose(t.frame["mean"], 0.5, atol=1e-3)  # alpha solves mean s = target at every gamma
    assert (t.frame["min"] >= 0.01 - 1e-9).all() and (t.frame["max"] <= 0.6 + 1e-9).all()
    assert set(t.raw) == {0.2, 2.0} and all(np.all(np.diff(s) >= 0) for s in t.raw.values())
    o = TO.mask_overlap(e, layer, 0.5, ("magnitude", "wanda", "ria"), nsamples=2)
    shares = o.frame["share of pruned weights in common"]
    assert len(o.frame) == 3 and ((shares > 0) & (shares <= 1)).all()


def test_energy_and_peak_follow_their_definitions():
    y = np.zeros((2, 4, 3), dtype=np.float32)
    y[0, :, 0] = [1, 1, 1, 1]
    y[1, :, 0] = [2, 0, 0, 0]  # window RMS 1, peak 2
    import torch
    e, p = TO.energy_and_peak(torch.as_tensor(y))
    assert e[0] == pytest.approx(np.sqrt((4 + 4) / 8)) and p[0] == pytest.approx((1 + 2) / 2, rel=1e-6)


def test_bandit_exploration_and_toy():
    e = BanditExperiment("tiny-llama", SETUP, Store(None), calib_batch_size=1, group_size=8, progress=False)
    t = TB.exploration(e, "head", steps=2, cs=(1.5, 0.2), budget=3, pool_size=4, seed=1)
    assert list(t.frame.method) == ["greedy", "ucb, c = 1.5", "ucb, c = 0.2"]
    assert ((t.frame["distinct units per step"] >= 1) & (t.frame["distinct units per step"] <= 3)).all()
    assert all(len(j.split()) == 2 for j in t.frame.joined)
    toy = TB.toy(budget=8, c=0.1, seeds=3)
    assert list(toy.frame.policy) == ["greedy", "ucb c=0.1", "thompson"] and (toy.frame["regret (mean)"] >= 0).all()
