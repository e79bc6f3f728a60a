"""The generated sentences after notebook tables (issue 29): each reader on a constructed table, so a
reading that names the wrong row, miscounts or says 'better' for 'worse' fails here. Paper: mpg."""
import numpy as np
import pandas as pd

from repro.papers.mpg import readings as R


def test_cost_reading_names_the_slowest_calibrated_scorer_and_the_zero_scores():
    cost = pd.DataFrame({"model": ["m"] * 3, "label": ["MP-G", "Wanda-Head", "Gradient-Head"],
                         "seconds": [2.0, 80.0, 230.0], "calibration": ["none", "16 x 512", "8 x 512"],
                         "zero-score heads": [50, 0, 0]})
    assert R.cost_reading(cost) == ("- **m**: the calibration-free scores take 2.00 s at most; the calibrated ones "
                                           "80-230 s (Gradient-Head the slowest); MP-G leaves 50 heads at exactly 0.")
    assert "no scorer gives a head exactly 0" in R.cost_reading(cost.assign(**{"zero-score heads": 0}))


def test_zero_ties_reading_counts_the_cells_the_tie_break_decides():
    ties = pd.DataFrame({"model": ["m"] * 4, "method": ["MP-G", "MP-G", "MP", "MP"], "sparsity": ["12.5%", "50%"] * 2,
                         "heads cut": [3, 12, 3, 12], "heads scoring exactly 0": [5] * 4,
                         "decided by the tie-break": [True, False, True, False]})
    assert R.zero_ties_reading(ties) == ("- The tie-break, not the score, picks the heads in 2 of 4 cells: m MP-G "
                                                "@ 12.5% (3 of 5), m MP @ 12.5% (3 of 5). In those cells MP-G and MP cut "
                                                "the same heads.")
    assert "the scores decide every cell" in R.zero_ties_reading(ties.iloc[:0])


def test_spread_reading_sets_emptied_layers_beside_their_perplexity():
    spread = pd.DataFrame({"model": ["m"] * 3, "method": ["A", "B", "C"], "sparsity": ["12.5%"] * 3,
                           "layers emptied": [1, 0, 0], "emptied layers": ["0", "-", "-"]})
    vals = pd.DataFrame({("m", "12.5%"): [10.0, 900.0, 20.0, 30.0]}, index=["Dense", "A", "B", "C"])
    assert R.spread_reading(spread, vals) == ("- **m** at 12.5%: A empties layer(s) 0 (ppl 900); the methods "
                                                     "that empty none reach 20-30.")
    assert R.spread_reading(spread.assign(**{"layers emptied": 0}), vals) == \
        "- **m**: no method empties a layer at 12.5%."


def test_zeroshot_reading_sets_dense_against_the_trivial_answer_and_counts_pruned_cells_outside_its_interval():
    zs = pd.DataFrame({"model": ["m"] * 4, "method": ["Dense", "MP-G", "Dense", "MP-G"],
                       "task": ["sst2", "sst2", "mrpc", "mrpc"], "metric": ["acc", "acc", "f1", "f1"],
                       "value": [0.52, 0.30, 0.0, 0.0], "stderr": [0.05, 0.05, 0.0, 0.0],
                       "trivial": [0.51, 0.51, None, None], "trivial answer": ["always answer 1"] * 2 + [None] * 2})
    text = R.zeroshot_reading(zs)
    assert text.startswith("- **m** dense: sst2 acc 0.520 (the trivial answer, always answer 1: 0.510, inside its "
                           "interval), 1 of 1 pruned cells")
    assert "mrpc f1 0.000 (it never predicts the positive class), 0 of 1" in text


def test_ties_and_mha_readings():
    ties = pd.DataFrame({"model": ["m", "m", "g"], "sparsity": ["12.5%", "50%", "12.5%"], "pruned": [3, 12, 2],
                         "zero-score heads": [5, 5, 0], "index tie-break": [10.0, 40.0, 7.0], "random seeds": [2, 2, 0],
                         "random tie-break mean": [11.0, 40.0, np.nan], "min": [10.5, 40.0, np.nan],
                         "max": [11.5, 40.0, np.nan]})
    assert R.ties_reading(ties).splitlines() == [
        "- **m @ 12.5%**: 3 of 5 zero-score heads cut; index order 10, 2 random tie-break(s) 10.5-11.5 (x1.100 on average).",
        "- **g**: no cut falls inside a tie of zero scores (no head scores 0)."]
    raw = pd.DataFrame({"model": ["v"] * 4, "sparsity": ["0%", "25%", "25%", "25%"],
                        "method": ["Dense", "MP-G", "MP", "Wanda-Head"], "CE (nats)": [0.5, 0.7, 0.7, 0.6]})
    text = R.mha_reading(raw)
    assert "lowest cross-entropy at 25% Wanda-Head 0.60" in text and "MP-G 0.70 (2nd of 3)" in text
    assert text.endswith("MP and MP-G give the same cross-entropy in 1 of 1 cells.")


def test_table2_reading_names_the_best_row_and_mpg_best_z():
    t2v = pd.DataFrame({"m @ 50%": [5.0, 3.0, 4.0, 2.5]},
                       index=["MP, z = 2.0", "MP-G, z = 1.5", "MP-G, z = 2.0", "MP, z = 1.5"])
    assert R.table2_reading(t2v) == ("- **m @ 50%**: lowest perplexity MP, z = 1.5 (2.5); MP-G's best z = 1.5 (3) "
                                     "against 4 at z = 2.")
    assert R.table2_reading(t2v.drop(index="MP-G, z = 1.5")).endswith("MP-G is best at its default z = 2.")


def test_paired_and_table4_readings_count_from_the_table():
    paired = pd.DataFrame({"model": ["m"] * 3, "sparsity": ["25%"] * 3, "vs": ["A", "B", "C"],
                           "95% CI": ["[0.5, 0.9]", "[1.1, 1.3]", "[0.9, 1.2]"]})
    assert R.paired_reading(paired) == ("- **m**: MP-G is better in 1, worse in 1 and not separable in 1 of 3 "
                                               "paired comparisons; worse than B at 25%.")
    t4 = pd.DataFrame({"best": [2, 0, 2], "second": [0, 3, 1]}, index=["MP-G", "Wanda-Head", "Gradient-Head"])
    assert R.table4_reading(t4) == ("- Most first places: MP-G and Gradient-Head (2 each, of 4 first places "
                                           "over Table I's columns); second places: Wanda-Head 3, Gradient-Head 1.")


def test_efficiency_reading_gives_the_parameter_drop_and_speed_ups():
    eff = pd.DataFrame({"model": ["m", "m"], "model state": ["dense", "removed 50%"],
                        "nonzero params (M)": [100.0, 90.0], "speed-up b=1": [1.0, 1.2], "speed-up b=4": [1.0, 1.1]})
    assert R.efficiency_reading(eff) == ("- **m, removed 50%**: 10.0% fewer non-zero parameters; prefill x1.200 "
                                                "at b=1, x1.100 at b=4.")


def test_table1_reading_counts_the_cells_where_a_calibrated_score_loses_to_random():
    vals = pd.DataFrame({("m", "25.0%"): [10.0, 12.0, 30.0, 20.0], ("m", "50.0%"): [10.0, 40.0, 35.0, 90.0]},
                        index=["Dense", "MP-G", "Wanda-Head", "Random"])
    text = R.table1_reading(vals).splitlines()
    assert text[0] == ("- **m** (dense 10): lowest perplexity at 25.0% MP-G 12 (x1.2 dense); at 50.0% Wanda-Head 35 "
                       "(x3.5 dense), MP-G 40 (2nd of 3).")
    assert text[1].startswith("- A calibration-based score does worse than Random in 1 of 2 cells: Wanda-Head on "
                              "m @ 25.0%;")
    assert len(R.table1_reading(vals.drop(index="Random")).splitlines()) == 1  # no Random row: no comparison


def test_draw_spread_and_table4b_readings():
    draws = pd.DataFrame({"model": ["m", "m", "g"], "method": ["Random", "Wanda-Head", "Wanda-Head"],
                          "sparsity": ["25.0%"] * 3, "each draw": ["10, 12, 30", "5, 5, 5.2", "7, 7, 7"],
                          "worst / best": [3.0, 1.04, 1.0]})
    assert R.draw_spread_reading(draws).splitlines() == [
        "The draw alone moves a cell by up to x3.00 (Random, m at 25.0%: 10, 12, 30); 2 of 3 drawn cells stay within "
        "x1.1 of their best draw.",
        "- **Random**: up to x3.00 on m.",
        "- **Wanda-Head**: up to x1.04 on m; identical draws in every cell on g."]  # per method, as issue 66 asked
    assert R.draw_spread_reading(draws.iloc[:0]) == "Every method ran once here."
    extra = pd.DataFrame({"best": [1, 0], "second": [2, 0]}, index=["MP", "Random"])
    assert R.table4b_reading(extra) == ("- Added alone to the paper's set: MP would take 1 first and 2 second places; "
                                        "Random would take 0 first and 0 second places.")


def test_single_kv_reading_counts_constant_layers_and_kept_orders():
    kv = pd.DataFrame({"layer": [0, 1, 2], "kv_mpg": [0.5, 0.0, 1.25], "kv_constant": [True] * 3,
                       "same_order": [True, True, False]})
    assert R.single_kv_reading(kv) == ("The KV term ranges from 0 to 1.25 across layers under MP-G; it is the same for "
                                       "every head of a layer in 3 of 3 layers, and MP-G orders the heads within a "
                                       "layer as MP does in 2 of 3.")


def test_zero_scores_reading_counts_the_exact_zeros():
    assert R.zero_scores_reading(np.array([[0.0, 1.0], [0.0, 0.0], [2.0, 3.0]])) == (
        "3 of 6 heads score exactly 0: at low sparsity the cut falls inside this tie.")


def test_a_line_that_falls_as_sparsity_rises_is_named_beside_table_one():
    """Gemma SparseGPT-Head read 38.5M -> 1,498 -> 309k over 12.5 / 25 / 50% with nothing said: Table I's reading
    names every such line and points to its anatomy; a monotone table says nothing of the kind."""
    cols = pd.MultiIndex.from_tuples([("g", "12.5%"), ("g", "25.0%"), ("g", "50.0%")])
    vals = pd.DataFrame([[22.0, 22.0, 22.0], [38.5e6, 1498.0, 309_000.0], [30.0, 40.0, 80.0]],
                        index=["Dense", "SparseGPT-Head", "MP-G"], columns=cols)
    assert R.non_monotone(vals) == ["SparseGPT-Head on g: 38,500,000 at 12.5% -> 1,498 at 25.0% -> 309,000 at 50.0%"]
    text = R.table1_reading(vals)
    assert "Not monotone in sparsity" in text and "diagnosed in section 3c" in text
    assert "Not monotone" not in R.table1_reading(vals.drop(index="SparseGPT-Head"))
