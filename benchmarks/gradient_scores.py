"""What backward costs when only the scored weights get gradients: notebook 3's Taylor and Fisher
scores (and notebook 1's Gradient-Head, the same backward) with every parameter's gradient against
only the unit sites' weights (:func:`repro.calib.gradients_only_for`, the product's default).

    python benchmarks/gradient_scores.py [--models smollm2-135m gemma3-270m] [--windows 8] [--seqlen 128] \\
        [--out benchmarks/results/gradient_scores_cpu.json]

Per model and unit kind, as notebook 3's cpu profile searches them (float32 weights, ``--windows``
calibration windows of WikiText-2 train, one per mini-batch, drawn with seed 1 by the family's window
rule): seconds of the Taylor selector (one forward and backward per mini-batch) both ways, one after
the other in this process, their ratio, and whether the Taylor and Fisher scores are the same bits.
"""
import argparse
import contextlib
import time

import torch
from jobs_speedup import emit

import repro.methods.bandit as bandit
from repro.arch import bos_token
from repro.assets import load_model, load_text
from repro.calib import sample_windows
from repro.evaluate.ppl import tokenize
from repro.evaluate.prefix import UnitEvaluator, lm_batches


def scores(model, batches, kinds) -> tuple[float, dict]:
    t0 = time.perf_counter()
    with UnitEvaluator(model, batches) as ev:
        taylor = bandit.select_units("taylor", ev, 1, kinds=kinds).scores
    seconds = time.perf_counter() - t0
    with UnitEvaluator(model, batches) as ev:
        fisher = bandit.select_units("fisher", ev, 1, kinds=kinds).scores
    return seconds, {"taylor": taylor, "fisher": fisher}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", nargs="+", default=["smollm2-135m", "gemma3-270m"])
    ap.add_argument("--windows", type=int, default=8)
    ap.add_argument("--seqlen", type=int, default=128)
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    read_only = bandit.gradients_only_for
    out = {"what": __doc__.split("\n\n")[0], "threads": torch.get_num_threads(), "windows": a.windows,
           "seqlen": a.seqlen, "dtype": "float32", "models": {}}
    for name in a.models:
        loaded = load_model(name)
        bos = bos_token(loaded.model.config, loaded.tokenizer)
        wins = sample_windows(tokenize(loaded.tokenizer, load_text("wikitext2-train")), a.windows, a.seqlen, 1, bos)
        batches = lm_batches(wins, 1)
        for kinds in (("head",), ("mlp",)):
            runs = {}
            for way, only in (("every gradient", lambda *x: contextlib.nullcontext()), ("read weights only", read_only)):
                bandit.gradients_only_for = only
                runs[way] = scores(loaded.model, batches, kinds)
            bandit.gradients_only_for = read_only
            (before, a_scores), (after, b_scores) = runs["every gradient"], runs["read weights only"]
            out["models"][f"{name} {kinds[0]}"] = {
                "seconds_every_gradient": round(before, 2), "seconds_read_weights_only": round(after, 2),
                "ratio": round(after / before, 3), "same_scores": a_scores == b_scores}
            print(name, kinds, out["models"][f"{name} {kinds[0]}"], flush=True)
    emit(out, a.out)


if __name__ == "__main__":
    main()
