"""What a notebook costs from an empty results folder, from its committed records: the sum of the
``seconds`` each record it reads took to compute (one process, as measured when it was made; model
loads, conversions and training are not in records), per experiment folder.

    python benchmarks/record_seconds.py notebooks/03_bandit_pruning.py [...] [--profile notebooks/profiles/cpu.yaml] \\
        [--out benchmarks/results/record_seconds_cpu.json]

The records are those the notebook's plan reads (every record it asks for exists: nothing is computed).
Beside the measured minutes, estimates from empty on *this* machine in each precision (labelled as
estimates): each record's seconds x the tokens/s its dtype ran at on the reference machine
(``repro.assets.machine.REFERENCE``) / this machine's probed tokens/s in the precision the cell would run in
here: the profile's pinned dtype, or float32 (``make reproduce EVAL_DTYPE=float32``; cells already float32
stay so).
"""
import argparse
import json
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from jobs_speedup import emit  # noqa: E402

from repro.assets.machine import REFERENCE, describe, label, probe  # noqa: E402
from repro.engines.estimate import cell_dtype  # noqa: E402
from repro.jobs import Context, notebook_params, torch_threads  # noqa: E402
from repro.store import Store  # noqa: E402


def read_paths(source: str, profile: str) -> set[Path]:
    """The record files the notebook's plan reads."""
    seen, get = set(), Store.get

    def spy(self, experiment, config):
        found = get(self, experiment, config)
        if found is not None and self.root is not None:
            seen.add(self.path(experiment, config))
        return found

    Store.get = spy
    try:
        missing = Context(source, notebook_params(source, profile, {"update_readme": False})).plan()
    finally:
        Store.get = get
    if missing:
        raise SystemExit(f"{source}: {len(missing)} record(s) missing, e.g. {missing[0].label}")
    return seen


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("notebooks", nargs="+")
    ap.add_argument("--profile", default="notebooks/profiles/cpu.yaml")
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    with torch_threads(2):
        speed = probe(["float32", "bfloat16"])
    out = {"profile": a.profile, "this machine": label(describe(threads=2)), "probe tokens/s": speed,
           "reference tokens/s": REFERENCE, "notebooks": {}}
    for src in a.notebooks:
        minutes, count, here = Counter(), Counter(), Counter()
        for p in read_paths(src, a.profile):
            r = json.loads(p.read_text())
            sec, d = r.get("seconds") or 0, cell_dtype(r["config"])
            minutes[p.parent.name] += sec / 60
            count[p.parent.name] += 1
            ref = REFERENCE.get(d, REFERENCE["float32"])
            here[d] += sec * ref / speed.get(d, speed["float32"]) / 60  # as pinned: the same dtype here
            here["float32 set"] += sec * ref / speed["float32"] / 60  # EVAL_DTYPE=float32: every cell in float32
        pinned = sum(v for k, v in here.items() if k != "float32 set")
        out["notebooks"][src] = {"records": sum(count.values()), "minutes": round(sum(minutes.values()), 1),
                                 "by folder": {k: {"records": count[k], "minutes": round(minutes[k], 1)} for k in count},
                                 "estimated core-minutes here, pinned precision": round(pinned),
                                 "estimated core-minutes here, float32 set": round(here["float32 set"])}
    emit(out, a.out)


if __name__ == "__main__":
    main()
