"""Image classifiers on labelled images: top-1 and cross-entropy, per image (the one classifier loop)."""
from __future__ import annotations

import torch
import torch.nn.functional as F

from repro.errors import ReproError


@torch.no_grad()
def classify(model: torch.nn.Module, pixels: torch.Tensor, labels: torch.Tensor, batch_size: int = 500,
             classes: list[int] | None = None) -> dict:
    """Top-1 accuracy and mean cross-entropy of ``model`` (as it is: masked, zeroed or removed) on
    ``pixels`` with their ``labels``, both kept per image so that two models compare paired on the
    same images; logits in float32 whatever the model's dtype. ``classes``: score only these logits
    (an ImageNet classifier on Imagenette's ten classes), ``labels`` then index into ``classes``."""
    if len(pixels) != len(labels) or len(labels) == 0:
        raise ReproError(f"need as many labels as images (got {len(pixels)} images, {len(labels)} labels)")
    first = next(model.parameters())
    ce, right = [], []
    for s in range(0, len(labels), batch_size):
        logits = model(pixel_values=pixels[s:s + batch_size].to(first.device, first.dtype)).logits.float().cpu()
        if classes is not None:
            logits = logits[:, classes]
        ce.append(F.cross_entropy(logits, labels[s:s + batch_size], reduction="none"))
        right.append(logits.argmax(-1) == labels[s:s + batch_size])
    ce, right = torch.cat(ce), torch.cat(right)
    return {"top1": float(right.float().mean()), "ce": float(ce.mean()), "per_image_ce": ce.tolist(),
            "per_image_correct": right.int().tolist(), "n_eval": len(labels), "dtype": str(first.dtype).split(".")[-1]}
