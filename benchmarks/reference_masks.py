"""Wanda, SparseGPT and RIA masks of ``repro`` against the reference implementations' own code.

    REFERENCE_WANDA=/path/to/wanda REFERENCE_SPARSEGPT=/path/to/sparsegpt \\
        python benchmarks/reference_masks.py [--model tiny-llama|smollm2-135m] [--nsamples 8] [--seqlen 512] \\
        [--patterns unstructured,2:4,4:8] [--only wanda|sparsegpt] [--ppl] [--out FILE]
    REFERENCE_RIA=/path/to/ria python benchmarks/reference_masks.py --only ria [...]

The references are local checkouts passed by path (``--wanda``/``--sparsegpt``/``--ria`` or the
environment variables above); nothing is vendored or fetched. Used: locuslab/wanda ``lib/prune.py``
(``prune_wanda``, the whole block loop, with its ``prune_n``/``prune_m`` for N:M),
IST-DASLab/sparsegpt ``llama.py`` (``llama_sequential``, ``prunen``/``prunem`` for N:M) with its
``SparseGPT`` class, and biomedical-cybernetics/Relative-importance-and-activation-pruning
``lib/prune.py`` (``prune_ria`` with ``--prune_method ria``, its README's unstructured command: a = 0.5,
one threshold per layer, no reallocation or reconstruction). RIA's code is a package named ``lib``
like Wanda's, so it runs in its own invocation (``--only ria``). Llama-family models only (their code
reaches ``model.model.layers``).

``--ppl``: each pruned model's perplexity (and the dense one's) on ``--eval-windows`` windows of
``--eval-seqlen`` tokens spread over ``--eval-data`` (notebook 2's: 32 x 1024 over WikiText-2 test),
in the model's dtype, with the per-window NLLs, so the reference's and ``repro``'s models compare
paired on the same windows (a Wanda or RIA model whose mask equals the reference's is the same model: its
perplexity is the reference's, not evaluated again).

On the same calibration windows (random ids for tiny models; seeded ``wikitext2-train`` windows
otherwise), for each method and pattern, the reference's pruned model against
``prune_model(..., stats=...)`` (SparseGPT with ``count="reference"``, the reference's
``score <= sorted[k]``), counting the mask bits that differ, overall and per layer:

* ``stats="exact"`` (the default): float64 sums over batches of ``--batch-size`` windows. The
  references run one window at a time and accumulate in float32 with a running rescale, so
  near-ties can flip, and a flip in block i changes the inputs of block i+1;
* ``stats="reference"``: the product's reproduction of the references' accumulation (float32
  running means, one window per forward, torch's thread count in the compress step), which
  should agree bit for bit;

and ``sparsegpt-same-H (block 0)``: block 0's linears (identical inputs on both sides), the
reference ``SparseGPT`` accumulating its own H and ``repro``'s compress step fed that very H,
which isolates the mask/update algorithm from float accumulation (unstructured only).

Patches that let the references run on CPU under transformers 5 (none touches a mask rule):
``torch.cuda.synchronize`` is a no-op; ``Tensor.cuda`` returns the tensor (RIA sorts its scores
through it); ``get_loaders`` returns these windows; ``model.seqlen``
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
import os
import sys
import time
from argparse import Namespace

import torch

from repro.assets import load_model, load_text
from repro.calib import sample_windows
from repro.calib.blocks import Gram, capture
from repro.evaluate.ppl import perplexity, tokenize
from repro.methods.unstructured import SparseGPT, parse_pattern, prune_model
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


def agreement(a, b) -> dict:
    """Mask bits (``weight == 0``) of two pruned models: how many differ, overall and per layer
    (only the layers with a difference, in module order), and the fraction that agree."""
    ma, mb = prunable_linears(a), prunable_linears(b)
    per = {n: int(((out_in(ma[n]) == 0) != (out_in(mb[n]) == 0)).sum().item()) for n in ma}
    diff, total = sum(per.values()), sum(m.weight.numel() for m in ma.values())
    return {"bits_differing": diff, "overall": 1 - diff / total, "layers_identical": sum(v == 0 for v in per.values()),
            "layers": len(per), "differing_layers": {n: v for n, v in per.items() if v}}


def quiet():
    return contextlib.redirect_stdout(io.StringIO())


@contextlib.contextmanager
def cuda_is_cpu():
    """``Tensor.cuda()`` returns the tensor itself while a reference runs (RIA's threshold sorts on "cuda")."""
    cuda = torch.Tensor.cuda
    torch.Tensor.cuda = lambda self, *args, **kwargs: self
    try:
        yield
    finally:
        torch.Tensor.cuda = cuda


METHODS = ("wanda", "sparsegpt", "ria")
COUNT = {"sparsegpt": {"count": "reference"}, "ria": {"count": "reference"}}  # their ``score <= sorted[k]``


def references(a) -> dict:
    """The reference modules the requested methods need, imported from the checkouts passed by path."""
    methods = [a.only] if a.only else ["wanda", "sparsegpt"]
    paths = {"wanda": a.wanda, "sparsegpt": a.sparsegpt, "ria": a.ria}
    missing = [m for m in methods if not paths[m]]
    if missing:
        sys.exit(f"pass --{' and --'.join(missing)} (or REFERENCE_{'/'.join(m.upper() for m in missing)}): "
                 "local checkouts")
    sys.path[:0] = [paths[m] for m in methods]
    mods = {}
    if "wanda" in methods or "ria" in methods:
        import lib.prune  # locuslab/wanda or RIA's, whichever checkout was passed (both are a package `lib`)
        mods["wanda" if "wanda" in methods else "ria"] = lib.prune
    if "sparsegpt" in methods:
        import llama  # IST-DASLab/sparsegpt (its SparseGPT class via `from sparsegpt import *`)
        mods["sparsegpt"] = llama
    return mods


def ppl(a, loaded, model) -> dict:
    """Perplexity on the evaluation windows, with the per-window NLLs for paired comparisons."""
    r = perplexity(model, loaded.tokenizer, load_text(a.eval_data), a.eval_seqlen, a.eval_windows,
                   progress=False, spread=True)
    return {"ppl": r.ppl, "window_nll": r.window_nll, "dtype": r.dtype}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--wanda", default=os.environ.get("REFERENCE_WANDA"))
    ap.add_argument("--sparsegpt", default=os.environ.get("REFERENCE_SPARSEGPT"))
    ap.add_argument("--ria", default=os.environ.get("REFERENCE_RIA"))
    ap.add_argument("--model", default="tiny-llama")
    ap.add_argument("--nsamples", type=int, default=8)
    ap.add_argument("--seqlen", type=int, default=512)
    ap.add_argument("--sparsity", type=float, default=0.5, help="of the unstructured pattern (N:M: N/M)")
    ap.add_argument("--patterns", default="unstructured", help="comma-separated, e.g. unstructured,2:4,4:8")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--batch-size", type=int, default=4, help="windows per forward of the default stats=exact")
    ap.add_argument("--only", choices=list(METHODS), default=None, help="run one method's comparisons "
                                                                         "(RIA only this way)")
    ap.add_argument("--ppl", action="store_true", help="evaluate every pruned model (and the dense one)")
    ap.add_argument("--eval-data", default="wikitext2:test")
    ap.add_argument("--eval-seqlen", type=int, default=1024)
    ap.add_argument("--eval-windows", type=int, default=32)
    ap.add_argument("--out", default=None, help="write the JSON here too; cases already in the file and not "
                                                "run now are kept (one pattern or method per run)")
    a = ap.parse_args()
    torch.cuda.synchronize = lambda *args, **kwargs: None  # the references call it unconditionally
    refs = references(a)

    loaded = load_model(a.model)
    dense = loaded.model
    ids = windows(loaded, a.nsamples, a.seqlen, a.seed)
    dense.seqlen, dense.hf_device_map = a.seqlen, {}
    for method in ("wanda", "ria"):
        if method in refs:
            refs[method].get_loaders = lambda *args, **kwargs: ([(w[None], w[None]) for w in ids], None)
    result = {"model": a.model, "nsamples": a.nsamples, "seqlen": a.seqlen, "seed": a.seed, "sparsity": a.sparsity,
              "batch_size": a.batch_size, "threads": torch.get_num_threads(), "cases": {}}
    if a.ppl:
        result["dense"] = {"eval": {"data": a.eval_data, "seqlen": a.eval_seqlen, "windows": a.eval_windows},
                           **ppl(a, loaded, dense)}
    for method in METHODS:
        if method in refs:
            for pattern in a.patterns.split(","):
                result["cases"][f"{method} {pattern}"] = case(a, method, parse_pattern(pattern), loaded, ids,
                                                              refs[method])
    if "sparsegpt" in refs and "unstructured" in a.patterns.split(","):
        result["sparsegpt-same-H (block 0)"] = same_h(a, refs["sparsegpt"], dense, ids)
    finish(a, result)


def reference(a, method, pattern, dense, ids, module):
    """The reference code's pruned copy of ``dense``."""
    ref = copy.deepcopy(dense)
    sparsity = a.sparsity if pattern.unstructured else pattern.n / pattern.m
    hooks = rotary_hooks(ref)
    with quiet(), cuda_is_cpu():
        if method == "wanda":
            module.prune_wanda(Namespace(nsamples=a.nsamples, seed=a.seed, sparsity_ratio=sparsity,
                                         use_variant=False), ref, None, device=torch.device("cpu"),
                               prune_n=pattern.n, prune_m=pattern.m)
        elif method == "ria":  # its README's command: --prune_method ria --a 0.5, no optional extras
            module.prune_ria(Namespace(model="llama", calib_dataset="wikitext2", nsamples=a.nsamples, seed=a.seed,
                                       seqlen=a.seqlen, sparsity_ratio=sparsity, prune_method="ria", a=0.5,
                                       reconstruction=False, reallocation=False, lsa=False, gptq=False,
                                       per_outneuron=False, semi_sparse_acc=False),
                             ref, None, device=torch.device("cpu"), prune_n=pattern.n, prune_m=pattern.m)
        else:
            sg_llama = module
            sg_llama.args = Namespace(nsamples=a.nsamples, sparsity=sparsity, prunen=pattern.n, prunem=pattern.m,
                                      percdamp=0.01, blocksize=128, wbits=16, minlayer=-1, maxlayer=1000,
                                      prune_only="", invert=False, true_sequential=False)
            sg_llama.llama_sequential(ref, [(w[None], w[None]) for w in ids], torch.device("cpu"))
    for h in hooks:
        h.remove()
    return ref


def case(a, method, pattern, loaded, ids, module) -> dict:
    """One (method, pattern): the reference's masks against ``prune_model``'s with the default
    ``stats="exact"`` and with ``stats="reference"`` (SparseGPT and RIA with ``count="reference"``);
    with ``--ppl`` each pruned model's perplexity."""
    dense = loaded.model
    t0 = time.perf_counter()
    ref = reference(a, method, pattern, dense, ids, module)
    out = {"reference seconds": round(time.perf_counter() - t0, 1)}
    if a.ppl:
        out["reference ppl"] = ppl(a, loaded, ref)
    params = COUNT.get(method, {})
    for stats in ("exact", "reference"):
        ours = copy.deepcopy(dense)
        t0 = time.perf_counter()
        prune_model(ours, method, a.sparsity if pattern.unstructured else None, ids, pattern=pattern,
                    batch_size=a.batch_size, progress=False, stats=stats, **params)
        agree = agreement(ref, ours)
        same = agree["bits_differing"] == 0 and method != "sparsegpt"  # no weight updates: the same model
        out[f"repro {json.dumps({**params, 'stats': stats})}"] = {
            "seconds": round(time.perf_counter() - t0, 1), **agree,
            **({"ppl": out["reference ppl"] if same else ppl(a, loaded, ours)} if a.ppl else {})}
        del ours
    return out


def same_h(a, sg_llama, dense, ids) -> dict:
    """SparseGPT on block 0's linears (identical inputs on both sides): the reference ``SparseGPT``
    accumulating its own H, and ``repro``'s compress step fed that very H (unstructured)."""
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
        gram = Gram(running=True)
        gram.gram, gram.n = gpt.H.clone(), len(inputs[m])  # the reference's own H
        with quiet():
            gpt.fasterprune(a.sparsity, prunen=0, prunem=0, percdamp=0.01, blocksize=128)
        mine = copy.deepcopy(m)
        SparseGPT(a.sparsity, count="reference").compress(name, mine, [gram])
        same[name] = {"mask_agreement": ((theirs.weight == 0) == (mine.weight == 0)).float().mean().item(),
                      "weights_identical": torch.equal(theirs.weight, mine.weight)}
    return same


def finish(a, result: dict) -> None:
    if a.out and os.path.exists(a.out):
        with open(a.out) as f:
            old = json.load(f)
        result = {**old, **result, "cases": {**old.get("cases", {}), **result["cases"]}}
    text = json.dumps(result, indent=1)
    print(text)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
