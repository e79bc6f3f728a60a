"""Temporary masks of heads and MLP channels, applied in the forward pass without touching
weights: one forward pre-hook per layer multiplies the input of the output projection (the
concatenated head outputs, or the MLP's intermediate activations) by a 0/1 feature mask.

Masking head h's o_proj input is exactly MP-G's zeroing of its O columns, and therefore of
the head: its Q rows and (for a full group) K/V rows then no longer reach the output.
Updating a mask is a tensor assignment, so a search can try thousands of masks cheaply.
"""
from __future__ import annotations

import torch

from repro.arch import Adapter


class Masks:
    """Context manager: ``with Masks(adapter) as m: m.heads = mask_LH; loss(model)``.

    ``heads``: a [L, H] 0/1 tensor (or a list of per-layer [H_l] tensors), or None.
    ``channels``: a list of per-layer [C_l] 0/1 tensors, or None.
    """

    def __init__(self, adapter: Adapter):
        self.adapter = adapter
        self._attn = [adapter.attention(i) for i in range(adapter.n_layers)]
        self._mlp = [adapter.mlp(i) for i in range(adapter.n_layers)]
        self._feat: dict[tuple[str, int], torch.Tensor | None] = {}
        self._handles = []
        self._heads = self._channels = None

    def __enter__(self) -> "Masks":
        for i, (a, m) in enumerate(zip(self._attn, self._mlp)):
            self._handles.append(a.out_site.module.register_forward_pre_hook(self._hook(("h", i))))
            self._handles.append(m.out_site.module.register_forward_pre_hook(self._hook(("c", i))))
        return self

    def __exit__(self, *exc) -> None:
        for h in self._handles:
            h.remove()
        self._handles.clear()

    def _hook(self, key):
        def hook(module, args):
            m = self._feat.get(key)
            if m is None:
                return None
            return (args[0] * m.to(args[0].dtype),) + tuple(args[1:])
        return hook

    @staticmethod
    def _expand(site, role: str, mask: torch.Tensor) -> torch.Tensor:
        n = site.counts[role] * site.width
        feat = torch.ones(n, device=site.module.weight.device)
        off = (torch.as_tensor(mask) == 0).nonzero().flatten().tolist()
        if off:
            feat[site.index(role, off).to(feat.device)] = 0.0
        return feat

    @property
    def heads(self):
        return self._heads

    @heads.setter
    def heads(self, mask) -> None:
        self._heads = mask
        for i, a in enumerate(self._attn):
            self._feat[("h", i)] = None if mask is None else self._expand(a.out_site, "o", mask[i])

    @property
    def channels(self):
        return self._channels

    @channels.setter
    def channels(self, masks) -> None:
        self._channels = masks
        for i, m in enumerate(self._mlp):
            self._feat[("c", i)] = None if masks is None else self._expand(m.out_site, "c", masks[i])


def group_mask(n_channels: int, group_size: int, off_groups) -> torch.Tensor:
    """0/1 mask over ``n_channels`` MLP channels with the contiguous groups ``off_groups`` off
    (the last group may be shorter). The bandit search's arms are such groups."""
    if group_size < 1:
        raise ValueError(f"group_size must be positive, got {group_size}")
    mask = torch.ones(n_channels)
    for g in off_groups:
        if not 0 <= g * group_size < n_channels:
            raise ValueError(f"group {g} out of range for {n_channels} channels in groups of {group_size}")
        mask[g * group_size:(g + 1) * group_size] = 0
    return mask
