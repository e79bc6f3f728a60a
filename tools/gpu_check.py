"""One-shot check of repro's GPU path on the simulated hub: the same work on CPU in float32 and on a GPU in float16.

    python tools/gpu_check.py --out DIR [--device cuda|cpu] [--dtype float16|bfloat16|float32] [--hub DIR]
                              [--ids ID ...] [--windows 4] [--seqlen 64] [--threads 1] [--tolerance-scale 1]

Writes the simulated hub (``tools/simulated_hub.py``: tiny random-initialised models under the papers' hub ids) into a
temporary folder (or uses ``--hub DIR``, writing there only the ids it lacks), sets ``HF_HUB_OFFLINE=1`` and the cache
variables before transformers or huggingface_hub are imported, and for each id compares a *reference* side (CPU,
float32) with a *device* side (``--device``; float16 on CUDA; on CPU bfloat16 by default, the "plumbing" mode that
runs the same comparisons where no GPU is available):

* causal LMs: ``load_model`` on both sides (device copy = reference weights cast, bit for bit), the logits of one
  window and the perplexity of ``--windows`` x ``--seqlen`` tokens of wiki-sample (the family's BOS rule, as
  ``repro.evaluate.ppl.windows`` cuts them; the calibration windows by ``repro.calib.sample_windows``, the same on
  both sides), each of magnitude / wanda / sparsegpt / ogas at 50% on a copy on both sides (mask agreement, pruned
  perplexity, and how the pruning changed the logits), MP-G head scores and selection, a head mask at 25% and
  physical removal where repro supports it for the family (perplexity and change of the logits), and a
  ``device_map="auto"`` load (CUDA only; skipped with a note on CPU);
* masked LMs (RoBERTa): pseudo-perplexity on both sides;
* image classifiers (ViT, DeiT, Swin): logits of a forward pass, and with an MP-G head mask (Swin's blocks differ
  in heads: its MP-G scores are ranked over all blocks' heads, see ``mpg_selection``); a model_type without a repro
  adapter would be recorded as skipped ("no adapter").

Tolerances (``--tolerance-scale`` multiplies every one; 0 demands identical results, which half precision never
gives, so that the comparisons fail: the test's way to see that this script can fail):

* dense perplexity and logits: relative difference <= 2e-2. fp16's unit roundoff is 2^-11 (4.9e-4); a few layers
  of rounding move logits by some 1e-3 relative and a perplexity by less (the papers' models' published fp16 and
  fp32 evaluations agree to ~0.1-0.5%). 2e-2 is ~40x the unit roundoff: loose for rounding, tight enough for a
  tensor in the wrong dtype or scale, a NaN/inf from fp16 overflow, or a different computation. bfloat16 rounds 8x
  coarser (2^-8); in CPU plumbing mode the same bound still holds with a margin of ~3x (see the JSON);
* masks of magnitude and wanda: >= 99% of positions identical (near-ties flip in half-precision weights and
  calibration statistics); sparsegpt and ogas: >= 95% (their masks also follow half-precision weight updates,
  and OGAS's per-layer gamma search, whose objective is nearly flat, can settle elsewhere: the JSON lists gammas);
* pruned perplexity (methods, head masks, head removal): relative difference <= 5e-2;
* the change of the logits that a pruning makes (pruned - dense, one window), device vs reference: relative L2
  <= 0.5 (ogas 0.75). A pruning that does nothing on one side gives 1, pruning other weights ~1.4. The random
  models' perplexity is about their vocabulary size whatever is pruned (50% pruning moves it by <1%), so the
  perplexity checks alone would not see a mask that is silently not applied on the device: this check does.
  Where the reference's change is under 8x the dense logits' own difference between the sides, rounding could
  hide a no-op and the check is recorded as "inconclusive" (neither pass nor fail);
* MP-G head selection: >= 75% of the selected heads shared (a near-threshold feature may flip; the perplexity check
  that follows decides whether it matters); removal vs masking on the same side: relative <= 2e-2.

Everything goes into ``DIR/gpu_check.json`` (one entry per model x check: both sides' values and seconds, the
metric, the tolerance, pass/fail); stdout gets one line per model. Exit 0 when every check passes, 1 otherwise,
2 on a usage error, 3 when the environment cannot run the check (torch, transformers or repro missing, or no CUDA
device for ``--device cuda``): one line says which.

Nothing is downloaded or installed; the hub (a few MB) is written on the spot. The weights are random: the numbers
say whether the GPU path computes what the CPU path computes, nothing about the papers' models.
"""
from __future__ import annotations

import argparse
import copy
import importlib.util
import json
import math
import os
import platform
import sys
import tempfile
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TOOLS = Path(__file__).resolve().parent

# base tolerances (scaled by --tolerance-scale); see the module docstring for how they were chosen
TOL_PPL = 2e-2            # dense perplexity, logits: relative
TOL_PRUNED = 5e-2         # pruned perplexity: relative
MASK_MIN = {"magnitude": 0.99, "wanda": 0.99, "sparsegpt": 0.95, "ogas": 0.95}  # share of identical positions
HEADS_MIN = 0.75          # share of MP-G's selected heads common to both sides
EFFECT_MIN_SNR = 8.0      # the effect check decides only where the change is >= 8x the rounding difference
TOL_EFFECT = {"ogas": 0.75}  # pruning's change of the logits, device vs reference: relative L2 (default 0.5)
METHODS = ("magnitude", "wanda", "sparsegpt", "ogas")
SPARSITY = 0.5
HEAD_SPARSITY = 0.25
SHORT = {"magnitude": "mag", "wanda": "wanda", "sparsegpt": "sgpt", "ogas": "ogas"}


class EnvironmentProblem(Exception):
    """The environment cannot run the check (exit 3)."""


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True, type=Path, help="folder for gpu_check.json")
    p.add_argument("--device", default="cuda", help="the device side: cuda, cuda:N or cpu (default cuda)")
    p.add_argument("--dtype", choices=("float16", "bfloat16", "float32"),
                   help="the device side's dtype (default: float16 on CUDA, bfloat16 on CPU)")
    p.add_argument("--hub", type=Path, help="a hub cache folder to use (ids it lacks are written there); "
                                            "default: a temporary folder, removed afterwards")
    p.add_argument("--ids", nargs="+", metavar="ID", help="hub ids to check (default: every simulated id)")
    p.add_argument("--windows", type=int, default=4, help="evaluation and calibration windows (default 4)")
    p.add_argument("--seqlen", type=int, default=64, help="tokens per window (default 64)")
    p.add_argument("--threads", type=int, default=1,
                   help="torch CPU threads (default 1: the models are tiny, and more threads only wait on each other, "
                        "~100x slower on a busy 2-core machine)")
    p.add_argument("--tolerance-scale", type=float, default=1.0,
                   help="multiplies every tolerance (0: demand identical results; default 1)")
    args = p.parse_args(argv)
    if args.windows < 1 or args.seqlen < 2:
        p.error("--windows must be >= 1 and --seqlen >= 2")
    if args.tolerance_scale < 0:
        p.error("--tolerance-scale must be >= 0")
    if args.device != "cpu" and not args.device.startswith("cuda"):
        p.error(f"--device must be cuda, cuda:N or cpu, not {args.device!r}")
    return args


def load_simulated_hub():
    spec = importlib.util.spec_from_file_location("simulated_hub", TOOLS / "simulated_hub.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def set_offline_env(home: Path, cache: Path) -> None:
    """Before transformers / huggingface_hub are imported: they read these at import."""
    os.environ.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", HF_DATASETS_OFFLINE="1", REPRO_OFFLINE="1",
                      HF_HOME=str(home), HF_HUB_CACHE=str(cache), HUGGINGFACE_HUB_CACHE=str(cache),
                      HF_HUB_DISABLE_TELEMETRY="1", HF_HUB_DISABLE_PROGRESS_BARS="1", TOKENIZERS_PARALLELISM="false")
    os.environ.pop("TRANSFORMERS_CACHE", None)
    constants = sys.modules.get("huggingface_hub.constants")
    if constants is not None:  # imported already (main() called in-process): it read the variables at import
        constants.HF_HUB_OFFLINE, constants.HF_HUB_CACHE = True, str(cache)


def import_stack(device: str):
    """torch, transformers and repro, or EnvironmentProblem naming what is missing."""
    missing = []
    for name in ("torch", "transformers", "huggingface_hub", "tokenizers", "safetensors", "scipy", "numpy"):
        if importlib.util.find_spec(name) is None:
            missing.append(name)
    if missing:
        raise EnvironmentProblem(f"cannot import {', '.join(missing)}")
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    try:
        import torch  # noqa: F401
        import transformers  # noqa: F401

        import repro.arch  # noqa: F401  (registers the families' BOS rules)
    except Exception as e:  # noqa: BLE001
        raise EnvironmentProblem(f"import failed: {type(e).__name__}: {first_line(e)}") from None
    if device.startswith("cuda"):
        if not torch.cuda.is_available():
            raise EnvironmentProblem(f"--device {device} but torch {torch.__version__} sees no CUDA device "
                                     f"(torch.version.cuda={torch.version.cuda})")
        if importlib.util.find_spec("accelerate") is None:
            raise EnvironmentProblem("cannot import accelerate (load_model's device_map needs it)")


# ---- small helpers ---------------------------------------------------------------------------------------------

def finite(x):
    if isinstance(x, float) and not math.isfinite(x):
        return str(x)
    if isinstance(x, dict):
        return {k: finite(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [finite(v) for v in x]
    return x


def first_line(exc: BaseException) -> str:
    return str(exc).splitlines()[0] if str(exc) else ""


def rel(a: float, b: float) -> float:
    """|b - a| / |a| (inf where it is undefined or either is not finite)."""
    if not (math.isfinite(a) and math.isfinite(b)) or a == 0:
        return 0.0 if a == b else math.inf
    return abs(b - a) / abs(a)


class Clock:
    """Seconds of a block of work on a device (synchronised on CUDA)."""

    def __init__(self, device):
        self.device = str(device)

    def __enter__(self):
        self._sync()
        self.t0 = time.perf_counter()
        return self

    def __exit__(self, *exc):
        self._sync()
        self.seconds = time.perf_counter() - self.t0

    def _sync(self):
        import torch

        if self.device.startswith("cuda"):
            torch.cuda.synchronize()


class Report:
    def __init__(self, scale: float):
        self.entries: list[dict] = []
        self.scale = scale

    def add(self, model, check, metric, value, tolerance, op, ref=None, dev=None, seconds=0.0, note=""):
        """``op``: "<=" (value at most tolerance) or ">=" (at least)."""
        if value is None:
            ok = False
        elif op == "<=":
            ok = value <= tolerance
        else:
            ok = value >= tolerance
        e = {"model": model, "check": check, "status": "pass" if ok else "fail", "pass": bool(ok), "metric": metric,
             "value": value, "op": op, "tolerance": tolerance, "ref": ref or {}, "dev": dev or {},
             "seconds": round(seconds, 3)}
        if note:
            e["note"] = note
        self.entries.append(e)
        return e

    def skip(self, model, check, note, seconds=0.0):
        self.entries.append({"model": model, "check": check, "status": "skipped", "pass": None, "note": note,
                             "seconds": round(seconds, 3)})

    def inconclusive(self, model, check, note, ref=None, dev=None):
        self.entries.append({"model": model, "check": check, "status": "inconclusive", "pass": None, "note": note,
                             "ref": ref or {}, "dev": dev or {}, "seconds": 0.0})

    def error(self, model, check, exc: BaseException, side: str, seconds=0.0):
        tb = traceback.format_exception(type(exc), exc, exc.__traceback__)
        where = [line.strip() for line in tb if line.strip().startswith("File ")][-3:]
        self.entries.append({"model": model, "check": check, "status": "error", "pass": False,
                             "note": f"{side} side: {type(exc).__name__}: {first_line(exc)}",
                             "where": where, "seconds": round(seconds, 3)})

    def of(self, model):
        return [e for e in self.entries if e["model"] == model]


def guarded(report: Report, model: str, check: str):
    """Decorator-ish: run ``fn()``; an exception is an error entry (``SideError`` names the side)."""
    def run(fn):
        t0 = time.perf_counter()
        try:
            return fn()
        except SideError as e:
            report.error(model, check, e.__cause__ or e, e.side, time.perf_counter() - t0)
        except Exception as e:  # noqa: BLE001
            report.error(model, check, e, "either", time.perf_counter() - t0)
        return None
    return run


class SideError(Exception):
    def __init__(self, side: str):
        super().__init__(side)
        self.side = side


def on_side(side: str, fn, *a, **k):
    try:
        return fn(*a, **k)
    except Exception as e:  # noqa: BLE001
        raise SideError(side) from e


# ---- the checks ------------------------------------------------------------------------------------------------

class Side:
    """One side of the comparison: a loaded model and how to time it."""

    def __init__(self, name: str, device: str, dtype: str):
        self.name, self.device, self.dtype = name, device, dtype
        self.loaded = None

    def info(self, **values):
        return {"device": self.device, "dtype": self.dtype, **values}


def text_data(note: list, rows: int = 40):
    """The first ``rows`` articles of wiki-sample (repro's packaged text; the first few suffice for a few windows, and
    tokenizing all 2349 would take longer than everything else), else the simulated hub's corpus (the GPU machine
    may lack the package that ships wiki-sample)."""
    from repro.assets import load_text
    from repro.assets.data import TextData

    try:
        full = load_text("wiki-sample")
        return TextData(full.name, full.split, full.rows[:rows], full.sha256, full.source,
                        f"first {min(rows, len(full.rows))} of {len(full.rows)} articles")
    except Exception as e:  # noqa: BLE001
        sim = sys.modules["simulated_hub"]
        note.append(f"wiki-sample unavailable ({type(e).__name__}: {e}); used tools/simulated_hub.py's CORPUS x 8")
        return TextData("simulated-corpus", "sample", [r for r in sim.CORPUS.split("\n\n") if r.strip()] * 8, None,
                        "tools/simulated_hub.py")


def weights_match(ref_model, dev_model, dtype) -> tuple[bool, float, int]:
    """Whether every device parameter equals the reference parameter cast to ``dtype`` (max abs diff, count)."""
    ref = dict(ref_model.named_parameters())
    worst, n = 0.0, 0
    for name, p in dev_model.named_parameters():
        q = ref[name].detach().to(dtype)
        d = (p.detach().to("cpu") - q).abs().max().item() if p.numel() else 0.0
        worst, n = max(worst, d), n + 1
    same_names = set(ref) == {n for n, _ in dev_model.named_parameters()}
    return same_names and worst == 0.0, worst, n


def zero_masks(model) -> dict:
    from repro.structure.sparsity import out_in, prunable_linears

    return {name: (out_in(m) == 0).to("cpu") for name, m in prunable_linears(model).items()}


def mask_agreement(a: dict, b: dict) -> tuple[float, int, int]:
    """Share of positions where both masks agree, positions that differ, positions in all."""
    if set(a) != set(b):
        return 0.0, -1, -1
    diff = total = 0
    for name in a:
        if a[name].shape != b[name].shape:
            return 0.0, -1, -1
        diff += int((a[name] != b[name]).sum())
        total += a[name].numel()
    return 1.0 - diff / total, diff, total


def rel_l2(a, b) -> float:
    """||b - a|| / ||a|| (inf where ``a`` is zero and ``b`` is not)."""
    na = float(a.norm())
    if na == 0:
        return 0.0 if float(b.norm()) == 0 else math.inf
    return float((b - a).norm()) / na


def check_causal(hub_id, ref: Side, dev: Side, args, report: Report, data, summary: dict):
    import torch

    from repro.arch import adapter as get_adapter
    from repro.arch import bos_token
    from repro.assets import load_model
    from repro.assets.devices import input_device
    from repro.calib import sample_windows
    from repro.evaluate.anatomy import head_mask
    from repro.evaluate.ppl import tokenize, window_nll, windows
    from repro.methods.heads import score_heads, select_heads
    from repro.methods.unstructured import prune_model
    from repro.structure import Masks, remove_heads

    s = args.tolerance_scale
    # (a) load
    t0 = time.perf_counter()
    try:
        with Clock(ref.device) as c_ref:
            ref.loaded = on_side("reference", load_model, hub_id, ref.dtype, device=ref.device)
        with Clock(dev.device) as c_dev:
            dev.loaded = on_side("device", load_model, hub_id, dev.dtype, device=dev.device)
    except SideError as e:
        report.error(hub_id, "load", e.__cause__, e.side, time.perf_counter() - t0)
        return
    dm = dev.loaded.model
    placed = {str(p.device) for p in dm.parameters()}
    dtypes = {str(p.dtype).replace("torch.", "") for p in dm.parameters()}
    same, worst, n = weights_match(ref.loaded.model, dm, getattr(torch, dev.dtype))
    want_dev = str(torch.device(dev.device)) if dev.device != "cuda" else f"cuda:{torch.cuda.current_device()}"
    ok = same and placed == {want_dev} and dtypes == {dev.dtype} and dev.loaded.device == want_dev
    report.add(hub_id, "load", "device weights == reference weights cast (1: yes)", float(ok), 1.0, ">=",
               ref.info(seconds=c_ref.seconds, task=ref.loaded.task, loaded_device=ref.loaded.device,
                        simulated=ref.loaded.identity.get("simulated"), revision=ref.loaded.identity.get("revision")),
               dev.info(seconds=c_dev.seconds, loaded_device=dev.loaded.device, parameter_devices=sorted(placed),
                        parameter_dtypes=sorted(dtypes), max_abs_diff_to_cast=worst, parameters_compared=n),
               c_ref.seconds + c_dev.seconds,
               note="exact: no tolerance scaling")
    config, tok = ref.loaded.model.config, ref.loaded.tokenizer
    bos = bos_token(config, tok)
    ids = tokenize(tok, data)
    evals = windows(ids, args.seqlen, args.windows, bos)
    calib = sample_windows(ids, args.windows, args.seqlen, 0, bos)
    feed = {"bos": bos, "windows": list(evals.shape), "calibration": list(calib.shape),
            "first_ids": evals[0, :4].tolist()}

    def ppl(side: Side, model):
        nll = on_side(side.name, window_nll, model, evals, 1, False)
        return float(math.exp(float(nll.mean())))

    def logits_of(side: Side, model):
        """float32 CPU logits of the first evaluation window."""
        def run():
            with torch.inference_mode():
                return model(input_ids=evals[:1].to(input_device(model)), use_cache=False).logits.float().cpu()
        return on_side(side.name, run)

    base = {}

    def effect(check: str, variant: dict, note: str = "", tolerance: float = 0.5):
        """How far the device side's change of the logits (variant - dense) is from the reference side's: a
        pruning that does nothing on one side gives 1, the same pruning gives rounding noise plus near-tie flips.
        Inconclusive where the reference's change is under EFFECT_MIN_SNR times the dense logits' own difference
        between the sides (the rounding noise that each change carries twice)."""
        dr, dd = variant["reference"] - base["reference"], variant["device"] - base["device"]
        noise = float((base["device"] - base["reference"]).norm())
        size = float(dr.norm())
        r_info = ref.info(change_over_dense=rel_l2(base["reference"], variant["reference"]))
        d_info = dev.info(change_over_dense=rel_l2(base["device"], variant["device"]),
                          dense_rounding_over_change=noise / size if size else math.inf)
        if size < EFFECT_MIN_SNR * noise:
            report.inconclusive(hub_id, check, f"the reference's change of the logits ({size:.3g}) is under "
                                f"{EFFECT_MIN_SNR:g}x the dense logits' difference between the sides ({noise:.3g}): "
                                "rounding would hide a pruning that does nothing on one side", r_info, d_info)
            return
        report.add(hub_id, check, "relative L2 difference of the logits' change (pruned - dense)", rel_l2(dr, dd),
                   tolerance * s, "<=", r_info, d_info, note=note)

    def a2():
        for side in (ref, dev):
            base[side.name] = logits_of(side, side.loaded.model)
        report.add(hub_id, "logits-dense", "relative L2 difference of the logits (first window)",
                   rel_l2(base["reference"], base["device"]), TOL_PPL * s, "<=",
                   ref.info(logits_norm=float(base["reference"].norm()), shape=list(base["reference"].shape)),
                   dev.info(logits_norm=float(base["device"].norm())))
    guarded(report, hub_id, "logits-dense")(a2)

    # (b) dense perplexity
    dense = {}

    def b():
        for side in (ref, dev):
            with Clock(side.device) as c:
                dense[side.name] = (ppl(side, side.loaded.model), c)
        r, d = dense["reference"][0], dense["device"][0]
        report.add(hub_id, "ppl-dense", "relative difference", rel(r, d), TOL_PPL * s, "<=",
                   ref.info(ppl=r, seconds=dense["reference"][1].seconds, **feed),
                   dev.info(ppl=d, seconds=dense["device"][1].seconds),
                   dense["reference"][1].seconds + dense["device"][1].seconds)
        summary["ppl"] = (r, d)
    guarded(report, hub_id, "ppl-dense")(b)

    # (c) unstructured pruning
    for method in METHODS:
        def c(method=method):
            out = {}
            for side in (ref, dev):
                with Clock(side.device) as clk:
                    model = copy.deepcopy(side.loaded.model)
                    rep = on_side(side.name, prune_model, model, method, SPARSITY, calib, progress=False)
                with Clock(side.device) as clk_ppl:
                    p = ppl(side, model)
                out[side.name] = dict(masks=zero_masks(model), overall=rep.overall, ppl=p, prune_seconds=clk.seconds,
                                      ppl_seconds=clk_ppl.seconds, logits=logits_of(side, model) if base else None,
                                      gamma={n: e["gamma"] for n, e in rep.extras.items() if "gamma" in e})
                del model
            r, d = out["reference"], out["device"]
            agree, differ, total = mask_agreement(r["masks"], d["masks"])
            secs = sum(x["prune_seconds"] + x["ppl_seconds"] for x in (r, d))
            gammas = {}
            if r["gamma"]:  # OGAS: the gamma each layer's search settled on
                gammas = dict(ref=dict(gamma=r["gamma"]), dev=dict(gamma=d["gamma"], max_abs_gamma_diff=max(
                    abs(d["gamma"].get(n, math.nan) - g) for n, g in r["gamma"].items())))
            report.add(hub_id, f"prune-{method}-mask", "share of positions with the same zero/non-zero", agree,
                       1.0 - (1.0 - MASK_MIN[method]) * s, ">=",
                       ref.info(sparsity=r["overall"], seconds=r["prune_seconds"], **gammas.get("ref", {})),
                       dev.info(sparsity=d["overall"], seconds=d["prune_seconds"], positions_differing=differ,
                                positions=total, **gammas.get("dev", {})), r["prune_seconds"] + d["prune_seconds"])
            report.add(hub_id, f"prune-{method}-ppl", "relative difference", rel(r["ppl"], d["ppl"]), TOL_PRUNED * s,
                       "<=", ref.info(ppl=r["ppl"], seconds=r["ppl_seconds"]),
                       dev.info(ppl=d["ppl"], seconds=d["ppl_seconds"]), r["ppl_seconds"] + d["ppl_seconds"])
            summary.setdefault("masks", {})[method] = agree
            if base:
                effect(f"prune-{method}-effect", {k: v["logits"] for k, v in out.items()},
                       tolerance=TOL_EFFECT.get(method, 0.5))
            return secs
        guarded(report, hub_id, f"prune-{method}")(c)

    # (d) MP-G heads: scores, a mask, physical removal
    def d():
        sel, shape = {}, None
        for side in (ref, dev):
            with Clock(side.device) as clk:
                scores = on_side(side.name, score_heads, "mpg", side.loaded.model)
            sel[side.name] = (scores, select_heads(scores, HEAD_SPARSITY), clk.seconds)
            shape = scores.shape
        (rs, rsel, rsec), (ds, dsel, dsec) = sel["reference"], sel["device"]
        common = len(set(rsel) & set(dsel)) / max(len(rsel), 1)
        scale_ = float(abs(rs).max()) or 1.0
        report.add(hub_id, "heads-mpg-select", "share of selected heads common to both sides", common,
                   1.0 - (1.0 - HEADS_MIN) * s, ">=",
                   ref.info(selected=[list(h) for h in rsel], seconds=rsec, shape=list(shape)),
                   dev.info(selected=[list(h) for h in dsel], seconds=dsec,
                            max_abs_score_diff_over_max_score=float(abs(ds - rs).max()) / scale_),
                   rsec + dsec, note=f"MP-G (z=2) at {HEAD_SPARSITY:g} head sparsity")
        summary["heads"] = common
        masked, masked_logits, removed_logits = {}, {}, {}
        for side, pruned in ((ref, rsel), (dev, dsel)):
            with Clock(side.device) as clk:
                with Masks(get_adapter(side.loaded.model)) as m:
                    m.heads = head_mask(shape, pruned)
                    masked[side.name] = (ppl(side, side.loaded.model), clk)
                    if base:
                        masked_logits[side.name] = logits_of(side, side.loaded.model)
        r, dd = masked["reference"][0], masked["device"][0]
        report.add(hub_id, "heads-mpg-mask-ppl", "relative difference", rel(r, dd), TOL_PRUNED * s, "<=",
                   ref.info(ppl=r, seconds=masked["reference"][1].seconds),
                   dev.info(ppl=dd, seconds=masked["device"][1].seconds),
                   masked["reference"][1].seconds + masked["device"][1].seconds)
        if base:
            effect("heads-mpg-mask-effect", masked_logits, "each side's own MP-G selection")
        # physical removal: the reference side decides whether repro supports it for this family
        removed = {}
        t0 = time.perf_counter()
        try:
            model = copy.deepcopy(ref.loaded.model)
            plan = remove_heads(get_adapter(model), rsel)
            removed["reference"] = (ppl(ref, model), time.perf_counter() - t0, plan)
            if base:
                removed_logits["reference"] = logits_of(ref, model)
        except Exception as e:  # noqa: BLE001
            report.skip(hub_id, "heads-mpg-remove-ppl", f"repro cannot remove heads of this family on CPU float32 "
                        f"either ({type(e).__name__}: {first_line(e)})",
                        time.perf_counter() - t0)
            return
        with Clock(dev.device) as clk:
            model = copy.deepcopy(dev.loaded.model)
            plan = on_side("device", remove_heads, get_adapter(model), dsel)
            removed["device"] = (ppl(dev, model), None, plan)
            if base:
                removed_logits["device"] = logits_of(dev, model)
        del model
        r, dd = removed["reference"][0], removed["device"][0]
        report.add(hub_id, "heads-mpg-remove-ppl", "relative difference", rel(r, dd), TOL_PRUNED * s, "<=",
                   ref.info(ppl=r, seconds=removed["reference"][1],
                            plan={str(k): v for k, v in removed["reference"][2].items()}),
                   dev.info(ppl=dd, seconds=clk.seconds, plan={str(k): v for k, v in removed["device"][2].items()}),
                   removed["reference"][1] + clk.seconds)
        worst = max(rel(masked["reference"][0], r), rel(masked["device"][0], dd))
        report.add(hub_id, "heads-mpg-remove-vs-mask", "relative difference, removed vs masked, worse side", worst,
                   TOL_PPL * s, "<=", ref.info(masked=masked["reference"][0], removed=r),
                   dev.info(masked=masked["device"][0], removed=dd))
        if base:
            effect("heads-mpg-remove-effect", removed_logits, "each side's own MP-G selection, removed")
    guarded(report, hub_id, "heads-mpg")(d)

    # (e) device_map="auto"
    if not dev.device.startswith("cuda"):
        report.skip(hub_id, "device-map-auto", "CPU plumbing mode: device_map='auto' needs CUDA "
                    "(repro's resolve_device('auto') falls back to plain CPU without it)")
    else:
        def e():
            with Clock(dev.device) as clk:
                auto = on_side("device", load_model, hub_id, dev.dtype, device="auto")
                p = ppl(dev, auto.model)
            hf_map = getattr(auto.model, "hf_device_map", None)
            r = dense["reference"][0] if "reference" in dense else math.nan
            report.add(hub_id, "device-map-auto", "relative difference to the reference's dense ppl", rel(r, p),
                       TOL_PPL * s, "<=", ref.info(ppl=r),
                       dev.info(device="auto", ppl=p, loaded_device=auto.device,
                                hf_device_map={k: str(v) for k, v in (hf_map or {}).items()}, seconds=clk.seconds),
                       clk.seconds)
            del auto
        guarded(report, hub_id, "device-map-auto")(e)
    ref.loaded = dev.loaded = None


def check_masked(hub_id, ref: Side, dev: Side, args, report: Report, data, summary: dict):
    from repro.assets import load_model
    from repro.evaluate.mlm import pseudo_perplexity
    from repro.evaluate.ppl import tokenize

    s = args.tolerance_scale

    def run():
        out = {}
        seqs = None
        for side in (ref, dev):
            with Clock(side.device) as clk:
                loaded = on_side(side.name, load_model, hub_id, side.dtype, device=side.device)
                tok = loaded.tokenizer
                if seqs is None:
                    ids = tokenize(tok, data)[: 2 * 32]
                    seqs = ids.view(2, 32)
                res = on_side(side.name, pseudo_perplexity, loaded.model, seqs, tok.mask_token_id,
                              set(tok.all_special_ids), 32, False)
            out[side.name] = (res["pppl"], clk.seconds, loaded.task)
        r, d = out["reference"], out["device"]
        report.add(hub_id, "pppl-dense", "relative difference", rel(r[0], d[0]), TOL_PPL * s, "<=",
                   ref.info(pppl=r[0], seconds=r[1], task=r[2], sequences=[2, 32]), dev.info(pppl=d[0], seconds=d[1]),
                   r[1] + d[1], note="masked LM: pseudo-perplexity (load included in the seconds)")
        summary["ppl"] = (r[0], d[0])
    guarded(report, hub_id, "pppl-dense")(run)


def mpg_selection(model, sparsity: float) -> list[tuple[int, int]]:
    """MP-G's heads to prune: ``select_heads(score_heads("mpg", model), sparsity)``, which needs as many heads in
    every block; where blocks differ (Swin's stages) the same per-head scores (z = 2, block by block) ranked the
    same way over all heads: floor(sparsity x heads) lowest by (score, block, head)."""
    from repro.arch import adapter as get_adapter
    from repro.methods.heads import ROLES, combine, excess, n_to_prune, norms, score_heads, select_heads

    ad = get_adapter(model)
    if len(set(ad.heads_per_layer())) == 1:
        return select_heads(score_heads("mpg", model), sparsity)
    ranked = []
    for i in range(ad.n_layers):
        a = ad.attention(i)
        units = {r: excess(norms(a, r), 2.0).reshape(-1, a.head_dim).sum(1) for r in ROLES}
        ranked += [(float(v), i, h) for h, v in enumerate(combine(a, units, kv_share=True))]
    ranked.sort()
    return [(i, h) for _, i, h in ranked[:n_to_prune(sparsity, len(ranked))]]


def check_vision(hub_id, ref: Side, dev: Side, args, report: Report, summary: dict, spec):
    import torch
    from transformers import AutoModelForImageClassification

    from repro.arch import REGISTRY
    from repro.arch import adapter as get_adapter
    from repro.assets.models import hub_snapshot
    from repro.structure import Masks

    if spec.model_type not in REGISTRY:
        report.skip(hub_id, "forward", f"skipped: no adapter (repro.arch has none for model_type "
                    f"{spec.model_type!r})")
        return
    s = args.tolerance_scale
    g = torch.Generator().manual_seed(0)
    pixels = torch.randn(2, 3, 224, 224, generator=g)

    def load(side):
        folder = hub_snapshot(hub_id)
        if folder is None:
            raise FileNotFoundError(f"{hub_id} is not in the hub cache")
        m = AutoModelForImageClassification.from_pretrained(folder, dtype=getattr(torch, side.dtype))
        return m.to(side.device).eval()

    models, logits = {}, {}

    def fwd(side, model):
        with torch.inference_mode():
            return model(pixel_values=pixels.to(side.device, getattr(torch, side.dtype))).logits.float().cpu()

    def forward():
        secs = {}
        for side in (ref, dev):
            with Clock(side.device) as clk:
                models[side.name] = on_side(side.name, load, side)
                logits[side.name] = on_side(side.name, fwd, side, models[side.name])
            secs[side.name] = clk.seconds
        r, d = logits["reference"], logits["device"]
        report.add(hub_id, "forward", "relative L2 difference of the logits", rel_l2(r, d), TOL_PPL * s, "<=",
                   ref.info(top1=r.argmax(-1).tolist(), logits_norm=float(r.norm()), seconds=secs["reference"]),
                   dev.info(top1=d.argmax(-1).tolist(), seconds=secs["device"]),
                   secs["reference"] + secs["device"], note="2 random 224x224 images (seed 0); load included")
        summary["logits"] = rel_l2(r, d)
    guarded(report, hub_id, "forward")(forward)
    if len(models) < 2:
        return

    def heads():
        sel, out, secs = {}, {}, {}
        for side in (ref, dev):
            model = models[side.name]
            with Clock(side.device) as clk:
                sel[side.name] = on_side(side.name, mpg_selection, model, HEAD_SPARSITY)
                ad = get_adapter(model)
                with Masks(ad) as m:
                    mask = [torch.ones(n) for n in ad.heads_per_layer()]
                    for layer, head in sel["reference"]:  # the same heads on both sides
                        mask[layer][head] = 0
                    m.heads = mask
                    out[side.name] = on_side(side.name, fwd, side, model)
            secs[side.name] = clk.seconds
        r, d = out["reference"], out["device"]
        common = len(set(sel["reference"]) & set(sel["device"])) / max(len(sel["reference"]), 1)
        report.add(hub_id, "heads-mpg-mask-logits", "relative L2 difference of the masked logits", rel_l2(r, d),
                   TOL_PRUNED * s, "<=",
                   ref.info(selected=[list(h) for h in sel["reference"]], seconds=secs["reference"]),
                   dev.info(selected=[list(h) for h in sel["device"]], seconds=secs["device"],
                            selection_common=common),
                   secs["reference"] + secs["device"],
                   note="the reference side's MP-G selection masked on both sides")
    guarded(report, hub_id, "heads-mpg-mask-logits")(heads)


# ---- main ------------------------------------------------------------------------------------------------------

def model_line(hub_id: str, entries: list[dict], summary: dict, seconds: float) -> str:
    fails = [e["check"] for e in entries if e["pass"] is False]
    done = [e for e in entries if e["pass"] is not None]
    skipped = sum(e["status"] == "skipped" for e in entries)
    undecided = sum(e["status"] == "inconclusive" for e in entries)
    parts = [f"{hub_id:40s}", "PASS" if not fails else "FAIL", f"{len(done) - len(fails)}/{len(done)}"]
    if skipped or undecided:
        parts.append("(" + ", ".join(x for x in (f"{skipped} skipped" if skipped else "",
                                                f"{undecided} inconclusive" if undecided else "") if x) + ")")
    if "ppl" in summary:
        parts.append(f"ppl {summary['ppl'][0]:.3f}/{summary['ppl'][1]:.3f}")
    if "masks" in summary:
        parts.append("masks " + " ".join(f"{SHORT[m]}={v:.4f}" for m, v in summary["masks"].items()))
    if "heads" in summary:
        parts.append(f"heads={summary['heads']:.2f}")
    if "logits" in summary:
        parts.append(f"logits rel {summary['logits']:.2e}")
    parts.append(f"{seconds:.1f}s")
    if fails:
        parts.append("failed: " + ", ".join(fails))
    return " ".join(parts)


def main(argv=None) -> int:
    args = parse_args(argv)
    start = time.perf_counter()
    sim = load_simulated_hub()  # imports nothing heavy at module level
    ids = args.ids or list(sim.MODELS)
    unknown = [i for i in ids if i not in sim.MODELS]
    if unknown:
        print(f"gpu_check: not simulated: {', '.join(unknown)}", file=sys.stderr)
        return 2
    tmp = tempfile.TemporaryDirectory(prefix="gpu-check-")
    home = Path(tmp.name) / "hf-home"
    cache = args.hub.resolve() if args.hub else home / "hub"
    set_offline_env(home, cache)
    try:
        import_stack(args.device)
    except EnvironmentProblem as e:
        print(f"gpu_check: cannot run: {e}", flush=True)
        return 3
    import torch
    import transformers

    transformers.logging.set_verbosity_error()
    torch.set_num_threads(max(1, args.threads))
    dev_dtype = args.dtype or ("float16" if args.device.startswith("cuda") else "bfloat16")
    try:
        t0 = time.perf_counter()
        todo = [i for i in ids if not (args.hub and (sim.repo_folder(cache, i) / "refs" / "main").exists())]
        if todo:
            sim.write(cache, todo)
        hub_seconds = time.perf_counter() - t0
        notes: list[str] = []
        data = text_data(notes)
        report = Report(args.tolerance_scale)
        ref = Side("reference", "cpu", "float32")
        dev = Side("device", args.device, dev_dtype)
        lines = []
        for hub_id in ids:
            spec = sim.MODELS[hub_id]
            t_model = time.perf_counter()
            summary: dict = {}
            if spec.task == "causal-lm":
                check_causal(hub_id, ref, dev, args, report, data, summary)
            elif spec.task == "masked-lm":
                check_masked(hub_id, ref, dev, args, report, data, summary)
            elif spec.task == "image-classification":
                check_vision(hub_id, ref, dev, args, report, summary, spec)
            else:
                report.skip(hub_id, "all", f"no check for task {spec.task!r}")
            line = model_line(hub_id, report.of(hub_id), summary, time.perf_counter() - t_model)
            lines.append(line)
            print(line, flush=True)
        entries = report.entries
        failed = [e for e in entries if e["pass"] is False]
        header = {
            "tool": "tools/gpu_check.py", "ran_on_gpu": args.device.startswith("cuda"),
            "mode": "gpu" if args.device.startswith("cuda") else "cpu plumbing (device side also on CPU)",
            "reference": {"device": "cpu", "dtype": "float32"}, "device": {"device": args.device, "dtype": dev_dtype},
            "gpu_name": torch.cuda.get_device_name() if args.device.startswith("cuda") else None,
            "versions": {"python": platform.python_version(), "torch": torch.__version__,
                         "cuda": torch.version.cuda, "transformers": transformers.__version__},
            "host": platform.node(), "threads": torch.get_num_threads(),
            "ids": ids, "hub": str(cache) if args.hub else "temporary (removed)", "hub_write_seconds": hub_seconds,
            "data": data.identity, "windows": args.windows, "seqlen": args.seqlen,
            "sparsity": SPARSITY, "head_sparsity": HEAD_SPARSITY, "tolerance_scale": args.tolerance_scale,
            "tolerances": {"ppl_dense_relative": TOL_PPL, "ppl_pruned_relative": TOL_PRUNED,
                           "mask_min_agreement": MASK_MIN, "heads_min_common": HEADS_MIN,
                           "effect_relative": {m: TOL_EFFECT.get(m, 0.5) for m in (*METHODS, "heads")},
                           "effect_min_snr": EFFECT_MIN_SNR},
            "simulated": "random weights: the numbers compare the two sides, nothing more", "notes": notes,
            "checks": len(entries), "passed": sum(e["pass"] is True for e in entries),
            "failed": len(failed), "skipped": sum(e["status"] == "skipped" for e in entries),
            "inconclusive": sum(e["status"] == "inconclusive" for e in entries),
            "all_pass": not failed, "seconds": None, "summary_lines": lines, "entries": entries,
        }
        header["seconds"] = round(time.perf_counter() - start, 2)
        args.out.mkdir(parents=True, exist_ok=True)
        path = args.out / "gpu_check.json"
        path.write_text(json.dumps(finite(header), indent=1) + "\n")
        print(f"gpu_check: {header['passed']} passed, {header['failed']} failed, {header['skipped']} skipped, "
              f"{header['inconclusive']} inconclusive; "
              f"device side {args.device} {dev_dtype}; {header['seconds']:.0f} s; {path}", flush=True)
        return 0 if not failed else 1
    finally:
        tmp.cleanup()


if __name__ == "__main__":
    sys.exit(main())
