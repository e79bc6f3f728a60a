"""Imagenette scored by an ImageNet classifier (repro.assets.imagenette, repro.engines.images): the folder's
layout checks, the evenly spread evaluation sample, the ten-logit restriction, and a whole search on a tiny
1000-label ViT saved with its own image processor, on tools/simulated_data.py's random images."""
from __future__ import annotations

import pytest
import torch

from repro.assets import imagenette
from repro.assets.models import load_model
from repro.engines.base import Setup
from repro.engines.images import parse_images
from repro.errors import ReproError
from repro.evaluate.vision import classify
from repro.store import Store

from conftest import load_tool

sim = load_tool("simulated_data")


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return sim.write_imagenette(tmp_path_factory.mktemp("data"), train=4, val=3, size=40)


@pytest.fixture(scope="module")
def classifier(tmp_path_factory):
    """A tiny ViT with ImageNet's 1000 labels and a DeiT-style processor (resize 40, crop 32), saved as a folder."""
    from transformers import DeiTImageProcessor, ViTConfig, ViTForImageClassification

    out = tmp_path_factory.mktemp("vit1000")
    torch.manual_seed(0)
    config = ViTConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
                       image_size=32, patch_size=8, num_channels=3, num_labels=1000)
    ViTForImageClassification(config).save_pretrained(out)
    DeiTImageProcessor(size={"height": 40, "width": 40}, crop_size={"height": 32, "width": 32}).save_pretrained(out)
    return out


def test_the_synsets_are_imagenettes_in_imagenet_order():
    # written out from the ImageNet-1k class list, not read from the module under test
    assert dict(zip(imagenette.SYNSETS, imagenette.IMAGENET_INDEX)) == {
        "n01440764": 0, "n02102040": 217, "n02979186": 482, "n03000684": 491, "n03028079": 497,
        "n03394916": 566, "n03417042": 569, "n03425413": 571, "n03445777": 574, "n03888605": 701}
    assert list(sim.SYNSETS) == list(imagenette.SYNSETS)


def test_folder_checks_say_what_is_missing(tmp_path, monkeypatch, folder):
    monkeypatch.delenv(imagenette.ENV, raising=False)
    with pytest.raises(ReproError, match="REPRO_IMAGENETTE"):
        imagenette.imagenette_root()
    with pytest.raises(ReproError, match="missing train/n01440764"):
        imagenette.imagenette_root(tmp_path)
    monkeypatch.setenv(imagenette.ENV, str(folder))
    assert imagenette.imagenette_root() == folder
    with pytest.raises(ReproError, match="unknown image set"):
        parse_images("imagenet:/x")
    assert parse_images("imagenette:/some/where") == ("imagenette", "/some/where")


def test_the_evaluation_sample_spans_every_class(folder):
    paths, labels = imagenette.files(folder, "val")
    assert len(paths) == 30 and labels == tuple(sorted(labels))
    picked = [labels[i] for i in imagenette.spread(10, len(labels))]
    assert picked == list(range(10))  # one per class; the first ten files would all be class 0
    assert imagenette.spread(50, 30) == list(range(30))
    assert imagenette.files_digest(folder, "val") != imagenette.files_digest(folder, "train")


def test_restricted_logits_score_the_ten_classes():
    class Fixed(torch.nn.Module):
        """Logits that put ImageNet index 217 (English springer, Imagenette class 1) first, then 3 (not Imagenette)."""
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.zeros(1))

        def forward(self, pixel_values):
            logits = torch.zeros(len(pixel_values), 1000)
            logits[:, 3], logits[:, 217] = 9.0, 5.0
            return type("Out", (), {"logits": logits})()

    out = classify(Fixed(), torch.zeros(2, 3, 4, 4), torch.tensor([1, 0]), classes=list(imagenette.IMAGENET_INDEX))
    assert out["per_image_correct"] == [1, 0]
    full = classify(Fixed(), torch.zeros(2, 3, 4, 4), torch.tensor([217, 0]))
    assert full["per_image_correct"] == [0, 0]  # over all 1000 logits index 3 wins


def test_hub_style_classifier_loads_with_its_processor(classifier):
    loaded = load_model(str(classifier))
    assert loaded.task == "image-classification" and loaded.identity["num_labels"] == 1000
    assert loaded.identity["pixels"]["processor"].startswith("DeiTImageProcessor")  # ...Pil without torchvision


def test_a_search_on_imagenette(tmp_path, folder, classifier):
    from repro.engines.bandit import VisionBanditExperiment

    e = VisionBanditExperiment(str(classifier), Setup(), Store(tmp_path), n_calib=8, calib_batch_size=4,
                               n_eval=20, progress=False, images=f"imagenette:{folder}")
    pixels, labels = e.images.draw(8, seed=1)
    assert pixels.shape == (8, 3, 32, 32)  # the model's own processor: resized to 40, cropped to 32
    assert set(labels.tolist()) <= set(imagenette.IMAGENET_INDEX)  # calibration reads the 1000-way loss
    test_pixels, test_labels = e.images.test()
    assert sorted(set(test_labels.tolist())) == list(range(10)) and len(test_labels) == 20
    dense = e.dense()["result"]
    assert dense["n_eval"] == 20 and len(dense["per_image_ce"]) == 20
    assert e.eval_config()["data"].startswith("imagenette:val:")
    cell = e.cell("greedy", ["head"], 0.25, seed=1, params={"budget": 2, "pool_size": 3})["result"]
    assert len(cell["per_image_correct"]) == 20
    with pytest.raises(ReproError, match="ImageNet classifier"):
        VisionBanditExperiment("tiny-vit", Setup(), Store(None), n_calib=8, calib_batch_size=4,
                               images=f"imagenette:{folder}")


def test_c4_reads_a_local_copy_of_the_shards(tmp_path, monkeypatch):
    from repro.assets.data import C4_ENV, load_text

    root = sim.write_c4(tmp_path, documents=5, words=10)
    monkeypatch.setenv(C4_ENV, str(root))
    data = load_text("c4:validation")
    assert len(data.rows) == 5 and data.source.startswith("local:") and data.rows[0].endswith(".")
    assert load_text("c4:train").rows != data.rows  # each shard its own documents
    monkeypatch.setenv(C4_ENV, str(tmp_path / "elsewhere"))
    with pytest.raises(ReproError, match="allenai/c4 shard layout"):
        load_text("c4:validation")
