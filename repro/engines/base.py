"""The generic half of every paper's experiment: one model under one evaluation/calibration
protocol, its identity, calibration windows, an evaluation copy, and cells cached in a store.

A paper's experiment class (``HeadExperiment`` for MP-G; OGAS and the bandit search likewise)
extends :class:`Experiment` with its own cells; the CLI builds the same objects, so a headless
run draws calibration windows and evaluates exactly as the notebooks do.
"""
from __future__ import annotations

import copy
import warnings
from dataclasses import asdict, dataclass, fields

import torch

from repro.arch import adapter as get_adapter
from repro.arch import bos_token
from repro.assets import load_model, load_text, parse_dtype, resolve_dtype
from repro.assets.feeding import rule
from repro.calib import Calibration, sample_windows, text_tokens, window_coverage
from repro.errors import ReproError
from repro.evaluate.ppl import max_positions, perplexity, tokenize
from repro.store import PROTOCOL, Store, config_key
from repro.structure.sparsity import prunable_linears


@dataclass(frozen=True)
class Setup:
    """Evaluation and calibration protocol shared by every cell of a run (papermill parameters)."""
    data: str = "wikitext2:validation"
    seqlen: int = 1024
    max_windows: int | None = 32
    spread: bool = False  # the max_windows windows spread evenly over the whole split, not its first ones
    reference_seqlen: int | None = None  # an earlier, shorter window length: the dense number also read with it
    batch_size: int = 1
    eval_dtype: str = "auto"  # bfloat16 where it is fast (GPU, AVX512-BF16/AMX CPUs), else float32
    calib_data: str = "wikitext2-train"
    calib_nsamples: int = 64
    calib_seqlen: int = 512
    calib_seed: int = 0
    device: str | None = None

    def __post_init__(self):
        for name in ("seqlen", "batch_size", "calib_nsamples", "calib_seqlen"):
            if not isinstance(getattr(self, name), int) or getattr(self, name) < 1:
                raise ReproError(f"{name} must be a positive integer, got {getattr(self, name)!r}")
        if self.max_windows is not None and (not isinstance(self.max_windows, int) or self.max_windows < 1):
            raise ReproError(f"max_windows must be a positive integer or None, got {self.max_windows!r}")
        # "auto" is resolved here, so keys and captions name the dtype that really ran
        object.__setattr__(self, "eval_dtype", resolve_dtype(self.eval_dtype, self.device))

    @classmethod
    def keys(cls) -> set[str]:
        return {f.name for f in fields(cls)}

    def replace(self, **changes) -> "Setup":
        check_keys(changes, self.keys(), "setup")
        return type(self)(**{**{f.name: getattr(self, f.name) for f in fields(self)}, **changes})


def check_keys(given: dict, allowed, what: str) -> dict:
    """Unknown keys are an error, never silently ignored (a typo would otherwise run defaults)."""
    unknown = sorted(set(given) - set(allowed))
    if unknown:
        raise ReproError(f"unknown {what} key(s) {', '.join(map(repr, unknown))}; known: {', '.join(sorted(allowed))}")
    return given


def model_key(identity: dict) -> dict:
    """What identifies a model's weights in a result key (name, source, quantisation, weights
    hash or hub revision, seed of a random init)."""
    return {k: identity.get(k) for k in ("name", "source", "quantisation", "weights_sha256", "revision", "seed")
            if identity.get(k) is not None}


_UNKNOWN = object()


def structure(model: torch.nn.Module) -> dict:
    """What captions, unit counts and figure choices need of a model's shape: layers, query and K/V
    heads and MLP channels per layer, the prunable linears' names (block 0 first), and a language model's
    vocabulary (the rows of its output layer: a uniform guess over them has that perplexity; None for a
    classifier)."""
    adapter = get_adapter(model)
    head = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
    return {"n_layers": adapter.n_layers, "heads_per_layer": list(adapter.heads_per_layer()),
            "kv_heads_per_layer": [adapter.attention(i).n_kv_heads for i in range(adapter.n_layers)],
            "mlp_channels_per_layer": [adapter.mlp(i).n_channels for i in range(adapter.n_layers)],
            "linears": list(prunable_linears(model)),
            "vocab_size": int(head.weight.shape[0]) if head is not None else None}


class Experiment:
    """One model under one :class:`Setup`, cells cached in ``store``.

    The model is loaded when a cell first needs it, not before: what keys and captions need (its
    identity, window rule, layer and head counts) comes from the *model card* the store keeps of
    the last load (:meth:`repro.store.Store.model_card`), so a notebook whose records all exist
    renders without loading, training or converting a model. A load writes the card; if the
    weights loaded differ from the card's, a warning says so, and the cells of the new weights
    (new keys) are computed."""

    # the tasks this class evaluates (a model of another task is refused in one line): a masked LM has no
    # next-token loss, its perplexity is a pseudo-perplexity (repro.engines.mlm.MlmHeadExperiment)
    tasks: tuple[str, ...] = ("causal-lm", "image-classification", "image-features")

    def __init__(self, model: str, setup: Setup, store: Store, progress: bool = True, loaded=None):
        """``loaded``: an already loaded :class:`repro.assets.Loaded` of ``model``, or another
        experiment on ``model`` whose model to share when either loads it (two experiments on one
        model under different setups need one copy of its weights)."""
        self.setup, self.store, self.progress = setup, store, progress
        self.model_name = str(model)
        self._loaded = self._adapter = None
        self._bos = _UNKNOWN
        self._share = loaded if isinstance(loaded, Experiment) else None
        self.card = store.model_card(self.model_name) if self._share is None else self._share.card
        if loaded is not None and self._share is None:
            self._take(loaded)
        elif self.card is None and store.dry is not None:
            self.card = store.dry.card(self.model_name)  # a dry run loads nothing: a stand-in, never saved
        elif self.card is None:
            self.loaded  # noqa: B018 - nothing recorded about this model yet: load it now (and record it)
        if self.card is not None and self.card.get("task") is not None:  # known from the card: refused before a load
            self._check_task(self.card["task"], self.card["identity"].get("model_type", "?"))
        self._data = self._calib_text = None
        self._eval = None
        self._calib: dict[tuple[int, int], Calibration] = {}  # (nsamples, seed) -> windows

    # -- the model, loaded on first use ------------------------------------------------------------
    @property
    def loaded(self):
        if self._loaded is None:
            self._take(self._share.loaded if self._share is not None else
                       load_model(self.model_name, "float32", device=self.setup.device))
        return self._loaded

    def _check_task(self, task: str, what: str) -> None:
        """Refuse, in one line, a model of a task this class does not evaluate (:attr:`tasks`)."""
        if task in self.tasks:
            return
        if task == "masked-lm":
            raise ReproError(f"{self.model_name} is a masked language model ({what}), not a causal language model: "
                             "its perplexity is a pseudo-perplexity (notebook 1's mlm_models, "
                             "repro.engines.mlm.MlmHeadExperiment)")
        raise ReproError(f"{self.model_name} is a {task} model ({what}); {type(self).__name__} evaluates "
                         f"{' or '.join(self.tasks)} models")

    def _take(self, loaded) -> None:
        self._check_task(loaded.task, type(loaded.model).__name__)
        if self.card is not None and model_key(self.card["identity"]) != model_key(loaded.identity):
            warnings.warn(f"{self.model_name}: the weights loaded here ({model_key(loaded.identity)}) differ from "
                          f"those its records were made with ({model_key(self.card['identity'])}); their cells are "
                          "computed again under the new weights", stacklevel=3)
        self._loaded = loaded
        self._adapter = get_adapter(loaded.model)
        bos = bos_token(loaded.model.config, loaded.tokenizer)
        if self._bos is _UNKNOWN:
            self._bos = bos
        self.card = {"name": self.model_name, "identity": loaded.identity, "task": loaded.task, "bos": bos,
                     "structure": structure(loaded.model), **self.card_fields(loaded.model)}
        self.store.save_model_card(self.model_name, self.card)

    def card_fields(self, model: torch.nn.Module) -> dict:
        """What this class keeps in the model card beyond :func:`structure` (none here)."""
        return {}

    @property
    def model(self) -> torch.nn.Module:
        return self.loaded.model

    @property
    def adapter(self):
        self.loaded  # noqa: B018
        return self._adapter

    @property
    def identity(self) -> dict:
        """The weights' identity (name, source, quantisation, sha256...): of the loaded model, else the card's."""
        return self._loaded.identity if self._loaded is not None else self.card["identity"]

    @property
    def task(self) -> str:
        return self._loaded.task if self._loaded is not None else self.card["task"]

    @property
    def structure(self) -> dict:
        """:func:`structure` of the model (the card's until the model is loaded)."""
        return self.card["structure"]

    @property
    def uniform_ppl(self) -> float | None:
        """The perplexity of a uniform guess over the vocabulary (its size): a model at or above it has
        lost everything it knew (None where the card does not say, or for a classifier)."""
        return self.structure.get("vocab_size")

    @property
    def bos(self) -> int | None:
        """How this family's windows start (repro.assets.feeding): the BOS id for Gemma, None (plain text) otherwise."""
        return self.card["bos"] if self._bos is _UNKNOWN else self._bos

    @property
    def name(self) -> str:
        return self.identity["name"]

    @property
    def address(self) -> str:
        """This experiment among a notebook's: its class, model, setup and window rule (a planned
        :class:`repro.engines.plan.Job` names it; a worker finds its own copy by it)."""
        return f"{type(self).__name__}:{self.name}:{config_key(asdict(self.setup))}:{rule(self.bos)}"

    @property
    def data(self):
        """The evaluation corpus (loaded and hash-checked on first use)."""
        if self._data is None:
            self._data = self._text(self.setup.data)
        return self._data

    @property
    def calib_text(self):
        """The calibration corpus (loaded and hash-checked once: keys name it often)."""
        if self._calib_text is None:
            self._calib_text = self._text(self.setup.calib_data)
        return self._calib_text

    def _text(self, spec: str):
        """``load_text(spec)``; in a dry run, a stand-in where the corpus cannot be read here."""
        return load_text(spec) if self.store.dry is None else self.store.dry.text(spec)

    def base_config(self) -> dict:
        """Everything an evaluated cell's number depends on, besides the method."""
        s = self.setup
        return {"protocol": PROTOCOL, "model": model_key(self.identity),
                "data": {k: self.data.identity[k] for k in ("name", "split", "sha256", "note")},
                "seqlen": s.seqlen, "max_windows": s.max_windows, "batch_size": s.batch_size, "dtype": s.eval_dtype,
                **({"spread": True} if s.spread and s.max_windows is not None else {}), **self.feeding()}

    def feeding(self) -> dict:
        """The window rule as a key field: ``{"windows": "bos+text"}`` for families that need BOS,
        ``{"windows": "plain"}`` otherwise."""
        return {"windows": rule(self.bos)}

    @property
    def feeding_note(self) -> str:
        """What a caption says of the window rule: nothing for plain windows."""
        return "" if self.bos is None else ", <bos> + text windows"

    def windows(self) -> str:
        """'first 8 x 256 tokens' or '32 x 1024 tokens spread over the split' (and the rule where it is not
        plain): the evaluation sample, for captions."""
        s = self.setup
        if s.max_windows is None:
            return f"all {s.seqlen}-token windows{self.feeding_note}"
        where = " spread over the split" if s.spread else ""
        return f"{'' if s.spread else 'first '}{s.max_windows} x {s.seqlen} tokens{where}{self.feeding_note}"

    def without_bos(self) -> "Experiment":
        """This experiment with plain windows (no BOS): what the model sees when it is fed outside its
        input contract, for the one comparison that shows why the rule matters. Shares the loaded
        model and the evaluation copy."""
        other = copy.copy(self)
        other._bos, other._calib = None, {}
        return other

    def full_split(self) -> "Experiment":
        """This experiment evaluated on every window of the split (``max_windows=None``): the dense number
        over the whole split beside a table's sample of it. Shares the model and the evaluation copy."""
        other = copy.copy(self)
        other.setup = self.setup.replace(max_windows=None, spread=False)
        return other

    def short_windows(self, spread: bool) -> "Experiment":
        """This experiment on ``max_windows`` windows of ``setup.reference_seqlen`` tokens, the split's first ones
        or spread over it: with :meth:`full_split`, the dense numbers that reconcile a table's sample with an
        earlier sample of shorter windows (context length and which articles, apart). Shares the model."""
        if not self.setup.reference_seqlen:
            raise ReproError("short_windows needs setup.reference_seqlen (the shorter window length)")
        other = copy.copy(self)
        other.setup = self.setup.replace(seqlen=self.setup.reference_seqlen, spread=spread, reference_seqlen=None)
        return other

    def variants(self) -> list["Experiment"]:
        """The derived experiments a notebook may ask cells of (:meth:`without_bos`, :meth:`full_split`,
        :meth:`short_windows`): a ``repro run`` worker finds each by its address."""
        out = [self.without_bos()] if self.bos is not None else []
        if self.setup.reference_seqlen:
            out += [self.short_windows(False), self.short_windows(True)]
        return out + ([self.full_split()] if self.setup.spread and self.setup.max_windows is not None else [])

    def calibration(self, nsamples: int | None = None, seed: int | None = None) -> Calibration:
        """Seeded ``nsamples x calib_seqlen`` windows of the calibration corpus (default
        ``setup.calib_nsamples``; ``seed``: another draw than ``setup.calib_seed``'s), drawn once per size
        and seed; ``source`` identifies them in keys."""
        s = self.setup
        n = s.calib_nsamples if nsamples is None else nsamples
        seed = s.calib_seed if seed is None else seed
        if (n, seed) not in self._calib:
            self._calib[n, seed] = Calibration(self.calibration_windows(n, seed), self.calibration_key(n, seed=seed))
        return self._calib[n, seed]

    def use_calibration(self, windows: torch.Tensor, source: dict) -> None:
        """Calibrate on ``windows`` (e.g. another implementation's, read from a file) instead of the setup's draw
        of the corpus; ``source`` names them in configurations."""
        self._calib[self.setup.calib_nsamples, self.setup.calib_seed] = Calibration(windows, source)

    def calibration_windows(self, nsamples: int, seed: int) -> torch.Tensor:
        """``nsamples`` seeded windows of ``calib_seqlen`` text tokens under the family's window rule."""
        s = self.setup
        limit = max_positions(self.loaded.model)  # checked before any calibration pass (minutes at 100k)
        if limit is not None and s.calib_seqlen + (self.bos is not None) > limit:
            raise ReproError(f"calib_seqlen (--calib-seqlen) {s.calib_seqlen}{' + <bos>' if self.bos is not None else ''}"
                             f" exceeds {self.name}'s limit of {limit} positions")
        return sample_windows(tokenize(self.loaded.tokenizer, self.calib_text), nsamples, s.calib_seqlen, seed, self.bos)

    def calibration_coverage(self, seed: int | None = None) -> dict | None:
        """How much of the calibration text the setup's windows (the draw of ``seed``) cover
        (:func:`repro.calib.window_coverage`); None where the windows came from elsewhere (:meth:`use_calibration`)."""
        s = self.setup
        seed = s.calib_seed if seed is None else seed
        if self.calibration_source(seed=seed).get("sha256") != self.calib_text.sha256:
            return None
        ids = text_tokens(tokenize(self.loaded.tokenizer, self.calib_text), self.bos)
        return window_coverage(ids.numel(), s.calib_nsamples, s.calib_seqlen, seed)

    def calibration_source(self, nsamples: int | None = None, seed: int | None = None) -> dict:
        """``calibration(nsamples, seed).source`` without drawing the windows (tokenizing needs the
        model's tokenizer): keys are known before, and without, loading the model."""
        n = self.setup.calib_nsamples if nsamples is None else nsamples
        seed = self.setup.calib_seed if seed is None else seed
        return self._calib[n, seed].source if (n, seed) in self._calib else self.calibration_key(n, seed=seed)

    def calibration_key(self, nsamples: int, **extra) -> dict:
        """What identifies ``nsamples`` calibration windows in a key (``extra``: e.g. the seed and
        mini-batch size of a search's own draw)."""
        s, text = self.setup, self.calib_text
        return {"data": text.label, "sha256": text.sha256, "nsamples": nsamples, "seqlen": s.calib_seqlen,
                "seed": s.calib_seed, **extra, **self.feeding()}

    def eval_model(self) -> torch.nn.Module:
        """One copy of the dense model in the evaluation dtype (masks are applied to it per cell)."""
        if self._eval is None:
            self._eval = copy.deepcopy(self.model).to(parse_dtype(self.setup.eval_dtype)).eval()
        return self._eval

    def ppl(self, model: torch.nn.Module) -> dict:
        """Perplexity of ``model`` (as it is: masked, zeroed or removed) under the setup's protocol."""
        s = self.setup
        return perplexity(model, self.loaded.tokenizer, self.data, s.seqlen, s.max_windows, s.batch_size,
                          self.progress, self.bos, s.spread).as_dict()

    def zeroshot_config(self, tasks: list[str], limit: int | None) -> dict:
        """Key fields of a zero-shot cell (lm-eval tasks; the text data and windows play no part)."""
        return {"protocol": PROTOCOL, "model": model_key(self.identity), "tasks": list(tasks), "limit": limit,
                "dtype": self.setup.eval_dtype}

    def zeroshot(self, model: torch.nn.Module, tasks: list[str], limit: int | None) -> dict:
        """lm-eval's standard tasks on ``model`` as it is (masked, zeroed or removed)."""
        from repro.evaluate.zeroshot import evaluate_zeroshot

        return evaluate_zeroshot(model, self.loaded.tokenizer, list(tasks), limit=limit, progress=self.progress)

    # -- which records are this experiment's ---------------------------------------------------------
    def owner_fields(self, config: dict) -> dict:
        """The fields a record's config must share with this experiment to be one of its cells
        (model identity, data, windows, dtype...); subclasses whose cells carry more say so."""
        return self.base_config()

    def owns(self, config: dict) -> bool:
        fields = self.owner_fields(config)  # "spread" is a key field only when set: its absence must match too
        return all(config.get(k) == v for k, v in fields.items()) and bool(config.get("spread")) == bool(
            fields.get("spread"))


def owned(store: Store, experiment: str, experiments, session: bool = True):
    """``(record, owner)`` for every record of ``experiment`` (a record folder, e.g. "heads-ppl") of
    the current protocol that one of ``experiments`` owns; ``session``: only cells asked for in this
    session (:meth:`repro.store.Store.current`), so records of another run never slip into a table.
    The one place where a paper's reader decides which records it reads."""
    experiments = list(experiments.values()) if isinstance(experiments, dict) else list(experiments)
    for r in store.current(experiment, session):
        e = next((e for e in experiments if e.owns(r["config"])), None)
        if e is not None:
            yield r, e
