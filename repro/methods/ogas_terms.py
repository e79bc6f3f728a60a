"""OGAS (paper 2) taken apart on one layer: the terms behind each output channel's sparsity, for notebook 2's
worked example (:class:`OGASTrace`, and small pure functions on its arrays). Notation as in
:class:`repro.methods.unstructured.OGAS`, per output channel ``i`` of one linear ``W [C_out, C_in]``:

* energy ``E_i`` (RMS of the dense output over every calibration token) and peak ratio ``P_i`` (mean over
  windows of ``max_t |y| / RMS``);
* normalised terms ``x_i = minmax(log1p E)_i``, ``y_i = minmax(log1p P)_i``, with
  ``minmax(v)_i = (v_i - min v) / (max v - min v)``;
* importance ``I_i = (1 - lam) x_i + lam y_i``;
* channel sparsity ``s_i(alpha, gamma) = clamp(S_min + alpha (1 - I_i)^gamma, S_min, S_max)``; ``alpha`` is the
  root of ``f(alpha) = mean_i s_i(alpha) - target``;
* the layer's relative output error ``L(gamma) = ||X (W - W_p(gamma))^T||_F / ||Y_dense||_F`` on the gamma
  search's calibration subset (through its Gram matrix ``X^T X``), which the search minimises.

Nothing here reads or writes records (:meth:`repro.engines.prune.PruneExperiment.worked_layer` does).
"""
from __future__ import annotations

import numpy as np
import torch

from repro.calib.blocks import Gram
from repro.errors import ReproError
from repro.methods.registry import minmax
from repro.methods.unstructured import OGAS, channel_sparsity, get_pruner
from repro.structure.sparsity import out_in, prunable_linear

# gammas whose channel sparsities the trace keeps (besides the one used): the ends of the paper's search
# interval (0.05, 1.1) and the Mistral setting's fixed 0.2
GAMMAS = (0.05, 0.2, 1.1)
# L(gamma) is evaluated on: the paper's interval in steps of 0.05, and beyond it on both sides
GAMMA_GRID = (0.01, 0.025, *(round(0.05 * k, 2) for k in range(1, 23)), 1.25, 1.5, 2.0, 3.0, 4.0)


class OGASTrace(OGAS):
    """:class:`OGAS` that prunes exactly as OGAS does (same observers, same masks) and, for the one layer
    ``trace_layer`` (a qualified name of :func:`repro.structure.sparsity.prunable_linears`), adds to that
    layer's extras a ``"trace"`` (:meth:`trace`): the terms ``E, P, x, y, I``, the sparsities at
    :data:`GAMMAS` and the gamma used, ``L(gamma)`` on ``gamma_grid`` and at each gamma the search evaluated,
    and ``f(alpha)`` at the gamma used. Call :meth:`bind` on the model before pruning it. With a fixed gamma
    the traced layer alone also gets the Gram observer that ``L`` needs (the other layers' observers are
    OGAS's). Not a registered method: its parameters are OGAS's (``trace_layer``, ``gamma_grid`` and
    ``alpha_points`` are attributes, never part of a record's parameters)."""

    def __init__(self, sparsity, pattern="unstructured", *, trace_layer: str, gamma_grid=GAMMA_GRID,
                 alpha_points: int = 201, **params):
        super().__init__(sparsity, pattern, **params)
        self.trace_layer = str(trace_layer)
        self.gamma_grid = tuple(float(g) for g in gamma_grid)
        if not self.gamma_grid or min(self.gamma_grid) <= 0:
            raise ReproError(f"gamma_grid must be non-empty positive numbers, got {gamma_grid!r}")
        self.alpha_points = int(alpha_points)
        self._module = None

    @classmethod
    def of(cls, method: str, sparsity: float, trace_layer: str, gamma_grid=GAMMA_GRID, params: dict | None = None):
        """The trace of the registered OGAS method ``method`` (``"ogas"``, ``"ogas-mistral"``...: its own
        defaults, then ``params``)."""
        base = get_pruner(method)
        if not issubclass(base, OGAS):
            raise ReproError(f"the worked example traces an OGAS method; {method!r} is not one")
        return cls(sparsity, trace_layer=trace_layer, gamma_grid=gamma_grid, **{**base.defaults, **(params or {})})

    def bind(self, model: torch.nn.Module) -> "OGASTrace":
        """Find ``trace_layer`` in ``model`` (the model about to be pruned); returns self."""
        self._module = prunable_linear(model, self.trace_layer)
        return self

    def observers(self, name, module):
        obs = super().observers(name, module)
        if module is self._module and not self.search:
            obs.append(Gram(limit=int(self.params.subset)))  # L(gamma) needs it; OGAS with a fixed gamma does not
        return obs

    def compress(self, name, module, obs):
        if name != self.trace_layer:
            return super().compress(name, module, obs)
        if module is not self._module:
            raise ReproError(f"OGASTrace: bind(model) to the model being pruned before pruning {name}")
        dense = out_in(module).float().clone()  # OGAS zeroes the layer in place
        extras = super().compress(name, module, obs)
        extras["trace"] = self.trace(dense, obs, float(extras["gamma"]))
        return extras

    def trace(self, w: torch.Tensor, obs: list, used: float) -> dict:
        """The worked example's numbers of one layer from its dense weights ``w`` and its observers (numpy
        arrays and floats): the same planning and error function as :meth:`OGAS.compress`, so the values at
        the gamma used are those OGAS pruned with (``L`` there equals OGAS's ``rel_error`` exactly)."""
        energy, peak, imp, plan = self.layer_plan(w, obs)
        error = self.error_of(w, obs)
        x, y = normalised_terms(energy, peak)

        def at(gamma: float) -> dict:
            s, alpha, at_bound, mask = plan(gamma, keep=False)
            return {"gamma": gamma, "used": gamma == used, "s": s, "alpha": float(alpha),
                    "alpha_at_bound": bool(at_bound), "rel_error": error(mask),
                    "removed": mask.sum(1).cpu().numpy().astype(np.int64)}

        path: list[tuple[float, float]] = []
        if self.search:  # the search again, logged: it evaluates the same gammas in the same order
            def logged(gamma):
                path.append((float(gamma), error(plan(gamma)[3])))
                return path[-1][1]
            self.search_gamma(logged)
        p = self.params
        return {"layer": self.trace_layer, "rows": int(w.shape[0]), "cols": int(w.shape[1]), "lam": float(p.lam),
                "target": self.sparsity, "s_min": self.s_min, "s_max": self.s_max, "rounding": p.rounding,
                "search": self.search, "gamma": used, "gamma_bounds": [float(b) for b in p.gamma_bounds],
                "gamma_tol": float(p.gamma_tol), "subset_windows": min(int(p.subset), obs[1].n_windows),
                "energy": energy, "peak_ratio": peak, "x": x, "y": y, "importance": imp,
                "settings": [at(g) for g in dict.fromkeys((*GAMMAS, used))],
                "grid": {"gamma": list(self.gamma_grid),
                         "rel_error": [error(plan(g, keep=False)[3]) for g in self.gamma_grid]},
                "search_path": {"gamma": [g for g, _ in path], "rel_error": [e for _, e in path]},
                "root": alpha_curve(imp, used, self.sparsity, self.s_min, self.s_max, self.alpha_points)}


# ---- the pure functions the notebook explains OGAS with -------------------------------------------------

def normalised_terms(energy: np.ndarray, peak_ratio: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``x = minmax(log1p E)``, ``y = minmax(log1p P)``: the two terms of ``I = (1 - lam) x + lam y``."""
    return minmax(np.log1p(np.asarray(energy, float))), minmax(np.log1p(np.asarray(peak_ratio, float)))


def alpha_curve(importance: np.ndarray, gamma: float, target: float, s_min: float, s_max: float,
                points: int = 201) -> dict:
    """``f(alpha) = mean_i s_i(alpha) - target`` on ``points`` alphas from 0 to ``alpha_hi`` =
    ``(S_max - S_min) / min_{I_i < 1} (1 - I_i)^gamma``, where every channel with ``I_i < 1`` has reached
    ``S_max`` (beyond it nothing changes). Each ``s_i`` is non-decreasing in ``alpha``, and on ``(0, alpha_hi)``
    the channel with the smallest ``(1 - I_i)^gamma > 0`` is strictly increasing, so ``f`` is strictly
    increasing there. ``max_mean`` = ``f(alpha_hi) + target`` is the largest mean ``S_max`` allows (channels with
    ``I_i = 1`` stay at ``S_min``). ``root``:

    * ``"unique"`` when ``S_min < target < max_mean``: one crossing, inside ``(0, alpha_hi)``;
    * ``"at alpha_hi"`` when ``target = max_mean``: ``f`` reaches 0 at ``alpha_hi`` and stays there, so every
      larger alpha solves it too;
    * ``"none"`` when ``target > max_mean``: ``f < 0`` everywhere; OGAS takes ``alpha_hi`` (``alpha_at_bound``)
      and the layer's mean falls short of the target;
    * ``"at 0"`` when ``target <= S_min``.

    ``alpha_root``: :func:`repro.methods.unstructured.channel_sparsity`'s alpha (``alpha_hi`` when the target is
    out of reach), also among the grid's points."""
    base = np.clip(1.0 - np.asarray(importance, float), 0.0, 1.0) ** gamma
    hi = float((s_max - s_min) / base[base > 0].min()) if (base > 0).any() else 0.0
    _, root, at_bound = channel_sparsity(np.asarray(importance, float), gamma, target, s_min, s_max)
    alpha = np.unique(np.append(np.linspace(0.0, hi, max(int(points), 2)), root))
    f = np.clip(s_min + alpha[:, None] * base[None, :], s_min, s_max).mean(1) - target
    max_mean = float(np.clip(s_min + hi * base, s_min, s_max).mean())
    return {"gamma": float(gamma), "target": float(target), "alpha": alpha, "f": f, "alpha_hi": hi,
            "max_mean": max_mean, "alpha_root": float(root), "alpha_at_bound": bool(at_bound),
            "root": "at 0" if target <= s_min else "unique" if target < max_mean - 1e-12 else
            "none" if at_bound else "at alpha_hi"}


def reallocation(s: np.ndarray, target: float, tol: float = 0.01) -> dict:
    """How far OGAS moves channels off the uniform ``target`` (Wanda's sparsity for every row): the 5%, 50%
    and 95% quantiles of ``s``, its min, max, mean and standard deviation, and ``within`` = the share of
    channels with ``|s_i - target| <= tol``."""
    s = np.asarray(s, float)
    q05, q50, q95 = np.quantile(s, [0.05, 0.5, 0.95])
    return {"q05": float(q05), "q50": float(q50), "q95": float(q95), "min": float(s.min()), "max": float(s.max()),
            "mean": float(s.mean()), "std": float(s.std()), "within": float(np.mean(np.abs(s - target) <= tol + 1e-12)),
            "tol": tol}


def robust_minmax(v: np.ndarray, lo: float = 1.0, hi: float = 99.0) -> np.ndarray:
    """``clip((v - p_lo) / (p_hi - p_lo), 0, 1)`` with ``p_q`` the q-th percentile of ``v``: min-max with the
    channels beyond the percentiles clipped (all zeros when ``p_hi == p_lo``)."""
    v = np.asarray(v, float)
    a, b = np.percentile(v, [lo, hi])
    return np.zeros_like(v) if b == a else np.clip((v - a) / (b - a), 0.0, 1.0)


def stretch(values: np.ndarray, lo: float = 1.0, hi: float = 99.0) -> dict:
    """How outliers stretch ``minmax(log1p values)`` (values: ``E`` or ``P``), with ``v = log1p(values)``:

    * ``top``: the channel with the largest value, ``top_value`` its value, ``top_over_median`` its ratio
      to the median channel's;
    * ``outliers``: channels beyond Tukey's far-out fences of ``v`` (below ``Q1 - 3 IQR`` or above ``Q3 + 3 IQR``),
      largest ``v`` first;
    * ``max_over_p99`` = ``max v / p99(v)``; ``range_ratio`` = ``(max v - min v) / (p_hi(v) - p_lo(v))``, how
      much wider the min-max range is than that of the central channels;
    * ``bulk`` = the min-max ``x`` of ``p_lo`` and ``p_hi``: where the central channels land in [0, 1];
    * ``median_x``: the median channel's min-max ``x`` (``median_x_robust``: under :func:`robust_minmax`)."""
    raw = np.asarray(values, float)
    v = np.log1p(raw)
    vmin, span = v.min(), v.max() - v.min()
    plo, p99, phi, q1, med, q3 = np.percentile(v, [lo, 99, hi, 25, 50, 75])
    far = (v > q3 + 3 * (q3 - q1)) | (v < q1 - 3 * (q3 - q1))
    top = int(np.argmax(v))

    def x(t: float) -> float:
        return float((t - vmin) / span) if span > 0 else 0.0
    return {"top": top, "top_value": float(raw[top]), "median_value": float(np.median(raw)),
            "top_over_median": float(raw[top] / np.median(raw)), "outliers": [int(i) for i in np.argsort(-v, kind="stable") if far[i]],
            "max_over_p99": float(v.max() / p99), "range_ratio": float(span / (phi - plo)) if phi > plo else float("inf"),
            "bulk": [x(plo), x(phi)], "median_x": x(med),
            "median_x_robust": float(np.clip((med - plo) / (phi - plo), 0, 1)) if phi > plo else 0.0, "lo": lo, "hi": hi}


def robust_sparsity(energy: np.ndarray, peak_ratio: np.ndarray, lam: float, gamma: float, target: float,
                    s_min: float, s_max: float, lo: float = 1.0, hi: float = 99.0) -> tuple[np.ndarray, float, bool]:
    """:func:`channel_sparsity` at ``gamma`` with the importance normalised robustly:
    ``I_i = (1 - lam) robust_minmax(log1p E)_i + lam robust_minmax(log1p P)_i`` (percentiles ``lo``, ``hi``)
    instead of min-max: what OGAS would assign were single outlier channels not setting the scale."""
    imp = (1 - lam) * robust_minmax(np.log1p(np.asarray(energy, float)), lo, hi) + \
        lam * robust_minmax(np.log1p(np.asarray(peak_ratio, float)), lo, hi)
    return channel_sparsity(imp, gamma, target, s_min, s_max)
