"""Headless entry point: ``python -m repro {ppl,heads,zeroshot} ...`` prints one JSON object.

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


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line ``error: ...`` on stderr and exit status 2."""

    def error(self, message: str):
        self.exit(2, f"error: {self.prog}: {message}\n")


def _positive(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {v}")
    return v


def _model_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", required=True, help="short name, hub id or local folder")
    p.add_argument("--device", default=None, help="cpu (default), cuda, cuda:N, or auto (accelerate device_map)")


def _ppl_args(p: argparse.ArgumentParser, data_default: str | None) -> None:
    p.add_argument("--eval" if data_default is None else "--data", dest="data", default=data_default,
                   help="text dataset spec, e.g. wikitext2:validation" + ("" if data_default else " (evaluate the result)"))
    p.add_argument("--seqlen", type=_positive, default=1024)
    p.add_argument("--max-windows", type=_positive, default=None, help="evaluate the first N windows only")
    p.add_argument("--batch-size", type=_positive, default=1)
    p.add_argument("--dtype", default="auto", help="evaluation dtype: auto (default: bfloat16 where this machine "
                   "runs it fast, else float32), bfloat16, float16 or float32")


def parser() -> argparse.ArgumentParser:
    ap = _Parser(prog="python -m repro", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True)

    p = sub.add_parser("ppl", help="perplexity of a model (SparseGPT/Wanda protocol)")
    _model_args(p)
    _ppl_args(p, "wikitext2:validation")

    h = sub.add_parser("heads", help="score attention heads, prune, optionally evaluate")
    _model_args(h)
    h.add_argument("--method", default="mpg", help="mpg, mp, wanda-head, sparsegpt-head, gradient-head, hybrid, "
                   "magnitude-head, random")
    h.add_argument("--z", type=float, default=2.0)
    h.add_argument("--sparsity", type=float, default=0.25)
    h.add_argument("--tie-break", default="index", choices=["index", "random"])
    h.add_argument("--seed", type=int, default=0, help="seed of Random scores and random tie-breaks")
    h.add_argument("--remove", action="store_true", help="remove heads physically instead of zeroing")
    h.add_argument("--calib-data", default="wikitext2-train")
    h.add_argument("--calib-nsamples", type=_positive, default=64)
    h.add_argument("--grad-nsamples", type=_positive, default=32, help="calibration windows for gradient-head")
    h.add_argument("--calib-seqlen", type=_positive, default=512)
    h.add_argument("--calib-seed", type=int, default=0)
    _ppl_args(h, None)

    u = sub.add_parser("prune", help="unstructured / N:M pruning of every linear in the blocks (Paper 2's engine)")
    _model_args(u)
    u.add_argument("--method", required=True, help="magnitude, wanda, ria, sparsegpt, ogas (and ogas-* variants)")
    u.add_argument("--sparsity", type=float, default=None, help="target fraction of zeros (N/M by default for N:M)")
    u.add_argument("--pattern", default="unstructured", help="unstructured, 2:4, 4:8, ...")
    u.add_argument("--calib", default="wikitext2-train", help="calibration text, e.g. c4-sample:calib")
    u.add_argument("--nsamples", type=_positive, default=32)
    u.add_argument("--calib-seqlen", type=_positive, default=512)
    u.add_argument("--calib-seed", type=int, default=0)
    u.add_argument("--calib-file", default=None, help=".npy token ids [nsamples, seqlen] (replaces --calib)")
    u.add_argument("--param", action="append", default=[], metavar="KEY=VALUE",
                   help="method parameter, e.g. lam=0.2, gamma=0.2, rounding=exact (repeatable)")
    u.add_argument("--save", default=None, help="save the pruned model (safetensors folder)")
    _ppl_args(u, None)

    b = sub.add_parser("bandit", help="Paper 3: select heads / MLP groups one at a time (UCB, Thompson, greedy, ...)")
    _model_args(b)
    b.add_argument("--units", default="heads", help="heads, mlp, or heads,mlp")
    b.add_argument("--ratio", type=float, required=True, help="share of the candidate units to select, in (0, 1)")
    b.add_argument("--policy", required=True, help="ucb, thompson, greedy, random, magnitude, wanda, taylor, fisher")
    b.add_argument("--seed", type=int, default=1, help="draws the calibration windows and the policy's randomness")
    b.add_argument("--group-size", type=_positive, default=32, help="channels per MLP unit (g0)")
    b.add_argument("--budget", type=_positive, default=None, help="paired evaluations per step (default 32)")
    b.add_argument("--pool-size", type=_positive, default=None, help="pre-screened candidates (default 48)")
    b.add_argument("--calib", default="wikitext2-train")
    b.add_argument("--nsamples", type=_positive, default=64, help="calibration windows")
    b.add_argument("--calib-seqlen", type=_positive, default=128)
    b.add_argument("--calib-batch-size", type=_positive, default=8, help="windows per calibration mini-batch")
    b.add_argument("--lambada-limit", type=_positive, default=None, help="also LAMBADA (lm-eval), first N documents")
    b.add_argument("--search-dtype", default="float32", choices=["float32", "eval"],
                   help="dtype of the search's losses: float32, or eval (the --dtype of the evaluation copy)")
    _ppl_args(b, None)
    b.set_defaults(seqlen=128)

    z = sub.add_parser("zeroshot", help="zero-shot accuracy with lm-eval's standard task YAMLs (offline data)")
    _model_args(z)
    z.add_argument("--tasks", required=True, help="comma-separated lm-eval task names, e.g. arc_easy,sst2")
    z.add_argument("--limit", type=_positive, default=None, help="first N documents of each task")
    z.add_argument("--batch-size", type=_positive, default=8)
    z.add_argument("--dtype", default="auto")

    n = sub.add_parser("notebook", help="execute a paper notebook (jupytext .py) with a profile via papermill")
    n.add_argument("source", help="notebooks/NN_name.py")
    n.add_argument("--profile", default=None, help="notebooks/profiles/<name>.yaml")
    n.add_argument("--out", default=None, help="executed .ipynb (default: the .py's pair beside it)")
    n.add_argument("--recompute", action="store_true", help="compute every cell again instead of reading records")
    return ap


def _setup(args, **calib):
    from repro.experiments.base import Setup

    return Setup(data=args.data or "wikitext2:validation", seqlen=args.seqlen, max_windows=args.max_windows,
                 batch_size=args.batch_size, eval_dtype=args.dtype, device=args.device, **calib)


def _evaluated(e, model) -> dict:
    return {"data": e.data.label, "data_identity": e.data.identity, "data_sha256": e.data.sha256, **e.ppl(model)}


def cmd_ppl(args) -> dict:
    from repro.experiments.base import Experiment
    from repro.store import Store

    e = Experiment(args.model, _setup(args), Store(None))
    return {"model": e.name, "model_identity": e.loaded.identity, **_evaluated(e, e.eval_model())}


def cmd_heads(args) -> dict:
    """The notebook's pipeline (HeadExperiment: same calibration windows, same scoring), then the
    heads are zeroed (Algorithm 1) or removed and the model evaluated."""
    from repro.arch import adapter
    from repro.assets import parse_dtype
    from repro.errors import check_fraction
    from repro.evaluate.speed import count_params
    from repro.experiments.heads import HeadExperiment
    from repro.methods.heads import select_heads
    from repro.store import Store
    from repro.structure import remove_heads, zero_heads

    check_fraction("sparsity", args.sparsity)
    setup = _setup(args, calib_data=args.calib_data, calib_nsamples=args.calib_nsamples,
                   calib_seqlen=args.calib_seqlen, calib_seed=args.calib_seed)
    e = HeadExperiment(args.model, setup, Store(None), grad_nsamples=args.grad_nsamples)
    scores, seconds = e.scores(args.method, z=args.z, seed=args.seed)
    pruned = select_heads(scores, args.sparsity, args.tie_break, args.seed)
    model = e.model
    (remove_heads if args.remove else zero_heads)(adapter(model), pruned)
    cfg = e.method_config(args.method, args.z, args.seed)
    out = {"model": e.name, "model_identity": e.loaded.identity, **cfg, "sparsity": args.sparsity,
           "tie_break": args.tie_break, "seed": args.seed, "calibration": cfg.get("calibration"),
           "scoring_seconds": seconds, "scores": scores.tolist(), "pruned": [list(p) for p in pruned],
           "n_pruned": len(pruned), "removed": args.remove, "params": count_params(model)}
    if args.data:
        out.update(_evaluated(e, model.to(parse_dtype(e.setup.eval_dtype))))
    return out


def _param(text: str):
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise ReproError(f"--param takes KEY=VALUE, got {text!r}")
    try:
        return key, json.loads(value)
    except json.JSONDecodeError:
        return key, value


def cmd_prune(args) -> dict:
    """Prune a copy of the model block by block on calibration windows (the notebook's
    PruneExperiment), report achieved sparsity and ``zeros_sha256``, optionally evaluate and save."""
    from pathlib import Path

    from repro.assets import parse_dtype
    from repro.calib import Calibration, load_windows
    from repro.evaluate.ppl import max_positions
    from repro.experiments.unstructured import PruneExperiment
    from repro.store import Store
    from repro.structure import save_pruned
    from repro.structure.sparsity import zeros_sha256

    if args.sparsity is not None:
        from repro.errors import check_fraction

        check_fraction("sparsity", args.sparsity)
    params = dict(_param(p) for p in args.param)
    setup = _setup(args, calib_data=args.calib, calib_nsamples=args.nsamples, calib_seqlen=args.calib_seqlen,
                   calib_seed=args.calib_seed)
    e = PruneExperiment(args.model, setup, Store(None))
    cfg = e.prune_config(args.method, args.sparsity, args.pattern, params) if not args.calib_file else None
    if args.calib_file:  # identical inputs to another implementation's
        wins = load_windows(args.calib_file, e.model.get_input_embeddings().num_embeddings, max_positions(e.model))
        e._calib[setup.calib_nsamples] = Calibration(wins, {"file": str(Path(args.calib_file).resolve()),
                                                            "nsamples": len(wins), "seqlen": wins.shape[1]})
        cfg = e.prune_config(args.method, args.sparsity, args.pattern, params)
    model, report = e.prune(args.method, args.sparsity, args.pattern, params)
    out = {"model": e.name, "model_identity": e.loaded.identity, **cfg, "prune_seconds": report.seconds,
           "timings": report.timings, "achieved_sparsity": report.overall, "layer_sparsity": report.layers,
           "zeros_sha256": zeros_sha256(model)}
    if args.save:
        save_pruned(model, args.save, e.loaded.identity)
        e.loaded.tokenizer.save_pretrained(args.save) if hasattr(e.loaded.tokenizer, "save_pretrained") else None
        out["saved"] = str(args.save)
    if args.data:
        out.update(_evaluated(e, model.to(parse_dtype(e.setup.eval_dtype))))
    return out


def cmd_bandit(args) -> dict:
    """One Paper 3 selection (the notebook's BanditExperiment), optionally evaluated against the
    dense model on the same windows (paired)."""
    from repro.evaluate.stats import paired_ratio
    from repro.experiments.units import BanditExperiment
    from repro.methods.bandit import check_kinds
    from repro.store import Store

    kinds = sorted({{"heads": "head", "head": "head", "mlp": "mlp"}.get(u.strip(), u.strip())
                    for u in args.units.split(",") if u.strip()})
    check_kinds(kinds)
    params = {k: v for k, v in (("budget", args.budget), ("pool_size", args.pool_size)) if v is not None}
    setup = _setup(args, calib_data=args.calib, calib_nsamples=args.nsamples, calib_seqlen=args.calib_seqlen)
    e = BanditExperiment(args.model, setup, Store(None), calib_batch_size=min(args.calib_batch_size, args.nsamples),
                         group_size=args.group_size, search_dtype=args.search_dtype)
    sel = e.select(args.policy, kinds, args.ratio, args.seed, params)
    r = sel["result"]
    out = {"model": e.name, "model_identity": e.loaded.identity, **sel["config"], "units": r["units"],
           "pulls": r["pulls"], "paired_evaluations": r["budget"]["paired_evaluations"], "budget": r["budget"],
           "damages": r["damages"]}
    if args.data:
        dense = e.dense(args.lambada_limit)["result"]
        cell = e.cell(args.policy, kinds, args.ratio, args.seed, params, args.lambada_limit)["result"]
        p = paired_ratio(cell["window_nll"], dense["window_nll"])
        out.update(data=e.data.label, data_sha256=e.data.sha256, dense_ppl=dense["ppl"], ppl=cell["ppl"],
                   ppl_ci95=cell["ci95"], ppl_change_pct=100 * (p.estimate - 1),
                   ppl_change_pct_ci95=[100 * (p.ci[0] - 1), 100 * (p.ci[1] - 1)], windows=p.n)
        if args.lambada_limit:
            lam = {k: v["tasks"]["lambada_openai"]["metrics"] for k, v in (("dense", dense["lambada"]),
                                                                            ("pruned", cell["lambada"]))}
            out["lambada"] = lam
    return out


def cmd_zeroshot(args) -> dict:
    from repro.assets import load_model, resolve_dtype
    from repro.evaluate.zeroshot import evaluate_zeroshot

    tasks = [t.strip() for t in args.tasks.split(",") if t.strip()]
    dtype = resolve_dtype(args.dtype, args.device)
    loaded = load_model(args.model, dtype, device=args.device)
    out = evaluate_zeroshot(loaded.model, loaded.tokenizer, tasks, limit=args.limit, batch_size=args.batch_size)
    return {"model": loaded.name, "model_identity": loaded.identity, "dtype": dtype, **out}


def cmd_notebook(args) -> dict:
    from pathlib import Path

    from repro.notebooks import execute

    out = Path(args.out) if args.out else Path(args.source).with_suffix(".ipynb")
    seconds = execute(args.source, out, args.profile, overrides={"recompute": True} if args.recompute else None)
    return {"notebook": str(args.source), "profile": args.profile, "output": str(out), "seconds": round(seconds, 1),
            "bytes": out.stat().st_size}


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(message)s")
    warnings.simplefilter("default")
    try:
        out = {"ppl": cmd_ppl, "heads": cmd_heads, "zeroshot": cmd_zeroshot, "prune": cmd_prune,
               "bandit": cmd_bandit, "notebook": cmd_notebook}[args.command](args)
    except ReproError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    json.dump(out, sys.stdout)
    sys.stdout.write("\n")
    return 0
