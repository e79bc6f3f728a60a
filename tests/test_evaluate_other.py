"""Top-1 accuracy for image classifiers and masked-LM pseudo-perplexity for encoders."""
import gzip
import math
import struct

import pytest
import torch

from repro.assets.vision import fashion_pixels, resized_pixels
from repro.errors import ReproError
from repro.evaluate.mlm import pseudo_perplexity
from repro.evaluate.vision import classify

from helpers import build_tiny


@pytest.mark.parametrize("name", ["tiny-vit", "tiny-deit"])
def test_top1_matches_argmax(name):
    m = build_tiny(name)
    g = torch.Generator().manual_seed(0)
    images = torch.randint(0, 256, (20, 28, 28), dtype=torch.uint8, generator=g)
    px = fashion_pixels(images)
    with torch.no_grad():
        logits = m(pixel_values=px).logits
    labels = logits.argmax(-1).clone()
    labels[:5] = (labels[:5] + 1) % 10  # exactly 5 wrong
    r = classify(m, px, labels, batch_size=7)  # uneven batches
    assert r["top1"] == pytest.approx(0.75) and r["n_eval"] == 20 and r["per_image_correct"] == [0] * 5 + [1] * 15
    ce = torch.nn.functional.cross_entropy(logits.float(), labels, reduction="none")
    torch.testing.assert_close(torch.tensor(r["per_image_ce"]), ce, rtol=1e-5, atol=1e-6)
    assert r["ce"] == pytest.approx(float(ce.mean()), rel=1e-5)
    with pytest.raises(ReproError):
        classify(m, px, labels[:3])


def hand_nll(model, seq, special, mask_id=3):
    """-log p(token | rest) for each non-special position, one masked copy at a time."""
    out = []
    with torch.no_grad():
        for t in range(len(seq)):
            if int(seq[t]) in special:
                continue
            x = seq.clone()[None]
            x[0, t] = mask_id
            out.append(-torch.log_softmax(model(input_ids=x).logits[0, t].double(), -1)[seq[t]].item())
    return out


@pytest.mark.parametrize("name", ["tiny-bert", "tiny-roberta"])
def test_pseudo_perplexity_by_hand(name):
    """Equal lengths, as a [N, T] tensor: PPPL = exp(total NLL / scored tokens)."""
    m = build_tiny(name)
    seqs = torch.tensor([[1, 10, 11, 12, 2], [1, 20, 21, 22, 2]])
    r = pseudo_perplexity(m, seqs, mask_token_id=3, special_ids={1, 2}, batch_size=2, progress=False)
    nll = [hand_nll(m, s, {1, 2}) for s in seqs]
    assert [len(x) for x in nll] == [3, 3]
    assert r["sequence_nll"] == pytest.approx([sum(x) / 3 for x in nll], rel=1e-5)
    assert r["n_tokens"] == [3, 3] and r["n_sequences"] == 2
    assert r["pppl"] == pytest.approx(math.exp(sum(map(sum, nll)) / 6), rel=1e-5)
    # the same rows given as a list of 1-D tensors give the same numbers
    r2 = pseudo_perplexity(m, list(seqs), mask_token_id=3, special_ids={1, 2}, batch_size=5, progress=False)
    assert r2["pppl"] == pytest.approx(r["pppl"], rel=1e-6)
    assert r2["sequence_nll"] == pytest.approx(r["sequence_nll"], rel=1e-6)


@pytest.mark.parametrize("name", ["tiny-bert", "tiny-roberta"])
def test_pseudo_perplexity_different_lengths_by_hand(name):
    """Salazar et al.: PPPL = exp(sum of all scored tokens' NLL / number of scored tokens), so a
    long sequence weighs more than a short one; per-sequence means and token counts come back too.
    A special id inside a sequence is skipped like the ends."""
    m = build_tiny(name)
    short = torch.tensor([1, 10, 11, 12, 2])                       # 3 scored tokens
    long = torch.tensor([1, 40, 41, 42, 2, 43, 44, 45, 46, 47, 2])  # 8 scored (the middle 2 is not)
    nll = [hand_nll(m, s, {1, 2}) for s in (short, long)]
    assert [len(x) for x in nll] == [3, 8]
    token_mean = (sum(nll[0]) + sum(nll[1])) / 11
    seq_mean = (sum(nll[0]) / 3 + sum(nll[1]) / 8) / 2
    assert abs(token_mean - seq_mean) > 1e-3, "the case must tell token- from sequence-weighting apart"
    for bs in (1, 3, 32):  # chunks of masked copies: several, uneven, one
        r = pseudo_perplexity(m, [short, long], mask_token_id=3, special_ids={1, 2}, batch_size=bs, progress=False)
        assert r["n_tokens"] == [3, 8] and r["n_sequences"] == 2
        assert r["sequence_nll"] == pytest.approx([sum(nll[0]) / 3, sum(nll[1]) / 8], rel=1e-5)
        assert r["pppl"] == pytest.approx(math.exp(token_mean), rel=1e-5)
    assert r["ci95"] is None  # two sequences: no interval (a bootstrap needs 20 units)
    # ten copies of each: the bootstrap can only mix the two kinds, so the CI lies between their own PPPLs
    r = pseudo_perplexity(m, [short, long] * 10, mask_token_id=3, special_ids={1, 2}, batch_size=32, progress=False)
    lo, hi = r["ci95"]
    ends = sorted(math.exp(sum(x) / len(x)) for x in nll)
    assert ends[0] * (1 - 1e-5) <= lo <= r["pppl"] <= hi <= ends[1] * (1 + 1e-5) and lo < hi


def test_pseudo_perplexity_bad_input():
    m = build_tiny("tiny-bert")
    for bad in ([], torch.zeros(0, 4, dtype=torch.long), torch.ones(4, dtype=torch.long),
                [torch.ones(2, 3, dtype=torch.long)], [torch.ones(0, dtype=torch.long)]):
        with pytest.raises(ReproError):
            pseudo_perplexity(m, bad, mask_token_id=3, progress=False)
    with pytest.raises(ReproError, match="sequence 1 has no token"):
        pseudo_perplexity(m, [torch.tensor([1, 9, 2]), torch.tensor([1, 2])], mask_token_id=3,
                          special_ids={1, 2}, progress=False)


FASHION = __import__("pathlib").Path("/usr/share/datasets/fashion-mnist")


@pytest.mark.skipif(not FASHION.exists(), reason="Debian dataset-fashion-mnist not installed")
def test_fashion_mnist_through_a_classifier():
    from repro.assets.data import fashion_mnist

    images, labels = fashion_mnist("test")
    assert images.shape == (10000, 28, 28) and images.dtype == torch.uint8
    # the test split has exactly 1000 images of each class (the train split 6000)
    assert torch.bincount(labels, minlength=10).tolist() == [1000] * 10
    # independent parse of the IDX files: header (magic, count, rows, cols) then raw bytes
    with gzip.open(FASHION / "t10k-images-idx3-ubyte.gz") as f:
        raw = f.read()
    assert struct.unpack(">4i", raw[:16]) == (2051, 10000, 28, 28)
    assert images[:3].flatten().tolist() == list(raw[16:16 + 3 * 784])
    with gzip.open(FASHION / "t10k-labels-idx1-ubyte.gz") as f:
        raw = f.read()
    assert struct.unpack(">2i", raw[:8]) == (2049, 10000)
    assert labels[:64].tolist() == list(raw[8:72])

    m = build_tiny("tiny-vit")
    px = resized_pixels(images[:64], 28, 1, (0.5,), (0.5,))
    torch.testing.assert_close(px, images[:64, None].float() / 127.5 - 1.0, rtol=0, atol=1e-6)
    with torch.no_grad():  # independent: one batch, argmax, count
        n_correct = int((m(pixel_values=px).logits.argmax(-1) == labels[:64]).sum())
    r = classify(m, px, labels[:64], batch_size=10)  # uneven batches
    assert r["n_eval"] == 64
    assert r["top1"] * 64 == pytest.approx(n_correct, abs=1e-9)
    # and the count really depends on the labels: shifting every label changes it
    shifted = classify(m, px, (labels[:64] + 1) % 10, batch_size=10)
    with torch.no_grad():
        n_shifted = int((m(pixel_values=px).logits.argmax(-1) == (labels[:64] + 1) % 10).sum())
    assert shifted["top1"] * 64 == pytest.approx(n_shifted, abs=1e-9)
