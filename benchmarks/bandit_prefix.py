"""Prefix reuse vs full forwards in Paper 3's bandit search: layer forwards and wall clock.

    python benchmarks/bandit_prefix.py [--model smollm2-135m] [--data wikitext2:validation]
        [--windows 8 --seqlen 128 --batch-size 4] [--k 4 --budget 32 --policy ucb] [--repeats 2]

For heads and for MLP groups (g0 = 32) separately, the same search (same seed, calibration
windows and mini-batches) runs with ``UnitEvaluator(prefix=True)`` and ``prefix=False``; runs
alternate, so drift in machine load hits both. Reported per kind: the selected units (they must
be identical, else the script exits 1), layer forwards per paired evaluation (all of them,
including the current mask's recomputes, and the candidate forwards alone), the layer-forward
ratio and the wall-clock ratio (median of per-round full/prefix ratios). Goals: at least 1.7x
fewer layer forwards and 1.5x faster. The layer-forward ratio is bounded by where the candidates
lie: about 2L / (L + 1) when they are spread evenly over L layers (1.5 for a 3-layer tiny
model, 1.94 for SmolLM2's 30). ``--data random`` (the default for tiny models) uses
seeded random tokens instead of a corpus.
"""
import argparse
import json
import statistics
import sys

import torch

from repro.arch import adapter
from repro.assets import load_model, load_text
from repro.calib import sample_windows
from repro.evaluate.ppl import tokenize
from repro.evaluate.prefix import UnitEvaluator, lm_batches
from repro.methods.bandit import select_units

GOALS = {"layer_forward_ratio": 1.7, "speedup": 1.5}


def calibration(loaded, spec: str, n: int, seqlen: int, seed: int) -> torch.Tensor:
    if spec == "random":
        g = torch.Generator().manual_seed(seed)
        return torch.randint(4, loaded.model.config.vocab_size, (n, seqlen), generator=g)
    return sample_windows(tokenize(loaded.tokenizer, load_text(spec)), n, seqlen, seed)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--data", default=None, help="dataset spec, or 'random' (default: wikitext2:validation; "
                                                  "random for tiny-* models)")
    ap.add_argument("--windows", type=int, default=8)
    ap.add_argument("--seqlen", type=int, default=128)
    ap.add_argument("--batch-size", type=int, default=4)
    ap.add_argument("--k", type=int, default=4, help="units selected (search steps)")
    ap.add_argument("--budget", type=int, default=32, help="paired evaluations per step")
    ap.add_argument("--policy", default="ucb")
    ap.add_argument("--kinds", default="head,mlp", help="comma-separated unit kinds, each benchmarked on its own")
    ap.add_argument("--group-size", type=int, default=32)
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--device", default=None)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's)")
    a = ap.parse_args()
    if a.threads:
        torch.set_num_threads(a.threads)
    loaded = load_model(a.model, a.dtype, device=a.device)
    if loaded.task != "causal-lm":
        ap.error(f"{a.model} is a {loaded.task} model; this benchmark runs causal LMs")
    spec = a.data or ("random" if a.model.startswith("tiny-") else "wikitext2:validation")
    batches = lm_batches(calibration(loaded, spec, a.windows, a.seqlen, a.seed), a.batch_size)
    model = loaded.model
    n_layers = adapter(model).n_layers
    report = {"model": a.model, "data": spec, "windows": a.windows, "seqlen": a.seqlen, "batch_size": a.batch_size,
              "mini_batches": len(batches), "layers": n_layers, "k": a.k, "budget": a.budget, "policy": a.policy,
              "group_size": a.group_size, "dtype": a.dtype, "threads": torch.get_num_threads(), "kinds": {}}
    ok = True
    for kind in a.kinds.split(","):
        runs: dict = {True: [], False: []}
        for _ in range(a.repeats):
            for prefix in (True, False):
                with UnitEvaluator(model, batches, a.group_size, prefix=prefix) as ev:
                    runs[prefix].append(select_units(a.policy, ev, a.k, kinds=(kind,), seed=a.seed, budget=a.budget))
        pre, full = runs[True][0], runs[False][0]
        same = all(r.units == pre.units for r in runs[True] + runs[False])
        ok &= same
        pe = pre.budget.paired_evaluations
        cand = sum(2 * n * (n_layers - u.layer) for u, n in pre.pulls.items())  # candidate forwards of prefix
        row = {"selected": [str(u) for u in pre.units], "same_units": same, "paired_evaluations": pe,
               "layer_forwards_per_eval": {"prefix": pre.budget.layer_forwards / pe,
                                           "full": full.budget.layer_forwards / pe,
                                           "prefix_candidates_only": cand / pe,
                                           "full_candidates_only": full.budget.candidate_losses * n_layers / pe},
               "layer_forward_ratio": full.budget.layer_forwards / pre.budget.layer_forwards,
               "seconds": {"prefix": [r.budget.seconds for r in runs[True]],
                           "full": [r.budget.seconds for r in runs[False]]},
               "speedup": statistics.median(f.budget.seconds / p.budget.seconds
                                            for p, f in zip(runs[True], runs[False]))}
        # if candidates were spread evenly over layers: L / mean(L - l) = 2L / (L + 1) (1.5 for 3 layers)
        row["layer_forward_ratio_if_uniform_layers"] = 2 * n_layers / (n_layers + 1)
        row["candidate_layers"] = sorted({u.layer for u in pre.pulls})
        row["goals_met"] = {g: row[g] >= v for g, v in GOALS.items()}
        report["kinds"][kind] = row
    print(json.dumps(report, indent=1))
    if not ok:
        print("error: prefix reuse and full forwards selected different units", file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
