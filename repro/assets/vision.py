"""Vision models this project can run offline.

No ImageNet, Imagenette or pretrained classifier installs from a registry, so Paper 3's vision
rows use a small DeiT-style ViT **trained here** on Fashion-MNIST (Debian
``dataset-fashion-mnist``): :func:`train_fashion_vit` trains it once per seed and caches it under
``$REPRO_CACHE/models/fashion-vit-s<seed>`` with its training config, test accuracy and
seconds (``training.json``); :func:`load_fashion_vit` loads that folder (training it first if
needed). Figures built on it must say it was trained here.
"""
from __future__ import annotations

import hashlib
import json
import math
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
import torch.nn.functional as F

from repro.assets.data import fashion_mnist
from repro.assets.files import cache_dir, folder_weights_sha256, save_folder_atomically
from repro.errors import ReproError

FMNIST_MEAN, FMNIST_STD = 0.2860, 0.3530  # Fashion-MNIST train pixel statistics (on [0, 1])
IMAGENET_MEAN, IMAGENET_STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
# how each model's pixel values are made from uint8 [N, 28, 28] images (identity["pixels"])
FASHION_VIT_PIXELS = {"size": 28, "channels": 1, "mean": [FMNIST_MEAN], "std": [FMNIST_STD]}


@dataclass(frozen=True)
class ViTRecipe:
    """Architecture and training settings of the Fashion-MNIST ViT (a 6-layer, 8-head, hidden-128
    ViT on 28 x 28 with 4 x 4 patches: 49 patches + [CLS])."""
    hidden_size: int = 128
    num_hidden_layers: int = 6
    num_attention_heads: int = 8
    intermediate_size: int = 256   # MLP ratio 2 (0.44 s a step here against 0.60 s with 512)
    patch_size: int = 4
    epochs: int = 3
    batch_size: int = 128
    lr: float = 1e-3
    weight_decay: float = 0.05
    warmup_steps: int = 200
    augment: bool = True          # random shifts of up to 2 pixels and horizontal flips
    train_limit: int | None = None  # first N training images (tests); None: all 60000
    test_limit: int | None = None   # first N test images for the recorded accuracy (tests); None: all 10000


def fashion_pixels(images: torch.Tensor) -> torch.Tensor:
    """uint8 images [N, 28, 28] -> normalised float pixel values [N, 1, 28, 28]."""
    if images.dtype != torch.uint8 or images.ndim != 3:
        raise ReproError(f"expected uint8 images [N, H, W], got {images.dtype} {tuple(images.shape)}")
    return ((images.float() / 255 - FMNIST_MEAN) / FMNIST_STD)[:, None]


def resized_pixels(images: torch.Tensor, size: int, channels: int, mean, std) -> torch.Tensor:
    """uint8 images [N, 28, 28] -> float [N, channels, size, size]: scaled to [0, 1], resized
    bilinearly (no antialiasing; unchanged at 28), the gray channel copied ``channels`` times, then
    normalised per channel with ``mean`` and ``std`` (the pretrained DINOv2 takes 3 ImageNet-
    normalised channels, see :mod:`repro.assets.dinov2`)."""
    if images.dtype != torch.uint8 or images.ndim != 3:
        raise ReproError(f"expected uint8 images [N, H, W], got {images.dtype} {tuple(images.shape)}")
    if len(mean) != channels or len(std) != channels:
        raise ReproError(f"need one mean and std per channel ({channels}), got {list(mean)}, {list(std)}")
    x = images.float()[:, None] / 255
    if x.shape[-2:] != (size, size):
        x = F.interpolate(x, size=(size, size), mode="bilinear", align_corners=False)
    shape = (1, channels, 1, 1)
    return (x.expand(-1, channels, -1, -1) - torch.tensor(mean).view(shape)) / torch.tensor(std).view(shape)


def pixels_for(identity: dict, images: torch.Tensor) -> torch.Tensor:
    """The pixel values the model of ``identity`` takes for uint8 images [N, 28, 28]: its
    ``identity["pixels"]`` recipe (size, channels, mean, std); without one, :func:`fashion_pixels`
    (the Fashion-MNIST ViT and the tiny 1-channel ViTs)."""
    spec = identity.get("pixels")
    return fashion_pixels(images) if spec is None else resized_pixels(images, **spec)


def _augment(x: torch.Tensor, g: torch.Generator) -> torch.Tensor:
    """Random shifts (pad 2, crop back) and horizontal flips, one draw per image."""
    n, _, h, w = x.shape
    padded = F.pad(x, (2, 2, 2, 2), value=float(x.min()))
    dy, dx = torch.randint(0, 5, (2, n), generator=g)
    rows = (torch.arange(h)[None, :] + dy[:, None])[:, :, None]
    cols = (torch.arange(w)[None, :] + dx[:, None])[:, None, :]
    out = padded[torch.arange(n)[:, None, None], 0, rows, cols][:, None]
    flip = torch.rand(n, generator=g) < 0.5
    out[flip] = out[flip].flip(-1)
    return out


def build_vit(recipe: ViTRecipe, seed: int) -> torch.nn.Module:
    from transformers import ViTConfig, ViTForImageClassification

    config = ViTConfig(hidden_size=recipe.hidden_size, num_hidden_layers=recipe.num_hidden_layers,
                       num_attention_heads=recipe.num_attention_heads, intermediate_size=recipe.intermediate_size,
                       image_size=28, patch_size=recipe.patch_size, num_channels=1, num_labels=10,
                       id2label={i: n for i, n in enumerate(FASHION_LABELS)},
                       label2id={n: i for i, n in enumerate(FASHION_LABELS)})
    config._attn_implementation = "sdpa"
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        return ViTForImageClassification(config)


FASHION_LABELS = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag",
                  "Ankle boot"]


@torch.no_grad()
def accuracy(model: torch.nn.Module, pixels: torch.Tensor, labels: torch.Tensor, batch_size: int = 500) -> float:
    """Top-1 accuracy of an image classifier on (pixels, labels)."""
    was = model.training
    model.eval()
    right = 0
    for s in range(0, len(labels), batch_size):
        right += (model(pixel_values=pixels[s:s + batch_size]).logits.argmax(-1) == labels[s:s + batch_size]).sum().item()
    model.train(was)
    return right / len(labels)


def train_fashion_vit(seed: int = 0, recipe: ViTRecipe = ViTRecipe(), progress: bool = True) -> tuple[torch.nn.Module, dict]:
    """Train the ViT on the Fashion-MNIST train split (seeded: initialisation, order, augmentation);
    returns the model (eval mode) and its training record (recipe, test accuracy, seconds)."""
    from repro.progress import tqdm

    images, labels = fashion_mnist("train")
    if recipe.train_limit is not None:
        images, labels = images[:recipe.train_limit], labels[:recipe.train_limit]
    x, y = fashion_pixels(images), labels
    model = build_vit(recipe, seed).train()
    g = torch.Generator().manual_seed(seed)
    opt = torch.optim.AdamW(model.parameters(), lr=recipe.lr, weight_decay=recipe.weight_decay)
    steps = recipe.epochs * math.ceil(len(y) / recipe.batch_size)
    warm = min(recipe.warmup_steps, max(steps // 10, 1))
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: (s + 1) / warm if s < warm else 0.5 * (1 + math.cos(math.pi * (s - warm) / max(steps - warm, 1))))
    t0, losses = time.perf_counter(), []
    bar = tqdm(total=steps, desc=f"train fashion-vit seed {seed}", disable=not progress)
    for _ in range(recipe.epochs):
        order = torch.randperm(len(y), generator=g)
        for s in range(0, len(y), recipe.batch_size):
            idx = order[s:s + recipe.batch_size]
            xb = _augment(x[idx], g) if recipe.augment else x[idx]
            loss = F.cross_entropy(model(pixel_values=xb).logits, y[idx])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            sched.step()
            losses.append(float(loss.detach()))
            bar.update()
    bar.close()
    seconds = time.perf_counter() - t0
    test_x, test_y = fashion_mnist("test")
    acc = accuracy(model, fashion_pixels(test_x[:recipe.test_limit]), test_y[:recipe.test_limit])
    record = {"recipe": asdict(recipe), "seed": seed, "steps": steps, "train_seconds": round(seconds, 1),
              "final_train_loss": sum(losses[-50:]) / len(losses[-50:]), "test_top1": acc,
              "torch": torch.__version__, "threads": torch.get_num_threads(),
              "note": "trained here on Fashion-MNIST (Debian dataset-fashion-mnist); not a pretrained model"}
    return model.eval(), record


TRAIN_THREADS = 1  # the committed records' models were trained with one thread; more threads sum in another order


@contextmanager
def reproducible_training(threads: int = TRAIN_THREADS):
    """Training whose weights records depend on: a fixed torch thread count and deterministic
    algorithms, so the same seed gives the same weights on any machine of the same kind, whatever
    thread count the caller runs with (restored on exit)."""
    n, det = torch.get_num_threads(), torch.are_deterministic_algorithms_enabled()
    torch.set_num_threads(threads)
    torch.use_deterministic_algorithms(True, warn_only=True)
    try:
        yield
    finally:
        torch.set_num_threads(n)
        torch.use_deterministic_algorithms(det)


def trained_folder(prefix: str, seed: int, recipe, train, progress: bool = True) -> Path:
    """The cache folder ``<prefix>-s<seed>`` of a model trained here (a non-default ``recipe``
    gets its hash in the name): trained by ``train(seed, recipe, progress) -> (model, record)``
    under :func:`reproducible_training` and saved atomically with ``training.json`` on first use,
    read afterwards."""
    tag = "" if recipe == type(recipe)() else "-" + hashlib.sha256(
        json.dumps(asdict(recipe), sort_keys=True).encode()).hexdigest()[:8]
    folder = cache_dir("models") / f"{prefix}-s{seed}{tag}"
    if (folder / "training.json").exists():
        return folder
    with reproducible_training():
        model, record = train(seed, recipe, progress)

    def write(tmp: Path) -> None:
        model.save_pretrained(tmp)
        (tmp / "training.json").write_text(json.dumps(record, indent=1) + "\n")

    return save_folder_atomically(folder, write)


def fashion_vit_folder(seed: int = 0, recipe: ViTRecipe = ViTRecipe(), progress: bool = True) -> Path:
    """The cached folder of the trained ViT (trained and saved atomically on first use)."""
    return trained_folder("fashion-vit", seed, recipe, train_fashion_vit, progress)


def load_fashion_vit(seed: int = 0, dtype: torch.dtype = torch.float32, device: torch.device | str = "cpu",
                     recipe: ViTRecipe = ViTRecipe()):
    """(model, identity) of the trained ViT of ``seed`` (training it first if it is not cached)."""
    from transformers import ViTForImageClassification


    folder = fashion_vit_folder(seed, recipe)
    record = json.loads((folder / "training.json").read_text())
    model = ViTForImageClassification.from_pretrained(folder, dtype=dtype, attn_implementation="sdpa").to(device)
    identity = {"name": "fashion-vit", "source": "trained here (repro.assets.vision.train_fashion_vit)",
                "quantisation": "none", "weights_sha256": folder_weights_sha256(folder), "seed": seed,
                "model_type": "vit", "test_top1": record["test_top1"], "recipe": record["recipe"],
                "pixels": FASHION_VIT_PIXELS}
    return model.eval(), identity
