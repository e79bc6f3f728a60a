"""Paper 1's Table III as the paper runs it: fine-tune an MHA text encoder on a GLUE task, then prune
its heads with every scorer, and score each pruned model on examples it never trained on.

No GLUE training split installs offline, so each task's validation set is split into ``k`` stratified
folds (:func:`repro.assets.glue.kfold`). One cell (:meth:`GlueHeadExperiment.fold`) is one (fine-tuning
seed, fold): a new classification head on the encoder, fine-tuned with the encoder on the other ``k - 1``
folds; its predictions on the held-out fold, dense, then with every scorer's heads at every sparsity
masked (zeroing a head's O-projection input, as notebook 1's language models). The calibrated scorers
read ``n_calib`` labelled *training-fold* examples (Gradient-Head the first ``grad_nsamples`` of them, its
cross-entropy gradients against their labels), drawn with the fold's seed; padding is left out of
their statistics. Random is scored with several seeds per fold (its spread). Predictions are kept per
example, so every comparison is paired on the same examples; the ``k`` folds of a seed score every
example once.

One record per fold holds every method: fine-tuning is the cost (about a minute per fold on 2 cores),
scoring and predicting take seconds, so a new method or sparsity recomputes the fold.
"""
from __future__ import annotations

import os
import time

import numpy as np
import torch

from repro.arch import adapter as get_adapter
from repro.assets.encoders import ENCODERS, known_encoders, load_classifier
from repro.assets.glue import GLUE, Examples, Recipe, batches, encode, finetune, glue_examples, kfold, predict_batches
from repro.assets.models import hub_snapshot, is_hub_id
from repro.calib import Calibration, text_windows
from repro.engines import plan
from repro.engines.heads import head_mask
from repro.errors import ReproError, UnknownNameError, check_list
from repro.methods.heads import HEAD_METHODS, get_method, score_heads, select_heads
from repro.store import PROTOCOL, Store, config_key
from repro.structure import Masks


class GlueHeadExperiment:
    """Fine-tune-then-prune cells of one (encoder, GLUE task). Records: ``heads-glue``, one per (seed, fold).

    ``methods`` and ``sparsities``: the scorers (:data:`repro.methods.heads.HEAD_METHODS`) and head
    sparsities every fold is pruned at; ``z_values``: the z of each scorer that takes one (MP, MP-G,
    Hybrid); ``random_seeds``: the seeds of Random's draws per fold. ``examples``: the task's examples
    to use instead of loading them (tests)."""

    records = "heads-glue"

    def __init__(self, encoder: str, task: str, store: Store, k: int = 5, split_seed: int = 0,
                 recipe: Recipe | dict | None = None, n_calib: int = 64, grad_nsamples: int = 16,
                 methods=("mpg",), sparsities=(0.25,), z_values=(2.0,), random_seeds=(0,), progress: bool = True,
                 examples: Examples | None = None):
        if encoder not in known_encoders() and not is_hub_id(encoder):
            raise UnknownNameError("encoder (a known encoder or a hub id)", encoder, known_encoders())
        if examples is None and task not in GLUE:
            raise UnknownNameError("GLUE task", task, GLUE)
        for name, v in (("k", k), ("n_calib", n_calib), ("grad_nsamples", grad_nsamples)):
            if not isinstance(v, int) or v < (2 if name == "k" else 1):
                raise ReproError(f"{name} must be an integer >= {2 if name == 'k' else 1}, got {v!r}")
        check_list("methods", list(methods), known=list(HEAD_METHODS))
        check_list("sparsities", list(sparsities), "number", 0.0, 1.0)
        check_list("z_values", list(z_values), "number")
        check_list("random_seeds", list(random_seeds), "integer", 0)
        self.encoder, self.task, self.store, self.progress = encoder, task, store, progress
        self.k, self.split_seed = k, split_seed
        self.recipe = recipe if isinstance(recipe, Recipe) else Recipe(**(recipe or {}))
        self.n_calib, self.grad_nsamples = n_calib, grad_nsamples
        self.methods, self.sparsities = list(methods), [float(s) for s in sparsities]
        self.z_values, self.random_seeds = [float(z) for z in z_values], [int(s) for s in random_seeds]
        self._examples = examples
        self._settings: dict | None = None

    # -- identity ------------------------------------------------------------------------------------
    def _encoder_key(self) -> dict:
        """The encoder's weights in a key: the packaged asset's sha256, a tiny config's random init, or a hub id
        (with, offline, the cached snapshot's commit)."""
        enc = ENCODERS.get(self.encoder)
        if enc is not None:
            return {"name": self.encoder, "source": enc.pip, "weights_sha256": enc.sha256}
        if self.encoder in known_encoders():
            return {"name": self.encoder, "source": "random-init from config"}
        snapshot = hub_snapshot(self.encoder) if os.environ.get("HF_HUB_OFFLINE") else None
        return {"name": self.encoder, "source": "hub", **({"revision": snapshot.name} if snapshot else {})}

    @property
    def examples(self) -> Examples:
        if self._examples is None:
            self._examples = glue_examples(self.task)
        return self._examples

    @property
    def name(self) -> str:
        return f"{self.encoder}:{self.task}"

    def settings(self) -> dict:
        """What every cell of this experiment shares (its key, less the seed and fold); computed once (the
        examples' sha256 hashes every text, and ``owns`` asks for it per record)."""
        if self._settings is None:
            self._settings = self._compute_settings()
        return self._settings

    def _compute_settings(self) -> dict:
        ex = self.examples
        return {"protocol": PROTOCOL, "encoder": self._encoder_key(),
                "task": {"name": ex.task, "n": len(ex), "sha256": ex.sha256, "metric": ex.metric},
                "k": self.k, "split_seed": self.split_seed, "recipe": self.recipe.as_dict(), "dtype": "float32",
                "n_calib": self.n_calib, "grad_nsamples": self.grad_nsamples, "methods": self.methods,
                "sparsities": self.sparsities, "z_values": self.z_values, "random_seeds": self.random_seeds}

    @property
    def address(self) -> str:
        return f"{type(self).__name__}:{self.name}:{config_key(self.settings())}"

    def owns(self, config: dict) -> bool:
        return all(config.get(k) == v for k, v in self.settings().items())

    # -- the cells -------------------------------------------------------------------------------------
    def splits(self) -> list[tuple[np.ndarray, np.ndarray]]:
        return kfold(self.examples.labels, self.k, self.split_seed)

    def calibration(self, tokenizer, train: np.ndarray, seed: int) -> Calibration:
        """``n_calib`` labelled training-fold examples, drawn with ``seed`` (all of them when fewer)."""
        idx = np.random.default_rng(seed).permutation(train)[:self.n_calib]
        batch = encode(tokenizer, self.examples, idx, self.recipe.max_length)
        return Calibration(text_windows(batch["input_ids"], batch["attention_mask"],
                                        torch.as_tensor(self.examples.labels[idx])),
                           {"examples": "training folds", "n": len(idx), "seed": seed})

    def _scorings(self) -> list[tuple[str, dict]]:
        """(method, parameters) of every scoring a fold runs."""
        out = []
        for m in self.methods:
            params = get_method(m).params
            if "seed" in params:
                out += [(m, {"seed": s}) for s in self.random_seeds]
            elif "z" in params:
                out += [(m, {"z": z}) for z in self.z_values]
            else:
                out.append((m, {}))
        return out

    @plan.cell
    def fold(self, seed: int, fold: int) -> dict:
        """The record of fine-tuning seed ``seed`` on every fold but ``fold``, then predicting ``fold``."""
        if not 0 <= fold < self.k:
            raise ReproError(f"fold must be in 0..{self.k - 1}, got {fold!r}")
        cfg = {**self.settings(), "seed": int(seed), "fold": int(fold)}

        def compute():
            ex = self.examples
            train, test = self.splits()[fold]
            loaded = load_classifier(self.encoder, int(ex.labels.max()) + 1, seed=seed)
            model, tok = loaded.model, loaded.tokenizer
            t0 = time.perf_counter()
            losses = finetune(model, tok, ex, train, self.recipe, seed=seed)
            t1 = time.perf_counter()
            calib = self.calibration(tok, train, seed)
            grad = Calibration({k: v[:self.grad_nsamples] for k, v in calib.windows.items()},
                               {**calib.source, "n": min(self.grad_nsamples, len(calib))})
            ad = get_adapter(model)
            shape = (ad.n_layers, max(ad.heads_per_layer()))
            held_out = batches(tok, ex, test, self.recipe.max_length)  # tokenised once for every prediction
            cells = []
            for method, params in self._scorings():
                kind = get_method(method).calibration
                scores = score_heads(method, model, grad if kind == "gradients" else calib if kind else None, **params)
                for sp in self.sparsities:
                    pruned = select_heads(scores, sp)
                    with Masks(ad) as masks:
                        masks.heads = head_mask(shape, pruned)
                        pred = predict_batches(model, held_out)
                    cells.append({"method": method, **params, "sparsity": sp, "pruned": [list(p) for p in pruned],
                                  "pred": pred.tolist()})
                cells[-1]["scores"] = np.asarray(scores).tolist()  # once per scoring, on its last sparsity
            return {"test": test.tolist(), "labels": ex.labels[test].tolist(), "train_losses": losses,
                    "dense": predict_batches(model, held_out).tolist(), "cells": cells,
                    "shape": list(shape), "finetune_seconds": t1 - t0, "seconds": time.perf_counter() - t0}
        return (yield plan.Ask(self.records, cfg, compute))

    @plan.cells
    def grid(self, seeds) -> list[dict]:
        """Every fold of every fine-tuning seed (None for those a survey finds missing)."""
        out = []
        for s in seeds:
            for f in range(self.k):
                out.append((yield self.fold.ask(s, f)))
        return out
