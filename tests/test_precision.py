"""bfloat16 products through float32 on a CPU without fast bf16 (repro.assets.precision): the same arithmetic
as a bf16 kernel (bf16 operands, float32 sums, one rounding to bf16), only the order of the sums may differ;
used around a record's computation, never around a timing cell's."""
import pytest
import torch
import torch.nn.functional as F

from repro.assets import models, precision
from repro.assets.precision import Float32Products, bf16_products
from repro.assets.tiny import build_tiny
from repro.store import Store


def bf16(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed)).to(torch.bfloat16)


def test_a_bf16_linear_is_the_float32_product_of_its_operands_rounded_once():
    x, w = bf16(4, 64), bf16(32, 64, seed=1)
    with Float32Products() as mode:
        y = F.linear(x, w)
    assert y.dtype == torch.bfloat16 and mode.calls == 1
    assert torch.equal(y, (x.float() @ w.float().T).to(torch.bfloat16))  # not x @ w in bf16 step by step


def test_it_agrees_with_torchs_own_bf16_kernel_to_the_order_of_the_sums():
    """Against torch's bf16 kernel: the same rounding of the same float32 sums, up to a bf16 rounding step
    where the summation order moves a sum across a rounding boundary."""
    x, w = bf16(8, 256), bf16(64, 256, seed=2)
    native = F.linear(x, w).float()
    with Float32Products():
        ours = F.linear(x, w).float()
    exact = (x.double() @ w.double().T)
    ulp = exact.abs().clamp_min(1e-3) * 2 ** -7
    assert ((ours - native).abs() <= ulp).all()
    assert (ours == native).float().mean() > 0.9


@pytest.mark.parametrize("call", [lambda a, b: a @ b, torch.matmul, torch.mm, lambda a, b: a.matmul(b)])
def test_every_product_form_is_computed_and_others_are_left_alone(call):
    a, b = bf16(5, 16), bf16(16, 3, seed=3)
    with Float32Products() as mode:
        y = call(a, b)
        z = call(a.float(), b.float())  # float32 operands: untouched
        s = a + a  # not a product: torch's own bf16 kernel
    assert mode.calls == 1 and y.dtype == torch.bfloat16 and z.dtype == torch.float32 and s.dtype == torch.bfloat16
    assert torch.equal(y, (a.float() @ b.float()).to(torch.bfloat16))


def test_a_bf16_model_runs_through_it_and_stays_close_to_its_float32_self():
    model = build_tiny("tiny-llama").eval()
    ids = torch.randint(0, 200, (2, 24), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        ref = model(ids).logits
        m = model.to(torch.bfloat16)
        native = m(ids).logits.float()
        with Float32Products() as mode:
            ours = m(ids).logits.float()
    assert mode.calls >= 4 * model.config.num_hidden_layers  # q, k, v, o at least, in every layer
    assert (ours - ref).abs().max() < 3 * (native - ref).abs().max() + 1e-2  # bf16's own error, not a new one


def test_where_it_applies(monkeypatch):
    monkeypatch.setattr(models, "fast_bf16", lambda device=None: False)
    monkeypatch.delenv(precision.ENV, raising=False)
    assert precision.wanted()
    with bf16_products() as mode:
        assert isinstance(mode, Float32Products)
    with bf16_products(enable=False) as mode:
        assert mode is None
    monkeypatch.setenv(precision.ENV, "native")
    assert not precision.wanted()
    monkeypatch.setattr(models, "fast_bf16", lambda device=None: True)
    monkeypatch.delenv(precision.ENV)
    assert not precision.wanted()


@pytest.mark.parametrize("folder, said", [("prune-ppl", True), ("heads-efficiency", False)])
def test_a_record_says_its_bf16_products_went_through_float32_and_a_timing_never_does(tmp_path, monkeypatch,
                                                                                     folder, said):
    monkeypatch.setattr(models, "fast_bf16", lambda device=None: False)
    monkeypatch.delenv(precision.ENV, raising=False)
    x, w = bf16(2, 8), bf16(4, 8, seed=1)
    seen = []

    def compute():
        seen.append(torch.overrides._get_current_function_mode_stack())
        return {"y": F.linear(x, w).float().tolist()}

    r = Store(tmp_path).run(folder, {"cell": 1}, compute)
    assert ("bf16_products" in r["machine"]) is said
    assert bool(seen[0]) is said  # a timing measures torch's own kernels
    r32 = Store(tmp_path / "f32").run(folder, {"cell": 2}, lambda: {"y": F.linear(x.float(), w.float()).tolist()})
    assert "bf16_products" not in r32["machine"]  # nothing in bf16: nothing to say
