"""The generated sentences after notebook tables (issue 29): each reader on a constructed table, so a
reading that names the wrong row, miscounts or says 'better' for 'worse' fails here. Paper: bandit."""
import numpy as np
import pandas as pd
import pytest

from repro.papers.bandit.readings import (
    allocation_reading,
    budget_reading,
    comparisons_reading,
    join_reading,
    lambada_reading,
    layers_reading,
    per_seed_reading,
    rescale_reading,
    synthetic_reading,
    table2_reading,
    worked_join_reading,
)


def _lm():
    rows = []
    for seed, (g, r, lam) in zip([1, 2, 3], [(10.0, 30.0, 5.0), (12.0, 80.0, -13.1), (11.0, 40.0, 2.0)]):
        rows += [{"model": "m", "kinds": "head", "ratio": 0.1, "method": "greedy", "seed": seed, "change_pct": g,
                  "lambada_change_pct": 4.0},
                 {"model": "m", "kinds": "head", "ratio": 0.1, "method": "random", "seed": seed, "change_pct": r,
                  "lambada_change_pct": lam}]
    return pd.DataFrame(rows)


def test_bandit_per_seed_reading_names_the_widest_method_and_the_runs_that_lower_lambada():
    lm = _lm().assign(lambada_acc_change=0.02)
    assert per_seed_reading(lm).endswith("Random seed 2 (-13.1%, last-word accuracy +0.02).")
    assert per_seed_reading(_lm()) == (
        "- **m, head 10%**: seed to seed the WikiText-2 change moves most for Random (50 points between its best and "
        "worst seed); LAMBADA perplexity falls in 1 of 6 runs: Random seed 2 (-13.1%).")


def test_bandit_layers_budget_and_tests_readings():
    lp = pd.DataFrame({"model": ["m"] * 2, "units": ["head 10%"] * 2, "method": ["wanda", "ucb"],
                       "early layers": [3, 3], "share in early layers": [0.78, 0.1]})
    assert layers_reading(lp) == ("- **m, head 10%**: Wanda-style puts 78% of its units in the first 3 "
                                  "layer(s); no other method more than 10%.")
    lp["share in last layers"] = [0.0, 0.9]  # a method piling its units at the end is named instead
    assert layers_reading(lp) == ("- **m, head 10%**: MAB-UCB puts 90% of its units in the last 3 "
                                  "layer(s); no other method more than 0%.")
    b1 = pd.DataFrame({"model": ["m"] * 3, "units": ["head 10%"] * 3, "method": ["MAB-UCB", "Budgeted greedy", "Fisher"],
                       "paired_evaluations": [56.0, 56.0, 0.0], "calibration_passes": [0.0, 0.0, 8.0],
                       "seconds": [40.0, 44.0, 58.0]})
    assert budget_reading(b1) == ("- **m, head 10%**: the searches spend the same 56 paired evaluations per "
                                  "run in 40-44 s; the one-shot scorers 58-58 s.")
    assert "different budgets: MAB-UCB 56, Budgeted greedy 60" in budget_reading(
        b1.assign(paired_evaluations=[56.0, 60.0, 0.0]))
    tests = pd.DataFrame({"b": ["Random", "Fisher", "Budgeted greedy"], "mean_diff": [-5.0, 3.0, 1.0],
                          "ci_lo": [-9.0, 1.0, -1.0], "ci_hi": [-1.0, 5.0, 3.0], "q": [0.01, 0.2, 0.5]})
    assert comparisons_reading(tests) == (
        "- The 95% interval excludes 0 in 2 of 3 comparisons: 1 favour the bandit, 1 the baseline (Fisher); 1 have "
        "q < 0.05 within the family.")


def test_allocation_reading_and_table():
    """The allocation table from constructed frames: greedy counted once across rules; the reading gives
    distinct candidates per step against pulls, and the pulls a join was decided on."""
    from repro.papers.bandit.tables import allocation_table

    row = {"model": "m", "kinds": "head", "ratio": 0.1, "units": [["head", 0, 1]], "pulled": [["head0.1", "head0.1"]]}
    frames = {"persist": pd.DataFrame([{**row, "method": "ucb", "seed": 1}, {**row, "method": "greedy", "seed": 1}]),
              "step": pd.DataFrame([{**row, "method": "ucb", "seed": 1}, {**row, "method": "greedy", "seed": 1}])}
    t = allocation_table(frames)
    assert list(zip(t.method, t.memory)) == [("Budgeted greedy", "-"), ("MAB-UCB", "persist"), ("MAB-UCB", "step")]
    assert (t.distinct_per_step == 1).all() and (t.join_evidence == 2).all()
    assert allocation_reading(t).splitlines()[1] == (
        "- **MAB-UCB, persist, 2 pulls per step** (1 setting): 1 distinct candidates per step; joins decided on 2 "
        "pulls; 100% of joins pulled under their mask; 100% of the pulls and 100% of the joins go to units first "
        "pulled in that step.")  # its one unit is pulled first in the step it joins


def test_lambada_investigation_names_the_head_that_lowers_lambada_and_how_often_searches_take_it():
    """The head whose masking alone lowers LAMBADA most is the one described (not the most shared one), with
    the LAMBADA change of this run's selections with and without it; selections without it that also lower
    LAMBADA are said to take another route."""
    diff = {"estimate": 0.1, "ci": [0.05, 0.15]}
    def alone(ppl, share):
        return {"ppl": ppl, "acc": 0.5, "n": 10, "ppl_change_pct": 100 * (ppl / 20 - 1), "acc_diff": diff,
                "share_of_nll_drop_from_top_10_docs": share, "loglik_diff": {"n_better": 7, "n": 10}}
    check = {"model": "g", "selections": {"head 17.2 alone": [["head", 17, 2]], "head 16.3 alone": [["head", 16, 3]]},
             "runs": {"bfloat16 first 10": {"dense": {"ppl": 20.0, "acc": 0.4, "n": 10},
                                            "head 17.2 alone": alone(12.0, 0.1), "head 16.3 alone": alone(21.0, None)}}}
    def sel(units, lam):
        return {"model": "g", "kinds": "head", "method": "ucb", "units": units, "lambada_ppl": lam}
    frame = pd.DataFrame([{"model": "g", "kinds": None, "method": "dense", "units": None, "lambada_ppl": 20.0},
                          sel([["head", 16, 3], ["head", 17, 2]], 15.0), sel([["head", 16, 3]], 18.0),
                          sel([["head", 16, 3], ["head", 1, 1]], 30.0)])
    text = lambada_reading(check, frame)
    assert "16.3" not in text.splitlines()[0] and "17.2 lowers LAMBADA perplexity most" in text
    assert "include 17.2 in 1. LAMBADA perplexity against dense, with it: median -25% (-25% to -25%), 1 of 1 " \
           "below dense; without it: median +20% (-10% to +50%), 1 of 2 below dense." in text
    assert "is not the only route" in text and "16.3 (in 3 selections)" in text


def test_join_table_replays_thompsons_joins_and_reads_them():
    """One MAB-TS record with two joins: in the second, the unit pulled once (reward 0.05) outranks on its
    posterior mean the unit pulled three times (mean reward 0.2) that the mean-reward rule takes; the
    table counts that join, its pulls and the damage gap; UCB rows are not Thompson's."""
    from repro.papers.bandit.tables import join_table

    row = {"model": "m", "kinds": "head", "ratio": 0.1, "method": "thompson", "join": "posterior",
           "memory": "persist", "tau": 0.02, "units": [["head", 0, 1], ["head", 0, 3]],
           "pulled": [["head0.1", "head0.2", "head0.2"], ["head0.2", "head0.3"]], "rewards": [[0.4, 0.2, 0.2], [0.2, 0.05]]}
    t = join_table(pd.DataFrame([row, {**row, "method": "ucb", "join": None}]))
    assert len(t) == 1 and t.iloc[0][["joins", "picks differ", "posterior's pick had fewer pulls"]].tolist() == [2, 1, 1]
    gap = 0.02 * (np.log(0.2 / 0.8) - np.log(0.05 / 0.95))  # damage of r = 0.05 minus that of r = 0.2
    assert t.iloc[0]["largest damage gap (nats)"] == pytest.approx(gap, abs=1e-4)
    assert join_reading(t) == (
        f"- **m, head 10%, join posterior**: the picks differ at 1 of 2 joins, the posterior's pick had fewer pulls "
        f"in 1 and measured {gap:+.3f} nats more damage on average (largest {gap:+.3f}).")


def test_synthetic_and_worked_join_readings():
    """The teaching section's sentences: each policy's regret against greedy's per budget, and the worked join
    (the default candidates: the posterior mean takes the one pulled once, the mean reward the other)."""
    from repro.papers.bandit import synthetic

    summary = pd.DataFrame({"budget": [8, 8], "policy": ["greedy", "ucb"], "memory": ["-", "persist"], "seeds": [4, 4],
                            "mean regret": [0.01, 0.005], "seeds better than greedy": [0, 3], "seeds worse": [0, 1]})
    assert synthetic_reading(summary) == ("- **8 pulls per step**: greedy's mean regret 0.0100; ucb (persist) 0.0050, "
                                          "better than greedy on 3 and worse on 1 of 4 seeds.")
    assert worked_join_reading(synthetic.worked_join()) == (
        "Pulled 1 time(s) with mean reward 0.05 (damage +0.059 nats) against 5 times with mean reward 0.25 (damage "
        "+0.022): posterior means 0.350 and 0.321, so join `posterior` takes the candidate pulled 1 time(s); join "
        "`mean` takes the one pulled 5 times.")


def test_rescale_reading_sets_the_measured_rescaling_beside_the_searches_damage():
    """Three heads of one layer: the one whose masking leaves least of the layer's output (head0.0) is also the
    one the search measured most damaging, so the reading says the rescaling predicts the damage."""
    units = [{"kind": "head", "layer": 0, "index": i, "remaining": r} for i, r in enumerate([0.7, 0.9, 0.8])]
    check = {"windows": "8 windows", "dtype": "float32", "units": units,
             "selections": [{"kind": "head", "remaining_by_layer": {"0": 0.5, "1": 0.9}}]}
    frame = pd.DataFrame([{"model": "g", "kinds": "head", "method": "ucb", "pulled": [["head0.0", "head0.1", "head0.2"]],
                           "rewards": [[0.1, 0.4, 0.2]]}])
    text = rescale_reading(check, frame, model="g", focus="head0.2")
    assert text.startswith("- **Single heads** (3, 8 windows, float32): masking one leaves 0.80 of its layer's "
                           "attention-output RMS at the median (0.70-0.90)")
    assert "- **head0.2** leaves 0.800 (its layer: head0.0 0.700, head0.2 0.800, head0.1 0.900): masking it " \
           "rescales its layer's other heads less" in text
    assert "- **The 1 head selections**" in text and "keeps 0.50 of its RMS" in text
    assert "Over the 3 heads" in text and "tend to be the most damaging" in text
    assert rescale_reading(None, frame).startswith("- The measurement `benchmarks/results/gemma_rescale.json` is not")


def test_readings_of_empty_tables_are_empty():
    """A profile that skips a section hands its reading an empty table: no sentence, no error."""
    empty = pd.DataFrame()
    assert allocation_reading(empty) == layers_reading(empty) == comparisons_reading(empty) == ""
    assert table2_reading(pd.DataFrame(columns=["model", "method", "drop_pp"])) == ""


def test_table_b2_reading_sets_the_like_for_like_count_beside_the_papers_and_reconciles_95_with_q():
    """The reading names the paper's 6 of 28 beside ours, counts the intervals that hold at 95% in MAB's favour, and
    says whether any survives the subfamily's correction: a q below 0.05 turns 'none is a discovery' into a count."""
    import pandas as pd

    from repro.papers.bandit.readings import b2_reading
    from repro.papers.bandit.tables import ALL_FAMILY, PAPER_FAMILY

    b2 = pd.DataFrame({"family": [ALL_FAMILY, PAPER_FAMILY], "comparisons": [10, 4], "q < 0.05": [3, 0]})
    paper = pd.DataFrame({"ci_lo": [-3.0, -2.0, -1.0, 0.5], "ci_hi": [-1.0, -0.5, 2.0, 3.0],
                          "q": [0.06, 0.08, 0.5, 0.2], "q (whole family)": [0.03, 0.09, 0.4, 0.1]})
    text = b2_reading(b2, paper)
    assert "in 6 of its 28 tests; here in 0 of 4" in text and "6 of 116; here 3 of 10" in text
    assert "2 of these 4 intervals lie below 0" in text and "smallest q is 0.060: none is a discovery" in text
    assert "below the subfamily's in 3 of 4 rows" in text
    assert "1 remain discoveries" in b2_reading(b2, paper.assign(q=[0.01, 0.08, 0.5, 0.2]))


def test_a_search_that_wins_is_never_listed_as_a_one_shot_score():
    """'Where a one-shot score beats the bandits' lists only one-shot scorers: a setting won by greedy with memory
    (a sequential search) or by random (no score) is left out; one won by Fisher is named."""
    import pandas as pd

    from repro.papers.bandit.readings import discussion_reading

    def lm(best):
        rows = [{"model": "m", "kinds": "mlp", "ratio": 0.05, "method": m, "seed": s,
                 "change_pct": (1.0 if m == best else 5.0) + s} for m in ("fisher", "greedy-memory", "random", "ucb",
                                                                         "thompson", "greedy") for s in (1, 2)]
        return pd.DataFrame(rows)
    empty = pd.DataFrame()
    text = discussion_reading(empty, lm("fisher"), empty, empty, {"budget": 8, "pool_size": 16}, "1 window")
    assert "one-shot score beats the bandits** (Fisher on m mlp 5%)" in text
    for other in ("greedy-memory", "random"):
        assert "one-shot score" not in discussion_reading(empty, lm(other), empty, empty,
                                                          {"budget": 8, "pool_size": 16}, "1 window")
