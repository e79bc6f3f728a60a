"""``repro run --jobs N`` against ``--jobs 1``: wall-clock ratio from an empty results folder, and
whether every record comes out the same.

    python benchmarks/jobs_speedup.py notebooks/01_mpg_head_pruning.py [--profile notebooks/profiles/cpu.yaml] \\
        [--jobs 1,2] [--out benchmarks/results/jobs_speedup_01.json]

Each run computes the notebook's whole grid into its own empty results folder (models and
conversions come from ``$REPRO_CACHE``, as in ``make reproduce``), one run after the other on the same
machine. Records are compared with measured times left out (keys holding "seconds", prefill timings,
a pruning report's stage ``timings``):
between the runs, and with the committed ``results/`` records of the same keys.
"""
import argparse
import json
import tempfile
import time
from pathlib import Path

from repro.jobs import run_notebook

ROOT = Path(__file__).resolve().parents[1]


def untimed(x):
    if isinstance(x, dict):
        return {k: untimed(v) for k, v in x.items()
                if "seconds" not in k and not k.startswith("prefill") and k != "timings"}
    return [untimed(v) for v in x] if isinstance(x, list) else x


def records(root: Path) -> dict:
    return {str(p.relative_to(root)): untimed(json.loads(p.read_text())["result"])
            for p in root.rglob("*.json") if p.parent.name != "models"}


def differing(a: dict, b: dict) -> list[str]:
    return sorted(k for k in set(a) & set(b) if a[k] != b[k])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("notebook")
    ap.add_argument("--profile", default=str(ROOT / "notebooks/profiles/cpu.yaml"))
    ap.add_argument("--jobs", default="1,2")
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    runs, recs = {}, {}
    with tempfile.TemporaryDirectory() as tmp:
        for n in map(int, a.jobs.split(",")):
            folder = Path(tmp) / f"jobs{n}"
            t0 = time.perf_counter()
            summary = run_notebook(a.notebook, a.profile, jobs=n, overrides={
                "results_dir": str(folder / "results"), "figures_dir": str(folder / "figures"), "update_readme": False})
            runs[n] = {**summary, "wall_seconds": round(time.perf_counter() - t0, 1)}
            recs[n] = records(folder / "results")
    committed = records(ROOT / "results")
    first, *others = list(runs)
    out = {"notebook": a.notebook, "profile": a.profile, "runs": runs,
           "ratios": {f"jobs {n} / jobs {first}": round(runs[n]["wall_seconds"] / runs[first]["wall_seconds"], 3)
                      for n in others},
           "records": {n: len(r) for n, r in recs.items()},
           "differing between runs": {f"jobs {n} vs jobs {first}": differing(recs[n], recs[first]) for n in others},
           "differing from committed results/": {n: differing(r, committed) for n, r in recs.items()},
           "in committed results/": {n: len(set(r) & set(committed)) for n, r in recs.items()}}
    emit(out, a.out)


def emit(out: dict, path: str | None) -> None:
    """Print a benchmark's result as JSON and write it to ``path`` when given."""
    text = json.dumps(out, indent=1)
    print(text)
    if path:
        Path(path).write_text(text + "\n")


if __name__ == "__main__":
    main()
