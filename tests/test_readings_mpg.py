"""The generated sentences after notebook tables (issue 29): each reader on a constructed table, so a
reading that names the wrong row, miscounts or says 'better' for 'worse' fails here. Paper: mpg."""
import numpy as np
import pandas as pd

from repro.papers.mpg.readings import Readings


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
