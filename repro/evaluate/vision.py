"""Top-1 accuracy of image classifiers."""
from __future__ import annotations

import torch

from repro.errors import ReproError
from repro.evaluate.stats import MIN_BOOTSTRAP_UNITS, bootstrap_ci
from repro.progress import tqdm


def to_pixels(images: torch.Tensor, image_size: int, channels: int, mean: float = 0.5, std: float = 0.5) -> torch.Tensor:
    """uint8 [N, H, W] -> float [N, C, S, S] normalised, resized to the model's input size."""
    x = images.float().div(255.0).unsqueeze(1)
    if x.shape[-1] != image_size:
        x = torch.nn.functional.interpolate(x, size=(image_size, image_size), mode="bilinear", align_corners=False)
    return ((x - mean) / std).expand(-1, channels, -1, -1)


@torch.inference_mode()
def top1_accuracy(model: torch.nn.Module, pixels: torch.Tensor, labels: torch.Tensor, batch_size: int = 64,
                  progress: bool = True) -> dict:
    """Top-1 accuracy with a 95% bootstrap CI over examples (None below ``MIN_BOOTSTRAP_UNITS`` images)."""
    if len(pixels) != len(labels) or len(labels) == 0:
        raise ReproError(f"need as many labels as images (got {len(pixels)} images, {len(labels)} labels)")
    dtype = next(model.parameters()).dtype
    correct = []
    for s in tqdm(range(0, len(pixels), batch_size), desc="top-1", leave=False, disable=not progress):
        logits = model(pixel_values=pixels[s:s + batch_size].to(dtype)).logits
        correct.append((logits.argmax(-1) == labels[s:s + batch_size]).double())
    c = torch.cat(correct).numpy()
    return {"accuracy": float(c.mean()), "ci95": bootstrap_ci(c) if len(c) >= MIN_BOOTSTRAP_UNITS else None, "n": int(len(c))}
