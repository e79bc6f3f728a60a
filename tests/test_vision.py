"""The Fashion-MNIST ViT trained here: seeded training, atomic cache with its record, reload."""
import json

import pytest
import torch

from repro.assets.data import FASHION_MNIST_DIR
from repro.assets.vision import ViTRecipe, _augment, fashion_pixels, fashion_vit_folder, load_fashion_vit
from repro.errors import ReproError

needs_data = pytest.mark.skipif(not (FASHION_MNIST_DIR / "train-images-idx3-ubyte.gz").exists(),
                                reason="Debian dataset-fashion-mnist not installed (make setup installs it)")
TINY = ViTRecipe(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64, epochs=2,
                 batch_size=64, warmup_steps=5, train_limit=1536, test_limit=500)


def test_pixels_are_normalised_and_checked():
    x = fashion_pixels(torch.full((2, 28, 28), 255, dtype=torch.uint8))
    assert x.shape == (2, 1, 28, 28) and torch.allclose(x, torch.full_like(x, (1 - 0.2860) / 0.3530))
    with pytest.raises(ReproError, match="uint8"):
        fashion_pixels(torch.zeros(2, 28, 28))


def test_augment_shifts_or_flips_each_image_within_its_pixels():
    x = torch.arange(2 * 28 * 28, dtype=torch.float32).reshape(2, 1, 28, 28) + 1
    out = _augment(x, torch.Generator().manual_seed(0))
    assert out.shape == x.shape
    for a, b in zip(out, x):  # every value comes from the image itself or the padding (its minimum)
        assert set(a.unique().tolist()) <= set(b.unique().tolist()) | {float(x.min())}


@needs_data
def test_training_is_seeded_cached_and_reloads(tmp_path, monkeypatch):
    monkeypatch.setenv("REPRO_CACHE", str(tmp_path))
    folder = fashion_vit_folder(3, TINY, progress=False)
    record = json.loads((folder / "training.json").read_text())
    assert record["seed"] == 3 and record["recipe"]["train_limit"] == 1536 and "trained here" in record["note"]
    assert 0.2 < record["test_top1"] <= 1.0  # far above chance (0.1) after 48 steps on 1536 images
    assert fashion_vit_folder(3, TINY) == folder  # cached: not trained again
    model, identity = load_fashion_vit(3, recipe=TINY)
    assert identity["seed"] == 3 and identity["test_top1"] == record["test_top1"] and identity["weights_sha256"]
    again, _ = load_fashion_vit(3, recipe=TINY)
    px = fashion_pixels(torch.zeros(2, 28, 28, dtype=torch.uint8))
    assert torch.equal(model(pixel_values=px).logits, again(pixel_values=px).logits)
    # another seed trains another model
    other = fashion_vit_folder(4, TINY, progress=False)
    assert other != folder and json.loads((other / "training.json").read_text())["seed"] == 4


@needs_data
def test_training_gives_the_same_weights_whatever_thread_count_the_caller_runs(tmp_path, monkeypatch):
    """Records are keyed by the trained weights' sha256: training twice, once from a 2-thread and
    once from a 1-thread caller, must give the very same weights (fixed training threads,
    deterministic algorithms), and leave the caller's thread count as it was."""
    from repro.assets.files import folder_weights_sha256

    shas = []
    for n, cache in ((2, "a"), (1, "b")):
        monkeypatch.setenv("REPRO_CACHE", str(tmp_path / cache))
        torch.set_num_threads(n)
        try:
            folder = fashion_vit_folder(5, TINY, progress=False)
            assert torch.get_num_threads() == n
        finally:
            torch.set_num_threads(2)
        assert json.loads((folder / "training.json").read_text())["threads"] == 1
        shas.append(folder_weights_sha256(folder))
    assert shas[0] == shas[1]


def test_an_interrupted_folder_save_leaves_the_old_folder(tmp_path):
    from repro.assets.files import save_folder_atomically

    folder = tmp_path / "model"
    save_folder_atomically(folder, lambda tmp: (tmp / "w.txt").write_text("old"))

    def broken(tmp):
        (tmp / "w.txt").write_text("half")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        save_folder_atomically(folder, broken)
    assert (folder / "w.txt").read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["model"]
    save_folder_atomically(folder, lambda tmp: (tmp / "w.txt").write_text("new"))
    assert (folder / "w.txt").read_text() == "new"


def test_a_folder_saved_by_two_processes_at_once_keeps_the_first(tmp_path):
    """Two `repro run` workers converting the same GGUF at once: the loser must neither fail nor leave a temp."""
    from repro.assets.files import save_folder_atomically

    folder = tmp_path / "model"

    def raced(tmp):
        (tmp / "w.txt").write_text("second")
        save_folder_atomically(folder, lambda other: (other / "w.txt").write_text("first"))

    assert save_folder_atomically(folder, raced) == folder
    assert (folder / "w.txt").read_text() == "first" and [p.name for p in tmp_path.iterdir()] == ["model"]
