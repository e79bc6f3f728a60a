"""What a notebook costs from an empty results folder, from its committed records: the sum of the
``seconds`` each record it reads took to compute (one process, as measured when it was made; model
loads, conversions and training are not in records), per experiment folder.

    python benchmarks/record_seconds.py notebooks/03_bandit_pruning.py [...] [--profile notebooks/profiles/cpu.yaml] \\
        [--out benchmarks/results/record_seconds_cpu.json]

The records are those the notebook's plan reads (every record it asks for exists: nothing is computed).
"""
import argparse
import json
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from jobs_speedup import emit  # noqa: E402

from repro.jobs import Context, notebook_params  # noqa: E402
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
    out = {"profile": a.profile, "notebooks": {}}
    for src in a.notebooks:
        minutes, count = Counter(), Counter()
        for p in read_paths(src, a.profile):
            minutes[p.parent.name] += (json.loads(p.read_text()).get("seconds") or 0) / 60
            count[p.parent.name] += 1
        out["notebooks"][src] = {"records": sum(count.values()), "minutes": round(sum(minutes.values()), 1),
                                 "by folder": {k: {"records": count[k], "minutes": round(minutes[k], 1)} for k in count}}
    emit(out, a.out)


if __name__ == "__main__":
    main()
