"""Algorithm 1's GQA rule and the removal plan's invariants (property tests)."""
import copy

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from repro.arch import adapter
from repro.structure import full_groups, plan_layer, removal_counts, zero_heads

from helpers import assert_same_pruned, build_tiny, head_mask


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
    """tiny-qwen2: 4 query heads, 2 KV heads (g = 2: heads {0,1} -> kv 0, {2,3} -> kv 1).
    By hand (cost = 2*len(q) + 2*len(kv), ties go to pad):
    - layer 0, prune [1]: groups {0: [0], 1: [2, 3]}; pad q [0, -, 2, 3] kv [0, 1] costs 12,
      expand q [0, 2, 3] kv [0, 1, 1] costs 12 -> "pad", 4 heads (one zero) over 2 KV heads.
    - layer 1, prune [0, 1, 2]: only head 3 in group 1; q [3] kv [1] -> "gqa", 1 head, 1 KV head.
    - layer 2, prune [3]: groups {0: [0, 1], 1: [2]}; pad q [0, 1, 2, -] kv [0, 1] (12) ties
      expand q [0, 1, 2] kv [0, 0, 1] (12) -> "pad"."""
    from repro.structure import Masks, remove_heads

    from helpers import inputs, output

    m = build_tiny("tiny-qwen2")  # q/k/v biases too
    kw = inputs("tiny-qwen2")
    heads = [(0, 1), (1, 0), (1, 1), (1, 2), (2, 3)]
    assert plan_layer(4, 2, [1]) == ([0, None, 2, 3], [0, 1], "pad")
    assert plan_layer(4, 2, [0, 1, 2]) == ([3], [1], "gqa")
    assert plan_layer(4, 2, [3]) == ([0, 1, 2, None], [0, 1], "pad")
    zeroed, removed = copy.deepcopy(m), copy.deepcopy(m)
    zero_heads(adapter(zeroed), heads)
    counts = removal_counts(adapter(removed), heads)  # the plan, before anything changes
    rep = remove_heads(adapter(removed), heads)
    # 5 selected: layer 1 loses 3 heads, layers 0 and 2 keep their one selected head as a zero (padding)
    assert counts == {"selected": 5, "removed": 3, "kept_as_zeros": 2}
    assert removal_counts(([4, 4, 4], [2, 2, 2]), heads) == counts  # from a model card's head counts
    assert counts["removed"] == sum(4 - r["n_heads"] for r in rep.values())
    assert rep == {0: {"n_heads": 4, "n_kv_heads": 2, "mode": "pad"},
                   1: {"n_heads": 1, "n_kv_heads": 1, "mode": "gqa"},
                   2: {"n_heads": 4, "n_kv_heads": 2, "mode": "pad"}}
    ad, ad0 = adapter(removed), adapter(m)
    hd = ad.head_dim
    for i, r in rep.items():
        a = ad.attention(i)
        assert (a.n_heads, a.n_kv_heads) == (r["n_heads"], r["n_kv_heads"])
        assert a.site("q").module.weight.shape[0] == r["n_heads"] * hd
        assert a.site("k").module.weight.shape[0] == r["n_kv_heads"] * hd
        assert a.site("o").module.weight.shape[1] == r["n_heads"] * hd
    # the zero head pads layer 0 at position 1 and layer 2 at position 3: zero Q rows, Q bias, O columns
    for i, pos in ((0, 1), (2, 3)):
        a = ad.attention(i)
        blk = slice(pos * hd, (pos + 1) * hd)
        assert a.site("q").module.weight[blk].abs().sum() == 0 and a.site("q").module.bias[blk].abs().sum() == 0
        assert a.site("o").module.weight[:, blk].abs().sum() == 0
    # layer 1 keeps head 3 and its KV head 1, weights copied
    a, a0 = ad.attention(1), ad0.attention(1)
    torch.testing.assert_close(a.site("q").module.weight, a0.site("q").module.weight[3 * hd:4 * hd], rtol=0, atol=0)
    torch.testing.assert_close(a.site("k").module.weight, a0.site("k").module.weight[hd:2 * hd], rtol=0, atol=0)
    torch.testing.assert_close(a.site("k").module.bias, a0.site("k").module.bias[hd:2 * hd], rtol=0, atol=0)
    with Masks(adapter(m)) as mk:
        mk.heads = head_mask(3, 4, heads)
        masked = output(m, kw)
    assert_same_pruned(output(m, kw), output(zeroed, kw), removed=output(removed, kw), masked=masked)


def test_expand_mode_with_three_query_heads_per_kv_head():
    """SmolLM2's shape (g = 3): 9 query heads, 3 KV heads; kv j serves heads 3j..3j+2.
    By hand (cost = 2*len(q) + 2*len(kv)):
    - layer 0, prune [4, 5, 7, 8]: kept 0 1 2 | 3 | 6; pad needs 3 groups of 3 (q 9, kv 3: 24),
      expand q [0, 1, 2, 3, 6] kv [0, 0, 0, 1, 2] costs 20 -> "expand".
    - layer 1, prune [0, 4]: kept 1 2 | 3 5 | 6 7 8; pad q [1, 2, -, 3, 5, -, 6, 7, 8] kv [0, 1, 2]
      costs 24, expand 28 -> "pad".
    - layer 2, prune [1, 2, 4, 5, 7]: kept 0 | 3 | 6 8; pad q 6 kv 3 (18), expand q [0, 3, 6, 8]
      kv [0, 1, 2, 2] (16) -> "expand", two query heads reading copies of one KV head.
    Removed, zeroed (Algorithm 1) and masked models give the same logits."""
    from repro.structure import Masks, remove_heads

    from helpers import build_llama_g3, inputs, output

    pruned = {0: [4, 5, 7, 8], 1: [0, 4], 2: [1, 2, 4, 5, 7]}
    plans = {0: ([0, 1, 2, 3, 6], [0, 0, 0, 1, 2], "expand"),
             1: ([1, 2, None, 3, 5, None, 6, 7, 8], [0, 1, 2], "pad"),
             2: ([0, 3, 6, 8], [0, 1, 2, 2], "expand")}
    for i, p in pruned.items():
        assert plan_layer(9, 3, p) == plans[i]
    heads = [(i, h) for i, p in pruned.items() for h in p]
    m = build_llama_g3(3)
    kw = inputs("llama-g3", batch=2, seqlen=16)
    zeroed, removed = copy.deepcopy(m), copy.deepcopy(m)
    zero_heads(adapter(zeroed), heads)
    rep = remove_heads(adapter(removed), heads)
    assert rep == {i: {"n_heads": len(q), "n_kv_heads": len(kv), "mode": mode} for i, (q, kv, mode) in plans.items()}
    hd = 8
    for i, (q, kv, _) in plans.items():
        a0, a1 = m.model.layers[i].self_attn, removed.model.layers[i].self_attn
        assert a1.q_proj.weight.shape == (len(q) * hd, 72) and a1.o_proj.weight.shape == (72, len(q) * hd)
        assert a1.k_proj.weight.shape == a1.v_proj.weight.shape == (len(kv) * hd, 72)
        assert a1.num_key_value_groups == len(q) // len(kv)
        for new, old in enumerate(kv):  # expand: each copy is its original KV head's rows
            for proj in ("k_proj", "v_proj"):
                torch.testing.assert_close(getattr(a1, proj).weight[new * hd:(new + 1) * hd],
                                           getattr(a0, proj).weight[old * hd:(old + 1) * hd], rtol=0, atol=0)
    assert removed.model.layers[0].self_attn.num_key_value_groups == 1
    with Masks(adapter(m)) as mk:
        mk.heads = head_mask(3, 9, heads)
        masked = output(m, kw)
    dense = output(m, kw)
    assert_same_pruned(dense, output(zeroed, kw), removed=output(removed, kw), masked=masked)
    # sensitivity: expanding with the wrong KV copy (kv 1 for head 6 in layer 0) is caught
    wrong = copy.deepcopy(m)
    from repro.structure.heads import apply_layer
    apply_layer(adapter(wrong), 0, [0, 1, 2, 3, 6], [0, 0, 0, 1, 1])
    for i in (1, 2):
        apply_layer(adapter(wrong), i, *plans[i][:2])
    with pytest.raises(AssertionError, match="removed differs"):
        assert_same_pruned(dense, output(zeroed, kw), removed=output(wrong, kw))


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
