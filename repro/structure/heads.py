"""Attention heads: zero (MP-G Algorithm 1), plan and perform physical removal."""
from __future__ import annotations

from collections import defaultdict
from typing import Iterable

import torch
from torch import nn

from repro.arch import Adapter
from repro.structure.sites import reselect_, zero_

Head = tuple[int, int]  # (layer, query head)


def by_layer(heads: Iterable[Head], n_layers: int) -> dict[int, list[int]]:
    out = defaultdict(list)
    for layer, head in heads:
        if not 0 <= layer < n_layers:
            raise ValueError(f"layer {layer} out of range [0, {n_layers})")
        out[int(layer)].append(int(head))
    return {k: sorted(set(v)) for k, v in out.items()}


def full_groups(pruned: list[int], n_heads: int, n_kv_heads: int) -> list[int]:
    """KV heads all of whose query heads are pruned (only those lose their K/V rows)."""
    g = n_heads // n_kv_heads
    p = set(pruned)
    return [j for j in range(n_kv_heads) if all(j * g + t in p for t in range(g))]


def zero_heads(adapter: Adapter, heads: Iterable[Head]) -> None:
    """Algorithm 1 of MP-G: zero each pruned head's Q rows and O columns; zero K/V rows of a KV
    group only when every query head of the group is pruned. Weights keep their shapes."""
    for layer, pruned in by_layer(heads, adapter.n_layers).items():
        attn = adapter.attention(layer)
        if max(pruned) >= attn.n_heads:
            raise ValueError(f"layer {layer} has {attn.n_heads} heads, got head {max(pruned)}")
        zero_(attn.site("q"), "q", pruned)
        zero_(attn.site("o"), "o", pruned)
        groups = full_groups(pruned, attn.n_heads, attn.n_kv_heads)
        zero_(attn.site("k"), "k", groups)
        zero_(attn.site("v"), "v", groups)


def plan_layer(n_heads: int, n_kv_heads: int, pruned: list[int]) -> tuple[list, list, str]:
    """New (q_units, kv_units, mode) for one layer after removing ``pruned`` query heads.

    Units are old ids or ``None`` (a zero block: exact, since its O columns are zero).
    - ``mha``: every KV head serves one query head; keep the survivors.
    - GQA with uneven survivors per group cannot keep one shared group size, so either
      ``pad`` each surviving group with zero query heads to the largest group, or
      ``expand`` K/V to one copy per surviving query head (group size 1); the cheaper in
      parameters wins, ties go to ``pad`` (smaller KV cache).
    If every head goes, one zero head stays (modules cannot have zero-width attention).
    """
    g = n_heads // n_kv_heads
    kept = [h for h in range(n_heads) if h not in set(pruned)]
    if not kept:
        return [None], [None], "empty"
    if g == 1:
        return kept, kept, "mha"
    groups = {}
    for h in kept:
        groups.setdefault(h // g, []).append(h)
    g_new = max(len(v) for v in groups.values())
    pad_q = [u for j in sorted(groups) for u in groups[j] + [None] * (g_new - len(groups[j]))]
    pad_kv = sorted(groups)
    exp_q, exp_kv = kept, [h // g for h in kept]
    if 2 * len(pad_q) + 2 * len(pad_kv) <= 2 * len(exp_q) + 2 * len(exp_kv):
        return pad_q, pad_kv, "pad" if None in pad_q else "gqa"
    return exp_q, exp_kv, "expand"


def apply_layer(adapter: Adapter, layer: int, q_units: list, kv_units: list) -> None:
    attn = adapter.attention(layer)
    new = {"q": q_units, "o": q_units, "k": kv_units, "v": kv_units}
    for site in attn.sites:
        reselect_(site, new)
    for module, name, dim in adapter.extra_head_params(layer):
        _reselect_param(module, name, dim, q_units)
    adapter.set_heads(attn.module, len(q_units), len(kv_units))


@torch.no_grad()
def _reselect_param(module: nn.Module, name: str, dim: int, units: list) -> None:
    """Replace parameter ``name`` of ``module`` by its entries ``units`` along ``dim`` (old query
    heads; ``None``: a zero entry, as for the zero head kept when every head goes)."""
    old = getattr(module, name)
    idx = torch.tensor([0 if u is None else u for u in units], dtype=torch.long, device=old.device)
    new = old.index_select(dim, idx).clone()
    zero = [k for k, u in enumerate(units) if u is None]
    if zero:
        new.index_fill_(dim, torch.tensor(zero, dtype=torch.long, device=old.device), 0.0)
    setattr(module, name, nn.Parameter(new, requires_grad=old.requires_grad))


def removal_counts(shape, heads: Iterable[Head]) -> dict[str, int]:
    """What :func:`remove_heads` would do with ``heads``, without touching the model: how many query
    heads it takes out of the matrices and how many GQA padding keeps as zero heads (:func:`plan_layer`).
    ``shape``: an adapter, or ``(heads_per_layer, kv_heads_per_layer)`` (a model card's counts: no model needed)."""
    if isinstance(shape, Adapter):
        shape = ([shape.attention(i).n_heads for i in range(shape.n_layers)],
                 [shape.attention(i).n_kv_heads for i in range(shape.n_layers)])
    n_heads, n_kv = shape
    heads = list(heads)
    removed = kept = 0
    for layer, pruned in by_layer(heads, len(n_heads)).items():
        q, _, _ = plan_layer(n_heads[layer], n_kv[layer], pruned)
        kept += sum(u is None for u in q)
        removed += n_heads[layer] - len(q)
    return {"selected": len(heads), "removed": removed, "kept_as_zeros": kept}


def remove_heads(adapter: Adapter, heads: Iterable[Head]) -> dict[int, dict]:
    """Physically remove heads; returns per changed layer {n_heads, n_kv_heads, mode}."""
    report = {}
    for layer, pruned in by_layer(heads, adapter.n_layers).items():
        attn = adapter.attention(layer)
        q, kv, mode = plan_layer(attn.n_heads, attn.n_kv_heads, pruned)
        apply_layer(adapter, layer, q, kv)
        report[layer] = {"n_heads": len(q), "n_kv_heads": len(kv), "mode": mode}
    return report
