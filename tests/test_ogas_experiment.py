"""Paper 2's experiment cells on a tiny model: prune -> evaluate -> record -> frame -> claims."""
import pytest

from repro.experiments import ogas as O
from repro.experiments.base import Setup
from repro.store import Store

SMALL = Setup(data="wiki-sample", seqlen=32, max_windows=3, calib_data="wiki-sample", calib_nsamples=2, calib_seqlen=32)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    store = Store(tmp_path_factory.mktemp("results"))
    e = O.PruneExperiment("tiny-llama", SMALL, store, progress=False)
    e.dense()
    for m in ("magnitude", "wanda", "ogas"):
        e.cell(m, 0.5, params={"gamma": 0.2} if m == "ogas" else None)
    e.cell("ogas", 0.5, params={"gamma": 0.2, "rounding": "exact"})
    e.cell("wanda", None, pattern="2:4")
    return store, e


def test_cells_land_in_the_frame_with_their_rows(run):
    store, e = run
    f = O.prune_frame(store, [e])
    assert sorted(O.row_name(m, p) for m, p in zip(f.method, f.params)) == \
        ["dense", "magnitude", "ogas", "ogas-exact", "wanda", "wanda"]
    wanda = O.select(f, "tiny-llama", "wiki-sample", "wanda", 0.5)
    assert wanda.achieved == pytest.approx(0.5, abs=1e-6) and len(wanda.zeros_sha256) == 64
    assert O.select(f, "tiny-llama", "wiki-sample", "wanda", 0.5, "2:4").zeros_sha256 != wanda.zeros_sha256
    exact = O.select(f, "tiny-llama", "wiki-sample", "ogas-exact", 0.5)
    paper = O.select(f, "tiny-llama", "wiki-sample", "ogas", 0.5)
    assert exact.achieved == pytest.approx(0.5, abs=1e-3) and paper.achieved <= exact.achieved
    assert paper.channel_quantiles and all(len(q) == len(O.QUANTILES) for q in paper.channel_quantiles.values())
    p = O.paired_to(f, "tiny-llama", "wiki-sample", "ogas", "wanda")
    assert p.n == 3 and p.estimate > 0


def test_claims_run_on_the_frame(run):
    store, e = run
    f = O.prune_frame(store, [e])
    claims = O.ogas_claims(f, ["tiny-llama"], 0.5, [], [], [])
    assert {c.claim for c in claims} == {"OGAS below Wanda at 50%", "OGAS below RIA at 50%",
                                         "OGAS at or below SparseGPT at 50%"}
    assert [c.verdict for c in claims if "RIA" in c.claim] == ["inconclusive"]  # RIA not run: "not run"


def test_a_cell_is_computed_once(run):
    store, e = run
    before = len(list(store.records("prune-ppl")))
    e.cell("wanda", 0.5)
    assert len(list(store.records("prune-ppl"))) == before


def test_kept_layer_has_per_channel_arrays_and_frame_is_per_session(run):
    store, e = run
    layer = "model.layers.1.mlp.down_proj"
    rec = e.cell("ogas", 0.5, params={"gamma": 0.2}, keep_layers=(layer,))
    ch = rec["result"]["channels"][layer]
    rows = e.model.model.layers[1].mlp.down_proj.weight.shape[0]
    assert set(ch) == {"energy", "peak_ratio", "channel_sparsity"}
    assert all(len(v) == rows for v in ch.values()) and min(ch["peak_ratio"]) >= 1.0  # max >= RMS
    # a later session that asks for nothing sees nothing from the same folder
    assert O.prune_frame(Store(store.root), [e]).empty
    assert len(O.prune_frame(Store(store.root), [e], session=False)) == len(O.prune_frame(store, [e]))
