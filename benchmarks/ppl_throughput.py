"""Perplexity-eval throughput as a ratio to a bare forward pass over the same windows.

    python benchmarks/ppl_throughput.py [--model smollm2-135m] [--windows 8] [--seqlen 1024]

The bare pass is ``model(input_ids=w, use_cache=False)`` and nothing else; the eval pass is
``repro.evaluate.ppl.window_nll`` (forward + float32 cross-entropy + bookkeeping). Passes
alternate, so drift in machine load hits both; reported are the ratio of medians, the ratio of
the best passes, and the median of the per-round (adjacent bare/eval) ratios, the least
sensitive to a noisy machine.
"""
import argparse
import json
import statistics
import time

import torch

from repro.assets import load_model, load_text
from repro.evaluate.ppl import tokenize, window_nll, windows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--data", default="wikitext2:test")
    ap.add_argument("--windows", type=int, default=8)
    ap.add_argument("--seqlen", type=int, default=1024)
    ap.add_argument("--dtype", default="bfloat16")
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()
    loaded = load_model(a.model, a.dtype)
    wins = windows(tokenize(loaded.tokenizer, load_text(a.data)), a.seqlen, a.windows)
    model = loaded.model

    @torch.inference_mode()
    def bare():
        for w in wins:
            model(input_ids=w[None], use_cache=False)

    def evaluate():
        window_nll(model, wins, batch_size=1, progress=False)

    bare()  # warm-up
    t_bare, t_eval = [], []
    for _ in range(a.repeats):
        for fn, acc in ((bare, t_bare), (evaluate, t_eval)):
            t0 = time.perf_counter()
            fn()
            acc.append(time.perf_counter() - t0)
    tokens = wins.numel()
    b, e = statistics.median(t_bare), statistics.median(t_eval)
    bmin, emin = min(t_bare), min(t_eval)
    print(json.dumps({"model": a.model, "dtype": a.dtype, "windows": len(wins), "seqlen": a.seqlen,
                      "threads": torch.get_num_threads(), "bare_tok_per_s": tokens / b,
                      "eval_tok_per_s": tokens / e, "throughput_ratio": b / e,
                      "throughput_ratio_best_of": bmin / emin,
                      "throughput_ratio_paired_median": statistics.median(x / y for x, y in zip(t_bare, t_eval)),
                      "bare_s": t_bare, "eval_s": t_eval}))


if __name__ == "__main__":
    main()
