"""Notebook 2's worked one-layer example (repro.methods.ogas_terms, PruneExperiment.worked_layer,
repro.papers.ogas.worked) on a tiny random model: tracing prunes exactly as OGAS, L at the gamma used is
OGAS's own rel_error (and the Gram identity holds against a direct computation), f(alpha) has one root where
the target is reachable and none beyond S_max's reach, the pure functions match their equations, the
readings state the recorded numbers, and the record is computed once."""
import copy
import tempfile
from pathlib import Path

import numpy as np
import pytest
import torch

import repro.engines.prune
from repro.calib.blocks import Gram
from repro.engines.base import Setup
from repro.engines.plan import survey
from repro.engines.prune import PruneExperiment
from repro.errors import ReproError
from repro.methods import ogas_terms as T
from repro.methods.unstructured import OGAS, PRUNERS, channel_sparsity, prune_model
from repro.papers.ogas import readings as Rd
from repro.papers.ogas import worked as W
from repro.papers.ogas.grid import OgasGrid
from repro.store import Store
from repro.structure.sparsity import prunable_linears

from conftest import ogas_params

SMALL = Setup(data="wiki-sample", seqlen=32, max_windows=20, calib_data="wiki-sample", calib_nsamples=2, calib_seqlen=32)
LAYER = "model.layers.1.mlp.down_proj"
SEARCH, FIXED = {}, {"lam": 0.2, "gamma": 0.2}  # the LLaMA and Mistral settings


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    store = Store(tmp_path_factory.mktemp("results"))
    e = PruneExperiment("tiny-llama", SMALL, store, progress=False)
    recs = {}
    for name, params in (("search", SEARCH), ("fixed", FIXED)):
        recs[name] = (e.worked_layer(LAYER, "ogas", 0.5, params),
                      e.cell("ogas", 0.5, params=params, keep_layers=(LAYER,)))
    return store, e, recs


# ---- tracing changes nothing that is pruned ------------------------------------------------------------------

def test_ogas_parameters_and_registry_are_untouched():
    """Every stored record's key holds OGAS's params: the trace must not add any, nor become a method."""
    assert OGAS.defaults == {"lam": 0.4, "gamma": "search", "s_min": 0.01, "s_max": "auto", "s_max_headroom": 0.1,
                             "rounding": "paper", "subset": 36, "gamma_bounds": (0.05, 1.1), "gamma_tol": 0.05}
    assert not any(issubclass(m.impl, T.OGASTrace) for m in PRUNERS.values())
    tr = T.OGASTrace.of("ogas-mistral", 0.5, LAYER, gamma_grid=(0.1, 0.3))
    assert tr.params == PRUNERS["ogas-mistral"].impl(0.5).params and tr.gamma_grid == (0.1, 0.3)
    with pytest.raises(ReproError, match="not one"):
        T.OGASTrace.of("wanda", 0.5, LAYER)


@pytest.mark.parametrize("name", ["search", "fixed"])
def test_trace_prunes_bit_identically_to_ogas(run, name):
    _, _, recs = run
    worked, cell = (r["result"] for r in recs[name])
    assert worked["zeros_sha256"] == cell["zeros_sha256"]  # every layer's mask, not only the traced one
    assert worked["achieved"] == cell["report"]["layers"][LAYER]
    used = W.used_setting(worked)
    np.testing.assert_array_equal(used["s"], cell["channels"][LAYER]["channel_sparsity"])
    np.testing.assert_array_equal(worked["trace"]["energy"], cell["channels"][LAYER]["energy"])
    assert worked["extras"]["gamma"] == cell["report"]["extras"][LAYER]["gamma"] == worked["trace"]["gamma"]


def test_unbound_trace_and_parameters_beside_an_instance_are_refused(run):
    _, e, _ = run
    model = copy.deepcopy(e.model)
    calib = e.calibration().windows
    with pytest.raises(ReproError, match="bind"):
        prune_model(model, T.OGASTrace(0.5, trace_layer=LAYER), 0.5, calib, progress=False)
    with pytest.raises(ReproError, match="carries its own parameters"):
        prune_model(model, T.OGASTrace(0.5, trace_layer=LAYER).bind(model), 0.5, calib, progress=False, lam=0.2)
    with pytest.raises(ReproError, match="unknown prunable linear"):
        T.OGASTrace(0.5, trace_layer="model.layers.9.mlp.down_proj").bind(model)


# ---- L(gamma) ---------------------------------------------------------------------------------------------------

def test_L_at_the_searched_gamma_is_ogas_rel_error(run):
    _, _, recs = run
    worked, cell = (r["result"] for r in recs["search"])
    t, used = worked["trace"], W.used_setting(worked)
    rel = cell["report"]["extras"][LAYER]["rel_error"]
    assert used["rel_error"] == rel == worked["extras"]["rel_error"]  # the same gamma, mask and Gram: equal
    path = t["search_path"]
    assert len(path["gamma"]) == cell["report"]["extras"][LAYER]["gamma_evals"]
    i = int(np.argmin(path["rel_error"]))
    assert path["gamma"][i] == t["gamma"] and path["rel_error"][i] == rel  # the logged search is OGAS's own
    # the grid's gammas that are also settings give the same L
    for s in t["settings"]:
        if s["gamma"] in t["grid"]["gamma"]:
            assert t["grid"]["rel_error"][t["grid"]["gamma"].index(s["gamma"])] == s["rel_error"]
    assert len(set(np.round(t["grid"]["rel_error"], 12))) > 3  # L does depend on gamma


@pytest.mark.parametrize("params", [SEARCH, FIXED])
def test_L_through_the_gram_matrix_equals_the_output_error(run, params):
    """On one layer fed known inputs: the trace's L at the gamma used equals ||X (W - W_p)^T|| / ||X W^T||
    computed directly from the pruned weights (float64); with a fixed gamma the traced layer alone gets a Gram."""
    _, e, _ = run
    model = copy.deepcopy(e.model)
    pruner = T.OGASTrace(0.5, trace_layer=LAYER, gamma_grid=(0.3,), **params).bind(model)
    m = prunable_linears(model)[LAYER]
    other = prunable_linears(model)["model.layers.1.mlp.up_proj"]
    assert any(isinstance(o, Gram) for o in pruner.observers("mlp.down_proj", m))
    assert any(isinstance(o, Gram) for o in pruner.observers("mlp.up_proj", other)) == pruner.search
    x = torch.randn(3, 16, m.in_features, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        y = m(x)
        obs = pruner.observers("mlp.down_proj", m)
        for ob in obs:
            ob.add(ob.measure(x, y if ob.needs_output else None, 0))
        dense = m.weight.detach().double().clone()
        extras = pruner.compress(LAYER, m, obs)
    X = x.reshape(-1, x.shape[-1]).double()
    direct = torch.linalg.norm(X @ (dense - m.weight.double()).T) / torch.linalg.norm(X @ dense.T)
    used = next(s for s in extras["trace"]["settings"] if s["used"])
    assert (m.weight == 0).float().mean().item() == pytest.approx(0.5, abs=0.05)
    assert used["rel_error"] == pytest.approx(direct.item(), rel=1e-5)


# ---- alpha: one root where reachable ----------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["search", "fixed"])
def test_f_alpha_is_non_decreasing_with_one_root_at_ogas_alpha(run, name):
    worked = run[2][name][0]["result"]
    t, used = worked["trace"], W.used_setting(worked)
    c = W.root_curve(worked)
    f = np.asarray(c["f"])
    assert (np.diff(f) >= -1e-15).all() and f[0] < 0 < f[-1]
    assert int(np.sum((f[:-1] < 0) & (f[1:] >= 0))) == 1 and c["root"] == "unique"
    assert c["alpha_root"] == used["alpha"] and abs(np.interp(c["alpha_root"], c["alpha"], f)) < 1e-9
    for s in t["settings"]:  # the mean is the target wherever alpha was not at its bound
        assert not s["alpha_at_bound"] and np.mean(s["s"]) == pytest.approx(t["target"], abs=1e-9)
        assert min(s["s"]) >= t["s_min"] - 1e-12 and max(s["s"]) <= t["s_max"] + 1e-12


def test_alpha_curve_cases():
    imp = np.array([1.0, 0.5, 0.2, 0.0])  # a channel at I = 1 stays at S_min: S_max allows a mean below S_max
    most = (0.01 + 3 * 0.6) / 4
    c = T.alpha_curve(imp, 0.5, 0.3, 0.01, 0.6)
    s, alpha, at_bound = channel_sparsity(imp, 0.5, 0.3, 0.01, 0.6)
    assert c["root"] == "unique" and c["alpha_root"] == alpha and not at_bound
    assert c["max_mean"] == pytest.approx(most) and int(np.sum((c["f"][:-1] < 0) & (c["f"][1:] >= 0))) == 1
    assert c["alpha_hi"] == pytest.approx(0.59 / 0.5 ** 0.5)  # (S_max - S_min) / min over I < 1 of (1 - I)^gamma
    short = T.alpha_curve(imp, 0.5, 0.5, 0.01, 0.6)  # 0.5 < S_max, yet above what S_max allows here
    assert short["root"] == "none" and short["alpha_at_bound"] and (short["f"] < 0).all()
    assert short["f"][-1] == pytest.approx(most - 0.5) and short["alpha_root"] == short["alpha_hi"]
    touch = T.alpha_curve(np.array([0.9, 0.5, 0.0]), 1.0, 0.6, 0.01, 0.6)  # every I < 1: S_max itself is the most
    assert touch["root"] == "at alpha_hi" and touch["f"][-1] == pytest.approx(0.0, abs=1e-12) and (touch["f"][:-1] < 0).all()
    assert "no root" in Rd.root_reading(_trace_with(imp, 0.5), 0.5) and "not unique" in Rd.root_reading(
        _trace_with(np.array([0.9, 0.5, 0.0]), 1.0), 0.6)


def _trace_with(imp, gamma):
    """A minimal trace around an importance vector (for the reading of other targets)."""
    root = T.alpha_curve(imp, gamma, 0.3, 0.01, 0.6)
    return {"importance": list(imp), "gamma": gamma, "target": 0.3, "s_min": 0.01, "s_max": 0.6,
            "root": {k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in root.items()}}


# ---- the pure functions -----------------------------------------------------------------------------------------

def test_normalised_terms_make_ogas_importance(run):
    t = run[2]["search"][0]["result"]["trace"]
    x, y = T.normalised_terms(t["energy"], t["peak_ratio"])
    np.testing.assert_allclose(x, t["x"], rtol=0, atol=1e-15)
    assert x.min() == 0 and x.max() == 1 and y.min() == 0 and y.max() == 1
    np.testing.assert_allclose((1 - t["lam"]) * x + t["lam"] * y, t["importance"], rtol=0, atol=1e-15)


def test_stretch_finds_the_outlier_and_where_the_median_lands():
    e = np.append(np.linspace(1.0, 2.0, 199), 1000.0)
    st = T.stretch(e)
    v = np.log1p(e)
    assert st["top"] == 199 and st["outliers"] == [199] and st["top_over_median"] == pytest.approx(1000 / np.median(e))
    assert st["median_x"] == pytest.approx((np.median(v) - v.min()) / (v.max() - v.min()))
    assert st["median_x"] < 0.1 and 0.4 < st["median_x_robust"] < 0.6  # the outlier squeezes the others near 0
    lo, hi = np.percentile(v, [1, 99])
    assert st["range_ratio"] == pytest.approx((v.max() - v.min()) / (hi - lo)) and st["range_ratio"] > 5
    assert T.stretch(np.linspace(1.0, 2.0, 200))["outliers"] == []


def test_robust_normalisation_spreads_more_when_an_outlier_sets_the_scale():
    rng = np.random.default_rng(0)
    energy, peak = rng.uniform(1, 2, 300), rng.uniform(2, 3, 300)
    energy[7] = 1e4
    imp = T.normalised_terms(energy, peak)
    s_mm, _, _ = channel_sparsity(0.6 * imp[0] + 0.4 * imp[1], 0.5, 0.5, 0.01, 0.6)
    s_rb, _, _ = T.robust_sparsity(energy, peak, 0.4, 0.5, 0.5, 0.01, 0.6)
    assert np.mean(s_rb) == pytest.approx(0.5) and s_rb.std() > 1.2 * s_mm.std()


def test_reallocation_against_numpy():
    s = np.array([0.40, 0.495, 0.50, 0.505, 0.52, 0.58])
    r = T.reallocation(s, 0.5)
    assert r["within"] == pytest.approx(3 / 6)
    assert (r["q05"], r["q50"], r["q95"]) == tuple(np.quantile(s, [0.05, 0.5, 0.95]))
    assert r["std"] == pytest.approx(s.std()) and r["min"] == 0.40 and r["max"] == 0.58


# ---- frames and readings ----------------------------------------------------------------------------------------

def test_frames(run):
    worked = run[2]["search"][0]
    t = worked["result"]["trace"]
    ch = W.channel_terms(worked, 3)
    assert len(ch) == 6 and ch.I.iloc[0] == max(t["importance"]) and ch.I.iloc[-1] == min(t["importance"])
    assert (ch["vs Wanda"] == ch.removed - int(t["cols"] * 0.5)).all() and ch["vs Wanda"].iloc[0] < 0
    lc = W.loss_curve(worked)
    assert len(lc[lc.source == "grid"]) == len(t["grid"]["gamma"]) and lc[lc.source == "search"].step.max() == len(
        t["search_path"]["gamma"])
    assert not lc[lc.gamma == 4.0].inside.any() and lc[lc.gamma == 1.1].inside.all()
    r = W.reallocation_table(worked)
    assert list(r.gamma[r.normalisation == "min-max"]) == sorted(s["gamma"] for s in t["settings"])
    assert r.role.str.contains("chosen by the search").sum() == 2  # min-max and robust rows
    assert set(W.sparsity_frame(worked).groupby("curve").size()) == {t["rows"]}


def test_readings_state_the_recorded_numbers(run):
    worked = run[2]["search"][0]
    t, used = worked["result"]["trace"], W.used_setting(worked)
    g = Rd.gamma_reading(worked)
    assert f"gamma = {t['gamma']:.3g}" in g and f"L = {used['rel_error']:.4f}" in g
    assert f"after {len(t['search_path']['gamma'])} evaluations" in g and LAYER in g
    r = T.reallocation(used["s"], t["target"])
    text = Rd.reallocation_reading(worked)
    assert f"between {r['q05']:.3f} and {r['q95']:.3f}" in text and f"{r['within']:.0%}" in text
    st = T.stretch(t["energy"])
    assert f"channel {st['top']} has the largest energy" in Rd.stretch_reading(worked)
    assert f"x = {st['median_x']:.2f}" in Rd.stretch_reading(worked)
    root = Rd.root_reading(worked)
    assert f"at alpha = {used['alpha']:.4f}" in root and "crosses zero once" in root
    fixed = Rd.gamma_reading(run[2]["fixed"][0])
    assert fixed.startswith("The setting fixes gamma = 0.2 (no search)")
    sha = run[2]["search"][1]["result"]["zeros_sha256"]
    assert "the same zero pattern" in Rd.same_pruning_reading(worked, sha)
    assert "DIFFERENT" in Rd.same_pruning_reading(worked, "0" * 64)


def test_gamma_reading_names_the_shape_of_L(run):
    t = copy.deepcopy(run[2]["search"][0]["result"]["trace"])
    n = len(t["grid"]["gamma"])
    t["grid"]["rel_error"] = list(np.linspace(0.3, 0.2, n))
    assert "falls monotonically, so its minimum on the interval is at the upper end" in Rd.gamma_reading(t)
    t["grid"]["rel_error"] = list(np.linspace(0.2, 0.3, n))
    assert "rises monotonically" in Rd.gamma_reading(t)
    t["grid"]["rel_error"] = list((np.asarray(t["grid"]["gamma"]) - 0.5) ** 2 + 0.2)
    assert "is not monotone: on the grid it is lowest at gamma = 0.5" in Rd.gamma_reading(t)


# ---- the record -------------------------------------------------------------------------------------------------

def test_a_second_call_reads_the_record(run, monkeypatch):
    store, e, recs = run
    before = sorted(p.name for p in (store.root / "prune-worked").glob("*.json"))
    assert len(before) == 2
    monkeypatch.setattr(repro.engines.prune, "prune_model", lambda *a, **k: pytest.fail("recomputed"))
    again = e.worked_layer(LAYER, "ogas", 0.5, SEARCH)
    assert again == recs["search"][0] and sorted(p.name for p in (store.root / "prune-worked").glob("*.json")) == before
    cfg = again["config"]
    assert cfg["layer"] == LAYER and cfg["gamma_grid"] == list(T.GAMMA_GRID) and cfg["method"] == "ogas"
    assert cfg["params"] == recs["search"][1]["config"]["params"]  # OGAS's own parameters: the cell's


def test_the_grid_plans_and_reads_the_worked_cell(run):
    store, e, recs = run
    wt = {"tiny-llama": PruneExperiment("tiny-llama", SMALL, store, progress=False, loaded=e.loaded)}
    c4 = {"tiny-llama": PruneExperiment("tiny-llama", SMALL.replace(data="c4-sample:eval", calib_data="c4-sample:calib"),
                                        store, progress=False, loaded=e.loaded)}
    g = OgasGrid(wt, c4, ogas_params({"tiny-llama": "mistral"}))
    assert g.worked()["key"] == recs["fixed"][0]["key"]  # the figure layer, the model's setting: read, not computed
    store2 = Store(None)  # nothing recorded: the plan lists the worked cell as a job
    fresh = OgasGrid({"tiny-llama": PruneExperiment("tiny-llama", SMALL, store2, progress=False, loaded=e.loaded)},
                     {"tiny-llama": PruneExperiment("tiny-llama", SMALL.replace(data="c4-sample:eval",
                                                    calib_data="c4-sample:calib"), store2, progress=False,
                                                    loaded=e.loaded)}, ogas_params({"tiny-llama": "llama"}))
    jobs = survey(fresh).ordered()
    (job,) = [j for j in jobs if j.call == "worked_layer"]
    assert job.args == (LAYER, "ogas", 0.5, {"lam": 0.4, "gamma": "search"}) and job.record[0] == "prune-worked"


def test_the_channels_cell_records_the_main_cells_arrays_without_an_evaluation(run):
    """Figure 2's corners read ``PruneExperiment.channels``: the same pruning as the main cell (its zeros and its
    kept layer's arrays), for several layers, with no perplexity; an unknown layer is refused before any work."""
    store, e, recs = run
    other = "model.layers.0.mlp.down_proj"
    rec = e.channels("ogas", 0.5, (LAYER, other), SEARCH)
    cell = recs["search"][1]["result"]
    assert rec["result"]["zeros_sha256"] == cell["zeros_sha256"] and "ppl" not in rec["result"]
    assert rec["result"]["channels"][LAYER] == cell["channels"][LAYER]
    assert set(rec["result"]["channels"]) == {LAYER, other}
    with pytest.raises(ReproError, match="unknown prunable linear"):
        e.channels("ogas", 0.5, ("model.layers.9.mlp.nowhere",), SEARCH)


def test_figure2_corners_say_which_way_the_equations_push_each_corner():
    """Synthetic channels whose sparsity falls with energy (as OGAS's importance makes it): the high-energy,
    low-PAPR corner is pruned less than Wanda's target, so the paper's statement does not hold, and the reading
    says the equations do the opposite of the story."""
    from repro.claims import FAILS
    from repro.papers.ogas.corners import PEAKY, STATIC, corner_claims, corners, corners_reading

    rng = np.random.default_rng(0)
    recs = {}
    for model in ("a",):
        layers = {}
        for i in range(3):
            e, p = np.expm1(rng.uniform(0, 3, 400)), rng.uniform(1, 20, 400)  # log(1 + E) uniform
            x = (np.log1p(e) - np.log1p(e).min()) / np.ptp(np.log1p(e))
            layers[f"l{i}"] = {"energy": e.tolist(), "peak_ratio": p.tolist(), "channel_sparsity": (0.7 - 0.4 * x).tolist()}
        recs[model] = {"result": {"channels": layers}}
    t = corners(recs, 0.5)
    assert len(t) == 3 and (t["high E, low P"] > 0).all() and (t["Spearman s~x (energy)"] < -0.99).all()
    assert (t["sparsity, high E low P"] < 0.5).all() and (t["sparsity, low E high P"] > 0.5).all()
    verdicts = {c.claim: c.verdict for c in corner_claims(t)}
    assert verdicts[STATIC] == FAILS and verdicts[PEAKY] == FAILS
    reading = corners_reading(t, {"a": 0.4})
    assert "falls with energy in every layer" in reading and "do the opposite of the figure's story" in reading


def test_the_sparsegpt_worked_example_prunes_as_sparsegpt_and_its_update_lowers_the_output_error(run):
    """SparseGPTTrace prunes every weight exactly as SparseGPT (the record's zeros are the SparseGPT cell's); its
    replayed first block is the pruner's (checked inside the trace); on the traced layer the OBS updates leave less
    output error than SparseGPT's mask alone, and every row of Wanda's mask is at the target."""
    from repro.methods.sparsegpt_terms import SparseGPTTrace
    from repro.papers.ogas import sparsegpt_worked as S

    store, e, _ = run
    rec = e.worked_sparsegpt(LAYER, 0.5)
    cell = e.cell("sparsegpt", 0.5)
    assert rec["result"]["zeros_sha256"] == cell["result"]["zeros_sha256"]
    t = rec["result"]["trace"]
    assert t["error_sparsegpt"] < t["error_sparsegpt_mask_only"] and t["row_sparsity_wanda"] == [0.5, 0.5, 0.5]
    assert len(t["U_diag"]) == t["blocksize"] == min(128, t["cols"]) and 0 < t["overlap"] <= 1
    assert sum(t["pruned_per_column"]) == round(0.5 * t["rows"] * t["blocksize"])  # the block's exact count
    assert list(S.first_columns(rec, 4).column) == [0, 1, 2, 3] and "Wanda" in S.reading(rec)
    with pytest.raises(ReproError, match="unstructured"):
        SparseGPTTrace(0.5, "2:4", trace_layer=LAYER)


def test_the_ria_worked_example_prunes_as_ria_and_its_terms_are_the_score():
    """RIATrace prunes every weight exactly as RIA (the record's zeros are the RIA cell's; its replayed mask is the
    pruner's, checked inside the trace); each example weight's terms multiply to its score, the flags say which mask
    prunes it, and the row shows both directions of disagreement."""
    from repro.methods.ria_terms import RIATrace, terms
    from repro.papers.ogas import ria_worked as RW

    store = Store(Path(tempfile.mkdtemp()))
    e = PruneExperiment("tiny-llama", SMALL, store, progress=False)
    rec = e.worked_ria(LAYER, 0.5)
    assert rec["result"]["zeros_sha256"] == e.cell("ria", 0.5)["result"]["zeros_sha256"]
    t = rec["result"]["trace"]
    ex = RW.example(rec)
    assert np.allclose((ex["share of row"] + ex["share of column"]) * ex["norm X_j ^ a"], ex["RIA score"], rtol=1e-4)
    assert (ex["RIA prunes"] != ex["Wanda prunes"]).all() and ex["RIA prunes"].any() and ex["Wanda prunes"].any()
    assert t["row_sparsity_wanda"][1] == t["row_sparsity_wanda"][3] == 0.5 and 0 < t["overlap"] <= 1
    assert "RIA's mask shares" in RW.reading(rec)
    with pytest.raises(ReproError, match="unstructured"):
        RIATrace(0.5, "2:4", trace_layer=LAYER)
    # the same weights and inputs: a mask that prunes a light column's weights is what the column term favours
    W = torch.tensor([[1.0, 0.1], [1.0, 0.1]])
    out = terms(W, torch.ones(2), 0.5, 0.5, torch.tensor([[False, True], [False, True]]))
    assert out["col_term_share"][2] > 0.5  # the light column's weights take their whole column's share
