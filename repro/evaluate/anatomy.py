"""Why a pruned model collapses: per-layer sublayer output scale and single-head restores.

Two measurements of one head selection U (heads masked through :class:`repro.structure.Masks`), both on
the same few windows:

- :func:`sublayer_rms`: each sublayer's output *before* any post-sublayer norm (the output projection's
  output ``o = W z + b``), its RMS per token averaged over tokens, in the model as it is. Run on the dense
  and on the pruned model, the ratio per layer says where the pruned model's activations leave their dense
  scale: below 1 in a layer that lost heads, and above 1 in a *later* layer whose surviving heads now
  read a residual stream the earlier heads no longer write (heads depend on heads before them). In a
  family that normalises each sublayer's output before the residual add (Gemma 2/3,
  :meth:`repro.arch.base.Adapter.post_sublayer_norms`) that norm hides the scale from the residual stream
  but multiplies the layer's survivors by ``rms(o) / rms(o_U)`` (:mod:`repro.evaluate.rescale`).
- :func:`restore_effects`: the loss with each pruned head given back on its own (the heads the
  collapse depends on), and with each head of one layer pruned in addition (the later heads that go
  wrong without the earlier ones).
"""
from __future__ import annotations

from typing import Iterable, Sequence

import numpy as np
import torch

from repro.arch import Adapter
from repro.evaluate.ppl import window_nll
from repro.structure.masks import Masks

Head = tuple[int, int]


def sublayer_rms(adapter: Adapter, inputs: torch.Tensor, kinds: Sequence[str] = ("head", "mlp"),
                 batch_size: int = 4) -> dict[tuple[str, int], float]:
    """``{(kind, layer): mean over tokens of rms(o)}``: each layer's attention ("head") and MLP ("mlp")
    output projection's output on ``inputs`` ([n, seq] ids), in the model as it is (masks applied)."""
    sums: dict[tuple[str, int], list[float]] = {}

    def hook(key):
        def record(module, args, out):
            o = out.detach().float()
            rms = o.pow(2).mean(-1).sqrt().reshape(-1)
            acc = sums.setdefault(key, [0.0, 0])
            acc[0] += float(rms.sum())
            acc[1] += rms.numel()
        return record

    handles = [(adapter.attention(i) if k == "head" else adapter.mlp(i)).out_site.module.register_forward_hook(hook((k, i)))
               for i in range(adapter.n_layers) for k in kinds]
    device = next(adapter.model.parameters()).device
    try:
        with torch.inference_mode():
            for b in range(0, len(inputs), batch_size):
                adapter.model(input_ids=inputs[b:b + batch_size].to(device), use_cache=False)
    finally:
        for h in handles:
            h.remove()
    return {key: s / max(n, 1) for key, (s, n) in sums.items()}


def head_mask(shape: tuple[int, int], pruned: Iterable[Head]) -> torch.Tensor:
    mask = torch.ones(shape)
    for layer, head in pruned:
        mask[layer, head] = 0
    return mask


def loss(adapter: Adapter, inputs: torch.Tensor, shape: tuple[int, int], pruned: Iterable[Head]) -> float:
    """Mean window NLL (nats) on ``inputs`` with ``pruned`` heads masked."""
    with Masks(adapter) as masks:
        pruned = list(pruned)
        masks.heads = head_mask(shape, pruned) if pruned else None
        return float(np.mean(window_nll(adapter.model, inputs, progress=False)))


def restore_effects(adapter: Adapter, inputs: torch.Tensor, shape: tuple[int, int], pruned: Sequence[Head],
                    extra: Sequence[Head] = ()) -> dict:
    """The loss of the selection ``pruned``; with each of its heads restored alone (``restore``:
    ``[(layer, head, nll)]``); and with each head of ``extra`` pruned in addition (``add``)."""
    base = [tuple(h) for h in pruned]
    return {"nll": loss(adapter, inputs, shape, base),
            "restore": [(h[0], h[1], loss(adapter, inputs, shape, [g for g in base if g != h])) for h in base],
            "add": [(h[0], h[1], loss(adapter, inputs, shape, base + [tuple(h)])) for h in extra if tuple(h) not in base]}


def anatomy(adapter: Adapter, inputs: torch.Tensor, shape: tuple[int, int], pruned: Sequence[Head]) -> dict:
    """Everything the collapse section reads of one selection: the dense and pruned loss, the per-layer
    sublayer RMS of both (and their ratio), the emptied layers, each pruned head restored alone, and each
    surviving head of the layer whose attention output grew most, pruned in addition."""
    pruned = [tuple(map(int, h)) for h in pruned]
    dense = sublayer_rms(adapter, inputs)
    with Masks(adapter) as masks:
        masks.heads = head_mask(shape, pruned) if pruned else None
        cut = sublayer_rms(adapter, inputs)
    ratio = {f"{k}:{i}": cut[k, i] / max(dense[k, i], 1e-12) for k, i in dense}
    per_layer = np.bincount([h[0] for h in pruned], minlength=shape[0]) if pruned else np.zeros(shape[0], int)
    emptied = [int(i) for i in np.flatnonzero(per_layer == shape[1])]
    grown = [i for i in range(shape[0]) if per_layer[i] < shape[1]]
    worst = max(grown, key=lambda i: ratio[f"head:{i}"]) if grown else None
    extra = [] if worst is None else [(worst, h) for h in range(shape[1]) if (worst, h) not in pruned]
    effects = restore_effects(adapter, inputs, shape, pruned, extra)
    return {"pruned": [list(h) for h in pruned], "emptied": emptied, "nll_dense": loss(adapter, inputs, shape, []),
            **effects, "rms_dense": {f"{k}:{i}": v for (k, i), v in dense.items()}, "rms_ratio": ratio,
            "grown_layer": worst}
