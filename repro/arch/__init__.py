"""Layer 1: architecture adapters. ``adapter(model)`` picks the family by ``config.model_type``."""
from __future__ import annotations

from torch import nn

from repro.arch.base import MLP, Adapter, Attention, Site
from repro.arch.families import GPT2, OPT, BertLike, GPTNeoX, LlamaLike, ViTLike
from repro.errors import UnsupportedArchitectureError

FAMILIES: list[type[Adapter]] = [LlamaLike, OPT, ViTLike, BertLike, GPT2, GPTNeoX]
REGISTRY: dict[str, type[Adapter]] = {t: f for f in FAMILIES for t in f.model_types}


def adapter(model: nn.Module) -> Adapter:
    config = model.config.get_text_config() if hasattr(model.config, "get_text_config") else model.config
    cls = REGISTRY.get(config.model_type)
    if cls is None:
        raise UnsupportedArchitectureError(
            f"no adapter for model_type {config.model_type!r}; supported: {', '.join(sorted(REGISTRY))}")
    return cls(model)


__all__ = ["Adapter", "Attention", "MLP", "Site", "adapter", "REGISTRY"]
