"""Perplexity with the SparseGPT / Wanda / GPTQ protocol.

rows joined with "\\n\\n", tokenized once, cut into non-overlapping windows of ``seqlen`` tokens
(the tail that does not fill a window is dropped), each window scored on its own;
``ppl = exp(mean token NLL)``. Every window has ``seqlen - 1`` predicted tokens, so the mean of
per-window mean NLLs is the token mean; per-window NLLs are returned for bootstrap CIs.
"""
from __future__ import annotations

import fcntl
import hashlib
import math
import os
import tempfile
import weakref
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from repro.assets.data import TextData
from repro.assets.devices import input_device
from repro.assets.feeding import prepend, text_tokens
from repro.assets.files import cache_dir
from repro.errors import ReproError
from repro.evaluate.stats import ppl_ci
from repro.progress import tqdm

_TOKEN_CACHE = weakref.WeakKeyDictionary()  # tokenizer -> {data key: ids}


DISK_CACHE_CHARS = 200_000  # texts this long (a training split: WikiText-2 train's 10.8M characters take ~16 s a
# tokenizer, in every worker process) keep their ids on disk too; shorter ones only in memory


def tokenize(tokenizer, data: TextData, sep: str = "\n\n") -> torch.Tensor:
    """All tokens of ``sep.join(rows)`` as one 1-D tensor, memoised per tokenizer *object* and data, and for
    long texts also on disk (:func:`_disk_ids`: keyed by the tokenizer's full definition and the text's sha256).

    Not per tokenizer name: two tokenizers of one name may tokenize differently (the tiny test
    models' byte tokenizers are all called "bytes", and only Gemma's adds a BOS), and a cache keyed
    by the name handed one model the other's tokens, so a record depended on which model a process
    had evaluated first (found as Ray-vs-local record differences, see tests/test_ppl.py)."""
    try:
        cache = _TOKEN_CACHE.setdefault(tokenizer, {})
    except TypeError:  # not weakly referenceable: no memo
        cache = {}
    key = (data.name, data.split, data.sha256, len(data.rows), sep)
    if key not in cache:
        text = sep.join(data.rows)
        cache[key] = _disk_ids(tokenizer, text, lambda: _tokenize_text(tokenizer, text))
    return cache[key]


def _tokenize_text(tokenizer, text: str) -> torch.Tensor:
    import transformers

    verbosity = transformers.logging.get_verbosity()
    transformers.logging.set_verbosity_error()  # "sequence longer than max length" is expected
    try:
        return tokenizer(text, return_tensors="pt")["input_ids"][0]
    finally:
        transformers.logging.set_verbosity(verbosity)


def tokenizer_fingerprint(tokenizer) -> str | None:
    """sha256 of what decides a fast tokenizer's ids: its whole ``tokenizer.json`` definition (normalizer,
    pre-tokenizer, vocabulary and merges, the post-processor that adds BOS/EOS), its class and BOS/EOS flags.
    None for a tokenizer without a ``tokenizers`` backend (no disk cache then)."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None:
        return None
    h = hashlib.sha256(backend.to_str().encode())
    h.update(repr((type(tokenizer).__name__, getattr(tokenizer, "add_bos_token", None),
                   getattr(tokenizer, "add_eos_token", None))).encode())
    return h.hexdigest()


def _disk_ids(tokenizer, text: str, compute) -> torch.Tensor:
    """``compute()``'s ids of ``text``, read from ``$REPRO_CACHE/tokens`` when an earlier process of any run
    stored them for the same tokenizer definition and text. Computed under the file's lock (two workers that
    need the same ids at once: one tokenizes, the other waits and reads), stored atomically (temporary file,
    then rename). Short texts, tokenizers without a fingerprint, and unreadable files fall back to ``compute()``."""
    fp = tokenizer_fingerprint(tokenizer) if len(text) >= DISK_CACHE_CHARS else None
    if fp is None:
        return compute()
    folder = cache_dir("tokens")
    path = folder / f"{fp[:24]}-{hashlib.sha256(text.encode()).hexdigest()[:24]}.npy"
    with open(path.with_suffix(".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            try:
                return torch.from_numpy(np.load(path).astype(np.int64))
            except (OSError, ValueError):
                pass  # absent, or a file that is not a whole array: computed again and rewritten
            ids = compute()
            fd, tmp = tempfile.mkstemp(dir=folder, prefix=path.stem, suffix=".tmp")
            try:
                with os.fdopen(fd, "wb") as f:
                    small = ids.numel() == 0 or int(ids.max()) < 2**31
                    np.save(f, ids.numpy().astype(np.int32 if small else np.int64))
                os.replace(tmp, path)
            except OSError:  # a read-only cache: the ids are still returned
                Path(tmp).unlink(missing_ok=True)
            return ids
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def max_positions(model: torch.nn.Module) -> int | None:
    c = model.config.get_text_config() if hasattr(model.config, "get_text_config") else model.config
    for attr in ("max_position_embeddings", "n_positions"):
        if getattr(c, attr, None):
            return int(getattr(c, attr))
    return None


def windows(ids: torch.Tensor, seqlen: int, max_windows: int | None = None, bos: int | None = None,
            spread: bool = False) -> torch.Tensor:
    """Non-overlapping [n, seqlen] windows from the start; tail dropped. With ``bos`` (the family's
    rule, :mod:`repro.assets.feeding`): windows of ``seqlen`` text tokens with BOS prepended, [n, seqlen + 1].

    ``spread``: the ``max_windows`` windows are taken evenly over *all* of the split's windows (the first
    and the last included, in order) instead of the first ``max_windows``: a sample of the whole split,
    not of its first articles."""
    ids = text_tokens(ids, bos)
    if seqlen < 2:
        raise ReproError(f"seqlen must be at least 2, got {seqlen}")
    n = ids.numel() // seqlen
    if max_windows is not None:
        if max_windows < 1:
            raise ReproError(f"max_windows must be positive, got {max_windows}")
    if n == 0:
        raise ReproError(f"the data has {ids.numel()} tokens, fewer than one window of {seqlen}")
    wins = ids[: n * seqlen].view(n, seqlen)
    if max_windows is not None and max_windows < n:
        pick = np.linspace(0, n - 1, max_windows).round().astype(int) if spread else np.arange(max_windows)
        wins = wins[torch.from_numpy(pick)]
    return prepend(wins, bos)


# Families whose logits are exactly ``lm_head(final hidden state)`` (no scaling or soft-capping after it).
_PLAIN_HEAD = {"llama", "mistral", "qwen2", "qwen3", "gemma3_text", "gemma", "opt", "gpt2", "gpt_neox"}


def _fusable(model: torch.nn.Module) -> bool:
    c = model.config.get_text_config() if hasattr(model.config, "get_text_config") else model.config
    head = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
    return (c.model_type in _PLAIN_HEAD and isinstance(head, torch.nn.Linear)
            and getattr(c, "final_logit_softcapping", None) is None
            and head.weight.device.type != "meta")  # offloaded: accelerate loads it inside forward


@torch.inference_mode()
def window_nll(model: torch.nn.Module, wins: torch.Tensor, batch_size: int = 1, progress: bool = True) -> np.ndarray:
    """Mean next-token NLL (nats) of each window, computed in float32 from the model's logits.

    Where the logits are plainly ``lm_head(h)``, the output layer is applied here in chunks of
    positions fused with the loss (a pre-hook hands the model's own head an empty slice), so the
    [T, vocab] logits tensor is never materialised; the numbers are those of the plain path
    (tested), the eval runs at the speed of a bare forward pass."""
    limit = max_positions(model)
    if limit is not None and wins.shape[1] > limit:
        raise ReproError(f"seqlen {wins.shape[1]} exceeds the model's limit of {limit} positions")
    device = input_device(model)
    head = model.get_output_embeddings() if _fusable(model) else None
    stash = []

    def take_hidden(module, args):
        stash.append(args[0])
        return (args[0][:, :0],)

    handle = head.register_forward_pre_hook(take_hidden) if head is not None else None
    out = []
    try:
        for start in tqdm(range(0, len(wins), batch_size), desc="ppl", unit="batch", disable=not progress,
                          leave=False):
            batch = wins[start:start + batch_size].to(device)
            logits = model(input_ids=batch, use_cache=False).logits
            if head is not None:
                nll = shifted_nll_from_hidden(stash.pop(), head, batch)
            else:
                nll = shifted_nll(logits, batch.to(logits.device))
            out.append(nll.mean(1).cpu().double())
    finally:
        if handle is not None:
            handle.remove()
    return torch.cat(out).numpy()


LOSS_CHUNK_BYTES = 4 << 20  # float32 logits upcast at a time by shifted_nll: cache-sized


def shifted_nll_from_hidden(hidden: torch.Tensor, head: torch.nn.Linear, ids: torch.Tensor,
                            chunk: int = 512) -> torch.Tensor:
    """Per-token NLL [B, T-1] from final hidden states: ``head`` applied ``chunk`` positions at a
    time (large enough for an efficient matmul), the loss upcast in cache-sized pieces.
    Computed on the head's device (a split model may hand over ``hidden`` elsewhere)."""
    hidden, ids = hidden.to(head.weight.device), ids.to(head.weight.device)
    b, t, _ = hidden.shape
    out = torch.empty(b, t - 1, dtype=torch.float32, device=hidden.device)
    for i in range(b):
        for s in range(0, t - 1, chunk):
            e = min(s + chunk, t - 1)
            logits = F.linear(hidden[i, s:e], head.weight, head.bias)
            out[i, s:e] = shifted_nll(logits[None], ids[i:i + 1, s:e + 1])[0]  # logits[j] predicts ids[s+j+1]
    return out


def shifted_nll(logits: torch.Tensor, ids: torch.Tensor, chunk: int | None = None) -> torch.Tensor:
    """Per-token NLL [B, T-1] of ``ids[:, 1:]`` under ``logits[:, :T-1]`` ([B, T, V] or [B, T-1, V]),
    in float32.

    Chunks of ``chunk`` positions are upcast one at a time: the same numbers as one float32
    cross-entropy over the whole [B, T, V] tensor (each position's loss is its own row), and much
    faster on CPU when a chunk stays in cache. The default keeps a float32 chunk within
    :data:`LOSS_CHUNK_BYTES`: 21 positions of SmolLM2's 49k-word vocabulary, 4 of Gemma's 262k
    (a Gemma window of 128 positions: 133 ms with chunks of 128, 19 ms with chunks of 4, one thread,
    bit-identical; ``benchmarks/loss_chunk.py``)."""
    b, n = ids.shape[0], ids.shape[1] - 1
    if chunk is None:
        chunk = max(1, LOSS_CHUNK_BYTES // (4 * logits.shape[-1]))
    out = torch.empty(b, n, dtype=torch.float32, device=logits.device)
    for i in range(b):
        for s in range(0, n, chunk):
            e = min(s + chunk, n)
            out[i, s:e] = F.cross_entropy(logits[i, s:e].float(), ids[i, s + 1:e + 1], reduction="none")
    return out


@dataclass
class PPLResult:
    ppl: float
    ci95: tuple[float, float] | None
    window_nll: list[float]
    seqlen: int
    n_windows: int
    n_tokens: int
    dtype: str

    def as_dict(self) -> dict:
        return {"ppl": self.ppl, "ci95": self.ci95, "window_nll": self.window_nll, "seqlen": self.seqlen,
                "n_windows": self.n_windows, "n_tokens": self.n_tokens, "dtype": self.dtype}


def perplexity(model, tokenizer, data: TextData, seqlen: int = 1024, max_windows: int | None = None,
               batch_size: int = 1, progress: bool = True, bos: int | None = None, spread: bool = False) -> PPLResult:
    """Perplexity of ``model`` on ``data`` (in the model's current dtype); ``bos``: the family's
    window rule (:func:`repro.arch.bos_token`); ``spread``: windows spread over the whole split
    (:func:`windows`). ``n_tokens`` counts text tokens."""
    wins = windows(tokenize(tokenizer, data), seqlen, max_windows, bos, spread)
    nll = window_nll(model, wins, batch_size, progress)
    dtype = str(next(model.parameters()).dtype).replace("torch.", "")
    return PPLResult(float(math.exp(nll.mean())), ppl_ci(nll), nll.tolist(), seqlen, len(wins), len(wins) * seqlen,
                     dtype)
