"""SparseGPT's terms on one real layer (notebook 2's worked baseline, issue 50), as :class:`SparseGPTTrace` records
them while pruning exactly as :class:`repro.methods.unstructured.SparseGPT` does.

For a linear ``W`` (rows: outputs, columns: inputs) and its calibration inputs ``X``, SparseGPT minimises the
output error ``||W X - W' X||^2`` one column block at a time (Frantar and Alistarh's OBS step):

- the Hessian ``H = 2 X X^T / n`` (damped: ``H + percdamp * mean(diag H) * I``), and ``U``, the upper Cholesky
  factor of ``H^-1``;
- in a block of ``blocksize`` columns, the weights with the lowest saliency ``w_ij^2 / U_jj^2`` (over the whole
  block, so rows get different sparsities) are pruned;
- column by column, the error of the pruned weights ``e_j = w_j / U_jj`` (0 where kept) is spread over the
  later columns, ``w_k -= U_jk e_j``: the kept weights move to make up for the pruned ones;
- after the block, its accumulated errors update every later column.

:func:`first_block` replays that for the first block alone (the same arithmetic, tested against the pruner's
result), and :func:`against_wanda` sets the final mask beside Wanda's on the same inputs (per row, the lowest
``|w_ij| ||x_j||``) and compares the output errors: Wanda's mask with no update, SparseGPT's mask with its updates.
"""
from __future__ import annotations

import numpy as np
import torch

from repro.errors import ReproError
from repro.methods.registry import n_lowest
from repro.methods.unstructured import SparseGPT, lowest_in_layer, lowest_per_row, out_in
from repro.structure.sparsity import prunable_linear


def damped_factor(H: torch.Tensor, percdamp: float) -> tuple[torch.Tensor, float]:
    """``U`` (upper Cholesky factor of the damped ``H``'s inverse, as SparseGPT computes it) and the damping."""
    H = H.clone()
    dead = H.diagonal() == 0
    H[dead, dead] = 1
    damp = float(percdamp * torch.diag(H).mean())
    H.diagonal().add_(damp)
    return torch.linalg.cholesky(torch.cholesky_inverse(torch.linalg.cholesky(H)), upper=True), damp


def first_block(W: torch.Tensor, H: torch.Tensor, sparsity: float, blocksize: int = 128,
                percdamp: float = 0.01) -> dict:
    """SparseGPT's first column block of ``W`` (float32, rows x columns) on Hessian ``H``: per column its
    ``U_jj``, how many of its weights are pruned, the norm of its error ``e_j`` and how far the later columns of
    the block moved because of it; and the block after pruning and updating (``block``)."""
    U, damp = damped_factor(H, percdamp)
    bs = min(blocksize, W.shape[1])
    Wt = W[:, :bs].T.contiguous().clone()
    d = U[:bs, :bs].diagonal()
    mask = lowest_in_layer(Wt ** 2 / d[:, None] ** 2, n_lowest(sparsity, Wt.numel()))
    err_norm, moved, before = [], [], Wt.clone()
    for i in range(bs):
        e = torch.where(mask[i], Wt[i], 0.0) / d[i]
        update = U[i, i:bs, None] * e[None, :]
        Wt[i:] -= update
        err_norm.append(float(e.norm()))
        moved.append(float(update[1:].norm()))
    block = Wt.masked_fill(mask, 0.0).T
    kept = ~mask.T
    return {"damp": damp, "U_diag": d.tolist(), "pruned_per_column": mask.sum(1).tolist(), "error_norm": err_norm,
            "moved_later": moved, "block": block,
            "kept_change": float((block - before.T)[kept].norm() / before.T[kept].norm())}


def output_error(W: torch.Tensor, W2: torch.Tensor, H: torch.Tensor) -> float:
    """``tr((W - W2) H (W - W2)^T)``: the squared output error on the calibration inputs (H undamped)."""
    D = (W - W2).double()
    return float(torch.einsum("ij,jk,ik->", D, H.double(), D))


def against_wanda(W: torch.Tensor, W_sparsegpt: torch.Tensor, H: torch.Tensor, sparsity: float) -> dict:
    """SparseGPT's final weights beside Wanda's mask on the same inputs: the overlap of the two masks, each
    mask's per-row sparsity spread, and the output error relative to the dense output energy ``tr(W H W^T)``
    of Wanda's mask (no update), of SparseGPT's mask without its updates, and of SparseGPT as it prunes."""
    norms = H.diagonal().clamp_min(0).sqrt()
    wanda = lowest_per_row(W.abs() * norms[None, :], n_lowest(sparsity, W.shape[1]))
    sgpt = W_sparsegpt == 0
    energy = output_error(W, torch.zeros_like(W), H)
    rel = lambda W2: output_error(W, W2, H) / energy  # noqa: E731
    return {"overlap": float((wanda & sgpt).sum() / sgpt.sum()), "jaccard": float((wanda & sgpt).sum() / (wanda | sgpt).sum()),
            "row_sparsity_sparsegpt": np.quantile(sgpt.float().mean(1).numpy(), [0, 0.05, 0.5, 0.95, 1]).tolist(),
            "row_sparsity_wanda": np.quantile(wanda.float().mean(1).numpy(), [0, 0.5, 1]).tolist(),
            "error_wanda": rel(W.masked_fill(wanda, 0.0)), "error_sparsegpt_mask_only": rel(W.masked_fill(sgpt, 0.0)),
            "error_sparsegpt": rel(W_sparsegpt)}


class SparseGPTTrace(SparseGPT):
    """:class:`SparseGPT` that prunes exactly as SparseGPT does and, for the one layer ``trace_layer``, adds to that
    layer's extras a ``"trace"``: :func:`first_block` (its replayed block checked equal to the pruner's) and
    :func:`against_wanda`. Call :meth:`bind` on the model before pruning it. Not a registered method."""

    def __init__(self, sparsity, pattern="unstructured", *, trace_layer: str, **params):
        super().__init__(sparsity, pattern, **params)
        if not self.pattern.unstructured:
            raise ReproError("the SparseGPT worked example is unstructured")
        self.trace_layer, self._module = str(trace_layer), None

    def bind(self, model: torch.nn.Module) -> "SparseGPTTrace":
        self._module = prunable_linear(model, self.trace_layer)
        return self

    def compress(self, name, module, obs):
        if module is not self._module:
            return super().compress(name, module, obs)
        W0, H = out_in(module).float().clone(), obs[0].hessian.clone()
        out = super().compress(name, module, obs)
        W1 = out_in(module).float().clone()
        block = first_block(W0, H, self.sparsity, int(self.params.blocksize), float(self.params.percdamp))
        bs = block["block"].shape[1]
        if self.params.count != "exact" or (H.diagonal() == 0).any():
            raise ReproError("the worked example replays the exact count on a layer with no dead input")
        if not torch.equal(block.pop("block"), W1[:, :bs]):
            raise ReproError(f"{name}: the replayed first block differs from SparseGPT's")  # the replay is the pruner's
        trace = {"layer": name, "rows": int(W0.shape[0]), "cols": int(W0.shape[1]), "blocksize": bs,
                 "H_diag_quantiles": np.quantile(H.diagonal().numpy(), [0, 0.05, 0.5, 0.95, 1]).tolist(),
                 **block, **against_wanda(W0, W1, H, self.sparsity)}
        return {**(out or {}), "trace": trace}
