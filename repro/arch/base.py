"""Where attention heads and MLP channels live in a model: sites, layouts, adapters.

A *site* is one weight dimension of one module (``nn.Linear`` or GPT-2's ``Conv1D``) whose
features belong to structural units: query heads ("q"), key/value heads ("k", "v"), the output
projection's per-head input columns ("o"), or MLP channels ("c"). Features come in *blocks* of
``width`` consecutive features, one block per (role, unit); the site's ``layout`` function gives
the block order for given unit counts, e.g. ``q0..qH-1, k0.., v0..`` for GPT-2's fused
``c_attn`` or ``q0 k0 v0 q1 k1 v1 ...`` for GPT-NeoX's ``query_key_value``.

Everything in ``repro.structure`` and ``repro.methods`` works on sites, so a new model family
is only an :class:`Adapter` that names its modules. An adapter class that sets ``model_types`` in
its own body is a family: defining it registers it (:data:`REGISTRY`, see :func:`register`).

An adapter also knows what comes after the last layer (:meth:`Adapter.head_modules`: final
norm, output projection, LM head or a ViT's layernorm / pooler / classifier) and can run a
suffix of the model, layers ``l..L-1`` then the head (:meth:`Adapter.run_from`), from the
hidden state entering layer ``l`` and each layer's call arguments (:class:`LayerCall`, as
captured from a full forward). Masking a unit of layer ``l`` leaves everything before layer
``l`` unchanged, which is what makes prefix reuse (``repro.evaluate.prefix``) exact.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Sequence

import torch
from torch import nn

Layout = Callable[[dict], list]  # counts {role: n} -> [(role, index), ...] in storage order


def role_major(*roles: str) -> Layout:
    return lambda n: [(r, i) for r in roles for i in range(n[r])]


def unit_major(*roles: str) -> Layout:
    return lambda n: [(r, i) for i in range(n[roles[0]]) for r in roles]


def is_conv1d(module: nn.Module) -> bool:
    return type(module).__name__ == "Conv1D"  # transformers.pytorch_utils.Conv1D: weight [in, out]


@dataclass
class Site:
    module: nn.Module
    side: str          # "out": features are the module's outputs (rows of a Linear); "in": its inputs
    width: int         # features per block (head_dim, or 1 for MLP channels)
    layout: Layout
    counts: dict       # current units per role

    @property
    def dim(self) -> int:
        """Dimension of ``module.weight`` that indexes this site's features."""
        out_dim = 1 if is_conv1d(self.module) else 0
        return out_dim if self.side == "out" else 1 - out_dim

    @property
    def roles(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(r for r, _ in self.layout(self.counts)))

    def block_positions(self) -> dict:
        """{(role, unit): block number along the site's dimension} for the current counts."""
        return {b: k for k, b in enumerate(self.layout(self.counts))}

    def index(self, role: str, units=None) -> torch.Tensor:
        """Feature positions of ``units`` of ``role`` (all units if None), in unit order."""
        units = range(self.counts[role]) if units is None else units
        return self.index_of_blocks([(role, u) for u in units])

    def index_of_blocks(self, blocks, positions: dict | None = None) -> torch.Tensor:
        """Feature positions of ``blocks`` [(role, unit), ...], concatenated in that order."""
        pos = self.block_positions() if positions is None else positions
        starts = torch.tensor([pos[b] for b in blocks], dtype=torch.long) * self.width
        return (starts[:, None] + torch.arange(self.width)).flatten()

    def matrix(self, role: str) -> torch.Tensor:
        """Weights of ``role`` as [features, other] (rows = this site's features, unit order)."""
        w = self.module.weight.detach().index_select(self.dim, self.index(role).to(self.module.weight.device))
        return w if self.dim == 0 else w.T

    def grad_matrix(self, role: str) -> torch.Tensor:
        g = self.module.weight.grad.index_select(self.dim, self.index(role).to(self.module.weight.device))
        return g if self.dim == 0 else g.T


@dataclass
class Attention:
    """One layer's attention: its sites and geometry. ``g = n_heads // n_kv_heads``."""
    module: nn.Module
    sites: list[Site]
    n_heads: int
    n_kv_heads: int
    head_dim: int

    @property
    def group_size(self) -> int:
        return self.n_heads // self.n_kv_heads

    def site(self, role: str) -> Site:
        return next(s for s in self.sites if role in s.roles)

    @property
    def out_site(self) -> Site:
        """The site whose input is the concatenation of head outputs (o_proj and friends)."""
        return self.site("o")


@dataclass
class MLP:
    module: nn.Module
    sites: list[Site]
    n_channels: int

    @property
    def out_site(self) -> Site:
        return next(s for s in self.sites if s.side == "in")


# config.model_type (of the text config) -> the family's adapter class; filled by class definitions
REGISTRY: dict[str, type["Adapter"]] = {}


def register(cls: type["Adapter"]) -> type["Adapter"]:
    """Make ``cls`` the adapter of its ``model_types`` (its ``bos_first`` then decides their ``<bos>`` rule:
    :func:`repro.arch.needs_bos`). Runs by itself for every subclass of :class:`Adapter` whose own body sets
    ``model_types``; a model_type already taken by another family is an error."""
    taken = {t: REGISTRY[t].__name__ for t in cls.model_types if REGISTRY.get(t, cls) is not cls}
    if taken:
        raise ValueError(f"{cls.__name__}: model_types already adapted: {taken}")
    REGISTRY.update(dict.fromkeys(cls.model_types, cls))
    return cls


def unregister(cls: type["Adapter"]) -> None:
    """Undo :func:`register` (a family defined by a test)."""
    mine = [t for t in cls.model_types if REGISTRY.get(t) is cls]
    for t in mine:
        del REGISTRY[t]


class Adapter:
    """One model family. Subclasses name modules; all logic lives in the generic code.

    ``model_types``: the ``config.model_type`` values (of the text config) this family adapts;
    setting it in a class body registers the class. ``bos_first``: the family's inputs start with
    ``<bos>`` (:mod:`repro.assets.feeding`). ``down``: path of the MLP's output linear inside a
    block, one of :meth:`linear_paths` (:func:`repro.arch.down_projection_names`)."""

    model_types: tuple[str, ...] = ()
    bos_first: bool = False

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "model_types" in vars(cls):
            register(cls)

    def __init__(self, model: nn.Module):
        self.model = model
        self.config = model.config.get_text_config() if hasattr(model.config, "get_text_config") else model.config
        self.layers = self._find_layers(model)

    @classmethod
    def linear_paths(cls) -> tuple[str, ...]:  # pragma: no cover - abstract
        """Paths inside a block of the family's prunable linears (the keys of :meth:`linears`)."""
        raise NotImplementedError

    def _find_layers(self, model: nn.Module) -> nn.ModuleList:
        n = self.config.num_hidden_layers
        for _, mod in model.named_modules():
            if isinstance(mod, nn.ModuleList) and len(mod) == n:
                return mod
        raise ValueError(f"no ModuleList of {n} layers in {type(model).__name__}")

    @property
    def n_layers(self) -> int:
        return len(self.layers)

    @property
    def head_dim(self) -> int:
        c = self.config
        return getattr(c, "head_dim", None) or c.hidden_size // c.num_attention_heads

    def attention(self, i: int) -> Attention:  # pragma: no cover - abstract
        raise NotImplementedError

    def mlp(self, i: int) -> MLP:  # pragma: no cover - abstract
        raise NotImplementedError

    def set_heads(self, attn: nn.Module, n_heads: int, n_kv_heads: int) -> None:
        """Update the attention module's bookkeeping after its projections were resized."""
        for name, value in (("num_heads", n_heads), ("num_attention_heads", n_heads),
                            ("num_key_value_heads", n_kv_heads),
                            ("num_key_value_groups", n_heads // max(n_kv_heads, 1)),
                            ("all_head_size", n_heads * self.head_dim)):
            if hasattr(attn, name):
                setattr(attn, name, value)

    def extra_head_params(self, i: int) -> list[tuple[nn.Module, str, int]]:
        """Per-query-head parameters of block ``i`` outside its sites, as ``(module, attribute name,
        dimension)``: one entry along that dimension per query head. Physical removal
        (:func:`repro.structure.heads.apply_layer`) selects them with the surviving heads (a zero
        head gets zeros); masking never needs them. None by default; Swin: its relative position bias table."""
        return []

    def linears(self, i: int) -> dict[str, nn.Module]:
        """Block ``i``'s prunable linear layers (``nn.Linear`` or ``Conv1D``): every module of its
        attention and MLP sites, named by path inside the block (``"self_attn.q_proj"``,
        ``"mlp.c_fc"``, ...), in the block's module (registration) order."""
        mine = {id(s.module) for s in self.attention(i).sites + self.mlp(i).sites}
        return {name: m for name, m in self.layers[i].named_modules() if id(m) in mine}

    def heads_per_layer(self) -> list[int]:
        return [self.attention(i).n_heads for i in range(self.n_layers)]

    def post_sublayer_norms(self, i: int) -> dict[str, nn.Module]:
        """Norms layer ``i`` applies to a sublayer's *output* before the residual add, by unit kind
        ("head": after attention, "mlp": after the MLP); none in a pre-norm family (the default), where a
        masked unit simply stops contributing. Where there is one, masking a unit rescales the survivors
        of its sublayer (:mod:`repro.evaluate.rescale`)."""
        return {}

    # ---- after the layers: final norm and head; running layers l..L-1 then the head ----------

    def head_modules(self) -> list[nn.Module]:  # pragma: no cover - abstract
        """Modules applied to the last layer's output, in order (final norm, ..., output head)."""
        raise NotImplementedError(f"{type(self).__name__} does not name its final norm and head")

    def logits_from(self, hidden: torch.Tensor) -> torch.Tensor:
        """The model's output (logits) from the hidden state leaving the last layer."""
        for module in self.head_modules():
            hidden = module(hidden)
        return hidden

    def run_layers(self, start: int, stop: int, hidden: torch.Tensor, calls: Sequence["LayerCall"]) -> torch.Tensor:
        """Hidden state leaving layer ``stop - 1`` from ``hidden`` entering layer ``start``,
        each layer called with its captured arguments ``calls[i]``."""
        for i in range(start, stop):
            out = self.layers[i](hidden, *calls[i].args, **calls[i].kwargs)
            hidden = out[0] if isinstance(out, tuple) else out
        return hidden

    def run_from(self, start: int, hidden: torch.Tensor, calls: Sequence["LayerCall"]) -> torch.Tensor:
        """Logits from ``hidden`` entering layer ``start``: layers ``start..L-1``, then the head."""
        return self.logits_from(self.run_layers(start, self.n_layers, hidden, calls))


@dataclass
class LayerCall:
    """The arguments a layer was called with, after its hidden-state input: extra positional
    arguments (GPT-2's cache and mask, ViT's mask) and keywords (position embeddings, attention
    mask, position ids, ...)."""
    args: tuple = ()
    kwargs: dict = field(default_factory=dict)


def features(module: nn.Module, side: str) -> int:
    """Current size of the ``side`` dimension of a Linear or Conv1D."""
    w = module.weight
    if is_conv1d(module):
        return w.shape[1] if side == "out" else w.shape[0]
    return w.shape[0] if side == "out" else w.shape[1]
