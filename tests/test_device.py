"""Device placement: load_model(device=...), input_device, sync, and the evaluators on a device.

Everything runs on CPU with tiny models; the real CUDA checks skip without a GPU."""
import numpy as np
import pytest
import torch

from repro.assets import load_model
from repro.assets.data import TextData
from repro.assets.devices import describe, input_device, model_devices, resolve_device, sync
from repro.calib import input_sumsq, loss_gradients
from repro.errors import ReproError
from repro.evaluate import perplexity
from repro.evaluate.ppl import window_nll
from repro.evaluate.speed import prefill_seconds

cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
CPU = torch.device("cpu")
ROWS = [f" = Title {i} = \n\n Some text about thing {i * 7 % 13} , and more . \n" for i in range(40)]


def data():
    return TextData("toy", "test", ROWS, "0" * 64, "test")


def wins(n=3, seqlen=32):
    g = torch.Generator().manual_seed(0)
    return torch.randint(4, 260, (n, seqlen), generator=g)


def test_default_and_cpu_load():
    default, cpu = load_model("tiny-llama"), load_model("tiny-llama", device="cpu")
    assert default.device == cpu.device == "cpu"
    assert input_device(cpu.model) == CPU
    assert default.identity == cpu.identity  # the device never enters result keys
    assert "device" not in cpu.identity


@pytest.mark.parametrize("device", [None, "cpu", "cpu:0", CPU])
def test_resolve_cpu(device):
    assert resolve_device(device) == CPU


def test_auto_without_cuda_is_cpu(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert resolve_device("auto") == CPU
    assert load_model("tiny-llama", device="auto").device == "cpu"


@pytest.mark.parametrize("device", ["cuda", "cuda:1"])
def test_cuda_without_cuda_is_a_clear_error(monkeypatch, device):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(ReproError, match=rf"^device '{device}' requested but no CUDA device is available$"):
        load_model("tiny-llama", device=device)


@pytest.mark.parametrize("device", ["gpu", "cuda:x", "", "CPU"])
def test_bogus_device(device):
    with pytest.raises(ReproError, match="unknown device"):
        load_model("tiny-llama", device=device)


def test_unsupported_device():
    with pytest.raises(ReproError, match="unsupported device 'meta'"):
        resolve_device("meta")


def test_sync_is_a_noop_on_cpu():
    assert sync("cpu") is None
    assert sync(CPU) is None


def test_evaluators_on_cpu_device():
    lm = load_model("tiny-llama", device="cpu")
    r = perplexity(lm.model, lm.tokenizer, data(), seqlen=32, max_windows=3, progress=False)
    assert np.isfinite(r.ppl) and r.n_windows == 3
    q = lm.model.model.layers[0].self_attn.q_proj
    stats = input_sumsq(lm.model, [q], wins(), batch_size=2, progress=False)
    assert stats[q].n == 3 * 32 and stats[q].sumsq.shape == (64,)
    loss_gradients(lm.model, wins(2), progress=False)
    assert q.weight.grad is not None and q.weight.grad.abs().sum() > 0
    t = prefill_seconds({"dense": lm.model}, batch=1, seqlen=16, repeats=2, warmup=1)
    assert set(t["dense"]) == {"median_s", "times_s", "batch", "seqlen", "threads"}
    assert len(t["dense"]["times_s"]) == 2


@pytest.mark.parametrize("name", ["tiny-llama", "tiny-qwen2"])  # tied and untied head
def test_offloaded_weights_take_inputs_on_the_execution_device(name):
    """accelerate's offload leaves weights on "meta" (as device_map="auto" does for layers that
    do not fit): input_device is the hook's execution device, and the NLL equals the plain
    model's (the fused head path steps aside for an offloaded head)."""
    from accelerate import cpu_offload

    w = wins()
    plain = load_model(name).model
    expected = window_nll(plain, w, progress=False)
    offloaded = cpu_offload(load_model(name).model, execution_device=CPU)
    assert offloaded.get_input_embeddings().weight.device.type == "meta"
    assert input_device(offloaded) == CPU
    assert model_devices(offloaded) == {CPU}
    np.testing.assert_allclose(window_nll(offloaded, w, progress=False), expected, rtol=1e-5)


def test_describe():
    m = load_model("tiny-llama").model
    assert describe(m) == "cpu"


@cuda
def test_cuda_load_and_ppl_match_cpu():
    cpu, gpu = load_model("tiny-llama"), load_model("tiny-llama", device="cuda")
    assert gpu.device.startswith("cuda:") and input_device(gpu.model).type == "cuda"
    assert gpu.identity == cpu.identity
    a = perplexity(cpu.model, cpu.tokenizer, data(), seqlen=64, max_windows=4, progress=False)
    b = perplexity(gpu.model, gpu.tokenizer, data(), seqlen=64, max_windows=4, progress=False)
    assert b.ppl == pytest.approx(a.ppl, rel=1e-3)
    stats = input_sumsq(gpu.model, [gpu.model.lm_head], wins(), progress=False)
    assert stats[gpu.model.lm_head].sumsq.device == input_device(gpu.model)
    t = prefill_seconds({"dense": gpu.model}, batch=1, seqlen=32, repeats=2)
    assert len(t["dense"]["times_s"]) == 2
    sync(gpu.device)


@cuda
def test_cuda_index_beyond_count():
    n = torch.cuda.device_count()
    with pytest.raises(ReproError, match=f"only {n} CUDA device"):
        resolve_device(f"cuda:{n}")


@cuda
def test_auto_on_tiny_is_first_cuda_device():
    assert load_model("tiny-llama", device="auto").device == f"cuda:{torch.cuda.current_device()}"
