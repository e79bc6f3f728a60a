"""The `lab` profile's promise, measured: each notebook from an empty `.cache/lab/`, as `make reproduce PROFILE=lab`
runs it (plan and compute with `repro run`, then render with `repro notebook`), timed per notebook on this machine,
after the one-time preparation (model conversion, training the Fashion-MNIST ViT), which is timed apart.

    .venv/bin/python benchmarks/lab_timing.py [--notebooks 01 02 03] [--out benchmarks/results/lab_timing.json]

A run of some notebooks replaces their rows in an existing result file of the same machine and keeps the
others. The preparation loads each model the lab profile names (converted or trained once per machine under $REPRO_CACHE:
on a machine that has them, seconds); with REPRO_CACHE pointing at an empty folder it is timed from scratch.
`.cache/lab/` is emptied first (moved aside to `.cache/lab.before-timing-<date>-<time>/` if it held anything,
never over an earlier one). Run it on an otherwise idle machine: the budget is 15 minutes per notebook on 2 cores in float32.
"""
import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
from jobs_speedup import emit  # noqa: E402

PROFILE = ROOT / "notebooks/profiles/lab.yaml"
BUDGET_S = 15 * 60


def lab_models() -> list[str]:
    """Every model the lab profile's notebooks load (language, vision and the GLUE encoder), once each."""
    from repro.profiles import load_profile

    names = []
    for src in sorted((ROOT / "notebooks").glob("[0-9]*.py")):
        p = load_profile(PROFILE, src.stem)
        names += [*p.get("models", []), *p.get("vision_models", []), *([p["glue_encoder"]] if p.get("glue_tasks") else [])]
    return list(dict.fromkeys(names))


def prepare(names: list[str]) -> dict:
    """Seconds to have each model ready (loaded once: converted or trained first where this machine lacks it)."""
    out = {}
    for name in names:
        code = ("from repro.assets.encoders import known_encoders, load_classifier; "
                "from repro.assets.models import load_model; "
                f"load_classifier({name!r}, 2) if {name!r} in known_encoders() else load_model({name!r})")
        start = time.perf_counter()
        done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
        if done.returncode:
            raise SystemExit(f"preparing {name} failed:\n{done.stderr[-2000:]}")
        out[name] = round(time.perf_counter() - start, 1)
        print(f"prepared {name}: {out[name]} s", flush=True)
    return out


def timed(cmd: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, cwd=ROOT, check=True)
    return round(time.perf_counter() - start, 1)


def main(argv=None) -> int:
    import torch

    from repro.assets.machine import describe, label

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--notebooks", nargs="*", default=["01", "02", "03"], help="notebook numbers (default: all)")
    ap.add_argument("--out", default=str(ROOT / "benchmarks/results/lab_timing.json"))
    args = ap.parse_args(argv)
    sources = [s for s in sorted((ROOT / "notebooks").glob("[0-9]*.py")) if s.name[:2] in args.notebooks]

    prep = prepare(lab_models())
    cache = ROOT / ".cache/lab"
    if cache.exists() and any(cache.iterdir()):
        aside = ROOT / f".cache/lab.before-timing-{time.strftime('%Y%m%d-%H%M%S')}"  # never over an earlier one
        cache.rename(aside)
        print(f"{cache.relative_to(ROOT)} moved aside to {aside.relative_to(ROOT)}")
    rows = []
    for src in sources:
        rel = src.relative_to(ROOT)
        run_s = timed([sys.executable, "-m", "repro", "run", str(rel), "--profile", str(PROFILE.relative_to(ROOT))])
        out = cache / "notebooks" / src.with_suffix(".ipynb").name
        out.parent.mkdir(parents=True, exist_ok=True)
        render_s = timed([sys.executable, "-m", "repro", "notebook", str(rel), "--profile",
                          str(PROFILE.relative_to(ROOT)), "--out", str(out.relative_to(ROOT)), "--force"])
        executed = json.loads(out.read_text())
        errors = sum(o.get("output_type") == "error" for c in executed["cells"] for o in c.get("outputs", []))
        tries = [float(line.split()[2]) for c in executed["cells"] for o in c.get("outputs", [])
                 for line in "".join(o.get("text", "")).splitlines() if line.startswith("answered in ")]
        records = sum(1 for _ in (cache / "results").rglob("*.json"))
        rows.append({"notebook": src.stem, "date": time.strftime("%Y-%m-%d %H:%M"), "run_seconds": run_s, "render_seconds": render_s,
                     "total_seconds": round(run_s + render_s, 1), "within_15_min": run_s + render_s <= BUDGET_S,
                     "try_it_seconds": tries, "error_outputs": errors, "records_so_far": records})
        print(json.dumps(rows[-1]), flush=True)
    machine = describe("float32", torch.get_num_threads())
    before = json.loads(Path(args.out).read_text()) if Path(args.out).is_file() else {}
    if before.get("machine_detail", {}).get("cpu") == machine.get("cpu"):  # the same machine: keep the others
        rows = sorted([r for r in before.get("notebooks", []) if r["notebook"] not in {r["notebook"] for r in rows}]
                      + rows, key=lambda r: r["notebook"])
        prep = {**before.get("preparation_seconds", {}), **prep}
    emit({"what": "each notebook under the lab profile from an empty .cache/lab/ (repro run, then repro notebook, as "
                  "`make reproduce PROFILE=lab` runs them), after the one-time preparation timed apart",
          "date": time.strftime("%Y-%m-%d"), "machine": label(machine), "machine_detail": machine,
          "budget_seconds_per_notebook": BUDGET_S, "preparation_seconds": prep, "notebooks": rows,
          "all_seconds": round(sum(r["total_seconds"] for r in rows), 1)}, args.out)
    return 0 if all(r["within_15_min"] and not r["error_outputs"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
