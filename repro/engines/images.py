"""The image modality of an experiment, one component for every engine: labelled training draws for
calibration (a seeded permutation's first ``n``, never an evaluation image), ``n_eval`` evaluation
images, both as the model's own pixel values, the keys that name them, and the classifier's measurement
(:func:`repro.evaluate.vision.classify`). The head and bandit engines' image experiments hold one and
differ only in their cells.

Two image sets (``data``):

- ``"fashion-mnist"`` (default): Debian's Fashion-MNIST; the models trained here on it; evaluation on
  the first ``n_eval`` test images (the test split is shuffled).
- ``"imagenette"`` or ``"imagenette:/path"``: an ``imagenette2`` folder (:mod:`repro.assets.imagenette`)
  scored by an ImageNet-1k classifier's logits at Imagenette's ten ImageNet indices; evaluation on
  ``n_eval`` validation images spread evenly over the sorted list (every class).
"""
from __future__ import annotations

import torch

from repro.assets import imagenette
from repro.assets.data import fashion_mnist
from repro.assets.vision import pixels_for
from repro.engines.base import model_key
from repro.errors import ReproError
from repro.evaluate.vision import classify
from repro.store import PROTOCOL

TRAIN, TEST = "fashion-mnist:train", "fashion-mnist:test"
IMAGE_SETS = ("fashion-mnist", "imagenette")
NO_FOLDER = "(no folder)"  # a dry run's stand-in for a missing imagenette2 folder


def parse_images(spec: str) -> tuple[str, str | None]:
    """``"fashion-mnist"`` / ``"imagenette"`` / ``"imagenette:/path"`` -> (name, path or None), refused in one line."""
    name, _, path = str(spec).partition(":")
    if name not in IMAGE_SETS or (path and name != "imagenette"):
        raise ReproError(f"unknown image set {spec!r}; expected fashion-mnist, imagenette or imagenette:/path")
    return name, path or None


FASHION_CLASSES = 10


class Images:
    """Labelled images for ``owner`` (an experiment on an image classifier: its identity names the
    pixel recipe, its setup the evaluation dtype)."""

    def __init__(self, owner, n_eval: int, data: str = "fashion-mnist"):
        if n_eval < 1:
            raise ReproError(f"n_eval must be positive, got {n_eval}")
        self.name, path = parse_images(data)
        if owner.task != "image-classification":
            raise ReproError(f"{owner.model_name} is not an image classifier ({owner.task})")
        self.root = self._root(owner, path) if self.name == "imagenette" else None
        if (self.root not in (None, NO_FOLDER) and getattr(owner.store, "dry", None) is None
                and "processor" not in owner.identity.get("pixels", {})):
            raise ReproError(f"{owner.model_name}: Imagenette needs an ImageNet classifier with its image processor "
                             "(a hub image-classification model)")
        self.owner, self.n_eval = owner, n_eval
        self._test = None

    @staticmethod
    def _root(owner, path):
        """The imagenette2 folder; in a dry run (``owner.store.dry``) without one, a note and the stand-in
        ``"(no folder)"`` (keys then name no real copy: every cell counts as to compute)."""
        dry = getattr(owner.store, "dry", None)
        try:
            return imagenette.imagenette_root(path)
        except ReproError as e:
            if dry is None:
                raise
            dry.note(f"Imagenette: {e} (the dry run counts its cells as to compute)")
            return NO_FOLDER

    # -- what names the images in keys -------------------------------------------------------------
    def _split(self, split: str) -> str:
        if self.root is None:
            return {"train": TRAIN, "val": TEST}[split]
        if self.root is NO_FOLDER:
            return f"imagenette:{split}:(no folder)"
        return f"imagenette:{split}:{imagenette.files_digest(self.root, split)}"

    def source(self, n: int, seed: int, **extra) -> dict:
        """What names a draw of :meth:`draw` in a key."""
        return {"data": self._split("train"), "n": n, "seed": seed, **extra}

    def eval_config(self) -> dict:
        """What an evaluated cell's number depends on, besides the method: the evaluation images and dtype."""
        o = self.owner
        return {"protocol": PROTOCOL, "model": model_key(o.identity), "data": self._split("val"),
                "n_eval": self.n_eval, "dtype": o.setup.eval_dtype}

    def describe(self) -> str:
        """The evaluation images in words, for captions and provenance."""
        if self.root is None:
            return f"first {self.n_eval} Fashion-MNIST test images"
        return (f"{self.n_eval} Imagenette validation images spread over its ten classes, scored by the logits at "
                "their ImageNet indices")

    # -- the images ----------------------------------------------------------------------------------
    @property
    def classes(self) -> list[int] | None:
        """The logits that score this set (Imagenette: its ten ImageNet indices); None: all of them."""
        return list(imagenette.IMAGENET_INDEX) if self.root is not None else None

    @property
    def n_classes(self) -> int:
        """How many classes the evaluation scores (:attr:`classes`; Fashion-MNIST's ten labels): a uniform guess
        over them has cross-entropy ln(n_classes) and, on a balanced set, accuracy 1 / n_classes."""
        return len(self.classes) if self.classes is not None else FASHION_CLASSES

    def pixels(self, images: torch.Tensor) -> torch.Tensor:
        """uint8 Fashion-MNIST images -> the model's pixel values (its resolution, channels, normalisation)."""
        return pixels_for(self.owner.identity, images)

    def _files(self, split: str, idx) -> tuple[torch.Tensor, torch.Tensor]:
        """Imagenette images ``idx`` of ``split``: training draws labelled by ImageNet index (the loss the
        calibrated scorers and the searches read is the classifier's own, over its 1000 logits), evaluation
        images by position 0..9 among the ten logits :meth:`measure` keeps."""
        paths, labels = imagenette.files(self.root, split)
        names = imagenette.IMAGENET_INDEX if split == "train" else range(len(imagenette.SYNSETS))
        return (imagenette.pixels([paths[i] for i in idx], self.owner.identity["pixels"]),
                torch.tensor([names[labels[i]] for i in idx]))

    def draw(self, n: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
        """``n`` labelled training images of a seeded permutation (a smaller ``n`` is a prefix of the same draw)."""
        def first(total: int) -> torch.Tensor:
            return torch.randperm(total, generator=torch.Generator().manual_seed(seed))[:n]

        if self.root is not None:
            return self._files("train", first(len(imagenette.files(self.root, "train")[1])).tolist())
        images, labels = fashion_mnist("train")
        idx = first(len(labels))
        return self.pixels(images[idx]), labels[idx]

    def test(self) -> tuple[torch.Tensor, torch.Tensor]:
        """The ``n_eval`` evaluation images as the model's pixel values, and their labels (read once)."""
        if self._test is None:
            if self.root is not None:
                self._test = self._files("val", imagenette.spread(self.n_eval, len(imagenette.files(self.root, "val")[1])))
            else:
                images, labels = fashion_mnist("test")
                self._test = self.pixels(images[:self.n_eval]), labels[:self.n_eval]
        return self._test

    def measure(self, model: torch.nn.Module) -> dict:
        """Top-1 and mean cross-entropy of ``model`` as it is on the evaluation images, per image too."""
        return classify(model, *self.test(), classes=self.classes)
