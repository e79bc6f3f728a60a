"""Paper 1 on MHA encoders: the head scorers on tiny image classifiers (ViT, DINOv2 with a
classification head), MP-G = MP when H_kv = H, calibration from training images only, the
section's cells planned without computing, and its claims on constructed records."""

import numpy as np
import pytest
import torch
import transformers as T

import repro.engines.images as H
from repro.assets.data import fashion_mnist
from repro.assets.models import Loaded
from repro.assets.tiny import TINY, build_tiny
from repro.calib import Calibration, image_windows, loss_gradients
from repro.engines.base import Setup
from repro.engines.heads import VisionHeadExperiment
from repro.errors import ReproError
from repro.methods.heads import HEAD_METHODS, score_heads, select_heads
from repro.store import Store


def _have_fashion() -> bool:
    try:
        fashion_mnist("test")
        return True
    except Exception:  # noqa: BLE001 - the Debian dataset package is not installed
        return False


needs_fashion = pytest.mark.skipif(not _have_fashion(), reason="dataset-fashion-mnist not installed")


def tiny_dinov2_classifier(seed: int = 0) -> torch.nn.Module:
    """The tiny DINOv2 config under Dinov2ForImageClassification ([CLS] + mean patch token -> 10 classes)."""
    config = TINY["tiny-dinov2"][0]()
    config.num_labels = 10
    config._attn_implementation = "sdpa"
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        return T.Dinov2ForImageClassification(config).eval()


def loaded(name: str) -> Loaded:
    model = tiny_dinov2_classifier() if name == "tiny-dinov2-cls" else build_tiny(name)
    return Loaded(model, None, {"name": name, "source": "random-init from config", "quantisation": "none",
                                "seed": 0}, "image-classification")


def image_calibration(n: int = 12, seed: int = 0) -> Calibration:
    g = torch.Generator().manual_seed(seed)
    return Calibration(image_windows(torch.randn(n, 1, 28, 28, generator=g), torch.randint(0, 10, (n,), generator=g)))


@pytest.mark.parametrize("name", ["tiny-vit", "tiny-dinov2-cls"])
def test_every_scorer_runs_on_a_tiny_image_classifier(name):
    model = loaded(name).model
    calib = image_calibration()
    out = {m: score_heads(m, model, calib) for m in HEAD_METHODS.names()}
    for m, s in out.items():
        assert s.shape == (2, 4) and np.isfinite(s).all(), m
    # data-driven scores depend on the images: other images, other Wanda-/Gradient-Head scores
    other = image_calibration(seed=1)
    for m in ("wanda-head", "sparsegpt-head", "gradient-head"):
        assert not np.allclose(out[m], score_heads(m, model, other)), m
    assert all(p.grad is None for p in model.parameters())  # Gradient-Head leaves no gradients behind


def test_image_gradients_are_cross_entropy_gradients():
    model = build_tiny("tiny-vit")
    calib = image_calibration(6)
    loss_gradients(model, calib.windows, batch_size=4, progress=False)  # batches of 4 and 2, weighted
    got = {n: p.grad.clone() for n, p in model.named_parameters()}
    model.zero_grad(set_to_none=True)
    w = calib.windows
    torch.nn.functional.cross_entropy(model(pixel_values=w["pixel_values"]).logits, w["labels"]).backward()
    for n, p in model.named_parameters():
        assert torch.allclose(got[n], p.grad, atol=1e-6), n
    assert len(calib) == 6


@pytest.mark.parametrize("name", ["tiny-vit", "tiny-dinov2-cls"])
def test_mpg_equals_mp_exactly_on_mha(name):
    model = loaded(name).model
    for z in (1.5, 2.0, 2.5):
        a, b = score_heads("mpg", model, z=z), score_heads("mp", model, z=z)
        assert np.array_equal(a, b), z  # bit for bit: g = 1
        for sp in (0.125, 0.25, 0.5):
            assert select_heads(a, sp) == select_heads(b, sp)


def test_the_mha_check_can_fail_on_gqa():
    """The same comparison on a GQA model (g = 2) finds different scores: the equality above is a
    property of H_kv = H, not of a test that cannot fail."""
    model = build_tiny("tiny-llama")
    assert not np.array_equal(score_heads("mpg", model, z=1.0), score_heads("mp", model, z=1.0))
    assert not np.array_equal(score_heads("magnitude-head", model), score_heads("magnitude-head", model) * 0)


@pytest.fixture
def vexp(tmp_path):
    return VisionHeadExperiment("tiny-vit", Setup(eval_dtype="float32"), Store(tmp_path), n_calib=16,
                                grad_nsamples=8, n_eval=40, progress=False, loaded=loaded("tiny-vit"))


@needs_fashion
def test_calibration_reads_training_images_and_evaluation_test_images(vexp, monkeypatch):
    splits = []
    real = H.fashion_mnist

    def spy(split="test"):
        splits.append(split)
        return real(split)
    monkeypatch.setattr(H, "fashion_mnist", spy)
    vexp.scores("wanda-head")
    assert splits == ["train"]
    calib = vexp.calibration()
    images, labels = real("train")
    idx = torch.randperm(len(labels), generator=torch.Generator().manual_seed(0))[:16]
    assert torch.equal(calib.windows["pixel_values"], vexp.images.pixels(images[idx]))
    assert torch.equal(calib.windows["labels"], labels[idx])
    assert calib.source == {"data": "fashion-mnist:train", "n": 16, "seed": 0}
    # Gradient-Head's 8 images: the first 8 of the same draw
    assert torch.equal(vexp.calibration(8).windows["labels"], labels[idx[:8]])
    splits.clear()
    dense = vexp.dense()
    assert splits == ["test"]
    test_x, test_y = real("test")
    res = dense["result"]
    assert res["n_eval"] == 40 and len(res["per_image_ce"]) == 40
    assert res["top1"] == pytest.approx(np.mean(res["per_image_correct"]))
    with torch.no_grad():
        logits = vexp.model(pixel_values=vexp.images.pixels(test_x[:40])).logits
    assert res["per_image_correct"] == (logits.argmax(-1) == test_y[:40]).int().tolist()
    assert dense["config"]["data"] == "fashion-mnist:test"


@needs_fashion
def test_cells_mask_the_selected_heads(vexp):
    dense = vexp.dense()["result"]
    cell = vexp.cell("mpg", 0.5)
    res = cell["result"]
    assert res["n_pruned"] == 4 and res["per_image_ce"] != dense["per_image_ce"]
    s, _ = vexp.scores("mpg")
    assert [tuple(p) for p in res["pruned"]] == select_heads(s, 0.5)
    recs = list(vexp.store.current("heads-vision"))
    assert sorted(r["config"]["method"] for r in recs) == ["dense", "mpg"] and all(vexp.owns(r["config"]) for r in recs)
    with pytest.raises(ReproError, match="image classifier"):
        VisionHeadExperiment("tiny-llama", Setup(), Store(None))
