"""Small stand-ins of the data sets the paper profile reads, for offline tests. **Not real data.**

    .venv/bin/python tools/simulated_data.py --out DIR [--train 6] [--val 3] [--size 64]

writes two stand-ins:

- ``DIR/c4``: allenai/c4's first train and validation shards' paths (``en/c4-train.00000-of-01024.json.gz``,
  ``en/c4-validation.00000-of-00008.json.gz``), JSON lines ``{"text": ...}`` of random sentences over a small
  word list (seeded); point ``REPRO_C4_DIR`` at it.
- ``DIR/imagenette2``: Imagenette's layout (``train/<synset>/*.JPEG``, ``val/<synset>/*.JPEG``, the ten
synsets of the real set) holding small random JPEG images, ``--train`` and ``--val`` per class, each seeded
from its path (two writes give the same files), and ``DIR/imagenette2/simulated.json`` saying so. Point
``REPRO_IMAGENETTE`` at it. Every class's images share a tint, so a classifier *could* tell them apart, but
nothing here is a photograph: numbers measured on it test the plumbing only.

No import of ``repro``: the script needs numpy and Pillow.
"""
from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import sys
from pathlib import Path

import numpy as np

SYNSETS = ("n01440764", "n02102040", "n02979186", "n03000684", "n03028079",
           "n03394916", "n03417042", "n03425413", "n03445777", "n03888605")  # the real Imagenette's
NOTE = "simulated data: random images in the imagenette2 layout"
C4_SHARDS = {"train": "en/c4-train.00000-of-01024.json.gz", "validation": "en/c4-validation.00000-of-00008.json.gz"}
WORDS = ("the model prunes heads and channels of every layer while the data measure what is lost after each step "
         "a small network keeps most of its accuracy when the least useful parts go first").split()


def _seed(text: str) -> int:
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")


def _image(path: str, label: int, size: int):
    from PIL import Image

    rng = np.random.default_rng(_seed(path))
    tint = np.array([(label * 37) % 256, (label * 91) % 256, (label * 53) % 256], dtype=np.float64)
    noise = rng.normal(0, 40, (size, size, 3))
    return Image.fromarray(np.clip(tint + noise + 64, 0, 255).astype(np.uint8), "RGB")


def write_c4(out: str | Path, documents: int = 64, words: int = 120) -> Path:
    """``out/c4`` with both shards of ``documents`` random documents of about ``words`` words; returns the folder."""
    root = Path(out) / "c4"
    for split, shard in C4_SHARDS.items():
        rng = np.random.default_rng(_seed(shard))
        path = root / shard
        path.parent.mkdir(parents=True, exist_ok=True)
        with gzip.open(path, "wt", encoding="utf-8") as f:
            for _ in range(documents):
                text = " ".join(rng.choice(WORDS, size=words)).capitalize() + "."
                f.write(json.dumps({"text": text, "url": "simulated", "timestamp": "simulated"}) + "\n")
    return root


def write_imagenette(out: str | Path, train: int = 6, val: int = 3, size: int = 64) -> Path:
    """``out/imagenette2`` with ``train`` and ``val`` random JPEGs per class; returns the folder."""
    root = Path(out) / "imagenette2"
    for split, n in (("train", train), ("val", val)):
        for label, synset in enumerate(SYNSETS):
            folder = root / split / synset
            folder.mkdir(parents=True, exist_ok=True)
            for k in range(n):
                name = f"{split}/{synset}/{synset}_{k:05d}.JPEG"
                _image(name, label, size).save(root / name, format="JPEG", quality=90)
    (root / "simulated.json").write_text(json.dumps({"simulated": True, "note": NOTE, "train_per_class": train,
                                                     "val_per_class": val, "size": size}, indent=1) + "\n")
    return root


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True, type=Path, help="folder to write imagenette2/ into")
    parser.add_argument("--train", type=int, default=6, help="training images per class")
    parser.add_argument("--val", type=int, default=3, help="validation images per class")
    parser.add_argument("--size", type=int, default=64, help="image side in pixels")
    args = parser.parse_args(argv)
    if min(args.train, args.val, args.size) < 1:
        print("simulated_data: --train, --val and --size must be positive", file=sys.stderr)
        return 2
    root = write_imagenette(args.out, args.train, args.val, args.size)
    print(f"{root}: {10 * (args.train + args.val)} random images ({NOTE})")
    print(f"{write_c4(args.out)}: random-sentence stand-ins of the two C4 shards")
    return 0


if __name__ == "__main__":
    sys.exit(main())
