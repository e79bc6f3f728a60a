"""Unstructured sparsity of the prunable linear layers: their ``[out, in]`` weight view, measured
sparsity, and a fingerprint of which weights are zero.

The prunable linears are the attention and MLP modules of every transformer block
(:meth:`repro.arch.base.Adapter.linears`); embeddings and the LM head are never among them.
GPT-2's ``Conv1D`` stores its weight as ``[in, out]``; :func:`out_in` gives every layer's weight
as ``[out, in]`` (a view: writing into it writes the module), so rows are output channels and
columns input features for every family.
"""
from __future__ import annotations

import hashlib

import numpy as np
import torch
from torch import nn

from repro.arch import adapter as get_adapter
from repro.arch.base import is_conv1d


def out_in(module: nn.Module) -> torch.Tensor:
    """The module's weight as ``[out_features, in_features]`` (a view, transposed for Conv1D)."""
    w = module.weight.data
    return w.T if is_conv1d(module) else w


def prunable_linears(model: nn.Module) -> dict[str, nn.Module]:
    """Qualified name -> module for every prunable linear, block 0 first and, inside a block, in
    the block's module order (the order of :meth:`Adapter.linears`)."""
    ad = get_adapter(model)
    names = {id(m): n for n, m in model.named_modules()}
    return {names[id(m)]: m for i in range(ad.n_layers) for m in ad.linears(i).values()}


def prunable_linear(model: nn.Module, name: str) -> nn.Module:
    """The prunable linear ``name`` of ``model`` (:func:`prunable_linears`), or one line naming the known ones."""
    from repro.errors import UnknownNameError

    linears = prunable_linears(model)
    if name not in linears:
        raise UnknownNameError("prunable linear", name, list(linears))
    return linears[name]


def fraction_zero(module: nn.Module) -> float:
    w = module.weight.data
    return (w == 0).sum().item() / w.numel()


def layer_sparsity(model: nn.Module) -> dict[str, float]:
    """Fraction of exactly-zero weights of every prunable linear."""
    return {n: fraction_zero(m) for n, m in prunable_linears(model).items()}


def overall_sparsity(model: nn.Module) -> float:
    """Zero weights / all weights, over the prunable linears."""
    mods = prunable_linears(model).values()
    return sum((m.weight.data == 0).sum().item() for m in mods) / sum(m.weight.numel() for m in mods)


def zeros_sha256(model: nn.Module) -> str:
    """sha256 fingerprint of the zero pattern of the prunable linears.

    For each layer in the order of :func:`prunable_linears` (blocks 0..L-1; inside a block its
    module registration order, e.g. q, k, v, o, gate, up, down for Llama), the boolean matrix
    ``out_in(module) == 0`` (``[out, in]``, so Conv1D is transposed first) is flattened row-major
    and packed with ``numpy.packbits`` (big-endian bit order, the last byte zero-padded); the
    bytes of all layers are hashed in sequence. Shapes are not hashed. Identical masks on
    identical architectures give identical digests, whatever the weights' dtype or device.
    """
    h = hashlib.sha256()
    for m in prunable_linears(model).values():
        bits = (out_in(m) == 0).contiguous().cpu().numpy().reshape(-1)
        h.update(np.packbits(bits).tobytes())
    return h.hexdigest()
