"""How much masking units rescales the rest of their sublayer, in families that normalise a sublayer's
output before the residual add (Gemma 2/3: :meth:`repro.arch.base.Adapter.post_sublayer_norms`).

A sublayer's output is ``o = W z + b``, ``z`` the input of its output projection (the concatenated head
outputs, or the MLP's intermediate channels). Masking a set of units U zeroes their slice of ``z``, so
``o_U = o - W[:, U] z_U``. In a pre-norm model ``o_U`` is added to the residual stream as it is: the
masked units stop contributing and nothing else changes. A post-sublayer RMSNorm instead adds
``o_U / rms(o_U) * w``: every surviving unit's contribution is multiplied by ``rms(o) / rms(o_U)``
compared with the dense model. :func:`remaining_rms` measures ``rms(o_U) / rms(o)`` per token (below 1:
the survivors are scaled *up* by its inverse), from one dense forward pass.
"""
from __future__ import annotations

from typing import Sequence

import torch

from repro.arch import Adapter
from repro.structure.masks import group_range, n_groups


def _forward(adapter: Adapter, inputs: torch.Tensor, hooks: list, batch_size: int) -> None:
    """One dense no-grad forward over ``inputs`` in batches of ``batch_size``, then remove ``hooks``
    (the handles of the hooks that read it), whatever happened."""
    try:
        with torch.no_grad():
            for b in range(0, len(inputs), batch_size):
                adapter.model(inputs[b:b + batch_size].to(next(adapter.model.parameters()).device))
    finally:
        for h in hooks:
            h.remove()


def out_inputs(adapter: Adapter, inputs: torch.Tensor, kinds: Sequence[str] = ("head", "mlp"),
               batch_size: int = 4) -> dict[tuple[str, int], torch.Tensor]:
    """``{(kind, layer): z}``: the dense model's input to each layer's output projection ("head": the
    attention's, "mlp": the MLP's) on ``inputs`` ([n, seq] token ids), as float32 [tokens, features]."""
    sites = {(k, i): (adapter.attention(i) if k == "head" else adapter.mlp(i)).out_site
             for i in range(adapter.n_layers) for k in kinds}
    got: dict[tuple[str, int], list[torch.Tensor]] = {key: [] for key in sites}
    hooks = [s.module.register_forward_pre_hook(lambda m, args, key=key: got[key].append(
        args[0].detach().float().reshape(-1, args[0].shape[-1]).cpu())) for key, s in sites.items()]
    _forward(adapter, inputs, hooks, batch_size)
    return {key: torch.cat(v) for key, v in got.items()}


def unit_columns(adapter: Adapter, kind: str, layer: int, index: int, group_size: int = 32) -> tuple[torch.Tensor, torch.Tensor]:
    """(positions in the output projection's input, rows of its ``Site.matrix``) of one unit: a head's
    slice or an MLP channel group's channels."""
    site = (adapter.attention(layer) if kind == "head" else adapter.mlp(layer)).out_site
    role = site.roles[0]
    if kind == "head":
        rows = torch.arange(index * site.width, (index + 1) * site.width)
    else:
        rows = torch.tensor(list(group_range(adapter.mlp(layer).n_channels, group_size, index)))
    return site.index(role)[rows], rows


def remaining_rms(adapter: Adapter, z: torch.Tensor, kind: str, layer: int, units: Sequence[int],
                  group_size: int = 32) -> float:
    """Mean over tokens of ``rms(o_U) / rms(o)`` for the units ``units`` (heads, or MLP groups of
    ``group_size``) of ``kind`` in ``layer`` masked together; ``z``: :func:`out_inputs`' capture."""
    site = (adapter.attention(layer) if kind == "head" else adapter.mlp(layer)).out_site
    m = site.matrix(site.roles[0]).float().cpu()  # [features in unit order, outputs]
    pos = site.index(site.roles[0])
    bias = site.module.bias.detach().float().cpu() if getattr(site.module, "bias", None) is not None else 0.0
    o = z[:, pos] @ m + bias
    drop = torch.zeros_like(o)
    for u in units:
        cols, rows = unit_columns(adapter, kind, layer, u, group_size)
        drop += z[:, cols] @ m[rows]
    rms = o.pow(2).mean(-1).sqrt()
    return float(((o - drop).pow(2).mean(-1).sqrt() / rms.clamp_min(1e-12)).mean())


def single_units(adapter: Adapter, captured: dict, group_size: int = 32) -> list[dict]:
    """:func:`remaining_rms` of every single unit of the captured kinds, one row each (layer, kind, index,
    remaining, and whether the layer has a post-sublayer norm of that kind, i.e. whether it matters)."""
    rows = []
    for (kind, layer), z in captured.items():
        n = adapter.attention(layer).n_heads if kind == "head" else n_groups(adapter.mlp(layer).n_channels, group_size)
        post = kind in adapter.post_sublayer_norms(layer)
        rows += [{"kind": kind, "layer": layer, "index": u, "post_norm": post,
                  "remaining": remaining_rms(adapter, z, kind, layer, [u], group_size)} for u in range(n)]
    return rows



def _rms(x: torch.Tensor) -> torch.Tensor:
    """Per-token RMS over the last dimension, float32, flattened over batch and positions."""
    return x.detach().float().pow(2).mean(-1).sqrt().flatten().cpu()


def layer_scales(adapter: Adapter, inputs: torch.Tensor, kinds: Sequence[str] = ("head", "mlp"),
                 batch_size: int = 4) -> list[dict]:
    """Per layer and sublayer kind, from one dense forward over ``inputs`` ([n, seq] token ids), means
    over tokens of: ``sublayer_rms``, the RMS of the sublayer's output ``o`` (its output projection's);
    ``residual_rms``, the RMS of what the residual stream receives (``norm(o)`` under a post-sublayer
    norm, Gemma 2/3; ``o`` itself without one); ``stream_rms``, the RMS of the residual stream entering
    the layer; ``gain`` = residual / sublayer (1 without a post norm); ``share`` = residual / stream.

    A one-shot score built from ``|W|`` and the inputs measures a unit against ``o``. What the unit does
    to the model goes through the gain and is relative to the stream, and both differ between layers by
    orders of magnitude in the models here: why such a score, ranked across layers, piles its units into
    a few layers."""
    got: dict[tuple, list[torch.Tensor]] = {}

    def keep(key):
        return lambda m, args, out=None: got.setdefault(key, []).append(_rms(args[0] if out is None else out))

    hooks = []
    for i in range(adapter.n_layers):
        hooks.append(adapter.layers[i].register_forward_pre_hook(
            lambda m, args, kw, i=i: got.setdefault(("stream", i), []).append(
                _rms(args[0] if args else kw["hidden_states"])), with_kwargs=True))
        for k in kinds:
            out = (adapter.attention(i) if k == "head" else adapter.mlp(i)).out_site.module
            hooks.append(out.register_forward_hook(keep((k, i, "o"))))
            norm = adapter.post_sublayer_norms(i).get(k)
            hooks.append((norm or out).register_forward_hook(keep((k, i, "residual"))))
    _forward(adapter, inputs, hooks, batch_size)
    cat = {key: torch.cat(v) for key, v in got.items()}
    rows = []
    for i in range(adapter.n_layers):
        for k in kinds:
            o, res, stream = cat[(k, i, "o")], cat[(k, i, "residual")], cat[("stream", i)]
            rows.append({"kind": k, "layer": i, "post_norm": k in adapter.post_sublayer_norms(i),
                         "sublayer_rms": float(o.mean()), "residual_rms": float(res.mean()),
                         "stream_rms": float(stream.mean()), "gain": float((res / o.clamp_min(1e-12)).mean()),
                         "share": float((res / stream.clamp_min(1e-12)).mean())})
    return rows
