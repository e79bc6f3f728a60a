"""The generated sentences after notebook tables (issue 29): each reader on a constructed table, so a
reading that names the wrong row, miscounts or says 'better' for 'worse' fails here."""
import numpy as np
import pandas as pd
import pytest

from repro.papers.bandit.report import BanditReport
from repro.papers.mpg.readings import Readings
from repro.papers.ogas.report import Report as OgasReport


def test_cost_reading_names_the_slowest_calibrated_scorer_and_the_zero_scores():
    cost = pd.DataFrame({"model": ["m"] * 3, "label": ["MP-G", "Wanda-Head", "Gradient-Head"],
                         "seconds": [2.0, 80.0, 230.0], "calibration": ["none", "16 x 512", "8 x 512"],
                         "zero-score heads": [50, 0, 0]})
    assert Readings.cost_reading(cost) == ("- **m**: the calibration-free scores take 2.00 s at most; the calibrated ones "
                                           "80-230 s (Gradient-Head the slowest); MP-G leaves 50 heads at exactly 0.")
    assert "no scorer gives a head exactly 0" in Readings.cost_reading(cost.assign(**{"zero-score heads": 0}))


def test_zero_ties_reading_counts_the_cells_the_tie_break_decides():
    ties = pd.DataFrame({"model": ["m"] * 4, "method": ["MP-G", "MP-G", "MP", "MP"], "sparsity": ["12.5%", "50%"] * 2,
                         "heads cut": [3, 12, 3, 12], "heads scoring exactly 0": [5] * 4,
                         "decided by the tie-break": [True, False, True, False]})
    assert Readings.zero_ties_reading(ties) == ("- The tie-break, not the score, picks the heads in 2 of 4 cells: m MP-G "
                                                "@ 12.5% (3 of 5), m MP @ 12.5% (3 of 5). In those cells MP-G and MP cut "
                                                "the same heads.")
    assert "the scores decide every cell" in Readings.zero_ties_reading(ties.iloc[:0])


def test_spread_reading_sets_emptied_layers_beside_their_perplexity():
    spread = pd.DataFrame({"model": ["m"] * 3, "method": ["A", "B", "C"], "sparsity": ["12.5%"] * 3,
                           "layers emptied": [1, 0, 0], "emptied layers": ["0", "-", "-"]})
    vals = pd.DataFrame({("m", "12.5%"): [10.0, 900.0, 20.0, 30.0]}, index=["Dense", "A", "B", "C"])
    assert Readings.spread_reading(spread, vals) == ("- **m** at 12.5%: A empties layer(s) 0 (ppl 900); the methods "
                                                     "that empty none reach 20-30.")
    assert Readings.spread_reading(spread.assign(**{"layers emptied": 0}), vals) == \
        "- **m**: no method empties a layer at 12.5%."


def test_table3_reading_sets_dense_against_chance_and_counts_pruned_cells_outside_its_interval():
    zs = pd.DataFrame({"model": ["m"] * 4, "method": ["Dense", "MP-G", "Dense", "MP-G"],
                       "task": ["sst2", "sst2", "mrpc", "mrpc"], "metric": ["acc", "acc", "f1", "f1"],
                       "value": [0.52, 0.30, 0.0, 0.0], "stderr": [0.05, 0.05, 0.0, 0.0]})
    text = Readings.table3_reading(zs)
    assert text.startswith("- **m** dense: sst2 acc 0.520 (chance 0.5, inside its interval), 1 of 1 pruned cells")
    assert "mrpc f1 0.000 (it never predicts the positive class), 0 of 1" in text


def test_ties_and_mha_readings():
    ties = pd.DataFrame({"model": ["m", "m", "g"], "sparsity": ["12.5%", "50%", "12.5%"], "pruned": [3, 12, 2],
                         "zero-score heads": [5, 5, 0], "index tie-break": [10.0, 40.0, 7.0], "random seeds": [2, 2, 0],
                         "random tie-break mean": [11.0, 40.0, np.nan], "min": [10.5, 40.0, np.nan],
                         "max": [11.5, 40.0, np.nan]})
    assert Readings.ties_reading(ties).splitlines() == [
        "- **m @ 12.5%**: 3 of 5 zero-score heads cut; index order 10, 2 random tie-break(s) 10.5-11.5 (x1.100 on average).",
        "- **g**: no cut falls inside a tie of zero scores (no head scores 0)."]
    raw = pd.DataFrame({"model": ["v"] * 4, "sparsity": ["0%", "25%", "25%", "25%"],
                        "method": ["Dense", "MP-G", "MP", "Wanda-Head"], "CE (nats)": [0.5, 0.7, 0.7, 0.6]})
    text = Readings.mha_reading(raw)
    assert "lowest cross-entropy at 25% Wanda-Head 0.60" in text and "MP-G 0.70 (2nd of 3)" in text
    assert text.endswith("MP and MP-G give the same cross-entropy in 1 of 1 cells.")


def test_ogas_achieved_reading_separates_the_exact_methods_from_the_rounding():
    t = pd.DataFrame({"method": ["Wanda", "OGAS", "OGAS"], "target": [0.5] * 3, "achieved": [0.5, 0.49926, 0.49938],
                      "prune seconds": [11.0, 30.0, 15.0]})
    assert OgasReport.achieved_reading(t).splitlines() == [
        "- Wanda remove exactly the target; OGAS 0.49926-0.49938 (its rounding keeps a few weights more).",
        "- Pruning time: Wanda 11-11 s, OGAS 15-30 s."]


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
    assert BanditReport.per_seed_reading(lm).endswith("Random seed 2 (-13.1%, last-word accuracy +0.02).")
    assert BanditReport.per_seed_reading(_lm()) == (
        "- **m, head 10%**: seed to seed the WikiText-2 change moves most for Random (50 points between its best and "
        "worst seed); LAMBADA perplexity falls in 1 of 6 runs: Random seed 2 (-13.1%).")


def test_bandit_layers_budget_and_tests_readings():
    lp = pd.DataFrame({"model": ["m"] * 2, "units": ["head 10%"] * 2, "method": ["wanda", "ucb"],
                       "early layers": [3, 3], "share in early layers": [0.78, 0.1]})
    assert BanditReport.layers_reading(lp) == ("- **m, head 10%**: Wanda-style puts 78% of its units in the first 3 "
                                               "layer(s); no other method more than 10%.")
    lp["share in last layers"] = [0.0, 0.9]  # a method piling its units at the end is named instead
    assert BanditReport.layers_reading(lp) == ("- **m, head 10%**: MAB-UCB puts 90% of its units in the last 3 "
                                               "layer(s); no other method more than 0%.")
    b1 = pd.DataFrame({"model": ["m"] * 3, "units": ["head 10%"] * 3, "method": ["MAB-UCB", "Budgeted greedy", "Fisher"],
                       "paired_evaluations": [56.0, 56.0, 0.0], "calibration_passes": [0.0, 0.0, 8.0],
                       "seconds": [40.0, 44.0, 58.0]})
    assert BanditReport.budget_reading(b1) == ("- **m, head 10%**: the searches spend the same 56 paired evaluations per "
                                               "run in 40-44 s; the one-shot scorers 58-58 s.")
    assert "different budgets: MAB-UCB 56, Budgeted greedy 60" in BanditReport.budget_reading(
        b1.assign(paired_evaluations=[56.0, 60.0, 0.0]))
    tests = pd.DataFrame({"b": ["Random", "Fisher", "Budgeted greedy"], "mean_diff": [-5.0, 3.0, 1.0],
                          "ci_lo": [-9.0, 1.0, -1.0], "ci_hi": [-1.0, 5.0, 3.0], "q": [0.01, 0.2, 0.5]})
    assert BanditReport.tests_reading(tests) == (
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
    assert BanditReport.allocation_reading(t).splitlines()[1] == (
        "- **MAB-UCB, persist, 2 pulls per step** (1 setting): 1 distinct candidates per step; joins decided on 2 "
        "pulls; 100% of joins pulled under their mask.")


def test_lambada_investigation_names_the_head_that_lowers_lambada_and_how_often_searches_take_it():
    """The head whose masking alone lowers LAMBADA most is the one described (not the most shared one), with
    the LAMBADA change of this run's selections with and without it; selections without it that also lower
    LAMBADA are said to take another route."""
    from repro.papers.bandit.lambada import investigation

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
    text = investigation(check, frame)
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
    assert BanditReport.join_reading(t) == (
        f"- **m, head 10%, join posterior**: the picks differ at 1 of 2 joins, the posterior's pick had fewer pulls "
        f"in 1 and measured {gap:+.3f} nats more damage on average (largest {gap:+.3f}).")
