"""The compute floor of notebook 3's loss searches: what one layer forward and one loss cost on one core,
times the work the searches' records count.

    python benchmarks/search_floor.py [--model smollm2-135m] [--threads 1] [--out PATH]

Measures, in the search dtype (bfloat16 where fast) on windows of 128 tokens: the full forward per window
at batch sizes 1, 2, 4 and 16 (what batching windows could buy), one decoder layer's share of it, and the
output layer plus the float32 loss of one window. Then reads every loss-search record (greedy, UCB,
Thompson) of ``--model`` that the notebook's plan reads (``--notebook``, ``--profile``) and multiplies its counted layer forwards and losses by those
costs: the core-minutes the searches need on this machine however they are scheduled.
"""
import argparse
import json
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from jobs_speedup import emit  # noqa: E402
from loss_chunk import ms  # noqa: E402
from record_seconds import read_paths  # noqa: E402

from repro.arch import adapter  # noqa: E402
from repro.assets import load_model  # noqa: E402
from repro.evaluate.prefix import token_nll  # noqa: E402

SEARCHES = ("greedy", "ucb", "thompson")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--notebook", default="notebooks/03_bandit_pruning.py")
    ap.add_argument("--profile", default="notebooks/profiles/cpu.yaml")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--dtype", default="bfloat16")
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    paths = sorted(read_paths(a.notebook, a.profile))  # before the thread count changes (timing cells key on it)
    torch.set_num_threads(a.threads)
    loaded = load_model(a.model, dtype=a.dtype)
    model, ad = loaded.model.eval(), adapter(loaded.model)
    hidden = model.config.hidden_size
    per_window, head_loss = {}, None
    with torch.no_grad():
        for b in (1, 2, 4, 16):
            ids = torch.randint(100, 1000, (b, 128))
            per_window[b] = ms(lambda: model(input_ids=ids, use_cache=False), 5) / b
            if b == 1:
                h = torch.randn(1, 128, hidden, dtype=next(model.parameters()).dtype)
                head_loss = ms(lambda: token_nll(ad.logits_from(h), ids), 5)
    layer = (per_window[1] - head_loss) / ad.n_layers
    work = {"layer_forwards": 0, "losses": 0, "records": 0, "recorded_core_minutes": 0.0}
    for p in paths:  # the records the notebook reads, no others
        if p.parent.name != "bandit-select":
            continue
        r = json.loads(p.read_text())
        c = r["config"]
        if c["model"]["name"] != a.model or c["method"] not in SEARCHES or (r.get("seconds") or 0) < 1:
            continue  # a prefix of a longer search (3% of the 5% run) is cut from that run's record in microseconds
        bud = r["result"]["budget"]
        work["layer_forwards"] += bud["layer_forwards"]
        work["losses"] += bud["candidate_losses"] + bud["baseline_losses"]
        work["records"] += 1
        work["recorded_core_minutes"] += r["seconds"] / 60
    floor = (work["layer_forwards"] * layer + work["losses"] * head_loss) / 60000
    emit({"model": a.model, "dtype": a.dtype, "threads": a.threads, "tokens_per_window": 128,
          "ms_per_window_full_forward_by_batch": {b: round(v, 2) for b, v in per_window.items()},
          "batch_16_speedup": round(per_window[1] / per_window[16], 3),
          "ms_per_layer_forward": round(layer, 3), "ms_output_layer_and_loss": round(head_loss, 2),
          "searches": {**work, "recorded_core_minutes": round(work["recorded_core_minutes"], 1)},
          "floor_core_minutes": round(floor, 1), "floor_wall_minutes_on_2_cores": round(floor / 2, 1)}, a.out)


if __name__ == "__main__":
    main()
