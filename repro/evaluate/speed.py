"""Wall-clock prefill timing and analytic attention cost, for dense vs zeroed vs removed models."""
from __future__ import annotations

import copy
import statistics
import time

import torch

from repro.arch import adapter as get_adapter
from repro.assets.devices import input_device, model_devices, sync
from repro.assets.machine import describe
from repro.structure import remove_channels, remove_heads, zero_channels, zero_heads


@torch.inference_mode()
def prefill_seconds(models: dict[str, torch.nn.Module], batch: int, seqlen: int, repeats: int = 5,
                    warmup: int = 1, seed: int = 0, bos: int | None = None) -> dict[str, dict]:
    """Wall-clock seconds of one forward pass over ``batch x seqlen`` tokens for each model.

    The models are timed round-robin (dense, variant 1, variant 2, ..., then again), so slow
    drift in machine load or clock speed hits every model alike; the median is reported.
    Every device of a model is synchronised before the clock is read at both ends of a pass.
    ``bos``: the family's first token (:mod:`repro.assets.feeding`), else random ids throughout.
    """
    first = next(iter(models.values()))
    g = torch.Generator().manual_seed(seed)
    vocab = first.get_input_embeddings().num_embeddings
    ids = torch.randint(4, vocab, (batch, seqlen), generator=g)
    if bos is not None:
        ids[:, 0] = bos
    inputs = {name: ids.to(input_device(model)) for name, model in models.items()}
    devices = {name: model_devices(model) for name, model in models.items()}
    times: dict[str, list[float]] = {name: [] for name in models}
    for k in range(warmup + repeats):
        for name, model in models.items():
            for d in devices[name]:
                sync(d)
            t0 = time.perf_counter()
            model(input_ids=inputs[name], use_cache=False)
            for d in devices[name]:
                sync(d)
            if k >= warmup:
                times[name].append(time.perf_counter() - t0)
    return {name: {"median_s": statistics.median(t), "times_s": t, "batch": batch, "seqlen": seqlen,
                   "threads": torch.get_num_threads()} for name, t in times.items()}


def zeroed_and_removed(model: torch.nn.Module, heads, channels: dict | None = None) -> dict[str, torch.nn.Module]:
    """Two copies of ``model`` without the units: ``zeroed`` (their weights set to 0, shapes kept) and
    ``removed`` (physically removed, :mod:`repro.structure`); ``heads``: (layer, head) pairs, ``channels``:
    ``{layer: MLP channels}``."""
    out = {}
    for mode, (on_heads, on_channels) in {"zeroed": (zero_heads, zero_channels),
                                          "removed": (remove_heads, remove_channels)}.items():
        copied = copy.deepcopy(model)
        ad = get_adapter(copied)
        on_heads(ad, heads)
        if channels is not None:
            on_channels(ad, channels)
        out[mode] = copied
    return out


def with_prefill(out: dict, variants: dict[str, torch.nn.Module], batches, seqlen: int, repeats: int,
                 bos: int | None, dtype: str) -> dict:
    """A timing record's result: ``out`` with each variant's prefill seconds at every batch size
    (``out[variant]["prefill_b{batch}"]``, timed round-robin by :func:`prefill_seconds`) and the machine that
    timed them (``out["machine"]``: the record's data, never its key, so any machine reads it)."""
    for b in batches:
        for name, t in prefill_seconds(variants, b, seqlen, repeats, bos=bos).items():
            out[name][f"prefill_b{b}"] = t
    out["machine"] = describe(dtype)
    return out


def attention_flops(model: torch.nn.Module, seqlen: int) -> int:
    """Prefill FLOPs of all attention blocks for one sequence (2 per multiply-add): Q/K/V/O
    projections plus the QK^T and AV products (full, not causal-halved), from current shapes."""
    ad = get_adapter(model)
    d = ad.config.hidden_size
    total = 0
    for i in range(ad.n_layers):
        a = ad.attention(i)
        qo = a.n_heads * a.head_dim
        kv = a.n_kv_heads * a.head_dim
        total += 2 * seqlen * d * (2 * qo + 2 * kv) + 2 * 2 * seqlen * seqlen * qo
    return total


def attention_params(model: torch.nn.Module) -> int:
    ad = get_adapter(model)
    return sum(s.module.weight.numel() for i in range(ad.n_layers) for s in ad.attention(i).sites)


def count_params(model: torch.nn.Module, nonzero: bool = False) -> int:
    seen, n = set(), 0
    for p in model.parameters():
        if id(p) in seen:
            continue
        seen.add(id(p))
        n += int((p != 0).sum()) if nonzero else p.numel()
    return n


def timed(result: dict) -> dict:
    """The timed model states of a timing cell's result (dense, zeroed ..., removed ...), without the
    ``machine`` it was timed on (:func:`repro.assets.machine.describe`)."""
    return {k: v for k, v in result.items() if k != "machine"}
