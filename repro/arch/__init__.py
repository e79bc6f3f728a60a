"""Layer 1: architecture adapters. ``adapter(model)`` picks the family by ``config.model_type``
(of the text config).

How to add a model family (two files):

1. ``repro/arch/families.py``: a subclass of :class:`Separate` (separate Q/K/V/O linears) or
   :class:`Fused` (one QKV module) that names its modules (``attn``, ``q``/``k``/``v``/``o`` or
   ``qkv``/``out``, ``up``, ``down``: paths inside a block), its ``head_modules()`` (final norm,
   LM head...) and ``model_types``, the ``config.model_type`` values it adapts. Setting
   ``model_types`` in the class body registers the class: :data:`REGISTRY`, :func:`adapter`,
   :func:`down_projection_names` and the ``<bos>`` rule (:func:`needs_bos`, :func:`bos_token`) all
   follow. Set ``bos_first = True`` if the family is trained with ``<bos>`` first (Gemma).
2. ``repro/assets/tiny.py``: one :data:`~repro.assets.tiny.TINY` entry ``"tiny-<family>": (config
   factory, model class, task)`` (add the name to ``BOS_TOKENIZER`` too if ``bos_first``). Every
   test parametrised over ``TINY`` (``tests/test_arch.py``...) then covers the family; its hand
   oracle ``HAND`` in ``tests/test_arch.py`` needs the family's O and down projection paths.

The tiny configs stay in ``repro.assets`` (layer 0) because ``repro.assets.models.load_model``
builds tiny models by name and cannot import this layer; ``tests/test_new_family.py`` is a worked
example.
"""
from __future__ import annotations

from torch import nn

from repro.arch.base import MLP, REGISTRY, Adapter, Attention, Site, register, unregister
from repro.arch.families import Fused, Separate  # defining the families registers them
from repro.errors import UnsupportedArchitectureError


def adapter(model: nn.Module) -> Adapter:
    config = model.config.get_text_config() if hasattr(model.config, "get_text_config") else model.config
    cls = REGISTRY.get(config.model_type)
    if cls is None:
        raise UnsupportedArchitectureError(
            f"no adapter for model_type {config.model_type!r}; supported: {', '.join(sorted(REGISTRY))}")
    return cls(model)


def _text_config(config):
    return config.get_text_config() if hasattr(config, "get_text_config") else config


def bos_families() -> frozenset[str]:
    """The model_types whose family requires ``<bos>`` first (its adapter's ``bos_first``)."""
    return frozenset(t for t, cls in REGISTRY.items() if cls.bos_first)


def needs_bos(config) -> bool:
    """Whether this model's family requires ``<bos>`` first (its adapter's ``bos_first``; False for a model_type no
    adapter claims)."""
    cls = REGISTRY.get(getattr(_text_config(config), "model_type", None))
    return bool(cls is not None and cls.bos_first)


def bos_token(config, tokenizer) -> int | None:
    """The token every window starts with for this model (None: windows are plain text,
    :mod:`repro.assets.feeding`)."""
    if not needs_bos(config):
        return None
    text = _text_config(config)
    bos = getattr(tokenizer, "bos_token_id", None)
    if bos is None:
        bos = getattr(text, "bos_token_id", None)
    if bos is None:
        raise ValueError(f"{text.model_type} needs a BOS token, but neither its tokenizer nor its config has one")
    return int(bos)


def down_projection_names() -> tuple[str, ...]:
    """Suffixes that tell the MLP down projections among a model's prunable linears by qualified
    name (``model.layers.3.mlp.down_proj``): each registered family's ``down``, in registration
    order, except one that also ends another family linear's path (BERT-likes' ``output.dense`` ends
    ``attention.output.dense``), so a name ending with one of them is a down projection."""
    others = {p for cls in REGISTRY.values() for p in cls.linear_paths() if p != cls.down}
    downs = dict.fromkeys(cls.down for cls in REGISTRY.values())
    return tuple(d for d in downs if not any(p.endswith(d) for p in others))


__all__ = ["Adapter", "Attention", "MLP", "Site", "Separate", "Fused", "adapter", "REGISTRY", "register",
           "unregister", "down_projection_names", "needs_bos", "bos_token", "bos_families"]
