"""The image modality of an experiment, one component for every engine: Fashion-MNIST training draws
for calibration (a seeded permutation's first ``n``, never a test image), the first ``n_eval`` test
images for evaluation, both as the model's own pixel values, the keys that name them, and the
classifier's measurement (:func:`repro.evaluate.vision.classify`). The head and bandit engines' image
experiments hold one and differ only in their cells."""
from __future__ import annotations

import torch

from repro.assets.data import fashion_mnist
from repro.assets.vision import pixels_for
from repro.engines.base import model_key
from repro.errors import ReproError
from repro.evaluate.vision import classify
from repro.store import PROTOCOL

TRAIN, TEST = "fashion-mnist:train", "fashion-mnist:test"


class Images:
    """Labelled images for ``owner`` (an experiment on an image classifier: its identity names the
    pixel recipe, its setup the evaluation dtype)."""

    def __init__(self, owner, n_eval: int):
        if n_eval < 1:
            raise ReproError(f"n_eval must be positive, got {n_eval}")
        if owner.task != "image-classification":
            raise ReproError(f"{owner.model_name} is not an image classifier ({owner.task})")
        self.owner, self.n_eval = owner, n_eval
        self._test = None

    def pixels(self, images: torch.Tensor) -> torch.Tensor:
        """uint8 Fashion-MNIST images -> the model's pixel values (its resolution, channels, normalisation)."""
        return pixels_for(self.owner.identity, images)

    def draw(self, n: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
        """``n`` labelled training images of a seeded permutation (a smaller ``n`` is a prefix of the same draw)."""
        images, labels = fashion_mnist("train")
        idx = torch.randperm(len(labels), generator=torch.Generator().manual_seed(seed))[:n]
        return self.pixels(images[idx]), labels[idx]

    @staticmethod
    def source(n: int, seed: int, **extra) -> dict:
        """What names a draw of :meth:`draw` in a key."""
        return {"data": TRAIN, "n": n, "seed": seed, **extra}

    def eval_config(self) -> dict:
        """What an evaluated cell's number depends on, besides the method: the test images and dtype."""
        o = self.owner
        return {"protocol": PROTOCOL, "model": model_key(o.identity), "data": TEST, "n_eval": self.n_eval,
                "dtype": o.setup.eval_dtype}

    def test(self) -> tuple[torch.Tensor, torch.Tensor]:
        """The first ``n_eval`` test images as the model's pixel values, and their labels (read once)."""
        if self._test is None:
            images, labels = fashion_mnist("test")
            self._test = self.pixels(images[:self.n_eval]), labels[:self.n_eval]
        return self._test

    def measure(self, model: torch.nn.Module) -> dict:
        """Top-1 and mean cross-entropy of ``model`` as it is on the test images, per image too."""
        return classify(model, *self.test())
