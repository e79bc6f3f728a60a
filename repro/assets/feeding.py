"""How each model family expects its input to start: the one rule for cutting token windows.

Gemma models are trained with ``<bos>`` at the start of every sequence and are not meant to run
without it (notebook 1 shows what its dense perplexity is with and without). Llama-like models (SmolLM2, LLaMA, Mistral...) keep the SparseGPT / Wanda
protocol exactly, since their published dense numbers depend on it: windows cut from one token
stream, no BOS. Evaluation windows, calibration windows, the bandit search's mini-batches, timing
inputs and lm-eval requests all follow :func:`bos_token` through :func:`cut`, so they can never
disagree. Which families need ``<bos>`` is their adapters' ``bos_first`` (:mod:`repro.arch`
registers them here); this module keeps the rule for cutting windows given a BOS id.

With a BOS token the rule is: tokenize the joined split once, drop the tokenizer's own leading BOS,
take windows of ``seqlen`` *text* tokens, prepend BOS to each (``seqlen + 1`` positions), and score
all ``seqlen`` text tokens.
"""
from __future__ import annotations

import torch

from repro.errors import ReproError

# model_type (of the text config) -> whether its family requires <bos> first. Which families do is
# their adapters' ``bos_first`` (repro.arch, a layer above, which cannot be imported from here):
# defining an adapter class registers it (register_family), so importing repro.arch fills this.
FAMILY_BOS: dict[str, bool] = {}


def register_family(model_types, bos_first: bool) -> None:
    FAMILY_BOS.update(dict.fromkeys(model_types, bool(bos_first)))


def unregister_family(model_types) -> None:
    for t in model_types:
        FAMILY_BOS.pop(t, None)


def bos_families() -> frozenset[str]:
    """The model_types whose family requires ``<bos>`` first."""
    return frozenset(t for t, bos in FAMILY_BOS.items() if bos)


def needs_bos(config) -> bool:
    """Whether this model's family requires ``<bos>`` first (its adapter's ``bos_first``; False for a
    model_type no adapter claims). Import it from :mod:`repro.arch`, which registers the families;
    asked before any family is registered, it raises rather than guess."""
    if not FAMILY_BOS:
        raise ReproError("no model family registered yet: the <bos> rule comes from repro.arch's adapters "
                         "(import needs_bos / bos_token from repro.arch)")
    text = config.get_text_config() if hasattr(config, "get_text_config") else config
    return FAMILY_BOS.get(getattr(text, "model_type", None), False)


def bos_token(config, tokenizer) -> int | None:
    """The token every window starts with for this model (None: windows are plain text)."""
    if not needs_bos(config):
        return None
    text = config.get_text_config() if hasattr(config, "get_text_config") else config
    bos = getattr(tokenizer, "bos_token_id", None)
    if bos is None:
        bos = getattr(text, "bos_token_id", None)
    if bos is None:
        raise ValueError(f"{text.model_type} needs a BOS token, but neither its tokenizer nor its config has one")
    return int(bos)


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
