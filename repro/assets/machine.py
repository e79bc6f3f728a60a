"""The machine a measurement ran on, and how fast it runs a forward pass in each precision.

A record's *key* never names the machine (a record computed on one CPU is read on every other); a timing
record carries the machine as data (:func:`describe`), so a table can say where each timing came from.

:func:`probe` measures this machine: tokens per second of one forward pass of a SmolLM2-135M-shaped model
(random weights, built in about 2 s) in a given dtype, at the thread count the caller runs with. Its
result is cached per machine under ``$REPRO_CACHE/machine/`` (a few seconds the first time only).
:data:`REFERENCE` is the same quantity on the machine class that computed the committed records, so
``seconds x REFERENCE[d_ref] / probe(d)`` estimates a committed cell's time here (:mod:`repro.engines.timing`).
"""
from __future__ import annotations

import json
import os
import platform
import time
from functools import lru_cache

import torch

from repro.assets.files import cache_dir
from repro.assets.models import fast_bf16, parse_dtype
from repro.assets.precision import bf16_products, wanted

# Tokens per second of SmolLM2-135M (real weights or :func:`probe`'s random ones: the same matmuls), one window
# of 512 tokens, 2 threads, on the 2-core AMD EPYC with AVX512-BF16 that computed the committed records:
# ../shared/ASSETS.md ("Speed on 2 cores (SmolLM2, seqlen 512): fp32 ~550 tok/s, bf16 ~1400 tok/s"). On an
# AVX2-only 2-core AMD EPYC (no AVX512) this probe reads 300-410 (float32) and 62-68 (bfloat16).
REFERENCE = {"float32": 550.0, "bfloat16": 1400.0, "float16": 1400.0}
REFERENCE_MACHINE = "2 cores of an AMD EPYC with AVX512-BF16 (the machine class of the committed records)"
FLAGS = ("avx2", "avx512f", "avx512_bf16", "amx_bf16", "amx_tile")  # what decides the speed of each precision
PROBE_TOKENS = {"float32": 128, "bfloat16": 32, "float16": 32}  # short where a dtype may be slow: seconds, not minutes


@lru_cache(maxsize=1)
def cpu() -> dict:
    """This CPU's model name and the :data:`FLAGS` it has (from ``/proc/cpuinfo`` where there is one)."""
    name, flags = "", set()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() == "model name" and not name:
                    name = value.strip()
                elif key.strip() == "flags" and not flags:
                    flags = set(value.split())
                if name and flags:
                    break
    except OSError:
        pass
    name = name or platform.processor() or platform.machine()
    return {"cpu": name, "flags": [f for f in FLAGS if f in flags]}


def describe(dtype: str | None = None, threads: int | None = None) -> dict:
    """The machine as a timing record keeps it: CPU model and flags, cores, torch threads, dtype timed,
    whether bfloat16 is fast here, and the torch version."""
    return {**cpu(), "cores": os.cpu_count(), "threads": threads or torch.get_num_threads(), "dtype": dtype,
            "fast_bf16": fast_bf16(), "torch": torch.__version__}


def label(machine: dict) -> str:
    """A machine (:func:`describe`, or a migrated record's partial one) in a few words for a caption, e.g.
    "AMD EPYC (AVX2, no fast bfloat16), 2 cores, 2 threads"."""
    flags = machine.get("flags") or []
    isa = ("AMX" if "amx_tile" in flags else "AVX512-BF16" if "avx512_bf16" in flags else
           "AVX512" if "avx512f" in flags else "AVX2" if "avx2" in flags else None)
    bf16 = {True: "fast bfloat16", False: "no fast bfloat16"}.get(machine.get("fast_bf16"))
    if machine.get("cpu"):
        what = machine["cpu"] + (f" ({', '.join(x for x in (isa, bf16) if x)})" if isa or bf16 else "")
    else:
        what = "a CPU not recorded by name" + (" (fast bfloat16: AVX512-BF16 or AMX)" if machine.get("fast_bf16")
                                                 else "")
    parts = [what]
    if machine.get("cores"):
        parts.append(f"{machine['cores']} cores")
    if machine.get("threads"):
        parts.append(f"{machine['threads']} thread{'s' if machine['threads'] != 1 else ''}")
    return ", ".join(parts)


def computed_on(machine: dict | None) -> str:
    """Where a record was computed, from its ``machine`` field, for a reading: :func:`label` without the thread
    count, and how its bfloat16 products ran where they went through float32 (:mod:`repro.assets.precision`);
    "not recorded" for a record older than the field."""
    if not machine:
        return "not recorded"
    what = label({k: v for k, v in machine.items() if k != "threads"})
    return what + ("; bf16 products through float32" if machine.get("bf16_products") else "")


def _probe_model():
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(hidden_size=576, intermediate_size=1536, num_hidden_layers=30, num_attention_heads=9,
                         num_key_value_heads=3, vocab_size=49152, tie_word_embeddings=True,
                         max_position_embeddings=2048)
    with torch.random.fork_rng():
        torch.manual_seed(0)
        return LlamaForCausalLM(config).eval()


def _measure(dtypes: list[str], budget_s: float = 1.0) -> dict[str, float]:
    model = _probe_model()
    out = {}
    for d in dtypes:
        m = model.to(parse_dtype(d))
        n = PROBE_TOKENS["float32"] if d == "bfloat16" and wanted() else PROBE_TOKENS.get(d, 32)  # fast enough
        ids = torch.randint(4, 49152, (1, n), generator=torch.Generator().manual_seed(0))
        with torch.inference_mode(), bf16_products():  # as a record's cells run here (repro.assets.precision)
            m(input_ids=ids, use_cache=False)  # warm-up
            best, t0 = float("inf"), time.perf_counter()
            while best == float("inf") or time.perf_counter() - t0 < budget_s:  # the fastest pass: least disturbed
                t = time.perf_counter()
                m(input_ids=ids, use_cache=False)
                best = min(best, time.perf_counter() - t)
            out[d] = ids.shape[1] / best
    return out


def probe(dtypes=("float32", "bfloat16"), cache: bool = True) -> dict[str, float]:
    """Tokens per second of a SmolLM2-135M-shaped forward pass here, per dtype, at torch's current thread
    count, bf16 as records compute it here (:func:`repro.assets.precision.wanted`); cached per CPU, thread count,
    torch version and that choice."""
    dtypes = [str(d) for d in dtypes]
    key = f"{cpu()['cpu']}|{torch.get_num_threads()}|{torch.__version__}" + ("|bf16 products" if wanted() else "")
    path = cache_dir("machine") / "probe.json"
    known = {}
    if cache and path.is_file():
        try:
            known = json.loads(path.read_text()).get(key, {})
        except (OSError, ValueError):
            known = {}
    missing = [d for d in dtypes if d not in known]
    if missing:
        known.update(_measure(missing))
        if cache:
            try:
                allk = json.loads(path.read_text()) if path.is_file() else {}
            except (OSError, ValueError):
                allk = {}
            allk[key] = known
            try:
                path.write_text(json.dumps(allk, indent=1, sort_keys=True) + "\n")
            except OSError:
                pass
    return {d: known[d] for d in dtypes}
