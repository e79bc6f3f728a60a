"""RIA's terms on one real layer (notebook 2's worked baseline, issue 67), as :class:`RIATrace` records them while
pruning exactly as :class:`repro.methods.unstructured.RIA` does.

RIA (Zhang et al., 2024, "Plug-and-Play") scores a weight of a linear ``W`` (rows: outputs, columns: inputs) by its
*relative importance* in its row and in its column, times the norm of the input it reads to the power ``a``:

    ``S_ij = (|w_ij| / sum_k |w_kj| + |w_ij| / sum_k |w_ik|) * ||X_j||_2 ** a``,  ``a = 0.5``,

and prunes the lowest scores of the whole layer (one threshold). Wanda scores ``|w_ij| ||X_j||_2`` and prunes each
row at the target. Dividing by the column's sum lifts the weights of an input column whose weights are all small: the
paper's motivation is that a per-layer threshold on plain magnitudes would otherwise remove such a channel whole.

:func:`terms` sets RIA's mask beside Wanda's on the same inputs: their overlap, how evenly each prunes the rows and the
columns, how much of the relative importance comes from the column term, and one row's weights where the two masks
disagree, with every term.
"""
from __future__ import annotations

import numpy as np
import torch

from repro.errors import ReproError
from repro.methods.registry import n_lowest
from repro.methods.unstructured import RIA, lowest_per_row, out_in
from repro.structure.sparsity import prunable_linear

QUANTILES = [0, 0.05, 0.5, 0.95, 1]


def _q(x: torch.Tensor) -> list[float]:
    return np.quantile(x.double().numpy(), QUANTILES).tolist()


def terms(W: torch.Tensor, norms: torch.Tensor, sparsity: float, a: float, ria: torch.Tensor, n_example: int = 4) -> dict:
    """RIA's terms on ``W`` (float32, rows x columns) with input norms ``norms`` (``||X_j||_2``) and its mask ``ria``
    (True: pruned), beside Wanda's mask at ``sparsity`` on the same inputs. ``example``: the row where the masks differ
    most, its ``n_example`` weights RIA prunes and Wanda keeps and as many the other way (the largest by score
    rank gap), each with its terms."""
    A = W.abs()
    col, row = A.sum(0), A.sum(1)
    by_col = torch.where(col > 0, A / col, 0.0)
    by_row = torch.where(row[:, None] > 0, A / row[:, None], 0.0)
    act = norms.float() ** a
    score = (by_col + by_row) * act[None, :]
    wanda = lowest_per_row(A * norms.float()[None, :], n_lowest(sparsity, W.shape[1]))
    differ = (ria ^ wanda).sum(1)
    both_ways = torch.minimum((ria & ~wanda).sum(1), (wanda & ~ria).sum(1))  # a row that shows both directions
    r = int((both_ways * W.shape[1] + differ).argmax())
    rank = score[r].argsort().argsort().float() / W.shape[1] - (A[r] * norms).argsort().argsort().float() / W.shape[1]

    def pick(which: torch.Tensor, largest: bool) -> list[int]:
        idx = which.nonzero().flatten()
        order = rank[idx].argsort(descending=largest)
        return idx[order[:n_example]].tolist()

    cols = pick(ria[r] & ~wanda[r], False) + pick(wanda[r] & ~ria[r], True)
    example = [{"column": j, "abs w": float(A[r, j]), "row sum": float(row[r]), "column sum": float(col[j]),
                "share of row": float(by_row[r, j]), "share of column": float(by_col[r, j]),
                "norm X_j ^ a": float(act[j]), "RIA score": float(score[r, j]), "Wanda score": float(A[r, j] * norms[j]),
                "RIA prunes": bool(ria[r, j]), "Wanda prunes": bool(wanda[r, j])} for j in cols]
    share = by_col / (by_col + by_row).clamp_min(torch.finfo(torch.float32).tiny)
    return {"rows": int(W.shape[0]), "cols": int(W.shape[1]), "a": a, "sparsity": sparsity,
            "overlap": float((ria & wanda).sum() / ria.sum()),
            "jaccard": float((ria & wanda).sum() / (ria | wanda).sum()),
            "achieved": float(ria.float().mean()),
            "row_sparsity_ria": _q(ria.float().mean(1)), "row_sparsity_wanda": _q(wanda.float().mean(1)),
            "col_sparsity_ria": _q(ria.float().mean(0)), "col_sparsity_wanda": _q(wanda.float().mean(0)),
            "col_term_share": _q(share.flatten()[:: max(1, share.numel() // 200_000)]),
            "row_sum": _q(row), "col_sum": _q(col), "norm_a": _q(act),
            "example_row": r, "example_differ": int(differ[r]), "example": example}


class RIATrace(RIA):
    """:class:`RIA` that prunes exactly as RIA does and, for the one layer ``trace_layer``, adds to that layer's
    extras a ``"trace"``: :func:`terms` (its mask replayed from the same inputs and checked equal to the pruner's).
    Call :meth:`bind` on the model before pruning it. Not a registered method."""

    def __init__(self, sparsity, pattern="unstructured", *, trace_layer: str, **params):
        super().__init__(sparsity, pattern, **params)
        if not self.pattern.unstructured or self.params.per_row:
            raise ReproError("the RIA worked example is unstructured, one threshold per layer")
        self.trace_layer, self._module = str(trace_layer), None

    def bind(self, model: torch.nn.Module) -> "RIATrace":
        self._module = prunable_linear(model, self.trace_layer)
        return self

    def compress(self, name, module, obs):
        if module is not self._module:
            return super().compress(name, module, obs)
        W0, norms = out_in(module).float().clone(), obs[0].norm.float().clone()
        mask = self.mask(W0, obs)
        out = super().compress(name, module, obs)
        if not torch.equal(out_in(module).float() == 0, mask | (W0 == 0)):
            raise ReproError(f"{name}: the replayed RIA mask differs from the pruner's")  # the replay is the pruner's
        return {**(out or {}), "trace": {"layer": name, **terms(W0, norms, self.sparsity, float(self.params.a), mask)}}
