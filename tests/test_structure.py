"""Algorithm 1's GQA rule and the removal plan's invariants (property tests)."""
import copy

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import build_tiny
from repro.arch import adapter
from repro.structure import full_groups, plan_layer, zero_heads


def test_kv_rows_zeroed_only_with_whole_group():
    m = build_tiny("tiny-llama")  # 4 query heads, 2 KV heads: groups {0,1} -> kv 0, {2,3} -> kv 1
    zero_heads(adapter(m), [(0, 0), (0, 2), (0, 3)])
    a = adapter(m).attention(0)
    hd = a.head_dim
    k, v, q = a.site("k").module.weight, a.site("v").module.weight, a.site("q").module.weight
    o = a.site("o").module.weight
    assert k[:hd].abs().sum() > 0 and v[:hd].abs().sum() > 0, "kv 0 still serves head 1"
    assert k[hd:].abs().sum() == 0 and v[hd:].abs().sum() == 0, "kv 1 lost both its query heads"
    for h in (0, 2, 3):
        assert q[h * hd:(h + 1) * hd].abs().sum() == 0 and o[:, h * hd:(h + 1) * hd].abs().sum() == 0
    assert q[hd:2 * hd].abs().sum() > 0 and o[:, hd:2 * hd].abs().sum() > 0
    other = adapter(m).attention(1)
    assert all(s.module.weight.abs().sum() > 0 for s in other.sites), "other layers untouched"


def test_full_groups():
    assert full_groups([0, 1, 2], 6, 2) == [0]
    assert full_groups([0, 1, 2, 3, 4, 5], 6, 2) == [0, 1]
    assert full_groups([0, 3], 6, 2) == []
    assert full_groups([1], 4, 4) == [1]  # MHA: every head is its own group


@st.composite
def layer_cases(draw):
    n_kv = draw(st.integers(1, 4))
    g = draw(st.integers(1, 4))
    n = n_kv * g
    pruned = draw(st.lists(st.integers(0, n - 1), unique=True, max_size=n))
    return n, n_kv, pruned


@settings(max_examples=300, deadline=None)
@given(layer_cases())
def test_plan_layer_invariants(case):
    n, n_kv, pruned = case
    q, kv, mode = plan_layer(n, n_kv, pruned)
    kept = [h for h in range(n) if h not in pruned]
    g = n // n_kv
    assert len(q) % len(kv) == 0, "new group size must be an integer"
    g_new = len(q) // len(kv)
    real = [h for h in q if h is not None]
    assert sorted(real) == kept, "every survivor exactly once, no pruned head"
    if not kept:
        assert (q, kv, mode) == ([None], [None], "empty")
        return
    for pos, h in enumerate(q):  # each surviving head reads the K/V of its own original group
        if h is not None:
            assert kv[pos // g_new] == h // g
    assert len(q) <= n and len(kv) <= n_kv or mode == "expand"
    # cost never exceeds keeping the layer as it is
    assert 2 * len(q) + 2 * len(kv) <= 2 * n + 2 * n_kv
    if g == 1:
        assert mode == "mha" and q == kept


def test_removed_gqa_model_keeps_logits_with_uneven_groups():
    from helpers import inputs, output
    from repro.structure import remove_heads

    m = build_tiny("tiny-qwen2")  # q/k/v biases too
    kw = inputs("tiny-qwen2")
    heads = [(0, 1), (1, 0), (1, 1), (1, 2), (2, 3)]
    zeroed, removed = copy.deepcopy(m), copy.deepcopy(m)
    zero_heads(adapter(zeroed), heads)
    rep = remove_heads(adapter(removed), heads)
    assert {r["mode"] for r in rep.values()} >= {"pad", "gqa"} or rep
    torch.testing.assert_close(output(removed, kw), output(zeroed, kw), rtol=1e-4, atol=1e-5)


@settings(max_examples=100, deadline=None)
@given(n=st.integers(1, 64), size=st.integers(1, 16), data=st.data())
def test_group_mask(n, size, data):
    from repro.structure import group_mask

    n_groups = -(-n // size)
    off = data.draw(st.lists(st.integers(0, n_groups - 1), unique=True))
    m = group_mask(n, size, off)
    assert m.shape == (n,)
    for c in range(n):
        assert m[c] == (0.0 if c // size in off else 1.0)
