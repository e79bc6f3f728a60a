"""Layer 3: calibration data and what pruning methods capture from it.

- :func:`sample_windows`: seeded random windows (nsamples x seqlen) from a tokenized corpus,
  as Wanda and SparseGPT draw them.
- :func:`input_sumsq`: per-input-feature sum of squares of the inputs of chosen modules, which
  gives both Wanda's ``||X_j||_2 = sqrt(sum_t x_tj^2)`` and the diagonal of SparseGPT's input
  Hessian ``H_jj = (2/n) sum_t x_tj^2`` (the accumulation itself, shared with the block-sequential
  observers and the bandit's scorer, is :mod:`repro.calib.stats`).
- :func:`loss_gradients`: language-model loss gradients accumulated on every parameter.

Calibration "windows" are token ids ``[N, T]`` for a language model, labelled images for an image
classifier: a mapping ``{"pixel_values": [N, C, H, W], "labels": [N]}`` (:func:`image_windows`),
labelled, padded texts for a text classifier: ``{"input_ids": [N, T], "attention_mask": [N, T],
"labels": [N]}`` (:func:`text_windows`; padding positions are left out of every input statistic), or
masked token windows for a masked LM's loss: ``{"input_ids": [N, T], "labels": [N, T]}``
(:func:`masked_windows`: labels per *position*, -100 where nothing is masked).
All go through the same capture and gradient code; only the forward call and the loss differ
(next-token NLL; cross-entropy against the labels; the model's own masked-LM loss).
"""
from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from contextlib import contextmanager

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from repro.assets.devices import input_device
from repro.assets.feeding import prepend, text_tokens
from repro.calib.stats import InputStats, record_input_sumsq
from repro.errors import ReproError
from repro.progress import tqdm


def sample_windows(ids: torch.Tensor, nsamples: int, seqlen: int, seed: int = 0, bos: int | None = None) -> torch.Tensor:
    """``nsamples`` windows of ``seqlen`` tokens starting at seeded random offsets; with ``bos`` (the
    family's rule, :mod:`repro.assets.feeding`) of ``seqlen`` text tokens with BOS prepended."""
    ids = text_tokens(ids, bos)
    if nsamples < 1:
        raise ReproError(f"the calibration set is empty (nsamples={nsamples})")
    if ids.numel() <= seqlen:
        raise ReproError(f"calibration text has {ids.numel()} tokens, not more than seqlen={seqlen}")
    starts = window_starts(ids.numel(), nsamples, seqlen, seed)
    return prepend(torch.stack([ids[s:s + seqlen] for s in starts.tolist()]), bos)


def window_starts(n_tokens: int, nsamples: int, seqlen: int, seed: int = 0) -> np.ndarray:
    """The seeded offsets of :func:`sample_windows`' windows in a text of ``n_tokens`` tokens."""
    return np.random.default_rng(seed).integers(0, n_tokens - seqlen, size=nsamples)


def window_coverage(n_tokens: int, nsamples: int, seqlen: int, seed: int = 0) -> dict:
    """How much of a text of ``n_tokens`` the windows of :func:`sample_windows` cover: the text's tokens, the tokens
    the windows hold (``nsamples x seqlen``) and how many distinct text positions they cover (fewer where windows
    overlap, as they must where the text is shorter than the windows together)."""
    covered = np.zeros(n_tokens, dtype=bool)
    for s in window_starts(n_tokens, nsamples, seqlen, seed).tolist():
        covered[s:s + seqlen] = True
    return {"text": int(n_tokens), "drawn": int(nsamples * seqlen), "distinct": int(covered.sum())}


def load_windows(path, vocab_size: int | None = None, max_positions: int | None = None) -> torch.Tensor:
    """Calibration windows saved as a ``.npy`` array of token ids ``[nsamples, seqlen]`` (integer
    dtype), so that masks can be compared with other implementations on identical inputs."""
    try:
        arr = np.load(path, allow_pickle=False)
    except (OSError, ValueError) as e:
        raise ReproError(f"calibration file {path}: not a readable .npy array ({e})") from None
    if arr.ndim != 2 or 0 in arr.shape:
        raise ReproError(f"calibration file {path}: expected shape [nsamples, seqlen], got {list(arr.shape)}")
    if not np.issubdtype(arr.dtype, np.integer):
        raise ReproError(f"calibration file {path}: expected integer token ids, got dtype {arr.dtype}")
    if arr.min() < 0 or (vocab_size is not None and arr.max() >= vocab_size):
        raise ReproError(f"calibration file {path}: token ids must lie in [0, {vocab_size}), "
                         f"got [{arr.min()}, {arr.max()}]")
    if max_positions is not None and arr.shape[1] > max_positions:
        raise ReproError(f"calibration file {path}: seqlen {arr.shape[1]} exceeds the model's limit of "
                         f"{max_positions} positions")
    return torch.from_numpy(arr.astype(np.int64))


def image_windows(pixel_values: torch.Tensor, labels: torch.Tensor) -> dict:
    """Labelled calibration images as calibration windows (see the module docstring)."""
    if len(pixel_values) != len(labels):
        raise ReproError(f"need as many labels as images, got {len(pixel_values)} images, {len(labels)} labels")
    return {"pixel_values": pixel_values, "labels": labels}


def text_windows(input_ids: torch.Tensor, attention_mask: torch.Tensor, labels: torch.Tensor) -> dict:
    """Labelled texts, padded to one length, as calibration windows (see the module docstring)."""
    if not (len(input_ids) == len(attention_mask) == len(labels)) or input_ids.shape != attention_mask.shape:
        raise ReproError(f"need one attention-mask row and one label per text, got ids {tuple(input_ids.shape)}, "
                         f"mask {tuple(attention_mask.shape)}, {len(labels)} labels")
    return {"input_ids": input_ids, "attention_mask": attention_mask, "labels": labels}


def masked_windows(windows: torch.Tensor, mask_token_id: int, special_ids=frozenset(), rate: float = 0.15,
                   seed: int = 0) -> dict:
    """Token windows ``[N, T]`` with ``round(rate x`` the window's scorable positions``)`` of them (at least
    one; positions holding ``special_ids``, e.g. ``<s>`` and ``</s>``, never) replaced by ``mask_token_id``,
    as calibration windows of the masked-LM loss (see the module docstring): ``labels`` holds the original
    token at each masked position and -100 elsewhere. The positions are drawn by a generator seeded with
    ``seed`` alone, so one seed (one calibration draw) always masks the same positions of the same windows.
    Every chosen position gets the mask token (no BERT 80/10/10 split)."""
    if not 0 < rate < 1:
        raise ReproError(f"the masking rate must lie in (0, 1), got {rate}")
    rng = np.random.default_rng(seed)
    ids, labels = windows.clone(), torch.full_like(windows, -100)
    for i, row in enumerate(windows):
        free = [t for t in range(len(row)) if int(row[t]) not in special_ids]
        if not free:
            raise ReproError(f"calibration window {i} has no token to mask (all are special ids)")
        pick = torch.from_numpy(np.sort(rng.choice(free, max(1, round(rate * len(free))), replace=False)))
        labels[i, pick], ids[i, pick] = row[pick], mask_token_id
    return {"input_ids": ids, "labels": labels}


def n_windows(windows) -> int:
    """How many windows (token-id rows, or labelled images) ``windows`` holds."""
    if isinstance(windows, Mapping):
        return len(windows["labels"])
    return 0 if windows is None or windows.numel() == 0 else len(windows)


def _batches(windows, batch_size: int):
    n = n_windows(windows)
    if n == 0:
        raise ReproError("the calibration set is empty")
    for s in range(0, n, batch_size):
        yield ({k: v[s:s + batch_size] for k, v in windows.items()} if isinstance(windows, Mapping)
               else windows[s:s + batch_size])


def _forward(model: nn.Module, batch, device):
    """The model's output on one batch: logits of token ids, of images (in the model's dtype), or of
    labelled texts (with their attention mask)."""
    if isinstance(batch, Mapping) and "pixel_values" in batch:
        return model(pixel_values=batch["pixel_values"].to(device, next(model.parameters()).dtype))
    if isinstance(batch, Mapping):
        mask = batch.get("attention_mask")
        return model(input_ids=batch["input_ids"].to(device), **({} if mask is None else {"attention_mask": mask.to(device)}))
    return model(input_ids=batch.to(device), use_cache=False)


@torch.inference_mode()
def input_sumsq(model: nn.Module, modules: list[nn.Module], windows, batch_size: int = 4,
                progress: bool = True) -> dict[nn.Module, InputStats]:
    """Run the calibration windows through the model and collect input statistics of ``modules``
    (float64 sums, :func:`~repro.calib.stats.record_input_sumsq`)."""
    device = input_device(model)
    positions: dict = {}  # the batch's real-token mask, where it has padding: pads are no calibration data
    with record_input_sumsq(modules, positions=positions) as stats:
        for batch in tqdm(list(_batches(windows, batch_size)), desc="calibrate", leave=False, disable=not progress):
            positions["mask"] = batch.get("attention_mask") if isinstance(batch, Mapping) else None
            _forward(model, batch, device)
    return stats


class Calibration:
    """Calibration windows plus a memo of what has been captured from them, so several methods
    (Wanda-Head, SparseGPT-Head, Hybrid) share one pass over the data."""

    def __init__(self, windows, source: dict | None = None):
        if windows is None or n_windows(windows) == 0:
            raise ReproError("the calibration set is empty")
        self.windows = windows
        self.source = source or {}
        self._stats: dict = {}
        self.capture_seconds = 0.0  # wall time of the last real capture (not of memo hits)

    def __len__(self) -> int:
        return n_windows(self.windows)

    def input_stats(self, model: nn.Module, modules: list[nn.Module]) -> dict[nn.Module, InputStats]:
        key = (id(model), tuple(id(m) for m in modules))
        if key not in self._stats:
            t0 = time.perf_counter()
            self._stats = {key: input_sumsq(model, modules, self.windows)}  # keep one model's stats
            self.capture_seconds = time.perf_counter() - t0
        return self._stats[key]

    def has_stats(self, model: nn.Module) -> bool:
        return any(k[0] == id(model) for k in self._stats)


def as_calibration(calib) -> Calibration:
    if isinstance(calib, Calibration):
        return calib
    if calib is None:
        raise ReproError("this method needs calibration windows (calib=...)")
    return Calibration(calib if isinstance(calib, Mapping) else torch.as_tensor(calib))


@contextmanager
def gradients_only_for(model: nn.Module, params: Iterable[nn.Parameter]):
    """Inside the block, backward computes the weight gradients of ``params`` only: every other
    parameter of ``model`` is frozen (``requires_grad`` restored on exit). The gradients it does
    compute are the same bits (each weight's gradient is its own product of the same activation
    gradients), and backward skips what nobody reads: e.g. the tied output embedding's gradient,
    a full [vocabulary x hidden] product per batch (262k words on Gemma-3)."""
    keep = {id(p) for p in params}
    frozen = [p for p in model.parameters() if p.requires_grad and id(p) not in keep]
    for p in frozen:
        p.requires_grad_(False)
    try:
        yield
    finally:
        for p in frozen:
            p.requires_grad_(True)


def loss_gradients(model: nn.Module, windows, batch_size: int = 1, progress: bool = True,
                   only: Iterable[nn.Parameter] | None = None) -> None:
    """Accumulate d(mean loss over windows)/d(weights) into ``param.grad`` (zeroed first): the LM
    loss of token windows, the masked-LM loss of masked windows (:func:`masked_windows`), or the mean
    cross-entropy of labelled images or texts against their labels (each window weighs the same).
    ``only``: the parameters whose gradients are wanted (:func:`gradients_only_for`); default all."""
    model.zero_grad(set_to_none=True)
    device = input_device(model)
    n = n_windows(windows)
    with torch.enable_grad(), gradients_only_for(model, model.parameters() if only is None else only):
        for batch in tqdm(list(_batches(windows, batch_size)), desc="gradients", leave=False, disable=not progress):
            (_loss(model, batch, device) * (n_windows(batch) / n)).backward()


def _loss(model: nn.Module, batch, device) -> torch.Tensor:
    """One batch's mean loss, by the windows' form (module docstring): labels per position (a masked LM's
    masked windows) give the model's own loss over the masked positions; labels per window, the
    cross-entropy of the logits against them; bare token ids, the next-token loss."""
    if isinstance(batch, Mapping) and batch["labels"].ndim == 2:
        return model(input_ids=batch["input_ids"].to(device), labels=batch["labels"].to(device)).loss
    if isinstance(batch, Mapping):
        return F.cross_entropy(_forward(model, batch, device).logits.float(), batch["labels"].to(device))
    batch = batch.to(device)
    return model(input_ids=batch, labels=batch, use_cache=False).loss
