"""Paper 3's one-shot baselines: each scores every candidate once, on the unmasked model, and takes the k lowest
(random, magnitude, Wanda-style, Taylor, Fisher; the formulas: :mod:`repro.methods.bandit`'s docstring).
"""
from __future__ import annotations

import time
from typing import Sequence

import numpy as np
import torch

from repro.arch import Adapter
from repro.calib import gradients_only_for
from repro.calib.stats import feature_sums, record_input_sumsq
from repro.errors import ReproError
from repro.methods.units import (
    Evaluator,
    Selection,
    Unit,
    candidates,
    check_k,
    finish,
    magnitudes,
    per_kind_normalised,
    unit_sums,
)
from repro.structure.masks import KINDS


def _one_shot(method: str, ev: Evaluator, units: list[Unit], scores: np.ndarray, k: int, t0: float) -> Selection:
    check_k(k, len(units))
    ranked = per_kind_normalised(units, scores)
    order = np.argsort(ranked, kind="stable")[:k]
    sel = Selection(method, [units[i] for i in order], ev.budget, scores={u: float(s) for u, s in zip(units, scores)})
    return finish(sel, ev, t0)


def _sites(ad: Adapter, units: Sequence[Unit]) -> list[torch.nn.Module]:
    layers = {(u.kind, u.layer) for u in units}
    mods = []
    for kind, i in sorted(layers):
        mods += [s.module for s in (ad.attention(i).sites if kind == "head" else ad.mlp(i).sites)]
    return mods


def _gradient_sums(ev: Evaluator, units: list[Unit]) -> np.ndarray:
    """[n_batches, n_units]: sum of g_b * w over each unit's weights, per mini-batch b."""
    ad = ev.adapter
    model = ad.model
    if next(model.parameters()).dtype != torch.float32:
        raise ReproError("Taylor and Fisher scores need a float32 model")
    rows = []
    try:
        with gradients_only_for(model, [m.weight for m in _sites(ad, units)]):  # the weights read below
            for b in range(ev.n_batches):
                model.zero_grad(set_to_none=True)
                ev.gradient(b)
                rows.append(unit_sums(ad, units, ev.group_size,
                                      lambda s, r: (s.matrix(r).double() * s.grad_matrix(r).double()).sum(1)))
    finally:
        model.zero_grad(set_to_none=True)
    return np.stack(rows)


def select_random(ev: Evaluator, k: int, kinds=KINDS, seed: int = 0) -> Selection:
    t0 = time.perf_counter()
    ev.reset()
    units = candidates(ev.adapter, kinds, ev.group_size)
    check_k(k, len(units))
    pick = np.random.default_rng(seed).permutation(len(units))[:k]  # a prefix of one permutation: nested in k
    return finish(Selection("random", [units[i] for i in pick], ev.budget), ev, t0)


def select_magnitude(ev: Evaluator, k: int, kinds=KINDS, seed: int = 0) -> Selection:
    t0 = time.perf_counter()
    ev.reset()
    units = candidates(ev.adapter, kinds, ev.group_size)
    return _one_shot("magnitude", ev, units, magnitudes(ev.adapter, units, ev.group_size), k, t0)


@torch.no_grad()
def select_wanda(ev: Evaluator, k: int, kinds=KINDS, seed: int = 0) -> Selection:
    t0 = time.perf_counter()
    ev.reset()
    units = candidates(ev.adapter, kinds, ev.group_size)
    with record_input_sumsq(_sites(ev.adapter, units)) as stats:  # ||X_j|| over every calibration mini-batch
        for b in range(ev.n_batches):
            ev.forward(b)
    norms = {m: s.norm for m, s in stats.items()}
    scores = unit_sums(ev.adapter, units, ev.group_size, lambda s, r: feature_sums(s, r, norms[s.module]))
    return _one_shot("wanda", ev, units, scores, k, t0)


def select_taylor(ev: Evaluator, k: int, kinds=KINDS, seed: int = 0) -> Selection:
    """|sum g * w|, g the gradient of the mean loss over all mini-batches (= mean of g_b)."""
    t0 = time.perf_counter()
    ev.reset()
    units = candidates(ev.adapter, kinds, ev.group_size)
    return _one_shot("taylor", ev, units, np.abs(_gradient_sums(ev, units).mean(0)), k, t0)


def select_fisher(ev: Evaluator, k: int, kinds=KINDS, seed: int = 0) -> Selection:
    """sum_b (sum g_b * w)^2 over calibration mini-batches b."""
    t0 = time.perf_counter()
    ev.reset()
    units = candidates(ev.adapter, kinds, ev.group_size)
    return _one_shot("fisher", ev, units, (_gradient_sums(ev, units) ** 2).sum(0), k, t0)


