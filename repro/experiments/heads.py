"""MP-G paper cells: head scores, pruned perplexity, efficiency (dense / zeroed / removed).

Pruned models are evaluated through :class:`repro.structure.Masks` on one bf16 copy of the
dense model: masking a head's O-projection input equals Algorithm 1's zeroing exactly (see
tests/test_structure.py), and needs no weight copy per cell.
"""
from __future__ import annotations

import copy
import time

import numpy as np
import torch

from repro.arch import adapter as get_adapter
from repro.assets import parse_dtype
from repro.calib import Calibration
from repro.errors import ReproError
from repro.evaluate.speed import attention_flops, attention_params, count_params, prefill_seconds
from repro.experiments.base import Experiment, Setup, model_key
from repro.methods.heads import get_method, score_heads, select_heads
from repro.store import PROTOCOL, Store
from repro.structure import Masks, remove_heads, zero_heads

class HeadExperiment(Experiment):
    """MP-G's cells for one model: head scores, pruned perplexity, efficiency.

    ``grad_nsamples``: calibration windows for Gradient-Head (its backward passes cost more)."""

    settings = ("grad_nsamples", "tie_seeds")  # per-model notebook settings beyond Setup's fields

    def __init__(self, model: str, setup: Setup, store: Store, grad_nsamples: int = 32, progress: bool = True):
        super().__init__(model, setup, store, progress)
        if grad_nsamples < 1:
            raise ReproError(f"grad_nsamples must be positive, got {grad_nsamples}")
        self.grad_nsamples = grad_nsamples

    @property
    def shape(self) -> tuple[int, int]:
        return self.adapter.n_layers, self.adapter.attention(0).n_heads

    def method_calibration(self, method: str) -> Calibration | None:
        kind = get_method(method).calibration
        if kind is None:
            return None
        return self.calibration(self.grad_nsamples if kind == "gradients" else None)

    def method_config(self, method: str, z: float = 2.0, seed: int = 0) -> dict:
        """The method, the parameters it declares (only those), and its calibration windows."""
        m = get_method(method)
        cfg = {"method": method, **{k: v for k, v in (("z", z), ("seed", seed)) if k in m.params}}
        if m.calibration:
            cfg["calibration"] = self.method_calibration(method).source
        return cfg

    # -- cells -----------------------------------------------------------------------------------
    def scores(self, method: str, z: float = 2.0, seed: int = 0) -> tuple[np.ndarray, float]:
        cfg = {"protocol": PROTOCOL, "model": model_key(self.loaded.identity), **self.method_config(method, z, seed)}

        def compute():
            calib = self.method_calibration(method)
            shared = calib is not None and calib.has_stats(self.model)  # captured for another method
            t0 = time.perf_counter()
            params = {k: v for k, v in cfg.items() if k in get_method(method).params}
            s = score_heads(method, self.model, calib, **params)
            elapsed = time.perf_counter() - t0
            # "seconds": what this method costs on its own, including its calibration pass
            return {"scores": s.tolist(), "seconds": elapsed + (calib.capture_seconds if shared else 0.0),
                    "scoring_seconds": elapsed}
        rec = self.run("heads-scores", cfg, compute)
        return np.asarray(rec["result"]["scores"]), rec["result"]["seconds"]

    def head_mask(self, pruned) -> torch.Tensor:
        mask = torch.ones(self.shape)
        for layer, head in pruned:
            mask[layer, head] = 0
        return mask

    def _ppl(self, pruned: list | None) -> dict:
        model = self.eval_model()
        with Masks(get_adapter(model)) as masks:
            masks.heads = self.head_mask(pruned) if pruned else None
            return self.ppl(model)

    def dense(self) -> dict:
        return self.run("heads-ppl", {**self.base_config(), "method": "dense"}, lambda: self._ppl(None))

    def cell(self, method: str, sparsity: float, z: float = 2.0, tie_break: str = "index", seed: int = 0) -> dict:
        cfg = {**self.base_config(), **self.method_config(method, z, seed), "sparsity": sparsity, "tie_break": tie_break}
        if tie_break == "random":
            cfg["tie_seed"] = seed

        def compute():
            scores, _ = self.scores(method, z, seed)
            pruned = select_heads(scores, sparsity, tie_break, seed)
            return {**self._ppl(pruned), "pruned": [list(p) for p in pruned], "n_pruned": len(pruned)}
        return self.run("heads-ppl", cfg, compute)

    def zeroshot_cell(self, method: str, sparsity: float, tasks: list[str], limit: int | None = None,
                      z: float = 2.0) -> dict:
        """Zero-shot accuracy (lm-eval) of the model with ``method``'s heads at ``sparsity`` masked
        (``method="dense"``: nothing pruned)."""
        cfg = {**self.zeroshot_config(tasks, limit), "method": method}
        if method != "dense":
            cfg.update(self.method_config(method, z), sparsity=sparsity)

        def compute():
            pruned = [] if method == "dense" else select_heads(self.scores(method, z)[0], sparsity)
            model = self.eval_model()
            with Masks(get_adapter(model)) as masks:
                masks.heads = self.head_mask(pruned) if pruned else None
                return {**self.zeroshot(model, tasks, limit), "n_pruned": len(pruned)}
        return self.run("heads-zeroshot", cfg, compute)

    def efficiency(self, method: str, sparsities=(0.25, 0.5), batches=(1, 8), seqlen: int = 512,
                   repeats: int = 5, z: float = 2.0) -> dict:
        """Params, attention FLOPs and prefill time of the dense model and of the zeroed and the
        physically removed model at each sparsity, all timed round-robin in one cell."""
        cfg = {"protocol": PROTOCOL, "model": model_key(self.loaded.identity), "method": method, "z": z,
               "sparsities": list(sparsities),
               "batches": list(batches), "seqlen": seqlen, "repeats": repeats, "dtype": self.setup.eval_dtype,
               "threads": torch.get_num_threads()}

        def compute():
            dtype = parse_dtype(self.setup.eval_dtype)
            variants = {"dense": copy.deepcopy(self.model).to(dtype)}
            out = {"dense": {"sparsity": 0.0, "mode": "dense", "n_pruned": 0}}
            for sp in sparsities:
                pruned = select_heads(self.scores(method, z)[0], sp)
                for mode, op in (("zeroed", zero_heads), ("removed", remove_heads)):
                    model = copy.deepcopy(self.model)
                    op(get_adapter(model), pruned)
                    variants[f"{mode} {sp:g}"] = model.to(dtype)
                    out[f"{mode} {sp:g}"] = {"sparsity": sp, "mode": mode, "n_pruned": len(pruned)}
            for name, model in variants.items():
                out[name].update(params=count_params(model), nonzero_params=count_params(model, nonzero=True),
                                 attention_params=attention_params(model),
                                 attention_flops=attention_flops(model, seqlen),
                                 heads=sum(get_adapter(model).heads_per_layer()))
            for b in batches:
                for name, t in prefill_seconds(variants, b, seqlen, repeats).items():
                    out[name][f"prefill_b{b}"] = t
            return out
        return self.run("heads-efficiency", cfg, compute)
