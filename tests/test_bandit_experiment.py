"""Paper 3's experiment cells on a tiny model: select -> record -> evaluate masked -> frame."""
import numpy as np
import pytest
import torch

from repro.errors import ReproError
from repro.experiments.bandit import bandit_frame
from repro.experiments.units import BanditExperiment, units_for
from repro.experiments.base import Setup
from repro.store import Store

SMALL = Setup(data="wiki-sample", seqlen=32, max_windows=3, calib_data="wiki-sample", calib_nsamples=4,
              calib_seqlen=16)
FAST = {"budget": 4, "pool_size": 6}


@pytest.fixture(scope="module")
def exp(tmp_path_factory):
    return BanditExperiment("tiny-llama", SMALL, Store(tmp_path_factory.mktemp("results")), calib_batch_size=2,
                            group_size=32, progress=False)


def test_k_is_the_rounded_share_of_candidates(exp):
    assert units_for(exp.adapter, ["head"], 0.25, 32) == (3, 12)      # 3 layers x 4 heads
    assert units_for(exp.adapter, ["mlp"], 0.1, 32) == (1, 9)         # 96 channels -> 3 groups a layer, at least 1
    for bad in (0, 1, -0.1, 1.5):
        with pytest.raises(ReproError, match="ratio"):
            units_for(exp.adapter, ["head"], bad, 32)


def test_seed_changes_the_calibration_batches(exp):
    a, sa = exp.calibration_batches(1)
    b, _ = exp.calibration_batches(2)
    assert len(a) == 2 and a[0]["input_ids"].shape == (2, 16) and sa["seed"] == 1
    assert not all((x["input_ids"] == y["input_ids"]).all() for x, y in zip(a, b))


def test_a_cell_selects_once_and_evaluates_the_masked_model(exp):
    dense = exp.dense()
    rec = exp.cell("ucb", ["head"], 0.25, seed=1, params=FAST)
    sel = exp.select("ucb", ["head"], 0.25, seed=1, params=FAST)  # read back, not searched again
    assert exp.store.status[("bandit-select", sel["key"])] in ("computed", "cached")
    units = sel["result"]["units"]
    assert len(units) == 3 and len({tuple(u) for u in units}) == 3 and all(u[0] == "head" for u in units)
    assert sel["result"]["budget"]["paired_evaluations"] == 3 * FAST["budget"]
    assert rec["result"]["ppl"] != dense["result"]["ppl"]  # the mask was on during evaluation
    # and off again afterwards: the dense evaluation copy is unchanged
    assert exp.ppl(exp.eval_model())["ppl"] == pytest.approx(dense["result"]["ppl"], rel=1e-6)
    other = exp.cell("ucb", ["head"], 0.25, seed=2, params=FAST)
    assert other["result"]["selection"]["seed"] == 2


def test_one_search_serves_every_ratio_of_a_setting(exp, tmp_path):
    """select(..., ratios=[...]) runs one search to the largest k and records each smaller
    selection as its prefix; a store that searches k = 3 directly gets the same record."""
    calls = []
    import repro.experiments.units as B

    real = B.select_units

    def counting(*a, **kw):
        calls.append(a[2])
        return real(*a, **kw)
    B.select_units = counting
    try:
        small = exp.select("thompson", ["head"], 0.25, seed=5, params=FAST, ratios=[0.5])
        big = exp.select("thompson", ["head"], 0.5, seed=5, params=FAST)  # recorded by the first call
    finally:
        B.select_units = real
    assert calls == [6] and exp.store.status[("bandit-select", big["key"])] == "computed"
    assert big["result"]["units"][:3] == small["result"]["units"] and len(big["result"]["units"]) == 6
    other = BanditExperiment("tiny-llama", SMALL, Store(tmp_path), calib_batch_size=2, progress=False,
                             loaded=exp.loaded)
    direct = other.select("thompson", ["head"], 0.25, seed=5, params=FAST)
    assert direct["key"] == small["key"]
    for f in ("units", "pulls", "rewards", "pulled"):
        assert direct["result"][f] == small["result"][f], f
    assert direct["result"]["budget"]["paired_evaluations"] == small["result"]["budget"]["paired_evaluations"] == 12


def test_search_dtype_follows_the_evaluation_copy(exp):
    e = BanditExperiment("tiny-llama", SMALL.replace(eval_dtype="bfloat16"), Store(None), calib_batch_size=2,
                         progress=False, loaded=exp.loaded, search_dtype="eval")
    sel = e.select("ucb", ["head"], 0.25, seed=1, params=FAST)
    assert sel["config"]["search_dtype"] == "bfloat16" and e.search_model("ucb").dtype == torch.bfloat16
    assert e.select_config("taylor", ["head"], 0.25, 1)["search_dtype"] == "float32"
    assert e.search_model("taylor") is e.model and e.select_config("random", ["head"], 0.25, 1)["search_dtype"] is None
    assert exp.select_config("ucb", ["head"], 0.25, 1, FAST)["search_dtype"] == "float32"
    with pytest.raises(ReproError, match="search_dtype"):
        BanditExperiment("tiny-llama", SMALL, Store(None), loaded=exp.loaded, calib_batch_size=2, search_dtype="int8")


def test_frame_rows_and_unknown_parameters(exp):
    exp.cell("magnitude", ["mlp"], 0.1, seed=1)
    f = bandit_frame(exp.store, [exp])
    assert {"dense", "ucb", "magnitude"} <= set(f.method)
    row = f[(f.method == "magnitude")].iloc[0]
    assert row.kinds == "mlp" and row.k == 1 and row.finite and len(row.window_nll) == 3
    assert f[f.method == "dense"].iloc[0].k == 0 and np.isfinite(f.ppl).all()
    with pytest.raises(ReproError, match="takes"):
        exp.select("magnitude", ["head"], 0.25, seed=1, params={"budget": 3})
    with pytest.raises(ReproError, match="calib_batch_size"):
        BanditExperiment("tiny-llama", SMALL, Store(None), calib_batch_size=5, loaded=exp.loaded)


def test_lambada_is_evaluated_through_lm_eval(exp):
    rec = exp.cell("random", ["head"], 0.25, seed=1, lambada_limit=3)
    lam = rec["result"]["lambada"]["tasks"]["lambada_openai"]
    assert lam["n"] == 3 and set(lam["metrics"]) >= {"perplexity", "acc"} and len(lam["per_doc"]["acc"]) == 3


def constructed_frame():
    """Dense and two methods over 5 seeds on 6 windows: 'ucb' damages less than 'greedy' on every
    seed; one greedy seed fails (non-finite)."""
    import pandas as pd

    rng = np.random.default_rng(0)
    dense = rng.normal(3.0, 0.3, 6)
    rows = [{"model": "m", "method": "dense", "kinds": "dense", "ratio": 0.0, "k": 0, "seed": None,
             "ppl": float(np.exp(dense.mean())), "window_nll": dense.tolist(), "finite": True}]
    for seed in (1, 2, 3, 42, 123):
        for method, shift in (("ucb", 0.02), ("greedy", 0.05)):
            nll = dense + shift + rng.normal(0, 0.002, 6)
            if method == "greedy" and seed == 123:
                nll = np.full(6, np.inf)
            rows.append({"model": "m", "method": method, "kinds": "head", "ratio": 0.1, "k": 3, "seed": seed,
                         "ppl": float(np.exp(nll.mean())), "window_nll": nll.tolist(), "finite": bool(np.isfinite(nll).all())})
    return pd.DataFrame(rows)


def test_statistics_per_seed_across_seeds_and_family():
    from repro.experiments.bandit import across_seeds, family_summary, vs_dense

    per = vs_dense(constructed_frame())
    assert len(per) == 10
    ok = per[per.finite]
    assert (ok.ci_lo > 0).all() and np.allclose(ok[ok.method == "ucb"].change_pct, 100 * (np.exp(0.02) - 1), atol=0.3)
    failed = per[~per.finite].iloc[0]
    assert failed.seed == 123 and np.isinf(failed.change_pct) and np.isnan(failed.p)  # a failure, not averaged away
    t = across_seeds(per, "ucb", "greedy", test="wilcoxon").iloc[0]
    assert t.seeds == 5 and t.a_better_seeds == 5 and t.p == pytest.approx(0.125)  # exact Wilcoxon, 4 finite pairs
    tests = across_seeds(per, "ucb", "greedy")  # auto: 4 finite pairs are too few for Wilcoxon to reach 0.05
    assert tests.iloc[0].test == "ttest" and tests.iloc[0].p < 0.01
    t = tests.iloc[0]
    per_q, tests_q, summary = family_summary(per, tests)
    assert summary.iloc[0]["comparisons"] == 10 and summary.iloc[0]["CI excludes 0"] == 9
    assert summary.iloc[0]["failures (non-finite)"] == 1
    assert (per_q.q.dropna() >= per_q.p.dropna()).all() and np.isnan(per_q[~per_q.finite].q).all()
    assert tests_q.iloc[0].q >= t.p


@pytest.mark.skipif(not (__import__("repro.assets.data", fromlist=["x"]).FASHION_MNIST_DIR
                         / "train-images-idx3-ubyte.gz").exists(), reason="dataset-fashion-mnist not installed")
def test_vision_cells_are_paired_per_image(tmp_path):
    from repro.experiments.bandit import vision_frame
    from repro.experiments.units import VisionBanditExperiment

    e = VisionBanditExperiment("tiny-vit", Setup(), Store(tmp_path), n_calib=8, calib_batch_size=4, n_eval=50,
                               group_size=16, progress=False)
    dense = e.dense()["result"]
    assert dense["n_eval"] == 50 and len(dense["per_image_ce"]) == 50 and 0 <= dense["top1"] <= 1
    for method in ("thompson", "greedy"):  # matched budgets: the same per-step budget and pool
        e.cell(method, ["head"], 0.25, seed=1, params={"budget": 4, "pool_size": 8})
    f = vision_frame(e.store, [e])
    assert sorted(f.method) == ["dense", "greedy", "thompson"]
    ts, gr = (f[f.method == m].iloc[0] for m in ("thompson", "greedy"))
    assert ts.k == gr.k == 2 and ts.budget["paired_evaluations"] == gr.budget["paired_evaluations"] == 8
    assert ts.per_image_ce != dense["per_image_ce"]
    from repro.experiments.bandit import vision_table

    vt = vision_table(f)
    assert len(vt) == 2 and (vt.ci_lo <= vt.top1_drop_pp).all() and (vt.top1_drop_pp <= vt.ci_hi).all()
    assert vt.p.between(0, 1).all() and vt.finite.all()
    assert np.allclose(vt.top1_drop_pp, 100 * dense["top1"] - vt.top1_pp)  # the drop is paired per image
    with pytest.raises(ReproError, match="not an image classifier"):
        VisionBanditExperiment("tiny-llama", Setup(), Store(None), n_calib=8, calib_batch_size=4)


def test_removal_cell_is_exact_and_smaller(exp):
    from repro.experiments.units import removal_cell

    out = removal_cell(exp, "magnitude", [(["head"], 0.25), (["mlp"], 0.25)], seed=1, batches=(1,), seqlen=16,
                       repeats=1)["result"]
    heads = exp.select("magnitude", ["head"], 0.25, seed=1)["result"]["units"]
    assert out["heads"] == len(heads) == 3
    assert out["units"] >= 2 and out["heads"] >= 1 and out["mlp_channels"] >= 1
    assert out["removed"]["params"] < out["zeroed"]["params"] == out["dense"]["params"]
    assert out["removed"]["checkpoint_bytes"] < out["dense"]["checkpoint_bytes"]
    assert out["removed_vs_zeroed_max_abs_logit_diff"] < 1e-4
    assert set(out["dense"]["prefill_b1"]) >= {"median_s", "times_s"}


def test_removal_table_pairs_speed_by_round():
    from repro.experiments.bandit import removal_table

    res = {"dense": {"params": 10, "checkpoint_bytes": 2e6, "prefill_b1": {"median_s": 0.2, "times_s": [0.2, 0.4, 0.2]}},
           "zeroed": {"params": 10, "checkpoint_bytes": 2e6, "prefill_b1": {"median_s": 0.2, "times_s": [0.2, 0.4, 0.2]}},
           "removed": {"params": 8, "checkpoint_bytes": 1.6e6,
                       "prefill_b1": {"median_s": 0.1, "times_s": [0.1, 0.2, 0.1]}}}
    t = removal_table(res, [1]).set_index("model")
    assert t.loc["removed", "speed-up b1 [95% CI]"] == "x2.000 [2.000, 2.000]"  # twice as fast in every round
    assert t.loc["zeroed", "speed-up b1 [95% CI]"].startswith("x1.000") and t.loc["removed", "params"] == 8
    assert t.loc["removed", "prefill b1 (ms)"] == pytest.approx(100) and t.loc["dense", "checkpoint MB"] == 2


def test_reward_table_counts_each_setting_once():
    """Rewards of the largest ratio only (a smaller ratio repeats its first steps), pooled over seeds."""
    import pandas as pd

    from repro.experiments.bandit import reward_table

    rows = [{"model": "m", "kinds": "mlp", "method": "ucb", "ratio": 0.08, "seed": s,
             "rewards": [[0.1, 0.5], [0.9, 0.5]]} for s in (1, 2)]
    rows += [{"model": "m", "kinds": "mlp", "method": "ucb", "ratio": 0.03, "seed": 1, "rewards": [[0.1, 0.5]]},
             {"model": "m", "kinds": "mlp", "method": "magnitude", "ratio": 0.08, "seed": 1, "rewards": []},
             {"model": "m", "kinds": "dense", "method": "dense", "ratio": 0.0, "seed": None, "rewards": None}]
    t = reward_table(pd.DataFrame(rows))
    assert list(t.method) == ["ucb"]
    r = t.iloc[0]
    assert r.pulls == 8 and r.seeds == 2 and r.units == "mlp 8%"
    assert (r.harmful, r.neutral, r.beneficial) == (0.25, 0.5, 0.25) and r["mean reward"] == pytest.approx(0.5)


def test_layer_profile_pools_seeds():
    import pandas as pd

    from repro.experiments.bandit import layer_profile

    rows = [{"model": "m", "kinds": "head", "ratio": 0.1, "method": "wanda", "seed": 1,
             "units": [["head", 0, 1], ["head", 0, 2], ["head", 5, 0]]},
            {"model": "m", "kinds": "head", "ratio": 0.1, "method": "wanda", "seed": 2,
             "units": [["head", 1, 1], ["head", 9, 2], ["head", 2, 0]]},
            {"model": "m", "kinds": "dense", "ratio": 0.0, "method": "dense", "seed": None, "units": None}]
    t = layer_profile(pd.DataFrame(rows), {"m": 20})
    assert len(t) == 1 and t.iloc[0]["early layers"] == 2 and t.iloc[0].seeds == 2
    assert t.iloc[0]["share in early layers"] == pytest.approx(0.5) and t.iloc[0]["mean layer"] == pytest.approx(17 / 6)
