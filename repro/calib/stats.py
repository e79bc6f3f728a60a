"""Per-input-feature activation statistics, and how scorers weigh a site's weights with them.

One accumulation serves every method that reads ``sum_t x_tj^2`` over calibration tokens: the
head scorers (:func:`repro.calib.input_sumsq`), the block-sequential observers of the unstructured
pruners (:class:`repro.calib.blocks.InputSumSq`) and the bandit's Wanda-style scorer.

- :func:`feature_sumsq`: one batch's contribution. The dtype the squares are summed in is a
  parameter, because it decides the bits: float64 for the head and bandit scorers, float32 (then
  widened) for the block-sequential observers, whose masks match the reference Wanda code's.
- :class:`InputStats`: the contributions summed over batches (float64), with Wanda's
  ``||X_j||_2`` and SparseGPT's ``diag(H)``.
- :func:`record_input_sumsq`: forward pre-hooks that accumulate :class:`InputStats` of modules
  while the caller runs whatever forwards it likes (windows of a model, an evaluator's batches).
- :func:`feature_sums`: ``sum_j f(W_ij) c_j`` per feature of one role on one site, ``c`` a
  per-input-feature vector such as ``||X_j||`` or ``diag(H)``.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import torch
from torch import nn

from repro.arch.base import Site
from repro.errors import ReproError


def feature_sumsq(x: torch.Tensor, dtype: torch.dtype = torch.float64) -> tuple[torch.Tensor, int]:
    """``(sum_t x_tj^2, t)`` of ``x [..., C]`` over all leading positions t: squares summed in
    ``dtype``, returned as float64 ``[C]``, with the number of positions."""
    x = x.detach().reshape(-1, x.shape[-1])
    return x.to(dtype).square().sum(0).double(), x.shape[0]


@dataclass(eq=False)
class InputStats:
    """Per-input-feature ``sumsq_j = sum_t x_tj^2`` (float64; None before any batch) over the ``n``
    tokens seen."""
    sumsq: torch.Tensor | None = None  # [in_features]
    n: int = 0

    def add(self, measured: tuple[torch.Tensor, int]) -> None:
        """Add one :func:`feature_sumsq` result."""
        s, n = measured
        self.sumsq = s if self.sumsq is None else self.sumsq + s
        self.n += n

    @property
    def norm(self) -> torch.Tensor:
        """Wanda's ||X_j||_2 over all calibration tokens."""
        return self.sumsq.sqrt()

    @property
    def hessian_diag(self) -> torch.Tensor:
        """SparseGPT's diag(H), H = 2/n X^T X."""
        return 2.0 * self.sumsq / max(self.n, 1)


@contextmanager
def record_input_sumsq(modules: Iterable[nn.Module], dtype: torch.dtype = torch.float64,
                       positions: dict | None = None) -> Iterator[dict[nn.Module, InputStats]]:
    """Inside the block, each forward of one of ``modules`` adds :func:`feature_sumsq` of its input
    (squares summed in ``dtype``) to that module's :class:`InputStats` in the yielded dict (one
    entry, and one hook, per distinct module). ``positions["mask"]``, where the caller sets it to a
    ``[B, T]`` 0/1 mask of the current batch, keeps only the positions marked 1 (padding is not data)."""
    stats = {m: InputStats() for m in dict.fromkeys(modules)}

    def hook(module, args):
        x, mask = args[0], (positions or {}).get("mask")
        if mask is not None:
            if tuple(x.shape[:2]) != tuple(mask.shape):
                raise ReproError(f"a position mask of shape {tuple(mask.shape)} does not fit an input of shape "
                                 f"{tuple(x.shape)}")
            x = x[mask.to(x.device).bool()]
        stats[module].add(feature_sumsq(x, dtype))

    handles = [m.register_forward_pre_hook(hook) for m in stats]
    try:
        yield stats
    finally:
        for h in handles:
            h.remove()


def feature_sums(site: Site, role: str, c: torch.Tensor,
                 elementwise: Callable[[torch.Tensor], torch.Tensor] = torch.abs) -> torch.Tensor:
    """Per feature i of ``role`` on ``site`` (float64, unit order): ``sum_j f(W_ij) c_j``, ``c`` a
    vector over the site module's input features and ``f = elementwise`` (``abs`` with
    ``c = ||X||``: Wanda's saliency summed over the feature's weights; ``square`` with
    ``c = diag(H)``: SparseGPT's OBS saliency). On an "in"-side site (an output projection) the
    features *are* input columns, so each is its weights' sum times its own ``c_i``."""
    w = elementwise(site.matrix(role).double())
    c = c.to(w.device)
    return w @ c if site.side == "out" else w.sum(1) * c[site.index(role).to(c.device)]
