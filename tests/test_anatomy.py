"""The collapse anatomy: per-layer sublayer RMS against dense, single-head restores, the engine's cell."""
import numpy as np
import pytest
import torch

from repro.arch import adapter as get_adapter
from repro.engines.base import Setup
from repro.engines.heads import HeadExperiment
from repro.evaluate.anatomy import anatomy, loss, sublayer_rms
from repro.store import Store
from repro.structure import Masks

from helpers import build_tiny

SPREAD = Setup(data="wiki-sample", seqlen=32, max_windows=2, calib_data="wiki-sample", calib_nsamples=2, calib_seqlen=16,
               spread=True)


def _inputs(n=2, seq=16, vocab=200):
    return torch.randint(3, vocab, (n, seq), generator=torch.Generator().manual_seed(0))


@pytest.mark.parametrize("name", ["tiny-llama", "tiny-gemma3"])
def test_layers_before_the_cut_keep_their_scale_and_an_emptied_layer_loses_it(name):
    ad = get_adapter(build_tiny(name))
    x = _inputs()
    dense = sublayer_rms(ad, x)
    h = ad.attention(1).n_heads
    with Masks(ad) as m:
        mask = torch.ones(ad.n_layers, h)
        mask[1] = 0  # layer 1's attention emptied
        m.heads = mask
        cut = sublayer_rms(ad, x)
    assert cut["head", 0] == pytest.approx(dense["head", 0], rel=1e-6)  # upstream of the cut: unchanged
    assert cut["mlp", 0] == pytest.approx(dense["mlp", 0], rel=1e-6)
    assert cut["head", 1] == pytest.approx(0.0, abs=1e-6)  # no bias: nothing left of the sublayer
    assert cut["head", 2] != pytest.approx(dense["head", 2], rel=1e-4)  # downstream heads read another stream


def test_anatomy_restores_each_pruned_head_and_flags_emptied_layers():
    model = build_tiny("tiny-llama")
    ad = get_adapter(model)
    shape = (ad.n_layers, ad.attention(0).n_heads)
    x = _inputs()
    pruned = [(1, h) for h in range(shape[1])]  # layer 1 emptied
    a = anatomy(ad, x, shape, pruned)
    assert a["emptied"] == [1] and a["rms_ratio"]["head:1"] == pytest.approx(0.0, abs=1e-6)
    assert a["nll_dense"] == pytest.approx(loss(ad, x, shape, []))
    assert [(l, h) for l, h, _ in a["restore"]] == pruned
    # restoring head (1, 0) is the selection without it, computed independently
    assert a["restore"][0][2] == pytest.approx(loss(ad, x, shape, pruned[1:]), rel=1e-6)
    assert a["grown_layer"] != 1 and all(l == a["grown_layer"] for l, _, _ in a["add"])
    single = anatomy(ad, x, shape, [(2, 0)])
    assert single["restore"][0][2] == pytest.approx(single["nll_dense"], rel=1e-6)  # restoring the only head: dense


def test_anatomy_cell_names_the_post_norm_rescaling_only_where_there_is_one():
    got = {}
    for name in ("tiny-llama", "tiny-gemma3"):
        e = HeadExperiment(name, SPREAD, Store(None), grad_nsamples=1, progress=False)
        got[name] = e.anatomy("mpg", 0.25, n_windows=2, seqlen=16)["result"]
    assert got["tiny-llama"]["post_norm"] is False and "remaining" not in got["tiny-llama"]
    rem = got["tiny-gemma3"]["remaining"]
    assert got["tiny-gemma3"]["post_norm"] is True and rem
    assert all(0 <= v <= 1.5 for v in rem.values())
    first = min(int(k) for k in rem)
    if first == min(l for l, _ in got["tiny-gemma3"]["pruned"]):  # the first cut layer reads dense inputs
        assert rem[str(first)] == pytest.approx(got["tiny-gemma3"]["rms_ratio"][f"head:{first}"], rel=0.15)
    assert np.isfinite(got["tiny-gemma3"]["nll"])


def test_collapse_tables_read_constructed_records():
    import pandas as pd

    from repro.papers.mpg import collapse as C
    from repro.papers.mpg import readings

    a = pd.DataFrame([{"model": "m", "method": "wanda-head", "sparsity": 0.125, "n_windows": 8, "seqlen": 256,
                       "pruned": [[5, 0], [5, 1]], "emptied": [5], "nll_dense": 3.0, "nll": 7.0,
                       "restore": [(5, 0, 3.5), (5, 1, 6.9)], "add": [(6, 0, 4.0), (6, 1, 7.1)],
                       "rms_ratio": {"head:5": 0.0, "head:6": 2.3}, "grown_layer": 6, "post_norm": True,
                       "remaining": {"4": 0.8}}])
    row = C.anatomy_table(a).iloc[0]
    assert row["emptied layers"] == "5" and row["best single restore"].startswith("5.0: -3.500 (88%")
    assert row["best extra cut"] == "6.0: -3.000" and row["survivors scaled up (post-norm)"] == "layer 4: x1.25"
    text = readings.anatomy_reading(a)
    assert "1 of 1 empty at least one layer" in text and "m Wanda-Head @ 12.5% (head 5.0, 88%)" in text
    assert "In 1 a later layer's attention output runs above twice" in text and "in 1 of them cutting" in text
    assert "Identical selections" not in text and "rank correlation" not in text  # one post-norm row: no correlation
    twin = a.iloc[0].to_dict() | {"method": "sparsegpt-head"}
    spread = a.iloc[0].to_dict() | {"method": "random", "sparsity": 0.5, "pruned": [[1, 0]], "emptied": [], "nll": 4.0,
                                    "restore": [(1, 0, 3.9)], "remaining": {"4": 0.25}}
    mild = spread | {"method": "mpg", "pruned": [[2, 0]], "nll": 5.0, "restore": [(2, 0, 4.9)], "remaining": {"4": 0.5}}
    text = readings.anatomy_reading(pd.DataFrame([a.iloc[0].to_dict(), twin, spread, mild]))
    assert "Identical selections (the same heads, so the same row): m Wanda-Head @ 12.5% and m SparseGPT-Head" in text
    assert "No single head carries it (each return removes under a fifth) in 2: m Random @ 50.0% and m MP-G" in text
    assert "by x1.25 to x4.00" in text and "does not explain which cells collapse worst" in text  # rho < 0

    scores = pd.DataFrame([{"model": "m", "method": "wanda-head", "z": None, "seed": None,
                            "scores": np.array([[1.0, 1.2], [0.01, 0.02], [1.1, 0.9]])}])
    t = C.layer_scale(scores, "m", ["wanda-head"], 0.34)
    assert list(t["Wanda-Head pruned"]) == [0, 2, 0] and t["Wanda-Head scale"][1] < 0.05
    assert "layer 1 at x0.016" in (r := readings.layer_scale_reading(t, "m", 0.34)) and "lowest-scale layers." in r

    w = np.tile([3.0, 3.5, 2.5, 4.0], 5)
    frame = pd.DataFrame([
        {"model": "m", "method": "wanda-head", "scale": "global", "draw": 0, "sparsity": 0.5, "z": None,
         "tie_break": "index", "tie_seed": None, "ppl": float(np.exp((w + 1).mean())), "window_nll": w + 1,
         "pruned": [[1, 0], [1, 1]]},
        {"model": "m", "method": "wanda-head", "scale": "layer", "draw": 0, "sparsity": 0.5, "z": None,
         "tie_break": "index", "tie_seed": None, "ppl": float(np.exp((w + 0.5).mean())), "window_nll": w + 0.5,
         "pruned": [[1, 0], [0, 1]]}])
    r = C.remedy_table(frame, ["m"], ["wanda-head"], [0.5], {"m": 2}).iloc[0]
    assert r.ratio == pytest.approx(np.exp(-0.5)) and r.hi < 1
    assert r["layers emptied (global -> normalised)"] == "1 -> 0"
    assert "better in 1" in readings.remedy_reading(C.remedy_table(frame, ["m"], ["wanda-head"], [0.5], {"m": 2}))
    dense = {"model": "m", "method": "dense", "scale": "global", "draw": 0, "sparsity": 0.0, "z": None,
             "tie_break": "index", "tie_seed": None, "ppl": 2.0, "window_nll": np.log(2.0) + 0 * w, "pruned": None}
    both = C.remedy_table(pd.concat([frame, pd.DataFrame([dense])], ignore_index=True), ["m"], ["wanda-head"], [0.5],
                          {"m": 2})  # dense 2.0: both rankings (ppl about 55 and 33) are beyond 10x it
    assert bool(both["both collapsed"].iloc[0]) and not bool(r["both collapsed"])  # no dense row: not judged
    assert readings.remedy_reading(both).startswith("Every setting compares two collapsed models.")
