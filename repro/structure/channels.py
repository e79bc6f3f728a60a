"""MLP channels (intermediate features): zero or physically remove them."""
from __future__ import annotations

from typing import Mapping

from repro.arch import Adapter
from repro.structure.sites import reselect_, zero_


def zero_channels(adapter: Adapter, channels: Mapping[int, list[int]]) -> None:
    """Zero the up-side rows and down-side columns of the given channels, per layer."""
    for layer, chans in channels.items():
        for site in adapter.mlp(layer).sites:
            zero_(site, "c", chans)


def keep_channels(adapter: Adapter, layer: int, keep: list) -> None:
    """Rebuild layer's MLP with channels ``keep`` (old ids; ``None`` = a zero channel)."""
    for site in adapter.mlp(layer).sites:
        reselect_(site, {"c": keep})


def remove_channels(adapter: Adapter, channels: Mapping[int, list[int]]) -> dict[int, int]:
    """Physically remove channels; returns the new channel count of each changed layer."""
    out = {}
    for layer, chans in channels.items():
        drop = set(chans)
        keep = [c for c in range(adapter.mlp(layer).n_channels) if c not in drop] or [None]
        keep_channels(adapter, layer, keep)
        out[layer] = len(keep)
    return out
