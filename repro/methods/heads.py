"""Attention-head scorers (one interface: ``model [+ calibration windows] -> scores [L, H]``,
low score = pruned first) and the global ranking that picks the heads to prune.

MP and MP-G follow "Magnitude Profile Pruning" (eqs. 1-3); the calibration baselines are the
paper's head-level adaptations of Wanda, SparseGPT and gradient saliency. A new scorer is one
function plus one ``HEAD_METHODS`` entry.

Per projection R of a layer, every *feature* (a row of W_Q, W_K, W_V; a column of W_O) gets a
value; a head's score adds the values of its own Q and O features and of its KV group's K and
V features. ``kv_share`` divides the KV part by the group size g (MP-G's eq. 3); without it
every query head counts its group's K/V in full (plain MP, and the baselines as the paper
describes them).
"""
from __future__ import annotations

from typing import Callable

import numpy as np
import torch

from repro.arch import Adapter, Attention
from repro.arch import adapter as get_adapter
from repro.calib import Calibration, as_calibration, loss_gradients
from repro.calib.stats import feature_sums
from repro.errors import ReproError, UnknownNameError, check_fraction
from repro.methods.registry import Method, Registry, minmax, n_lowest

ROLES = ("q", "k", "v", "o")


def _per_unit(values: torch.Tensor, width: int) -> torch.Tensor:
    return values.reshape(-1, width).sum(1)


def combine(attn: Attention, units: dict, kv_share: bool, alpha_q: float = 1.0, alpha_kv: float = 1.0) -> torch.Tensor:
    """Per-head score from per-unit role values (eq. 3 when ``kv_share``)."""
    kv = units["k"] + units["v"]
    kv = kv[torch.arange(attn.n_heads) // attn.group_size]
    if kv_share:
        kv = kv / attn.group_size
    return alpha_q * (units["q"] + units["o"]) + alpha_kv * kv


def _layers(ad: Adapter, feature_values: Callable[[Attention, str], torch.Tensor], kv_share: bool) -> np.ndarray:
    rows = []
    for i in range(ad.n_layers):
        attn = ad.attention(i)
        units = {r: _per_unit(feature_values(attn, r).double(), attn.head_dim) for r in ROLES}
        rows.append(combine(attn, units, kv_share).cpu().numpy())
    if len({len(r) for r in rows}) != 1:
        raise ReproError("head scoring needs the same number of heads in every layer (score before removing)")
    return np.stack(rows)


def norms(attn: Attention, role: str) -> torch.Tensor:
    """L2 norm of each row of W_Q/W_K/W_V, or of each column of W_O (eq. 1)."""
    return attn.site(role).matrix(role).double().norm(dim=1)


def excess(values: torch.Tensor, z: float) -> torch.Tensor:
    """max(0, r_i - (mu + z*sigma)), mu/sigma over the projection's features (population std)."""
    mu, sigma = values.mean(), values.std(unbiased=False)
    return torch.clamp(values - (mu + z * sigma), min=0.0)


# ---- calibration-free ------------------------------------------------------------------------

def mp(model, calib=None, z: float = 2.0, **_) -> np.ndarray:
    return _layers(get_adapter(model), lambda a, r: excess(norms(a, r), z), kv_share=False)


def mpg(model, calib=None, z: float = 2.0, **_) -> np.ndarray:
    return _layers(get_adapter(model), lambda a, r: excess(norms(a, r), z), kv_share=True)


def mpg_norm(model, calib=None, z: float = 2.0, **_) -> np.ndarray:
    """MP-G with a secondary key for its ties (ours, not the paper's): heads ordered by MP-G's score, then, among
    equal scores (a head none of whose features passes mu + z sigma scores exactly 0), by its norm profile (eq. 1's
    norms summed as eq. 3 sums the excess, K/V shared by the group) instead of by index. The scores are the
    heads' ranks in that order (0 is pruned first): the global selection then takes exactly that order."""
    ad = get_adapter(model)
    primary = _layers(ad, lambda a, r: excess(norms(a, r), z), kv_share=True)
    secondary = _layers(ad, norms, kv_share=True)
    order = np.lexsort((secondary.ravel(), primary.ravel()))
    ranks = np.empty(order.size)
    ranks[order] = np.arange(order.size)
    return ranks.reshape(primary.shape)


def magnitude_head(model, calib=None, **_) -> np.ndarray:
    """Sum of the head's row (column for O) L2 norms, no threshold."""
    return _layers(get_adapter(model), norms, kv_share=False)


def random_head(model, calib=None, seed: int = 0, **_) -> np.ndarray:
    ad = get_adapter(model)
    return np.random.default_rng(seed).random((ad.n_layers, ad.attention(0).n_heads))


# ---- calibration-based -----------------------------------------------------------------------

def _input_stats(model, ad: Adapter, calib):
    mods = []
    for i in range(ad.n_layers):
        mods += [s.module for s in ad.attention(i).sites]
    return as_calibration(calib).input_stats(model, mods)


def wanda_head(model, calib=None, **_) -> np.ndarray:
    """Eq. 4: sum |W_ij| * ||X_j||_2 over the head's Q/K/V rows and its O columns."""
    ad = get_adapter(model)
    st = _input_stats(model, ad, calib)
    return _layers(ad, lambda a, r: feature_sums(a.site(r), r, st[a.site(r).module].norm), kv_share=False)


def sparsegpt_head(model, calib=None, **_) -> np.ndarray:
    """sum w_ij^2 * H_jj (the OBS saliency with diag(H) = 2/n X^T X) over the head's weights."""
    ad = get_adapter(model)
    st = _input_stats(model, ad, calib)
    return _layers(ad, lambda a, r: feature_sums(a.site(r), r, st[a.site(r).module].hessian_diag, torch.square),
                   kv_share=False)


def gradient_head(model, calib=None, **_) -> np.ndarray:
    """sum |w_ij * g_ij|, g the LM-loss gradient accumulated over the calibration windows."""
    ad = get_adapter(model)
    calib = as_calibration(calib)
    if next(model.parameters()).dtype != torch.float32:
        raise ReproError("gradient-head needs a float32 model")
    attention = [s.module.weight for i in range(ad.n_layers) for s in ad.attention(i).sites]
    loss_gradients(model, calib.windows, only=attention)
    try:
        return _layers(ad, lambda a, r: (a.site(r).matrix(r).double() * a.site(r).grad_matrix(r).double()).abs().sum(1),
                       kv_share=False)
    finally:
        model.zero_grad(set_to_none=True)


def hybrid(model, calib=None, z: float = 2.0, **_) -> np.ndarray:
    """min-max(magnitude) + min-max(MP) + min-max(Wanda-Head), weights 1 each."""
    return minmax(magnitude_head(model)) + minmax(mp(model, z=z)) + minmax(wanda_head(model, calib))


HEAD_METHODS = Registry("head method", [
    Method("mpg", "MP-G", mpg, {"z": 2.0}),
    Method("mp", "MP", mp, {"z": 2.0}, paper=False),
    Method("mpg-norm", "MP-G, norm key (ours)", mpg_norm, {"z": 2.0}, paper=False, ablation=True),
    Method("wanda-head", "Wanda-Head", wanda_head, calibration="activations"),
    Method("sparsegpt-head", "SparseGPT-Head", sparsegpt_head, calibration="activations"),
    Method("gradient-head", "Gradient-Head", gradient_head, calibration="gradients"),
    Method("hybrid", "Hybrid", hybrid, {"z": 2.0}, calibration="activations"),
    Method("magnitude-head", "Magnitude-Head", magnitude_head, paper=False),
    Method("random", "Random", random_head, {"seed": 0}, paper=False),
])


def get_method(name: str) -> Method:
    return HEAD_METHODS[name]


def score_heads(method: str, model, calib: Calibration | torch.Tensor | None = None, **params) -> np.ndarray:
    """Scores [L, H] of ``method`` (see ``HEAD_METHODS``). A parameter the method does not take
    is an error (``Z=3`` must not silently score with the default z)."""
    m = HEAD_METHODS[method]
    return np.asarray(m.impl(model, calib, **m.check_params(params, "head method")), dtype=float)


def n_to_prune(sparsity: float, n_heads_total: int) -> int:
    """floor(s * L * H), robust to float representation (0.29 * 100 -> 29)."""
    return n_lowest(check_fraction("sparsity", sparsity), n_heads_total)


def layer_normalised(scores: np.ndarray) -> np.ndarray:
    """Each head's score divided by the mean score of its layer (a layer whose scores are all 0 stays 0):
    the global ranking then compares heads by how they stand *within* their layer, so a score whose scale
    drifts with depth (activation norms) no longer sends whole layers to the cut. Our remedy, not the
    paper's."""
    s = np.asarray(scores, dtype=float)
    mean = s.mean(axis=1, keepdims=True)
    return np.divide(s, mean, out=np.zeros_like(s), where=mean > 0)


SCALES = {"global": lambda s: np.asarray(s, dtype=float), "layer": layer_normalised}  # how scores are ranked


def select_heads(scores: np.ndarray, sparsity: float, tie_break: str = "index", seed: int = 0) -> list[tuple[int, int]]:
    """The floor(s*L*H) lowest-scoring heads, ranked globally.

    ``tie_break="index"`` orders by (score, layer, head) ascending (the documented default);
    ``"random"`` breaks score ties by a seeded random permutation instead.
    """
    scores = np.asarray(scores, dtype=float)
    if scores.ndim != 2 or not np.isfinite(scores).all():
        raise ReproError("scores must be a finite [L, H] array")
    n_layers, n_heads = scores.shape
    k = n_to_prune(sparsity, scores.size)
    flat = scores.ravel()
    if tie_break == "index":
        order = np.lexsort((np.arange(flat.size), flat))
    elif tie_break == "random":
        order = np.lexsort((np.random.default_rng(seed).permutation(flat.size), flat))
    else:
        raise UnknownNameError("tie_break", tie_break, ("index", "random"))
    return [(int(i // n_heads), int(i % n_heads)) for i in order[:k]]

