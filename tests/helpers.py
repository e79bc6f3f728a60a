"""Shared helpers: inputs for tiny models and an output function per task."""
import torch

from repro.assets.tiny import TINY, build_tiny


def inputs(name: str, batch: int = 2, seqlen: int = 12, seed: int = 0) -> dict:
    g = torch.Generator().manual_seed(seed)
    task = TINY[name][2]
    if task in ("causal-lm", "masked-lm"):
        return {"input_ids": torch.randint(4, 260, (batch, seqlen), generator=g)}
    return {"pixel_values": torch.randn(batch, 1, 28, 28, generator=g)}


@torch.no_grad()
def output(model, kw) -> torch.Tensor:
    o = model(**kw)
    return o.logits if hasattr(o, "logits") else o.last_hidden_state


def n_params(model) -> int:
    return sum(p.numel() for p in {id(p): p for p in model.parameters()}.values())


__all__ = ["TINY", "build_tiny", "inputs", "output", "n_params"]
