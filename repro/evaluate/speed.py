"""Wall-clock prefill timing and analytic attention cost, for dense vs zeroed vs removed models."""
from __future__ import annotations

import statistics
import time

import torch

from repro.arch import adapter as get_adapter
from repro.assets.devices import input_device, model_devices, sync


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
