"""bfloat16 on this CPU, three ways, against a committed bfloat16 record computed on a machine with fast bf16.

On a CPU without AVX512-BF16 / AMX, ``repro`` computes a record's bf16 matrix products as float32 products of the
bf16 operands, rounded to bf16 (:mod:`repro.assets.precision`), because torch's own bf16 kernels are slow
there. This measures, on the windows of a committed dense record (its per-window NLLs):

- ``native``: torch's own bf16 kernels (``REPRO_BF16=native``);
- ``products``: bf16 products through float32 (what records computed here use);
- ``float32``: the model in float32 (for scale: how far bf16 itself is from float32);

each with its perplexity, its largest per-window NLL difference from the record, and its seconds. With
``--cell KEY``, a committed pruned cell of ``--notebook`` is also recomputed here, in a scratch copy of the
results (nothing committed is touched): its perplexity against the record's and whether its mask is the same,
i.e. how far one cell moves between machines (calibration sums taken in another order included).

    python benchmarks/bf16_products.py --cell e87cc84df57d72ad
"""
import argparse
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from repro.assets.data import load_text
from repro.assets.machine import describe
from repro.assets.models import load_model
from repro.assets.precision import Float32Products
from repro.evaluate.ppl import perplexity

ROOT = Path(__file__).resolve().parents[1]


def dense(record: dict, how: str) -> dict:
    c = record["config"]
    loaded = load_model(c["model"]["name"])
    model = loaded.model.to(torch.float32 if how == "float32" else torch.bfloat16).eval()
    data = load_text(f"{c['data']['name']}:{c['data']['split']}")
    assert data.sha256 == c["data"]["sha256"], "not the record's data"
    t0 = time.perf_counter()
    with Float32Products() if how == "products" else contextlib.nullcontext():
        r = perplexity(model, loaded.tokenizer, data, c["seqlen"], c["max_windows"], c["batch_size"], False,
                       None, bool(c.get("spread"))).as_dict()
    seconds = time.perf_counter() - t0
    ours, ref = np.array(r["window_nll"]), np.array(record["result"]["window_nll"])
    return {"ppl": r["ppl"], "record_ppl": record["result"]["ppl"], "rel_ppl_diff": r["ppl"] / record["result"]["ppl"] - 1,
            "max_window_nll_diff": float(np.abs(ours - ref).max()), "mean_window_nll_diff": float((ours - ref).mean()),
            "seconds": seconds}


def cell(notebook: str, folder: str, key: str) -> dict:
    record = json.loads((ROOT / "results" / folder / f"{key}.json").read_text())
    with tempfile.TemporaryDirectory() as tmp:
        scratch = Path(tmp) / "results"
        shutil.copytree(ROOT / "results", scratch)
        (scratch / folder / f"{key}.json").unlink()
        subprocess.run([sys.executable, "-m", "repro", "run", notebook, "--set", f"results_dir={scratch}",
                        "--jobs", "1"], check=True, cwd=ROOT, env={**os.environ, "REPRO_PROGRESS": "off"})
        again = json.loads((scratch / folder / f"{key}.json").read_text())
    a, b = record["result"], again["result"]
    return {"key": key, "config": {k: record["config"][k] for k in ("model", "method", "sparsity", "params")},
            "calib_seed": record["config"].get("calibration", {}).get("seed"),
            "record_machine": record.get("machine"), "record_ppl": a["ppl"], "ppl": b["ppl"],
            "rel_ppl_diff": b["ppl"] / a["ppl"] - 1, "same_mask": a.get("zeros_sha256") == b.get("zeros_sha256"),
            "max_window_nll_diff": float(np.abs(np.array(a["window_nll"]) - np.array(b["window_nll"])).max()),
            "record_seconds": record["seconds"], "seconds": again["seconds"], "machine": again["machine"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dense", default="4cf4bfe78e2e3a42", help="key of the committed dense record (prune-ppl)")
    ap.add_argument("--ways", nargs="+", default=["products", "float32", "native"])
    ap.add_argument("--cell", help="key of a committed pruned cell (prune-ppl) to recompute here")
    ap.add_argument("--notebook", default="notebooks/02_ogas_unstructured.py")
    ap.add_argument("--out", default=str(ROOT / "benchmarks/results/bf16_products_smollm2-135m.json"))
    a = ap.parse_args()
    record = json.loads((ROOT / "results/prune-ppl" / f"{a.dense}.json").read_text())
    out = {"dense_record": a.dense, "record_machine": record.get("machine"), "machine": describe("bfloat16"),
           "windows": f"{record['config']['max_windows']} x {record['config']['seqlen']}",
           "dense": {how: dense(record, how) for how in a.ways}}
    if a.cell:
        out["cell"] = cell(a.notebook, "prune-ppl", a.cell)
    Path(a.out).write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
