"""Measured GPU throughput of repro's own passes, against the throughput ``repro run --dry-run`` assumes.

    python benchmarks/gpu_throughput.py --out DIR [--layers 2 4] [--full-eval] [--windows 8] [--seqlen 2048]
                                        [--nsamples 16]

``repro.engines.estimate`` turns FLOPs into hours with an *assumed* sustained throughput (40% of an A100's
dense peaks: 124.8 TFLOPS for fp16/bf16, 7.8 for float32 without TF32). This measures what repro's code
reaches on the machine it runs on, at the papers' real widths: each model below is its published configuration
cut to each of ``--layers`` decoder blocks (the full vocabulary and embeddings kept), random-initialised on the
device (no download: the arithmetic does not depend on the weights' values). Per model and cut:

* ``eval``: ``repro.evaluate.ppl.window_nll`` (the perplexity pass) in float16 over ``windows x seqlen`` tokens;
* ``prune-<method>``: ``repro.methods.unstructured.prune_model`` at 50% in float32 on ``nsamples x seqlen``
  calibration tokens (wanda, sparsegpt, ogas; the loaded model's precision, as the notebooks prune);
* ``grad``: one forward + backward in float32 over one window (Gradient-Head, Taylor, Fisher scores).

Achieved TFLOPS count what runs as matrix products: ``2 M`` FLOPs a token forward and ``6 M`` forward + backward,
``M`` the parameters less the input embedding table (a lookup); a calibrated prune as two forward passes of the
blocks alone (``M`` = the blocks' parameters: calibration never reaches the output layer). Two cuts give each
pass's seconds per block, and from them the full model's seconds (``--full-eval`` also times the full model's
evaluation directly), set beside what ``repro.engines.estimate`` predicts for the full model at its assumed
throughput (its ``2 N`` / ``6 N`` with ``N`` all parameters; two forward passes for a calibrated prune).
One warm-up pass each (prunes: none, one timed run); the median of ``--repeats``.
Writes ``DIR/gpu_throughput.json``; prints one line per measurement.
"""
from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
import traceback
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from repro.engines.estimate import DEFAULT_FP32_TFLOPS, DEFAULT_TFLOPS, PUBLISHED_PARAMS  # noqa: E402

# the papers' 7-8B models' published configurations (their config.json on the hub), cut to --layers blocks
MODELS = {
    "meta-llama/Meta-Llama-3-8B": dict(
        model_type="llama", hidden_size=4096, intermediate_size=14336, num_attention_heads=32,
        num_key_value_heads=8, vocab_size=128256, max_position_embeddings=8192, rope_theta=500000.0,
        rms_norm_eps=1e-5, tie_word_embeddings=False, num_hidden_layers=32),
    "facebook/opt-6.7b": dict(
        model_type="opt", hidden_size=4096, ffn_dim=16384, num_attention_heads=32, vocab_size=50272,
        max_position_embeddings=2048, word_embed_proj_dim=4096, do_layer_norm_before=True, num_hidden_layers=32),
}
METHODS = ("wanda", "sparsegpt", "ogas")


def sync():
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def timed(fn, repeats: int) -> list[float]:
    fn()  # warm-up
    out = []
    for _ in range(repeats):
        sync()
        t0 = time.perf_counter()
        fn()
        sync()
        out.append(time.perf_counter() - t0)
    return out


def build(config: dict, layers: int | None, dtype, device):
    """``config`` cut to ``layers`` blocks (None: all), random-initialised on ``device``."""
    from transformers import AutoConfig, AutoModelForCausalLM

    cfg = dict(config) if layers is None else dict(config, num_hidden_layers=layers)
    conf = AutoConfig.for_model(cfg.pop("model_type"), **cfg)
    with torch.device(device):
        model = AutoModelForCausalLM.from_config(conf, dtype=dtype)
    return model.eval()


def counts(model) -> dict:
    """Parameters: all (the estimate's N), less the input embedding (matmul work), inside the blocks."""
    from repro.arch import adapter

    n = sum(p.numel() for p in model.parameters())
    emb = model.get_input_embeddings().weight
    tied = emb is model.get_output_embeddings().weight
    block = sum(p.numel() for b in adapter(model).layers for p in b.parameters())
    return dict(params=n, matmul_params=n if tied else n - emb.numel(), block_params=block)


def free():
    """Release the cache and start a new peak-memory count (the peak of what follows)."""
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()


def peak() -> float | None:
    """GiB allocated at most since the last :func:`free` (the model, its copies, activations, solver state)."""
    return torch.cuda.max_memory_allocated() / 2**30 if torch.cuda.is_available() else None


def time_eval(model, wins, repeats: int) -> list[float]:
    from repro.evaluate.ppl import window_nll

    return timed(lambda: window_nll(model, wins, batch_size=1, progress=False), repeats)


def time_prune(model, method: str, calib) -> list[float]:
    from repro.methods.unstructured import prune_model

    sync()
    t0 = time.perf_counter()
    prune_model(model, method, 0.5, calib, progress=False)
    sync()
    return [time.perf_counter() - t0]


def time_grad(model, window, repeats: int) -> list[float]:
    one = window.to(next(model.parameters()).device)

    def fwd_bwd():
        model.zero_grad(set_to_none=True)
        model(input_ids=one, labels=one, use_cache=False).loss.backward()
    return timed(fwd_bwd, repeats)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--layers", type=int, nargs="+", default=[2, 4], help="two or more cuts (blocks kept)")
    ap.add_argument("--full-eval", action="store_true", help="also time the full model's evaluation")
    ap.add_argument("--windows", type=int, default=8)
    ap.add_argument("--seqlen", type=int, default=2048)
    ap.add_argument("--nsamples", type=int, default=16)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS))
    a = ap.parse_args(argv)
    if len(set(a.layers)) < 2:
        ap.error("--layers needs two different cuts (seconds per block come from their difference)")
    if a.device.startswith("cuda") and not torch.cuda.is_available():
        print(f"gpu_throughput: --device {a.device} but torch {torch.__version__} sees no CUDA device")
        return 3
    from repro.methods.unstructured import prune_model

    a.out.mkdir(parents=True, exist_ok=True)
    report = dict(device=torch.cuda.get_device_name() if a.device.startswith("cuda") else platform.processor(),
                  torch=torch.__version__, assumed_tflops=dict(half=DEFAULT_TFLOPS, fp32=DEFAULT_FP32_TFLOPS),
                  tf32=torch.backends.cuda.matmul.allow_tf32, layers=a.layers, seqlen=a.seqlen,
                  windows=a.windows, nsamples=a.nsamples, rows=[], full=[])
    path = a.out / "gpu_throughput.json"

    def save():
        path.write_text(json.dumps(report, indent=1))

    def add(model, layers, what, dtype, tokens, seconds, flop):
        s = statistics.median(seconds)
        row = dict(model=model, layers=layers, what=what, dtype=dtype, tokens=tokens, seconds=seconds, median_s=s,
                   tok_per_s=tokens / s, tflops=flop / s / 1e12, peak_gib=peak())
        report["rows"].append(row)
        save()
        print(f"{model:28s} {layers!s:>4} {what:16s} {dtype:8s} {tokens:7d} tok {s:8.3f} s {tokens / s:10.0f} tok/s "
              f"{row['tflops']:7.1f} TFLOPS", flush=True)

    g = torch.Generator().manual_seed(0)
    for name in a.models:
        config = MODELS[name]
        wins = torch.randint(0, config["vocab_size"], (a.windows, a.seqlen), generator=g)
        calib = torch.randint(0, config["vocab_size"], (a.nsamples, a.seqlen), generator=g)
        try:
            free()
            for method in METHODS:  # warm-up: the solvers' first call on a device pays its libraries' set-up
                prune_model(build(config, 1, torch.float32, a.device), method, 0.5, calib[:2], progress=False)
                free()
            for layers in sorted(set(a.layers)) + ([None] if a.full_eval else []):
                c = counts(build(config, layers, torch.float16, "meta"))
                secs = time_eval(build(config, layers, torch.float16, a.device), wins, a.repeats)
                add(name, layers, "eval", "float16", wins.numel(), secs, 2 * c["matmul_params"] * wins.numel())
                report["rows"][-1].update(c)
                free()
                if layers is None:
                    continue
                for method in METHODS:
                    secs = time_prune(build(config, layers, torch.float32, a.device), method, calib)
                    add(name, layers, f"prune-{method}", "float32", calib.numel(), secs,
                        4 * c["block_params"] * calib.numel())
                    free()
                secs = time_grad(build(config, layers, torch.float32, a.device), wins[:1], a.repeats)
                add(name, layers, "grad", "float32", a.seqlen, secs, 6 * c["matmul_params"] * a.seqlen)
                free()
            report["full"] += extrapolate(name, config, report["rows"], a)
            save()
        except Exception as e:  # noqa: BLE001 -- one model's failure is recorded, the next still runs
            report["rows"].append(dict(model=name, error=f"{type(e).__name__}: {e}", trace=traceback.format_exc()))
            save()
            print(f"{name}: {type(e).__name__}: {e}", flush=True)
    save()
    for f in report["full"]:
        print(f"{f['model']:28s} full {f['what']:16s} measured {f['seconds']:8.2f} s ({f['how']}); the estimate "
              f"predicts {f['estimate_s']:8.2f} s: x{f['estimate_over_measured']:.2f}")
    print(f"gpu_throughput: {path}")
    return 0


def extrapolate(name: str, config: dict, rows: list[dict], a) -> list[dict]:
    """The full model's seconds per pass, from the two smallest cuts (linear in blocks), beside the estimate's
    prediction for the full model at its assumed throughput; the directly timed full evaluation where there is
    one. Tokens as measured (eval: windows x seqlen; prune: nsamples x seqlen; grad: one window)."""
    full_layers, n_full = config["num_hidden_layers"], PUBLISHED_PARAMS[name]
    mine = [r for r in rows if r.get("model") == name and "median_s" in r]
    out = []
    for what in dict.fromkeys(r["what"] for r in mine):
        by = {r["layers"]: r for r in mine if r["what"] == what}
        cuts = sorted(k for k in by if k is not None)
        (l1, r1), (l2, r2) = (cuts[0], by[cuts[0]]), (cuts[1], by[cuts[1]])
        per_block = (r2["median_s"] - r1["median_s"]) / (l2 - l1)
        seconds, how = r2["median_s"] + (full_layers - l2) * per_block, f"from {l1} and {l2} blocks"
        if None in by:
            seconds, how = by[None]["median_s"], "timed on the full model"
        tokens = r2["tokens"]
        per_token, tflops = {"eval": (2, DEFAULT_TFLOPS), "grad": (6, DEFAULT_FP32_TFLOPS)}.get(
            what, (4, DEFAULT_FP32_TFLOPS))
        estimate = per_token * n_full * tokens / (tflops * 1e12)
        out.append(dict(model=name, what=what, tokens=tokens, seconds=seconds, how=how, per_block_s=per_block,
                        estimate_s=estimate, estimate_over_measured=estimate / seconds))
    return out


if __name__ == "__main__":
    sys.exit(main())
