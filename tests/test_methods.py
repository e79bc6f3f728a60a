"""Head scorers against hand-worked numbers; selection counts, ties and bad input."""
import math

import numpy as np
import pytest
import torch
import transformers as T
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import build_tiny
from repro.errors import ReproError, UnknownNameError
from repro.methods.heads import HEAD_METHODS, excess, n_to_prune, score_heads, select_heads


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
@given(L=st.integers(1, 8), H=st.integers(1, 8), s=st.floats(0, 0.999), seed=st.integers(0, 5),
       tie=st.sampled_from(["index", "random"]))
def test_select_heads_exact_count_and_lowest(L, H, s, seed, tie):
    rng = np.random.default_rng(seed)
    scores = rng.integers(0, 3, size=(L, H)).astype(float)  # many ties
    pruned = select_heads(scores, s, tie, seed)
    assert len(pruned) == math.floor(round(s * L * H, 9)) == n_to_prune(s, L * H)
    assert len(set(pruned)) == len(pruned)
    if pruned and len(pruned) < L * H:
        worst_kept = min(scores[l, h] for l in range(L) for h in range(H) if (l, h) not in set(pruned))
        assert max(scores[l, h] for l, h in pruned) <= worst_kept


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
