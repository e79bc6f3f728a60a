"""Top-1 accuracy for image classifiers and masked-LM pseudo-perplexity for encoders."""
import math

import pytest
import torch

from helpers import build_tiny
from repro.errors import ReproError
from repro.evaluate.mlm import pseudo_perplexity
from repro.evaluate.vision import to_pixels, top1_accuracy


@pytest.mark.parametrize("name", ["tiny-vit", "tiny-deit"])
def test_top1_matches_argmax(name):
    m = build_tiny(name)
    g = torch.Generator().manual_seed(0)
    images = torch.randint(0, 256, (20, 28, 28), dtype=torch.uint8, generator=g)
    px = to_pixels(images, 28, 1)
    with torch.no_grad():
        pred = m(pixel_values=px).logits.argmax(-1)
    labels = pred.clone()
    labels[:5] = (labels[:5] + 1) % 10  # exactly 5 wrong
    r = top1_accuracy(m, px, labels, batch_size=7, progress=False)
    assert r["accuracy"] == pytest.approx(0.75) and r["n"] == 20
    with pytest.raises(ReproError):
        top1_accuracy(m, px, labels[:3], progress=False)


@pytest.mark.parametrize("name", ["tiny-bert", "tiny-roberta"])
def test_pseudo_perplexity_by_hand(name):
    m = build_tiny(name)
    seqs = torch.tensor([[1, 10, 11, 12, 2], [1, 20, 21, 22, 2]])
    r = pseudo_perplexity(m, seqs, mask_token_id=3, special_ids={1, 2}, batch_size=2, progress=False)
    nll = []
    with torch.no_grad():
        for seq in seqs:
            s = []
            for t in (1, 2, 3):
                x = seq.clone()[None]
                x[0, t] = 3
                s.append(-m(input_ids=x).logits[0, t].log_softmax(-1)[seq[t]].item())
            nll.append(sum(s) / 3)
    assert r["sequence_nll"] == pytest.approx(nll, rel=1e-5)
    assert r["pppl"] == pytest.approx(math.exp(sum(nll) / 2), rel=1e-5)


@pytest.mark.skipif(not __import__("pathlib").Path("/usr/share/datasets/fashion-mnist").exists(),
                    reason="Debian dataset-fashion-mnist not installed")
def test_fashion_mnist_through_a_classifier():
    from repro.assets.data import fashion_mnist

    images, labels = fashion_mnist("test")
    assert images.shape == (10000, 28, 28) and images.dtype == torch.uint8
    assert labels.shape == (10000,) and set(labels.unique().tolist()) == set(range(10))
    r = top1_accuracy(build_tiny("tiny-vit"), to_pixels(images[:64], 28, 1), labels[:64], progress=False)
    assert 0.0 <= r["accuracy"] <= 1.0 and r["n"] == 64  # untrained: only the plumbing is checked
