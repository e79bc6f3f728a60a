"""The machine a measurement ran on, and how fast it runs a forward pass in each precision.

A record's *key* never names the machine (a record computed on one CPU is read on every other); a timing
record carries the machine as data (:func:`describe`), so a table can say where each timing came from.

:func:`probe` measures this machine: tokens per second of one forward pass of a SmolLM2-135M-shaped model
(random weights, built in about 2 s) in a given dtype, at the thread count the caller runs with. Its
result is cached per machine under ``$REPRO_CACHE/machine/`` (a few seconds the first time only), when the cores were
quiet while it ran (:func:`measure`): one disturbed second must not price every later run.
:data:`REFERENCE` is the same quantity on the machine class that computed the committed records, so
``seconds x REFERENCE[d_ref] / probe(d)`` estimates a committed cell's time here (:mod:`repro.engines.timing`).
"""
from __future__ import annotations

import json
import os
import platform
import time
from dataclasses import dataclass
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


def _cpu_seconds() -> tuple[float, float] | None:
    """(CPU-seconds every process on this machine has run, CPU-seconds this process has run), from
    ``/proc/stat`` and :func:`os.times`; None where there is no ``/proc/stat``."""
    try:
        with open("/proc/stat") as f:
            fields = f.readline().split()[1:]
    except OSError:
        return None
    ticks = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    busy = sum(int(v) for i, v in enumerate(fields[:8]) if i not in (3, 4))  # all but idle and iowait
    t = os.times()
    return busy / ticks, t.user + t.system


def others_load(before: tuple[float, float] | None, after: tuple[float, float] | None, wall: float) -> float | None:
    """The share of this machine's cores that *other* processes kept busy between two :func:`_cpu_seconds`
    readings ``wall`` seconds apart (0: quiet, 1: every core busy with other work)."""
    if before is None or after is None or wall <= 0:
        return None
    others = (after[0] - before[0]) - (after[1] - before[1])
    return min(1.0, max(0.0, others / (wall * (os.cpu_count() or 1))))


QUIET = 0.15  # a probe is cached only when other work kept at most this share of the cores busy while it ran
ROUNDS = 3  # passes are timed in this many rounds: their fastest must agree within SPREAD
SPREAD = 1.25


def _measure(dtypes: list[str], budget_s: float = 1.0) -> dict[str, float]:
    """Tokens per second of each dtype: the fastest pass of each of :data:`ROUNDS` rounds (``budget_s`` in
    all), the best of the rounds; ``_load`` (the share of the cores other work kept busy meanwhile) and
    ``_spread`` (fastest over slowest round, the worst dtype's) beside them."""
    model = _probe_model()
    out, spread = {}, 1.0
    before, t_start = _cpu_seconds(), time.perf_counter()
    for d in dtypes:
        m = model.to(parse_dtype(d))
        n = PROBE_TOKENS["float32"] if d == "bfloat16" and wanted() else PROBE_TOKENS.get(d, 32)  # fast enough
        ids = torch.randint(4, 49152, (1, n), generator=torch.Generator().manual_seed(0))
        rounds = []
        with torch.inference_mode(), bf16_products():  # as a record's cells run here (repro.assets.precision)
            m(input_ids=ids, use_cache=False)  # warm-up
            for _ in range(ROUNDS):
                best, t0 = float("inf"), time.perf_counter()
                while best == float("inf") or time.perf_counter() - t0 < budget_s / ROUNDS:  # least disturbed pass
                    t = time.perf_counter()
                    m(input_ids=ids, use_cache=False)
                    best = min(best, time.perf_counter() - t)
                rounds.append(ids.shape[1] / best)
        out[d] = max(rounds)
        spread = max(spread, max(rounds) / min(rounds))
    load = others_load(before, _cpu_seconds(), time.perf_counter() - t_start)
    return {**out, "_load": load, "_spread": spread}


def disturbed(speed: dict[str, float], load: float | None, spread: float, fast: bool) -> str:
    """Why a measurement must not be cached ("" when it may): other work busy on the cores while it ran, rounds
    that disagree, or a result out of line with the CPU (bfloat16 slower than float32 where it is fast)."""
    if load is not None and load > QUIET:
        return f"{load:.0%} of the cores were busy with other work while it ran"
    if spread > SPREAD:
        return f"its rounds disagreed by x{spread:.2f}"
    if fast and "bfloat16" in speed and "float32" in speed and speed["bfloat16"] < speed["float32"]:
        return (f"bfloat16 measured slower than float32 ({speed['bfloat16']:.0f} against {speed['float32']:.0f} "
                "tokens/s) on a CPU with fast bfloat16")
    return ""


@dataclass(frozen=True)
class Probe:
    """A speed probe: tokens per second by dtype, when it was measured (unix time), the share of the cores
    other work kept busy meanwhile (None: not measurable here), and why it was not cached ("" if it was, or
    was read from the cache)."""
    speed: dict
    measured: float
    load: float | None
    disturbed: str = ""
    assumed: bool = False  # set by REPRO_PROBE, not measured

    def describe(self, now: float | None = None) -> str:
        """E.g. "probe float32 661, bfloat16 1,400 tokens/s, measured 2 h ago on a quiet machine"."""
        age = max(0.0, (now or time.time()) - self.measured)
        when = ("just now" if age < 120 else f"{age / 60:.0f} min ago" if age < 7200 else
                f"{age / 3600:.0f} h ago" if age < 2 * 86400 else f"{age / 86400:.0f} days ago")
        speeds = ", ".join(f"{d} {v:,.0f}" for d, v in self.speed.items())
        if self.assumed:
            return f"probe {speeds} tokens/s, assumed ({ENV}), not measured"
        quiet = (f"on a quiet machine (other work {self.load:.0%} of the cores)" if self.load is not None
                 else "load not measurable here")
        text = f"probe {speeds} tokens/s, measured {when} {quiet}"
        if self.disturbed:
            text = (f"probe {speeds} tokens/s, measured {when}, not cached: {self.disturbed}, so an estimate from it "
                    "runs long; the next plan measures again (kept once the cores are quiet)")
        return text


ENV = "REPRO_PROBE"  # e.g. "float32=550,bfloat16=1400": speeds to assume instead of measuring (a shared machine, tests)


def _assumed(dtypes: list[str]) -> Probe:
    """The speeds :data:`ENV` names (one line naming it when it is malformed or lacks a dtype asked for)."""
    from repro.errors import ReproError

    try:
        speed = {k.strip(): float(v) for k, v in (part.split("=") for part in os.environ[ENV].split(","))}
    except ValueError:
        raise ReproError(f"{ENV} must read like float32=550,bfloat16=1400, got {os.environ[ENV]!r}") from None
    if not all(d in speed and speed[d] > 0 for d in dtypes):
        raise ReproError(f"{ENV} names no positive speed for {', '.join(d for d in dtypes if d not in speed)}")
    return Probe({d: speed[d] for d in dtypes}, time.time(), None, assumed=True)


def _cache_key() -> str:
    return f"{cpu()['cpu']}|{torch.get_num_threads()}|{torch.__version__}" + ("|bf16 products" if wanted() else "")


def _read_cache(path) -> dict:
    try:
        return json.loads(path.read_text()) if path.is_file() else {}
    except (OSError, ValueError):
        return {}


def measure(dtypes=("float32", "bfloat16"), cache: bool = True, reprobe: bool = False) -> Probe:
    """Tokens per second of a SmolLM2-135M-shaped forward pass here, per dtype, at torch's current thread
    count, bf16 as records compute it here (:func:`repro.assets.precision.wanted`), as a :class:`Probe`.

    Cached per CPU, thread count, torch version and that choice, and only when the measurement was quiet
    (:func:`disturbed`): a probe taken while other work shares the cores is used for the estimate at hand, said to
    be disturbed, and never kept. A cache entry from before loads were measured is measured again. ``reprobe``:
    measure again whatever the cache holds."""
    dtypes = [str(d) for d in dtypes]
    if os.environ.get(ENV):
        return _assumed(dtypes)
    path = cache_dir("machine") / "probe.json"
    entry = _read_cache(path).get(_cache_key(), {}) if cache else {}
    if reprobe or not isinstance(entry, dict) or "measured" not in entry:
        entry = {}
    speeds = entry.get("speed", {})
    missing = [d for d in dtypes if d not in speeds]
    if not missing:
        return Probe({d: speeds[d] for d in dtypes}, entry["measured"], entry.get("load"))
    got = _measure(dtypes)
    load, spread = got.pop("_load", None), got.pop("_spread", 1.0)
    now = time.time()
    why = disturbed(got, load, spread, fast_bf16())
    if cache and not why:
        allk = _read_cache(path)
        old = allk.get(_cache_key()) if isinstance(allk.get(_cache_key()), dict) else {}
        keep = old.get("speed", {}) if "measured" in old and not reprobe else {}
        allk[_cache_key()] = {"speed": {**keep, **got}, "measured": now, "load": load}
        try:
            path.write_text(json.dumps(allk, indent=1, sort_keys=True) + "\n")
        except OSError:
            pass
    return Probe({d: got[d] for d in dtypes}, now, load, why)


def probe(dtypes=("float32", "bfloat16"), cache: bool = True) -> dict[str, float]:
    """:func:`measure`'s tokens per second alone."""
    return measure(dtypes, cache).speed
