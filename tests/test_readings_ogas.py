"""The generated sentences after notebook tables (issue 29): each reader on a constructed table, so a
reading that names the wrong row, miscounts or says 'better' for 'worse' fails here. Paper: ogas."""
import pandas as pd

from repro.papers.ogas.report import Report as OgasReport


def test_ogas_achieved_reading_separates_the_exact_methods_from_the_rounding():
    t = pd.DataFrame({"method": ["Wanda", "OGAS", "OGAS"], "target": [0.5] * 3, "achieved": [0.5, 0.49926, 0.49938],
                      "prune seconds": [11.0, 30.0, 15.0]})
    assert OgasReport.achieved_reading(t).splitlines() == [
        "- Wanda remove exactly the target; OGAS 0.49926-0.49938 (its rounding keeps a few weights more).",
        "- Pruning time: Wanda 11-11 s, OGAS 15-30 s."]
