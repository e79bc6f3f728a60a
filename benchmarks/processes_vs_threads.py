"""Why ``--jobs 2`` buys little on this machine: one cell's evaluation timed with 1 and 2 torch threads,
and two copies of it run at once in two processes of 1 thread each (what ``--jobs 2`` does).

    python benchmarks/processes_vs_threads.py [--model smollm2-135m] [--seqlen 128] [--windows 16] \\
        [--dtype auto] [--repeats 3] [--out benchmarks/results/processes_vs_threads_smollm2-135m.json]

The work is a dense perplexity on WikiText-2 test windows (the unit of every perplexity cell and of
each bandit pull), the model loaded once per process before the clock starts. Reported: the best of
``repeats`` wall times, and the ratios a grid of many such cells would see,
``jobs 2 / jobs 1 = t(two 1-thread processes at once) / (2 * t(one 2-thread process))``
(below 1: two workers finish sooner).
"""
import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from jobs_speedup import emit  # noqa: E402


def one(model: str, seqlen: int, windows: int, dtype: str, threads: int, repeats: int) -> list[float]:
    """Wall seconds of each repeat of the evaluation, in this process with ``threads`` threads."""
    import torch

    from repro.arch import bos_token
    from repro.assets import load_model, load_text, resolve_dtype
    from repro.evaluate.ppl import perplexity

    torch.set_num_threads(threads)
    m = load_model(model, resolve_dtype(dtype))
    data = load_text("wikitext2:test")
    bos = bos_token(m.model.config, m.tokenizer)
    perplexity(m.model, m.tokenizer, data, seqlen, 2, 1, False, bos)  # warm-up (kernels, token memo)
    out = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        perplexity(m.model, m.tokenizer, data, seqlen, windows, 1, False, bos)
        out.append(time.perf_counter() - t0)
    return out


def spawn(args, threads: int, copies: int) -> list[list[float]]:
    """``copies`` processes started together, each timing the evaluation with ``threads`` threads."""
    cmd = [sys.executable, __file__, "--worker", str(threads), "--model", args.model, "--seqlen", str(args.seqlen),
           "--windows", str(args.windows), "--dtype", args.dtype, "--repeats", str(args.repeats)]
    env = {**os.environ, "OMP_NUM_THREADS": str(threads), "REPRO_PROGRESS": "off"}
    procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, env=env, text=True) for _ in range(copies)]
    return [json.loads(p.communicate()[0].strip().splitlines()[-1]) for p in procs]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--seqlen", type=int, default=128)
    ap.add_argument("--windows", type=int, default=16)
    ap.add_argument("--dtype", default="auto")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--worker", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    if a.worker:
        print(json.dumps(one(a.model, a.seqlen, a.windows, a.dtype, a.worker, a.repeats)))
        return
    from repro.assets import resolve_dtype

    t1 = min(spawn(a, 1, 1)[0])
    t2 = min(spawn(a, 2, 1)[0])
    both = spawn(a, 1, 2)
    tpar = max(min(t) for t in both)  # the pair's work is done when the slower copy is
    emit({"model": a.model, "dtype": resolve_dtype(a.dtype), "seqlen": a.seqlen, "windows": a.windows,
          "cpus": os.cpu_count(), "repeats": a.repeats,
          "seconds": {"1 thread": round(t1, 3), "2 threads": round(t2, 3),
                      "two 1-thread processes at once (each)": [round(min(t), 3) for t in both]},
          "ratios": {"2 threads / 1 thread": round(t2 / t1, 3),
                     "1-thread process slowed by a second one": round(tpar / t1, 3),
                     "jobs 2 / jobs 1": round(tpar / (2 * t2), 3)}}, a.out)


if __name__ == "__main__":
    main()
