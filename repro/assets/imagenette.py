"""Imagenette: ten ImageNet classes, scored by an ImageNet classifier's own logits.

Imagenette (fast.ai) is a subset of ImageNet: its ten classes are ImageNet synsets, so a classifier
trained on ImageNet-1k scores it directly from its logits at those ten indices (:data:`IMAGENET_INDEX`),
no new head, no fine-tuning. It is not on any registry this project installs from: a user points
``REPRO_IMAGENETTE`` (or a profile's ``vision_data: "imagenette:/path"``) at a folder in the standard
``imagenette2`` layout (``train/<synset>/*.JPEG``, ``val/<synset>/*.JPEG``; the full-size, 320 px and
160 px downloads share it). Images are read with PIL and made into each model's own pixel values by its
own image processor (resize, crop, normalisation), rebuilt from the recipe its identity keeps
(:func:`processor_recipe`), so a record's key names the preprocessing it ran under.

Evaluation takes ``n`` images spread evenly over the sorted validation list (every class, not the
first class's ``n``); calibration takes a seeded permutation's first ``n`` training images. Files are
named in keys by a digest of their relative paths and sizes (:func:`files_digest`), so a different copy
of the folder makes different keys.
"""
from __future__ import annotations

import functools
import hashlib
import os
from pathlib import Path

import torch

from repro.errors import ReproError

# Imagenette's synsets in its (sorted) order, and their ImageNet-1k class indices (ascending as well)
SYNSETS = ("n01440764", "n02102040", "n02979186", "n03000684", "n03028079",
           "n03394916", "n03417042", "n03425413", "n03445777", "n03888605")
IMAGENET_INDEX = (0, 217, 482, 491, 497, 566, 569, 571, 574, 701)
NAMES = ("tench", "English springer", "cassette player", "chain saw", "church", "French horn",
         "garbage truck", "gas pump", "golf ball", "parachute")
ENV = "REPRO_IMAGENETTE"
SPLITS = ("train", "val")
SUFFIXES = (".jpeg", ".jpg", ".png")


def imagenette_root(path: str | os.PathLike | None = None) -> Path:
    """The ``imagenette2`` folder: ``path`` if given, else ``$REPRO_IMAGENETTE``; refused in one line unless
    it holds ``train/`` and ``val/`` with the ten synset folders."""
    path = path or os.environ.get(ENV)
    if not path:
        raise ReproError(f"no Imagenette folder: set {ENV} (or vision_data: \"imagenette:/path\") to a folder in "
                         "the imagenette2 layout (train/<synset>/*.JPEG, val/<synset>/*.JPEG)")
    root = Path(path).expanduser()
    missing = [f"{s}/{c}" for s in SPLITS for c in SYNSETS if not (root / s / c).is_dir()]
    if missing:
        raise ReproError(f"{root} is not an imagenette2 folder: missing {', '.join(missing[:3])}"
                         f"{f' and {len(missing) - 3} more' if len(missing) > 3 else ''}")
    return root


@functools.lru_cache(maxsize=8)
def files(root: Path, split: str) -> tuple[tuple[Path, ...], tuple[int, ...]]:
    """(image paths, labels 0..9) of ``split``, sorted by synset then file name."""
    if split not in SPLITS:
        raise ReproError(f"imagenette has splits {', '.join(SPLITS)}; not {split!r}")
    paths, labels = [], []
    for label, synset in enumerate(SYNSETS):
        mine = sorted(p for p in (root / split / synset).iterdir() if p.suffix.lower() in SUFFIXES)
        paths += mine
        labels += [label] * len(mine)
    if not paths:
        raise ReproError(f"{root / split}: no images")
    return tuple(paths), tuple(labels)


def files_digest(root: Path, split: str) -> str:
    """sha256 (16 hex digits) of the split's relative paths and sizes: names the copy of the folder in keys."""
    h = hashlib.sha256()
    for p in files(root, split)[0]:
        h.update(f"{p.relative_to(root)}\t{p.stat().st_size}\n".encode())
    return h.hexdigest()[:16]


def spread(n: int, total: int) -> list[int]:
    """``n`` indices spread evenly over ``range(total)`` (all of them when ``n >= total``)."""
    if n >= total:
        return list(range(total))
    return [int(i * total / n) for i in range(n)]


def processor_recipe(processor) -> dict:
    """What rebuilds a Hugging Face image processor (:func:`pixels`): its class and its settings."""
    return {"processor": type(processor).__name__, "settings": processor.to_dict()}


def pixels(paths, recipe: dict) -> torch.Tensor:
    """Float pixel values [N, 3, H, W] of the images at ``paths``, by the model's own image processor."""
    import transformers
    from PIL import Image

    processor = getattr(transformers, recipe["processor"]).from_dict(recipe["settings"])
    images = []
    for p in paths:
        with Image.open(p) as im:
            images.append(im.convert("RGB"))
    return processor(images=images, return_tensors="pt")["pixel_values"]
