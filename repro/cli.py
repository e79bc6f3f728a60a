"""Headless entry point: ``python -m repro {ppl,heads} ...`` prints one JSON object.

Bad input (unknown names, sparsity outside [0, 1), missing data, a failed sha256, seqlen past
the model's limit...) exits with status 2 and a one-line message on stderr.
"""
from __future__ import annotations

import argparse
import json
import logging
import sys
import warnings

from repro.errors import ReproError


def _ppl_args(p: argparse.ArgumentParser, data_default: str | None) -> None:
    p.add_argument("--eval" if data_default is None else "--data", dest="data", default=data_default,
                   help="text dataset spec, e.g. wikitext2:test" + ("" if data_default else " (evaluate the result)"))
    p.add_argument("--seqlen", type=int, default=1024)
    p.add_argument("--max-windows", type=int, default=None, help="evaluate the first N windows only")
    p.add_argument("--batch-size", type=int, default=1)
    p.add_argument("--dtype", default="bfloat16", help="evaluation dtype: bfloat16 (default) or float32")


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m repro", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True)

    p = sub.add_parser("ppl", help="perplexity of a model (SparseGPT/Wanda protocol)")
    p.add_argument("--model", required=True, help="short name, hub id or local folder")
    _ppl_args(p, "wikitext2:test")

    h = sub.add_parser("heads", help="score attention heads, prune, optionally evaluate")
    h.add_argument("--model", required=True)
    h.add_argument("--method", default="mpg", help="mpg, mp, wanda-head, sparsegpt-head, gradient-head, hybrid, "
                   "magnitude-head, random")
    h.add_argument("--z", type=float, default=2.0)
    h.add_argument("--sparsity", type=float, default=0.25)
    h.add_argument("--tie-break", default="index", choices=["index", "random"])
    h.add_argument("--seed", type=int, default=0)
    h.add_argument("--remove", action="store_true", help="remove heads physically instead of zeroing")
    h.add_argument("--calib-data", default="wikitext2-train")
    h.add_argument("--calib-nsamples", type=int, default=64)
    h.add_argument("--calib-seqlen", type=int, default=512)
    _ppl_args(h, None)
    return ap


def _ppl_json(loaded, data_spec: str, args) -> dict:
    from repro.assets import load_text
    from repro.evaluate import perplexity

    data = load_text(data_spec)
    r = perplexity(loaded.model, loaded.tokenizer, data, args.seqlen, args.max_windows, args.batch_size)
    return {"data": data.label, "data_identity": data.identity, "data_sha256": data.sha256, **r.as_dict()}


def cmd_ppl(args) -> dict:
    from repro.assets import load_model

    loaded = load_model(args.model, args.dtype)
    return {"model": loaded.name, "model_identity": loaded.identity, **_ppl_json(loaded, args.data, args)}


def cmd_heads(args) -> dict:
    import torch

    from repro.arch import adapter
    from repro.assets import load_model, load_text
    from repro.calib import Calibration, sample_windows
    from repro.evaluate.ppl import tokenize
    from repro.evaluate.speed import count_params
    from repro.methods.heads import get_method, score_heads, select_heads
    from repro.structure import remove_heads, zero_heads
    from repro.errors import check_fraction

    check_fraction("sparsity", args.sparsity)
    method = get_method(args.method)
    loaded = load_model(args.model, "float32")
    calib = None
    if method.calibration:
        text = load_text(args.calib_data)
        n = args.calib_nsamples // 2 if method.calibration == "gradients" else args.calib_nsamples
        calib = Calibration(sample_windows(tokenize(loaded.tokenizer, text), n, args.calib_seqlen, args.seed),
                            {"data": text.label, "nsamples": n, "seqlen": args.calib_seqlen})
    scores = score_heads(args.method, loaded.model, calib, z=args.z, seed=args.seed)
    pruned = select_heads(scores, args.sparsity, args.tie_break, args.seed)
    ad = adapter(loaded.model)
    (remove_heads if args.remove else zero_heads)(ad, pruned)
    out = {"model": loaded.name, "model_identity": loaded.identity, "method": args.method, "z": args.z,
           "sparsity": args.sparsity, "tie_break": args.tie_break, "seed": args.seed,
           "calibration": calib.source if calib else None, "scores": scores.tolist(),
           "pruned": [list(p) for p in pruned], "n_pruned": len(pruned),
           "removed": args.remove, "params": count_params(loaded.model)}
    if args.data:
        loaded.model.to(torch.bfloat16 if args.dtype in ("bf16", "bfloat16") else torch.float32)
        out.update(_ppl_json(loaded, args.data, args))
    return out


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(message)s")
    warnings.simplefilter("default")
    try:
        out = {"ppl": cmd_ppl, "heads": cmd_heads}[args.command](args)
    except ReproError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    json.dump(out, sys.stdout)
    sys.stdout.write("\n")
    return 0
