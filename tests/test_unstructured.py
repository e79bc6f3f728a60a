"""Unstructured / N:M pruning (Magnitude, Wanda, RIA, SparseGPT, OGAS) on the block-sequential
pipeline, on tiny random models of every causal family."""
import json
import math

import numpy as np
import pytest
import torch
import transformers as T
from hypothesis import given, settings
from hypothesis import strategies as st

from repro.arch import adapter
from repro.arch.base import is_conv1d
from repro.assets.tiny import TINY, build_tiny
from repro.calib import input_sumsq
from repro.calib.blocks import Gram, InputSumSq, OutputStats, capture, propagate, sequential
from repro.errors import ReproError, UnknownNameError
from repro.methods.unstructured import (
    OGAS,
    PRUNERS,
    Magnitude,
    SparseGPT,
    Wanda,
    channel_sparsity,
    get_pruner,
    lowest_n_of_m,
    parse_pattern,
    prune_model,
    row_counts,
)
from repro.structure.sparsity import out_in, prunable_linears, zeros_sha256

CAUSAL = [n for n, (_, _, task) in TINY.items() if task == "causal-lm"]
METHODS = ["magnitude", "wanda", "ria", "sparsegpt", "ogas", "ogas-mistral"]


def calib(n=4, seqlen=16, seed=0):
    return torch.randint(4, 260, (n, seqlen), generator=torch.Generator().manual_seed(seed))


def floor_(x: float) -> int:
    return math.floor(round(x, 9))


def expected_zeros(method: str, s: float, rows: int, cols: int) -> int:
    """Each method's documented count rule for one layer (no zeros before pruning)."""
    if method in ("magnitude", "ria"):
        return floor_(s * rows * cols)                       # one threshold per layer
    if method == "wanda":
        return rows * floor_(s * cols)                       # per row
    if method == "sparsegpt":                                # per block of 128 columns
        return sum(floor_(s * rows * min(128, cols - c)) for c in range(0, cols, 128))
    raise AssertionError(method)


def observed(pruner, module, x: torch.Tensor) -> list:
    """The pruner's observers for one standalone layer fed the inputs ``x`` [b, T, C_in]."""
    obs = pruner.observers("layer", module)
    with torch.no_grad():
        y = module(x)
    for ob in obs:
        ob.add(ob.measure(x, y, 0))
    return obs


# ---- adapters, patterns, bad input -----------------------------------------------------------

@pytest.mark.parametrize("name", CAUSAL)
def test_linears_are_every_linear_of_the_block(name):
    model = build_tiny(name)
    ad = adapter(model)
    for i in range(ad.n_layers):
        every = [n for n, m in ad.layers[i].named_modules() if isinstance(m, torch.nn.Linear) or is_conv1d(m)]
        assert list(ad.linears(i)) == every
    names = list(prunable_linears(model))
    assert len(names) == ad.n_layers * len(every)
    assert not any("embed" in n or "lm_head" in n or "wte" in n for n in names)


def test_patterns():
    assert str(parse_pattern("2:4")) == "2:4" and parse_pattern(" 4:8 ").m == 8
    assert parse_pattern("unstructured").unstructured
    for bad in ("5:4", "2:3.5", "0:4", "4:4", "2:", "a:b", "2:4:8", "-1:4", ""):
        with pytest.raises(ReproError) as e:
            parse_pattern(bad)
        assert "\n" not in str(e.value)


@pytest.mark.parametrize("kwargs", [
    dict(method="wanda", sparsity=1.0), dict(method="wanda", sparsity=-0.1), dict(method="wanda", sparsity=float("nan")),
    dict(method="wanda", sparsity="half"), dict(method="wanda", sparsity=None),
    dict(method="wanda", sparsity=0.6, pattern="2:4"), dict(method="wanda", sparsity=0.5, pattern="5:4"),
    dict(method="wanda", sparsity=None, pattern="3:7"),       # 64 input features are not groups of 7
    dict(method="ogas", sparsity=0.5, pattern="2:4"), dict(method="ogas", sparsity=0.5, s_max=0.5),
    dict(method="ogas", sparsity=0.5, lam=1.5), dict(method="ogas", sparsity=0.5, gamma="golden"),
    dict(method="ogas", sparsity=0.5, rounding="up"), dict(method="wanda", sparsity=0.5, z=3),
    dict(method="magnitude", sparsity=0.5, count="half"), dict(method="nope", sparsity=0.5),
])
def test_bad_input_raises_one_line_repro_error(kwargs):
    model = build_tiny("tiny-llama")
    with pytest.raises(ReproError) as e:
        prune_model(model, calib_ids=calib(), progress=False, **kwargs)
    assert "\n" not in str(e.value)


def test_bad_pattern_for_a_later_layer_fails_before_pruning():
    model = build_tiny("tiny-llama")  # 64 input features, but 96 for down_proj
    h = zeros_sha256(model)
    with pytest.raises(ReproError, match="down_proj: 96 input features"):
        prune_model(model, "wanda", None, calib(), pattern="32:64", progress=False)
    assert zeros_sha256(model) == h


def test_registry_and_calibration_requirement():
    assert set(METHODS) <= set(PRUNERS) and {"ogas-llama", "ogas-energy", "ogas-papr"} <= set(PRUNERS)
    with pytest.raises(UnknownNameError, match="unknown pruning method 'wandaa'"):
        get_pruner("wandaa")
    with pytest.raises(ReproError, match="calibration"):
        prune_model(build_tiny("tiny-llama"), "wanda", 0.5, None, progress=False)
    with pytest.raises(ReproError, match="seqlen"):
        prune_model(build_tiny("tiny-llama"), "wanda", 0.5, torch.zeros(8, dtype=torch.long), progress=False)
    assert get_pruner("ogas-mistral")(0.5).params["gamma"] == 0.2 and get_pruner("ogas-energy")(0.5).params["lam"] == 0


# ---- every method on every causal family: exact counts, nothing else touched -------------------

@pytest.mark.parametrize("name", CAUSAL)
@pytest.mark.parametrize("method", METHODS)
def test_exact_sparsity_and_only_block_linears_change(name, method):
    model = build_tiny(name)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    s = 0.37  # not a round fraction of any layer size: off-by-one counts show
    report = prune_model(model, method, s, None if method == "magnitude" else calib(), batch_size=3, progress=False)
    mods = prunable_linears(model)
    assert list(report.layers) == list(mods)
    weights = {n + ".weight" for n in mods}
    for k, v in model.state_dict().items():  # embeddings, LM head, norms, biases: untouched
        if k not in weights:
            assert torch.equal(v, before[k]), k
    total = 0
    for n, m in mods.items():
        w = out_in(m)
        zeros = (w == 0).sum(1).numpy()
        total += zeros.sum()
        if method.startswith("ogas"):  # paper rounding: row i loses floor(C_in * s_i)
            s_i = report.extras[n]["channel_sparsity"]
            np.testing.assert_array_equal(zeros, np.floor(w.shape[1] * s_i))
            assert abs(s_i.mean() - s) < 1e-9 and s_i.min() >= 0.01 and s_i.max() <= 0.6 + 1e-12
        else:
            assert zeros.sum() == expected_zeros(method, s, *w.shape), n
            if method == "wanda":
                assert (zeros == floor_(s * w.shape[1])).all()
    assert report.overall == pytest.approx(total / sum(m.weight.numel() for m in mods.values()))
    json.dumps(report.to_dict())


@pytest.mark.parametrize("method", ["magnitude", "ria", "sparsegpt"])
def test_reference_count_rule_removes_one_more(method):
    """count="reference" is the reference codes' ``score <= sorted[k]``: k + 1 per layer/block
    (Wanda's reference selects exactly k per row and has no such option)."""
    model = build_tiny("tiny-llama")
    prune_model(model, method, 0.37, calib(), count="reference", progress=False)
    for n, m in prunable_linears(model).items():
        w = out_in(m)
        assert (w == 0).sum() == expected_zeros(method, 0.37, *w.shape) + (1 if method != "sparsegpt" else
                                                                             math.ceil(w.shape[1] / 128)), n


def test_sparsity_zero_is_the_dense_model():
    model = build_tiny("tiny-llama")
    h = zeros_sha256(model)
    report = prune_model(model, "sparsegpt", 0.0, calib(), progress=False)
    assert report.overall == 0 and zeros_sha256(model) == h


def test_ogas_exact_rounding_hits_the_total():
    model = build_tiny("tiny-qwen2")
    prune_model(model, "ogas-mistral", 0.37, calib(), rounding="exact", progress=False)
    for n, m in prunable_linears(model).items():
        assert (m.weight == 0).sum() == math.floor(0.37 * m.weight.numel() + 0.5), n


# ---- N:M -------------------------------------------------------------------------------------

NM = st.sampled_from([(1, 2), (2, 4), (1, 4), (3, 4), (4, 8), (2, 8)])


@settings(max_examples=40, deadline=None)
@given(nm=NM, rows=st.integers(1, 6), groups=st.integers(1, 5), seed=st.integers(0, 2**16),
       zero_frac=st.sampled_from([0.0, 0.2, 0.6]))
def test_n_of_m_groups(nm, rows, groups, seed, zero_frac):
    n, m = nm
    g = torch.Generator().manual_seed(seed)
    w = torch.randn(rows, groups * m, generator=g)
    w[torch.rand(w.shape, generator=g) < zero_frac] = 0
    had = (w == 0).reshape(rows, groups, m).sum(-1)
    for method in ("magnitude", "wanda", "ria", "sparsegpt"):
        lin = torch.nn.Linear(groups * m, rows, bias=False)
        lin.weight.data = w.clone()
        p = get_pruner(method)(n / m, f"{n}:{m}")
        p.compress("layer", lin, observed(p, lin, torch.randn(2, 8, groups * m, generator=g)))
        zeros = (lin.weight == 0).reshape(rows, groups, m).sum(-1)
        assert (zeros >= n).all(), method
        if method != "sparsegpt":  # score 0 is lowest: old zeros are used first
            assert torch.equal(zeros, torch.maximum(had, torch.full_like(had, n))), method
        else:
            assert (zeros[had == 0] == n).all()
        assert torch.equal(lowest_n_of_m(w.abs(), n, m).reshape(rows, groups, m).sum(-1), torch.full_like(had, n))


# ---- the pipeline ----------------------------------------------------------------------------

def _gemma3_mixed():
    cfg = T.Gemma3TextConfig(vocab_size=260, hidden_size=64, num_hidden_layers=3, num_attention_heads=4,
                             intermediate_size=96, num_key_value_heads=1, head_dim=32, max_position_embeddings=512,
                             sliding_window=4, layer_types=["sliding_attention", "full_attention", "sliding_attention"])
    cfg._attn_implementation = "sdpa"
    torch.manual_seed(0)
    return T.Gemma3ForCausalLM(cfg).eval()


@pytest.mark.parametrize("name", CAUSAL + ["gemma3-mixed"])
def test_replay_reproduces_the_models_own_blocks(name):
    """capture + propagate through every block gives what the model computes: the per-block
    arguments (Gemma-3's sliding vs full masks and rotary tables) are the model's own."""
    model = _gemma3_mixed() if name == "gemma3-mixed" else build_tiny(name)
    layers = adapter(model).layers
    ids = calib(n=3, seqlen=12)
    seen = []
    h = layers[-1].register_forward_hook(lambda m, a, out: seen.append(out[0] if isinstance(out, tuple) else out))
    with torch.no_grad():
        model(input_ids=ids, use_cache=False)
    h.remove()
    batches = capture(model, ids, batch_size=2)
    assert [b.start for b in batches] == [0, 2]
    for i, block in enumerate(layers):
        propagate(block, i, batches)
    torch.testing.assert_close(torch.cat([b.hidden for b in batches]), seen[0], rtol=1e-5, atol=1e-5)
    assert all(type(l.forward).__name__ == "method" for l in layers)  # pass-throughs removed


class SpyWanda(Wanda):
    def __init__(self, *a, **k):
        super().__init__(*a, **k)
        self.seen = {}

    def compress(self, name, module, obs):
        self.seen[name] = obs[0].sumsq.clone()
        self.threads = torch.get_num_threads()
        return super().compress(name, module, obs)


def test_later_blocks_see_pruned_inputs():
    model, ids = build_tiny("tiny-llama"), calib(n=5, seqlen=16)
    dense = build_tiny("tiny-llama")
    spy, threads = SpyWanda(0.5), torch.get_num_threads()
    sequential(model, ids, spy, batch_size=2, progress=False)
    assert spy.threads == 1 and torch.get_num_threads() == threads  # compress runs single-threaded
    q = {i: f"model.layers.{i}.self_attn.q_proj" for i in range(3)}
    mods = dict(dense.named_modules())
    dense_stats = input_sumsq(dense, [mods[q[0]], mods[q[1]]], ids, progress=False)
    # block 0 sees the dense embeddings; block 1 sees block 0's *pruned* outputs
    close = dict(rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(spy.seen[q[0]], dense_stats[mods[q[0]]].sumsq, **close)
    assert not torch.allclose(spy.seen[q[1]], dense_stats[mods[q[1]]].sumsq, rtol=1e-3)
    # ... exactly what a model with only block 0 pruned feeds block 1
    dense.model.layers[0].load_state_dict(model.model.layers[0].state_dict())
    again = input_sumsq(dense, [mods[q[1]]], ids, progress=False)
    torch.testing.assert_close(spy.seen[q[1]], again[mods[q[1]]].sumsq, **close)


def test_observe_pass_skips_what_no_observer_needs():
    """An input-only method never runs the last linear (down_proj) of a block in its observe
    pass; the last block is not propagated."""
    model, calls = build_tiny("tiny-llama"), []
    for layer in model.model.layers:
        layer.mlp.down_proj.register_forward_hook(lambda *a: calls.append(1))
    prune_model(model, "wanda", 0.5, calib(n=4), batch_size=2, progress=False)
    assert len(calls) == 2 * 2  # propagate only: blocks 0 and 1, two batches each


def test_observers_share_and_limit():
    x = torch.randn(5, 7, 6)
    g, s, o = Gram(limit=3), InputSumSq(), OutputStats(limit=3)
    w = torch.randn(4, 6)
    for start in (0, 2, 4):  # batches of 2, 2, 1 windows
        xb = x[start:start + 2]
        yb = xb @ w.T
        for ob in (g, s, o):
            ob.add(ob.measure(xb, yb, start))
    x, w = x.double(), w.double()
    flat = x[:3].reshape(-1, 6)
    close = dict(rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(g.gram, flat.T @ flat, **close)
    assert g.n == 21 and s.n == 35
    torch.testing.assert_close(s.sumsq, x.reshape(-1, 6).square().sum(0), **close)
    y = x @ w.T
    torch.testing.assert_close(o.rms, y.square().mean((0, 1)).sqrt(), **close)
    per = y.square().mean(1).sqrt()
    torch.testing.assert_close(o.peak_ratio, (y.abs().amax(1) / (per + 1e-9)).mean(0), **close)
    assert o.subset_sumsq == pytest.approx(y[:3].square().sum().item(), rel=1e-5)


# ---- method definitions on one layer ---------------------------------------------------------

def _layer(rows=12, cols=16, seed=0):
    g = torch.Generator().manual_seed(seed)
    lin = torch.nn.Linear(cols, rows)
    lin.weight.data = torch.randn(rows, cols, generator=g)
    x = torch.randn(3, 10, cols, generator=g) * torch.linspace(0.1, 3, cols)
    return lin, x


def test_wanda_and_ria_scores():
    lin, x = _layer()
    w, norm = lin.weight.data.clone(), x.reshape(-1, 16).square().sum(0).sqrt()
    score = w.abs() * norm
    p = Wanda(0.25)
    p.compress("l", lin, observed(p, lin, x))
    keep = score.argsort(1)[:, 4:]  # the 4 lowest of each row go
    assert (lin.weight.gather(1, keep) != 0).all() and ((lin.weight == 0).sum(1) == 4).all()

    lin.weight.data = w.clone()
    a = w.abs()
    ria = (a / a.sum(0) + a / a.sum(1, keepdim=True)) * norm.sqrt()
    p = get_pruner("ria")(0.25)
    p.compress("l", lin, observed(p, lin, x))
    assert torch.equal(lin.weight == 0, ria <= ria.flatten().sort().values[47])  # 48 lowest of the layer
    lin.weight.data = w.clone()
    p = get_pruner("ria")(0.25, per_row=True)
    p.compress("l", lin, observed(p, lin, x))
    assert ((lin.weight == 0).sum(1) == 4).all()


def test_magnitude_is_one_threshold_per_layer():
    lin, _ = _layer()
    w = lin.weight.data.clone()
    Magnitude(0.5).compress("l", lin, [])
    assert torch.equal(lin.weight == 0, w.abs() <= w.abs().flatten().sort().values[95])


def test_sparsegpt_update_beats_masking_and_zeroes_dead_inputs():
    lin, x = _layer(rows=8, cols=160)  # two blocks of columns: 128 + 32
    x[..., 5] = 0
    w = lin.weight.data.clone()
    p = SparseGPT(0.5)
    p.compress("l", lin, observed(p, lin, x))
    mask = lin.weight == 0
    assert (mask[:, 5]).all()
    xf = x.reshape(-1, 160)
    err_obs = (xf @ (w - lin.weight.data).T).norm()
    err_mask = (xf @ (w * mask).T).norm()
    assert err_obs < 0.8 * err_mask
    assert not torch.equal(lin.weight.data[~mask], w[~mask])  # kept weights were updated


def test_ogas_allocation_and_error_by_gram():
    imp = np.linspace(0, 1, 50)
    s, alpha, at_bound = channel_sparsity(imp, 0.5, 0.5, 0.01, 0.6)
    assert s.mean() == pytest.approx(0.5, abs=1e-10) and not at_bound
    assert (np.diff(s) <= 1e-12).all() and s.min() >= 0.01 and s.max() <= 0.6
    s, _, at_bound = channel_sparsity(imp, 0.5, 0.7, 0.01, 0.6)  # infeasible with s_max 0.6
    assert at_bound and s.mean() < 0.7
    k = row_counts(np.full(7, 0.37), 30, "exact", 0.37)
    assert k.sum() == round(0.37 * 210) and k.max() - k.min() <= 1
    assert (row_counts(np.full(7, 0.37), 30, "paper", 0.37) == 11).all()

    lin, x = _layer(rows=24, cols=32)
    w = lin.weight.data.clone()
    p = OGAS(0.5, subset=2)
    obs = observed(p, lin, x)
    extras = p.compress("l", lin, obs)
    assert 0.05 <= extras["gamma"] <= 1.1 and extras["subset_windows"] == 2 and extras["gamma_evals"] >= 3
    sub = x[:2].reshape(-1, 32)
    direct = (sub @ (w - lin.weight.data).T).norm() / (sub @ w.T + lin.bias.data).norm()
    assert extras["rel_error"] == pytest.approx(direct.item(), rel=1e-4)
    assert len(OGAS(0.5, gamma=0.2).observers("l", lin)) == 2  # a fixed gamma needs no Gram


def test_zeros_sha256():
    model = build_tiny("tiny-gpt2")
    mods = prunable_linears(model)
    first = next(iter(mods.values()))
    assert is_conv1d(first)
    h0 = zeros_sha256(model)
    with torch.no_grad():
        first.weight[3, 5] = 0  # Conv1D [in, out]: input 3, output 5
    h1 = zeros_sha256(model)
    assert h1 != h0
    import hashlib
    ref = hashlib.sha256()
    for m in mods.values():
        ref.update(np.packbits((out_in(m) == 0).numpy().reshape(-1)).tobytes())
    assert ref.hexdigest() == h1
    assert out_in(first)[5, 3] == 0
    assert zeros_sha256(model.to(torch.bfloat16)) == h1


@settings(max_examples=60, deadline=None)
@given(rows=st.integers(1, 7), cols=st.integers(1, 12), levels=st.integers(1, 6), seed=st.integers(0, 2**16),
       frac=st.floats(0, 0.99))
def test_selection_equals_a_stable_sort_with_ties(rows, cols, levels, seed, frac):
    from repro.methods.unstructured import lowest_in_layer, lowest_per_row
    s = torch.randint(0, levels, (rows, cols), generator=torch.Generator().manual_seed(seed)).float()  # many ties
    k, kl = int(frac * cols), int(frac * rows * cols)
    first_k = torch.zeros(rows, cols, dtype=torch.bool).scatter_(1, s.argsort(dim=1, stable=True)[:, :k], True)
    assert torch.equal(lowest_per_row(s, k), first_k)
    flat = torch.zeros(rows * cols, dtype=torch.bool)
    flat[s.flatten().argsort(stable=True)[:kl]] = True
    assert torch.equal(lowest_in_layer(s, kl), flat.view(rows, cols))
    assert torch.equal(lowest_in_layer(s, kl, "reference"), s <= s.flatten().sort().values[kl])

