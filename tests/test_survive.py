"""Does a verdict survive the paper's setting (repro.survive): the claims of one notebook at two settings, aligned
row by row; and Table I at two calibration sizes as two experiments, each reading its own cells."""
import pandas as pd

from repro.engines.base import Setup
from repro.engines.heads import HeadExperiment
from repro.store import Store
from repro.survive import survival, survival_reading, unchanged_rows


def claims(*rows):
    return pd.DataFrame([dict(zip(["claim", "setting", "measured", "verdict"], r)) for r in rows])


SCALED = claims(("MP-G reduces to MP on MHA", "m, 25%", "exact", "holds"),
                ("MP-G beats Wanda-Head", "m, 25%", "x0.80 [0.70, 0.90]", "holds"),
                ("MP-G beats Wanda-Head", "m, 25%", "x0.95 [0.90, 1.02]", "inconclusive"),  # a second row, same setting
                ("MP-G in the top two", "m, 50%", "rank 2 of 8", "holds"),
                ("Our remedy", "m, 50%", "x0.9 [0.8, 1.0]", "inconclusive"))
PAPER = claims(("MP-G reduces to MP on MHA", "m, 25%", "exact", "holds"),
               ("MP-G beats Wanda-Head", "m, 25%", "x0.85 [0.75, 0.95]", "holds"),
               ("MP-G beats Wanda-Head", "m, 25%", "x1.10 [1.05, 1.15]", "does not hold"),
               ("MP-G in the top two", "m, 50%", "rank 2 of 8", "holds"))


def test_survival_shows_each_row_that_reads_a_changed_cell_with_both_verdicts():
    t = survival(SCALED, PAPER)
    assert list(t.survives) == ["same", "changed", "only scaled"]  # the two unchanged rows are left out
    assert t.iloc[1]["verdict, scaled"] == "inconclusive" and t.iloc[1]["verdict, paper's setting"] == "does not hold"
    assert unchanged_rows(SCALED, PAPER) == 2
    text = survival_reading(t, 2, "the paper's calibration")
    assert text.startswith("At the paper's calibration, 1 of the 2 verdicts that read a changed cell stay")
    assert "*MP-G beats Wanda-Head* (m, 25%): inconclusive -> does not hold" in text
    assert "*Our remedy* (m, 50%): only scaled" in text and text.endswith("The other 2 rows read the same "
                                                                          "measurement at both settings.")


def test_identical_claims_survive_with_nothing_to_show():
    t = survival(SCALED, SCALED)
    assert t.empty and "No claim reads a cell" in survival_reading(t, unchanged_rows(SCALED, SCALED), "x")


def test_table_i_at_two_calibration_sizes_is_two_experiments_each_owning_its_own_cells(tmp_path):
    setup = Setup(data="wiki-sample", seqlen=32, max_windows=2, calib_data="wiki-sample", calib_nsamples=4,
                  calib_seqlen=16, eval_dtype="float32")
    store = Store(tmp_path)
    small = HeadExperiment("tiny-llama", setup, store, grad_nsamples=2, progress=False)
    large = HeadExperiment("tiny-llama", setup.replace(calib_nsamples=8), store, grad_nsamples=3, progress=False,
                           loaded=small)
    base = small.base_config()

    def cell(method, n=None):
        return {**base, "method": method, **({"calibration": {"nsamples": n, "seed": 0}} if n else {})}
    assert small.owns(cell("wanda-head", 4)) and not large.owns(cell("wanda-head", 4))
    assert large.owns(cell("wanda-head", 8)) and not small.owns(cell("wanda-head", 8))
    assert small.owns(cell("gradient-head", 2)) and large.owns(cell("gradient-head", 3))  # its own, smaller sample
    assert not large.owns(cell("gradient-head", 8))
    assert small.owns(cell("mpg")) and large.owns(cell("mpg"))  # calibration-free: one cell, both tables
