"""How much the search dtype changes Paper 3's paired damages (float32 vs bfloat16).

    python benchmarks/bandit_search_dtype.py [--model smollm2-135m] [--units 20] [--windows 8] [--seqlen 128]

Draws ``--units`` heads and ``--units`` MLP groups at random (seeded), and for each computes the paired
damage on the same two calibration mini-batches (one window of WikiText-2 train each) with the model in
float32 and in bfloat16, first on the unmasked model, then after one unit joined the mask. Prints one
JSON object (and writes it to ``benchmarks/results/bandit_search_dtype_<model>.json``): seconds per paired
evaluation in each dtype, the mean and largest absolute difference of the damages, the mean bfloat16 -
float32 difference (bias), the mean |damage| and the Spearman rank correlation.
"""
import argparse
import copy
import json
import time
from pathlib import Path

import numpy as np
import torch
from scipy.stats import spearmanr

from repro.arch import adapter
from repro.assets import load_model, load_text
from repro.calib import sample_windows
from repro.evaluate.ppl import tokenize
from repro.evaluate.prefix import UnitEvaluator, lm_batches
from repro.methods.bandit import candidates


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--units", type=int, default=20)
    ap.add_argument("--windows", type=int, default=8)
    ap.add_argument("--seqlen", type=int, default=128)
    a = ap.parse_args()
    loaded = load_model(a.model)
    text = load_text("wikitext2-train")
    batches = lm_batches(sample_windows(tokenize(loaded.tokenizer, text), a.windows, a.seqlen, 1), 1)
    rng = np.random.default_rng(0)
    units = []
    for kind in ("head", "mlp"):
        pool = candidates(adapter(loaded.model), (kind,))
        units += [pool[i] for i in rng.choice(len(pool), a.units, replace=False)]
    damages, seconds = {}, {}
    for dtype in (torch.float32, torch.bfloat16):
        model = loaded.model if dtype == torch.float32 else copy.deepcopy(loaded.model).to(dtype)
        with UnitEvaluator(model, batches) as ev:
            t0 = time.perf_counter()
            first = [ev.damage(u, [0, 1]) for u in units]
            seconds[str(dtype)] = (time.perf_counter() - t0) / len(units)
            ev.add(units[0])
            damages[str(dtype)] = np.array(first + [ev.damage(u, [2, 3]) for u in units[1:]])
    f32, b16 = damages["torch.float32"], damages["torch.bfloat16"]
    out = {"model": a.model, "windows_per_mini_batch": 1, "seqlen": a.seqlen, "units": len(units),
           "evaluations": len(f32), "threads": torch.get_num_threads(),
           "seconds_per_paired_evaluation": seconds,
           "speedup_bf16": seconds["torch.float32"] / seconds["torch.bfloat16"],
           "mean_abs_diff": float(np.abs(b16 - f32).mean()), "max_abs_diff": float(np.abs(b16 - f32).max()),
           "mean_diff_bf16_minus_f32": float((b16 - f32).mean()), "mean_abs_damage_f32": float(np.abs(f32).mean()),
           "spearman": float(spearmanr(f32, b16)[0]), "tau": 0.02}
    print(json.dumps(out))
    path = Path(__file__).parent / "results" / f"bandit_search_dtype_{a.model}.json"
    path.write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
