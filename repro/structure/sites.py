"""In-place operations on a site's features: zero them, or rebuild the module with a new
selection (physical removal, reordering, zero padding)."""
from __future__ import annotations

import torch
from torch import nn

from repro.arch.base import Site, is_conv1d


@torch.no_grad()
def zero_(site: Site, role: str, units) -> None:
    """Zero the features of ``units`` (and their bias entries on the output side)."""
    units = list(units)
    if not units:
        return
    idx = site.index(role, units).to(site.module.weight.device)
    site.module.weight.index_fill_(site.dim, idx, 0.0)
    bias = getattr(site.module, "bias", None)
    if site.side == "out" and bias is not None:
        bias.index_fill_(0, idx, 0.0)


@torch.no_grad()
def reselect_(site: Site, new_units: dict) -> None:
    """Rebuild the module so the site holds ``new_units[role]`` (old unit ids, ``None`` = a zero
    block) in the site's own layout order. Sizes of the module change accordingly."""
    counts = {r: len(new_units[r]) for r in site.roles}
    positions = site.block_positions()
    blocks, pad = [], []
    for k, (role, i) in enumerate(site.layout(counts)):
        old = new_units[role][i]
        if old is None:  # a zero block: copy any block (the first), zeroed below
            blocks.append(next(iter(positions)))
            pad.append(k)
        else:
            blocks.append((role, old))
    idx = site.index_of_blocks(blocks, positions).to(site.module.weight.device)
    ar = torch.arange(site.width)
    pad = [k * site.width + ar for k in pad]
    m = site.module
    weight = m.weight.index_select(site.dim, idx).clone()
    bias = getattr(m, "bias", None)
    new_bias = bias.index_select(0, idx).clone() if (site.side == "out" and bias is not None) else None
    if pad:
        p = torch.cat(pad).to(weight.device)
        weight.index_fill_(site.dim, p, 0.0)
        if new_bias is not None:
            new_bias.index_fill_(0, p, 0.0)
    m.weight = nn.Parameter(weight, requires_grad=m.weight.requires_grad)
    if new_bias is not None:
        m.bias = nn.Parameter(new_bias, requires_grad=bias.requires_grad)
    n = len(idx)
    if is_conv1d(m):
        if site.side == "out":
            m.nf = n
    elif site.side == "out":
        m.out_features = n
    else:
        m.in_features = n
    site.counts = {**site.counts, **counts}
