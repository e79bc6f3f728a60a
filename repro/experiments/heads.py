"""MP-G paper cells: head scores, pruned perplexity, efficiency (dense / zeroed / removed).

Pruned models are evaluated through :class:`repro.structure.Masks` on one bf16 copy of the
dense model: masking a head's O-projection input equals Algorithm 1's zeroing exactly (see
tests/test_structure.py), and needs no weight copy per cell.
"""
from __future__ import annotations

import copy
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import torch

from repro.arch import adapter as get_adapter
from repro.assets import load_model, load_text, parse_dtype
from repro.calib import Calibration, sample_windows
from repro.evaluate.ppl import perplexity, tokenize
from repro.evaluate.speed import attention_flops, attention_params, count_params, prefill_seconds
from repro.methods.heads import get_method, score_heads, select_heads
from repro.store import Store
from repro.structure import Masks, remove_heads, zero_heads

if TYPE_CHECKING:
    import pandas as pd


@dataclass(frozen=True)
class Setup:
    """Evaluation and calibration protocol shared by every cell of a run (papermill parameters)."""
    data: str = "wikitext2:test"
    seqlen: int = 1024
    max_windows: int | None = 32
    batch_size: int = 1
    eval_dtype: str = "bfloat16"
    calib_data: str = "wikitext2-train"
    calib_nsamples: int = 64
    grad_nsamples: int = 32
    calib_seqlen: int = 512
    calib_seed: int = 0


def model_key(identity: dict) -> dict:
    return {k: identity.get(k) for k in ("name", "source", "quantisation", "weights_sha256", "seed")
            if identity.get(k) is not None}


class HeadExperiment:
    """All cells of one model under one :class:`Setup`, cached in ``store``."""

    def __init__(self, model: str, setup: Setup, store: Store, progress: bool = True):
        self.setup, self.store, self.progress = setup, store, progress
        self.loaded = load_model(model, "float32")
        self.model = self.loaded.model
        self.adapter = get_adapter(self.model)
        self.data = load_text(setup.data)
        self._eval = None
        self._calib: dict[str, Calibration] = {}

    # -- identities ----------------------------------------------------------------------------
    @property
    def shape(self) -> tuple[int, int]:
        return self.adapter.n_layers, self.adapter.attention(0).n_heads

    def base_config(self) -> dict:
        s = self.setup
        return {"model": model_key(self.loaded.identity),
                "data": {k: self.data.identity[k] for k in ("name", "split", "sha256", "note")},
                "seqlen": s.seqlen, "max_windows": s.max_windows, "dtype": s.eval_dtype}

    def calibration(self, kind: str) -> Calibration:
        if kind not in self._calib:
            s = self.setup
            text = load_text(s.calib_data)
            n = s.grad_nsamples if kind == "gradients" else s.calib_nsamples
            wins = sample_windows(tokenize(self.loaded.tokenizer, text), n, s.calib_seqlen, s.calib_seed)
            self._calib[kind] = Calibration(wins, {"data": text.label, "sha256": text.sha256, "nsamples": n,
                                                   "seqlen": s.calib_seqlen, "seed": s.calib_seed})
        return self._calib[kind]

    def method_config(self, method: str, z: float, seed: int) -> dict:
        m = get_method(method)
        cfg = {"method": method}
        if "z" in m.params:
            cfg["z"] = z
        if "seed" in m.params:
            cfg["seed"] = seed
        if m.calibration:
            cfg["calibration"] = self.calibration(m.calibration).source
        return cfg

    # -- cells -----------------------------------------------------------------------------------
    def scores(self, method: str, z: float = 2.0, seed: int = 0) -> tuple[np.ndarray, float]:
        cfg = {"model": model_key(self.loaded.identity), **self.method_config(method, z, seed)}

        def compute():
            m = get_method(method)
            calib = self.calibration(m.calibration) if m.calibration else None
            shared = calib is not None and calib.has_stats(self.model)  # captured for another method
            t0 = time.perf_counter()
            s = score_heads(method, self.model, calib, z=z, seed=seed)
            elapsed = time.perf_counter() - t0
            # "seconds": what this method costs on its own, including its calibration pass
            return {"scores": s.tolist(), "seconds": elapsed + (calib.capture_seconds if shared else 0.0),
                    "scoring_seconds": elapsed}
        rec = self.store.run("heads-scores", cfg, compute)
        return np.asarray(rec["result"]["scores"]), rec["result"]["seconds"]

    def eval_model(self) -> torch.nn.Module:
        if self._eval is None:
            self._eval = copy.deepcopy(self.model).to(parse_dtype(self.setup.eval_dtype)).eval()
        return self._eval

    def _ppl(self, pruned: list | None) -> dict:
        model = self.eval_model()
        with Masks(get_adapter(model)) as masks:
            if pruned:
                mask = torch.ones(self.shape)
                for layer, head in pruned:
                    mask[layer, head] = 0
                masks.heads = mask
            r = perplexity(model, self.loaded.tokenizer, self.data, self.setup.seqlen, self.setup.max_windows,
                           self.setup.batch_size, self.progress)
        return r.as_dict()

    def dense(self) -> dict:
        return self.store.run("heads-ppl", {**self.base_config(), "method": "dense"}, lambda: self._ppl(None))

    def cell(self, method: str, sparsity: float, z: float = 2.0, tie_break: str = "index", seed: int = 0) -> dict:
        cfg = {**self.base_config(), **self.method_config(method, z, seed), "sparsity": sparsity, "tie_break": tie_break}
        if tie_break == "random":
            cfg["tie_seed"] = seed

        def compute():
            scores, _ = self.scores(method, z, seed)
            pruned = select_heads(scores, sparsity, tie_break, seed)
            return {**self._ppl(pruned), "pruned": [list(p) for p in pruned], "n_pruned": len(pruned)}
        return self.store.run("heads-ppl", cfg, compute)

    def efficiency(self, method: str, sparsities=(0.25, 0.5), batches=(1, 8), seqlen: int = 512,
                   repeats: int = 5, z: float = 2.0) -> dict:
        """Params, attention FLOPs and prefill time of the dense model and of the zeroed and the
        physically removed model at each sparsity, all timed round-robin in one cell."""
        cfg = {"model": model_key(self.loaded.identity), "method": method, "z": z, "sparsities": list(sparsities),
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
        return self.store.run("heads-efficiency", cfg, compute)


# ---- tables from records ---------------------------------------------------------------------

def ppl_frame(store: Store, experiments: dict[str, HeadExperiment] | None = None) -> "pd.DataFrame":
    """One row per finished perplexity cell of the head-pruning experiment; with
    ``experiments`` ({model name: HeadExperiment}), only cells of those models under their
    current protocol (data, seqlen, windows, dtype), so records of other runs never mix in."""
    import pandas as pd

    rows = []
    for r in store.records("heads-ppl"):
        c, res = r["config"], r["result"]
        if experiments is not None:
            e = experiments.get(c["model"]["name"])
            if e is None or any(c.get(k) != v for k, v in e.base_config().items()):
                continue
        rows.append({"model": c["model"]["name"], "method": c["method"], "z": c.get("z"),
                     "sparsity": c.get("sparsity", 0.0), "tie_break": c.get("tie_break", "index"),
                     "tie_seed": c.get("tie_seed"), "data": f'{c["data"]["name"]}:{c["data"]["split"]}',
                     "seqlen": c["seqlen"], "n_windows": res["n_windows"], "n_tokens": res["n_tokens"],
                     "dtype": res["dtype"], "ppl": res["ppl"], "ci95": res["ci95"],
                     "calibration": c.get("calibration"), "seconds": r.get("seconds")})
    return pd.DataFrame(rows)
