"""Unstructured and N:M weight pruning of the linear layers inside transformer blocks: Magnitude,
Wanda, RIA, SparseGPT, and OGAS (paper 2), run on the block-sequential pipeline of
:mod:`repro.calib.blocks` (each method *observes* statistics of a block's linears, then
*compresses* them; the block is then re-run with the pruned weights to feed the next one).

Notation, per linear layer: ``W`` ``[C_out, C_in]`` (rows = output channels; GPT-2's Conv1D is
transposed first, :func:`repro.structure.sparsity.out_in`), ``X`` ``[n, C_in]`` its inputs over
the calibration tokens, ``Y = X W^T (+ b)`` its outputs, ``s`` the target sparsity. A *mask* marks
the weights set to zero. Counts use ``k = floor(s * size)`` (robust to float representation:
``0.29 * 100`` gives 29). The ``k`` lowest scores are those a stable sort puts first (ties broken
by position, row-major; column-major inside a SparseGPT block), found with ``kthvalue`` in linear
time; exact ties practically only occur between already-zero weights.

* **Magnitude** -- score ``|W_ij|``; the ``floor(s * C_out * C_in)`` lowest of the whole matrix
  (one threshold per layer). No calibration.
* **Wanda** (Sun et al. 2023) -- score ``|W_ij| * ||X_j||_2``; the ``floor(s * C_in)`` lowest of
  *each row* (locuslab/wanda ``prune_wanda``: stable sort per row, ``int(C_in * s)`` per row).
* **RIA** (Zhang et al. 2024) -- score
  ``(|W_ij| / sum_i |W_ij| + |W_ij| / sum_j |W_ij|) * ||X_j||_2 ** a`` with ``a = 0.5``; one
  threshold per layer as the authors' ``prune_ria`` does by default (``per_row=True`` is their
  ``--per_outneuron`` option). A zero row/column sum contributes 0 (the reference divides by it).
* **SparseGPT** (Frantar & Alistarh 2023) -- OBS with ``H = 2/n X^T X`` (float64 accumulation,
  float32 factorisation as the reference): dead inputs (``H_jj = 0``) get ``H_jj = 1`` and
  ``W_:j = 0``; ``H += 0.01 * mean(diag H) * I``; ``U = chol(H^-1)^T`` (upper). Columns are
  processed in blocks of 128; at each block start the mask takes the ``floor(s * C_out * 128)``
  lowest ``w_ij^2 / U_jj^2`` of the block (for N:M, each group of M columns is chosen when the
  loop reaches it, from the updated weights); then column by column
  ``err = w_j[mask] / U_jj``, ``W_:,j: -= err U_j,j:``, and after the block
  ``W_:,rest -= Err U_block,rest`` (IST-DASLab/sparsegpt ``SparseGPT.fasterprune``).
  The reference's ``H`` is ``2/n_sequences X^T X``; OBS is invariant to that scale.
* **OGAS** -- see :class:`OGAS`: per-output-channel sparsities from output energy and
  peak-to-average ratio, Wanda scores inside each row.

Patterns: ``"unstructured"``, or ``"N:M"`` (``0 < N < M``): in each group of M consecutive input
columns of a row the N lowest-scoring weights are zeroed; ``C_in`` must be a multiple of M and the
sparsity is N/M. OGAS's per-row sparsities do not define N:M and reject it.

Count convention. The reference codes threshold with ``score <= sorted[k]``, which removes
``k + 1`` weights (plus any ties) per layer (Magnitude, RIA) or per 128-column block (SparseGPT).
Here ``count="exact"`` (default) removes exactly ``k``; ``count="reference"`` reproduces the
reference rule (used by ``benchmarks/reference_masks.py`` for bit-for-bit comparisons). Wanda
and N:M select exactly ``k`` / ``N`` in both codes.

Statistics (Wanda, RIA, SparseGPT). ``stats="exact"`` (default) sums ``x_tj^2`` / ``X^T X`` over
all tokens in float64, ``batch_size`` windows per forward. ``stats="reference"`` accumulates as the
reference codes do: a float32 running mean over windows (locuslab/wanda ``WrappedGPT``, also
under RIA; IST-DASLab/sparsegpt ``SparseGPT.add_batch``), one window per forward, torch's thread
count in the compress step, and N:M groups chosen by ``torch.topk`` (which of exactly tied scores
it takes is its own rule, not the position). With ``count="reference"`` it reproduces their masks
bit for bit (``benchmarks/reference_masks.py``), where the default's rounding can flip near-ties.

``sparsity == 0`` leaves the model untouched for every method.
"""
from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, field

import numpy as np
import torch
from torch import nn

from repro.assets.devices import input_device
from repro.calib.blocks import Gram, InputSumSq, OutputStats, Timer, sequential, threads
from repro.errors import ReproError, UnknownNameError, check_fraction
from repro.methods.registry import Hyper, Method, Registry, check_params, minmax, n_lowest
from repro.structure.sparsity import fraction_zero, out_in, prunable_linears

COUNTS = ("exact", "reference")
STATS = ("exact", "reference")  # repro's float64 statistics, or the reference codes' arithmetic (see above)


# ---- patterns and masks ----------------------------------------------------------------------

@dataclass(frozen=True)
class Pattern:
    n: int = 0
    m: int = 0  # 0: unstructured

    @property
    def unstructured(self) -> bool:
        return self.m == 0

    def __str__(self) -> str:
        return "unstructured" if self.unstructured else f"{self.n}:{self.m}"


def parse_pattern(pattern: str | Pattern) -> Pattern:
    """``"unstructured"`` or ``"N:M"`` with integers ``0 < N < M``."""
    if isinstance(pattern, Pattern):
        return pattern
    text = str(pattern).strip().lower()
    if text == "unstructured":
        return Pattern()
    parts = text.split(":")
    if len(parts) != 2 or not all(p.isdigit() for p in parts) or not 0 < int(parts[0]) < int(parts[1]):
        raise ReproError(f"pattern must be 'unstructured' or 'N:M' with integers 0 < N < M, got {pattern!r}")
    return Pattern(int(parts[0]), int(parts[1]))


def _lowest(scores: torch.Tensor, k: int, dim: int) -> torch.Tensor:
    """Mask of the ``k`` lowest entries along ``dim``, ties broken by position: exactly the first
    ``k`` of a stable sort, found with ``kthvalue`` (linear time) instead of sorting."""
    if k == 0:
        return torch.zeros_like(scores, dtype=torch.bool)
    v = scores.kthvalue(k, dim=dim, keepdim=True).values
    less, tie = scores < v, scores == v
    need = k - less.sum(dim, keepdim=True)
    return less | (tie & (tie.cumsum(dim) <= need))


def lowest_in_layer(scores: torch.Tensor, k: int, count: str = "exact") -> torch.Tensor:
    """Mask of the ``k`` lowest scores of the whole matrix (``count="reference"``: every score
    ``<= sorted[k]``, the reference codes' rule)."""
    flat = scores.reshape(-1)
    if count == "reference":
        return scores <= flat.kthvalue(k + 1).values  # the value at sorted index k
    return _lowest(flat, k, 0).view_as(scores)


def lowest_per_row(scores: torch.Tensor, k: int | torch.Tensor) -> torch.Tensor:
    """Mask of the ``k`` lowest scores of each row (``k`` an int or one count per row)."""
    if isinstance(k, int):
        return _lowest(scores, k, 1)
    return row_ranks(scores) < k.to(scores.device)[:, None]


def row_ranks(scores: torch.Tensor, order: torch.Tensor | None = None) -> torch.Tensor:
    """Rank of each score within its row (0 = lowest; ties by position)."""
    order = scores.argsort(dim=1, stable=True) if order is None else order
    ar = torch.arange(scores.shape[1], device=scores.device).expand_as(order)
    return torch.empty_like(order).scatter_(1, order, ar)


def lowest_n_of_m(scores: torch.Tensor, n: int, m: int, topk: bool = False) -> torch.Tensor:
    """Mask of the ``n`` lowest scores in each group of ``m`` consecutive columns of each row: the
    first ``n`` of a stable sort (ties by position), or (``topk=True``) the ``n`` that
    ``torch.topk(largest=False)`` returns, as the reference codes select; the two differ only in
    which of exactly tied scores is taken."""
    rows, cols = scores.shape
    groups = scores.reshape(rows, cols // m, m)
    idx = groups.topk(n, dim=-1, largest=False)[1] if topk else groups.argsort(dim=-1, stable=True)[..., :n]
    return torch.zeros_like(groups, dtype=torch.bool).scatter_(-1, idx, True).view(rows, cols)


# ---- methods ---------------------------------------------------------------------------------

class Pruner:
    """One pruning method at one sparsity and pattern. Subclasses set ``name``, ``defaults``
    (their parameters), ``observers`` (what to collect per linear) and ``scores`` or
    ``compress``; :meth:`compress` zeroes ``W`` where :meth:`mask` says so."""

    name = ""
    label = ""
    calibrated = True
    nm = True  # supports N:M patterns
    defaults: dict = {}
    # CPU threads of the compress step (None: torch's). One by default: many small operations, whose
    # barriers can cost more than they save on a small shared CPU (see repro.calib.blocks.threads), and
    # a mask that does not depend on the thread count (OGAS's gamma search with more threads is faster
    # but can settle on another gamma within its tolerance)
    compress_threads: int | None = 1
    batch_size: int | None = None  # windows per forward (None: the caller's)

    def __init__(self, sparsity: float, pattern: str | Pattern = "unstructured", **params):
        check_params("pruning method", self.name, self.defaults, params)
        self.pattern = parse_pattern(pattern)
        if not self.pattern.unstructured:
            nm = self.pattern.n / self.pattern.m
            sparsity = nm if sparsity is None else sparsity
            if abs(check_fraction("sparsity", sparsity) - nm) > 1e-9:
                raise ReproError(f"pattern {self.pattern} removes {nm:g} of the weights; sparsity={sparsity!r} contradicts it")
        self.sparsity = check_fraction("sparsity", sparsity)
        self.params = Hyper({**self.defaults, **params})
        if self.params.get("count", "exact") not in COUNTS:
            raise UnknownNameError("count rule", self.params.count, COUNTS)
        stats = self.params.pop("stats", "exact")
        if stats not in STATS:
            raise UnknownNameError("stats rule", stats, STATS)
        # the one place that decides the reference codes' arithmetic: observers' float32 running means,
        # one window per forward, torch's threads, topk's N:M ties
        self.running = stats == "reference"
        if "stats" in self.defaults:
            self.params["stats"] = stats
        if self.running:
            self.batch_size, self.compress_threads = 1, None
        self.timer = Timer()

    def observers(self, name: str, module: nn.Module) -> list:
        return []

    def scores(self, w: torch.Tensor, obs: list) -> torch.Tensor:  # pragma: no cover - abstract
        raise NotImplementedError

    def check(self, name: str, w: torch.Tensor) -> None:
        if not self.pattern.unstructured and w.shape[1] % self.pattern.m:
            raise ReproError(f"{name}: {w.shape[1]} input features are not a multiple of M={self.pattern.m} "
                             f"(pattern {self.pattern})")

    def mask(self, w: torch.Tensor, obs: list) -> torch.Tensor:
        """Default selection: N:M groups, else one threshold per layer."""
        s = self.scores(w, obs)
        if not self.pattern.unstructured:
            return lowest_n_of_m(s, self.pattern.n, self.pattern.m, topk=self.running)
        return lowest_in_layer(s, n_lowest(self.sparsity, s.numel()), self.params.get("count", "exact"))

    def compress(self, name: str, module: nn.Module, obs: list) -> dict:
        """Prune ``module`` in place from its observers; returns per-layer extras."""
        w = out_in(module)
        self.check(name, w)
        w[self.mask(w.float(), obs).to(w.device)] = 0
        return {}


class Magnitude(Pruner):
    name, label, calibrated = "magnitude", "Magnitude", False
    defaults = {"count": "exact"}

    def scores(self, w, obs):
        return w.abs()


class Wanda(Pruner):
    name, label = "wanda", "Wanda"
    defaults = {"stats": "exact"}

    def observers(self, name, module):
        return [InputSumSq(running=self.running)]

    def scores(self, w, obs):
        return w.abs() * obs[0].norm.to(w)[None, :]

    def mask(self, w, obs):
        s = self.scores(w, obs)
        if not self.pattern.unstructured:
            return lowest_n_of_m(s, self.pattern.n, self.pattern.m, topk=self.running)
        return lowest_per_row(s, n_lowest(self.sparsity, s.shape[1]))


class RIA(Pruner):
    name, label = "ria", "RIA"
    defaults = {"a": 0.5, "per_row": False, "count": "exact", "stats": "exact"}

    def observers(self, name, module):
        return [InputSumSq(running=self.running)]

    def scores(self, w, obs):
        a = w.abs()
        col, row = a.sum(0, keepdim=True), a.sum(1, keepdim=True)
        rel = torch.where(col > 0, a / col, 0.0) + torch.where(row > 0, a / row, 0.0)
        return rel * obs[0].norm.to(w)[None, :] ** float(self.params.a)

    def mask(self, w, obs):
        if self.pattern.unstructured and self.params.per_row:
            s = self.scores(w, obs)
            return lowest_per_row(s, n_lowest(self.sparsity, s.shape[1]))
        return super().mask(w, obs)


class SparseGPT(Pruner):
    name, label = "sparsegpt", "SparseGPT"
    defaults = {"blocksize": 128, "percdamp": 0.01, "count": "exact", "stats": "exact"}

    def observers(self, name, module):
        return [Gram(running=self.running)]

    def compress(self, name, module, obs):
        view = out_in(module)
        self.check(name, view)
        W, n, m = view.float().clone(), self.pattern.n, self.pattern.m
        H = obs[0].hessian
        dead = H.diagonal() == 0
        H[dead, dead] = 1
        W[:, dead] = 0
        H.diagonal().add_(self.params.percdamp * torch.diag(H).mean())  # contiguous mean, as the reference
        try:
            U = torch.linalg.cholesky(torch.cholesky_inverse(torch.linalg.cholesky(H)), upper=True)
        except torch.linalg.LinAlgError:
            raise ReproError(f"{name}: the damped Hessian is not positive definite; raise percdamp") from None
        bs, count = int(self.params.blocksize), self.params.count
        for i1 in range(0, W.shape[1], bs):
            i2 = min(i1 + bs, W.shape[1])
            U1 = U[i1:i2, i1:i2]
            d = U1.diagonal()
            # the block transposed, [columns, rows], so that each step reads and updates whole
            # rows; the arithmetic (and so every bit) is the reference's
            Wt = W[:, i1:i2].T.contiguous()
            err = torch.zeros_like(Wt)
            if self.pattern.unstructured:
                mask = lowest_in_layer(Wt ** 2 / d[:, None] ** 2, n_lowest(self.sparsity, Wt.numel()), count)
            else:
                mask = torch.zeros_like(Wt, dtype=torch.bool)
            for i in range(i2 - i1):
                if m and i % m == 0:
                    mask[i:i + m] = lowest_n_of_m((Wt[i:i + m] ** 2 / d[i:i + m, None] ** 2).T, n, m, self.running).T
                e = torch.where(mask[i], Wt[i], 0.0) / d[i]  # (w - q) / U_jj
                Wt[i:] -= U1[i, i:, None] * e[None, :]
                err[i] = e
            W[:, i1:i2] = Wt.masked_fill_(mask, 0.0).T   # column j equals q_j once its own update ran
            W[:, i2:] -= err.T.contiguous() @ U[i1:i2, i2:]
        view.copy_(W)
        return {}


def channel_importance(rms: np.ndarray, peak_ratio: np.ndarray, lam: float) -> np.ndarray:
    """``I_i = (1 - lam) minmax(log1p E_i) + lam minmax(log1p P_i)`` in [0, 1]."""
    return (1 - lam) * minmax(np.log1p(rms)) + lam * minmax(np.log1p(peak_ratio))


def channel_sparsity(importance: np.ndarray, gamma: float, target: float, s_min: float,
                     s_max: float) -> tuple[np.ndarray, float, bool]:
    """``s_i = clamp(s_min + alpha (1 - I_i)^gamma, s_min, s_max)`` with ``alpha`` found by
    bisection (Brent's ``brentq``) so that ``mean_i s_i = target``. Returns ``(s, alpha,
    alpha_at_bound)``; at the bound (target above what ``s_max`` allows) every channel with
    ``I_i < 1`` sits at ``s_max`` and the mean falls short of the target."""
    from scipy.optimize import brentq

    base = np.clip(1.0 - importance, 0.0, 1.0) ** gamma

    def s_of(alpha: float) -> np.ndarray:
        return np.clip(s_min + alpha * base, s_min, s_max)

    if target <= s_min or not (base > 0).any():
        return s_of(0.0), 0.0, target > s_min
    hi = (s_max - s_min) / base[base > 0].min()
    if s_of(hi).mean() <= target:
        return s_of(hi), float(hi), s_of(hi).mean() < target - 1e-12
    alpha = brentq(lambda a: s_of(a).mean() - target, 0.0, hi, xtol=1e-14, rtol=1e-12)
    return s_of(alpha), float(alpha), False


def row_counts(s: np.ndarray, cols: int, rounding: str, target: float) -> np.ndarray:
    """Weights to remove per row. ``"paper"``: ``floor(cols * s_i)``. ``"exact"``: largest
    remainder apportionment of ``round(target * rows * cols)`` with quotas proportional to
    ``s_i`` (each at most ``cols``), so the layer's total is exact."""
    if rounding == "paper":
        return np.floor(cols * s).astype(np.int64)
    total = math.floor(target * len(s) * cols + 0.5)
    q = s * cols * (total / max((s * cols).sum(), 1e-300))
    for _ in range(len(s)):  # clip at cols and hand the excess to the other rows
        over = q > cols
        if not over.any():
            break
        q[over] = cols
        free = q < cols
        q[free] += (total - q.sum()) * q[free] / q[free].sum()
    k = np.floor(q + 1e-9).astype(np.int64)
    k = np.minimum(k, cols)
    short = total - int(k.sum())
    order = np.argsort(-(q - k), kind="stable")
    if short > 0:
        order = order[k[order] < cols][:short]
        k[order] += 1
    elif short < 0:
        order = order[::-1]
        order = order[k[order] > 0][:-short]
        k[order] -= 1
    return k


def auto_s_max(target: float, headroom: float = 0.1) -> float:
    """Default ``S_max``: the paper's 0.6 up to a 50% target; above it, the paper's own headroom
    (0.6 - 0.5 = 0.1) above the target, capped at 0.95: ``max(0.6, min(0.95, target + headroom))``."""
    return max(0.6, min(0.95, target + headroom))


class OGAS(Pruner):
    """OGAS (paper 2, section 2): output-guided adaptive per-channel sparsity.

    For each linear, from its dense outputs ``y`` over the N windows x T tokens of calibration:

    * energy ``E_i`` = RMS of output channel ``i`` over all tokens;
    * peak ratio ``P_i = mean_k max_t |y_kti| / (E_ki + 1e-9)``, ``E_ki`` the RMS within window k;
    * importance ``I_i = (1 - lam) minmax(log1p E)_i + lam minmax(log1p P)_i``;
    * channel sparsity ``s_i = clamp(S_min + alpha (1 - I_i)^gamma, S_min, S_max)``, ``alpha`` by
      bisection so that ``mean_i s_i`` equals the target (important channels keep more weights);
    * inside row ``i``, the ``k_i`` lowest Wanda scores ``|W_ij| ||X_j||_2`` are removed, with
      ``k_i = floor(C_in s_i)`` (``rounding="paper"``, so the layer lands slightly under the
      target) or the largest-remainder split of ``round(target * C_out * C_in)``
      (``rounding="exact"``).

    ``gamma="search"`` picks gamma per layer by bounded Brent/golden-section search
    (``scipy.optimize.minimize_scalar(method="bounded")``, ``xatol=gamma_tol``) on
    ``gamma_bounds``, minimising ``||Y_dense - Y_pruned||_F / ||Y_dense||_F`` on the first
    ``subset`` calibration windows (36 in the paper; all windows when there are fewer). The error
    is evaluated exactly through the Gram matrix of that subset:
    ``||X (W - W_p)^T||_F^2 = sum_i d_i^T (X^T X) d_i`` with ``d_i`` row i's removed weights, and
    ``||Y_dense||_F^2`` from the observed outputs (bias included), so each candidate costs one
    ``[C_out, C_in] x [C_in, C_in]`` product instead of a pass over the windows. A float gamma is
    used as is (no Gram needed). ``gamma_at_bound`` flags a result within ``gamma_tol`` of an end.

    ``S_min = 0.01``; ``S_max`` is 0.6 at the paper's 50% target. The paper does not say what
    S_max is above 60%; ``s_max="auto"`` uses :func:`auto_s_max`
    (``max(0.6, min(0.95, target + s_max_headroom))``, headroom 0.1 as at 50%); pass a float to
    fix it. The target must lie in ``[s_min, s_max)``.

    Settings: LLaMA (``lam=0.4, gamma="search"``, the default and ``"ogas-llama"``), Mistral
    (``lam=0.2, gamma=0.2``, ``"ogas-mistral"``); ablations energy-only ``"ogas-energy"``
    (``lam=0``) and PAPR-only ``"ogas-papr"`` (``lam=1``).
    """

    name, label, nm = "ogas", "OGAS", False
    defaults = {"lam": 0.4, "gamma": "search", "s_min": 0.01, "s_max": "auto", "s_max_headroom": 0.1,
                "rounding": "paper", "subset": 36, "gamma_bounds": (0.05, 1.1), "gamma_tol": 0.05}

    def __init__(self, sparsity, pattern="unstructured", **params):
        super().__init__(sparsity, pattern, **params)
        p = self.params
        if not self.pattern.unstructured:
            raise ReproError("OGAS gives each output channel its own sparsity, which does not define an N:M "
                             f"pattern; use pattern='unstructured' (got {self.pattern})")
        if p.rounding not in ("paper", "exact"):
            raise UnknownNameError("OGAS rounding", p.rounding, ("paper", "exact"))
        if not 0.0 <= float(p.lam) <= 1.0:
            raise ReproError(f"OGAS lam must be in [0, 1], got {p.lam!r}")
        if p.gamma != "search" and not (isinstance(p.gamma, (int, float)) and p.gamma > 0):
            raise ReproError(f"OGAS gamma must be 'search' or a positive number, got {p.gamma!r}")
        if int(p.subset) < 1:
            raise ReproError(f"OGAS subset must be at least 1 window, got {p.subset!r}")
        self.s_min = check_fraction("s_min", p.s_min)
        self.s_max = auto_s_max(self.sparsity, p.s_max_headroom) if p.s_max == "auto" else float(p.s_max)
        if self.sparsity > 0 and not self.s_min <= self.sparsity < self.s_max <= 1.0:
            raise ReproError(f"OGAS needs s_min <= sparsity < s_max <= 1; got s_min={self.s_min:g}, "
                             f"sparsity={self.sparsity:g}, s_max={self.s_max:g}")

    @property
    def search(self) -> bool:
        return self.params.gamma == "search"

    def observers(self, name, module):
        subset = int(self.params.subset)
        return [InputSumSq(), OutputStats(limit=subset)] + ([Gram(limit=subset)] if self.search else [])

    def layer_plan(self, w: torch.Tensor, obs: list):
        """``(energy, peak_ratio, importance, plan)`` of one layer (``w`` its dense ``[C_out, C_in]``
        weights): ``plan(gamma)`` -> ``(s, alpha, alpha_at_bound, mask)``, kept per gamma unless ``keep=False``."""
        p = self.params
        energy, peak_ratio = obs[1].rms.cpu().numpy(), obs[1].peak_ratio.cpu().numpy()
        imp = channel_importance(energy, peak_ratio, float(p.lam))
        ranks = row_ranks(w.abs() * obs[0].norm.to(w)[None, :])
        cache: dict[float, tuple] = {}

        def plan(gamma: float, keep: bool = True):
            if gamma in cache:
                return cache[gamma]
            s, alpha, at_bound = channel_sparsity(imp, gamma, self.sparsity, self.s_min, self.s_max)
            k = torch.as_tensor(row_counts(s, w.shape[1], p.rounding, self.sparsity), device=w.device)
            out = (s, alpha, at_bound, ranks < k[:, None])
            if keep:
                cache[gamma] = out
            return out
        return energy, peak_ratio, imp, plan

    def error_of(self, w: torch.Tensor, obs: list):
        """``mask -> ||X (W - W_p)^T||_F / ||Y_dense||_F`` over the first ``subset`` windows, through
        their Gram matrix (the last observer) and ``||Y||_F^2`` (see the class docstring)."""
        gram, y2 = obs[2].gram.to(w), max(obs[1].subset_sumsq, 1e-300)

        def rel_error(mask: torch.Tensor) -> float:
            d = w * mask
            return math.sqrt(max(((d @ gram) * d).sum().item(), 0.0) / y2)
        return rel_error

    def search_gamma(self, rel_error):
        """``minimize_scalar``'s result of ``rel_error(gamma)`` on ``gamma_bounds`` (tolerance ``gamma_tol``)."""
        from scipy.optimize import minimize_scalar

        lo, hi = self.params.gamma_bounds
        return minimize_scalar(rel_error, bounds=(lo, hi), method="bounded", options={"xatol": self.params.gamma_tol})

    def compress(self, name, module, obs):
        view, p = out_in(module), self.params
        w = view.float()
        energy, peak_ratio, imp, plan = self.layer_plan(w, obs)
        extras: dict = {"subset_windows": min(int(p.subset), obs[1].n_windows)}
        if self.search:
            t0 = time.perf_counter()
            error = self.error_of(w, obs)
            res = self.search_gamma(lambda gamma: error(plan(gamma)[3]))
            gamma, (lo, hi) = float(res.x), p.gamma_bounds
            extras.update(rel_error=float(res.fun), gamma_evals=int(res.nfev),
                          gamma_at_bound=bool(gamma - lo < p.gamma_tol or hi - gamma < p.gamma_tol))
            self.timer.add("gamma_search", time.perf_counter() - t0)
        else:
            gamma = float(p.gamma)
        s, alpha, alpha_at_bound, mask = plan(gamma)
        view[mask.to(view.device)] = 0
        extras.update(gamma=gamma, alpha=alpha, alpha_at_bound=bool(alpha_at_bound), s_min=self.s_min,
                      s_max=self.s_max, channel_sparsity=s, energy=energy, peak_ratio=peak_ratio,
                      channel_summary={"min": float(s.min()), "mean": float(s.mean()), "max": float(s.max()),
                                       "std": float(s.std())})
        return extras


def _setting(name: str, label: str, **over) -> type:
    return type(f"OGAS_{name.replace('-', '_')}", (OGAS,), {"name": name, "label": label,
                                                            "defaults": {**OGAS.defaults, **over}})


OGAS_SETTINGS = {"llama": {"lam": 0.4, "gamma": "search"}, "mistral": {"lam": 0.2, "gamma": 0.2}}

def _entry(cls: type[Pruner], paper: bool = True) -> Method:
    return Method(cls.name, cls.label, cls, dict(cls.defaults), "activations" if cls.calibrated else None,
                  nm=cls.nm, paper=paper)


PRUNERS = Registry("pruning method", [_entry(c) for c in (Magnitude, Wanda, RIA, SparseGPT, OGAS)] + [
    _entry(_setting("ogas-llama", "OGAS (LLaMA setting)", **OGAS_SETTINGS["llama"])),
    _entry(_setting("ogas-mistral", "OGAS (Mistral setting)", **OGAS_SETTINGS["mistral"])),
    _entry(_setting("ogas-energy", "OGAS energy-only (lambda 0)", lam=0.0)),
    _entry(_setting("ogas-papr", "OGAS PAPR-only (lambda 1)", lam=1.0)),
])


def get_pruner(name: str) -> type[Pruner]:
    """The pruner class of ``name`` (see ``PRUNERS``)."""
    return PRUNERS[name].impl


def ogas_setting(name: str) -> dict:
    """Parameters of a named OGAS setting (``"llama"`` or ``"mistral"``)."""
    if name not in OGAS_SETTINGS:
        raise UnknownNameError("OGAS setting", name, OGAS_SETTINGS)
    return dict(OGAS_SETTINGS[name])


# ---- entry point -----------------------------------------------------------------------------

@dataclass
class PruneReport:
    method: str
    pattern: str
    sparsity: float                 # target
    params: dict
    layers: dict[str, float]        # qualified name -> achieved fraction of zero weights
    overall: float                  # zeros / weights over all pruned linears
    seconds: float
    timings: dict[str, float]       # capture, observe (forwards), statistics, compress (incl. gamma_search), propagate
    extras: dict[str, dict] = field(default_factory=dict)
    nsamples: int = 0
    seqlen: int = 0

    def to_dict(self) -> dict:
        """JSON-ready; per-channel arrays are left out (their summaries stay)."""
        d = asdict(self)
        d["extras"] = {n: {k: v for k, v in e.items() if not isinstance(v, np.ndarray)} for n, e in self.extras.items()}
        return d


def prune_model(model: nn.Module, method: str | Pruner, sparsity: float | None, calib_ids: torch.Tensor | None = None,
                pattern: str = "unstructured", batch_size: int = 4, progress: bool = True,
                compress_threads: int | None | str = "method", **params) -> PruneReport:
    """Prune every linear layer inside the transformer blocks of ``model`` in place.

    ``calib_ids``: calibration windows ``[nsamples, seqlen]`` (token ids; ignored by, and optional
    for, ``magnitude``). ``sparsity`` may be None with an N:M pattern (then N/M). ``batch_size``:
    windows per forward (one with ``stats="reference"``). ``compress_threads``: CPU threads of the
    per-layer compress step (:func:`repro.calib.blocks.threads`; None keeps torch's setting;
    ``"method"``: the method's own ``compress_threads``). ``params``: the method's parameters (see
    ``PRUNERS[method].defaults``). ``method`` may be a :class:`Pruner` instance instead of a name (it carries its
    own sparsity, pattern and parameters: ``params`` must then be empty).
    """
    if isinstance(method, Pruner) and params:
        raise ReproError("prune_model: a Pruner instance carries its own parameters; pass none beside it")
    pruner = method if isinstance(method, Pruner) else get_pruner(method)(sparsity, pattern, **params)
    if compress_threads == "method":
        compress_threads = pruner.compress_threads
    if pruner.calibrated and calib_ids is None:
        raise ReproError(f"pruning method {method!r} needs calibration windows (calib_ids)")
    for name, module in prunable_linears(model).items():  # fail before anything is pruned
        pruner.check(name, out_in(module))
    timer = pruner.timer = Timer(input_device(model))
    ids = torch.as_tensor(calib_ids) if calib_ids is not None else None
    was_training = model.training
    model.eval()
    t0 = time.perf_counter()
    extras: dict[str, dict] = {}
    try:
        if pruner.sparsity == 0:
            pass
        elif pruner.calibrated:
            extras = sequential(model, ids, pruner, batch_size=pruner.batch_size or batch_size, progress=progress,
                                timer=timer, compress_threads=compress_threads)
        else:
            with timer("compress"), torch.inference_mode(), threads(compress_threads):
                extras = {n: pruner.compress(n, m, []) for n, m in prunable_linears(model).items()}
    finally:
        model.train(was_training)
    seconds = time.perf_counter() - t0
    mods = prunable_linears(model)
    zeros = sum((m.weight.data == 0).sum().item() for m in mods.values())
    return PruneReport(pruner.name, str(pruner.pattern), pruner.sparsity, pruner.params,
                       {n: fraction_zero(m) for n, m in mods.items()},
                       zeros / sum(m.weight.numel() for m in mods.values()), seconds, dict(timer.seconds), extras,
                       int(ids.shape[0]) if ids is not None and ids.ndim == 2 else 0,
                       int(ids.shape[1]) if ids is not None and ids.ndim == 2 else 0)
