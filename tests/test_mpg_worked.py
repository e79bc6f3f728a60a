"""Notebook 1's worked one-layer example (repro.methods.head_terms; in words: repro.papers.mpg.readings): its
decomposition reproduces MP and MP-G exactly, MP-G's KV term is MP's divided by g, MHA never disagrees, one KV
head per layer is a per-layer constant, zero-score heads are counted right, and the collapse anatomy counts the
selection."""
import numpy as np
import pytest
import torch
import transformers as T

from repro.methods import head_terms as w
from repro.methods.heads import mp, mpg, select_heads
from repro.papers.mpg import readings

from helpers import build_tiny


def llama(n_kv: int, seed: int = 0, tweak: bool = False) -> torch.nn.Module:
    """3 layers, 9 query heads over ``n_kv`` KV heads, head_dim 8. ``tweak``: in layer 1, Q row 0 (head 0) x3
    and K row 8 (KV head 1; row 0 if there is one KV head) x6: a head with a moderate Q excess against a KV
    head with a large K excess."""
    cfg = T.LlamaConfig(vocab_size=260, hidden_size=72, intermediate_size=48, num_hidden_layers=3,
                        num_attention_heads=9, num_key_value_heads=n_kv, head_dim=8, max_position_embeddings=64)
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        m = T.LlamaForCausalLM(cfg).eval()
    if tweak:
        a = m.model.layers[1].self_attn
        with torch.no_grad():
            a.q_proj.weight[0] *= 3
            a.k_proj.weight[8 if n_kv > 1 else 0] *= 6
    return m


def hand_excess(rows: np.ndarray, z: float) -> np.ndarray:
    r = np.linalg.norm(rows, axis=1)
    return np.maximum(0.0, r - (r.mean() + z * r.std()))


@pytest.mark.parametrize("name", ["tiny-llama", "tiny-gemma3", "tiny-gpt2", "tiny-vit"])
@pytest.mark.parametrize("z", [1.0, 2.0])
def test_scores_equal_mp_and_mpg_exactly(name, z):
    m = build_tiny(name)
    ref_mp, ref_mpg = mp(m, z=z), mpg(m, z=z)
    for layer in range(ref_mp.shape[0]):
        t = w.layer_terms(m, layer, z)
        np.testing.assert_array_equal(t.mp.to_numpy(), ref_mp[layer])
        np.testing.assert_array_equal(t.mpg.to_numpy(), ref_mpg[layer])
    assert (ref_mp > 0).any()  # not a comparison of zeros


def test_terms_against_hand_norms():
    """K excess of KV head 1 in the tweaked layer, from the weights by numpy, and the within-layer ranks."""
    m = llama(3, tweak=True)
    t = w.layer_terms(m, 1)
    k = hand_excess(m.model.layers[1].self_attn.k_proj.weight.detach().double().numpy(), 2.0)
    assert k[8] > 0
    np.testing.assert_allclose(t.k[t.kv_group == 1], k[8:16].sum(), rtol=1e-12)
    np.testing.assert_allclose(t.k[t.kv_group == 0], k[0:8].sum(), rtol=1e-12)
    assert t.rank_mp.min() == 1 and t.rank_mp.to_numpy()[np.argmax(t.mp.to_numpy())] == 1


@pytest.mark.parametrize("n_kv", [3, 1])
def test_gqa_kv_term_is_mp_over_g(n_kv):
    m = llama(n_kv, tweak=True)
    t = w.all_terms(m)
    g = 9 // n_kv
    assert (t.g == g).all() and g > 1
    np.testing.assert_allclose(t.kv_mpg, t.kv_mp / g, rtol=1e-15)
    assert (t.kv_mp > t.kv_mpg).any()
    # heads of one KV group share their K and V terms
    assert (t.groupby(["layer", "kv_group"]).kv_mp.nunique() == 1).all()


def test_gqa_disagreement_is_found_and_read():
    m = llama(3, tweak=True)
    d = w.rank_disagreement(m)
    assert d.disagree.tolist() == [False, True, False]
    assert w.pick_layer(m) == 1
    t = w.layer_terms(m, 1)
    # a real swap: a pair of heads that MP and MP-G order oppositely
    a, b = t.mp.to_numpy(), t.mpg.to_numpy()
    assert ((a[:, None] > a[None, :]) & (b[:, None] < b[None, :])).any()
    assert d.discordant_pairs[1] > 0 and d.top_mp[1] != d.top_mpg[1]
    assert t.loc[t["head"] == 0, "rank_mpg"].item() == 1 and t.loc[t["head"] == 0, "rank_mp"].item() > 1
    text = readings.layer_reading(t)
    fallen = int(text.split("ranks head ")[1].split()[0])
    assert t.kv_group[fallen] == 1 and t.rank_mpg[fallen] > t.rank_mp[fallen]  # a head of the big-K group falls
    assert text.startswith(f"In layer 1, MP ranks head {fallen} 1st of 9") and "/3 = " in text
    assert text.endswith("so head 0 (Q+O " + f"{t.qo[0]:.2f}, its group's K+V {t.kv_mp[0]:.2f}) overtakes it.")
    shifts = w.global_shifts(m, top=5)
    assert len(shifts) == 5 and shifts["shift"].abs().iloc[0] > 0
    assert shifts["shift"].abs().is_monotonic_decreasing


def test_mha_never_disagrees():
    m = llama(9, tweak=True)  # the same perturbation that makes GQA disagree
    t = w.all_terms(m)
    assert (t.g == 1).all() and (t.kv_mp > 0).any()
    np.testing.assert_array_equal(t.kv_mpg, t.kv_mp)
    assert not w.rank_disagreement(m).disagree.any()
    assert w.pick_layer(m) is None
    assert (w.global_shifts(m, top=1000)["shift"] == 0).all()
    assert "g = 1, so MP-G is MP" in readings.layer_reading(w.layer_terms(m, 1))


@pytest.mark.parametrize("name", ["tiny-gpt2", "tiny-vit"])
def test_mha_families_never_disagree(name):
    m = build_tiny(name)
    assert w.pick_layer(m) is None and not w.rank_disagreement(m).disagree.any()


@pytest.mark.parametrize("name", ["tiny-gemma3", "tiny-mistral"])
def test_single_kv_term_is_a_per_layer_constant(name):
    m = build_tiny(name)
    c = w.single_kv_constant(m)
    assert c.kv_constant.all() and c.same_order.all()
    for layer, t in w.all_terms(m).groupby("layer"):
        assert t.kv_mp.nunique() == 1 and t.kv_mpg.nunique() == 1
        row = c[c.layer == layer].iloc[0]
        assert row.kv_mp == t.kv_mp.iloc[0] and row.g == len(t)
        np.testing.assert_allclose(row.kv_mpg * row.g, row.kv_mp, rtol=1e-12)
    assert w.pick_layer(m) is None  # a constant shift never reorders a layer


def test_single_kv_constant_moves_the_global_ranking():
    m = build_tiny("tiny-gemma3")
    assert (w.single_kv_constant(m).kv_excess > 0).all()
    assert (w.global_shifts(m)["shift"] != 0).any()


def test_single_kv_constant_refuses_gqa():
    with pytest.raises(Exception, match="KV heads"):
        w.single_kv_constant(build_tiny("tiny-llama"))


@pytest.mark.parametrize("name", ["tiny-llama", "tiny-mistral", "tiny-gpt2"])
@pytest.mark.parametrize("z", [1.0, 2.0])
def test_zero_score_heads_counted(name, z):
    m = build_tiny(name)
    a = w.zero_score_arithmetic(m, z)
    s = mpg(m, z=z)
    assert a["heads_zero"] == int((s == 0).sum()) == int((mp(m, z=z) == 0).sum())
    assert a["heads_total"] == s.size and a["features_per_head"] == 4 * a["head_dim"]
    if z == 2.0:
        assert 0 < a["heads_zero"] < a["heads_total"]  # both kinds of head are present
    for r in a["roles"].values():  # Cantelli: at most 1/(1+z^2) of a projection's features above mu+z*sigma
        assert r["fraction"] <= 1 / (1 + z ** 2) and r["features"] > 0
    assert a["above"] == sum(r["above"] for r in a["roles"].values()) > 0
    if z == 2.0:
        assert a["normal_tail"] == pytest.approx(0.02275, abs=1e-5)
    assert f"{a['heads_zero']} of {a['heads_total']} heads" in readings.zero_reading(a)


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("sparsity", [0.1, 0.34, 0.5, 0.9])
def test_collapse_anatomy_counts_the_selection(seed, sparsity):
    s = np.random.default_rng(seed).random((4, 6))
    a = w.collapse_anatomy(s, sparsity)
    picked = select_heads(s, sparsity)
    assert a.pruned.sum() == len(picked)
    assert a.pruned.tolist() == [sum(1 for l, _ in picked if l == i) for i in range(4)]
    assert (a.pruned + a.kept == 6).all()
    assert a.emptied.tolist() == (a.pruned == 6).tolist()


def test_collapse_flags_an_emptied_layer():
    s = np.array([[5.0, 6, 7, 8], [0.1, 0.2, 0.3, 0.4], [1, 2, 3, 4]])
    a = w.collapse_anatomy(s, 4 / 12)
    assert a.pruned.tolist() == [0, 4, 0] and a.emptied.tolist() == [False, True, False]
    spread = np.array([[0.1, 5, 6, 7], [0.2, 5, 6, 7], [0.3, 0.4, 6, 7]])  # the 4 lowest spread over all layers
    c = w.collapse_compare({"MP": spread, "MP-G": s}, 4 / 12)
    assert c["MP pruned"].tolist() == [1, 1, 2]
    assert c["MP-G emptied"].tolist() == [False, True, False] and not c["MP emptied"].any()
    assert c["MP pruned"].sum() == c["MP-G pruned"].sum() == 4
    assert readings.collapse_reading(c, 4 / 12) == "At 33% sparsity, MP empties no layer; MP-G empties layer 1."


def test_worked_cell_records_what_the_functions_compute_as_plain_json():
    import json

    from repro.engines.base import Setup
    from repro.engines.heads import HeadExperiment
    from repro.store import Store

    setup = Setup(data="wiki-sample", seqlen=32, max_windows=2, calib_data="wiki-sample", calib_nsamples=2,
                  calib_seqlen=16)
    for name in ("tiny-llama", "tiny-gemma3"):
        e = HeadExperiment(name, setup, Store(None), grad_nsamples=1, progress=False)
        r = e.worked()["result"]
        json.dumps(r)  # plain JSON: no numpy scalar left as a string
        assert r["layer"] == w.pick_layer(e.model)
        shown = e.adapter.n_layers // 2 if r["layer"] is None else r["layer"]
        np.testing.assert_allclose([t["mpg"] for t in r["terms"]], w.layer_terms(e.model, shown).mpg)
        assert r["zero"]["heads_zero"] == int((mpg(e.model) == 0).sum())
        assert (r["single_kv"] is not None) == (name == "tiny-gemma3")  # one K/V head per layer only


def test_every_head_scorer_side_by_side_on_one_layer():
    """The siblings table: per head of the layer, each scorer's global rank (index tie-break) and whether it prunes
    the head at the sparsity; the reading counts the layer's pruned heads per scorer."""
    import numpy as np
    import pandas as pd

    from repro.papers.mpg.siblings import shown, side_by_side, side_by_side_reading

    mpg = np.array([[0.0, 2.0], [0.0, 1.0]])  # two tied zeros: (0, 0) ranks before (1, 0)
    wanda = np.array([[5.0, 1.0], [4.0, 3.0]])
    scores = pd.DataFrame([{"model": "m", "method": "mpg", "z": 2.0, "seed": None, "scores": mpg},
                           {"model": "m", "method": "wanda-head", "z": None, "seed": None, "scores": wanda}])
    t = side_by_side(scores, "m", 1, sparsity=0.5)
    assert list(t["MP-G rank"]) == [2, 3] and list(t["MP-G prunes"]) == [True, False]
    assert list(t["Wanda-Head rank"]) == [3, 2] and list(t["Wanda-Head prunes"]) == [False, True]
    assert list(shown(t)["MP-G"]) == ["2*", "3"]
    assert "MP-G prunes 1, Wanda-Head prunes 1" in side_by_side_reading(t, 1, 0.5)


def test_eq3_terms_are_read_back_from_the_two_scores_and_name_the_heads_division_cuts():
    """MP = QO + KV and MP-G = QO + KV / g: the terms come back exactly; a head whose score is its group's K/V excess
    is the one MP-G prunes and MP keeps, and the reading says so."""
    import numpy as np
    import pandas as pd

    from repro.papers.mpg import gqa_terms as GT

    qo = np.array([[0.0, 2.5, 3.0, 6.0]])  # head 0 is its group's K/V excess alone; head 2 its own Q/O
    kv = np.array([[4.0, 0.0, 0.0, 0.0]])
    g = 2
    mp, mpg = qo + kv, qo + kv / g
    back_qo, back_kv = GT.terms(mp, mpg, g)
    assert np.allclose(back_qo, qo) and np.allclose(back_kv, kv)
    scores = pd.DataFrame([{"model": "m", "method": m, "z": 2.0, "scores": s.tolist()} for m, s in (("mp", mp), ("mpg", mpg))])
    t = GT.differing_heads(scores, "m", 0.5, g)
    only_mpg = t[t["pruned by"] == "MP-G only"]
    assert only_mpg["layer/head"].tolist() == ["0/0"] and t[t["pruned by"] == "MP only"]["layer/head"].tolist() == ["0/2"]
    assert "MP-G cuts those" in GT.reading(t)
    with pytest.raises(ValueError):
        GT.terms(mp, mpg, 1)
