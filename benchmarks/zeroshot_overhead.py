"""What two zero-shot speed-ups buy, on one evaluation as the notebooks run it (bf16, first 100
documents per task, one thread):

* **first documents only**: lm-eval is handed the split's first ``limit`` documents, read once per
  process, instead of the whole split read from disk on every call (lm-eval then processed every
  document, e.g. HellaSwag's ``process_docs`` over 10,042 documents each time it asked for them);
* **output layer where read**: the logits (and lm-eval's log-softmax over the vocabulary) only at
  the trailing positions of each batch that hold its continuations (``repro.evaluate.zeroshot.positions_read``).

    python benchmarks/zeroshot_overhead.py [--model gemma3-270m] [--limit 100] [--threads 1] \\
        [--tasks arc_challenge,boolq,hellaswag,winogrande,arc_easy,piqa] [--out PATH]

Notebook 2's Table 4 task set by default. After one warm-up call (imports, lm-eval's task index),
each way runs once: before (whole split, plain HFLM), with the first speed-up, with both (the
default). Reports seconds, ratios to before, and whether every result is identical to before's
apart from measured times (it must be: the same documents, the same requests, and each
position's logits do not depend on the others).
"""
import argparse
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from jobs_speedup import emit, untimed  # noqa: E402

import repro.evaluate.zeroshot as zs  # noqa: E402
from repro.assets import load_model  # noqa: E402

TABLE_4 = "arc_challenge,boolq,hellaswag,winogrande,arc_easy,piqa"


def main() -> None:
    from lm_eval.models.huggingface import HFLM

    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="gemma3-270m")
    ap.add_argument("--tasks", default=TABLE_4)
    ap.add_argument("--limit", type=int, default=100)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    loaded = load_model(a.model, "bfloat16")
    tasks = a.tasks.split(",")
    first, scored = zs._load_split, zs._scored_lm

    def whole_split(task, limit=None, **metadata):  # the loader before: the whole split, read from disk each call
        import datasets

        return datasets.DatasetDict({zs._DATA[task].split: zs._split.__wrapped__(task)})

    ways = {"before": (whole_split, lambda: HFLM), "first documents only": (first, lambda: HFLM),
            "and output layer where read (default)": (first, scored)}
    out = {"model": a.model, "dtype": "bfloat16", "tasks": tasks, "limit": a.limit, "threads": a.threads}
    zs.evaluate_zeroshot(loaded.model, loaded.tokenizer, tasks, limit=1, progress=False)  # warm-up
    results = {}
    for label, (loader, lm) in ways.items():
        zs._load_split, zs._scored_lm = loader, lm
        t = time.perf_counter()
        results[label] = zs.evaluate_zeroshot(loaded.model, loaded.tokenizer, tasks, limit=a.limit, progress=False)
        out[label] = {"seconds": round(time.perf_counter() - t, 2)}
    zs._load_split, zs._scored_lm = first, scored
    before = out["before"]["seconds"]
    for label in list(ways)[1:]:
        out[label]["ratio to before"] = round(out[label]["seconds"] / before, 3)
        out[label]["identical to before"] = untimed(results[label]) == untimed(results["before"])
    emit(out, a.out)


if __name__ == "__main__":
    main()
