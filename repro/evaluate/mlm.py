"""Masked-LM pseudo-perplexity (Salazar et al., 2020) for encoders such as BERT/RoBERTa:
each token of a sequence is masked in turn and scored by the model;
PPPL = exp(total over all scored tokens of -log p(token | rest) / number of scored tokens).

Sequences may differ in length; the corpus PPPL weights every scored token equally (not every
sequence), as in Salazar et al.'s corpus-level definition."""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np
import torch

from repro.errors import ReproError
from repro.evaluate.ppl import max_positions
from repro.evaluate.stats import MIN_BOOTSTRAP_UNITS, bootstrap_ci
from repro.progress import tqdm


def wrap(windows: torch.Tensor, cls_id: int, sep_id: int) -> torch.Tensor:
    """[n, T] text windows -> [n, T + 2]: ``<s> window </s>`` (``cls_id`` first, ``sep_id`` last), how an encoder
    such as RoBERTa reads one sequence."""
    n = len(windows)
    return torch.cat([torch.full((n, 1), cls_id, dtype=windows.dtype), windows,
                      torch.full((n, 1), sep_id, dtype=windows.dtype)], dim=1)


def unwrap(ids: torch.Tensor, cls_id: int, sep_id: int) -> torch.Tensor:
    """A tokenized split without the tokenizer's own ``<s>`` first and ``</s>`` last (where it added them)."""
    if ids.numel() and int(ids[0]) == cls_id:
        ids = ids[1:]
    if ids.numel() and int(ids[-1]) == sep_id:
        ids = ids[:-1]
    return ids


def usable_positions(model: torch.nn.Module) -> int | None:
    """How many positions a sequence may hold: ``max_position_embeddings`` minus the padding offset of a family
    whose positions start after the padding index (RoBERTa: 514 - 2 = 512); None where the config says no limit."""
    limit = max_positions(model)
    embeddings = getattr(getattr(model, "base_model", model), "embeddings", None)
    pad = getattr(getattr(embeddings, "position_embeddings", None), "padding_idx", None)
    return None if limit is None else limit - (0 if pad is None else pad + 1)


def _as_sequences(sequences) -> list[torch.Tensor]:
    if isinstance(sequences, torch.Tensor):
        if sequences.ndim != 2 or sequences.numel() == 0:
            raise ReproError("pseudo-perplexity needs a non-empty [N, T] tensor or a list of 1-D token-id tensors")
        return list(sequences)
    seqs = [torch.as_tensor(s) for s in sequences]
    if not seqs:
        raise ReproError("pseudo-perplexity needs at least one sequence")
    for i, s in enumerate(seqs):
        if s.ndim != 1 or s.numel() == 0 or s.is_floating_point() or s.is_complex():
            raise ReproError(f"sequence {i} must be a non-empty 1-D tensor of token ids, got shape "
                             f"{tuple(s.shape)} and dtype {s.dtype}")
    return seqs


@torch.inference_mode()
def pseudo_perplexity(model: torch.nn.Module, sequences: torch.Tensor | Sequence[torch.Tensor], mask_token_id: int,
                      special_ids: set[int] = frozenset(), batch_size: int = 32, progress: bool = True) -> dict:
    """Pseudo-perplexity of ``sequences``: a [N, T] tensor of token ids or a list of 1-D
    tensors of different lengths. Positions holding ``special_ids`` are not scored.

    Returns ``pppl`` = exp(total NLL / total scored tokens), ``ci95`` (bootstrap over
    sequences), ``sequence_nll`` (each sequence's mean NLL per scored token), ``n_tokens``
    (each sequence's number of scored tokens) and ``n_sequences``.
    """
    seqs = _as_sequences(sequences)
    if batch_size < 1:
        raise ReproError(f"batch_size must be positive, got {batch_size}")
    device = next(model.parameters()).device
    totals, counts = [], []
    for i, seq in enumerate(tqdm(seqs, desc="pseudo-ppl", leave=False, disable=not progress)):
        seq = seq.to(device=device, dtype=torch.long)
        pos = [t for t in range(len(seq)) if int(seq[t]) not in special_ids]
        if not pos:
            raise ReproError(f"sequence {i} has no token to score (all are special ids)")
        nll = []
        for s in range(0, len(pos), batch_size):
            chunk = torch.tensor(pos[s:s + batch_size], device=device)
            rows = torch.arange(len(chunk), device=device)
            batch = seq.repeat(len(chunk), 1)
            batch[rows, chunk] = mask_token_id
            logp = model(input_ids=batch).logits.float().log_softmax(-1)
            nll.append(-logp[rows, chunk, seq[chunk]])
        totals.append(torch.cat(nll).double().sum().item())
        counts.append(len(pos))
    total_nll, n_tokens = np.array(totals), np.array(counts)
    ci = None if total_nll.size < MIN_BOOTSTRAP_UNITS else bootstrap_ci(  # whole sequences resampled
        total_nll, weights=n_tokens, transform=lambda v: float(np.exp(v)))
    return {"pppl": math.exp(total_nll.sum() / n_tokens.sum()), "ci95": ci,
            "sequence_nll": (total_nll / n_tokens).tolist(), "n_tokens": counts, "n_sequences": len(seqs)}
