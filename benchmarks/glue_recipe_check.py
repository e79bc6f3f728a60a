"""Which learning rate section 6 of notebook 1 fine-tunes with: the paper's 1e-5 (RoBERTa-large on the full
GLUE training sets) against 5e-5 (the usual rate for small BERT encoders), each with the paper's batch 16 and
3 / 5 / 10 epochs, on fold 0 of each task's 5-fold split (the fold notebook 1 scores first). Prints and writes
the held-out metric beside the trivial answer's.

    python benchmarks/glue_recipe_check.py --out benchmarks/results/glue_recipe_check.json
"""
from __future__ import annotations

import argparse
import json
import time
from dataclasses import replace

import numpy as np

from repro.assets.encoders import load_classifier
from repro.assets.glue import PAPER_RECIPES, finetune, glue_examples, kfold, predict
from repro.evaluate.stats import classification_metric, paired_metric_difference
from repro.papers.mpg.glue import trivial, trivial_answer


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--encoder", default="minilm-l6")
    ap.add_argument("--tasks", nargs="+", default=["sst2", "mrpc", "rte"])
    ap.add_argument("--lrs", nargs="+", type=float, default=[1e-5, 5e-5])
    ap.add_argument("--out")
    args = ap.parse_args()
    rows = []
    for task in args.tasks:
        ex = glue_examples(task)
        train, test = kfold(ex.labels, 5, 0)[0]
        y = ex.labels[test]
        for lr in args.lrs:
            recipe = replace(PAPER_RECIPES[task], lr=lr)
            loaded = load_classifier(args.encoder, 2, seed=0)
            t0 = time.perf_counter()
            losses = finetune(loaded.model, loaded.tokenizer, ex, train, recipe, seed=0)
            pred = predict(loaded.model, loaded.tokenizer, ex, test, recipe.max_length)
            value, name = trivial(ex.metric, y)
            d = paired_metric_difference(ex.metric, y, pred, trivial_answer(ex.metric, y))
            rows.append({"task": task, "lr": lr, "epochs": recipe.epochs, "batch": recipe.batch_size,
                         "n_train": len(train), "n_test": len(test), "metric": ex.metric,
                         "value": float(classification_metric(ex.metric, y, pred)), "trivial": value,
                         "trivial_name": name, "vs_trivial": d.estimate, "vs_trivial_ci": d.ci,
                         "last_train_loss": losses[-1], "seconds": time.perf_counter() - t0})
            r = rows[-1]
            print(f"{task} lr {lr:g}: {r['metric']} {100 * r['value']:.1f} vs {name} {100 * value:.1f} "
                  f"({100 * d.estimate:+.1f} [{100 * d.ci[0]:+.1f}, {100 * d.ci[1]:+.1f}]); loss {losses[-1]:.3f}; "
                  f"{r['seconds']:.0f} s", flush=True)
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"encoder": args.encoder, "fold": "0 of 5 (split seed 0), fine-tuning seed 0", "rows": rows},
                      f, indent=1)


if __name__ == "__main__":
    np.set_printoptions(precision=3)
    main()
