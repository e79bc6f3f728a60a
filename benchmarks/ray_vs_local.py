"""Records written by Ray workers against the local executor's: the same notebook grid computed from an
empty results folder with ``--executor local`` and with ``--executor ray`` (a local Ray instance), both
with ``--jobs N``; every record compared with measured times left out.

    python benchmarks/ray_vs_local.py [notebooks/01_mpg_head_pruning.py] [--profile notebooks/profiles/smoke.yaml] \\
        [--jobs 2] [--executors local,ray,ray] [--out benchmarks/results/ray_vs_local_01_smoke.json]

For each differing record it gives the relative difference of its perplexity (where it has one) and
whether the rest of the record (heads, scores, ...) agrees. A name given twice runs twice: Ray's two
runs are compared with each other as well. (Until the token memo was keyed by the tokenizer object,
Ray runs differed here: which cells a worker process ran first decided which tiny model's tokens the
other got, see ``repro.evaluate.ppl.tokenize``.)
"""
import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from jobs_speedup import differing, emit, records  # noqa: E402

from repro.jobs import run_notebook  # noqa: E402


def ppl_of(result: dict):
    return result.get("ppl") if isinstance(result, dict) else None


def compare(a: dict, b: dict) -> list[dict]:
    rows = []
    for k in differing(a, b):
        pa, pb = ppl_of(a[k]), ppl_of(b[k])
        rest = {f: v for f, v in a[k].items() if f not in ("ppl", "ci95", "window_nll", "nll", "window_ppl")}
        rest_b = {f: v for f, v in b[k].items() if f not in ("ppl", "ci95", "window_nll", "nll", "window_ppl")}
        rows.append({"record": k, "ppl": [pa, pb], "relative": None if not (pa and pb) else round(pb / pa - 1, 6),
                     "rest equal": rest == rest_b})
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("notebook", nargs="?", default=str(ROOT / "notebooks/01_mpg_head_pruning.py"))
    ap.add_argument("--profile", default=str(ROOT / "notebooks/profiles/smoke.yaml"))
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--executors", default="local,ray,ray", help="a name twice: two runs, compared")
    ap.add_argument("--keep", default=None, help="keep the results folders under this folder")
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    runs, recs = {}, {}
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(a.keep or tmp)
        names = a.executors.split(",")
        for i, ex in enumerate(names):
            name = ex if names.index(ex) == i else f"{ex}-{names[:i + 1].count(ex)}"  # "ray,ray": ray, ray-2
            folder = base / name
            t0 = time.perf_counter()
            summary = run_notebook(a.notebook, a.profile, jobs=a.jobs, executor=ex, overrides={
                "results_dir": str(folder / "results"), "figures_dir": str(folder / "figures"), "update_readme": False})
            runs[name] = {**summary, "wall_seconds": round(time.perf_counter() - t0, 1)}
            recs[name] = records(folder / "results")
            if ex == "ray":
                import ray

                ray.shutdown()
    first, *others = list(recs)
    out = {"notebook": a.notebook, "profile": a.profile, "jobs": a.jobs, "runs": runs,
           "records": {ex: len(r) for ex, r in recs.items()},
           "differing": {f"{ex} vs {first}": compare(recs[first], recs[ex]) for ex in others}}
    for ex in others:  # a repeated run against its executor's first run
        base = ex.rsplit("-", 1)[0]
        if base != ex and base != first:
            out["differing"][f"{ex} vs {base}"] = compare(recs[base], recs[ex])
    out["summary"] = {k: f"{len(v)} of {len(recs[first])} records differ" for k, v in out["differing"].items()}
    emit(out, a.out)


if __name__ == "__main__":
    main()
