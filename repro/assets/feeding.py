"""How each model family expects its input to start: the one rule for cutting token windows.

Gemma models are trained with ``<bos>`` at the start of every sequence and are not meant to run
without it (notebook 1 shows what its dense perplexity is with and without). Llama-like models (SmolLM2, LLaMA, Mistral...) keep the SparseGPT / Wanda
protocol exactly, since their published dense numbers depend on it: windows cut from one token
stream, no BOS. Evaluation windows, calibration windows, the bandit search's mini-batches, timing
inputs and lm-eval requests all take their BOS id from :func:`repro.arch.bos_token` (None: plain text), so they
can never disagree. Which families need ``<bos>`` is their adapters' ``bos_first``, read off :mod:`repro.arch`'s
registry; this module keeps the rule for cutting windows given a BOS id.

With a BOS token the rule is: tokenize the joined split once, drop the tokenizer's own leading BOS,
take windows of ``seqlen`` *text* tokens, prepend BOS to each (``seqlen + 1`` positions), and score
all ``seqlen`` text tokens.
"""
from __future__ import annotations

import torch


def rule(bos: int | None) -> str:
    """The rule's name, for record keys and captions."""
    return "plain" if bos is None else "bos+text"


def text_tokens(ids: torch.Tensor, bos: int | None) -> torch.Tensor:
    """The tokenized split without the tokenizer's own leading BOS (unchanged without a BOS rule)."""
    if bos is not None and ids.numel() and int(ids[0]) == bos:
        return ids[1:]
    return ids


def prepend(windows: torch.Tensor, bos: int | None) -> torch.Tensor:
    """[n, T] text windows -> [n, T + 1] with BOS first (unchanged without a BOS rule)."""
    if bos is None:
        return windows
    return torch.cat([torch.full((len(windows), 1), bos, dtype=windows.dtype), windows], dim=1)
