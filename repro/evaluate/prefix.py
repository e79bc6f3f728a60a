"""Exact, fast losses of masked models for unit searches: per-example losses and prefix reuse.

**Per-example loss.** :func:`token_nll` is the per-token next-token NLL ``[B, T-1]`` of a causal
LM (float32, as the perplexity code computes it); :func:`example_loss` its mean per sequence
``[B]``, or the per-image cross-entropy ``[B]`` of a classifier. A mini-batch's loss is the mean
of its per-example losses (equal-length windows: the token mean). No bootstrap here: this is the
inner loop of a search.

**Prefix reuse.** Masking a unit of layer l changes nothing before layer l: the residual stream
entering layer l is the same with or without it. :class:`UnitEvaluator` therefore caches, for
every calibration mini-batch and under the *current* mask, the hidden state entering each layer
and the arguments each layer was called with (position embeddings, attention mask, ...; captured
once by forward pre-hooks with ``with_kwargs=True`` during a full forward), plus the current
mask's per-example losses. A candidate of layer l then costs layers l..L-1 and the head
(``Adapter.run_from``) instead of a full forward, and the paired damage reuses the cached
current-mask loss. When a unit joins the mask, the cache of each mini-batch is recomputed from
that unit's layer onward (lazily, at the next use). The damages equal a full forward's (tested on
every family to 1e-5 in float32); ``prefix=False`` computes every loss with a full forward instead,
for checking and for the speed comparison (``benchmarks/bandit_prefix.py``).

Masks are updated in place, one unit at a time (``Masks.set_unit``); a candidate is switched off,
evaluated and switched on again. Without prefix reuse the current mask's losses are cached
too (recomputed after each change), so the two modes differ only in the candidate forwards. The
evaluator counts its work in a :class:`repro.calib.budget.Budget` (layer forwards: one layer on
one mini-batch, counted by a pre-hook on every layer).

Usage::

    with UnitEvaluator(model, lm_batches(windows, 4), group_size=32) as ev:
        sel = select_units("ucb", ev, k=16, kinds=("head",))
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import torch
import torch.nn.functional as F

from repro.arch import adapter as get_adapter
from repro.arch.base import LayerCall
from repro.assets.devices import input_device
from repro.calib.budget import Budget
from repro.errors import ReproError
from repro.evaluate.ppl import shifted_nll
from repro.structure.masks import GROUP_SIZE, Masks, group_range, n_groups


def token_nll(logits: torch.Tensor, input_ids: torch.Tensor) -> torch.Tensor:
    """Per-token NLL [B, T-1] of ``input_ids[:, 1:]`` under ``logits[:, :-1]``, float32."""
    return shifted_nll(logits, input_ids.to(logits.device))


def example_loss(logits: torch.Tensor, batch: dict) -> torch.Tensor:
    """Per-example loss [B]: mean token NLL per sequence (``input_ids``) or cross-entropy per
    image (``labels``)."""
    if "labels" in batch:
        return F.cross_entropy(logits.float(), batch["labels"].to(logits.device), reduction="none")
    if "input_ids" in batch:
        return token_nll(logits, batch["input_ids"]).mean(1)
    raise ReproError("a batch needs input_ids (language model) or pixel_values and labels (classifier)")


def lm_batches(windows: torch.Tensor, batch_size: int) -> list[dict]:
    """Calibration windows [N, T] as mini-batches ``{"input_ids": [b, T]}``."""
    if batch_size < 1 or len(windows) == 0:
        raise ReproError(f"need windows and a positive batch size, got {len(windows)} windows, {batch_size}")
    return [{"input_ids": windows[s:s + batch_size]} for s in range(0, len(windows), batch_size)]


def image_batches(pixels: torch.Tensor, labels: torch.Tensor, batch_size: int) -> list[dict]:
    """Images and labels as mini-batches ``{"pixel_values", "labels"}``."""
    if len(pixels) != len(labels) or len(labels) == 0 or batch_size < 1:
        raise ReproError(f"need as many labels as images and a positive batch size "
                         f"(got {len(pixels)} images, {len(labels)} labels, batch size {batch_size})")
    return [{"pixel_values": pixels[s:s + batch_size], "labels": labels[s:s + batch_size]}
            for s in range(0, len(labels), batch_size)]


@dataclass
class _Cache:
    """One mini-batch under the current mask: inputs of every layer, their call arguments, the
    per-example losses; ``stale``: the first layer whose output changed since (None: up to date)."""
    hidden: list[torch.Tensor]
    calls: list[LayerCall]
    loss: torch.Tensor
    stale: int | None = None


class UnitEvaluator:
    """Losses and paired damages of units ``(kind, layer, index)`` added to a current mask.

    ``batches``: mini-batch dicts (:func:`lm_batches`, :func:`image_batches`), kept on the
    model's input device. ``group_size``: channels per "mlp" unit. Use as a context manager (it
    holds the mask hooks); it implements :class:`repro.methods.bandit.Evaluator`.
    """

    def __init__(self, model: torch.nn.Module, batches: Sequence[dict], group_size: int = GROUP_SIZE,
                 prefix: bool = True):
        if not batches:
            raise ReproError("the calibration set is empty")
        self.model, self.adapter, self.prefix = model, get_adapter(model), prefix
        self.n_layers = self.adapter.n_layers
        for i in range(self.n_layers):  # every layer must accept the group size
            n_groups(self.adapter.mlp(i).n_channels, group_size)
        self.group_size = group_size
        for b in batches:
            if set(b) not in ({"input_ids"}, {"pixel_values", "labels"}):
                raise ReproError(f"a mini-batch holds input_ids (language model, no padding) or pixel_values and "
                                 f"labels (classifier); got {sorted(b)}")
        device, dtype = input_device(model), next(model.parameters()).dtype
        # pixel values in the model's dtype (a bfloat16 search model), token ids and labels as they are
        self.batches = [{k: v.to(device, dtype=dtype if v.is_floating_point() else v.dtype) for k, v in b.items()}
                        for b in batches]
        self.n_batches = len(self.batches)
        self.masks = Masks(self.adapter)
        self.budget = Budget()
        self.masked: list[tuple] = []
        self._cache: list[_Cache | None] = [None] * self.n_batches
        self._handles: list = []

    def __enter__(self) -> "UnitEvaluator":
        self.masks.__enter__()
        # one pre-hook per layer counts layer forwards wherever they happen (full, prefix, scorer passes)
        self._handles = [layer.register_forward_pre_hook(self._count) for layer in self.adapter.layers]
        return self

    def __exit__(self, *exc) -> None:
        for h in self._handles:
            h.remove()
        self._handles = []
        self.masks.__exit__(*exc)

    def _count(self, module, args) -> None:
        self.budget.layer_forwards += 1

    # ---- the mask --------------------------------------------------------------------------

    def reset(self) -> None:
        """Empty mask, fresh cache, zero budget."""
        for kind, layer, index in self.masked:
            self._switch(kind, layer, index, True)
        self.masked = []
        self._cache = [None] * self.n_batches
        self.budget = Budget()

    def _switch(self, kind: str, layer: int, index: int, on: bool) -> None:
        self.masks.set_unit(kind, layer, index, on, group_size=self.group_size)

    def add(self, unit) -> None:
        """``unit`` joins the current mask; caches go stale from its layer onward."""
        kind, layer, index = self._check(unit)
        self._switch(kind, layer, index, False)
        self.masked.append((kind, layer, index))
        for c in self._cache:
            if c is not None:
                c.stale = layer if c.stale is None else min(c.stale, layer)

    def _check(self, unit) -> tuple:
        kind, layer, index = unit
        if (kind, layer, index) in self.masked:
            raise ReproError(f"unit {kind} {layer}.{index} is already in the mask")
        return kind, layer, index

    # ---- losses ----------------------------------------------------------------------------

    def _inputs(self, b: int) -> dict:
        batch = self.batches[b]
        if "input_ids" in batch:
            return {"input_ids": batch["input_ids"], "use_cache": False}
        return {"pixel_values": batch["pixel_values"]}

    def _full(self, b: int) -> torch.Tensor:
        out = self.model(**self._inputs(b))
        return example_loss(out.logits, self.batches[b])

    def _capture(self, b: int) -> _Cache:
        """Full forward under the current mask, recording every layer's input and arguments."""
        hidden: list = [None] * self.n_layers
        calls: list = [None] * self.n_layers

        def hook_for(i):
            def hook(module, args, kwargs):
                hidden[i] = args[0]
                calls[i] = LayerCall(tuple(args[1:]), dict(kwargs))
            return hook

        handles = [self.adapter.layers[i].register_forward_pre_hook(hook_for(i), with_kwargs=True)
                   for i in range(self.n_layers)]
        try:
            loss = self._full(b)
        finally:
            for h in handles:
                h.remove()
        for c in calls:
            if any("Cache" in type(v).__name__ for v in (*c.args, *c.kwargs.values()) if v is not None):
                raise ReproError("a layer was called with a KV cache; prefix reuse needs use_cache=False")
        return _Cache(hidden, calls, loss)

    def _refresh(self, b: int) -> _Cache:
        """The cache of mini-batch b, recomputed from its first stale layer if needed (without
        prefix reuse: only the current mask's loss, recomputed by a full forward)."""
        c = self._cache[b]
        if not self.prefix:
            if c is None or c.stale is not None:
                c = self._cache[b] = _Cache([], [], self._full(b))
                self.budget.baseline_losses += 1
        elif c is None:
            c = self._cache[b] = self._capture(b)
            self.budget.baseline_losses += 1
        elif c.stale is not None:
            h = c.hidden[c.stale]
            for i in range(c.stale, self.n_layers):
                if i > c.stale:
                    c.hidden[i] = h
                h = self.adapter.run_layers(i, i + 1, h, c.calls)
            c.loss = example_loss(self.adapter.logits_from(h), self.batches[b])
            c.stale = None
            self.budget.baseline_losses += 1
        return c

    @torch.no_grad()
    def per_example(self, b: int, unit=None) -> torch.Tensor:
        """Per-example losses [B] of mini-batch b under the current mask (+ ``unit``)."""
        c = self._refresh(b)
        if unit is None:
            return c.loss
        kind, layer, index = self._check(unit)
        self._switch(kind, layer, index, False)
        try:
            self.budget.candidate_losses += 1
            if not self.prefix:
                return self._full(b)
            return example_loss(self.adapter.run_from(layer, c.hidden[layer], c.calls), self.batches[b])
        finally:
            self._switch(kind, layer, index, True)

    def loss(self, b: int, unit=None) -> float:
        """Mean per-example loss of mini-batch b under the current mask (+ ``unit``)."""
        return float(self.per_example(b, unit).mean())

    def damage(self, unit, batches: Sequence[int]) -> float:
        """One paired evaluation: mean over ``batches`` of loss(mask + unit) - loss(mask)."""
        if not batches:
            raise ReproError("a paired evaluation needs at least one mini-batch")
        self.budget.paired_evaluations += 1
        d = [self.loss(b, unit) - self.loss(b) for b in batches]
        return float(sum(d) / len(d))

    # ---- calibration passes of the one-shot scorers ---------------------------------------

    @torch.no_grad()
    def forward(self, b: int) -> torch.Tensor:
        """Full forward of mini-batch b under the current mask: its per-example losses (for
        scorers whose hooks read activations)."""
        self.budget.calibration_passes += 1
        return self._full(b)

    def gradient(self, b: int) -> float:
        """Forward and backward of mini-batch b's mean loss under the current mask; the
        gradient is accumulated into ``.grad`` (the caller zeroes it). Returns the loss."""
        self.budget.calibration_passes += 1
        self.budget.backward_passes += 1
        with torch.enable_grad():
            loss = self._full(b).mean()
            loss.backward()
        return float(loss.detach())

    def unit_channels(self, layer: int, group: int) -> range:
        """Channels of MLP unit ``("mlp", layer, group)``."""
        return group_range(self.adapter.mlp(layer).n_channels, self.group_size, group)
