"""Notebook 2's worked RIA: RIA on Figure 2's layer, from a ``prune-worked`` record of
:meth:`repro.engines.prune.PruneExperiment.worked_ria` (the terms: :mod:`repro.methods.ria_terms`)."""
from __future__ import annotations

import numpy as np
import pandas as pd

EXAMPLE = ["column", "abs w", "row sum", "column sum", "share of row", "share of column", "norm X_j ^ a", "RIA score",
           "RIA prunes", "Wanda score", "Wanda prunes"]


def example(record: dict) -> pd.DataFrame:
    """The row where RIA's and Wanda's masks differ most: its weights that one prunes and the other keeps, each with
    its terms."""
    return pd.DataFrame(record["result"]["trace"]["example"], columns=EXAMPLE)


def summary(record: dict) -> pd.DataFrame:
    """RIA against Wanda's mask on the same inputs: overlap, how evenly each prunes rows and columns, and how much of
    the relative importance the column term gives."""
    t = record["result"]["trace"]
    def span(q):
        return f"{q[1]:.3f}-{q[3]:.3f}"
    rows = [("weights RIA prunes that Wanda prunes too", f"{t['overlap']:.1%}"),
            ("Jaccard of the two masks", f"{t['jaccard']:.3f}"),
            ("RIA's per-row sparsity, 5-95%", span(t["row_sparsity_ria"])),
            ("Wanda's per-row sparsity, 5-95%", span(t["row_sparsity_wanda"])),
            ("RIA's per-column sparsity, 5-95%", span(t["col_sparsity_ria"])),
            ("Wanda's per-column sparsity, 5-95%", span(t["col_sparsity_wanda"])),
            ("the most of one column each prunes, RIA / Wanda",
             f"{t['col_sparsity_ria'][4]:.3f} / {t['col_sparsity_wanda'][4]:.3f}"),
            ("share of the relative importance from the column term, median (5-95%)",
             f"{t['col_term_share'][2]:.3f} ({span(t['col_term_share'])})"),
            ("median sum of abs w over a row / over a column", f"{t['row_sum'][2]:.1f} / {t['col_sum'][2]:.1f}")]
    return pd.DataFrame(rows, columns=["quantity", "value"])


def reading(record: dict) -> str:
    """What the worked RIA shows, from its record."""
    t = record["result"]["trace"]
    ex = pd.DataFrame(t["example"])
    lifted = ex[~ex["RIA prunes"] & ex["Wanda prunes"]]
    dropped = ex[ex["RIA prunes"] & ~ex["Wanda prunes"]]
    ratio = t["row_sum"][2] / t["col_sum"][2]
    text = (f"On {t['layer']} ({t['rows']} x {t['cols']}), RIA's mask shares {t['overlap']:.0%} of its pruned weights "
            f"with Wanda's. A row's sum of |w| is {ratio:.2g}x a column's here (medians: a row reads "
            f"{t['cols']} inputs, a column feeds {t['rows']} outputs), so the column term carries a median {t['col_term_share'][2]:.0%} of the relative importance. With one "
            f"threshold for the layer, RIA's rows are pruned unevenly ({t['row_sparsity_ria'][1]:.0%}-"
            f"{t['row_sparsity_ria'][3]:.0%} for 90% of them) where Wanda prunes every row at the target, and its "
            f"columns {t['col_sparsity_ria'][1]:.0%}-{t['col_sparsity_ria'][3]:.0%} (Wanda's "
            f"{t['col_sparsity_wanda'][1]:.0%}-{t['col_sparsity_wanda'][3]:.0%}).")
    if len(lifted) and len(dropped):
        def x(col: str) -> float:  # the weights RIA keeps (Wanda prunes) against those it prunes instead, medians
            return float(lifted[col].median() / dropped[col].median())
        w, c, n = x("abs w"), x("column sum"), x("norm X_j ^ a") ** (1 / t["a"])
        text += (f" In row {t['example_row']}, where the masks differ on {t['example_differ']} weights, the weights RIA "
                 f"keeps and Wanda prunes have x{w:.2g} the |w|, x{n:.2g} the input norm and x{c:.2g} the column sum of "
                 "those RIA prunes instead (medians): ")
        if abs(np.log(c)) >= max(abs(np.log(w)), abs(np.log(n))):
            text += "the column term decides, lifting the weights of light columns."
        else:
            text += (f"the exponent decides. Wanda weighs the input norm fully (a = 1), RIA by its square root (a = "
                     f"{t['a']:g}), so RIA keeps larger weights on quieter inputs and prunes small weights on loud ones.")
    return text
