"""Masked-LM pseudo-perplexity (Salazar et al., 2020) for encoders such as BERT/RoBERTa:
each token of a sequence is masked in turn and scored by the model;
PPPL = exp(mean over scored tokens of -log p(token | rest))."""
from __future__ import annotations

import math

import torch
from tqdm.auto import tqdm

from repro.errors import ReproError
from repro.evaluate.stats import ppl_ci


@torch.inference_mode()
def pseudo_perplexity(model: torch.nn.Module, sequences: torch.Tensor, mask_token_id: int,
                      special_ids: set[int] = frozenset(), batch_size: int = 32, progress: bool = True) -> dict:
    """``sequences`` [N, T] of token ids; positions holding ``special_ids`` are not scored."""
    if sequences.ndim != 2 or sequences.numel() == 0:
        raise ReproError("pseudo-perplexity needs a non-empty [N, T] tensor of token ids")
    per_seq = []
    for seq in tqdm(sequences, desc="pseudo-ppl", leave=False, disable=not progress):
        pos = [t for t in range(len(seq)) if int(seq[t]) not in special_ids]
        nll = []
        for s in range(0, len(pos), batch_size):
            chunk = pos[s:s + batch_size]
            batch = seq.repeat(len(chunk), 1)
            batch[torch.arange(len(chunk)), chunk] = mask_token_id
            logp = model(input_ids=batch).logits.float().log_softmax(-1)
            nll.append(-logp[torch.arange(len(chunk)), chunk, seq[chunk]])
        per_seq.append(torch.cat(nll).double().mean().item())
    mean = sum(per_seq) / len(per_seq)
    return {"pppl": math.exp(mean), "ci95": ppl_ci(per_seq), "sequence_nll": per_seq,
            "n_sequences": len(per_seq)}
