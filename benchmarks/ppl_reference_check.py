"""Independent check of `python -m repro ppl`: the textbook loop that Wanda/SparseGPT use
(``model(x, labels=x).loss`` per window, transformers' own loss), written without any repro
evaluation code, compared against the CLI's JSON (same tokens, windows, NLL). Gemma windows get
``<bos>`` first, as Gemma is trained (the tokenizer's own leading BOS dropped, ``seqlen`` text
tokens per window, all of them scored), written here again from that description.

    python benchmarks/ppl_reference_check.py --model smollm2-135m --max-windows 32 --dtype bfloat16
"""
import argparse
import json
import math
import subprocess
import sys

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--seqlen", type=int, default=1024)
    ap.add_argument("--max-windows", type=int, default=32)
    ap.add_argument("--dtype", default="bfloat16")
    a = ap.parse_args()
    cli = json.loads(subprocess.run(
        [sys.executable, "-m", "repro", "ppl", "--model", a.model, "--seqlen", str(a.seqlen),
         "--max-windows", str(a.max_windows), "--dtype", a.dtype],
        check=True, capture_output=True, text=True).stdout)

    # Independent path: raw file -> HF rows -> "\n\n".join -> tokenizer -> windows -> labels loss.
    from repro.assets.models import cache_dir  # only to find the converted folder
    folder = cache_dir("models") / a.model
    path = cli["data_identity"]["source"].removeprefix("file:")
    with open(path, encoding="utf-8", newline="") as f:
        rows = ["" if line == " \n" else line for line in f]
    tok = AutoTokenizer.from_pretrained(folder)
    ids = tok("\n\n".join(rows), return_tensors="pt").input_ids
    dtype = {"bfloat16": torch.bfloat16, "float32": torch.float32}[a.dtype]
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=dtype).eval()
    bos = tok.bos_token_id if model.config.model_type.startswith("gemma") else None
    if bos is not None and ids[0, 0] == bos:
        ids = ids[:, 1:]
    n = min(ids.shape[1] // a.seqlen, a.max_windows)
    nlls = []
    with torch.no_grad():
        for i in range(n):
            x = ids[:, i * a.seqlen:(i + 1) * a.seqlen]
            if bos is not None:
                x = torch.cat([torch.tensor([[bos]]), x], dim=1)
            nlls.append(model(x, labels=x).loss.float().item())
    ref = math.exp(sum(nlls) / n)
    diff = max(abs(p - q) for p, q in zip(nlls, cli["window_nll"]))
    print(json.dumps({"model": a.model, "dtype": a.dtype, "bos_first": bos is not None, "n_windows": n, "n_tokens": n * a.seqlen,
                      "cli_n_tokens": cli["n_tokens"], "cli_ppl": cli["ppl"], "reference_ppl": ref,
                      "max_window_nll_diff": diff, "rel_ppl_diff": abs(ref - cli["ppl"]) / ref}))


if __name__ == "__main__":
    main()
