"""Temporary masks of heads and MLP channels, applied in the forward pass without touching
weights: one forward pre-hook per layer multiplies the input of the output projection (the
concatenated head outputs, or the MLP's intermediate activations) by a 0/1 feature mask.

Masking head h's o_proj input is exactly MP-G's zeroing of its O columns, and therefore of
the head: its Q rows and (for a full group) K/V rows then no longer reach the output.
Updating a mask is a tensor assignment, so a search can try thousands of masks cheaply.

Two ways to set a mask:

- whole masks: ``m.heads = mask_LH`` / ``m.channels = [mask_C0, ...]`` (every layer rebuilt);
- in place, one unit at a time: ``m.set_head(layer, head, on)``, ``m.set_channels(layer,
  channels, on)`` or ``m.set_unit(kind, layer, index, on, group_size=g)`` write only that
  unit's features of one layer's feature mask (what a sequential search does per candidate).

Both are checked: a mask of the wrong number of layers or units, a value other than 0/1, or a
unit index out of range raises :class:`MaskError`, never a silent no-op.
"""
from __future__ import annotations

import operator

import torch

from repro.arch import Adapter
from repro.errors import ReproError

KINDS = ("head", "mlp")  # unit kinds of set_unit: an attention head, or a group of MLP channels
GROUP_SIZE = 32  # g0: channels per MLP unit (Paper 3's default)


def _whole_masks(key: str, attr: str, modules: str, size: str, what: str, role: str) -> property:
    """``Masks.heads`` / ``Masks.channels``: read the current masks, or replace them all (checked)."""
    def get(self):
        return self._state(key) if key in self._inplace else getattr(self, attr)

    def put(self, masks) -> None:
        self._set_whole(key, masks, modules, size, what, role)
        setattr(self, attr, masks)
    return property(get, put)


class MaskError(ReproError, ValueError):
    """A mask of the wrong shape, a value other than 0/1, or a unit index out of range."""


def _binary(mask, n: int, what: str) -> torch.Tensor:
    """``mask`` as a 1-D float tensor of n zeros and ones (MaskError otherwise)."""
    t = torch.as_tensor(mask)
    if t.shape != (n,):
        raise MaskError(f"{what}: expected a mask of shape ({n},), got {tuple(t.shape)}")
    t = t.detach().to("cpu", torch.float32)
    if not torch.all((t == 0) | (t == 1)):
        raise MaskError(f"{what}: mask values must be 0 or 1, got {sorted(set(t.unique().tolist()))[:5]}")
    return t


def _onoff(on) -> float:
    """1.0 for on (True, 1), 0.0 for off (False, 0); anything else is a MaskError."""
    try:
        v = None if isinstance(on, (str, bytes)) else float(on)
    except (TypeError, ValueError, RuntimeError):
        v = None
    if v not in (0.0, 1.0):
        raise MaskError(f"a unit is on (1/True) or off (0/False), got {on!r}")
    return v


def _index(i, n: int, what: str) -> int:
    """``i`` as an int in [0, n) (numpy integers too; bools and floats are MaskErrors)."""
    try:
        k = None if isinstance(i, bool) else operator.index(i)
    except TypeError:
        k = None
    if k is None or not 0 <= k < n:
        raise MaskError(f"{what} {i!r} out of range [0, {n})")
    return k


class Masks:
    """Context manager: ``with Masks(adapter) as m: m.heads = mask_LH; loss(model)``.

    ``heads``: a [L, H] 0/1 tensor (or a list of per-layer [H_l] tensors), or None.
    ``channels``: a list of per-layer [C_l] 0/1 tensors, or None.
    After an in-place update (``set_head`` and friends) the ``heads`` / ``channels`` getters
    return the current state: a list of per-layer float tensors.
    """

    def __init__(self, adapter: Adapter):
        self.adapter = adapter
        self._attn = [adapter.attention(i) for i in range(adapter.n_layers)]
        self._mlp = [adapter.mlp(i) for i in range(adapter.n_layers)]
        self._feat: dict[tuple[str, int], torch.Tensor | None] = {}
        self._handles = []
        self._heads = self._channels = None
        self._inplace: set[str] = set()  # "h" / "c": changed in place since the last whole-mask set
        self._pos: dict[tuple[str, int], dict] = {}  # block positions of each out site (fixed while masking)

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

    def _check_layers(self, masks, what: str) -> None:
        if len(masks) != len(self._attn):
            raise MaskError(f"{what}: expected masks for {len(self._attn)} layers, got {len(masks)}")

    def _set_whole(self, key: str, masks, modules, size: str, what: str, role: str) -> None:
        """Replace every layer's feature mask of ``key`` ("h" heads, "c" channels) from ``masks``
        (one 0/1 vector of ``module.<size>`` units per layer; None: no mask)."""
        modules = getattr(self, modules)
        if masks is not None:
            self._check_layers(masks, what)
            units = [_binary(masks[i], getattr(mod, size), f"{what} of layer {i}") for i, mod in enumerate(modules)]
        self._inplace.discard(key)
        for i, mod in enumerate(modules):
            self._feat[(key, i)] = None if masks is None else self._expand(mod.out_site, role, units[i])

    heads = _whole_masks("h", "_heads", "_attn", "n_heads", "heads", "o")
    channels = _whole_masks("c", "_channels", "_mlp", "n_channels", "channels", "c")

    # ---- in-place, per unit ------------------------------------------------------------------

    def _layer(self, layer: int) -> int:
        return _index(layer, len(self._attn), "layer")

    def _set(self, key: tuple[str, int], site, role: str, units: list[int], value: float) -> None:
        """Write ``value`` into the features of ``units`` of one layer's feature mask, in place."""
        if key not in self._pos:
            self._pos[key] = site.block_positions()
        feat = self._feat.get(key)
        if feat is None:
            feat = self._feat[key] = torch.ones(site.counts[role] * site.width, device=site.module.weight.device)
        feat[site.index_of_blocks([(role, u) for u in units], self._pos[key]).to(feat.device)] = value
        self._inplace.add(key[0])

    def set_head(self, layer: int, head: int, on) -> None:
        """Switch one head of one layer on (1/True) or off (0/False), in place."""
        layer = self._layer(layer)
        a = self._attn[layer]
        head = _index(head, a.n_heads, f"head of layer {layer}")
        self._set(("h", layer), a.out_site, "o", [head], _onoff(on))

    def set_channels(self, layer: int, channels, on) -> None:
        """Switch MLP ``channels`` (a range, slice or sequence of indices) of one layer on or off."""
        layer = self._layer(layer)
        m = self._mlp[layer]
        if isinstance(channels, slice):
            channels = range(m.n_channels)[channels]
        idx = [_index(c, m.n_channels, f"channel of layer {layer}") for c in channels]
        if not idx:
            raise MaskError(f"no channels given for layer {layer}")
        self._set(("c", layer), m.out_site, "c", idx, _onoff(on))

    def set_unit(self, kind: str, layer: int, index: int, on, group_size: int = 1) -> None:
        """``kind`` "head": head ``index``; "mlp": channel group ``index`` of ``group_size``
        contiguous channels (see :func:`group_range`; the last group may be shorter)."""
        if kind == "head":
            self.set_head(layer, index, on)
        elif kind == "mlp":
            self.set_channels(layer, group_range(self._mlp[self._layer(layer)].n_channels, group_size, index), on)
        else:
            raise MaskError(f"unit kind must be one of {KINDS}, got {kind!r}")

    def _state(self, tag: str) -> list[torch.Tensor] | None:
        """Per-layer unit-level 0/1 masks read back from the feature masks (None: nothing set)."""
        if all(self._feat.get((tag, i)) is None for i in range(len(self._attn))):
            return None
        out = []
        for i in range(len(self._attn)):
            site, role = (self._attn[i].out_site, "o") if tag == "h" else (self._mlp[i].out_site, "c")
            n = site.counts[role]
            feat = self._feat.get((tag, i))
            out.append(torch.ones(n) if feat is None else
                       feat[site.index(role).to(feat.device)].reshape(n, site.width)[:, 0].to("cpu", torch.float32))
        return out


def n_groups(n_channels: int, group_size: int) -> int:
    """Number of contiguous groups of ``group_size`` channels over ``n_channels`` (last may be
    shorter). A group size below 1 or above the channel count is a :class:`MaskError`."""
    if isinstance(group_size, bool) or not isinstance(group_size, int) or not 1 <= group_size <= n_channels:
        raise MaskError(f"MLP group size must be an integer in [1, {n_channels}] (the layer's channels), "
                        f"got {group_size!r}")
    return -(-n_channels // group_size)


def group_range(n_channels: int, group_size: int, group: int) -> range:
    """Channels of group ``group``: ``[group * g, min((group + 1) * g, n_channels))``."""
    group = _index(group, n_groups(n_channels, group_size), f"group ({n_channels} channels in groups of {group_size})")
    return range(group * group_size, min((group + 1) * group_size, n_channels))


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
