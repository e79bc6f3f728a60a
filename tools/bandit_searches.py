"""Compute notebook 3's sequential searches only (no evaluation) under a profile, with notebook parameters set
over it: for a CPU without fast bfloat16, where the evaluations (pinned to the profile's bfloat16) are slow but
float32 searches are not. The evaluations are then a `repro run` away on a machine with fast bfloat16.

    .venv/bin/python tools/bandit_searches.py --set search_dtype=float32 [--models smollm2-135m] [--threads 1]

It asks each (model, unit kind, method, seed) of the language-model grid for its search to the kind's largest
ratio, as `repro run` would (records already there are read, not recomputed), one process, printing each
search's seconds; an interrupted run loses at most the search in progress.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main(argv=None) -> int:
    from repro.cliargs import setting

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--profile", default=str(ROOT / "notebooks/profiles/cpu.yaml"))
    ap.add_argument("--set", dest="settings", type=setting, action="append", default=[], metavar="NAME=VALUE")
    ap.add_argument("--models", nargs="*", default=None, help="the language models to search (default: all)")
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args(argv)

    import torch

    from repro.methods.bandit import SELECTORS
    from repro.notebooks import Session, default_parameters, read_source, run_parameters
    from repro.papers import bandit as P

    torch.set_num_threads(args.threads)
    os.chdir(ROOT / "notebooks")  # the profile's relative folders, as papermill runs the notebook
    source = "03_bandit_pruning.py"
    params = {**default_parameters(read_source(source)), **run_parameters(source, args.profile, dict(args.settings))}
    params["_run"] = {"defaults": {}}
    grid = P.build(Session(params))
    p = grid.p
    for name in args.models or list(grid.lm):
        e = grid.lm[name]
        for methods, search in grid._searches(p.methods, p.search):
            for m in (m for m in methods if SELECTORS[m].sequential):
                for kind, ratios in p.unit_settings.get(name, {}).items():
                    for seed in p.seeds:
                        t = time.perf_counter()
                        e.select(m, [kind], max(ratios), seed, search, ratios=tuple(ratios))
                        print(f"{name} {m} {kind} seed {seed}: {time.perf_counter() - t:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    from repro.errors import ReproError

    try:
        sys.exit(main())
    except ReproError as err:  # bad input: one line, before any search
        print(f"error: {err}", file=sys.stderr)
        sys.exit(2)
