"""Issue 49's readings of what the bandits' results owe to what (repro.papers.bandit.mechanism, the worked UCB
pull reasons, the refreshing toy and the claim rows it added), on synthetic arms and hand-made frames: no model."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from repro.methods.bandit import UCB, bandit_search, greedy_search
from repro.methods.replay import replay_joins
from repro.papers.bandit import mechanism as M
from repro.papers.bandit.synthetic import SyntheticArms, arms
from repro.papers.bandit.worked import bonus_decided_pull, pull_reasons, ucb_step


def ucb_record(c: float, seed: int = 0) -> dict:
    means = arms(24, 6, seed=seed)
    sel = bandit_search(SyntheticArms(means, 0.02, seed), list(means), np.arange(24.0), 8, UCB(c), seed=seed,
                        budget=8, pool_size=8)
    return sel.as_dict()


def test_greedy_rewards_are_put_back_in_pull_order():
    """Budgeted greedy records a step's rewards grouped by unit; a replay on the same noise gives them in pull
    order, and :func:`mechanism._in_pull_order` maps one onto the other (a wrong map mismatches steps where a
    unit is tried twice, which a budget above the pool forces)."""
    means = arms(10, 3, seed=1)
    sel = greedy_search(SyntheticArms(means, 0.02, 5), list(means), np.arange(10.0), 4, seed=2, budget=9,
                        pool_size=5)
    out = replay_joins(SyntheticArms(means, 0.02, 5), sel.units, sel.pulled, "greedy", 2, sel.params or {})
    names = [[str(u) for u in step] for step in sel.pulled]
    assert any(len(set(s)) < len(s) for s in names)  # repeated trials: grouped order differs from pull order
    for step, rs, replayed in zip(names, sel.rewards, out["rewards"]):
        np.testing.assert_allclose(M._in_pull_order(step, rs), replayed)
    assert any(not np.allclose(rs, r) for rs, r in zip(sel.rewards, out["rewards"]))


def test_pull_reasons_follow_the_bonus_at_a_large_c_and_the_rewards_at_a_small_one():
    big, small = pull_reasons(ucb_record(50.0), 50.0), pull_reasons(ucb_record(0.001), 0.001)
    assert big.least_pulled.all() and len(big) > 10  # a huge bonus: always the least-pulled candidate
    assert small.best_mean.all()  # no bonus to speak of: always the best mean reward
    step, pull = bonus_decided_pull(ucb_record(1.5), 1.5)
    t = ucb_step(ucb_record(1.5), step, 1.5, pull)
    picked, best = t[t.pulled].iloc[0], t.sort_values("mean reward").iloc[-1]
    assert picked.unit != best.unit and picked["index"] >= best["index"]  # the bonus, not the reward, chose it
    assert bonus_decided_pull(ucb_record(0.001), 0.001) is None


def lm_table(values: dict[str, list[float]], kinds: str = "mlp", ratio: float = 0.05) -> pd.DataFrame:
    return pd.DataFrame([{"model": "m", "kinds": kinds, "ratio": ratio, "method": m, "seed": s, "change_pct": v}
                         for m, vs in values.items() for s, v in zip((1, 2, 3, 4), vs)])


def test_the_decomposition_adds_up_and_needs_the_control():
    lm = lm_table({"greedy": [10, 12, 11, 13], "greedy-memory": [9, 10, 10, 12], "ucb": [8, 9, 9, 10],
                   "thompson": [10, 12, 11, 12]})
    t = M.decomposition(lm)
    assert list(t.bandit) == ["MAB-UCB", "MAB-TS"] and (t.seeds == 4).all()
    est = lambda s: float(s.split()[0])  # noqa: E731
    for r in t.itertuples():
        assert est(r[5]) + est(r[6]) == pytest.approx(est(r[4]))  # memory + allocation = both, seed by seed
    assert t.iloc[0].memory_sign == -1 and t.iloc[0].both_sign == -1
    assert "below 0 (less perplexity change) in 1 of 2" in M.decomposition_reading(t)
    assert M.decomposition(lm[lm.method != "greedy-memory"]).empty


def test_the_exploration_table_reads_allocation_per_constant_and_pairs_perplexity_with_the_main_c():
    frames, tables = {}, {}
    for c, change in ((1.5, [10.0, 11.0]), (0.05, [9.0, 9.5])):
        recs = [ucb_record(c, seed) for seed in (1, 2)]
        frames[c] = pd.DataFrame([{"model": "m", "kinds": "head", "ratio": 0.3, "method": "ucb", "seed": s,
                                   "units": r["units"], "pulled": r["pulled"], "rewards": r["rewards"]}
                                  for s, r in zip((1, 2), recs)])
        tables[c] = frames[c].assign(change_pct=change)[["model", "kinds", "ratio", "method", "seed", "change_pct"]]
    t = M.exploration_table(frames, tables)
    main, small = t[t.c == 1.5].iloc[0], t[t.c == 0.05].iloc[0]
    assert main["decided to least-pulled"] > small["decided to least-pulled"] + 0.3
    assert main["change - c=1.5"] == "" and small["change - c=1.5"].startswith("-1.25 [")
    assert "at c = 1.5" in M.exploration_reading(t)


def test_timing_reads_seconds_per_layer_forward_and_the_machine():
    frame = pd.DataFrame([{"model": "m", "kinds": "mlp", "ratio": 0.05, "method": m, "seed": s,
                           "selection": f"{m}{s}"} for m in ("ucb", "thompson") for s in (1, 2)])
    secs = {"ucb1": 40.0, "ucb2": 10.0, "thompson1": 10.0, "thompson2": 12.0}
    sels = {k: {"result": {"budget": {"seconds": v, "layer_forwards": 1000}},
                "machine": {"cpu": "X", "threads": 1}} for k, v in secs.items()}
    t = M.timing_table(frame, sels).set_index("method")
    assert t.loc["MAB-UCB", "s per 1000 layer forwards"] == 25.0 and t.loc["MAB-UCB", "max"] == 40.0
    assert "1 thread(s)" in t.loc["MAB-TS", "machines"]
    reading = M.timing_reading(t.reset_index())
    assert "25.0 against 11.0 s per 1000" in reading and "In 1 of 1 settings the two methods' ranges" in reading
    apart = M.timing_table(frame, {**sels, "ucb2": {**sels["ucb2"], "result": {"budget": {"seconds": 30.0,
                                                                                       "layer_forwards": 1000}}}})
    assert "In 0 of 1 settings" in M.timing_reading(apart)  # UCB's 30-40 s never meets TS's 10-12: a real gap


def test_the_magnitude_pool_sets_the_norm_beside_the_measured_damage():
    """The bandits' pulls of the lowest-norm heads give their damage; the reading says whether the norm orders it
    (a norm that ranks damage exactly gives Spearman +1)."""
    from scipy.special import expit

    names = [f"head0.{i}" for i in range(6)]
    norms = {n: 1.0 + i for i, n in enumerate(names)}
    damage = {n: 0.01 * (i + 1) for i, n in enumerate(names)}  # damage rises with the norm
    pulls = [names[:3], names[3:]]
    rewards = [[float(expit(-damage[n] / 0.02)) for n in step] for step in pulls]
    frame = pd.DataFrame([{"model": "g", "kinds": "head", "ratio": 0.3, "method": "magnitude", "seed": 1,
                           "units": [["head", 0, 0], ["head", 0, 1]], "scores": norms, "pulled": None, "rewards": None},
                          {"model": "g", "kinds": "head", "ratio": 0.3, "method": "ucb", "seed": 1,
                           "units": [], "scores": {}, "pulled": pulls, "rewards": rewards}])
    t = M.magnitude_pool(frame, "g")
    np.testing.assert_allclose(t["mean damage (nats)"], [damage[n] for n in names])
    assert list(t["magnitude selects"]) == [True, True, False, False, False, False]
    lm = lm_table({"magnitude": [5.0], "random": [9.0]}, kinds="head", ratio=0.3).assign(model="g")
    reading = M.magnitude_reading(t, lm)
    assert "the norm ranks the measured damage (Spearman +1.00" in reading and "+5.0% against random's +9.0%" in reading


def test_the_replay_reading_says_what_the_changed_joins_mean_for_this_run():
    t = pd.DataFrame([{"model": "m", "units": "mlp 5%", "method": "MAB-UCB", "seed": 1, "steps": 10,
                       "joins changed": 2, "mean |d32 - d|": 0.003, "median margin": 0.002}])
    assert "to be recomputed in float32" in M.replay_reading(t, "bfloat16")
    assert "which settles it" in M.replay_reading(t, "float32")
    assert "allows bfloat16" in M.replay_reading(t.assign(**{"joins changed": 0}), "bfloat16")


def test_the_refreshing_toy_table_contrasts_the_two_constants():
    from repro.papers.bandit.synthetic import SMALL_C, refresh_compare, refresh_table

    t = refresh_table(refresh_compare(seeds=range(6)))
    rows = t.frame.set_index("policy")
    assert rows.loc["ucb", "decided to least-pulled"] > rows.loc[f"ucb c={SMALL_C:g}", "decided to least-pulled"]
    assert f"At c = {SMALL_C:g}" in t.reading


def test_the_mechanism_claim_rows():
    """Per setting: the paper's MLP finding for UCB and greedy (mean change against 0), the gradient scorers
    against the better bandit by mean, and magnitude against random."""
    from repro.papers.bandit.claims import GRADIENT_TOP, LOWERS_UCB, MAGNITUDE_VS_RANDOM, _mechanism_claims

    t = lm_table({"ucb": [-1.0, -2.0, -1.5, -1.2], "greedy": [3, 4, 5, 4], "thompson": [0.0, 1.0, 0.5, 0.2],
                  "fisher": [-3.0, -2.5, -3.5, -2.8], "magnitude": [9.0] * 4, "random": [5.0, 6.0, 7.0, 5.5]})
    rows = {(c.claim, c.setting): c for c in _mechanism_claims(t, "m, mlp 5%", "mlp")}
    assert rows[(LOWERS_UCB, "m, mlp 5%")].verdict == "holds"
    grad = [c for (claim, _), c in rows.items() if claim == GRADIENT_TOP]
    assert len(grad) == 1 and "vs MAB-UCB" in grad[0].setting and grad[0].verdict == "holds"
    assert rows[(MAGNITUDE_VS_RANDOM, "m, mlp 5%")].verdict == "does not hold"
    heads = _mechanism_claims(t.assign(kinds="head"), "m, head 10%", "head")
    assert LOWERS_UCB not in {c.claim for c in heads}  # the paper's finding is about MLP groups


def test_the_verdict_scope_says_what_the_design_lets_a_mab_verdict_measure():
    lm = lm_table({"greedy": [10, 12, 11, 13], "greedy-memory": [9, 10, 10, 12], "ucb": [8, 9, 9, 10],
                   "thompson": [10, 12, 11, 12]})
    spread = pd.DataFrame({"bonus step / reward sd": [6.0, 14.0]})
    explored = pd.DataFrame({"c": [1.5, 1.5, 0.1], "decided to least-pulled": [0.7, 0.99, 0.2]})
    text = M.verdict_scope(M.decomposition(lm), spread, explored)
    assert "6-14 times" in text and "70%-99%" in text
    assert "of the 1 (setting, bandit) rows where MAB beats greedy, 1 has an allocation part" in text  # UCB
    # the conclusion follows the rows: here both parts resolved, below one part or the other
    assert "the control resolves allocation in 1 of the 1 rows and memory in 1." in text
    alloc = lm_table({"greedy": [10, 12, 11, 13], "greedy-memory": [10, 12.2, 11, 13.1], "ucb": [8, 9, 9, 10],
                      "thompson": [10, 12, 11, 12]})
    assert "the control resolves allocation in 1 of the 1 rows and memory in none." in M.verdict_scope(
        M.decomposition(alloc), spread, explored)
    assert "seeded permutations of the pool" in text  # the control's other difference, named
    memory = lm_table({"greedy": [10, 12, 11, 13], "greedy-memory": [8, 9, 9, 10], "ucb": [8, 9, 9, 10.2],
                       "thompson": [10, 12, 11, 12]})
    assert "the control resolves allocation in 0 of the 1 rows and memory in 1." in M.verdict_scope(M.decomposition(memory),
                                                                                       spread, explored)
    assert M.verdict_scope(pd.DataFrame(), pd.DataFrame(), pd.DataFrame()) == ""


def test_the_prescreen_bound_is_k_minus_pool_plus_one_and_the_overlap_is_measured():
    """A search choosing k = 10 units from a pool of 4 must take at least 7 of magnitude's 10 (the pool reaches only
    the 13 lowest-norm units); the table says so beside the overlap the selections really have, and its reading names
    how many units the searches chose themselves. A search with a pool of 48 is forced to nothing."""
    import pandas as pd

    from repro.papers.bandit.mechanism import prescreen_reading, prescreen_table

    mag = [("mlp", 0, i) for i in range(10)]
    rows = [{"model": "m", "kinds": "mlp", "ratio": 0.1, "method": "magnitude", "units": mag, "search": None, "seed": 1}]
    for seed, extra in ((1, 3), (2, 1)):  # 3 and 1 units beyond magnitude's 10
        units = mag[:10 - extra] + [("mlp", 0, 10 + j) for j in range(extra)]
        rows.append({"model": "m", "kinds": "mlp", "ratio": 0.1, "method": "ucb", "units": units, "search": (8, 4),
                     "seed": seed})
    rows.append({"model": "m", "kinds": "mlp", "ratio": 0.1, "method": "greedy", "units": mag[:5] + [("mlp", 1, j)
                 for j in range(5)], "search": (32, 48), "seed": 1})
    t = prescreen_table(pd.DataFrame(rows))
    ucb = t[t.method == "MAB-UCB"].iloc[0]
    assert ucb.forced == 0.7 and ucb.overlap == 0.8 and (ucb["min"], ucb["max"]) == (0.7, 0.9) and ucb.seeds == 2
    greedy = t[t.method == "Budgeted greedy"].iloc[0]
    assert greedy.forced == 0.0 and greedy.overlap == 0.5 and greedy.pool == 48
    text = prescreen_reading(t)
    assert "at least 7 of the 10 units (70%) are magnitude's by construction" in text and "chose 2 of the 10" in text
    assert "the pool forces no unit" in text and "50% (every method)" in text


def test_seed_gaps_are_each_seeds_paired_difference_against_greedy():
    """The per-seed figure's numbers: MAB's change minus greedy's on the same seed, finite seeds only; their mean is
    the claim's paired mean difference."""
    from repro.papers.bandit.seeds import seed_diff
    from repro.papers.bandit.tables import seed_gaps

    lm = lm_table({"greedy": [10, 12, 11, 13], "greedy-memory": [9, 10, 10, 12], "ucb": [8, 9, 9, float("inf")],
                   "thompson": [10, 12, 11, 12]})
    g = seed_gaps(lm)
    ucb = g[g.bandit == "MAB-UCB"]
    assert list(ucb.gap) == [-2, -3, -2] and len(g[g.bandit == "MAB-TS"]) == 4  # the infinite seed left out
    ts = g[g.bandit == "MAB-TS"]
    assert ts.gap.mean() == pytest.approx(seed_diff(lm, "thompson", "greedy", "change_pct").estimate)


def test_one_shot_scorers_reach_where_the_bandit_never_looked():
    """k = 2 of 6 MLP groups, a pool of 2: the bandit can only reach the 3 lowest norms (k + P - 1). Fisher choosing
    groups ranked 4th and 6th by norm chose 2 units the bandit never pulled, both beyond the pool's reach; the layer
    table lists its layer's candidates in Fisher's order with each scorer's rank and choice."""
    import pandas as pd

    from repro.papers.bandit.scorers import layer_scores, reach, reach_reading

    names = [f"mlp0.{i}" for i in range(6)]
    norms = dict(zip(names, [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]))
    fisher = dict(zip(names, [5.0, 4.0, 6.0, 1.0, 3.0, 2.0]))
    base = {"model": "m", "kinds": "mlp", "ratio": 0.3, "seed": 1}
    f = pd.DataFrame([
        {**base, "method": "magnitude", "units": [["mlp", 0, 0], ["mlp", 0, 1]], "scores": norms, "pulled": None,
         "search": None},
        {**base, "method": "fisher", "units": [["mlp", 0, 3], ["mlp", 0, 5]], "scores": fisher, "pulled": None,
         "search": None},
        {**base, "method": "taylor", "units": [["mlp", 0, 0], ["mlp", 0, 3]], "scores": fisher, "pulled": None,
         "search": None},
        {**base, "method": "ucb", "units": [["mlp", 0, 1], ["mlp", 0, 2]], "scores": None,
         "pulled": [["mlp0.0", "mlp0.1"], ["mlp0.2", "mlp0.0"]], "search": (8, 2)}])
    t = reach(f)
    row = t[t.scorer == "Fisher"].iloc[0]
    assert row["never pulled by MAB-UCB"] == 1.0 and row["beyond the pool's reach"] == 1.0
    taylor = t[t.scorer == "Taylor"].iloc[0]
    assert taylor["never pulled by MAB-UCB"] == 0.5
    assert "100% of Fisher's units were never pulled" in reach_reading(t)
    layer = layer_scores(f, "m", "mlp", 0.3, 1)
    assert list(layer.unit[:2]) == ["mlp0.3", "mlp0.5"] and list(layer["Fisher selects"][:2]) == [True, True]
    assert layer.set_index("unit").loc["mlp0.2", "MAB-UCB pulled"] and layer["Magnitude rank"].min() == 1


def test_the_newcomer_edge_is_the_bonus_gap_to_an_arm_with_the_median_pulls():
    """Under persist a newcomer pulled once faces arms pulled n times: its bonus edge is c sqrt(ln t)(1 - 1/sqrt(n)),
    larger than the one-more-pull step, so the c that matches it to the rewards' spread is smaller."""
    import pandas as pd

    from repro.methods.bandit import UCB
    from repro.papers.bandit.mechanism import reward_spread

    rewards = [[0.5, 0.6, 0.4, 0.55], [0.45, 0.5, 0.6, 0.4]]
    pulled = [["mlp0.0", "mlp0.1", "mlp0.0", "mlp0.2"], ["mlp0.1", "mlp0.3", "mlp0.1", "mlp0.3"]]
    f = pd.DataFrame([{"model": "m", "kinds": "mlp", "ratio": 0.05, "method": "ucb", "rewards": rewards,
                       "pulled": pulled, "pulls": {"mlp0.0": 2, "mlp0.1": 4, "mlp0.2": 1, "mlp0.3": 4}}])
    r = reward_spread(f, c=1.5).iloc[0]
    ucb = UCB(1.5)
    assert r["pulls of an arm (median)"] == 3.0 and r["t (mid-run)"] == 4.0
    assert r["newcomer's edge"] == pytest.approx(ucb.bonus(1, 4.0) - ucb.bonus(3, 4.0))
    assert r["newcomer's edge"] > r["bonus step"] and r["c matched, newcomer vs arm"] < r["c matched to the sd"]
