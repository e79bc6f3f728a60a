"""Head scorers against hand-worked numbers; selection counts, ties and bad input."""
import math

import numpy as np
import pytest
import torch
import transformers as T
from hypothesis import given, settings
from hypothesis import strategies as st

from repro.errors import ReproError, UnknownNameError
from repro.methods.heads import HEAD_METHODS, excess, n_to_prune, score_heads, select_heads

from helpers import build_tiny


def hand_model():
    """1 layer, hidden 4, 2 query heads sharing 1 KV head (g = 2), head_dim 2, weights set by hand."""
    cfg = T.LlamaConfig(vocab_size=16, hidden_size=4, intermediate_size=4, num_hidden_layers=1,
                        num_attention_heads=2, num_key_value_heads=1, head_dim=2)
    m = T.LlamaForCausalLM(cfg)
    a = m.model.layers[0].self_attn
    e = torch.eye(4)
    with torch.no_grad():
        a.q_proj.weight.copy_(torch.stack([1 * e[0], 1 * e[1], 1 * e[2], 5 * e[3]]))   # row norms 1,1,1,5
        a.k_proj.weight.copy_(torch.stack([2 * e[0], 4 * e[1]]))                       # 2,4
        a.v_proj.weight.copy_(torch.stack([3 * e[0], 3 * e[1]]))                       # 3,3
        a.o_proj.weight.copy_(torch.stack([1 * e[0], 2 * e[1], 3 * e[2], 6 * e[3]]).T)  # column norms 1,2,3,6
    return m


def test_excess_by_hand():
    r = torch.tensor([1.0, 2, 3, 4, 10])  # mu 4, population sigma sqrt(10)
    exc = excess(r, z=1.0)
    assert torch.allclose(exc, torch.tensor([0, 0, 0, 0, 10 - 4 - math.sqrt(10)], dtype=exc.dtype))
    assert excess(torch.tensor([3.0, 3.0]), 2.0).sum() == 0


def test_mp_and_mpg_by_hand():
    m = hand_model()
    # z = 0: threshold = mean. Q: mu 2 -> exc [0,0,0,3] -> head0 0, head1 3.
    # K: mu 3 -> exc [0,1] -> kv0 1.  V: mu 3 -> 0.  O cols: mu 3 -> exc [0,0,0,3] -> head0 0, head1 3.
    mp = score_heads("mp", m, z=0.0)
    mpg = score_heads("mpg", m, z=0.0)
    np.testing.assert_allclose(mp, [[0 + 0 + 1, 3 + 3 + 1]])
    np.testing.assert_allclose(mpg, [[0 + 0 + 1 / 2, 3 + 3 + 1 / 2]])
    # z = 1: Q sigma sqrt(3): thr 2+sqrt(3) -> head1 5-2-sqrt(3); K sigma 1: thr 4 -> 0;
    # O sigma sqrt(3.5): thr 3+sqrt(3.5) -> head1 6-3-sqrt(3.5)
    np.testing.assert_allclose(score_heads("mpg", m, z=1.0),
                               [[0.0, (3 - math.sqrt(3)) + (3 - math.sqrt(3.5))]], rtol=1e-6)
    # magnitude-head: plain norm sums, KV counted in full
    np.testing.assert_allclose(score_heads("magnitude-head", m), [[1 + 1 + 1 + 2 + 2 + 4 + 3 + 3,
                                                                   1 + 5 + 3 + 6 + 2 + 4 + 3 + 3]])


def test_mpg_reduces_to_mp_without_gqa():
    m = build_tiny("tiny-gpt2")
    np.testing.assert_allclose(score_heads("mpg", m), score_heads("mp", m))
    g = build_tiny("tiny-llama")
    assert not np.allclose(score_heads("mpg", g, z=0.0), score_heads("mp", g, z=0.0))


def test_wanda_head_by_hand():
    """With all-ones inputs norms, Wanda-Head is sum |W| over the head's rows/columns times ||X||."""
    m = hand_model()
    calib = torch.randint(0, 16, (2, 8))
    s = score_heads("wanda-head", m, calib)
    # independent: capture the inputs of q_proj and o_proj ourselves
    a = m.model.layers[0].self_attn
    seen = {}
    hooks = [mod.register_forward_pre_hook(lambda mod, args, n=n: seen.setdefault(n, []).append(args[0]))
             for n, mod in (("in", a.q_proj), ("o", a.o_proj))]
    with torch.no_grad():
        for w in calib:
            m(input_ids=w[None])
    for h in hooks:
        h.remove()
    xin = torch.cat(seen["in"]).reshape(-1, 4).double().norm(dim=0)
    xo = torch.cat(seen["o"]).reshape(-1, 4).double().norm(dim=0)
    Wq, Wk, Wv, Wo = (p.detach().double().abs() for p in (a.q_proj.weight, a.k_proj.weight, a.v_proj.weight,
                                                             a.o_proj.weight))
    kv = (Wk @ xin).sum() + (Wv @ xin).sum()
    expect = [(Wq[2 * h:2 * h + 2] @ xin).sum() + (Wo[:, 2 * h:2 * h + 2].sum(0) * xo[2 * h:2 * h + 2]).sum() + kv
              for h in range(2)]
    np.testing.assert_allclose(s[0], torch.stack(expect).numpy(), rtol=1e-6)


# ---- independent per-head sums on a random GQA model (tiny-llama: 3 layers, 4 query heads,
# 2 KV heads, so g = 2 and heads {0,1} share KV head 0, {2,3} KV head 1; head_dim 16) -------------

def attn_weights(m, layer):
    """(Wq [H*hd, d], Wk [Hkv*hd, d], Wv, Wo [d, H*hd]) as float64, read from the modules."""
    a = m.model.layers[layer].self_attn
    return tuple(p.weight.detach().double() for p in (a.q_proj, a.k_proj, a.v_proj, a.o_proj))


def per_head(m, fq, fk, fv, fo):
    """[L, H] head scores from per-feature values: fq/fk/fv(layer, W) give one value per row of
    W_Q/W_K/W_V, fo(layer, Wo) one per column of W_O; a head adds its own Q and O features and
    its KV group's K and V features in full."""
    c = m.config
    H, Hkv, hd = c.num_attention_heads, c.num_key_value_heads, c.hidden_size // c.num_attention_heads
    g = H // Hkv
    out = np.zeros((c.num_hidden_layers, H))
    for layer in range(c.num_hidden_layers):
        Wq, Wk, Wv, Wo = attn_weights(m, layer)
        q, k, v, o = fq(layer, Wq), fk(layer, Wk), fv(layer, Wv), fo(layer, Wo)
        for h in range(H):
            j = h // g
            blk, kvb = slice(h * hd, (h + 1) * hd), slice(j * hd, (j + 1) * hd)
            out[layer, h] = float(q[blk].sum() + o[blk].sum() + k[kvb].sum() + v[kvb].sum())
    return out


def captured_inputs(m, calib):
    """Inputs of every layer's q_proj (= k/v input) and o_proj over all calibration tokens:
    {layer: (X_in [n, d], X_o [n, H*hd])}, n = windows * tokens."""
    seen = {}
    hooks = []
    for layer, blk in enumerate(m.model.layers):
        for name, mod in (("in", blk.self_attn.q_proj), ("o", blk.self_attn.o_proj)):
            hooks.append(mod.register_forward_pre_hook(
                lambda mod, args, key=(layer, name): seen.setdefault(key, []).append(args[0].detach())))
    with torch.no_grad():
        m(input_ids=calib)
    for h in hooks:
        h.remove()
    return {layer: tuple(torch.cat(seen[(layer, n)]).reshape(-1, seen[(layer, n)][0].shape[-1]).double()
                         for n in ("in", "o")) for layer in range(len(m.model.layers))}


def calib_windows(n=3, t=12, seed=0):
    return torch.randint(4, 260, (n, t), generator=torch.Generator().manual_seed(seed))


def test_sparsegpt_head_by_hand():
    """SparseGPT-Head: sum over the head's weights of w_ij^2 * H_jj, H = (2/n) X^T X with X the
    projection's input over all n calibration tokens; the KV group counted in full per head."""
    m = build_tiny("tiny-llama")
    calib = calib_windows()
    X = captured_inputs(m, calib)
    n = calib.numel()
    assert all(x.shape[0] == n for pair in X.values() for x in pair)
    hin = {layer: 2.0 / n * (xi.T @ xi).diagonal() for layer, (xi, _) in X.items()}
    ho = {layer: 2.0 / n * (xo.T @ xo).diagonal() for layer, (_, xo) in X.items()}
    row = lambda layer, W: W.pow(2) @ hin[layer]  # noqa: E731  (rows of Q/K/V: sum_j w_ij^2 H_jj)
    expect = per_head(m, row, row, row, lambda layer, Wo: (Wo.pow(2) * ho[layer][None, :]).sum(0))
    got = score_heads("sparsegpt-head", m, calib)
    np.testing.assert_allclose(got, expect, rtol=1e-6)
    # sensitivity: H must be the input second moment, not plain |W|^2 (scores would differ)
    sq = lambda layer, W: W.pow(2).sum(1)  # noqa: E731
    plain = per_head(m, sq, sq, sq, lambda layer, Wo: Wo.pow(2).sum(0))
    assert not np.allclose(got / got.sum(), plain / plain.sum(), rtol=1e-3)


def test_gradient_head_by_hand():
    """Gradient-Head: sum |w_ij * g_ij| over the head's weights (KV group in full), g the gradient
    of the *mean* LM loss over the calibration windows.

    Accumulation choice (repro.calib.loss_gradients + repro.methods.heads.gradient_head): each
    window's loss (HF's mean over its T-1 predicted tokens) is scaled by 1/N and back-propagated,
    so ``param.grad`` holds the gradient of the mean over windows (= the mean over all tokens,
    windows having equal length); the absolute value is taken once, *after* accumulating over
    windows, i.e. |sum_windows w*g_w| and not sum_windows |w*g_w|. Here g comes from one
    autograd call on the whole batch's mean loss, and the test checks that the other choice
    (absolute value per window) would give different scores."""
    m = build_tiny("tiny-llama")
    calib = calib_windows()
    got = score_heads("gradient-head", m, calib)
    assert all(p.grad is None for p in m.parameters()), "gradients must not leak"

    attn = [m.model.layers[i].self_attn for i in range(len(m.model.layers))]
    params = [p.weight for a in attn for p in (a.q_proj, a.k_proj, a.v_proj, a.o_proj)]

    def grads(ids):
        with torch.enable_grad():
            loss = m(input_ids=ids, labels=ids).loss
            return [g.double() for g in torch.autograd.grad(loss, params)]

    def expect_from(G):  # G[layer] = (gq, gk, gv, go), each shaped like its weight
        return per_head(m, lambda i, W: (W * G[i][0]).abs().sum(1), lambda i, W: (W * G[i][1]).abs().sum(1),
                        lambda i, W: (W * G[i][2]).abs().sum(1), lambda i, W: (W * G[i][3]).abs().sum(0))

    g = grads(calib)
    G = {i: g[4 * i:4 * i + 4] for i in range(len(attn))}
    expect = expect_from(G)
    np.testing.assert_allclose(got, expect, rtol=1e-4)
    assert all(p.grad is None for p in m.parameters())
    # the other accumulation (|w*g| per window, then summed, /N) gives clearly different scores
    per_window = sum(expect_from({i: gw[4 * i:4 * i + 4] for i in range(len(attn))})
                     for gw in (grads(w[None]) for w in calib)) / len(calib)
    assert np.abs(per_window - expect).max() > 1e-2 * np.abs(expect).max()
    # and a sum (instead of a mean) over windows would scale every score by N = 3
    assert not np.allclose(got, 3 * expect, rtol=1e-2)


def test_hybrid_by_hand():
    """Hybrid = minmax(Magnitude-Head) + minmax(MP with z) + minmax(Wanda-Head), each min-max
    normalised over all L*H heads at once (not per layer), all computed here from the weights."""
    m = build_tiny("tiny-llama")
    calib = calib_windows()
    z = 0.5  # low enough that some features exceed the threshold, so MP is not all zero
    X = captured_inputs(m, calib)
    nin = {layer: xi.norm(dim=0) for layer, (xi, _) in X.items()}
    no = {layer: xo.norm(dim=0) for layer, (_, xo) in X.items()}

    def exc(r):
        return torch.clamp(r - (r.mean() + z * r.std(unbiased=False)), min=0)

    rows, cols = (lambda layer, W: W.norm(dim=1)), (lambda layer, Wo: Wo.norm(dim=0))
    magnitude = per_head(m, rows, rows, rows, cols)
    mp_rows = lambda layer, W: exc(W.norm(dim=1))  # noqa: E731
    mp = per_head(m, mp_rows, mp_rows, mp_rows, lambda layer, Wo: exc(Wo.norm(dim=0)))
    w_rows = lambda layer, W: W.abs() @ nin[layer]  # noqa: E731
    wanda = per_head(m, w_rows, w_rows, w_rows, lambda layer, Wo: Wo.abs().sum(0) * no[layer])
    for part in (magnitude, mp, wanda):
        assert part.max() > part.min(), "every part must contribute"

    def mm(x):
        return (x - x.min()) / (x.max() - x.min())

    expect = mm(magnitude) + mm(mp) + mm(wanda)
    got = score_heads("hybrid", m, calib, z=z)
    np.testing.assert_allclose(got, expect, rtol=1e-6, atol=1e-9)
    assert got.min() >= 0 and got.max() <= 3
    per_layer = sum(np.stack([mm(r) for r in part]) for part in (magnitude, mp, wanda))
    assert not np.allclose(got, per_layer, atol=1e-3), "normalisation is global, not per layer"
    # z reaches MP: the default z = 2 gives other scores
    assert not np.allclose(score_heads("hybrid", m, calib), got, atol=1e-3)


@pytest.mark.parametrize("method", sorted(HEAD_METHODS))
def test_every_method_scores_every_head(method):
    m = build_tiny("tiny-llama")
    calib = torch.randint(4, 260, (2, 16))
    s = score_heads(method, m, calib if HEAD_METHODS[method].calibration else None)
    assert s.shape == (3, 4) and np.isfinite(s).all()
    assert all(p.grad is None for p in m.parameters()), "gradients must not leak"


def test_calibration_methods_need_data():
    with pytest.raises(ReproError, match="calibration"):
        score_heads("wanda-head", build_tiny("tiny-llama"))
    with pytest.raises(ReproError, match="empty"):
        score_heads("wanda-head", build_tiny("tiny-llama"), torch.zeros(0, 8, dtype=torch.long))


@settings(max_examples=200, deadline=None)
@given(L=st.integers(1, 8), H=st.integers(1, 8), data=st.data(), seed=st.integers(0, 5),
       tie=st.sampled_from(["index", "random"]))
def test_select_heads_exact_count_and_lowest(L, H, data, seed, tie):
    """The count is drawn first: s = (k + f) / (L*H) with 0 <= f < 1 - 1e-6 must prune exactly k
    heads (f = 0 is the float-representation case, e.g. 0.29 * 100 = 28.99..., f close to 1
    must not round up)."""
    n = L * H
    k = data.draw(st.integers(0, n - 1), label="k")
    f = data.draw(st.one_of(st.just(0.0), st.floats(0, 1 - 1e-6)), label="f")
    s = (k + f) / n
    rng = np.random.default_rng(seed)
    scores = rng.integers(0, 3, size=(L, H)).astype(float)  # many ties
    pruned = select_heads(scores, s, tie, seed)
    assert len(pruned) == k
    assert n_to_prune(s, n) == k
    assert len(set(pruned)) == len(pruned)
    assert all(0 <= l < L and 0 <= h < H for l, h in pruned)
    if 0 < k < n:
        worst_kept = min(scores[l, h] for l in range(L) for h in range(H) if (l, h) not in set(pruned))
        assert max(scores[l, h] for l, h in pruned) <= worst_kept


@pytest.mark.parametrize("shape, s, k", [((3, 3), 1 / 3, 3), ((10, 10), 0.29, 29), ((10, 10), 0.2999999, 29),
                                         ((2, 5), 0.7, 7), ((30, 9), 0.125, 33), ((4, 4), 0.0, 0),
                                         ((4, 4), 0.999, 15), ((1, 7), 3 / 7, 3), ((1, 7), 3 / 7 - 1e-9, 2)])
def test_select_heads_count_by_hand(shape, s, k):
    assert len(select_heads(np.arange(np.prod(shape), dtype=float).reshape(shape), s)) == k


def test_index_tie_break_is_score_layer_head():
    scores = np.array([[0.0, 1.0, 0.0], [0.0, 0.0, 2.0]])
    assert select_heads(scores, 0.5) == [(0, 0), (0, 2), (1, 0)]
    a = select_heads(scores, 0.5, "random", seed=1)
    assert sorted(a) != [] and all(scores[l, h] == 0 for l, h in a)


def test_count_is_floor():
    assert n_to_prune(0.125, 270) == 33
    assert n_to_prune(0.29, 100) == 29  # 0.29 * 100 = 28.999999999999996 in floats
    assert n_to_prune(0.0, 10) == 0


@pytest.mark.parametrize("bad", [1.0, -0.1, float("nan"), "x", 2])
def test_bad_sparsity(bad):
    with pytest.raises(ReproError, match="sparsity"):
        select_heads(np.zeros((2, 2)), bad)


def test_unknown_method():
    with pytest.raises(UnknownNameError, match="unknown head method 'nope'"):
        score_heads("nope", build_tiny("tiny-llama"))


def test_gradients_only_for_computes_those_gradients_alone_and_the_same_bits(monkeypatch):
    """What backward leaves inside the block: the named weights' gradients, equal bit for bit to
    those of a backward over every parameter, and no other parameter's (the tied embedding's
    included); outside it every parameter is trainable again. Gradient-Head's scores are the
    same bits as with every gradient computed."""
    from repro.calib import gradients_only_for, loss_gradients

    m = build_tiny("tiny-llama")
    ids = calib_windows()
    q = m.model.layers[1].self_attn.q_proj.weight
    loss_gradients(m, ids, progress=False)
    full = q.grad.clone()
    loss_gradients(m, ids, progress=False, only=[q])
    assert torch.equal(q.grad, full)
    assert [n for n, p in m.named_parameters() if p.grad is not None] == ["model.layers.1.self_attn.q_proj.weight"]
    assert all(p.requires_grad for p in m.parameters())
    with gradients_only_for(m, [q]):
        assert [p for p in m.parameters() if p.requires_grad] == [q]
    m.zero_grad(set_to_none=True)

    fast = score_heads("gradient-head", m, ids)
    monkeypatch.setattr("repro.calib.gradients_only_for", lambda model, params: gradients_only_for(model, model.parameters()))
    assert np.array_equal(score_heads("gradient-head", m, ids), fast)


def test_layer_normalised_ranking_stops_a_small_scale_layer_from_being_emptied():
    from repro.methods.heads import layer_normalised

    rng = np.random.default_rng(0)
    scores = rng.uniform(1, 2, (4, 4))
    scores[2] *= 0.01  # one layer's scores on a hundredfold smaller scale
    assert {l for l, _ in select_heads(scores, 0.25)} == {2}  # ranked globally: layer 2 emptied
    picked = select_heads(layer_normalised(scores), 0.25)
    assert max(np.bincount([l for l, _ in picked], minlength=4)) < 4  # no layer emptied
    z = layer_normalised(np.zeros((2, 3)))
    assert (z == 0).all()  # an all-zero layer stays 0, no NaN
    np.testing.assert_allclose(layer_normalised(scores).mean(1), 1.0)
