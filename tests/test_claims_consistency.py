"""One situation, one kind of answer, in every notebook: the claims of Papers 1 and 2 built from constructed cells
in the same situations get the same kind (repro.claims.judged_on: uninformative only where every side is at a
uniform guess; every side beyond 10x dense is a flag beside a verdict that stands)."""
import numpy as np
import pandas as pd
import pytest
from test_experiments import _frame
from test_ogas_experiment import BASE, OGAS_A, row

from repro.claims import DECIDED, UNINFORMATIVE
from repro.papers.mpg.claims import mpg_claims
from repro.papers.ogas.claims import ogas_claims

W = np.tile([3.0, 3.5, 2.5, 4.0], 5)  # 20 windows, dense perplexity about 26


def mpg_row(uniform: float):
    """MP-G at x12 dense against the best calibrated scorer a little worse on every window."""
    rows = [dict(model="m", method="dense", sparsity=0.0, nll=W),
            dict(model="m", method="mpg", sparsity=0.5, z=2.0, nll=W + 2.5),
            dict(model="m", method="gradient-head", sparsity=0.5, nll=W + 2.6)]
    claims = mpg_claims(_frame(rows), ["m"], [0.5], [2.0], [], {"m": 1}, uniform={"m": uniform})
    return next(c for c in claims if c.claim.startswith("Calibration-free MP-G"))


def ogas_row(uniform: float):
    """OGAS at x17 dense against Wanda a little worse on every window."""
    f = pd.DataFrame([row("a", "wikitext2", "dense", BASE), row("a", "wikitext2", "wanda", BASE + 3.0),
                      row("a", "wikitext2", "ogas", BASE + 2.9, params=OGAS_A)])
    claims = ogas_claims(f, ["a"], 0.5, [], [], [], uniform={"a": uniform})
    return next(c for c in claims if c.claim.startswith("OGAS below Wanda"))


@pytest.mark.parametrize("build", [mpg_row, ogas_row], ids=["notebook 1", "notebook 2"])
def test_both_beyond_ten_times_dense_is_a_flagged_verdict_in_every_notebook(build):
    c = build(uniform=50_000.0)
    assert c.kind == DECIDED and c.verdict == "holds" and c.flag == "both beyond 10x dense"


@pytest.mark.parametrize("build", [mpg_row, ogas_row], ids=["notebook 1", "notebook 2"])
def test_both_at_a_uniform_guess_is_uninformative_in_every_notebook(build):
    c = build(uniform=100.0)
    assert c.kind == UNINFORMATIVE and c.why_uninformative.startswith("both models destroyed")
