"""Pruning time per method, with a breakdown of where it goes.

    python benchmarks/prune_speed.py [--model smollm2-135m] [--nsamples 32] [--seqlen 512] \\
        [--sparsity 0.5] [--methods wanda,sparsegpt,ogas] [--batch-size 4]

Calibration: ``nsamples`` seeded windows of ``seqlen`` tokens of ``wikitext2-train`` (random ids
for tiny models). Each method prunes a fresh copy of the dense model with
``repro.methods.unstructured.prune_model``; reported per method:

- ``seconds``: wall time of ``prune_model``;
- ``timings``: ``capture`` (embeddings and block arguments), ``observe`` (the dense forward of
  each block on the current inputs, hooks' accumulation excluded), ``statistics`` (the observers'
  accumulation: sums of squares, Gram matrices, output statistics), ``compress`` (the method's
  per-layer step, which includes OGAS's ``gamma_search``), ``propagate`` (the pruned block's
  forward that feeds the next block);
- ``in_bare_passes``: ``seconds`` divided by one bare pass through the decoder (``model.base_model``, no LM head; same
  windows and batch size, no hooks), measured just before; this ratio is what to compare when
  the machine is shared, since both scale with the load;
- ``zeros_sha256``: the mask fingerprint (``repro.structure.sparsity.zeros_sha256``), to check
  that a speed change left the masks unchanged.

The load average (``os.getloadavg``) is printed at the start and end of each method: other
jobs on the same cores inflate every number.
"""
import argparse
import copy
import json
import os
import time

import torch

from repro.assets import load_model, load_text
from repro.calib import sample_windows
from repro.evaluate.ppl import tokenize
from repro.methods.unstructured import prune_model
from repro.structure.sparsity import zeros_sha256


@torch.inference_mode()
def bare_pass(model, ids, batch_size: int) -> float:
    """Seconds of one forward pass through the decoder (no LM head) over ``ids``."""
    t0 = time.perf_counter()
    for s in range(0, len(ids), batch_size):
        model.base_model(input_ids=ids[s:s + batch_size], use_cache=False)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--nsamples", type=int, default=32)
    ap.add_argument("--seqlen", type=int, default=512)
    ap.add_argument("--sparsity", type=float, default=0.5)
    ap.add_argument("--methods", default="wanda,sparsegpt,ogas")
    ap.add_argument("--batch-size", type=int, default=4)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=None, help="torch intra-op threads (default: torch's)")
    ap.add_argument("--compress-threads", type=int, default=None,
                    help="threads of the compress step (0: torch's; default: the method's own choice)")
    ap.add_argument("--out", default=None, help="write the JSON here too")
    a = ap.parse_args()
    compress_threads = "method" if a.compress_threads is None else a.compress_threads or None
    if a.threads:
        torch.set_num_threads(a.threads)
    loaded = load_model(a.model)
    if a.model.startswith("tiny-"):
        ids = torch.randint(4, 260, (a.nsamples, a.seqlen), generator=torch.Generator().manual_seed(a.seed))
    else:
        ids = sample_windows(tokenize(loaded.tokenizer, load_text("wikitext2-train")), a.nsamples, a.seqlen, a.seed)
    dense = loaded.model
    result = {"model": a.model, "nsamples": a.nsamples, "seqlen": a.seqlen, "sparsity": a.sparsity,
              "batch_size": a.batch_size, "threads": torch.get_num_threads(), "compress_threads": compress_threads,
              "cpus": os.cpu_count(), "methods": {}}
    bare_pass(dense, ids[:a.batch_size], a.batch_size)  # warm-up
    for method in a.methods.split(","):
        model = copy.deepcopy(dense)
        load0 = os.getloadavg()[0]
        bare = bare_pass(model, ids, a.batch_size)
        t0 = time.perf_counter()
        report = prune_model(model, method, a.sparsity, ids, batch_size=a.batch_size, progress=False,
                             compress_threads=compress_threads)
        seconds = time.perf_counter() - t0
        entry = {"seconds": round(seconds, 2), "bare_pass_seconds": round(bare, 2),
                 "in_bare_passes": round(seconds / bare, 2),
                 "timings": {k: round(v, 2) for k, v in sorted(report.timings.items(), key=lambda kv: -kv[1])},
                 "overall_sparsity": report.overall, "zeros_sha256": zeros_sha256(model),
                 "load_average": [load0, os.getloadavg()[0]]}
        if method.startswith("ogas"):
            ex = report.extras.values()
            gammas = [e["gamma"] for e in ex if e.get("gamma_at_bound") is not None]
            entry["gamma_evals_total"] = sum(e.get("gamma_evals", 0) for e in ex)
            entry["gamma_at_bound_layers"] = {"low": sum(bool(e.get("gamma_at_bound")) and e["gamma"] < 0.5 for e in ex),
                                              "high": sum(bool(e.get("gamma_at_bound")) and e["gamma"] >= 0.5 for e in ex),
                                              "of": len(gammas)}
            entry["alpha_at_bound_layers"] = sum(bool(e.get("alpha_at_bound")) for e in ex)
        result["methods"][method] = entry
        print(method, json.dumps(entry), flush=True)
        del model
    text = json.dumps(result, indent=1)
    print(text)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
