"""What handing lm-eval only the first ``limit`` documents buys: one zero-shot evaluation as the
notebooks run it, with the whole split handed to lm-eval (the old loader: lm-eval processes every
document, e.g. HellaSwag's ``process_docs`` over 10,042 documents each time it asks for them, then
keeps the first ``limit``) against the default (the split's first ``limit`` documents only).

    python benchmarks/zeroshot_overhead.py [--model smollm2-135m] [--limit 100] [--threads 1] \\
        [--tasks arc_challenge,boolq,hellaswag,winogrande,arc_easy,piqa] [--out PATH]

Notebook 2's Table 4 task set by default, bf16. Each way runs twice in one process (the first run
of each also reads the data files); reports the seconds of the second runs, the ratio new / old,
and whether the two results are identical apart from measured times (they must be: same
documents, same requests).
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
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--tasks", default=TABLE_4)
    ap.add_argument("--limit", type=int, default=100)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    loaded = load_model(a.model, "bfloat16")
    tasks = a.tasks.split(",")
    first = zs._load_split

    def whole_split(task, limit=None, **metadata):  # the loader before: lm-eval applies the limit
        return first(task, None, **metadata)

    out = {"model": a.model, "dtype": "bfloat16", "tasks": tasks, "limit": a.limit, "threads": a.threads}
    results = {}
    for label, loader in (("whole split", whole_split), ("first limit documents", first)):
        zs._load_split = loader
        seconds = []
        for _ in range(2):
            t = time.perf_counter()
            results[label] = zs.evaluate_zeroshot(loaded.model, loaded.tokenizer, tasks, limit=a.limit, progress=False)
            seconds.append(round(time.perf_counter() - t, 2))
        out[label] = {"seconds": seconds}
    zs._load_split = first
    old, new = out["whole split"]["seconds"][1], out["first limit documents"]["seconds"][1]
    out["ratio"] = round(new / old, 3)
    out["identical"] = untimed(results["whole split"]) == untimed(results["first limit documents"])
    emit(out, a.out)


if __name__ == "__main__":
    main()
