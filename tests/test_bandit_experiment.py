"""Paper 3's experiment cells on a tiny model: select -> record -> evaluate masked -> frame."""
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
import torch
from scipy import stats

import repro.engines.bandit as U
from repro.claims import claims_frame
from repro.claims import shown as shown_claims
from repro.engines.bandit import (
    BanditExperiment,
    VisionBanditExperiment,
    removal_cell,
    removal_parts,
    search_params,
    units_for,
)
from repro.engines.base import Setup
from repro.engines.plan import run_steps
from repro.errors import ReproError
from repro.papers.bandit.claims import bandit_claims, readme_blocks
from repro.papers.bandit.params import BanditParams
from repro.papers.bandit.readings import claims_reading, memory_reading, removal_reading, rewards_reading
from repro.papers.bandit.records import bandit_frame, first_run, head_maps, stale_picks, vision_frame
from repro.papers.bandit.report import Report
from repro.papers.bandit.seeds import across_seeds
from repro.papers.bandit.tables import (
    ALL_FAMILY,
    DENSE_FAMILY,
    PAPER_FAMILY,
    all_tests,
    budget_table,
    family_summary,
    greedy_tests,
    layer_profile,
    lm_summary,
    lm_table,
    mab_tests,
    memory_ablation,
    per_seed_table,
    removal_table,
    reward_table,
    vision_summary,
    vision_table,
    vs_dense,
)
from repro.report import Table
from repro.store import Store, config_key

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

    real = U.select_units

    def counting(*a, **kw):
        calls.append(a[2])
        return real(*a, **kw)
    U.select_units = counting
    try:
        small = exp.select("thompson", ["head"], 0.25, seed=5, params=FAST, ratios=[0.5])
        big = exp.select("thompson", ["head"], 0.5, seed=5, params=FAST)  # recorded by the first call
    finally:
        U.select_units = real
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


def test_memory_is_written_into_every_bandit_key(exp):
    """Every memory rule is written into the key (protocol 3: no default left implicit), so no two
    share a record; the default is "persist"; greedy takes no memory."""
    configs = {m: exp.select_config("ucb", ["head"], 0.25, 1, {**FAST, "memory": m}) for m in ("step", "carry")}
    configs["persist"] = exp.select_config("ucb", ["head"], 0.25, 1, FAST)
    assert {m: c["params"]["memory"] for m, c in configs.items()} == {m: m for m in configs}
    assert len({config_key(c) for c in configs.values()}) == 3
    with pytest.raises(ReproError, match="memory"):
        exp.select_config("greedy", ["head"], 0.25, 1, {**FAST, "memory": "step"})


def test_memory_ablation_pairs_each_policy_with_its_carry_over_variant(exp, tmp_path):
    """Both rules run on the same seeds and budget; the frames keep them apart (dense and the
    baselines in both); the ablation pairs each policy over seeds, reports matched budgets, and a
    carry-over run's picks without a pull under their mask; the verdict follows the interval."""
    e = BanditExperiment("tiny-llama", SMALL.replace(max_windows=20), Store(tmp_path), calib_batch_size=2,
                         progress=False, loaded=exp.loaded)
    for memory in ("step", "carry"):
        e.grid({"head": [0.25]}, ["ucb", "thompson"], [1, 2, 3], {**FAST, "memory": memory})
    e.grid({"head": [0.25]}, ["greedy"], [1, 2, 3], FAST)
    step, carry = (bandit_frame(e.store, [e], memory=m) for m in ("step", "carry"))
    assert set(step.memory.dropna()) == {"step"} and set(carry.memory.dropna()) == {"carry"}
    assert set(step.method) == {"dense", "ucb", "thompson", "greedy"} and len(step) == 10
    assert set(carry.method) == {"dense", "ucb", "thompson", "greedy"} and len(carry) == 10  # greedy has no memory
    assert (step.pulled.dropna().map(len) == 3).all()
    for units, pulled in zip(step[step.method == "ucb"].units, step[step.method == "ucb"].pulled):
        assert stale_picks(units, pulled) == 0.0
    t = memory_ablation(lm_table(step), lm_table(carry), step, carry, "change_pct", "carry", "step")
    assert list(t.method) == ["MAB-UCB", "MAB-TS"] and (t.seeds == 3).all() and (t.rule == "carry").all()
    assert (t["paired evaluations (main / other)"] == "12 / 12").all()  # 3 heads x budget 4, both rules
    np.testing.assert_allclose(t["other - main"], t["other rule"] - t["step"])
    assert t["joins unpulled under their mask (main / other)"].str.startswith("0% / ").all()  # step: 0 by construction
    for _, r in t.iterrows():
        assert r["verdict (step better)"] == ("holds" if r.ci_lo > 0 else "does not hold" if r.ci_hi < 0
                                              else "inconclusive")


def test_discussion_reads_the_memory_ablation():
    r, f, lm = fake_report(), cells_frame(), lm_rows()
    ab = pd.DataFrame([{"model": "m", "kinds": "head", "ratio": 0.1, "method": "MAB-UCB", "value": "change_pct",
                        "rule": "step", "other - main": 2.5, "ci_lo": 0.5, "ci_hi": 4.5,
                        "verdict (persist better)": "holds"}])
    text = r.discussion(f, lm, vision_rows(), claims_frame([]), ab)
    assert "other rule - `persist`" in text and "m head 10% MAB-UCB, step: +2.50 [+0.50, +4.50] ppl change, holds" in text
    assert "The memory rule" not in r.discussion(f, lm, vision_rows(), claims_frame([]))
    assert memory_reading(ab) == "- **persist against step**, persist better: holds 1 (of 1 settings)."
    assert "step did better in: m head 10% MAB-UCB (-2.5)" in memory_reading(
        ab.assign(**{"other - main": -2.5, "ci_lo": -4.5, "ci_hi": -0.5, "verdict (persist better)": "does not hold"}))


def test_discussion_names_pruning_that_lowers_lambada_perplexity():
    lm = pd.DataFrame([{"model": "m", "kinds": "head", "ratio": 0.1, "method": "greedy", "seed": s,
                        "lambada_change_pct": c, "lambada_acc_change": 0.02, "change_pct": 20.0}
                       for s, c in ((1, -6.0), (2, -4.0), (3, 1.0))] +
                      [{"model": "m", "kinds": "head", "ratio": 0.1, "method": "random", "seed": 1,
                        "lambada_change_pct": 5.0, "lambada_acc_change": -0.1, "change_pct": 50.0}])
    from repro.papers.bandit.readings import below_dense

    assert below_dense(lm) == "m head 10% Budgeted greedy -3.0% (2 of 3 seeds lower, last-word accuracy +0.020)"
    assert below_dense(lm[lm.method == "random"]) == ""


def test_stale_picks_counts_units_without_a_pull_in_their_step():
    units = [["head", 0, 1], ["head", 1, 2]]
    assert stale_picks(units, [["head0.1", "head0.3"], ["head0.3"]]) == 0.5
    assert stale_picks(units, [["head0.1"], ["head1.2"]]) == 0.0 and np.isnan(stale_picks([], []))


def test_frame_rows_and_unknown_parameters(exp):
    exp.dense()
    exp.cell("ucb", ["head"], 0.25, seed=1, params=FAST)  # read back where an earlier test computed it
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
    """Dense and two methods over 5 seeds on 20 windows: 'ucb' damages less than 'greedy' on every
    seed; one greedy seed fails (non-finite); 'magnitude' selects the same units on every seed."""
    rng = np.random.default_rng(0)
    dense = rng.normal(3.0, 0.3, 20)
    rows = [{"model": "m", "method": "dense", "kinds": "dense", "ratio": 0.0, "k": 0, "seed": None,
             "ppl": float(np.exp(dense.mean())), "window_nll": dense.tolist(), "finite": True}]
    for seed in (1, 2, 3, 42, 123):
        for method, shift in (("ucb", 0.02), ("greedy", 0.05)):
            nll = dense + shift + rng.normal(0, 0.002, 20)
            if method == "greedy" and seed == 123:
                nll = np.full(20, np.inf)
            rows.append({"model": "m", "method": method, "kinds": "head", "ratio": 0.1, "k": 3, "seed": seed,
                         "ppl": float(np.exp(nll.mean())), "window_nll": nll.tolist(), "finite": bool(np.isfinite(nll).all()),
                         "units": [["head", seed % 7, 0 if method == "ucb" else 1]]})
        nll = dense + 0.08  # deterministic: the same units, the same numbers, on every seed
        rows.append({"model": "m", "method": "magnitude", "kinds": "head", "ratio": 0.1, "k": 3, "seed": seed,
                     "ppl": float(np.exp(nll.mean())), "window_nll": nll.tolist(), "finite": True,
                     "units": [["head", 0, 3]]})
    return pd.DataFrame(rows)


def test_statistics_per_seed_across_seeds_and_family():
    per = vs_dense(constructed_frame())
    assert len(per) == 15
    ok = per[per.finite]
    assert (ok.ci_lo > 0).all() and np.allclose(ok[ok.method == "ucb"].change_pct, 100 * (np.exp(0.02) - 1), atol=0.3)
    failed = per[~per.finite].iloc[0]
    assert failed.seed == 123 and np.isinf(failed.change_pct) and np.isnan(failed.p)  # a failure, not averaged away
    t = across_seeds(per, "ucb", "greedy", "change_pct").iloc[0]  # the failed seed drops out of the pairs
    diffs = (per[(per.method == "ucb") & per.finite].set_index("seed").change_pct
             - per[(per.method == "greedy") & per.finite].set_index("seed").change_pct).dropna()
    ref = stats.ttest_rel(per[(per.method == "ucb")].set_index("seed").change_pct.loc[diffs.index],
                          per[(per.method == "greedy")].set_index("seed").change_pct.loc[diffs.index])
    assert t.seeds == 4 and t.a_better_seeds == 4 and t.test == "paired t"
    assert t.p == pytest.approx(ref.pvalue) and (t.ci_lo, t.ci_hi) == pytest.approx(tuple(ref.confidence_interval()))
    assert t.mean_diff == pytest.approx(diffs.mean()) and t.ci_hi < 0 and t.p < 0.01
    tests = mab_tests(per.assign(method=per.method.replace({"ucb": "thompson"})), pd.DataFrame(), lm_skip=())
    assert sorted(tests.b) == ["greedy", "magnitude"]  # every baseline that ran, not only greedy
    per_q, families, summary = family_summary(per, {"ours": tests, "empty": pd.DataFrame()})
    tests_q = families["ours"]
    assert summary.family.tolist() == ["ours", DENSE_FAMILY]  # an empty family is no row
    assert summary["the paper"].tolist() == ["", ""]
    assert family_summary(per, {PAPER_FAMILY: tests})[2]["the paper"].iloc[0] == "23 / 11 / 6 of 28 (CI / p / q)"
    dense_row = summary.set_index("family").loc["each distinct selection vs dense (per seed)"]
    assert dense_row["comparisons"] == 11 and dense_row["CI excludes 0"] == 10  # magnitude's 5 seeds count once
    assert dense_row["failures (non-finite)"] == 1
    assert per_q[per_q.method == "magnitude"].q.nunique() == 1  # its copies share the one q
    assert (per_q.q.dropna() >= per_q.p.dropna() - 1e-12).all() and np.isnan(per_q[~per_q.finite].q).all()
    assert (tests_q.q >= tests_q.p).all() and len(tests_q) == 2  # BH within the MAB-vs-baseline family only


@pytest.mark.skipif(not (__import__("repro.assets.data", fromlist=["x"]).FASHION_MNIST_DIR
                         / "train-images-idx3-ubyte.gz").exists(), reason="dataset-fashion-mnist not installed")
def test_vision_cells_are_paired_per_image(tmp_path):
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
    vt = vision_table(f)
    assert len(vt) == 2 and (vt.ci_lo <= vt.top1_drop_pp).all() and (vt.top1_drop_pp <= vt.ci_hi).all()
    assert vt.p.between(0, 1).all() and vt.finite.all()
    assert np.allclose(vt.top1_drop_pp, 100 * dense["top1"] - vt.top1_pp)  # the drop is paired per image
    with pytest.raises(ReproError, match="not an image classifier"):
        VisionBanditExperiment("tiny-llama", Setup(), Store(None), n_calib=8, calib_batch_size=4)


def test_removal_cell_is_exact_and_smaller(exp):
    out = run_steps(removal_cell(exp, "magnitude", [(["head"], 0.25), (["mlp"], 0.25)], seed=1, batches=(1,),
                                 seqlen=16, repeats=1), exp.store)["result"]
    heads = exp.select("magnitude", ["head"], 0.25, seed=1)["result"]["units"]
    assert out["heads"] == len(heads) == 3
    assert out["units"] >= 2 and out["heads"] >= 1 and out["mlp_channels"] >= 1
    assert out["removed"]["params"] < out["zeroed"]["params"] == out["dense"]["params"]
    assert out["removed"]["checkpoint_bytes"] < out["dense"]["checkpoint_bytes"]
    assert out["removed_vs_zeroed_max_abs_logit_diff"] < 1e-4
    assert set(out["dense"]["prefill_b1"]) >= {"median_s", "times_s"}


def test_removal_table_pairs_speed_by_round():
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
    rows = [{"model": "m", "kinds": "head", "ratio": 0.1, "method": "wanda", "seed": 1,
             "units": [["head", 0, 1], ["head", 0, 2], ["head", 5, 0]]},
            {"model": "m", "kinds": "head", "ratio": 0.1, "method": "wanda", "seed": 2,
             "units": [["head", 1, 1], ["head", 19, 2], ["head", 2, 0]]},
            {"model": "m", "kinds": "dense", "ratio": 0.0, "method": "dense", "seed": None, "units": None}]
    t = layer_profile(pd.DataFrame(rows), {"m": 20})
    assert len(t) == 1 and t.iloc[0]["early layers"] == 2 and t.iloc[0].seeds == 2
    assert t.iloc[0]["share in early layers"] == pytest.approx(0.5) and t.iloc[0]["mean layer"] == pytest.approx(27 / 6)
    assert t.iloc[0]["share in last layers"] == pytest.approx(1 / 6)  # layer 19 of 20: in the last 2


# ---- the engine's grid and removal entry points ---------------------------------------------------

def test_search_parameters_go_to_the_sequential_selectors_only():
    assert search_params("ucb", FAST) is FAST and search_params("greedy", FAST) is FAST
    assert search_params("magnitude", FAST) is None and search_params("taylor", FAST) is None
    assert removal_parts({"mlp": [0.03, 0.08, 0.05], "head": [0.1]}) == [(["head"], 0.1), (["mlp"], 0.08)]


def test_grid_runs_dense_and_every_cell_with_the_right_parameters(exp):
    e = BanditExperiment("tiny-llama", SMALL, Store(None), calib_batch_size=2, progress=False, loaded=exp.loaded)
    recs = e.grid({"head": [0.25]}, ["magnitude", "ucb"], [1, 2], FAST)
    assert [(r["config"]["method"], r["result"]["selection"]["seed"]) for r in recs] == [
        ("magnitude", 1), ("magnitude", 2), ("ucb", 1), ("ucb", 2)]
    sel = {r["config"]["method"]: r["result"]["selection"]["params"] for r in recs}
    assert sel["magnitude"] == {} and sel["ucb"]["budget"] == FAST["budget"]  # one-shot scorers take no search
    asked = [k for k in e.store.status if k[0] == "bandit-ppl"]
    assert len(asked) == 5 and ("bandit-ppl", e.dense()["key"]) in asked  # the dense cell too
    # the ucb cell is the very record a direct cell() call asks for (same key: nothing recomputed)
    assert recs[2]["key"] == exp.cell("ucb", ["head"], 0.25, 1, FAST)["key"]


def test_removal_takes_each_unit_types_largest_ratio(exp):
    rec = exp.removal("magnitude", {"head": [0.1, 0.25], "mlp": [0.25]}, 1, FAST, batches=(1,), seqlen=16, repeats=1)
    direct = run_steps(removal_cell(exp, "magnitude", [(["head"], 0.25), (["mlp"], 0.25)], seed=1, batches=(1,),
                                    seqlen=16, repeats=1), exp.store)
    assert rec["key"] == direct["key"] and rec["result"]["heads"] == 3


# ---- reader tables on constructed records ----------------------------------------------------------

def lm_rows() -> pd.DataFrame:
    """Rows shaped like lm_table's: ucb and greedy on heads 10% over three seeds; greedy's seed 3
    failed (non-finite, no LAMBADA)."""
    rows = []
    for seed, pair in zip((1, 2, 3), ((1.0, 3.0), (2.0, 5.0), (3.0, np.inf))):
        for method, c in zip(("ucb", "greedy"), pair):
            ok = bool(np.isfinite(c))
            rows.append({"model": "m", "kinds": "head", "ratio": 0.1, "k": 3, "method": method, "seed": seed,
                         "change_pct": c, "ci_lo": c - 0.5 if ok else np.nan, "ci_hi": c + 0.5 if ok else np.nan,
                         "p": 0.01 if ok else np.nan, "finite": ok, "lambada_change_pct": 2 * c if ok else np.nan,
                         "lambada_acc_change": -0.01 * seed, "selection": f"{method}-{seed}"})
    return pd.DataFrame(rows)


def cells_frame() -> pd.DataFrame:
    """A bandit_frame-like frame: dense, and the cells of lm_rows with their units and budgets."""
    rows = [{"model": "m", "method": "dense", "kinds": "dense", "ratio": 0.0, "k": 0, "seed": None, "ppl": 20.0,
             "units": None, "budget": None}]
    for r in lm_rows().itertuples():
        rows.append({"model": "m", "method": r.method, "kinds": "head", "ratio": 0.1, "k": 3, "seed": r.seed,
                     "ppl": 21.0, "units": [["head", r.seed - 1, 0], ["head", 1, 2]],
                     "budget": {"calibration_passes": 0, "paired_evaluations": 8 * r.seed, "seconds": 1.0}})
    rows.append({"model": "m", "method": "magnitude", "kinds": "head", "ratio": 0.1, "k": 3, "seed": 1, "ppl": 22.0,
                 "units": [["head", 0, 1]], "budget": None})
    return pd.DataFrame(rows)


def test_table1_averages_finite_seeds_and_counts_failures():
    t = lm_summary(lm_rows(), cells_frame()).set_index("method")
    assert list(t.columns[:3]) == ["model", "kinds", "ratio"] and set(t.index) == {"MAB-UCB", "Budgeted greedy"}
    ucb, greedy = t.loc["MAB-UCB"], t.loc["Budgeted greedy"]
    assert ucb["WikiText-2 ppl change %"] == 2.0 and ucb.sd == 1.0 and ucb.failures == 0 and ucb.seeds == 3
    assert greedy["WikiText-2 ppl change %"] == 4.0 and greedy.failures == 1 and greedy.sd == 1.414  # rounded
    assert greedy["LAMBADA ppl change %"] == 8.0 and ucb["LAMBADA acc change"] == -0.02 and ucb.k == 3


def test_table1_per_seed_shows_every_seed_and_failures():
    t = per_seed_table(lm_rows())
    assert list(t.columns) == ["model", "units", "method", "seed 1", "seed 2", "seed 3"]
    row = t.set_index("method").loc["MAB-UCB"]
    assert row.units == "head 10%" and row["seed 1"] == "+1.0 [+0.5, +1.5] / +2.0"
    assert t.set_index("method").loc["Budgeted greedy", "seed 3"] == "inf (failure)"


def test_budget_table_means_over_seeds_without_dense():
    t = budget_table(cells_frame()).set_index("method")
    assert set(t.index) == {"MAB-UCB", "Budgeted greedy", "Magnitude"} and t.loc["MAB-UCB", "units"] == "head 10%"
    assert t.loc["MAB-UCB", "paired_evaluations"] == 16.0 and np.isnan(t.loc["Magnitude", "paired_evaluations"])


def test_first_run_and_head_maps():
    f = cells_frame()
    assert first_run(f, "m", "greedy", "head", 0.1).seed == 1 and first_run(f, "m", "thompson", "head", 0.1) is None
    maps = head_maps(f, {"m": (3, 4)})
    grid, seeds = maps["m"]
    assert grid.shape == (3, 4) and seeds == 3
    assert grid[1, 2] == 6 and grid[0, 0] == grid[1, 0] == grid[2, 0] == 2  # ucb and greedy, 3 seeds each
    assert grid[0, 1] == 0 and grid.sum() == 12  # magnitude (one-shot) is not counted


def vision_rows() -> pd.DataFrame:
    return pd.DataFrame([{"model": "v", "kinds": "head", "ratio": 0.1, "k": 2, "method": m, "seed": s,
                          "top1_pp": 90 - d, "top1_drop_pp": d, "ce": 0.3 + d / 100, "ce_increase": d / 100,
                          "paired_evaluations": 64,
                          "ci_lo": d - 1, "ci_hi": d + 1, "p": 0.5, "finite": True, "selection": f"{m}-{s}"}
                         for m, drops in (("thompson", (1.0, 2.0, 3.0)), ("greedy", (2.0, 4.0, 6.0)))
                         for s, d in zip((1, 2, 3), drops)])


def test_table2_vision_summary():
    t = vision_summary(vision_rows(), {"v": 20}).set_index("method")
    ts = t.loc["MAB-TS"]
    assert ts.drop_pp == 2.0 and ts.drop_sd == 1.0 and ts.top1_pp == 88.0 and ts.seeds == 3
    assert ts["effective ratio"] == 0.1 and t.loc["Budgeted greedy", "drop_pp"] == 4.0


def test_the_paper_family_is_mab_against_greedy_on_language_models_and_ours_the_rest():
    """greedy_tests: MAB vs budgeted greedy on the language models, WikiText-2 and LAMBADA, one test each;
    mab_tests: the rest (here only the vision comparison with greedy: language-model greedy is the paper's);
    all_tests: both, the paper's kind of family (every MAB-vs-baseline comparison on every data set)."""
    g = greedy_tests(lm_rows())
    assert list(zip(g.a, g.b, g.value)) == [("ucb", "greedy", "change_pct"), ("ucb", "greedy", "lambada_change_pct")]
    assert (g.seeds == 2).all() and g.iloc[1].mean_diff == pytest.approx(2 * g.iloc[0].mean_diff)  # finite pairs only
    t = mab_tests(lm_rows(), vision_rows())
    assert list(zip(t.a, t.b, t.value)) == [("thompson", "greedy", "top1_drop_pp")] and t.iloc[0].mean_diff == -2.0
    assert len(mab_tests(lm_rows(), vision_rows(), lm_skip=())) == 3  # greedy on WikiText-2, LAMBADA and vision
    assert len(all_tests(lm_rows(), vision_rows())) == len(g) + len(t) == 3
    assert mab_tests(pd.DataFrame(), pd.DataFrame()).empty and greedy_tests(pd.DataFrame()).empty


def test_across_seed_verdicts_and_tests_come_from_one_statistic():
    """Five seeds that all favour MAB by 2-3 points: the claim holds and its test rejects; three
    seeds that all agree by chance (a bootstrap over them would give [min, max]) do not suffice
    when their spread is large."""
    def table(diffs):
        rows = [{"model": "m", "kinds": "head", "ratio": 0.1, "method": m, "seed": s, "finite": True,
                 "change_pct": 10.0 + (d if m == "ucb" else 0.0), "lambada_change_pct": np.nan}
                for s, d in enumerate(diffs) for m in ("ucb", "greedy")]
        return pd.DataFrame(rows)

    for diffs, verdict in (([-2.0, -3.0, -2.5, -2.2, -2.8], "holds"), ([-0.1, -9.0, -0.2], "inconclusive")):
        c = claims_frame(bandit_claims(table(diffs)))
        row = c[c.setting == "m, head 10%, MAB-UCB"].iloc[0]
        p = greedy_tests(table(diffs)).iloc[0].p
        assert row.verdict == verdict and (p < 0.05) == (verdict == "holds"), (diffs, p)


def test_claims_are_paired_over_seeds_and_summarised():
    claims = claims_frame(bandit_claims(lm_rows(), vision_rows()))
    ucb = claims[claims.setting == "m, head 10%, MAB-UCB"].iloc[0]
    assert ucb.measured.startswith("change MAB-UCB - greedy -2.50 [") and ucb.measured.endswith("pp over 2 seeds")
    # seed 3 failed for greedy: two seeds paired; their t interval (1 degree of freedom) is wide, and the
    # verdict agrees with the across-seed test of the same numbers
    assert ucb.verdict == "inconclusive" and ucb.threshold == 0.0
    assert greedy_tests(lm_rows()).iloc[0].p > 0.05
    ts = claims[claims.setting == "m, head 10%, MAB-TS"].iloc[0]
    assert ts.measured == "not run" and ts.verdict == "inconclusive"
    lam = claims[claims.claim == "MAB has the lowest LAMBADA degradation"].iloc[0]
    assert lam.setting == "m, head 10%, MAB-UCB vs best other (Budgeted greedy)" and lam.effect == -5.0
    top1 = claims[claims.claim.str.startswith("MAB-TS loses less top-1")].iloc[0]
    assert top1.setting == "v, head 10% (k=2)" and top1.effect == 2.0 and top1.side == "above"
    ce = claims[claims.claim.str.startswith("MAB-UCB raises cross-entropy")].iloc[0]  # the paper's MAB-UCB claim
    assert ce.measured == "not run"  # no MAB-UCB vision run in these rows
    assert top1["paper effect"] is None  # attached by Report.claims (with_paper), not here
    assert not claims.claim.str.startswith("Paper's summary").any()  # counts belong in Table B2, not as rows
    lam_greedy = claims[claims.claim.str.startswith("MAB degrades LAMBADA perplexity less")]
    assert lam_greedy.setting.tolist() == ["m, head 10%, MAB-UCB", "m, head 10%, MAB-TS"]
    assert lam_greedy.iloc[0].effect == pytest.approx(2 * ucb.effect)  # LAMBADA change is 2x change_pct here
    text = claims_reading(claims)
    assert "across the 2 (setting, MAB variant) comparisons" in text
    assert "inconclusive: 2" in text and text.endswith(".")
    blocks = readme_blocks(Table(pd.DataFrame({"a": [1]}), "**T1.**"), Table(claims, "**Claims.**"))
    assert set(blocks) == {"bandit-headline", "bandit-tables", "bandit-claims"}
    assert readme_blocks(Table(pd.DataFrame(), ""), Table(claims, ""), "- generated")["bandit-discussion"].endswith(
        "(generated by the notebook from the records):\n\n- generated")
    assert blocks["bandit-tables"] == "**T1.**\n\n|   a |\n|----:|\n|   1 |\n"  # Markdown, no index column
    assert "MAB-TS loses less top-1" in blocks["bandit-claims"] and "**Inconclusive**" in blocks["bandit-claims"]
    assert blocks["bandit-headline"].startswith("*MAB degrades perplexity less than budgeted greedy*: inconclusive in")


# ---- one session's tables with their captions ------------------------------------------------------

def fake_report() -> Report:
    setup = Setup(data="wikitext2:test", seqlen=128, max_windows=24, eval_dtype="float32", calib_data="wikitext2-train",
                  calib_nsamples=8, calib_seqlen=128)
    adapter = SimpleNamespace(n_layers=3, attention=lambda i: SimpleNamespace(n_heads=4))
    lm = {"m": SimpleNamespace(identity={"quantisation": "Q4_K_M", "upstream": "org/m"},
                               structure={"n_layers": 3, "heads_per_layer": [4, 4, 4]},
                               setup=setup, calib_batch_size=1, search_dtype="bfloat16", adapter=adapter,
                               windows=lambda: "24 x 128 tokens, <bos> + text windows",
                               feeding_note=", <bos> + text windows", data=SimpleNamespace(label="WikiText-2 test"))}
    vision = {"v": SimpleNamespace(identity={"source": "trained here", "seed": 0, "test_top1": 0.9},
                                   setup=setup, n_calib=512, calib_batch_size=32, n_eval=2000, search_dtype="float32",
                                   structure={"heads_per_layer": [4, 6]},
                                   images=SimpleNamespace(root=None, n_classes=10, describe=lambda: "first 2000 Fashion-MNIST test "
                                                                                      "images"))}
    params = {"profile": "cpu", "seeds": [1, 2, 3], "search": {"budget": 8, "pool_size": 16},
              "vision_search": {"budget": 32, "pool_size": 48}, "lambada_limit": 30,
              "unit_settings": {"m": {"head": [0.1], "mlp": [0.03, 0.05]}},
              "models": ["m"], "removal": {"model": "m", "method": "thompson", "seed": 1, "batches": [1], "repeats": 15},
              "calib_batch_size": 1, "calib_seqlen": 128,
              "memory": "persist", "memory_ablation": True, "wide_search": {}, "join": "posterior",
              "join_ablation": True}
    store = Store(None)
    store.status[("bandit-ppl", "a")] = "computed"
    return Report(SimpleNamespace(store=store), SimpleNamespace(p=BanditParams.of(params), lm=lm, vision=vision))


def test_captions_name_the_setting_and_the_cache():
    r = fake_report()
    frame = pd.DataFrame({"key": [("bandit-ppl", "a"), ("bandit-ppl", "b")]})
    assert r.caption("T.", frame) == (
        "**T.** m (<bos> first); WikiText-2 test, 24 x 128 tokens; float32; LAMBADA first 30 documents; 8 pulls per "
        "step over a pool of 16, memory `persist`; seeds 1, 2, 3; profile `cpu`; 1 of 2 cells read from cached records.")
    assert r.caption("V.", vision=True) == (
        "**V.** v (trained here); first 2000 Fashion-MNIST test images; float32; 32 pulls per step over a pool of 48, "
        "memory `persist`; seeds 1, 2, 3; profile `cpu`.")
    assert "96 pulls per step over a pool of 96" in r.caption("W.", vision=True, search={"budget": 96, "pool_size": 96})
    assert r.provenance().splitlines() == [
        # the windows as they were drawn (spread over the split here, not "first"), the feeding rule once
        "- m: org/m; 3 layers; evaluation WikiText-2 test, 24 x 128 tokens, <bos> + text windows; calibration 8 x 128 "
        "tokens per seed in mini-batches of 1; weights Q4_K_M, evaluated in float32, search losses in bfloat16",
        "- v: trained here, seed 0, test top-1 0.900; calibration 512 training images per seed; evaluation on the "
        "first 2000 Fashion-MNIST test images; evaluated in float32, search losses in float32"]
    assert r.settings == [("m", "head", 0.1), ("m", "mlp", 0.03), ("m", "mlp", 0.05)] and r.n_heads == {"v": 10}
    lines = r.describe().splitlines()
    assert lines[0].startswith("m: org/m; 3 layers; evaluation WikiText-2 test, 24 x 128 tokens, <bos> + text windows")
    assert lines[1] == ("v: trained here, seed 0, test top-1 0.900; calibration 512 training images per seed; "
                        "evaluation on the first 2000 Fashion-MNIST test images")


def test_report_tables_come_with_their_captions():
    r, f, lm = fake_report(), cells_frame(), lm_rows()
    f["key"] = [("bandit-ppl", str(i)) for i in range(len(f))]
    f["rewards"] = [None] + [[[0.2, 0.5]]] * (len(f) - 2) + [[]]
    for (t, cap, reading, *_), title in ((r.table1(lm, f), "**Table 1."),
                                        (r.table1_per_seed(lm, f), "**Table 1 per seed"),
                                        (r.budget(f), "**Table B1."), (r.rewards(f), "**Rewards"),
                                        (r.layers(f), "**Where"), (r.table2(vision_rows(), f), "**Table 2.")):
        assert cap.startswith(title) and len(t) and reading.startswith("- **"), title  # the reading inside
        assert cap.endswith(f"{len(f)} of {len(f)} cells read from cached records."), title
    rewards = r.rewards(f).frame
    assert set(rewards.method) == {"MAB-UCB", "Budgeted greedy"} and rewards.pulls.sum() == 12
    layers = r.layers(f).frame
    assert layers.set_index("method").loc["Magnitude", "early layers"] == 1
    assert r.head_maps(f)["m"][0].shape == (3, 4)
    (b2, cap_b2, *_), (tests, cap_t, *_), (others, cap_o, *_) = r.statistics(lm, vision_rows(), f)
    assert cap_b2.startswith("**Table B2.") and cap_t.startswith("**The paper's comparison") and cap_o.startswith("**Ours")
    assert b2.family.tolist() == [ALL_FAMILY, PAPER_FAMILY, "MAB vs the other baselines, and every vision comparison "
                                  "(ours)", DENSE_FAMILY]
    assert b2.comparisons.tolist() == [len(tests) + 1, len(tests), 1, 12] and b2.iloc[3]["failures (non-finite)"] == 1
    assert b2["the paper"].tolist()[:2] == ["6 with q < 0.05 of 116", "23 / 11 / 6 of 28 (CI / p / q)"]
    assert tests["q (whole family)"].notna().all() and others["q (whole family)"].notna().all()
    assert (tests.a == "MAB-UCB").all() and (tests.b == "Budgeted greedy").all() and tests.q.notna().all()
    assert list(zip(others.a, others.b)) == [("MAB-TS", "Budgeted greedy")]  # the vision comparison
    raw, cap, *_ = r.claims(lm, vision_rows())
    shown = shown_claims(raw)
    assert list(shown.columns[:6]) == ["claim", "paper says", "setting", "measured", "verdict", "power"]
    assert len(raw) == len(shown) == 5 + lm.lambada_change_pct.notna().any() * 2  # no summary-count rows
    top1 = raw[raw.claim.str.startswith("MAB-TS loses less top-1")].iloc[0]
    assert top1["paper effect"] == pytest.approx(0.97)  # drop 2.05 vs 3.02: TS's top-1 0.97 points higher
    assert cap == "**Claims checked (Paper 3).** Profile `cpu`; seeds [1, 2, 3]; verdicts from 95% t intervals of the difference paired over seeds."
    text = r.discussion(f, lm, vision_rows(), raw)  # generated from the records, with this run's search
    assert "- **Dense references**" in text and "m: WikiText-2 20.00" in text
    assert "- **m, head 10%**: lowest mean WikiText-2 perplexity change over seeds is" in text and "(rank " in text
    assert "- **v, head 10%**: lowest mean top-1 drop (points) over seeds is MAB-TS's (+2.00)" in text
    assert "Where a one-shot score beats" not in text  # the best of each setting here is a search
    v = vision_rows()
    magnitude_best = pd.concat([v, v[v.method == "greedy"].assign(method="magnitude", top1_drop_pp=0.5)])
    text = r.discussion(f, lm, magnitude_best, raw)
    assert "- **Where a one-shot score beats the bandits** (Magnitude on v head 10%)" in text
    # a vision setting is explained with the vision searches' pool, budget and batches, not the language models'
    assert "its pool (48 candidates, chosen by magnitude) and 32 paired evaluations on mini-batches of 64 images" in text
    m = r.metrics(f, vision_rows(), raw)
    assert m["dense_ppl"] == {"m": 20.0} and m["n_cells"] == len(f) + 6 and m["n_claims"] == len(raw)


def test_removal_caption_reads_the_record():
    times = {"median_s": 0.2, "times_s": [0.2, 0.2]}
    res = {"heads": 3, "mlp_channels": 64, "removed_vs_zeroed_max_abs_logit_diff": 2e-6,
           "machine": {"cpu": "EPYC", "flags": ["avx2", "avx512f", "avx512_bf16"], "fast_bf16": True, "threads": 2},
           **{v: {"params": 10, "checkpoint_bytes": 1e6, "prefill_b1": times} for v in ("dense", "zeroed", "removed")}}
    t, cap, _, _, *_ = fake_report().removal({"config": {"seqlen": 128, "repeats": 15, "dtype": "bfloat16",
                                                     "batches": [1]}, "result": res})
    assert list(t.model) == ["dense", "zeroed", "removed"] and "prefill b1 (ms)" in t
    assert cap == ("**Removal of m's MAB-TS seed-1 selection (head 10% and mlp 5%): 3 heads and 64 MLP channels.** "
                   "Prefill of 128 tokens, median of 15 round-robin repeats, bfloat16, timed on EPYC (AVX512-BF16, "
                   "fast bfloat16), 2 threads; removed vs zeroed logits differ by at most 2.0e-06; profile `cpu`.")
    older = {k: v for k, v in res.items() if k != "machine"}  # a record from before timings named their machine
    cap = fake_report().removal({"config": {"seqlen": 128, "repeats": 15, "dtype": "bfloat16", "batches": [1]},
                                 "result": older}).caption
    assert "bfloat16, timed on a CPU not recorded by name; removed" in cap


def test_removal_caption_says_how_many_heads_padding_keeps():
    """Three heads selected on a GQA model (4 query heads, 2 KV heads): head 1 of layer 0 leaves its
    group uneven, so padding keeps it as a zero head; heads 0 and 1 of layer 1 empty a whole group
    and go. The caption says 2 removed, 1 kept, not "3 heads"."""
    r = fake_report()
    r.lm["m"].structure = {**r.lm["m"].structure, "kv_heads_per_layer": [2, 2, 2]}  # the model card's count
    sel = r.store.put("bandit-select", {"method": "thompson", "seed": 1},
                      {"units": [["head", 0, 1], ["head", 1, 0], ["head", 1, 1]]})
    times = {"median_s": 0.2, "times_s": [0.2, 0.2]}
    res = {"heads": 3, "mlp_channels": 0, "removed_vs_zeroed_max_abs_logit_diff": 0.0,
           **{v: {"params": 10, "checkpoint_bytes": 1e6, "prefill_b1": times} for v in ("dense", "zeroed", "removed")}}
    cap = r.removal({"config": {"seqlen": 128, "repeats": 15, "dtype": "bfloat16", "batches": [1],
                                "selections": [sel["key"]]}, "result": res}).caption
    assert ("3 heads selected (2 physically removed, 1 kept as zero heads by GQA padding, so the parameter drop is "
            "2 heads' worth)") in cap


def test_memory_reading_counts_the_verdicts_per_rule_and_names_where_the_other_rule_did_better():
    t = pd.DataFrame({"model": ["m", "m", "m"], "kinds": ["head", "mlp", "head"], "ratio": [0.1, 0.05, 0.1],
                      "method": ["MAB-UCB"] * 3, "rule": ["step", "step", "carry"], "other - main": [-3.0, 1.0, 2.0],
                      "ci_lo": [-5.0, -1.0, 1.0], "ci_hi": [-1.0, 3.0, 3.0],
                      "verdict (persist better)": ["does not hold", "inconclusive", "holds"]})
    assert memory_reading(t).splitlines() == [
        "- **persist against step**, persist better: does not hold 1, inconclusive 1 (of 2 settings); step did better "
        "in: m head 10% MAB-UCB (-3).",
        "- **persist against carry**, persist better: holds 1 (of 1 settings)."]
    assert memory_reading(t.iloc[:0]) == ""


def test_rewards_and_removal_readings():
    rw = pd.DataFrame({"model": ["m", "m"], "units": ["head 10%"] * 2, "method": ["MAB-TS", "MAB-UCB"],
                       "harmful": [0.8, 0.9], "mean reward": [0.1, 0.12]})
    assert rewards_reading(rw) == ("- **m, head 10%**: 80%-90% of pulls harmful, mean reward 0.100-0.120 "
                                   "over MAB-TS, MAB-UCB.")
    rm = pd.DataFrame({"model": ["dense", "removed"], "params": [100, 90], "speed-up b1 [95% CI]": [1, "x1.1 [1.0, 1.2]"]})
    assert removal_reading(rm) == "- **removed**: 10.0% fewer parameters; prefill x1.1 [1.0, 1.2] at b1."


def test_notebook_3_parameters_are_checked_before_any_model_loads():
    """A bad memory or join rule is one line naming the parameter and the known values."""
    from repro.papers.bandit.params import BanditParams

    good = {"models": ["m"], "unit_settings": {"m": {"head": [0.1]}}, "methods": ["thompson"], "seeds": [1],
            "search": {"budget": 8, "pool_size": 16}, "lambada_limit": None, "vision_models": [], "vision_ratio": 0.1,
            "vision_methods": ["thompson"], "vision_search": {}, "memory": "persist", "memory_ablation": True,
            "join": "posterior", "join_ablation": True, "wide_search": {}, "removal": None, "seqlen": 8}
    assert BanditParams.of(good).join == "posterior"
    with pytest.raises(ReproError, match="unknown join 'median'; known: mean, posterior"):
        BanditParams.of({**good, "join": "median"})
    with pytest.raises(ReproError, match="unknown memory 'forever'"):
        BanditParams.of({**good, "memory": "forever"})


def test_ablations_run_on_the_ablation_settings_only():
    """``ablation_settings`` restricts sections 5b and 5d to part of ``unit_settings`` (the 8% MLP cells run
    the notebook's rule only); None keeps every setting; a setting outside unit_settings is refused."""
    from repro.papers.bandit.grid import BanditGrid
    from repro.papers.bandit.params import BanditParams

    params = {"models": ["m"], "unit_settings": {"m": {"head": [0.1], "mlp": [0.03, 0.08]}}, "methods": ["thompson"],
              "seeds": [1], "search": {"budget": 8, "pool_size": 16}, "lambada_limit": None, "vision_models": [],
              "vision_ratio": 0.1, "vision_methods": ["thompson"], "vision_search": {}, "memory": "persist",
              "memory_ablation": True, "join": "posterior", "join_ablation": True, "wide_search": {}, "removal": None,
              "seqlen": 8}
    grid = BanditGrid.__new__(BanditGrid)
    grid.lm, grid.vision = {"m": SimpleNamespace(grid=SimpleNamespace(ask=lambda units, *a: units))}, {}
    for ablation, expected in ((None, {"head": [0.1], "mlp": [0.03, 0.08]}),
                               ({"m": {"mlp": [0.03]}}, {"mlp": [0.03]})):
        grid.p = BanditParams.of({**params, "ablation_settings": ablation})
        # the units of each grid call the two sections yield (their bodies driven without running a cell)
        calls = [*BanditGrid.memory_ablation.steps(grid), *BanditGrid.join_ablation.steps(grid)]
        assert calls == [expected] * 5  # UCB and TS under "step" and "carry", then TS under the other join
    with pytest.raises(ReproError, match=r"ablation_settings\['m'\] must be a part of unit_settings"):
        BanditParams.of({**params, "ablation_settings": {"m": {"mlp": [0.05]}}})


def test_the_greedy_with_memory_control_splits_mab_vs_greedy_into_allocation_and_memory():
    """With the control's rows in a setting, the claims add memory (control - greedy) and allocation (MAB -
    control) beside MAB vs greedy (both): per seed the two parts add up to the whole."""
    from repro.papers.bandit.claims import ALLOCATION, MEMORY
    from repro.papers.bandit.records import MAB_VS_GREEDY

    lm = lm_rows()
    control = lm[lm.method == "greedy"].assign(method="greedy-memory", change_pct=[1.5, 3.0, np.inf],
                                               selection=lambda f: "gm-" + f.seed.astype(str))
    claims = bandit_claims(pd.concat([lm, control], ignore_index=True))
    memory = [c for c in claims if c.claim == MEMORY]
    allocation = [c for c in claims if c.claim == ALLOCATION and "UCB" in c.setting]  # (TS did not run: "not run")
    both = [c for c in claims if c.claim == MAB_VS_GREEDY and "UCB" in c.setting]
    assert len(memory) == 1 and [c.setting for c in allocation] == ["m, head 10%, MAB-UCB"] and len(both) == 1
    assert memory[0].effect + allocation[0].effect == pytest.approx(both[0].effect)  # seeds 1 and 2 (3 failed)
    assert memory[0].unit == "seeds" and "greedy with memory - greedy" in memory[0].measured
    assert not [c for c in bandit_claims(lm) if c.claim in (MEMORY, ALLOCATION)]  # no control: no such rows


def test_a_paper_setting_search_reaches_the_experiment_that_planned_it(tmp_path):
    """Section 2b searches one model in another precision than section 2: the two experiments differ only in their
    search dtype, so their addresses must too, or a job planned by one would run on the other (and write a record
    its plan never asked for)."""
    from repro.jobs import Context
    from repro.notebooks import load_profile

    from conftest import ROOT

    src, g = ROOT / "notebooks/03_bandit_pruning.py", "tiny-gemma3"
    params = {**load_profile(ROOT / "notebooks/profiles/smoke.yaml", src.stem), "models": [g], "seeds": [1],
              "unit_settings": {g: {"head": [0.25]}}, "search_dtype": "eval", "eval_dtype": "bfloat16",
              "vision_models": [], "ucb_c_ablation": {}, "search_replay": [], "removal": None,
              "paper_search": {"budget": 6, "pool_size": 8, "methods": ["ucb"], "unit_settings": {g: {"head": [0.25]}}},
              "results_dir": str(tmp_path / "r"), "figures_dir": str(tmp_path / "f")}
    ctx = Context(src, params)
    searched = [(ctx.index[j.address].search_dtype, dict(j.kwargs).get("params") or (j.args[4] if len(j.args) > 4 else None))
                for j in ctx.plan() if j.call == "select"]
    paper = [d for d, p in searched if p and p.get("pool_size") == 8]
    assert paper == ["float32"] and {d for d, p in searched if not (p and p.get("pool_size") == 8)} == {"bfloat16"}
