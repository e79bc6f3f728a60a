"""Paper 1's encoder rows (Table I's RoBERTa): MP-G's head cells on a masked language model, each scored
by its pseudo-perplexity (Salazar et al. 2020, :func:`repro.evaluate.mlm.pseudo_perplexity`).

Evaluation windows hold ``setup.seqlen`` text tokens each, cut from the tokenized split as the causal
windows are (:func:`repro.evaluate.ppl.windows`, ``spread`` alike; the tokenizer's own ``<s>`` / ``</s>``
around the whole split dropped first), each read as ``<s> window </s>`` (the tokenizer's cls and sep ids);
every text token is masked in turn and scored, the two specials never. ``seqlen + 2`` must fit the
model's positions (RoBERTa: 514 less its padding offset 2 = 512). The result has the shape of
:meth:`repro.evaluate.ppl.PPLResult.as_dict` (``window_nll``: each window's mean NLL per scored token), so
tables and paired comparisons read it as they read a perplexity.

Calibration windows (Wanda-, SparseGPT-Head, Hybrid) are cut and wrapped alike. Gradient-Head's loss is the
model's masked-LM loss with 15% of each window's text positions masked (:func:`repro.calib.masked_windows`),
the positions drawn with the calibration draw's seed: every call of one draw masks the same positions, and
the score record's calibration key says so (``mask_rate``). MP, MP-G, Magnitude-Head and Random read no data.

Records: ``heads-mlm`` (dense and pruned cells; their keys' window rule ``<s>+text+</s>`` never matches a
causal record) and ``heads-scores`` (keyed by the model's identity, like every model's).
"""
from __future__ import annotations

import torch

from repro.calib import Calibration, masked_windows, sample_windows
from repro.engines.base import Setup
from repro.engines.heads import HeadExperiment
from repro.errors import ReproError
from repro.evaluate.mlm import pseudo_perplexity, unwrap, usable_positions, wrap
from repro.evaluate.ppl import tokenize
from repro.evaluate.ppl import windows as cut_windows
from repro.methods.heads import get_method
from repro.store import Store

MASK_RATE = 0.15  # Gradient-Head's masked-LM loss: the share of each calibration window's text positions masked
MASKS_PER_PASS = 32  # masked copies of a window per forward pass of the pseudo-perplexity (a key field)
RULE = "<s>+text+</s>"


class MlmHeadExperiment(HeadExperiment):
    """MP-G's cells (scores, dense and pruned pseudo-perplexity) for one masked language model."""

    tasks = ("masked-lm",)
    settings = ("grad_nsamples",)
    records = "heads-mlm"

    def __init__(self, model: str, setup: Setup, store: Store, grad_nsamples: int = 32, progress: bool = True,
                 loaded=None):
        super().__init__(model, setup, store, grad_nsamples, progress, loaded)
        self._check_length("seqlen", setup.seqlen)  # before any work, where the card knows the model's positions

    # -- the model's input contract ----------------------------------------------------------------------
    def card_fields(self, model: torch.nn.Module) -> dict:
        return {"positions": usable_positions(model)}

    def _take(self, loaded) -> None:
        super()._take(loaded)
        self._check_length("seqlen", self.setup.seqlen)

    def _check_length(self, name: str, n: int) -> None:
        """Refuse ``n`` text tokens + ``<s>`` + ``</s>`` beyond the model's positions (from its card)."""
        positions = (self.card or {}).get("positions")
        if positions is not None and n + 2 > positions:
            raise ReproError(f"{name} {n} (notebook 1: mlm_seqlen) + <s> + </s> = {n + 2} positions exceeds "
                             f"{self.name}'s {positions} (max_position_embeddings less its padding offset): "
                             f"at most {positions - 2} text tokens")

    @property
    def specials(self) -> tuple[int, int]:
        """(cls, sep): the ids every window starts and ends with (RoBERTa's ``<s>``, ``</s>``; a tokenizer that
        names no cls / sep token: its bos / eos)."""
        tok = self.loaded.tokenizer
        cls = tok.cls_token_id if tok.cls_token_id is not None else tok.bos_token_id
        sep = tok.sep_token_id if tok.sep_token_id is not None else tok.eos_token_id
        if cls is None or sep is None or tok.mask_token_id is None:
            raise ReproError(f"{self.name}'s tokenizer names no <s> (cls), </s> (sep) or <mask> token")
        return int(cls), int(sep)

    def _ids(self, data) -> torch.Tensor:
        """The tokenized corpus as one stream of text tokens (no <s> / </s> around it)."""
        return unwrap(tokenize(self.loaded.tokenizer, data), *self.specials)

    # -- keys and captions ---------------------------------------------------------------------------
    def feeding(self) -> dict:
        return {"windows": RULE}

    @property
    def feeding_note(self) -> str:
        return ", <s> + text + </s> windows"

    def base_config(self) -> dict:
        return {**super().base_config(), "masks_per_pass": MASKS_PER_PASS}

    def windows(self) -> str:
        """'32 x 128 tokens between <s> and </s>, spread over the split': the evaluation sample, for captions."""
        s = self.setup
        if s.max_windows is None:
            return f"all {s.seqlen}-token windows, each between <s> and </s>"
        return (f"{'' if s.spread else 'first '}{s.max_windows} x {s.seqlen} tokens between <s> and </s>"
                + (", spread over the split" if s.spread else ""))

    # -- windows -------------------------------------------------------------------------------------
    def eval_windows(self) -> torch.Tensor:
        """The evaluation windows, ``<s> window </s>`` each: [n, seqlen + 2]."""
        s = self.setup
        self._check_length("seqlen", s.seqlen)
        return wrap(cut_windows(self._ids(self.data), s.seqlen, s.max_windows, spread=s.spread), *self.specials)

    def calibration_windows(self, nsamples: int, seed: int) -> torch.Tensor:
        """``nsamples`` seeded windows of ``calib_seqlen`` text tokens, ``<s> window </s>`` each."""
        s = self.setup
        self._check_length("calib_seqlen", s.calib_seqlen)
        return wrap(sample_windows(self._ids(self.calib_text), nsamples, s.calib_seqlen, seed), *self.specials)

    def _masked(self, method: str) -> bool:
        return get_method(method).calibration == "gradients"

    def method_source(self, method: str, calib_seed: int | None = None) -> dict | None:
        source = super().method_source(method, calib_seed)
        return {**source, "mask_rate": MASK_RATE} if self._masked(method) else source

    def method_calibration(self, method: str, calib_seed: int | None = None) -> Calibration | None:
        """The calibration windows ``method`` reads; Gradient-Head's with :data:`MASK_RATE` of each window's
        text positions masked, seeded by the draw's seed (one draw: the same positions in every call)."""
        plain = super().method_calibration(method, calib_seed)
        if not self._masked(method):
            return plain
        seed = plain.source["seed"]
        key = (len(plain), seed, "masked")
        if key not in self._calib:
            wins = masked_windows(plain.windows, self.loaded.tokenizer.mask_token_id, set(self.specials), MASK_RATE,
                                  seed)
            self._calib[key] = Calibration(wins, self.method_source(method, calib_seed))
        return self._calib[key]

    # -- evaluation ----------------------------------------------------------------------------------
    def ppl(self, model: torch.nn.Module) -> dict:
        """Pseudo-perplexity of ``model`` (as it is: masked) on the evaluation windows, in the shape of a
        perplexity result (``ppl``, ``ci95``, ``window_nll``, ``seqlen``, ``n_windows``, ``n_tokens``, ``dtype``)."""
        out = pseudo_perplexity(model, self.eval_windows(), self.loaded.tokenizer.mask_token_id, set(self.specials),
                                MASKS_PER_PASS, self.progress)
        return {"ppl": out["pppl"], "ci95": out["ci95"], "window_nll": out["sequence_nll"], "seqlen": self.setup.seqlen,
                "n_windows": out["n_sequences"], "n_tokens": int(sum(out["n_tokens"])),
                "dtype": str(next(model.parameters()).dtype).replace("torch.", "")}

    def anatomy(self, *args, **kwargs):
        raise ReproError("anatomy cells are for causal language models")

    def zeroshot_cell(self, *args, **kwargs):
        raise ReproError("zero-shot cells are for causal language models")

    def efficiency(self, *args, **kwargs):
        raise ReproError("efficiency cells are for causal language models")
