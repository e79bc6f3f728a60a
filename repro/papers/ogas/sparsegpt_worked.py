"""Notebook 2's worked baseline: SparseGPT on Figure 2's layer, from a ``prune-worked`` record of
:meth:`repro.engines.prune.PruneExperiment.worked_sparsegpt` (the terms: :mod:`repro.methods.sparsegpt_terms`)."""
from __future__ import annotations

import pandas as pd


def first_columns(record: dict, n: int = 8) -> pd.DataFrame:
    """The first ``n`` columns of the first block: ``U_jj``, the weights pruned in the column, the norm of its
    error ``e_j`` and how far the block's later columns moved because of it."""
    t = record["result"]["trace"]
    return pd.DataFrame({"column": range(n), "U_jj": t["U_diag"][:n], "pruned (of rows)": t["pruned_per_column"][:n],
                         "|e_j|": t["error_norm"][:n], "later columns moved": t["moved_later"][:n]})


def summary(record: dict) -> pd.DataFrame:
    """The layer's SparseGPT against Wanda's mask on the same inputs: mask overlap, per-row sparsity spread and
    output errors relative to the dense output energy."""
    t = record["result"]["trace"]
    rows = [("weights SparseGPT prunes that Wanda prunes too", f"{t['overlap']:.1%}"),
            ("Jaccard of the two masks", f"{t['jaccard']:.3f}"),
            ("SparseGPT's per-row sparsity, 5-95%", f"{t['row_sparsity_sparsegpt'][1]:.3f}-{t['row_sparsity_sparsegpt'][3]:.3f}"),
            ("Wanda's per-row sparsity", f"{t['row_sparsity_wanda'][1]:.3f} on every row"),
            ("output error, Wanda's mask (no update)", f"{t['error_wanda']:.3%}"),
            ("output error, SparseGPT's mask without its updates", f"{t['error_sparsegpt_mask_only']:.3%}"),
            ("output error, SparseGPT (mask and updates)", f"{t['error_sparsegpt']:.3%}"),
            ("first block: change of the kept weights, relative", f"{t['kept_change']:.1%}")]
    return pd.DataFrame(rows, columns=["quantity", "value"])


def reading(record: dict) -> str:
    t = record["result"]["trace"]
    cut = 1 - t["error_sparsegpt"] / t["error_sparsegpt_mask_only"]
    return (f"On {t['layer']} ({t['rows']} x {t['cols']}), SparseGPT's mask shares {t['overlap']:.0%} of its pruned "
            f"weights with Wanda's. Its rows are pruned unevenly ({t['row_sparsity_sparsegpt'][1]:.0%}-"
            f"{t['row_sparsity_sparsegpt'][3]:.0%} for 90% of them), where Wanda prunes every row at the target. The "
            f"mask alone leaves {t['error_sparsegpt_mask_only']:.2%} of the output energy as error (Wanda's "
            f"{t['error_wanda']:.2%}). The OBS updates of the kept weights (in the first block they move by "
            f"{t['kept_change']:.1%}) cut that to {t['error_sparsegpt']:.2%}, {cut:.0%} less: most of what "
            "SparseGPT gains over a mask is the update, not the choice of weights."
            if cut > 0.5 else
            f"On {t['layer']}, SparseGPT's mask shares {t['overlap']:.0%} of its pruned weights with Wanda's; the "
            f"output error is {t['error_wanda']:.2%} for Wanda's mask, {t['error_sparsegpt_mask_only']:.2%} for "
            f"SparseGPT's mask alone and {t['error_sparsegpt']:.2%} with its updates ({cut:.0%} less).")

