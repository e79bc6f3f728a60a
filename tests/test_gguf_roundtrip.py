"""benchmarks/gguf_roundtrip.py (issue 63) on a tiny random model: the Q4_1 round trip really quantises, and the
score comparisons are exact on identical scores."""
import importlib.util
import sys

import numpy as np
import pytest
import torch

from conftest import ROOT, one_thread_context

pytest.importorskip("gguf")
one_thread = pytest.fixture(autouse=True, scope="module")(one_thread_context)


def _script():
    name = "gguf_roundtrip"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def test_roundtrip_quantises_every_block_linear():
    from repro.assets import load_model

    g = _script()
    model = load_model("tiny-bert").model
    linears = g.block_linears(model)
    assert len(linears) == 3 * 6  # Q, K, V, O, intermediate, output per layer
    w = next(iter(linears.values()))[1].weight.detach().clone()
    back = g.q4_1_roundtrip(w)
    assert back.shape == w.shape and back.dtype == w.dtype
    assert 0 < g.relative_error(w, back) < 0.2
    # 16 levels per block of 32: a block's values take at most 16 distinct values
    assert all(len(torch.unique(block)) <= 16 for block in back.reshape(-1, 32))
    quantised, records = g.roundtrip_model(model)
    assert len(records) == len(linears) and all(0 < r["rel_error"] < 0.2 for r in records)
    assert torch.equal(next(iter(g.block_linears(model).values()))[1].weight, w)  # the original untouched
    assert not torch.equal(next(iter(g.block_linears(quantised).values()))[1].weight, w)


def test_identical_scores_agree_fully():
    g = _script()
    scores = np.random.default_rng(0).random((3, 4))
    scores[0, :2] = 0.0  # ties at zero, as MP-G gives
    out = g.compare_scores(scores, scores.copy(), sparsities=(0.125, 0.25, 0.5))
    assert out["spearman"] == pytest.approx(1.0)
    assert out["zeros_before"] == out["zeros_after"] == out["zero_in_both"] == 2
    assert out["median_rel_change_nonzero"] == 0.0
    for o in out["overlap"]:
        assert o["identical"] and o["jaccard"] == 1.0 and o["common"] == o["n_pruned"]
    assert g.rank_correlation(np.zeros(4), np.zeros(4)) == 1.0


def test_measure_on_tiny_model():
    from repro.assets import load_model

    g = _script()
    out = g.measure(load_model("tiny-llama").model, z=2.0, sparsities=(0.25,))
    assert out["matrix_error"]["n_matrices"] == 3 * 7 and out["matrix_error"]["max"] < 0.2
    for m in g.METHODS:
        s = out["methods"][m]
        assert s["n_heads"] == 12 and -1 <= s["spearman"] <= 1
        assert s["overlap"][0]["n_pruned"] == 3
    flips = out["magnitude_mask"]
    assert flips["n_matrices"] == 3 * 7 and 0 < flips["overall"] < 0.5  # a random model's mask moves, not wholesale
    # the round trip of an identical model flips nothing and keeps every pool
    same = g.magnitude_flips(load_model("tiny-llama").model, load_model("tiny-llama").model)
    assert same["overall"] == 0.0
    pre = g.prescreen(load_model("tiny-llama").model, load_model("tiny-llama").model, pools=(4,))
    assert pre["head"]["pools"] == [{"pool": 4, "stay": 4}] and pre["head"]["n_units"] == 12


def test_the_notebooks_read_the_committed_round_trip_and_say_what_it_shows():
    """repro.origin on the committed result: one table per notebook, each reading quoting its numbers; a result
    where MP-G moves a head that was not tied at 0 says so instead of 'every one of them'."""
    import copy

    from repro import origin

    results = origin.load()
    heads = origin.head_scores(results)
    assert set(heads.frame.method) == {"MP-G", "MP", "Magnitude-Head"} and len(heads.frame) == 6
    rho = results["models"]["minilm-l6"]["methods"]["mpg"]["spearman"]
    assert f"{rho:.3f}" in heads.reading and "minilm-l6 6, every one of them tied at 0" in heads.reading
    assert "dinov2-vits14 2, 0 of them" in heads.reading and "(6 of the 8 moved" in heads.reading  # its two moved heads sit at the cut, not at a tie
    changed = copy.deepcopy(results)
    m = changed["models"]["minilm-l6"]["methods"]["mpg"]
    h = m["overlap"][-1]["only_before"][0]
    m["scores_before"][h[0]][h[1]] = m["scores_after"][h[0]][h[1]] = 1.0  # one moved head no longer tied at 0
    assert "minilm-l6 6, 5 of them" in origin.head_scores(changed).reading
    mask = origin.magnitude_mask(results)
    share = results["models"]["dinov2-vits14"]["magnitude_mask"]["overall"]
    assert f"{share:.2%}" in mask.frame.to_string()
    pre = origin.prescreen(results)
    assert len(pre.frame) == 4 and "lowest 48 kept" in pre.frame
    assert origin.table("heads", ROOT / "missing.json") is None
