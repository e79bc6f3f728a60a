"""Paper 2's experiment cells on a tiny model: prune -> evaluate -> record -> frame -> claims; the
notebook's grid of cells (OgasGrid) on a tiny model; and every table, figure's data and summary of
the reader on constructed frames."""
import math
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from repro.claims import shown
from repro.engines.base import Setup
from repro.engines.prune import QUANTILES, PruneExperiment
from repro.errors import ReproError
from repro.papers.ogas.claims import claims_table, metrics, ogas_claims, readme_blocks
from repro.papers.ogas.grid import OgasGrid, frame, own_headroom, prune_frame
from repro.papers.ogas.readings import chance_reading, claims_reading
from repro.papers.ogas.records import (
    PAPER_ZEROSHOT,
    caption,
    dense_ppl,
    find,
    headroom_row,
    paired_to,
    row_name,
    zeroshot_paired,
)
from repro.papers.ogas.tables import (
    ablation_table,
    achieved_table,
    curve_frame,
    curve_table,
    dense_vs_chance,
    figure2_axes,
    figure2_channels,
    gamma_bounds_table,
    gamma_frames,
    nm_table,
    rounding_table,
    table12,
    zeroshot_tables,
)
from repro.report import Table
from repro.store import Store

from conftest import ogas_params

SMALL = Setup(data="wiki-sample", seqlen=32, max_windows=20, calib_data="wiki-sample", calib_nsamples=2, calib_seqlen=32)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    store = Store(tmp_path_factory.mktemp("results"))
    e = PruneExperiment("tiny-llama", SMALL, store, progress=False)
    e.dense()
    for m in ("magnitude", "wanda", "ogas"):
        e.cell(m, 0.5, params={"gamma": 0.2} if m == "ogas" else None)
    e.cell("ogas", 0.5, params={"gamma": 0.2, "rounding": "exact"})
    e.cell("wanda", None, pattern="2:4")
    return store, e


def test_cells_land_in_the_frame_with_their_rows(run):
    store, e = run
    f = prune_frame(store, [e])
    assert sorted(row_name(m, p) for m, p in zip(f.method, f.params)) == \
        ["dense", "magnitude", "ogas", "ogas-exact", "wanda", "wanda"]
    wanda = find(f, "tiny-llama", "wiki-sample", "wanda", 0.5)
    assert wanda.achieved == pytest.approx(0.5, abs=1e-6) and len(wanda.zeros_sha256) == 64
    assert find(f, "tiny-llama", "wiki-sample", "wanda", 0.5, "2:4").zeros_sha256 != wanda.zeros_sha256
    exact = find(f, "tiny-llama", "wiki-sample", "ogas-exact", 0.5)
    paper = find(f, "tiny-llama", "wiki-sample", "ogas", 0.5)
    assert exact.achieved == pytest.approx(0.5, abs=1e-3) and paper.achieved <= exact.achieved
    assert paper.channel_quantiles and all(len(q) == len(QUANTILES) for q in paper.channel_quantiles.values())
    p = paired_to(f, "tiny-llama", "wiki-sample", "ogas", "wanda")
    assert p.n == 20 and p.estimate > 0


def test_claims_run_on_the_frame(run):
    store, e = run
    f = prune_frame(store, [e])
    claims = ogas_claims(f, ["tiny-llama"], 0.5, [], [], [])
    assert {c.claim for c in claims} == {"OGAS below Wanda at 50%", "OGAS below RIA at 50%",
                                         "OGAS at or below SparseGPT at 50%"}
    assert [c.verdict for c in claims if "RIA" in c.claim] == ["inconclusive"]  # RIA not run: "not run"
    assert [c.measured for c in claims if "RIA" in c.claim] == ["not run"]


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
    assert prune_frame(Store(store.root), [e]).empty
    assert len(prune_frame(Store(store.root), [e], session=False)) == len(prune_frame(store, [e]))


def test_down_projections_are_one_per_block(run):
    _, e = run
    downs = e.down_projections()
    assert downs == [f"model.layers.{i}.mlp.down_proj" for i in range(len(e.model.model.layers))]


def test_figure_2s_layer_comes_from_the_model_card_without_loading(run, monkeypatch):
    """Rendering from records needs no model: a fresh experiment on the same folder reads the
    linears' names from the card that the first load wrote; REPRO_NO_LOAD makes a load an error."""
    store, e = run
    monkeypatch.setenv("REPRO_NO_LOAD", "1")
    fresh = PruneExperiment("tiny-llama", SMALL, Store(store.root), progress=False)
    assert fresh.down_projections() == e.down_projections() and fresh._loaded is None
    with pytest.raises(ReproError, match="REPRO_NO_LOAD is set, yet 'tiny-llama' was to be loaded"):
        fresh.model  # noqa: B018


# ---- the notebook's grid on a tiny model -------------------------------------------------------

TASKS = ["arc_easy", "boolq"]


def fake_zeroshot(model, tasks, limit):
    """A stand-in for lm-eval: per-document accuracies that depend on the model's weights."""
    w = sum(float(p.detach().abs().sum()) for p in model.parameters())
    docs = [float((int(w * 1000) >> i) & 1) for i in range(limit)]
    return {"tasks": {t: {"metrics": {"acc": {"value": float(np.mean(docs))}}, "per_doc": {"acc": docs}}
                      for t in tasks}}


@pytest.fixture(scope="module")
def grid(run):
    _, e = run
    store = Store(None)
    wt = {"tiny-llama": PruneExperiment("tiny-llama", SMALL, store, progress=False, loaded=e.loaded)}
    c4 = {"tiny-llama": PruneExperiment("tiny-llama", SMALL.replace(data="c4-sample:eval",
                                                                    calib_data="c4-sample:calib"),
                                        store, progress=False, loaded=e.loaded)}
    wt["tiny-llama"].zeroshot = fake_zeroshot
    params = {"profile": "unit", "sparsity": 0.5,
              "methods": ["magnitude", "wanda", "ogas"], "c4_models": ["tiny-llama"],
              "exact_rounding_data": ["wiki-sample"], "nm_models": ["tiny-llama"], "nm_patterns": ["2:4"],
              "nm_methods": ["wanda"], "ablation_models": ["tiny-llama"], "curve_models": ["tiny-llama"],
              "curve_sparsities": [0.5, 0.7], "s_max_headrooms": [0.05], "zeroshot_models": ["tiny-llama"],
              "zeroshot_tasks": TASKS, "zeroshot_limit": 20}
    g = OgasGrid(wt, c4, ogas_params({"tiny-llama": "mistral"}, **params))
    g.run_main()
    return g


def config_of(g, data, row, sparsity=0.5):
    """The record config of the grid's cell (data, row name, sparsity)."""
    c = find(frame(g), "tiny-llama", data, row, sparsity)
    return next(r["config"] for r in g.store.records("prune-ppl") if r["key"] == c.key[1])


def test_grid_from_params_and_names(grid):
    assert grid.models == ["tiny-llama"] and grid.wt_name == "wiki-sample" and grid.c4_name == "c4-sample"
    assert grid.p.methods == ["magnitude", "wanda", "ogas"] and grid.p.zeroshot_limit == 20 and grid.p.profile == "unit"
    assert grid.experiment("tiny-llama", "c4-sample") is grid.c4["tiny-llama"]
    assert grid.params_for("tiny-llama", "ogas", rounding="exact") == {"lam": 0.2, "gamma": 0.2, "rounding": "exact"}
    assert grid.params_for("tiny-llama", "wanda") == {}
    assert grid.figure_layer_name == "model.layers.1.mlp.down_proj"  # the middle of 2 blocks' down projections
    assert "OGAS setting mistral" in grid.describe() and "c4-sample:eval" in grid.describe()


def test_run_main_asks_for_each_table_cell_once(grid):
    f = frame(grid)
    rows = sorted((d, row_name(m, p)) for d, m, p in zip(f.data, f.method, f.params))
    assert rows == sorted([(d, r) for d in ("wiki-sample", "c4-sample") for r in ("dense", "magnitude", "wanda", "ogas")]
                          + [("wiki-sample", "ogas-exact")])
    assert config_of(grid, "wiki-sample", "ogas")["keep_layers"] == ["model.layers.1.mlp.down_proj"]  # Figure 2's
    assert "keep_layers" not in config_of(grid, "c4-sample", "ogas")
    assert "keep_layers" not in config_of(grid, "wiki-sample", "ogas-exact")
    assert config_of(grid, "wiki-sample", "wanda")["zeroshot"] == {"tasks": TASKS, "limit": 20}  # Tables 3-4 read it
    assert "zeroshot" not in config_of(grid, "c4-sample", "wanda")
    assert "zeroshot" not in config_of(grid, "wiki-sample", "ogas-exact")
    assert config_of(grid, "wiki-sample", "ogas-exact")["params"]["rounding"] == "exact"


def test_further_calibration_draws_are_their_own_cells_and_stay_out_of_the_tables(run):
    _, e = run
    store = Store(None)
    wt = {"tiny-llama": PruneExperiment("tiny-llama", SMALL, store, progress=False, loaded=e.loaded)}
    c4 = {"tiny-llama": PruneExperiment("tiny-llama", SMALL.replace(data="c4-sample:eval", calib_data="c4-sample:calib"),
                                        store, progress=False, loaded=e.loaded)}
    g = OgasGrid(wt, c4, ogas_params({"tiny-llama": "llama"}, methods=["magnitude", "wanda"], calib_seeds=[0, 1]))  # no C4 rows
    assert g.extra_draws("tiny-llama", "wiki-sample", "wanda") == [1]
    assert g.extra_draws("tiny-llama", "wiki-sample", "magnitude") == []  # reads no data: one draw
    g.run_main()
    every = frame(g, draws=True)
    wanda = every[every.method == "wanda"]
    assert sorted(wanda.draw) == [0, 1] and wanda.ppl.nunique() == 2  # another sample, another pruned model
    pooled = frame(g)
    (row,) = pooled[pooled.method == "wanda"].itertuples()  # one row: the draws pooled
    assert row.n_draws == 2 and row.ppl == pytest.approx(np.exp(np.mean(list(wanda.window_nll))))
    p = paired_to(pooled, "tiny-llama", "wiki-sample", "wanda", "magnitude")
    one = paired_to(every[every.draw.eq(0)], "tiny-llama", "wiki-sample", "wanda", "magnitude")
    assert p.estimate != one.estimate  # both draws count, not the first alone


def test_control_draws_put_the_control_rows_on_every_calibration_draw(run):
    """``control_draws``: Table 5's variants, the exact-rounding row and the other gamma rule are asked on every
    draw of ``calib_seeds``, so they pair with Wanda and OGAS draw by draw; off, on the first draw only. The
    grid is surveyed (:func:`repro.engines.plan.survey`'s walk): what it asks for, nothing computed."""
    from repro.engines.plan import Plan
    from repro.methods.unstructured import OGAS_SETTINGS

    _, e = run
    asked = {}
    for on in (False, True):
        store = Store(None)
        wt = {"tiny-llama": PruneExperiment("tiny-llama", SMALL, store, progress=False, loaded=e.loaded)}
        c4 = {"tiny-llama": PruneExperiment("tiny-llama", SMALL.replace(data="c4-sample:eval",
                                                                          calib_data="c4-sample:calib"),
                                            store, progress=False, loaded=e.loaded)}
        g = OgasGrid(wt, c4, ogas_params({"tiny-llama": "mistral"}, methods=["wanda", "ogas"], calib_seeds=[0, 1],
                                         ablation_models=["tiny-llama"], gamma_rule_models=["tiny-llama"],
                                         exact_rounding_data=["wiki-sample"], control_draws=on))
        plan = Plan()
        plan.visit(g.run_main.ask())
        plan.visit(g.run_ablation.ask())
        assert not plan.done and not list(store.records("prune-ppl"))  # surveyed, not computed
        rows = {}
        for c in plan.configs.values():
            if c["data"]["name"] == "wiki-sample" and "calibration" in c:
                name = row_name(c["method"], c["params"], OGAS_SETTINGS["mistral"]["gamma"])
                rows.setdefault(name, []).append(c["calibration"]["seed"])
        asked[on] = {k: sorted(v) for k, v in rows.items()}
    for row in ("ogas-energy", "ogas-papr", "ogas-exact", "ogas-gamma-search"):
        assert asked[False][row] == [0] and asked[True][row] == [0, 1], (row, asked)
    assert asked[False]["wanda"] == asked[True]["wanda"] == [0, 1]  # the methods' own rows: every draw either way


def test_run_zeroshot_and_its_tables(grid):
    results = grid.run_zeroshot()
    assert list(results["tiny-llama"]) == ["dense", "magnitude", "wanda", "ogas"]
    dense = next(grid.store.records("prune-zeroshot"))
    e = grid.wt["tiny-llama"]
    assert dense["config"] == {**e.zeroshot_config(TASKS, 20), "method": "dense"}  # the key of the committed records
    assert e.dense_zeroshot(TASKS, 20)["key"] == dense["key"] and len(list(grid.store.records("prune-zeroshot"))) == 1
    [(stem, (table, cap, *_))] = zeroshot_tables(results, grid)
    assert stem == "table3_zeroshot_tiny-llama" and cap.startswith("**Table 3. Zero-shot accuracy, tiny-llama")
    assert list(table.index) == ["Dense", "Magnitude", "Wanda", "OGAS"]
    assert list(table.columns) == [*TASKS, "mean", "mean of the paper's tasks", "same, acc_norm where reported",
                                   "vs Wanda (paired)"]
    paper = [t for t in TASKS if t in PAPER_ZEROSHOT]
    assert 0 < len(paper) < len(TASKS)  # the fixture mixes the paper's tasks with others
    assert table.at["OGAS", "mean of the paper's tasks"] == round(float(np.mean([table.at["OGAS", t] for t in paper])), 3)
    assert table.at["Dense", "vs Wanda (paired)"] == "—" and table.at["Wanda", "vs Wanda (paired)"] == "—"


def test_run_nm_ablation_and_curve_ask_for_their_cells(grid):
    grid.run_nm()
    grid.run_ablation()
    grid.run_curve()
    f = frame(grid)
    assert find(f, "tiny-llama", "wiki-sample", "wanda", 0.5, "2:4") is not None
    energy = find(f, "tiny-llama", "wiki-sample", "ogas-energy")
    assert energy.params["lam"] == 0.0 and energy.params["gamma"] == 0.2  # the model's setting's gamma
    for m in ("magnitude", "wanda", "ogas", "ogas-h0.05"):
        assert find(f, "tiny-llama", "wiki-sample", m, 0.7) is not None, m
    assert find(f, "tiny-llama", "wiki-sample", "ogas-h0.05", 0.5) is None  # headrooms only above 60%
    table5, cap5, _, _, *_ = ablation_table(f, grid)
    assert list(table5.variant) == ["Wanda", "OGAS energy-only (lambda 0)", "OGAS PAPR-only (lambda 1)", "OGAS"]
    assert "4 of 4 cells read from cached records" not in cap5  # computed here, in this session
    ch = figure2_channels(f, grid)
    assert ch[:2] == ("tiny-llama", "model.layers.1.mlp.down_proj") and set(ch[2]) == {"energy", "peak_ratio",
                                                                                        "channel_sparsity"}


# ---- the reader on constructed frames ----------------------------------------------------------

def fake_experiment(data, calib, store, quant="q4_0", windows="4 x 64 tokens"):
    return SimpleNamespace(identity={"quantisation": quant}, store=store, windows=lambda: windows,
                           data=SimpleNamespace(name=data.split(":")[0], label=data),
                           feeding_note=", <bos> + text windows" if "<bos>" in windows else "",
                           structure={"vocab_size": 1000}, uniform_ppl=1000,
                           setup=Setup(data=data, seqlen=64, max_windows=20, calib_data=calib, calib_nsamples=8,
                                       calib_seqlen=32, eval_dtype="float32"))


@pytest.fixture
def fake_grid():
    store = Store(None)
    wt = {m: fake_experiment("wikitext2:test", "wikitext2-train", store, q, w)
          for m, q, w in (("a", "q4_0", "4 x 64 tokens"), ("b", "q8", "2 x 64 tokens, <bos> + text windows"))}
    c4 = {m: fake_experiment("c4-sample:eval", "c4-sample:calib", store) for m in wt}
    return OgasGrid(wt, c4, ogas_params({"a": "llama", "b": "mistral"}, profile="unit",
                                        methods=["magnitude", "wanda", "ogas"], nm_models=["a"], nm_patterns=["2:4"],
                                        nm_methods=["wanda"], ablation_models=["a"], curve_models=["a"],
                                        curve_sparsities=[0.5, 0.7, 0.9], s_max_headrooms=[0.05], zeroshot_models=["a"],
                                        zeroshot_tasks=["boolq", "piqa"], zeroshot_limit=2,
                                        figure_layer="model.layers.1.mlp.down_proj"))


def row(model, data, method, nll, sparsity=0.5, pattern="unstructured", params=None, **extra):
    nll = list(map(float, nll))
    return {"key": ("prune-ppl", f"{model}-{data}-{method}-{sparsity}-{pattern}-{params}"), "model": model,
            "data": data, "method": method, "sparsity": 0.0 if method == "dense" else sparsity,
            "pattern": "dense" if method == "dense" else pattern, "params": params or {},
            "ppl": float(np.exp(np.mean(nll))), "ci95": [float(np.exp(min(nll))), float(np.exp(max(nll)))],
            "window_nll": nll, "achieved": extra.pop("achieved", sparsity), "prune_seconds": 1.26,
            "extras": extra.pop("extras", {}), "zeroshot": None, "channels": extra.pop("channels", None),
            "channel_quantiles": extra.pop("channel_quantiles", None), **extra}


OGAS_A = {"lam": 0.4, "gamma": "search"}
BASE = np.tile([2.0, 2.5, 3.0, 3.5], 5)  # 20 windows: the fewest a paired bootstrap accepts
OGAS_NLL = np.tile([0.9, 0.8, 0.95, 0.85], 5)


def constructed_frame():
    rows = [row("a", "wikitext2", "dense", BASE), row("b", "wikitext2", "dense", BASE - 0.5),
            row("a", "c4-sample", "dense", BASE)]
    for d, shift in (("wikitext2", 0.0), ("c4-sample", 0.01)):  # two data sets: never one measurement twice
        rows += [row("a", d, "magnitude", BASE + 2.0), row("a", d, "wanda", BASE + 1.0),
                 row("a", d, "ogas", BASE + OGAS_NLL + shift, params=OGAS_A, achieved=0.4993)]
    rows += [row("a", "wikitext2", "ogas", BASE + 0.7, params={**OGAS_A, "rounding": "exact"}),
             row("b", "wikitext2", "wanda", BASE), row("b", "wikitext2", "ogas", BASE - 0.1,
                                                       params={"lam": 0.2, "gamma": 0.2})]
    rows += [row("a", "wikitext2", "wanda", BASE + 0.5, 0.5, "2:4"),
             row("a", "wikitext2", "ogas-energy", BASE + 0.95, params={"lam": 0.0, "gamma": "search"}),
             row("a", "wikitext2", "ogas-papr", BASE + 1.05, params={"lam": 1.0, "gamma": "search"})]
    for sp, add in ((0.7, 3.0), (0.9, 6.0)):
        rows += [row("a", "wikitext2", "magnitude", BASE + 2 * add, sp), row("a", "wikitext2", "wanda", BASE + add, sp),
                 row("a", "wikitext2", "ogas", BASE + add - 0.5, sp, params=OGAS_A)]
    rows.append(row("a", "wikitext2", "ogas", BASE + 2.4, 0.7, params={**OGAS_A, "s_max_headroom": 0.05}))
    f = pd.DataFrame(rows)
    i = f.index[(f.key == ("prune-ppl", f"a-wikitext2-ogas-0.5-unstructured-{OGAS_A}"))][0]
    f.at[i, "channels"] = {"model.layers.1.mlp.down_proj": {"energy": [1.0, 2.0], "peak_ratio": [3.0, 4.0],
                                                            "channel_sparsity": [0.6, 0.4]}}
    f.at[i, "extras"] = {"l.0.q_proj": {"gamma": 0.05, "gamma_at_bound": True, "gamma_evals": 5},
                         "l.1.q_proj": {"gamma": 0.5, "gamma_evals": 6}}
    f.at[i, "channel_quantiles"] = {"l.0.q_proj": list(np.linspace(0.3, 0.7, 21)), "l.1.q_proj": [0.5] * 21}
    return f


def test_find_tells_rows_apart_and_headrooms_fall_back_to_the_default_cell():
    f = constructed_frame()
    assert find(f, "a", "wikitext2", "ogas").params == OGAS_A
    assert find(f, "a", "wikitext2", "ogas-exact").ppl == pytest.approx(np.exp(np.mean(BASE + 0.7)))
    assert find(f, "a", "wikitext2", "ogas-h0.05", 0.7).params["s_max_headroom"] == 0.05
    assert find(f, "a", "wikitext2", "wanda", 0.5, "2:4").ppl == pytest.approx(np.exp(np.mean(BASE + 0.5)))
    assert find(f, "a", "wikitext2", "wanda", 0.5, lam=1) is None and find(f, "b", "c4-sample", "ogas") is None
    assert find(f, "a", "wikitext2", "ogas", gamma="search") is not None
    assert find(f.iloc[:0], "a", "wikitext2", "dense") is None
    # S_max = max(0.6, min(0.95, s + h)): above 60% a headroom is its own cell unless the cap makes it the default
    assert not own_headroom(0.5, 0.2) and own_headroom(0.7, 0.05) and not own_headroom(0.9, 0.05)
    assert [headroom_row(s, 0.05) for s in (0.5, 0.7, 0.9)] == ["ogas", "ogas-h0.05", "ogas"]


def test_caption_names_the_setups_and_the_cache(fake_grid):
    f = constructed_frame()
    cap = caption(fake_grid, "Title.", f)
    assert cap == ("**Title.** a, b (<bos> first); wikitext2:test / c4-sample:eval, 20 x 64 tokens; float32; profile "
                   f"`unit`; {len(f)} of {len(f)} cells read from cached records.")
    assert caption(fake_grid, "Title.").endswith("float32; profile `unit`.")


def test_table12_marks_ranks_and_pairs_to_wanda(fake_grid):
    f = constructed_frame()
    table, cap, _, vals, *_ = table12(f, fake_grid)
    assert list(vals.columns) == ["a wikitext2", "a c4-sample", "b wikitext2", "a average"]  # b: no C4 cell, no average
    both = vals[["a wikitext2", "a c4-sample"]].astype(float)
    np.testing.assert_allclose(vals["a average"].astype(float), (both.iloc[:, 0] + both.iloc[:, 1]) / 2)
    assert not table.at["Dense", "a average"].startswith("*") and "[" not in table.at["Wanda", "a average"]
    assert list(table.index) == ["Dense", "Magnitude", "Wanda", "OGAS", "OGAS (exact target)"]
    assert table.at["OGAS (exact target)", "a wikitext2"].startswith("**")  # best, dense not ranked
    assert table.at["OGAS", "a wikitext2"].startswith("<u>") and not table.at["Dense", "a wikitext2"].startswith("*")
    assert table.at["Wanda", "a wikitext2: / Wanda"] == "—" and table.at["Dense", "b wikitext2: / Wanda"] == "—"
    assert table.at["Magnitude", "a wikitext2: / Wanda"] == "x2.718 [2.718, 2.718]"  # nll + 1 on every window
    assert vals.at["OGAS (exact target)", "a c4-sample"] is None or np.isnan(vals.at["OGAS (exact target)",
                                                                                      "a c4-sample"])
    assert cap.startswith("**Tables 1-2.") and "50% unstructured" in cap


def test_achieved_and_rounding_tables(fake_grid):
    f = constructed_frame()
    achieved, cap, _, _, *_ = achieved_table(f, fake_grid)
    assert len(achieved) == 3 + 3 + 1 + 2  # a: 4 rows on WikiText-2, 3 on C4; b: Wanda, OGAS
    assert achieved.loc[(achieved.model == "a") & (achieved.method == "OGAS"), "achieved"].tolist() == [0.4993] * 2
    assert achieved["prune seconds"].unique().tolist() == [1.3] and cap.startswith("**Achieved sparsity")
    worth, cap, _, _, *_ = rounding_table(f, fake_grid)
    assert worth[["model", "data"]].values.tolist() == [["a", "wikitext2"]]  # only where both ran
    ratio = np.exp(np.mean([0.2, 0.1, 0.25, 0.15]))
    assert worth.iloc[0, 2].startswith(f"x{ratio:.4f} [")
    assert worth.at[0, "windows better"] == "0/20"  # the exact target is better on every window


def test_nm_table(fake_grid):
    table, cap, _, vals, *_ = nm_table(constructed_frame(), fake_grid)
    assert list(table.columns) == ["a wikitext2 2:4"] and list(table.index) == ["Dense", "Wanda"]
    assert vals.at["Wanda", "a wikitext2 2:4"] == pytest.approx(np.exp(np.mean(BASE + 0.5)))
    assert "2:4 and 4:8" in cap


def test_zeroshot_tables_from_results(fake_grid):
    def result(docs1, docs2):
        return {"tasks": {t: {"metrics": {"acc": {"value": float(np.mean(d))}}, "per_doc": {"acc": d}}
                          for t, d in (("boolq", docs1), ("piqa", docs2))}}
    results = {"a": {"dense": result([1, 1] * 5, [1, 0] * 5), "wanda": result([1, 0] * 5, [0, 0] * 5),
                     "ogas": result([1, 1] * 5, [1, 0] * 5)}}  # 20 documents: the fewest a paired bootstrap accepts
    [(stem, (table, cap, *_))] = zeroshot_tables(results, fake_grid)
    assert stem == "table3_zeroshot_a" and "first 2 documents per task, float32, profile `unit`" in cap
    assert table.at["Dense", "mean"] == 0.75 and table.at["Wanda", "mean"] == 0.25
    assert table.at["OGAS", "vs Wanda (paired)"].startswith("+0.500")  # 10 of 20 documents better, none worse
    assert zeroshot_paired(results["a"]["wanda"], results["a"]["ogas"], ["boolq", "piqa"]).estimate == -0.5
    # a second zero-shot model is Table 4 (the paper's Mistral setting)
    both = zeroshot_tables({**results, "b": results["a"]}, fake_grid)
    assert [stem for stem, _ in both] == ["table3_zeroshot_a", "table4_zeroshot_b"]
    assert both[1][1].caption.startswith("**Table 4. Zero-shot accuracy, b")


def test_dense_vs_chance_places_each_interval_against_the_trivial_answer():
    """BoolQ's dense model is judged against always giving the documents' majority answer (here "yes" on 90 of 100:
    0.9 is no better than that); a task without recorded gold answers against a uniform guess."""
    def result(**docs):
        return {"tasks": {t: {"per_doc": d} for t, d in docs.items()}}
    dense = result(hellaswag={"acc": [1, 0, 0, 0] * 25}, boolq={"acc": [1] * 90 + [0] * 10, "gold": [1] * 90 + [0] * 10},
                   winogrande={"acc": [0] * 90 + [1] * 10}, piqa={"acc": [1] * 90 + [0] * 10})
    table, cap, _, _, *_ = dense_vs_chance({"g": {"dense": dense}}, ["hellaswag", "boolq", "winogrande", "piqa"])
    t = table.set_index("task")
    assert t["trivial accuracy"].tolist() == [0.25, 0.9, 0.5, 0.5] and t["documents"].tolist() == [100] * 4
    assert t["trivial answer"].tolist() == ["a uniform guess", "always 'yes'", "a uniform guess", "a uniform guess"]
    assert t["dense vs trivial"].tolist() == ["at", "at", "below", "above"]
    assert t.at["boolq", "dense accuracy"] == 0.9 and not t.at["piqa", "paper's task"] and "trivial answer" in cap
    text = chance_reading(table)
    assert text.startswith("- **g** dense: above the trivial answer on piqa 0.90; at the trivial answer on hellaswag* "
                           "0.25, boolq* 0.90; below the trivial answer on winogrande* 0.10.")


def test_ablation_table_pairs_each_variant_to_wanda(fake_grid):
    f = constructed_frame()
    table, cap, _, _, *_ = ablation_table(f, fake_grid)
    assert list(table.columns) == ["model", "variant", "lambda", "gamma", "ppl", "vs Wanda (paired)"]
    assert table["lambda"].tolist() == ["-", 0.0, 1.0, 0.4]
    assert table["vs Wanda (paired)"].iloc[0] == "x1.000 [1.000, 1.000]"
    assert table["vs Wanda (paired)"].iloc[1] == f"x{np.exp(-0.05):.3f} [{np.exp(-0.05):.3f}, {np.exp(-0.05):.3f}]"
    assert table.ppl.iloc[3] == round(np.exp(np.mean(BASE + OGAS_NLL)), 3)
    assert cap.endswith("4 of 4 cells read from cached records.")
    fake_grid.p = fake_grid.p.model_copy(update={"ablation_models": []})
    table, cap, _, _, *_ = ablation_table(f, fake_grid)
    assert table.empty and "cells read" not in cap


def test_figure_data(fake_grid):
    f = constructed_frame()
    name, layer, ch = figure2_channels(f, fake_grid)
    assert (name, layer, ch["channel_sparsity"]) == ("a", "model.layers.1.mlp.down_proj", [0.6, 0.4])
    [(name, layers, q)] = gamma_frames(f, fake_grid)  # b's OGAS cell searched no gamma
    assert name == "a" and layers.at_bound.tolist() == [True, False] and layers.type.unique().tolist() == ["q_proj"]
    assert q["quantile"].between(0.05, 0.95).all() and len(q) == 2 * 18  # 0.05..0.90 (0.95 is 0.9500...01)
    curve = curve_frame(f, fake_grid)
    ogas = curve[curve.label == "OGAS"]
    assert ogas.sparsity.tolist() == [0.5, 0.7, 0.9] and ogas.headroom.isna().all()
    h = curve[curve.label == "OGAS, S_max headroom 0.05"]
    assert h.sparsity.tolist() == [0.7, 0.9] and h.row.tolist() == ["ogas-h0.05", "ogas"]  # at 90%: the 0.95 cap
    assert h.ppl.iloc[1] == ogas.ppl.iloc[2] and h.ppl.iloc[0] != ogas.ppl.iloc[1]
    table, cap, _, _, *_ = curve_table(curve, f, fake_grid)
    assert list(zip(table.model, table.method)) == [("a", "Magnitude"), ("a", "Wanda"), ("a", "OGAS"),
                                                    ("a", "OGAS headroom 0.05")]
    table = table.set_index(["model", "method"])
    assert math.isnan(table.at[("a", "OGAS headroom 0.05"), 0.5]) and cap.startswith("**Figure 4 data")
    two = curve_table(pd.concat([curve, curve.assign(model="b", ppl=curve.ppl * 2)]), f, fake_grid).frame
    two = two.set_index(["model", "method"])
    assert two.at[("b", "OGAS"), 0.7] == 2 * table.at[("a", "OGAS"), 0.7]  # one record per cell, never a mean
    assert dense_ppl(f, fake_grid) == {"a": pytest.approx(np.exp(2.75)), "b": pytest.approx(np.exp(2.25))}


def test_claims_summary_metrics_and_readme(fake_grid):
    f = constructed_frame()
    claims, cap, _, _, *_ = claims_table(f, fake_grid)
    assert list(shown(claims).columns) == ["claim", "paper says", "setting", "measured", "verdict", "power", "n",
                                           "paper effect", "half-width"] and len(claims) == len(shown(claims))
    below = claims[(claims.claim == "OGAS below Wanda at 50%") & (claims.setting == "a, wikitext2")]
    assert below.verdict.tolist() == ["holds"]  # lower NLL on every window
    flat = claims[claims.claim.str.startswith("OGAS degrades least")]
    assert flat.setting.tolist() == ["a, vs Magnitude", "a, vs Wanda", "a, vs RIA", "a, vs SparseGPT"]
    assert flat.measured.tolist()[2:] == ["not run", "not run"]
    low = claims[claims.claim == "OGAS has the lowest perplexity at 80% and 90%"]  # Figure 4's text
    assert low.setting.tolist() == [f"a, 90%, vs {m}" for m in ("Magnitude", "Wanda", "RIA", "SparseGPT")]
    assert low.verdict.tolist() == ["holds", "holds", "inconclusive", "inconclusive"]  # RIA, SparseGPT not run
    collapse = claims[claims.claim.str.startswith("Magnitude and SparseGPT collapse")]
    assert collapse.verdict.tolist() == ["holds", "inconclusive"] and collapse.threshold.iloc[0] == 10.0
    assert "models a, b" in cap
    text = claims_reading(claims, 0.5)
    assert "**OGAS vs Wanda** at 50%: holds: 3 (on average" in text and "**Zero-shot mean above Wanda** over the paper's four tasks: not run" in text
    avg = claims[claims.claim.str.startswith("OGAS below Wanda on average")]
    assert len(avg) == 1 and avg.n.iloc[0] == 60 and avg["paper effect"].iloc[0] == pytest.approx(0.9116)
    assert "3 settings" in avg.measured.iloc[0]  # a wikitext2, a c4-sample, b wikitext2
    c4 = claims[(claims.claim == "OGAS below Wanda at 50%") & claims.setting.str.contains("c4")]
    wt = claims[(claims.claim == "OGAS below Wanda at 50%") & claims.setting.str.contains("wikitext2")]
    assert c4["paper effect"].iloc[0] == pytest.approx(16.25 / 17.75) and wt["paper effect"].iloc[0] == pytest.approx(7.99 / 8.85)
    assert claims.claim.str.startswith("OGAS does not collapse").sum() == 1
    m = metrics(f, claims, fake_grid)
    assert m["n_cells"] == len(f) and m["n_claims"] == len(claims) and sum(sum(v.values()) if isinstance(v, dict) else v
                                                   for v in m["verdicts"].values()) == len(claims)
    blocks = readme_blocks(Table(pd.DataFrame({"x": [1]}, index=["r"]), "cap"), Table(claims, cap))
    assert blocks["ogas-tables"].startswith("cap\n\n|    |   x |") and "\n| r  |" in blocks["ogas-tables"]
    assert blocks["ogas-claims"].startswith(cap + "\n\n**") and "\n| claim" in blocks["ogas-claims"]
    assert blocks["ogas-headline"].startswith("*OGAS below Wanda")


def test_zeroshot_claim_reads_the_papers_tasks_only():
    """OGAS beats Wanda on BoolQ (one of the paper's Table 3 tasks) on every document and loses on
    ARC-Easy (not one of them): the claim reads the paper's task set only."""
    def zs(boolq, arc_easy):
        return {"tasks": {"boolq": {"per_doc": {"acc": boolq}}, "arc_easy": {"per_doc": {"acc": arc_easy}}}}
    f = pd.DataFrame([row("a", "wikitext2:test", "wanda", BASE, zeroshot=zs([0, 0, 0, 0] * 5, [1, 1, 1, 1] * 5)),
                      row("a", "wikitext2:test", "ogas", BASE, params=OGAS_A,
                          zeroshot=zs([1, 1, 1, 0] * 5, [0, 0, 0, 0] * 5))])
    f["data"] = "wikitext2"
    [c] = [c for c in ogas_claims(f, ["a"], 0.5, ["boolq", "arc_easy"], [], [])
           if c.claim.startswith("OGAS zero-shot mean")]
    assert c.verdict == "holds" and c.effect == pytest.approx(0.75) and "(boolq)" in c.measured and c.n == 20
    below = [c for c in ogas_claims(f, ["a"], 0.5, ["boolq", "arc_easy"], [], []) if c.claim.startswith("OGAS below")]
    assert below and all(c.paper_effect is None for c in below)  # attached by claims_table, not here


def test_gamma_bounds_count_each_end_separately(fake_grid):
    f = constructed_frame()
    j = f.index[f.method == "ogas-papr"][0]
    f.at[j, "extras"] = {"l.0.q_proj": {"gamma": 0.06, "gamma_evals": 4}, "l.1.q_proj": {"gamma": 0.07, "gamma_evals": 4},
                         "l.2.q_proj": {"gamma": 1.09, "gamma_evals": 4}}
    table, cap, _, _, *_ = gamma_bounds_table(f, fake_grid)
    t = table.set_index("variant")
    assert list(t.index) == ["OGAS", "OGAS PAPR-only (lambda 1)"]  # energy-only's cell has no searched layers here
    assert t.loc["OGAS", ["layers", "at the lower bound", "at the upper bound"]].tolist() == [2, 1, 0]
    assert t.loc["OGAS PAPR-only (lambda 1)", ["layers", "at the lower bound", "at the upper bound"]].tolist() == [3, 2, 1]
    assert "(0.05, 1.1) is the paper's own" in cap


def test_figure2_boundary_separates_channels_pruned_more_and_less_than_wanda():
    """On the paper's axes, OGAS's sparsity crosses the target on the line (1 - lam) x + lam y = I*:
    channels above it keep more weights than Wanda's uniform target, those below fewer."""
    from repro.methods.unstructured import channel_importance, channel_sparsity

    rng = np.random.default_rng(0)
    energy, papr = rng.lognormal(0, 1, 300), rng.lognormal(1, 0.5, 300)
    lam = 0.4
    s, _, _ = channel_sparsity(channel_importance(energy, papr, lam), 0.5, 0.5, 0.01, 0.6)
    ax = figure2_axes({"energy": energy, "peak_ratio": papr, "channel_sparsity": s}, lam, 0.5)
    above = (1 - lam) * ax["x"] + lam * ax["y"] > ax["boundary"] + 1e-9
    below = (1 - lam) * ax["x"] + lam * ax["y"] < ax["boundary"] - 1e-9
    assert (s[above] <= 0.5 + 1e-9).all() and (s[below] >= 0.5 - 1e-9).all()
    assert ax["less_pruned"] + ax["more_pruned"] <= 300 and ax["less_pruned"] > 0 and ax["more_pruned"] > 0
    xs, ys = ax["line"]
    np.testing.assert_allclose((1 - lam) * xs + lam * ys, ax["boundary"])


def with_zeroshot(f: pd.DataFrame) -> pd.DataFrame:
    """``f`` with zero-shot results on model a's WikiText-2 Wanda and OGAS cells (the paper's tasks)."""
    def zs(shift):
        return {"tasks": {t: {"per_doc": {"acc": [float((i + shift) % 3 == 0) for i in range(20)]}}
                          for t in PAPER_ZEROSHOT}}
    f = f.copy()
    for method, shift in (("wanda", 0), ("ogas", 1)):
        i = f.index[(f.model == "a") & (f.data == "wikitext2") & (f.method == method) & (f.sparsity == 0.5)
                    & (f.pattern == "unstructured")
                    & np.array([row_name(m, p) == method for m, p in zip(f.method, f.params)])]
        f.at[i[0], "zeroshot"] = zs(shift)
    return f


def test_every_claim_row_carries_the_paper_statement_it_tests(fake_grid):
    """Every Paper 2 claim row built on constructed records (perplexity, ablation, zero-shot mean and
    HellaSwag, the 80/90% and collapse rows of Figure 4, the flattest curve) gets a source; only the
    words issue 15 quotes from the paper are in quotation marks, everything else is a located paraphrase."""
    fake_grid.p = fake_grid.p.model_copy(update={"zeroshot_tasks": list(PAPER_ZEROSHOT)})
    f = with_zeroshot(constructed_frame())
    claims = claims_table(f, fake_grid).frame
    prefixes = ("OGAS below Wanda", "OGAS below RIA", "OGAS at or below SparseGPT", "Each single signal improves",
                "Each single signal is improved", "OGAS zero-shot mean", "OGAS beats Wanda on HellaSwag",
                "OGAS has the lowest perplexity", "Magnitude and SparseGPT collapse", "OGAS degrades least")
    assert all(claims.claim.str.startswith(p).any() for p in prefixes)  # every kind of row was produced
    assert (claims.source.str.len() > 0).all() and (shown(claims)["paper says"] != "—").all()
    quoted = {"HellaSwag +3.39% over Wanda", "OGAS has the lowest perplexity at 80% and 90%",
              "magnitude and SparseGPT collapse at high sparsity"}
    for source in set(claims.source):
        words = source.split('"')[1::2]
        assert set(words) <= quoted, source
        assert words or "paraphrase: " in source or source.startswith("beyond the paper: "), source
        assert any(w in source for w in ("Table", "Figure", "eq.", "beyond the paper")), source
    zs = claims[claims.claim.str.startswith("OGAS zero-shot mean")]
    assert len(zs) == 1 and "Table 4" in zs.source.iloc[0] and zs.n.iloc[0] == 80


def test_a_comparison_of_two_destroyed_models_is_uninformative():
    """Two cells both at or above a uniform guess over the vocabulary: the claim row says why it cannot
    inform, whatever its interval; one side below the bound, or no bound known, leaves it a verdict."""
    from repro.claims import UNINFORMATIVE, destroyed

    assert destroyed({"OGAS": 1200.0, "Wanda": 5000.0}, 1000).startswith("both models destroyed")
    assert destroyed({"OGAS": 999.0, "Wanda": 5000.0}, 1000) == ""
    assert destroyed({"OGAS": 2e3}, None) == ""
    hi = np.log(2000.0) + np.tile([0.0, 0.1, 0.2, 0.3], 5)  # a perplexity above the fake models' 1000 words
    f = pd.DataFrame([row("a", "wikitext2", "dense", BASE), row("a", "wikitext2", "wanda", hi),
                      row("a", "wikitext2", "ogas", hi - 0.05, params=OGAS_A),
                      row("a", "wikitext2", "ogas", BASE + 0.2, sparsity=0.7, params=OGAS_A)])
    claims = ogas_claims(f, ["a"], 0.5, [], [], [], uniform={"a": 1000})
    row_ = next(c for c in claims if c.claim.startswith("OGAS below Wanda"))
    assert row_.kind == UNINFORMATIVE and row_.why_uninformative.endswith("over the 1,000-word vocabulary")
    # without the uniform bound both sides are still above 10x the dense 15.6: a verdict, flagged
    unbounded = next(c for c in ogas_claims(f, ["a"], 0.5, [], [], []) if c.claim.startswith("OGAS below Wanda"))
    assert unbounded.kind != UNINFORMATIVE and unbounded.flag == "both beyond 10x dense"
    f.loc[f.method == "ogas", "window_nll"] = pd.Series([list(BASE + 1.0)] * 2, index=f.index[f.method == "ogas"])
    f.loc[f.method == "ogas", "ppl"] = float(np.exp(np.mean(BASE + 1.0)))  # OGAS at 2.7x dense: informative
    assert next(c for c in ogas_claims(f, ["a"], 0.5, [], [], [], uniform={"a": 1000})
                if c.claim.startswith("OGAS below Wanda")).kind != UNINFORMATIVE


def test_the_other_gamma_rule_is_its_own_row_and_both_directions_read_searched_over_fixed():
    """Model a's setting searches gamma (its variant fixes it), model b's fixes it (its variant searches): both
    rows read 'searched / fixed', so a searched gamma that helps gives a ratio below 1 on each model."""
    f = constructed_frame()
    f = pd.concat([f, pd.DataFrame([row("a", "wikitext2", "ogas", BASE + OGAS_NLL + 0.1, params={"lam": 0.4, "gamma": 0.2}),
                                    row("b", "wikitext2", "ogas", BASE - 0.2, params={"lam": 0.2, "gamma": "search"})])],
                  ignore_index=True)
    assert find(f, "a", "wikitext2", "ogas-gamma-fixed") is None  # no model's own rule known: not told apart
    f["own_gamma"] = ["search" if m == "a" else 0.2 for m in f.model]
    assert find(f, "a", "wikitext2", "ogas-gamma-fixed").params["gamma"] == 0.2
    assert find(f, "a", "wikitext2", "ogas").params == OGAS_A and find(f, "b", "wikitext2", "ogas").params["gamma"] == 0.2
    claims = [c for c in ogas_claims(f, ["a", "b"], 0.5, [], [], ["a"]) if c.claim.startswith("Searching gamma")]
    assert [c.setting for c in claims] == ["a, fixed gamma 0.2", "b, fixed gamma 0.2"]
    assert all(c.effect < 1 and c.verdict == "holds" for c in claims)  # searched is 0.1 nats better on both
    papr = next(c for c in ogas_claims(f, ["a"], 0.5, [], [], ["a"]) if c.claim.startswith("PAPR-only is comparable"))
    assert papr.threshold == pytest.approx(1.021) and papr.verdict == "does not hold"  # x1.105 on every window


def test_the_zero_shot_mean_is_also_tested_without_the_tasks_where_dense_is_at_chance():
    """Dense right on every document of three tasks and at chance (half right) on WinoGrande: a second row
    drops WinoGrande; each row counts the discordant documents and the sample the paper's +1.63 needs."""
    f = with_zeroshot(constructed_frame())
    docs = {t: [1.0] * 20 for t in PAPER_ZEROSHOT}
    docs["winogrande"] = [float(i % 2) for i in range(20)]
    dense = {"a": {"tasks": {t: {"per_doc": {"acc": d}} for t, d in docs.items()}}}
    rows = [c for c in ogas_claims(f, ["a"], 0.5, list(PAPER_ZEROSHOT), [], [], dense_zeroshot=dense)
            if c.claim.startswith("OGAS zero-shot mean")]
    assert [c.claim.split("(")[1] for c in rows] == ["the paper's four tasks)",
                                                     "those where the dense model is above the trivial answer)"]
    assert rows[0].n == 80 and rows[1].n == 60 and "winogrande" not in rows[1].measured
    assert "discordant (one side right); a paired test needs" in rows[0].measured
    assert len([c for c in ogas_claims(f, ["a"], 0.5, list(PAPER_ZEROSHOT), [], []) if
                c.claim.startswith("OGAS zero-shot mean")]) == 1  # no dense result: one row


def test_answer_bias_names_the_dense_models_favourite_answer_and_every_models_rate():
    from repro.papers.ogas.readings import answer_bias_reading
    from repro.papers.ogas.tables import answer_bias

    def res(pred):
        gold = [1] * 12 + [0] * 8  # 60% "yes"
        return {"tasks": {"boolq": {"per_doc": {"acc": [float(p == g) for p, g in zip(pred, gold)], "pred": pred,
                                                "gold": gold}}}}
    results = {"m": {"dense": res([1] * 19 + [0]), "wanda": res([1] * 10 + [0] * 10), "ogas": res([1] * 20)}}
    bias = answer_bias(results, ["boolq"]).frame
    assert bias.iloc[0][["answer", "gold share", "Dense", "Wanda", "OGAS"]].tolist() == ["yes", 0.6, 0.95, 0.5, 1.0]
    assert answer_bias_reading(bias) == ("- **m** leans to one answer: boolq 'yes' on 95% of documents (gold 60%; "
                                         "Wanda 50%, OGAS 100%).")
    old = {"m": {k: {"tasks": {"boolq": {"per_doc": {"acc": [1.0]}}}} for k in ("dense", "wanda")}}
    assert answer_bias(old, ["boolq"]).frame.empty  # records from before pred/gold were kept


def test_the_step_from_the_earlier_sample_to_the_whole_split_is_split_into_its_factors(fake_grid):
    from repro.papers.ogas.report import Report
    from repro.papers.ogas.tables import sample_vs_split

    f = constructed_frame()  # dense a on wikitext2: exp(2.75) = 15.64
    dense_a = float(np.exp(np.mean(BASE)))
    rec = lambda ppl, n, seqlen: {"result": {"ppl": ppl, "n_windows": n, "seqlen": seqlen}}  # noqa: E731
    refs = {"a": {"first short": rec(40.0, 32, 256), "spread short": rec(32.0, 32, 256),
                  "whole split": rec(dense_a / 1.1, 280, 1024)}}
    fake_grid.wt["a"].setup = fake_grid.wt["a"].setup.replace(seqlen=1024)
    table = sample_vs_split(f, fake_grid, refs)
    assert list(table.columns) == ["model", "first short (32 x 256)", "spread short (32 x 256)", "tables' sample",
                                   "whole split"]
    text = Report(None, fake_grid).sample_vs_split(f, refs).reading
    assert "(which articles: x0.800)" in text and f"(more context per token: x{dense_a / 32:.3f})" in text
    assert "(the sample / the split: x1.100)" in text and "over all 280 windows" in text


def test_two_calibration_sizes_are_two_experiments_sharing_the_uncalibrated_cells(run):
    """Section 2b: an experiment at another calibration size owns the dense and magnitude records (no calibration
    enters them) but not the calibrated ones, so Tables 1-2 at two sizes never mix; a calibrated cell records how
    much of its text the windows covered."""
    store, e = run
    big = PruneExperiment("tiny-llama", SMALL.replace(calib_nsamples=SMALL.calib_nsamples * 2), store, progress=False,
                          loaded=e.loaded)
    own = {r["config"]["method"] for r in store.records("prune-ppl") if big.owns(r["config"])}
    assert own == {"dense", "magnitude"}
    mine = {r["config"]["method"] for r in store.records("prune-ppl") if e.owns(r["config"])}
    assert {"wanda", "ogas"} <= mine
    wanda = next(r for r in store.records("prune-ppl") if r["config"]["method"] == "wanda"
                 and r["config"]["pattern"] == "unstructured")
    cover = wanda["result"]["calibration_tokens"]
    assert cover["drawn"] == SMALL.calib_nsamples * SMALL.calib_seqlen and 0 < cover["distinct"] <= cover["drawn"]
    assert cover == e.calibration_coverage()


def test_window_coverage_counts_distinct_positions():
    """Windows drawn from a text shorter than all of them together must overlap: distinct positions are then
    fewer than the tokens drawn; from a long text, a few short windows rarely overlap."""
    from repro.calib import window_coverage

    short = window_coverage(1_000, 64, 100, seed=0)
    assert short["drawn"] == 6_400 and short["distinct"] <= 1_000 and short["text"] == 1_000
    long = window_coverage(10_000_000, 4, 16, seed=0)
    assert long["distinct"] == long["drawn"] == 64


def test_the_paper_calibration_grid_asks_tables_1_2_at_its_own_size(run):
    """``paper_calib`` builds section 2b's grid: its Tables 1-2 cells read calibration windows of the paper's size
    and draws, the main grid's keep the profile's; without it the section asks nothing."""
    from repro.engines.plan import Plan

    _, e = run
    store = Store(None)
    size = {"calib_nsamples": 8, "calib_seqlen": SMALL.calib_seqlen}
    wt = {"tiny-llama": PruneExperiment("tiny-llama", SMALL, store, progress=False, loaded=e.loaded)}
    c4 = {"tiny-llama": PruneExperiment("tiny-llama", SMALL.replace(data="c4-sample:eval", calib_data="c4-sample:calib"),
                                        store, progress=False, loaded=e.loaded)}
    p = ogas_params({"tiny-llama": "mistral"}, methods=["magnitude", "wanda"])
    paper = OgasGrid({"tiny-llama": PruneExperiment("tiny-llama", SMALL.replace(**size), store, progress=False,
                                                    loaded=e.loaded)},
                     {"tiny-llama": PruneExperiment("tiny-llama", SMALL.replace(data="c4-sample:eval", **size),
                                                    store, progress=False, loaded=e.loaded)},
                     p.model_copy(update={**size, "c4_models": []}))
    g = OgasGrid(wt, c4, p, paper)
    plan = Plan()
    plan.visit(g.run_main_paper.ask())
    sizes = {c["calibration"]["nsamples"] for c in plan.configs.values() if "calibration" in c}
    assert sizes == {8} and {c["method"] for c in plan.configs.values()} == {"dense", "magnitude", "wanda"}
    assert OgasGrid(wt, c4, p).run_main_paper() is None


def test_tables_of_calibrated_methods_name_their_calibration(fake_grid):
    """Tables 1-2 and Table 5 say what their calibrated cells read: the text, samples x tokens, and how many draws
    each cell pools (one here; the pooled frame's n_draws where there are more)."""
    from repro.papers.ogas.grid import CELL
    from repro.report import pool_draws

    f = constructed_frame()
    _, cap, _, _, *_ = table12(f, fake_grid)
    s = next(iter(fake_grid.wt.values())).setup
    assert f"Calibration: {s.calib_data}" in cap and f"{s.calib_nsamples} x {s.calib_seqlen} tokens, one draw" in cap
    drawn = pd.concat([f.assign(draw=0), f.assign(draw=1)], ignore_index=True)
    drawn["drawn"] = [None if m in ("dense", "magnitude") else "calibration" for m in drawn.method]
    drawn["params_key"] = drawn.params.map(str)
    _, cap2, _, _, *_ = table12(pool_draws(drawn, CELL), fake_grid)
    assert "2 draws pooled (geometric mean over the draws)" in cap2
