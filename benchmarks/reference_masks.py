"""Wanda and SparseGPT masks of ``repro`` against the reference implementations' own code.

    REFERENCE_WANDA=/path/to/wanda REFERENCE_SPARSEGPT=/path/to/sparsegpt \\
        python benchmarks/reference_masks.py [--model tiny-llama|smollm2-135m] [--nsamples 8] [--seqlen 512] \\
        [--only wanda|sparsegpt]

The references are local checkouts passed by path (``--wanda``/``--sparsegpt`` or the environment
variables above); nothing is vendored or fetched. Used: locuslab/wanda ``lib/prune.py``
(``prune_wanda``, the whole block loop) and IST-DASLab/sparsegpt ``llama.py`` (``llama_sequential``)
with its ``SparseGPT`` class. Llama-family models only (their code reaches ``model.model.layers``).

Three comparisons on the same calibration windows (random ids for tiny models; seeded
``wikitext2-train`` windows otherwise), each as the fraction of identical mask bits per layer:

1. ``wanda``: reference ``prune_wanda`` vs ``prune_model(..., "wanda")`` end to end; then once
   more with the reference's float32 running-mean accumulation of ``||X_j||^2`` and one window per
   forward, which should agree bit for bit;
2. ``sparsegpt``: reference ``llama_sequential`` vs ``prune_model(..., "sparsegpt",
   count="reference")`` end to end (and with the default ``count="exact"``, which removes one
   weight less per 128-column block); then once more with the reference's float32 running H
   accumulation, one window per forward and torch's thread count in the compress step, which
   should agree bit for bit;
3. ``sparsegpt-same-H``: block 0's linears (identical inputs on both sides), the reference
   ``SparseGPT`` accumulating its own H, and ``repro``'s compress step fed that very H: this
   isolates the mask/update algorithm from float accumulation order.

End-to-end, the references run one window at a time and accumulate statistics in float32 with a
running rescale, ``repro`` batches windows and accumulates in float64; near-ties can therefore
flip, and a flip in block i changes the inputs of block i+1.

Patches that let the references run on CPU under transformers 5 (none touches a mask rule):
``torch.cuda.synchronize`` is a no-op; ``get_loaders`` returns these windows; ``model.seqlen``
and an empty ``model.hf_device_map`` are set; and decoder layers called without
``position_embeddings`` (the references pass only the mask and position ids, from before
transformers computed rotary tables once per model) get them from ``model.model.rotary_emb``
through a forward pre-hook.
"""
import argparse
import contextlib
import copy
import io
import json
import math
import os
import sys
import time
from argparse import Namespace

import torch

from repro.assets import load_model, load_text
from repro.calib import sample_windows
from repro.calib.blocks import Gram, InputSumSq, capture, sequential
from repro.evaluate.ppl import tokenize
from repro.methods.unstructured import SparseGPT, Wanda, prune_model
from repro.structure.sparsity import out_in, prunable_linears


def windows(loaded, nsamples: int, seqlen: int, seed: int) -> torch.Tensor:
    if loaded.name.startswith("tiny-"):
        return torch.randint(4, 260, (nsamples, seqlen), generator=torch.Generator().manual_seed(seed))
    return sample_windows(tokenize(loaded.tokenizer, load_text("wikitext2-train")), nsamples, seqlen, seed)


def rotary_hooks(model):
    """Give decoder layers their rotary ``position_embeddings`` when a caller omits them."""
    def hook(module, args, kwargs):
        if kwargs.get("position_embeddings") is None:
            h = args[0] if args else kwargs["hidden_states"]
            pos = kwargs.get("position_ids")
            pos = torch.arange(h.shape[1], device=h.device)[None] if pos is None else pos
            kwargs["position_embeddings"] = model.model.rotary_emb(h, pos)
        return args, kwargs
    return [layer.register_forward_pre_hook(hook, with_kwargs=True) for layer in model.model.layers]


def agreement(a, b, pattern_only: bool = True) -> dict:
    """Per-layer fraction of identical mask bits (``weight == 0``) of two pruned models."""
    ma, mb = prunable_linears(a), prunable_linears(b)
    per = {n: ((out_in(ma[n]) == 0) == (out_in(mb[n]) == 0)).float().mean().item() for n in ma}
    diff = sum(((out_in(ma[n]) == 0) != (out_in(mb[n]) == 0)).sum().item() for n in ma)
    total = sum(m.weight.numel() for m in ma.values())
    return {"min_layer": min(per.values()), "overall": 1 - diff / total, "bits_differing": diff,
            "layers_identical": sum(v == 1.0 for v in per.values()), "layers": len(per), "per_layer": per}


class RunningGram(Gram):
    """H accumulated exactly as the reference ``SparseGPT.add_batch`` does (float32, one window
    at a time, running rescale by n/(n+1), then + (sqrt(2/n) x)(sqrt(2/n) x)^T); stored so that
    ``2/n * gram`` is that H. Only to show the end-to-end differences come from accumulation."""

    def measure(self, x, y, start):
        return x

    def add(self, x) -> None:
        h, n = (torch.zeros(x.shape[-1], x.shape[-1]), 0) if self.gram is None else (self.gram.float(), self.n)
        for xj in x:
            h *= n / (n + 1)
            n += 1
            inp = math.sqrt(2 / n) * xj.reshape(-1, xj.shape[-1]).t().float()
            h += inp.matmul(inp.t())
        self.gram, self.n = h.double(), n
        self.n_windows = n

    @property
    def key(self):
        return ("RunningGram",)


class SparseGPTRunningH(SparseGPT):
    def observers(self, name, module):
        return [RunningGram()]

    def compress(self, name, module, obs):
        g = obs[0]
        g.gram, g.n = g.gram, 2  # 2/2 * gram is the reference's H
        return super().compress(name, module, [g])


class RunningSumSq(InputSumSq):
    """Wanda's ``scaler_row`` accumulated exactly as the reference ``WrappedGPT.add_batch`` does
    (float32, one window at a time, running mean rescaled by n/(n+1)); only to show that the
    end-to-end differences come from accumulation order."""

    def measure(self, x, y, start):
        return x

    def add(self, x) -> None:
        row = torch.zeros(x.shape[-1]) if self.sumsq is None else self.sumsq.float()
        for xj in x:
            row *= self.n / (self.n + 1)
            self.n += 1
            row += torch.norm(xj.reshape(-1, xj.shape[-1]).t().float(), p=2, dim=1) ** 2 / self.n
        self.sumsq = row.double()

    @property
    def key(self):
        return ("RunningSumSq",)


class WandaRunning(Wanda):
    def observers(self, name, module):
        return [RunningSumSq()]


def quiet():
    return contextlib.redirect_stdout(io.StringIO())


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--wanda", default=os.environ.get("REFERENCE_WANDA"))
    ap.add_argument("--sparsegpt", default=os.environ.get("REFERENCE_SPARSEGPT"))
    ap.add_argument("--model", default="tiny-llama")
    ap.add_argument("--nsamples", type=int, default=8)
    ap.add_argument("--seqlen", type=int, default=512)
    ap.add_argument("--sparsity", type=float, default=0.5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--batch-size", type=int, default=4)
    ap.add_argument("--only", choices=["wanda", "sparsegpt"], default=None, help="run one method's comparisons")
    ap.add_argument("--out", default=None, help="write the JSON here too")
    a = ap.parse_args()
    if not a.wanda or not a.sparsegpt:
        sys.exit("pass --wanda and --sparsegpt (or REFERENCE_WANDA / REFERENCE_SPARSEGPT): local checkouts")
    torch.cuda.synchronize = lambda *args, **kwargs: None  # the references call it unconditionally
    sys.path[:0] = [a.wanda, a.sparsegpt]
    import lib.prune as wanda_prune  # locuslab/wanda
    import llama as sg_llama  # IST-DASLab/sparsegpt (its SparseGPT class via `from sparsegpt import *`)

    loaded = load_model(a.model)
    dense = loaded.model
    ids = windows(loaded, a.nsamples, a.seqlen, a.seed)
    dense.seqlen, dense.hf_device_map = a.seqlen, {}
    result = {"model": a.model, "nsamples": a.nsamples, "seqlen": a.seqlen, "sparsity": a.sparsity,
              "batch_size": a.batch_size}

    # 1. Wanda end to end
    if a.only == "sparsegpt":
        return finish(a, run_sparsegpt(a, sg_llama, dense, ids, result))
    ref = copy.deepcopy(dense)
    wanda_prune.get_loaders = lambda *args, **kwargs: ([(w[None], w[None]) for w in ids], None)
    hooks = rotary_hooks(ref)
    t0 = time.perf_counter()
    with quiet():
        wanda_prune.prune_wanda(Namespace(nsamples=a.nsamples, seed=a.seed, sparsity_ratio=a.sparsity, use_variant=False),
                                ref, None, device=torch.device("cpu"))
    seconds = {"reference prune_wanda": time.perf_counter() - t0}
    for h in hooks:
        h.remove()
    ours = copy.deepcopy(dense)
    t0 = time.perf_counter()
    prune_model(ours, "wanda", a.sparsity, ids, batch_size=a.batch_size, progress=False)
    seconds["repro wanda"] = time.perf_counter() - t0
    result["wanda"] = agreement(ref, ours)
    result["wanda seconds (same machine, one after the other)"] = {k: round(v, 1) for k, v in seconds.items()}
    ours = copy.deepcopy(dense)
    # as the reference: its float32 running-mean accumulation of ||X_j||^2, one window per forward
    sequential(ours, ids, WandaRunning(a.sparsity), batch_size=1, progress=False)
    result["wanda, batch 1, reference accumulation"] = agreement(ref, ours)
    del ref, ours
    if a.only == "wanda":
        return finish(a, result)
    finish(a, run_sparsegpt(a, sg_llama, dense, ids, result))


def run_sparsegpt(a, sg_llama, dense, ids, result) -> dict:
    # 2. SparseGPT end to end
    ref = copy.deepcopy(dense)
    sg_llama.args = Namespace(nsamples=a.nsamples, sparsity=a.sparsity, prunen=0, prunem=0, percdamp=0.01, blocksize=128,
                              wbits=16, minlayer=-1, maxlayer=1000, prune_only="", invert=False, true_sequential=False)
    hooks = rotary_hooks(ref)
    t0 = time.perf_counter()
    with quiet():
        sg_llama.llama_sequential(ref, [(w[None], w[None]) for w in ids], torch.device("cpu"))
    seconds = {"reference llama_sequential": time.perf_counter() - t0}
    for h in hooks:
        h.remove()
    for count in ("reference", "exact"):
        ours = copy.deepcopy(dense)
        t0 = time.perf_counter()
        prune_model(ours, "sparsegpt", a.sparsity, ids, batch_size=a.batch_size, progress=False, count=count)
        seconds[f"repro sparsegpt count={count}"] = time.perf_counter() - t0
        result[f"sparsegpt count={count}"] = agreement(ref, ours)
        del ours
    result["sparsegpt seconds (same machine, one after the other)"] = {k: round(v, 1) for k, v in seconds.items()}
    ours = copy.deepcopy(dense)
    # as the reference: its H accumulation, one window per forward, torch's thread count in the
    # compress step too (MKL's Cholesky and matmul round differently with one thread)
    sequential(ours, ids, SparseGPTRunningH(a.sparsity, count="reference"), batch_size=1, progress=False,
               compress_threads=None)
    result["sparsegpt count=reference, batch 1, reference H accumulation"] = agreement(ref, ours)
    del ours
    del ref

    # 3. SparseGPT on block 0 with the reference's own H
    block = dense.model.layers[0]
    x = torch.cat([b.hidden for b in capture(dense, ids, a.batch_size)])
    inputs = {}
    hooks = [m.register_forward_hook(lambda m, args, out: inputs.setdefault(m, []).append(args[0]))
             for m in block.modules() if isinstance(m, torch.nn.Linear)]
    with torch.inference_mode():
        for j in range(len(x)):
            block(x[j:j + 1], position_embeddings=dense.model.rotary_emb(x[j:j + 1], torch.arange(a.seqlen)[None]))
    for h in hooks:
        h.remove()
    same = {}
    for name, m in prunable_linears(dense).items():
        if m not in inputs:
            continue
        theirs = copy.deepcopy(m)
        gpt = sg_llama.SparseGPT(theirs)
        for xj in inputs[m]:
            gpt.add_batch(xj.clone(), None)
        gram = Gram()
        gram.gram, gram.n = gpt.H.double().clone(), 2   # 2/n * G is exactly their H
        with quiet():
            gpt.fasterprune(a.sparsity, prunen=0, prunem=0, percdamp=0.01, blocksize=128)
        mine = copy.deepcopy(m)
        SparseGPT(a.sparsity, count="reference").compress(name, mine, [gram])
        same[name] = {"mask_agreement": ((theirs.weight == 0) == (mine.weight == 0)).float().mean().item(),
                      "weights_identical": torch.equal(theirs.weight, mine.weight)}
    result["sparsegpt-same-H (block 0)"] = same
    return result


def finish(a, result: dict) -> None:
    text = json.dumps(result, indent=1)
    print(text)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
