"""Paper 1's engine (head pruning): head scores, pruned perplexity, zero-shot accuracy and efficiency
(dense / zeroed / removed), one record per cell. Tables and claims from these records:
``repro.papers.mpg``.

Pruned models are evaluated through :class:`repro.structure.Masks` on one copy of the dense model
in the evaluation dtype: masking a head's O-projection input equals Algorithm 1's zeroing exactly
(see tests/test_structure.py), and needs no weight copy per cell.

:class:`VisionHeadExperiment` runs the same scorers and cells on an MHA image classifier (the
Fashion-MNIST ViT and the DINOv2 probe): calibration windows are labelled *training* images,
evaluation is top-1 and cross-entropy per *test* image.
"""
from __future__ import annotations

import copy
import json
import time

import numpy as np
import torch

from repro.arch import adapter as get_adapter
from repro.assets import parse_dtype
from repro.calib import Calibration, image_windows
from repro.engines import plan
from repro.engines.base import Experiment, Setup, model_key
from repro.engines.images import Images
from repro.errors import ReproError, UnknownNameError
from repro.evaluate.anatomy import anatomy, head_mask
from repro.evaluate.ppl import tokenize, windows
from repro.evaluate.rescale import out_inputs, remaining_rms
from repro.evaluate.speed import attention_flops, attention_params, count_params, with_prefill, zeroed_and_removed
from repro.methods import head_terms as T
from repro.methods.heads import HEAD_METHODS, SCALES, get_method, norms, score_heads, select_heads
from repro.store import PROTOCOL, Store
from repro.structure import Masks


def _number(v):
    """numpy scalars and arrays as JSON numbers and lists."""
    return v.tolist() if hasattr(v, "tolist") else str(v)


def _records(frame) -> list[dict]:
    return json.loads(frame.to_json(orient="records"))


class HeadExperiment(Experiment):
    """MP-G's cells for one model: head scores, pruned perplexity, efficiency.

    ``grad_nsamples``: calibration windows for Gradient-Head (its backward passes cost more);
    ``tie_seeds``: the seeds of the random tie-break cells (:meth:`grid` with ``tie_break="random"``)."""

    settings = ("grad_nsamples", "tie_seeds")  # per-model notebook settings beyond Setup's fields
    records = "heads-ppl"  # the record folder of evaluated cells (dense and pruned)

    def __init__(self, model: str, setup: Setup, store: Store, grad_nsamples: int = 32, progress: bool = True,
                 loaded=None, tie_seeds=()):
        super().__init__(model, setup, store, progress, loaded)
        if grad_nsamples < 1:
            raise ReproError(f"grad_nsamples must be positive, got {grad_nsamples}")
        self.grad_nsamples = grad_nsamples
        self.tie_seeds = list(tie_seeds)

    @property
    def shape(self) -> tuple[int, int]:
        return self.structure["n_layers"], self.structure["heads_per_layer"][0]

    def calib_nsamples_for(self, method: str) -> int | None:
        """How many calibration windows ``method`` reads (None: it reads no data)."""
        kind = get_method(method).calibration
        if kind is None:
            return None
        return self.grad_nsamples if kind == "gradients" else self.setup.calib_nsamples

    def owns(self, config: dict) -> bool:
        """A cell of this experiment's model and setup whose calibration, where it read one, is as large as this
        experiment's for its method: Table I at two calibration sizes is two experiments, each reading its own."""
        if not super().owns(config):
            return False
        calib, method = config.get("calibration"), config.get("method")
        if isinstance(calib, dict) and "nsamples" in calib and method in HEAD_METHODS:
            return calib["nsamples"] == self.calib_nsamples_for(method)
        return True

    def method_calibration(self, method: str, calib_seed: int | None = None) -> Calibration | None:
        """The calibration windows ``method`` reads (``calib_seed``: another draw than the setup's)."""
        n = self.calib_nsamples_for(method)
        return None if n is None else self.calibration(n, calib_seed)

    def method_source(self, method: str, calib_seed: int | None = None) -> dict | None:
        """``method_calibration(method, calib_seed).source`` without drawing the windows (tokenizing the
        calibration corpus takes seconds and the model's tokenizer; telling which score records are
        this model's must not)."""
        n = self.calib_nsamples_for(method)
        return None if n is None else self.calibration_source(n, calib_seed)

    def owner_fields(self, config: dict) -> dict:
        """An evaluated cell shares the evaluation protocol (:meth:`base_config`); a score record
        (no evaluation data) the model and, for a method that reads data, its calibration windows."""
        if "data" in config:
            return super().owner_fields(config)
        fields = {"protocol": PROTOCOL, "model": model_key(self.identity)}
        if config.get("calibration") is not None:  # any draw of this model's calibration corpus
            seed = config["calibration"].get("seed")
            fields["calibration"] = self.method_source(config["method"], seed)
        return fields

    def method_config(self, method: str, z: float = 2.0, seed: int = 0, calib_seed: int | None = None) -> dict:
        """The method, the parameters it declares (only those), and its calibration windows (the draw of
        ``calib_seed``, default the setup's)."""
        m = get_method(method)
        cfg = {"method": method, **{k: v for k, v in (("z", z), ("seed", seed)) if k in m.params}}
        if m.calibration:
            cfg["calibration"] = self.method_source(method, calib_seed)  # the windows' identity, without drawing them
        return cfg

    # -- cells (each asks for the records it depends on before its own: repro.engines.plan) ----
    @plan.cell
    def scores(self, method: str, z: float = 2.0, seed: int = 0, calib_seed: int | None = None) -> tuple[np.ndarray, float]:
        """``method``'s head scores (``seed``: Random's draw; ``calib_seed``: the calibration draw of a
        method that reads data, default the setup's) and the seconds scoring took."""
        cfg = {"protocol": PROTOCOL, "model": model_key(self.identity), **self.method_config(method, z, seed, calib_seed)}

        def compute():
            calib = self.method_calibration(method, calib_seed)
            shared = calib is not None and calib.has_stats(self.model)  # captured for another method
            t0 = time.perf_counter()
            params = {k: v for k, v in cfg.items() if k in get_method(method).params}
            s = score_heads(method, self.model, calib, **params)
            elapsed = time.perf_counter() - t0
            # "seconds": what this method costs on its own, including its calibration pass
            return {"scores": s.tolist(), "seconds": elapsed + (calib.capture_seconds if shared else 0.0),
                    "scoring_seconds": elapsed}
        rec = yield plan.Ask("heads-scores", cfg, compute)
        return np.asarray(rec["result"]["scores"]), rec["result"]["seconds"]

    @plan.cell
    def norm_profile(self, layer: int) -> dict:
        """The L2 norms of layer ``layer``'s W_Q/W_K/W_V rows and W_O columns (eq. 1), recorded so
        that the notebook's norm-profile figure renders without loading the model."""
        cfg = {"protocol": PROTOCOL, "model": model_key(self.identity), "layer": int(layer)}
        return (yield plan.Ask("heads-norms", cfg, lambda: {role: norms(self.adapter.attention(layer), role).tolist()
                                                             for role in "qkvo"}))

    @plan.cell
    def worked(self, z: float = 2.0) -> dict:
        """Notebook 1's worked example from this model's weights (:mod:`repro.methods.head_terms`), recorded so
        that the notebook renders without loading the model: the layer where MP and MP-G order heads most
        differently (``layer``; None where they never differ) and its per-head terms, the zero-score
        arithmetic, the per-layer rank disagreement, and with one K/V head per layer the per-layer KV constant."""
        cfg = {"protocol": PROTOCOL, "model": model_key(self.identity), "z": z}

        def compute():
            ad = self.adapter
            layer = T.pick_layer(ad, z)
            shown = ad.n_layers // 2 if layer is None else layer
            single = all(ad.attention(i).n_kv_heads == 1 for i in range(ad.n_layers))
            return {"layer": layer, "terms": _records(T.layer_terms(ad, shown, z)),
                    "zero": json.loads(json.dumps(T.zero_score_arithmetic(ad, z), default=_number)),
                    "disagreement": _records(T.rank_disagreement(ad, z)),
                    "single_kv": _records(T.single_kv_constant(ad, z)) if single else None}
        return (yield plan.Ask("heads-worked", cfg, compute))

    def head_mask(self, pruned) -> torch.Tensor:
        return head_mask(self.shape, pruned)

    def _evaluate(self, pruned: list | None) -> dict:
        """The evaluation copy with ``pruned`` heads masked, under the setup's protocol (perplexity)."""
        model = self.eval_model()
        with Masks(get_adapter(model)) as masks:
            masks.heads = self.head_mask(pruned) if pruned else None
            return self.measure(model)

    def measure(self, model) -> dict:
        return self.ppl(model)

    @plan.cell
    def dense(self) -> dict:
        return (yield plan.Ask(self.records, {**self.base_config(), "method": "dense"}, lambda: self._evaluate(None)))

    @plan.cell
    def cell(self, method: str, sparsity: float, z: float = 2.0, tie_break: str = "index", seed: int = 0,
             calib_seed: int | None = None, scale: str = "global") -> dict:
        """``method``'s heads at ``sparsity`` masked, evaluated; ``scale="layer"``: ranked by scores divided
        by their layer's mean (:func:`repro.methods.heads.layer_normalised`, our remedy ablation)."""
        if scale not in SCALES:
            raise UnknownNameError("scale", scale, list(SCALES))
        scores, _ = yield self.scores.ask(method, z, seed, calib_seed)
        cfg = {**self.base_config(), **self.method_config(method, z, seed, calib_seed), "sparsity": sparsity,
               "tie_break": tie_break, **({"scale": scale} if scale != "global" else {})}
        if tie_break == "random":
            cfg["tie_seed"] = seed

        def compute():
            pruned = self.selection(scores, sparsity, tie_break, seed, scale)
            return {**self._evaluate(pruned), "pruned": [list(p) for p in pruned], "n_pruned": len(pruned)}
        return (yield plan.Ask(self.records, cfg, compute))

    @staticmethod
    def selection(scores, sparsity: float, tie_break: str = "index", seed: int = 0, scale: str = "global") -> list:
        """The (layer, head) pairs a cell prunes: the lowest ``sparsity`` share of ``scores`` (ranked globally, or
        within each layer: ``scale="layer"``), ties broken by index or by ``seed``. A cell and ``repro heads`` both
        select through here."""
        return select_heads(SCALES[scale](scores), sparsity, tie_break, seed)

    @plan.cells
    def grid(self, methods, sparsities=(), z_values=(2.0,), tie_break: str = "index",
             dense: bool = False, random_seeds=(0,), calib_seeds=(None,)) -> list[dict]:
        """Every cell of ``methods`` x ``z_values`` (a method without z: only 2.0) x ``sparsities``,
        each method's scores asked first (a grid without sparsities asks only the scores);
        ``tie_break="random"``: one cell per seed of :attr:`tie_seeds`; ``dense``: the unpruned
        cell first. Draws: Random once per seed of ``random_seeds``, a method that reads calibration data
        once per calibration draw of ``calib_seeds`` (None: the setup's). The perplexity records, in that
        order."""
        out = [(yield self.dense.ask())] if dense else []
        ties = self.tie_seeds if tie_break == "random" else [None]
        for m in methods:
            spec = get_method(m)
            seeds = random_seeds if "seed" in spec.params else [0]
            calibs = calib_seeds if spec.calibration else [None]
            for z in z_values if "z" in spec.params else (2.0,):
                for seed in seeds:
                    for cs in calibs:
                        draw = {**({"seed": seed} if seed != 0 else {}),
                                **({"calib_seed": cs} if cs not in (None, self.setup.calib_seed) else {})}
                        yield self.scores.ask(m, z, **draw)  # a default draw asked as before draws existed
                        for sp in sparsities:
                            for t in ties:
                                out.append((yield self.cell.ask(m, sp, z, tie_break,
                                                                **({**draw, "seed": t} if t is not None else draw))))
        return out

    @plan.cell
    def anatomy(self, method: str, sparsity: float, z: float = 2.0, seed: int = 0, calib_seed: int | None = None,
                n_windows: int = 8, seqlen: int = 256) -> dict:
        """Why ``method``'s selection at ``sparsity`` does what it does (:func:`repro.evaluate.anatomy.anatomy`):
        per-layer sublayer output RMS against dense, each pruned head restored alone, each head of the layer
        whose attention output grew most pruned in addition; and, in a family with a post-attention norm,
        how much the selection rescales each layer's survivors (:func:`repro.evaluate.rescale.remaining_rms`).
        On ``n_windows`` windows of ``seqlen`` tokens spread over the evaluation split (the diagnosis runs
        dozens of evaluations: a small sample, the loss not the table's perplexity)."""
        scores, _ = yield self.scores.ask(method, z, seed, calib_seed)
        cfg = {"protocol": PROTOCOL, "model": model_key(self.identity), **self.method_config(method, z, seed, calib_seed),
               "sparsity": sparsity, "data": self.base_config()["data"], "n_windows": n_windows, "seqlen": seqlen,
               "dtype": self.setup.eval_dtype, **self.feeding()}

        def compute():
            pruned = select_heads(scores, sparsity)
            wins = windows(tokenize(self.loaded.tokenizer, self.data), seqlen, n_windows, self.bos, spread=True)
            ad = get_adapter(self.eval_model())
            out = anatomy(ad, wins, self.shape, pruned)
            post = "head" in ad.post_sublayer_norms(0)
            out["post_norm"] = post
            if post:  # how much each layer's own selection scales up its survivors (dense inputs)
                z_in = out_inputs(ad, wins, kinds=("head",))
                out["remaining"] = {str(i): remaining_rms(ad, z_in[("head", i)], "head", i, [h for l, h in pruned if l == i])
                                    for i in sorted({l for l, _ in pruned}) if i not in out["emptied"]}
            return out
        return (yield plan.Ask("heads-anatomy", cfg, compute))

    @plan.cell
    def zeroshot_cell(self, method: str, sparsity: float, tasks: list[str], limit: int | None = None,
                      z: float = 2.0) -> dict:
        """Zero-shot accuracy (lm-eval) of the model with ``method``'s heads at ``sparsity`` masked
        (``method="dense"``: nothing pruned)."""
        pruned = [] if method == "dense" else select_heads((yield self.scores.ask(method, z))[0], sparsity)
        cfg = {**self.zeroshot_config(tasks, limit), "method": method}
        if method != "dense":
            cfg.update(self.method_config(method, z), sparsity=sparsity)

        def compute():
            model = self.eval_model()
            with Masks(get_adapter(model)) as masks:
                masks.heads = self.head_mask(pruned) if pruned else None
                return {**self.zeroshot(model, tasks, limit), "n_pruned": len(pruned)}
        return (yield plan.Ask("heads-zeroshot", cfg, compute))

    @plan.cells
    def zeroshot_grid(self, cells, tasks: list[str], limit: int | None = None) -> list[dict]:
        """The zero-shot record of each ``(method, sparsity)`` of ``cells``."""
        out = []
        for m, sp in cells:
            out.append((yield self.zeroshot_cell.ask(m, sp, tasks, limit)))
        return out

    @plan.cell(exclusive=True)
    def efficiency(self, method: str, sparsities=(0.25, 0.5), batches=(1, 8), seqlen: int = 512,
                   repeats: int = 5, z: float = 2.0) -> dict:
        """Params, attention FLOPs and prefill time of the dense model and of the zeroed and the
        physically removed model at each sparsity, all timed round-robin in one cell."""
        scores, _ = yield self.scores.ask(method, z)
        cfg = {"protocol": PROTOCOL, "model": model_key(self.identity), "method": method, "z": z,
               "sparsities": list(sparsities),
               "batches": list(batches), "seqlen": seqlen, "repeats": repeats, "dtype": self.setup.eval_dtype,
               **self.feeding()}  # the machine is the record's data (result["machine"]), never its key

        def compute():
            dtype = parse_dtype(self.setup.eval_dtype)
            variants = {"dense": copy.deepcopy(self.model).to(dtype)}
            out = {"dense": {"sparsity": 0.0, "mode": "dense", "n_pruned": 0}}
            for sp in sparsities:
                pruned = select_heads(scores, sp)
                for mode, model in zeroed_and_removed(self.model, pruned).items():
                    variants[f"{mode} {sp:g}"] = model.to(dtype)
                    out[f"{mode} {sp:g}"] = {"sparsity": sp, "mode": mode, "n_pruned": len(pruned)}
            for name, model in variants.items():
                out[name].update(params=count_params(model), nonzero_params=count_params(model, nonzero=True),
                                 attention_params=attention_params(model),
                                 attention_flops=attention_flops(model, seqlen),
                                 heads=sum(get_adapter(model).heads_per_layer()))
            return with_prefill(out, variants, batches, seqlen, repeats, self.bos, self.setup.eval_dtype)
        return (yield plan.Ask("heads-efficiency", cfg, compute))


# ---- MHA encoders: image classifiers ---------------------------------------------------------------

class VisionHeadExperiment(HeadExperiment):
    """MP-G's cells for an image classifier with multi-head attention (``H_kv = H``): the Fashion-MNIST
    ViT and the DINOv2 ViT-S/14 probe (both trained here, :mod:`repro.assets.vision`,
    :mod:`repro.assets.dinov2`).

    The scorers are :mod:`repro.methods.heads`' own, through the ViT adapter. Their calibration
    "windows" are ``n_calib`` labelled Fashion-MNIST **training** images drawn with
    ``setup.calib_seed`` (a seeded permutation's first ``n``: Gradient-Head's ``grad_nsamples``
    images are a prefix of the same draw when fewer), never test images; Gradient-Head takes
    cross-entropy gradients against their labels. Every cell is evaluated on the first ``n_eval``
    **test** images (those notebook 3 evaluates on): top-1 accuracy and cross-entropy, kept per image
    so that methods compare paired on the same images. Records: ``heads-scores`` and ``heads-vision``."""

    settings = ("grad_nsamples", "n_calib", "n_eval")
    records = "heads-vision"

    def __init__(self, model: str, setup: Setup, store: Store, n_calib: int = 256, grad_nsamples: int = 256,
                 n_eval: int = 2000, progress: bool = True, loaded=None, images: str = "fashion-mnist"):
        if n_calib < 1 or n_eval < 1:
            raise ReproError(f"n_calib and n_eval must be positive, got {n_calib}, {n_eval}")
        super().__init__(model, setup, store, grad_nsamples, progress, loaded)
        self.images = Images(self, n_eval, images)
        self.n_calib, self.n_eval = n_calib, n_eval

    @property
    def kv_heads(self) -> int:
        """K/V heads per layer (first layer), from the model card."""
        return self.structure["kv_heads_per_layer"][0]

    def calib_nsamples_for(self, method: str) -> int | None:
        kind = get_method(method).calibration
        if kind is None:
            return None
        return self.grad_nsamples if kind == "gradients" else self.n_calib

    def calibration(self, nsamples: int | None = None, seed: int | None = None) -> Calibration:
        """``nsamples`` (default ``n_calib``) labelled training images, drawn once per size and seed."""
        n = self.n_calib if nsamples is None else nsamples
        seed = self.setup.calib_seed if seed is None else seed
        if (n, seed) not in self._calib:
            self._calib[n, seed] = Calibration(image_windows(*self.images.draw(n, seed)),
                                               self.calibration_key(n, seed=seed))
        return self._calib[n, seed]

    def calibration_source(self, nsamples: int | None = None, seed: int | None = None) -> dict:
        return self.calibration_key(self.n_calib if nsamples is None else nsamples,
                                    seed=self.setup.calib_seed if seed is None else seed)

    def calibration_key(self, nsamples: int, seed: int | None = None, **extra) -> dict:
        return self.images.source(nsamples, self.setup.calib_seed if seed is None else seed, **extra)

    def base_config(self) -> dict:
        return self.images.eval_config()

    def feeding(self) -> dict:
        return {}

    def measure(self, model) -> dict:
        """Top-1 and mean cross-entropy of ``model`` (as it is: masked) on the test images, per image too."""
        return self.images.measure(model)

    def zeroshot_cell(self, *args, **kwargs):
        raise ReproError("zero-shot cells are for language models")

    def efficiency(self, *args, **kwargs):
        raise ReproError("efficiency cells are for language models")
