"""Block-sequential calibration: the data pipeline under Wanda, SparseGPT, RIA and OGAS.

The reference implementations (locuslab/wanda ``prune_wanda``, IST-DASLab/sparsegpt
``llama_sequential``) prune a decoder one transformer block at a time, and so does this module:

1. **capture** -- run the embeddings on the calibration windows (``[nsamples, seqlen]`` token ids,
   in batches of ``batch_size``) and record what every block is called with: block 0's input
   hidden states, and each block's other positional and keyword arguments (attention mask,
   position ids, rotary position embeddings, cache position, ...). The references do this with a
   ``Catcher`` module swapped in for block 0 that raises after recording; here forward pre-hooks
   (``with_kwargs=True``) record and the pre-hook of the *last* block raises the sentinel, while
   the blocks' ``forward`` are temporarily pass-throughs. Recording every block, not only block 0,
   matters for families whose blocks get different arguments (Gemma-3 and Qwen2 pass each block
   the sliding-window or the full causal mask, and Gemma-3 a different rotary table, by
   ``config.layer_types``).
2. for each block ``i`` in turn:

   a. **observe** -- run block ``i`` on the current inputs with hooks on its prunable linear
      layers; each hook feeds the layer's input ``X`` (and output ``Y`` when asked) to the
      *observers* the method attached to that layer (:class:`InputSumSq`: ``sum_t x_tj^2``;
      :class:`Gram`: ``X^T X``; :class:`OutputStats`: output energy and peaks). The pass stops
      (sentinel exception) as soon as every hooked layer has been seen, so the rest of the block,
      typically the down projection of input-only methods, is not computed;
   b. **compress** -- the method prunes each linear of the block from its observers; the
      observers are then dropped: an observation lives only inside the block pass where it was
      taken (there is no memo across blocks), so no statistic of the dense model is ever reused
      after pruning;
   c. **propagate** -- run block ``i`` again, now *with the pruned (and, for SparseGPT, updated)
      weights*, and its outputs become block ``i+1``'s inputs (skipped after the last block).

Everything stays on the block's device, in the model's dtype, under ``torch.inference_mode``;
observers accumulate in float32/float64 (``running=True``: the reference codes' float32 running
means over windows, one window at a time; a method's ``stats="reference"``). Layers whose
inputs are the very same tensor (q/k/v, gate/up) share the per-batch work of input-only
observers with equal ``key``.

A *method* is any object with ``observers(name, module) -> list[Observer]`` (what to collect for
one linear; ``[]`` for none) and ``compress(name, module, observers) -> dict`` (prune the module in
place; returns per-layer extras), as in llm-compressor's split of pipelines and modifiers.
"""
from __future__ import annotations

import math
import time
from collections import defaultdict
from contextlib import contextmanager
from dataclasses import dataclass

import torch
from torch import nn

from repro.arch import adapter as get_adapter
from repro.assets.devices import input_device, sync
from repro.calib.stats import InputStats, feature_sumsq
from repro.errors import ReproError
from repro.progress import tqdm


class _Stop(Exception):
    """Sentinel raised from a hook to end a forward pass early."""


class Timer:
    """Seconds per phase, accumulated (``with timer("phase"): ...`` or ``timer.add``)."""

    def __init__(self, device: torch.device | str = "cpu"):
        self.seconds: dict[str, float] = defaultdict(float)
        self.device = device

    @contextmanager
    def __call__(self, phase: str):
        sync(self.device)
        t0 = time.perf_counter()
        try:
            yield
        finally:
            sync(self.device)
            self.seconds[phase] += time.perf_counter() - t0

    def add(self, phase: str, seconds: float) -> None:
        self.seconds[phase] += seconds


# ---- observers -------------------------------------------------------------------------------

class Observer:
    """One statistic of one linear layer, accumulated over the batches of one block pass.

    ``measure(x, y, start)`` computes a batch's contribution (``x`` the layer input
    ``[b, T, C_in]``, ``y`` its output ``[b, T, C_out]`` or None, ``start`` the index of the batch's
    first window); ``add`` accumulates it. Input-only observers (``needs_output = False``) with
    equal ``key`` compute ``measure`` once per input tensor and share it.
    """

    needs_output = False

    @property
    def key(self) -> tuple:
        return (type(self).__name__,)

    def measure(self, x: torch.Tensor, y: torch.Tensor | None, start: int):  # pragma: no cover - abstract
        raise NotImplementedError

    def add(self, m) -> None:  # pragma: no cover - abstract
        raise NotImplementedError


class InputSumSq(InputStats, Observer):
    """``sumsq_j = sum_t x_tj^2`` over all calibration tokens (float64, each batch's squares summed
    in float32: :func:`~repro.calib.stats.feature_sumsq`), and the token count. Wanda's
    ``||X_j||_2 = sqrt(sumsq_j)``.

    ``running=True`` accumulates as locuslab/wanda's ``WrappedGPT.add_batch`` does instead (the
    ``stats="reference"`` of Wanda and RIA): a float32 running mean over windows of
    ``||X_j||^2``, window by window (``sumsq *= n / (n + 1)``, then ``+= ||x_j||^2 / (n + 1)``);
    ``sumsq`` is then that mean and ``n`` counts windows. A constant factor per layer, which Wanda's
    and RIA's selections ignore; only the float rounding differs."""

    def __init__(self, running: bool = False):
        super().__init__()
        self.running = running

    @property
    def key(self) -> tuple:
        return ("InputSumSq", self.running)

    def measure(self, x, y, start):
        if self.running:  # one window at a time, each [C_in, T] as the reference transposes it
            return [torch.norm(xj.reshape(-1, xj.shape[-1]).t().float(), p=2, dim=1) ** 2 for xj in x]
        return feature_sumsq(x, torch.float32)

    def add(self, m) -> None:
        if self.running:
            for sq in m:
                self.sumsq = torch.zeros_like(sq) if self.sumsq is None else self.sumsq
                self.sumsq *= self.n / (self.n + 1)
                self.n += 1
                self.sumsq += sq / self.n
            return
        super().add(m)


class Gram(Observer):
    """``G = X^T X`` (float64 accumulator of float32 batch products) over the tokens of the first
    ``limit`` windows (all when None), and their count.

    ``running=True`` accumulates as IST-DASLab/sparsegpt's ``SparseGPT.add_batch`` does instead
    (SparseGPT's ``stats="reference"``): float32, window by window, ``G *= n / (n + 1)``, then
    ``+= (sqrt(2 / (n + 1)) X_j)^T (sqrt(2 / (n + 1)) X_j)``; ``gram`` is then the reference's
    ``H = 2/n_windows X^T X`` itself and ``n`` counts windows."""

    def __init__(self, limit: int | None = None, running: bool = False):
        self.limit, self.running = limit, running
        self.gram: torch.Tensor | None = None
        self.n = 0

    @property
    def key(self) -> tuple:
        return ("Gram", self.limit, self.running)

    def measure(self, x, y, start):
        if self.limit is not None:
            x = x[:max(0, min(len(x), self.limit - start))]
        if self.running:  # window start + j + 1 of the running mean, [C_in, T] as the reference transposes it
            scaled = [math.sqrt(2 / (start + j + 1)) * xj.reshape(-1, xj.shape[-1]).t().float()
                      for j, xj in enumerate(x)]
            return [s.matmul(s.t()) for s in scaled]
        x = x.reshape(-1, x.shape[-1]).float()
        return (x.T @ x).double() if len(x) else None, x.shape[0]

    def add(self, m) -> None:
        if self.running:
            for g in m:
                self.gram = torch.zeros_like(g) if self.gram is None else self.gram
                self.gram *= self.n / (self.n + 1)
                self.n += 1
                self.gram += g
            return
        g, n = m
        if g is not None:
            self.gram = g if self.gram is None else self.gram.add_(g)
        self.n += n

    @property
    def hessian(self) -> torch.Tensor:
        """SparseGPT's ``H = 2/n X^T X`` in float32 (a new tensor)."""
        return self.gram.clone() if self.running else (self.gram * (2.0 / self.n)).float()


class OutputStats(Observer):
    """Per output channel ``i`` (float64): ``sumsq_i = sum_{k,t} y_kti^2`` over all tokens, and
    ``papr_i = sum_k max_t |y_kti| / (E_ki + eps)`` with ``E_ki = sqrt(mean_t y_kti^2)`` the RMS
    within window ``k`` (OGAS's energy and peak-to-average inputs); plus ``subset_sumsq``, the
    total ``||Y||_F^2`` over the first ``limit`` windows."""

    needs_output = True

    def __init__(self, limit: int | None = None, eps: float = 1e-9):
        self.limit, self.eps = limit, eps
        self.sumsq = self.papr = None
        self.n_tokens = self.n_windows = 0
        self.subset_sumsq = 0.0

    def measure(self, x, y, start):
        y = y.float()
        sq = y.square()
        per_window = sq.sum(1)                                   # [b, C]
        rms = (per_window / y.shape[1]).sqrt()
        peak = y.abs().amax(1)
        keep = len(y) if self.limit is None else max(0, min(len(y), self.limit - start))
        return (per_window.sum(0).double(), (peak / (rms + self.eps)).sum(0).double(), y.shape[0] * y.shape[1],
                y.shape[0], per_window[:keep].sum().item())

    def add(self, m) -> None:
        sumsq, papr, n_tokens, n_windows, subset = m
        self.sumsq = sumsq if self.sumsq is None else self.sumsq + sumsq
        self.papr = papr if self.papr is None else self.papr + papr
        self.n_tokens += n_tokens
        self.n_windows += n_windows
        self.subset_sumsq += subset

    @property
    def rms(self) -> torch.Tensor:
        """``E_i``: RMS of channel ``i`` over all calibration tokens."""
        return (self.sumsq / self.n_tokens).sqrt()

    @property
    def peak_ratio(self) -> torch.Tensor:
        """``P_i``: mean over windows of max_t |y| / RMS within the window."""
        return self.papr / self.n_windows


# ---- capture and replay ----------------------------------------------------------------------

@dataclass
class Call:
    """How the model calls one block on one batch: everything but the hidden states."""
    args: tuple       # positional arguments after the hidden states
    kwargs: dict
    keyword: bool     # hidden states passed as ``hidden_states=`` rather than positionally


@dataclass
class Batch:
    """One batch of calibration windows at the current block: its hidden states and, per block,
    the arguments the model passes that block."""
    hidden: torch.Tensor
    calls: list[Call]
    start: int        # index of the batch's first window


def _to(obj, device: torch.device):
    if isinstance(obj, torch.Tensor):
        return obj.to(device)
    if isinstance(obj, (tuple, list)):
        return type(obj)(_to(o, device) for o in obj)
    if isinstance(obj, dict):
        return {k: _to(v, device) for k, v in obj.items()}
    return obj


def _device(module: nn.Module) -> torch.device:
    return next(module.parameters()).device


@contextmanager
def threads(n: int | None):
    """Run the body with ``n`` intra-op CPU threads (None: unchanged). The compress step issues
    many small tensor operations; on a shared CPU each one that uses several OpenMP threads
    waits at a barrier for a descheduled thread, so one thread is often faster there
    (``benchmarks/prune_speed.py`` measures it on a given machine)."""
    old = torch.get_num_threads()
    if n is not None:
        torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(old)


def _pass_through(*args, **kwargs):
    return args[0] if args else kwargs["hidden_states"]


@torch.inference_mode()
def capture(model: nn.Module, ids: torch.Tensor, batch_size: int = 4, layers: nn.ModuleList | None = None) -> list[Batch]:
    """Block 0's inputs and every block's call arguments for the windows ``ids`` [n, seqlen]."""
    ids = torch.as_tensor(ids)
    if ids.ndim != 2 or len(ids) == 0 or ids.shape[1] == 0:
        raise ReproError(f"calibration ids must be a non-empty [nsamples, seqlen] tensor, got shape {tuple(ids.shape)}")
    if batch_size < 1:
        raise ReproError(f"batch_size must be at least 1, got {batch_size}")
    layers = get_adapter(model).layers if layers is None else layers
    seen: dict[int, tuple] = {}

    def recorder(i: int):
        def hook(module, args, kwargs):
            seen[i] = (args, dict(kwargs))
            if i == len(layers) - 1:
                raise _Stop
        return hook

    handles = [layer.register_forward_pre_hook(recorder(i), with_kwargs=True) for i, layer in enumerate(layers)]
    own_forward = [layer.__dict__.get("forward") for layer in layers]  # accelerate may have set one
    for layer in layers:
        layer.forward = _pass_through
    batches, device = [], input_device(model)
    try:
        for start in range(0, len(ids), batch_size):
            seen.clear()
            try:
                model(input_ids=ids[start:start + batch_size].to(device), use_cache=False)
            except _Stop:
                pass
            if len(seen) != len(layers):
                raise ReproError(f"{type(model).__name__} did not call each of its {len(layers)} blocks once")
            calls, first = [], None
            for i in range(len(layers)):
                args, kwargs = seen[i]
                keyword = not args
                hidden = kwargs.pop("hidden_states") if keyword else args[0]
                first = hidden if i == 0 else first
                calls.append(Call(tuple(args[1:]), kwargs, keyword))
            batches.append(Batch(first, calls, start))
    finally:
        for h in handles:
            h.remove()
        for layer, fwd in zip(layers, own_forward):
            if fwd is None:
                del layer.forward
            else:
                layer.forward = fwd
    return batches


def call_block(block: nn.Module, i: int, batch: Batch) -> torch.Tensor:
    """Run block ``i`` on ``batch`` as the model would; returns its output hidden states."""
    c = batch.calls[i]
    dev = _device(block)
    hidden, args, kwargs = batch.hidden, c.args, c.kwargs
    if hidden.device != dev:
        hidden, args, kwargs = hidden.to(dev), _to(args, dev), _to(kwargs, dev)
    out = block(hidden_states=hidden, **kwargs) if c.keyword else block(hidden, *args, **kwargs)
    return out[0] if isinstance(out, (tuple, list)) else out


@torch.inference_mode()
def propagate(block: nn.Module, i: int, batches: list[Batch]) -> None:
    """Replace every batch's hidden states by block ``i``'s outputs (with its current weights)."""
    for b in batches:
        b.hidden = call_block(block, i, b)


@torch.inference_mode()
def observe(block: nn.Module, i: int, linears: dict[str, nn.Module], observers: dict[str, list[Observer]],
            batches: list[Batch], timer: Timer | None = None) -> None:
    """Run block ``i`` on every batch, feeding each hooked linear's input (and output) to its
    observers; a batch's pass ends once every hooked linear has been seen."""
    timer = timer or Timer()
    hooked = {n: m for n, m in linears.items() if observers.get(n)}
    if not hooked:
        return
    memo: dict = {}          # (id(x), key) -> shared measurement, for one batch; keeps x alive
    state: dict = {}

    def feed(name: str, x: torch.Tensor, y: torch.Tensor | None) -> None:
        t0 = time.perf_counter()
        b, t = state["shape"]
        given = x
        if x.ndim == 2:  # OPT flattens [b, T, d] to [b*T, d] around its MLP
            x = x.view(b, t, -1)
            y = None if y is None else y.view(b, t, -1)
        for ob in observers[name]:
            if ob.needs_output:
                ob.add(ob.measure(x, y, state["start"]))
                continue
            k = (id(given), ob.key)
            if k not in memo:
                memo[k] = (given, ob.measure(x, None, state["start"]))
            ob.add(memo[k][1])
        timer.add("statistics", time.perf_counter() - t0)
        state["remaining"].discard(name)
        if not state["remaining"]:
            raise _Stop

    def pre(name):
        return lambda module, args: feed(name, args[0], None)

    def post(name):
        return lambda module, args, output: feed(name, args[0], output)

    handles = []
    for name, module in hooked.items():
        if any(ob.needs_output for ob in observers[name]):
            handles.append(module.register_forward_hook(post(name)))
        else:
            handles.append(module.register_forward_pre_hook(pre(name)))
    try:
        for b in batches:
            state["start"], state["remaining"], state["shape"] = b.start, set(hooked), b.hidden.shape[:2]
            memo.clear()
            try:
                call_block(block, i, b)
            except _Stop:
                pass
            if state["remaining"]:
                raise ReproError(f"block {i}: {', '.join(sorted(state['remaining']))} never ran")
    finally:
        memo.clear()
        for h in handles:
            h.remove()


def qualified_names(model: nn.Module) -> dict[int, str]:
    """id(module) -> its dotted name in ``model``."""
    return {id(m): n for n, m in model.named_modules()}


def sequential(model: nn.Module, ids: torch.Tensor, method, batch_size: int = 4, progress: bool = True,
               timer: Timer | None = None, compress_threads: int | None = 1) -> dict[str, dict]:
    """Prune ``model`` block by block with ``method`` (see the module docstring). Returns the
    method's per-layer extras keyed by the linear's qualified name. ``compress_threads``: CPU
    threads for the compress step (see :func:`threads`; forward passes keep torch's setting)."""
    ad = get_adapter(model)
    timer = timer or Timer(input_device(model))
    names = qualified_names(model)
    with timer("capture"):
        batches = capture(model, ids, batch_size, ad.layers)
    extras: dict[str, dict] = {}
    for i in tqdm(range(ad.n_layers), desc="prune blocks", leave=False, disable=not progress):
        block, linears = ad.layers[i], ad.linears(i)
        observers = {n: list(method.observers(n, m)) for n, m in linears.items()}
        stats_before = timer.seconds["statistics"]
        with timer("observe"):
            observe(block, i, linears, observers, batches, timer)
        # "observe" keeps the forward only; "statistics" the hooks' accumulation inside it
        timer.seconds["observe"] -= timer.seconds["statistics"] - stats_before
        with timer("compress"), torch.inference_mode(), threads(compress_threads):
            for n, m in linears.items():
                extras[names[id(m)]] = method.compress(names[id(m)], m, observers.pop(n))
        if i < ad.n_layers - 1:
            with timer("propagate"):
                propagate(block, i, batches)
    return extras
