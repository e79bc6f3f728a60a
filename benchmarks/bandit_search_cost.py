"""What one Paper 3 selection costs on a real model, to size the notebook-3 profiles.

    python benchmarks/bandit_search_cost.py [--model smollm2-135m] [--kinds head] [--ratio 0.1]
        [--methods ucb,greedy,magnitude,taylor,wanda] [--budget 8 --pool-size 16]
        [--calib-windows 32 --calib-batch-size 4 --seqlen 128] [--eval-windows 32 --lambada-limit 50]

Prints, one JSON line each: the dense evaluation's seconds (WikiText-2 test windows, with and
without LAMBADA through lm-eval), then per selector the units selected, seconds, paired
evaluations, layer forwards and calibration passes (``BanditExperiment``, in-memory store).
"""
import argparse
import json
import time

from repro.engines.bandit import BanditExperiment
from repro.engines.base import Setup
from repro.methods.bandit import get_selector
from repro.store import Store


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--kinds", default="head")
    ap.add_argument("--ratio", type=float, default=0.1)
    ap.add_argument("--methods", default="ucb,greedy,magnitude,taylor,wanda")
    ap.add_argument("--budget", type=int, default=8)
    ap.add_argument("--pool-size", type=int, default=16)
    ap.add_argument("--calib-windows", type=int, default=32)
    ap.add_argument("--calib-batch-size", type=int, default=4)
    ap.add_argument("--seqlen", type=int, default=128)
    ap.add_argument("--eval-windows", type=int, default=32)
    ap.add_argument("--lambada-limit", type=int, default=50)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    s = Setup(data="wikitext2:test", seqlen=a.seqlen, max_windows=a.eval_windows, batch_size=8,
              calib_nsamples=a.calib_windows, calib_seqlen=a.seqlen)
    e = BanditExperiment(a.model, s, Store(None), calib_batch_size=a.calib_batch_size, progress=False)
    t0 = time.perf_counter()
    e.dense(lambada_limit=a.lambada_limit)
    t1 = time.perf_counter()
    dense = e.dense()["result"]
    print(json.dumps({"dense_eval_with_lambada_s": round(t1 - t0, 1), "dense_eval_s": round(time.perf_counter() - t1, 1),
                      "eval_windows": a.eval_windows, "seqlen": a.seqlen, "lambada_limit": a.lambada_limit,
                      "ppl": dense["ppl"]}), flush=True)
    kinds = a.kinds.split(",")
    for m in a.methods.split(","):
        params = {"budget": a.budget, "pool_size": a.pool_size} if get_selector(m).sequential else None
        t0 = time.perf_counter()
        r = e.select(m, kinds, a.ratio, a.seed, params)["result"]
        print(json.dumps({"model": a.model, "kinds": kinds, "ratio": a.ratio, "method": m, "params": params,
                          "k": len(r["units"]), "seconds": round(time.perf_counter() - t0, 1),
                          **{k: r["budget"][k] for k in ("paired_evaluations", "layer_forwards", "calibration_passes")}}),
              flush=True)


if __name__ == "__main__":
    main()
