"""bfloat16 on a CPU without fast bfloat16 instructions, at float32 speed.

A bfloat16 matrix product, on a GPU or a CPU with AVX512-BF16 / AMX, takes bf16 operands, accumulates their
products in float32 and rounds the sum to bf16 once. On a CPU without those instructions (AVX2 only) torch
falls back to a kernel that runs the same arithmetic about 5x slower than float32 (SmolLM2-135M on 32 windows
of 1,024 tokens, 2 cores: 596 s against 105 s; ``benchmarks/bf16_products.py``). :class:`Float32Products` computes each bf16 product the way
the fast kernels do, explicitly: the bf16 operands widened to float32 (exactly: every bf16 value is a float32
value, and the product of two has 16 significant bits, which float32 holds), multiplied and summed by float32
BLAS, the result rounded to bf16. Everything else (norms, residual additions, activations, attention) stays in
torch's own bf16 kernels, so the model still rounds to bf16 wherever it would. What can differ from another
machine's bf16 is the order in which the float32 sums are taken, as it differs between any two bf16 kernels.

Measured against a record computed with native bf16 on an AVX512-BF16 machine (SmolLM2-135M, 32 x 1024
tokens spread over WikiText-2 test): perplexity 25.0129 against 25.0214 in 118 s, the largest per-window NLL
difference 0.0045 nats (``benchmarks/results/bf16_products_smollm2-135m.json``, docs/protocol.md).

:func:`bf16_products` is where it is used: around the computation of a record
(:meth:`repro.store.Store.run`) when the CPU has no fast bf16; never around a timing cell, which measures
the machine's own kernels. ``REPRO_BF16=native`` keeps torch's kernels everywhere.
"""
from __future__ import annotations

import os
from contextlib import contextmanager

import torch
import torch.nn.functional as F
from torch.overrides import TorchFunctionMode

from repro.assets import models

ENV = "REPRO_BF16"  # "native": torch's own bf16 kernels even where they are slow
METHOD = "float32 products of bfloat16 operands, rounded to bfloat16 (repro.assets.precision)"

_PRODUCTS = {F.linear, torch.matmul, torch.bmm, torch.mm, torch.Tensor.matmul, torch.Tensor.__matmul__,
             torch.Tensor.bmm, torch.Tensor.mm}


class Float32Products(TorchFunctionMode):
    """While active, every matrix product whose tensor operands are all bfloat16 CPU tensors is computed in
    float32 on the widened operands and rounded to bfloat16 (:mod:`this module <repro.assets.precision>`);
    any other call runs as it is. ``calls`` counts the products it computed."""

    def __init__(self):
        super().__init__()
        self.calls = 0

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in _PRODUCTS:
            tensors = [a for a in (*args, *kwargs.values()) if isinstance(a, torch.Tensor)]
            if tensors and all(t.dtype == torch.bfloat16 and t.device.type == "cpu" for t in tensors):
                self.calls += 1
                wide = [a.float() if isinstance(a, torch.Tensor) else a for a in args]
                wide_kw = {k: v.float() if isinstance(v, torch.Tensor) else v for k, v in kwargs.items()}
                return func(*wide, **wide_kw).to(torch.bfloat16)
        return func(*args, **kwargs)


def wanted() -> bool:
    """Whether bf16 products on the CPU are computed through float32 here: where the CPU has no fast bf16,
    unless ``REPRO_BF16=native``. (The mode touches CPU tensors only: a GPU's products run as they are.)"""
    return os.environ.get(ENV, "").strip().lower() != "native" and not models.fast_bf16()


@contextmanager
def bf16_products(enable: bool = True):
    """The block's bf16 CPU matrix products through :class:`Float32Products` where ``enable`` and :func:`wanted`;
    yields the mode (its ``calls`` say whether any ran), or None where torch's own kernels run."""
    if not (enable and wanted()):
        yield None
        return
    with Float32Products() as mode:
        yield mode
