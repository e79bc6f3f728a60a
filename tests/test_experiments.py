"""The experiment skeleton: setup validation, record keys that cannot silently mix, recompute,
cache accounting, and Paper 1's tables and claims from constructed records."""
import math
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
import torch

import repro.engines.base as base
from repro.claims import FAILS, HOLDS
from repro.claims import shown as shown_columns
from repro.engines.base import Experiment, Setup, check_keys, model_key
from repro.engines.heads import HeadExperiment
from repro.errors import ReproError
from repro.methods.heads import score_heads
from repro.papers.mpg.claims import downstream_claims, efficiency_claims, mpg_claims
from repro.papers.mpg.records import (
    CALIBRATED,
    EXTRA_METHODS,
    LABEL,
    PAPER_METHODS,
    Z_METHODS,
    curve,
    describe,
    draws,
    grid,
    main_cells,
    metrics,
    paired_vs,
    pool_draws,
    ppl_frame,
    rank_counts,
    readme_blocks,
    scores_frame,
)
from repro.papers.mpg.records import find as find_cell
from repro.papers.mpg.tables import Tables
from repro.store import PROTOCOL, Store, config_key

SMALL = Setup(data="wiki-sample", seqlen=32, max_windows=2, calib_data="wiki-sample", calib_nsamples=2, calib_seqlen=16)


@pytest.mark.parametrize("bad", [dict(batch_size=0), dict(seqlen=-1), dict(max_windows=0), dict(calib_nsamples=0),
                                 dict(eval_dtype="float8")])
def test_setup_rejects_bad_values(bad):
    with pytest.raises(ReproError):
        Setup(**bad)


def test_unknown_keys_are_errors():
    with pytest.raises(ReproError, match="unknown setting key.*'max_window'"):
        check_keys({"max_window": 3}, Setup.keys(), "setting")
    with pytest.raises(ReproError, match="unknown setup key"):
        SMALL.replace(windows=3)


def test_unknown_scorer_parameter_is_an_error():
    from helpers import build_tiny

    with pytest.raises(ReproError, match="takes z; got Z"):
        score_heads("mpg", build_tiny("tiny-llama"), Z=3)
    with pytest.raises(ReproError, match="no parameters; got z"):
        score_heads("magnitude-head", build_tiny("tiny-llama"), z=3)


def test_every_key_field_changes_the_key(monkeypatch, tmp_path):
    e = Experiment("tiny-llama", SMALL, Store(None), progress=False)
    k0 = config_key(e.base_config())
    for change in (dict(batch_size=2), dict(seqlen=16), dict(max_windows=1), dict(eval_dtype="bfloat16" if SMALL.eval_dtype == "float32" else "float32"),
                   dict(data="c4-sample")):
        e2 = Experiment("tiny-llama", SMALL.replace(**change), Store(None), progress=False)
        assert config_key(e2.base_config()) != k0, change
    assert config_key(Experiment("tiny-llama", SMALL, Store(None)).base_config()) == k0  # and is stable
    other_weights = Experiment("tiny-llama", SMALL, Store(None))
    other_weights.loaded.identity["seed"] = 1
    assert config_key(other_weights.base_config()) != k0
    monkeypatch.setattr(base, "PROTOCOL", base.PROTOCOL + 1)
    assert config_key(e.base_config()) != k0


def _word_tokenizer():
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.WordLevel({"<unk>": 0, "a": 1, "b": 2}, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    return PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>")


def test_local_folder_weights_hash_is_in_the_key(tmp_path):
    import torch
    import transformers as T

    from repro.assets import load_model

    cfg = T.LlamaConfig(vocab_size=64, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                        num_attention_heads=2, num_key_value_heads=1)
    _word_tokenizer().save_pretrained(tmp_path / "m")
    torch.manual_seed(0)
    T.LlamaForCausalLM(cfg).save_pretrained(tmp_path / "m")
    a = load_model(str(tmp_path / "m")).identity["weights_sha256"]
    torch.manual_seed(1)
    T.LlamaForCausalLM(cfg).save_pretrained(tmp_path / "m")
    b = load_model(str(tmp_path / "m")).identity["weights_sha256"]
    assert a and b and a != b


def test_non_causal_folder_is_a_clear_error(tmp_path):
    import transformers as T

    from repro.assets import load_model

    T.BertForMaskedLM(T.BertConfig(vocab_size=32, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                                   intermediate_size=16)).save_pretrained(tmp_path / "bert")
    assert load_model(str(tmp_path / "bert")).task == "masked-lm"  # loads, for pseudo-perplexity (repro.evaluate.mlm)
    with pytest.raises(ReproError, match="masked language model .* not a causal language model"):
        Experiment(str(tmp_path / "bert"), SMALL, Store(None), progress=False).loaded  # noqa: B018
    T.BertForSequenceClassification(T.BertConfig(vocab_size=32, hidden_size=16, num_hidden_layers=1,
                                                 num_attention_heads=2, intermediate_size=16)).save_pretrained(
        tmp_path / "cls")
    with pytest.raises(ReproError, match="neither a causal nor a masked language model"):
        load_model(str(tmp_path / "cls"))


def test_recompute_and_cache_summary(tmp_path):
    calls = []
    s = Store(tmp_path)
    s.run("x", {"a": 1}, lambda: calls.append(1) or {"v": 1})
    s2 = Store(tmp_path)
    s2.run("x", {"a": 1}, lambda: calls.append(2) or {"v": 2})
    assert calls == [1] and s2.cache_summary([("x", config_key({"a": 1}))]).startswith("1 of 1")
    s3 = Store(tmp_path, recompute=True)
    r = s3.run("x", {"a": 1}, lambda: calls.append(3) or {"v": 3})
    r2 = s3.run("x", {"a": 1}, lambda: calls.append(4) or {"v": 4})  # once per session, then reused
    assert calls == [1, 3] and r["result"] == r2["result"] == {"v": 3}
    assert s3.cache_summary([("x", config_key({"a": 1}))]).startswith("0 of 1")
    assert [rec["result"] for rec in Store(tmp_path).records("x")] == [{"v": 3}]


def test_memory_store_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    s = Store(None)
    s.run("x", {"a": 1}, lambda: {"v": 1})
    assert [r["result"] for r in s.records("x")] == [{"v": 1}] and list(tmp_path.iterdir()) == []


def test_norm_profile_is_recorded_and_read_without_the_model(tmp_path, monkeypatch):
    """The norm-profile figure's numbers are eq. 1's norms of the layer, recorded once; a second
    experiment on the same records reads them without loading the model."""
    from repro.methods.heads import norms

    e = HeadExperiment("tiny-llama", SMALL, Store(tmp_path), grad_nsamples=1, progress=False)
    rec = e.norm_profile(1)["result"]
    assert rec["o"] == norms(e.adapter.attention(1), "o").tolist() and set(rec) == set("qkvo")
    monkeypatch.setattr(base, "load_model", lambda *a, **k: pytest.fail("loaded the model"))
    again = HeadExperiment("tiny-llama", SMALL, Store(tmp_path), grad_nsamples=1, progress=False)
    assert again.norm_profile(1)["result"] == rec


def test_head_experiment_cells_and_frame(tmp_path):
    """Cells of a tiny run land in the frame; records of another protocol never do."""
    store = Store(tmp_path)
    e = HeadExperiment("tiny-llama", SMALL, store, grad_nsamples=1, progress=False)
    e.dense()
    e.cell("mpg", 0.25)
    e.cell("wanda-head", 0.25)
    frame = ppl_frame(store, {"tiny-llama": e})
    assert sorted(frame.method) == ["dense", "mpg", "wanda-head"]
    assert find_cell(frame, "tiny-llama", "mpg", 0.25).z == 2.0
    assert find_cell(frame, "tiny-llama", "wanda-head", 0.25).calibration["nsamples"] == 2
    old = {**e.base_config(), "protocol": 1, "method": "dense"}
    store.put("heads-ppl", old, {"ppl": 1.0, "ci95": None, "window_nll": [0.0], "n_windows": 1, "n_tokens": 1,
                                 "dtype": "bfloat16", "seqlen": 32})
    assert len(ppl_frame(store, {"tiny-llama": e})) == 3
    # gradient-head draws grad_nsamples windows, the others calib_nsamples; the key says which
    assert e.method_config("gradient-head")["calibration"]["nsamples"] == 1
    assert "z" not in e.method_config("wanda-head") and e.method_config("mp", z=2.5)["z"] == 2.5


def _frame(rows):
    """A pooled perplexity frame (as ppl_frame returns) of constructed cells."""
    return pool_draws(pd.DataFrame([{"key": ("heads-ppl", str(i)), "tie_break": "index", "tie_seed": None, "scale": "global",
                                       "z": r.get("z"), "sparsity": 0.0, "draw": 0, "ppl": math.exp(np.mean(r["nll"])),
                                       "ci95": None, "window_nll": r["nll"], **r} for i, r in enumerate(rows)]))


def test_tables_and_claims_from_constructed_records():
    w = np.tile([3.0, 3.5, 2.5, 4.0], 5)  # 20 windows: the fewest a paired bootstrap accepts
    rows = [dict(model="m", method="dense", sparsity=0.0, nll=w)]
    for sp, gap in ((0.25, 0.1), (0.5, 0.3)):
        rows += [dict(model="m", method="mpg", sparsity=sp, z=2.0, nll=w + gap),
                 dict(model="m", method="mp", sparsity=sp, z=2.0, nll=w + gap),          # identical selection
                 dict(model="m", method="wanda-head", sparsity=sp, nll=w + gap + 1.0),  # worse on every window
                 dict(model="m", method="gradient-head", sparsity=sp, nll=w + gap - 0.2 + np.tile([0.0, 0.01, 0.0, 0.02], 5)),
                 dict(model="m", method="sparsegpt-head", sparsity=sp, nll=w + 5), dict(model="m", method="hybrid",
                                                                                         sparsity=sp, nll=w + 4)]
    frame = _frame(rows)
    vals = grid(frame, "ppl", ["mpg", "wanda-head", "gradient-head"], ["m"], [0.25, 0.5])
    assert vals.loc["Dense", ("m", "25.0%")] == vals.loc["Dense", ("m", "50.0%")] == pytest.approx(math.exp(w.mean()))
    counts = rank_counts(vals.drop(index="Dense"), ["MP-G", "Wanda-Head", "Gradient-Head"])
    assert counts.loc["Gradient-Head", "best"] == 2 and counts.loc["MP-G", "second"] == 2
    p = paired_vs(frame, "m", "mpg", "wanda-head", 0.25)
    assert p.estimate == pytest.approx(math.exp(-1.0)) and p.n_better == 20
    claims = mpg_claims(frame, ["m"], [0.25, 0.5], [2.0], [], {"m": 3})

    def find(prefix, setting):
        (c,) = [c for c in claims if c.claim.startswith(prefix) and c.setting == setting]
        return c.verdict
    assert find("MP-G never collapses", "m") == HOLDS
    top2 = [c for c in claims if c.claim.startswith("MP-G ranks in the top two")]
    assert [c.verdict for c in top2] == [HOLDS, HOLDS]  # only Gradient-Head is better, by either count
    assert "as Table IV counts" in top2[0].measured and "paired" in top2[1].measured
    (firsts,) = [c for c in claims if c.claim.startswith("Gradient-Head has the most first places")]
    assert firsts.verdict == HOLDS and "Gradient-Head 2" in firsts.measured and "MP-G 0" in firsts.measured
    assert find("Calibration-free MP-G", "m, 25.0%") == FAILS  # Gradient-Head better on every window
    assert find("GQA-aware MP-G", "m (g = 3), 25.0%") == FAILS  # identical selection: not better


def test_collapse_random_seeds_and_identical_selections_in_the_claims():
    """"MP-G never collapses" is read as the paper states it, a finite perplexity in every configuration (issue 66: the
    paper's own MP-G cells pass 10x dense), the cells above 10x dense counted beside it; MP-G against Random reads
    every seed; MP-G and MP pruning the same heads is reported as identical, not as a verdict."""
    w = np.tile([3.0, 3.5, 2.5, 4.0], 5)
    heads = [[0, 1], [1, 0]]
    rows = [dict(model="m", method="dense", sparsity=0.0, nll=w),
            dict(model="m", method="mpg", sparsity=0.25, z=2.0, nll=w + 0.1, pruned=heads),
            dict(model="m", method="mp", sparsity=0.25, z=2.0, nll=w + 0.1, pruned=heads[::-1]),
            dict(model="m", method="mpg", sparsity=0.5, z=2.0, nll=w + 2.5, pruned=heads),  # x12 dense: collapsed
            dict(model="m", method="mp", sparsity=0.5, z=2.0, nll=w + 2.0, pruned=[[0, 0]])]
    rows += [dict(model="m", method="random", sparsity=0.25, draw=d, nll=w + 0.1 + 0.05 * (d - 1)) for d in range(3)]
    claims = mpg_claims(_frame(rows), ["m"], [0.25, 0.5], [2.0], [], {"m": 3})
    (collapse,) = [c for c in claims if c.claim.startswith("MP-G never collapses")]
    assert collapse.verdict == HOLDS and "0 of 2 MP-G cells not finite or at or above a uniform guess; 1 above 10x " \
        "dense" in collapse.measured
    inf = _frame([{**r, "nll": w + np.inf} if r.get("method") == "mpg" and r["sparsity"] == 0.5 else r for r in rows])
    (broken,) = [c for c in mpg_claims(inf, ["m"], [0.25, 0.5], [2.0], [], {"m": 3}) if c.claim.startswith("MP-G never")]
    assert broken.verdict == FAILS and broken.measured.startswith("1 of 2 MP-G cells not finite")
    guessing = mpg_claims(_frame(rows), ["m"], [0.25, 0.5], [2.0], [], {"m": 3}, uniform={"m": 200.0})  # x12: ~410
    (worse,) = [c for c in guessing if c.claim.startswith("MP-G never")]
    assert worse.verdict == FAILS and worse.measured.startswith("1 of 2 MP-G cells not finite or at or above a uniform "
                                                                "guess (200)")
    (rnd,) = [c for c in claims if c.claim.startswith("(beyond the paper) MP-G beats Random")]
    assert "3 seeds" in rnd.measured and rnd.effect == pytest.approx(1.0)  # the seeds' mean equals MP-G here
    assert rnd.ci[0] < 1 < rnd.ci[1]  # the seeds' spread makes it inconclusive, though every window ties the mean
    same, other = [c for c in claims if c.claim.startswith("GQA-aware MP-G")]
    assert same.kind == "uninformative" and "prune the same 2 heads" in same.why_uninformative
    assert other.kind == "decided"


def test_top_two_counted_by_point_estimate_and_paired_can_differ():
    """SparseGPT-Head beats MP-G by a hair that the windows cannot tell apart: MP-G is third by point
    estimate (Table IV's count) but no more than one method is significantly better (paired)."""
    w = np.tile([3.0, 3.5, 2.5, 4.0], 5)  # 20 windows: the fewest a paired bootstrap accepts
    rows = [dict(model="m", method="dense", sparsity=0.0, nll=w)]
    for sp in (0.25, 0.5):
        rows += [dict(model="m", method="mpg", sparsity=sp, z=2.0, nll=w + 0.1),
                 dict(model="m", method="gradient-head", sparsity=sp, nll=w - 0.1),
                 dict(model="m", method="sparsegpt-head", sparsity=sp, nll=w + 0.1 + np.tile([-0.3, 0.28, -0.3, 0.3], 5)),
                 dict(model="m", method="wanda-head", sparsity=sp, nll=w + 1), dict(model="m", method="hybrid",
                                                                                  sparsity=sp, nll=w + 2)]
    claims = mpg_claims(_frame(rows), ["m"], [0.25, 0.5], [2.0], [], {"m": 1})
    table4, paired = [c for c in claims if c.claim.startswith("MP-G ranks in the top two")]
    assert table4.verdict == FAILS and "in 0 of 2" in table4.measured
    (firsts,) = [c for c in claims if c.claim.startswith("Gradient-Head has the most first places")]
    assert firsts.verdict == HOLDS  # 2 first places against none
    assert paired.verdict == HOLDS and "in 2 of 2" in paired.measured


def test_method_lists_come_from_the_registry():
    """The paper's set, our baselines and the calibrated methods, in the order the tables show them."""
    assert PAPER_METHODS == ["mpg", "wanda-head", "sparsegpt-head", "gradient-head", "hybrid"]
    assert EXTRA_METHODS == ["mp", "magnitude-head", "random"]
    assert CALIBRATED == ["wanda-head", "sparsegpt-head", "gradient-head", "hybrid"]
    assert Z_METHODS == ["mpg", "mp"]
    assert LABEL["dense"] == "Dense" and LABEL["sparsegpt-head"] == "SparseGPT-Head"


def test_spread_windows_and_full_split_are_their_own_cells():
    e = Experiment("tiny-llama", SMALL, Store(None), progress=False)
    spread = Experiment("tiny-llama", SMALL.replace(spread=True), Store(None), progress=False)
    assert config_key(spread.base_config()) != config_key(e.base_config())
    assert "spread" not in e.base_config()  # records made before spread existed keep their keys
    assert not e.owns(spread.base_config()) and not spread.owns(e.base_config())  # same windows count, other windows
    full = spread.full_split()
    assert full.setup.max_windows is None and full.model is spread.model and "spread" not in full.base_config()
    assert full.address in {x.address for x in spread.variants()} and not e.variants()  # no full split unless spread
    assert "spread over the split" in spread.windows() and e.windows().startswith("first ")


def test_shorter_reference_windows_reconcile_an_earlier_sample():
    """reference_seqlen: the dense number also on windows of the earlier length, the first ones and spread ones."""
    e = Experiment("tiny-llama", SMALL.replace(spread=True, reference_seqlen=8), Store(None), progress=False)
    first, spread = e.short_windows(False), e.short_windows(True)
    assert (first.setup.seqlen, first.setup.spread, spread.setup.seqlen, spread.setup.spread) == (8, False, 8, True)
    assert "spread" not in first.base_config() and spread.base_config()["spread"] is True
    assert first.model is e.model and "reference_seqlen" not in e.base_config()  # not a key field
    assert {first.address, spread.address} <= {x.address for x in e.variants()}
    with pytest.raises(ReproError, match="reference_seqlen"):
        Experiment("tiny-llama", SMALL, Store(None), progress=False).short_windows(True)


def test_calibration_draws_are_seeded_and_keyed():
    e = HeadExperiment("tiny-llama", SMALL, Store(None), grad_nsamples=1, progress=False)
    a, b = e.method_calibration("wanda-head"), e.method_calibration("wanda-head", calib_seed=1)
    assert a.source["seed"] == SMALL.calib_seed and b.source["seed"] == 1
    assert not torch.equal(a.windows, b.windows)
    assert e.method_calibration("wanda-head", SMALL.calib_seed) is a  # the setup's seed is the default draw
    assert e.method_config("wanda-head", calib_seed=1) != e.method_config("wanda-head")
    assert e.method_config("mpg", calib_seed=1) == e.method_config("mpg")  # a calibration-free score draws nothing
    draw = {"protocol": PROTOCOL, "model": model_key(e.loaded.identity), **e.method_config("wanda-head", calib_seed=1)}
    assert e.owns(draw)  # another draw of this model's calibration corpus is still this model's record


def test_grid_draws_random_seeds_and_calibration_draws():
    store = Store(None)
    e = HeadExperiment("tiny-llama", SMALL, store, grad_nsamples=1, progress=False)
    recs = e.grid(["mpg", "wanda-head", "random"], [0.25], random_seeds=[0, 1, 2], calib_seeds=[0, 1])
    assert [r["config"]["method"] for r in recs] == ["mpg"] + ["wanda-head"] * 2 + ["random"] * 3
    frame = ppl_frame(store, {"tiny-llama": e}, pool=False)
    assert sorted(draws(frame, "tiny-llama", "random", 0.25).draw) == [0, 1, 2]
    assert list(draws(frame, "tiny-llama", "wanda-head", 0.25).draw) == [0, 1]
    assert find_cell(frame, "tiny-llama", "random", 0.25).draw == 0  # find: the first draw
    assert len({tuple(map(tuple, p)) for p in draws(frame, "tiny-llama", "random", 0.25).pruned}) == 3
    pooled = ppl_frame(store, {"tiny-llama": e})  # one row per cell, the draws inside it
    assert len(pooled) == 3
    rnd = find_cell(pooled, "tiny-llama", "random", 0.25)
    per_draw = np.array(list(draws(frame, "tiny-llama", "random", 0.25).window_nll))
    assert rnd.n_draws == 3 and rnd.ppl == pytest.approx(math.exp(per_draw.mean()))
    np.testing.assert_allclose(rnd.window_nll, per_draw.mean(0))
    assert find_cell(pooled, "tiny-llama", "mpg", 0.25).ppl == find_cell(frame, "tiny-llama", "mpg", 0.25).ppl
    assert sorted(rnd["keys"]) == sorted(draws(frame, "tiny-llama", "random", 0.25).key)


def test_grid_asks_every_cell_and_the_scores_frame_reads_only_this_models_records():
    store = Store(None)
    e = HeadExperiment("tiny-llama", SMALL, store, grad_nsamples=1, progress=False, tie_seeds=[0, 1])
    assert e.grid(["mpg", "wanda-head"]) == []  # no sparsity: the scores only
    scores = scores_frame(store, {"tiny-llama": e})
    assert sorted(scores.method) == ["mpg", "wanda-head"] and scores.scores.iloc[0].shape == e.shape
    # a score record names its calibration windows; telling whose it is draws none
    fresh = HeadExperiment("tiny-llama", SMALL, Store(None), grad_nsamples=1, progress=False)
    assert fresh.method_source("gradient-head") == e.method_calibration("gradient-head").source
    assert fresh.method_source("wanda-head")["nsamples"] == 2 and fresh.method_source("mpg") is None
    assert not fresh._calib
    other = {"protocol": PROTOCOL, "model": model_key(e.loaded.identity), "method": "wanda-head",
             "calibration": {**e.method_source("wanda-head"), "nsamples": 3}}
    store.put("heads-scores", other, {"scores": [[0.0]], "seconds": 1.0})
    store.status[("heads-scores", config_key(other))] = "cached"
    assert not e.owns(other) and HeadExperiment("tiny-llama", SMALL.replace(calib_nsamples=3), Store(None)).owns(other)
    assert len(scores_frame(store, {"tiny-llama": e})) == 2
    recs = e.grid(["mpg", "random"], [0.25, 0.5], dense=True)
    assert [r["config"]["method"] for r in recs] == ["dense", "mpg", "mpg", "random", "random"]
    assert len(e.grid(["mpg", "wanda-head"], [0.25], z_values=[1.5, 2.0])) == 3  # wanda-head takes no z
    assert [r["config"]["tie_seed"] for r in e.grid(["mpg"], [0.25], tie_break="random")] == [0, 1]
    frame = ppl_frame(store, {"tiny-llama": e})
    assert len(frame) == 9 and len(main_cells(frame)) == 6  # no z = 1.5, no random tie-break
    assert find_cell(frame, "tiny-llama", "mpg", 0.25, tie_seed=1).tie_break == "random"
    assert find_cell(frame, "tiny-llama", "mpg", 0.25, z=1.5).z == 1.5
    assert find_cell(frame, "tiny-llama", "mpg", 0.125) is None


def _scores(rows):
    return pd.DataFrame([{"key": ("heads-scores", str(i)), "z": None, "seed": None, "calibration": None,
                          "seconds": 0.0, **r, "scores": np.asarray(r["scores"], dtype=float)}
                         for i, r in enumerate(rows)])


def _fake_experiment(tie_seeds=(), group_size=3):
    structure = {"heads_per_layer": [group_size] * 3, "kv_heads_per_layer": [1] * 3}
    return SimpleNamespace(identity={"quantisation": "q4", "source": "hub"},
                           setup=SimpleNamespace(max_windows=2, eval_dtype="float32", seqlen=32),
                           data=SimpleNamespace(label="wiki:val"), feeding_note="", shape=(3, 2), tie_seeds=list(tie_seeds),
                           structure=structure, uniform_ppl=None, windows=lambda: "first 2 x 32 tokens")


def _tables(experiments, store=None):
    params = {"seqlen": 32, "calib_data": "cal", "calib_seqlen": 16, "data": "wiki:val"}
    return Tables(SimpleNamespace(store=store or Store(None), profile="t", params=params), experiments)


MODELS_CAPTION = "m; wiki:val, 2 x 32 tokens; float32; profile `t`"  # one line; the rest is in 'This run'


def test_scoring_cost_spread_and_ties_from_constructed_scores():
    scores = _scores([dict(model="m", method="mpg", z=2.0, seconds=0.12345, scores=[[0, 0], [5, 6], [0, 7]]),
                      dict(model="m", method="mpg", z=1.5, seconds=9.0, scores=[[1, 2], [3, 4], [5, 6]]),
                      dict(model="m", method="wanda-head", seconds=83.4756, calibration={"nsamples": 16, "seqlen": 512},
                           scores=[[1, 9], [2, 8], [3, 7]]),
                      dict(model="m", method="random", seed=0, scores=[[1, 2], [3, 4], [5, 6]])])
    T = _tables({"m": _fake_experiment(tie_seeds=[0, 1, 2]), "g": _fake_experiment()})
    cost = T.cost(scores, ["mpg", "wanda-head", "random"])
    table, cap, _, _, *_ = T.scoring_cost(cost)
    assert table.to_dict("list") == {"model": ["m"] * 3, "label": ["MP-G", "Wanda-Head", "Random"],
                                     "seconds": [0.123, 83.476, 0.0],
                                     "calibration": ["none", "16 x 512 tokens", "none"],
                                     "zero-score heads": [3, 0, 0]}  # z = 1.5's record is not the cost of z = 2
    assert cost.method.tolist() == ["mpg", "wanda-head", "random"] and cost.seconds[0] == 0.12345
    assert cap == ("Scoring cost: each score record's own seconds, as measured on the machine that computed it (not "
                   "this one), profile `t`.")  # never this machine's threads: the seconds are the records'
    spread, cap, _, _, *_ = T.spread(scores, ["mpg", "wanda-head"], 0.5, pd.DataFrame())  # g has no scores: no row
    assert spread[["method", "pruned", "layers emptied", "most from one layer", "emptied layers"]].values.tolist() == [
        ["MP-G", 3, 1, 2, "0"], ["Wanda-Head", 3, 0, 1, "-"]]
    assert cap == "**Pruned heads per layer at the lowest sparsity.** m, g; wiki:val, 2 x 32 tokens; float32; profile `t`."
    w = np.array([3.0, 3.5])
    frame = _frame([dict(model="m", method="mpg", sparsity=0.5, z=2.0, nll=w),
                    dict(model="m", method="mpg", sparsity=0.5, z=2.0, nll=w + 0.1, tie_break="random", tie_seed=0),
                    dict(model="m", method="mpg", sparsity=0.5, z=2.0, nll=w + 0.3, tie_break="random", tie_seed=1),
                    dict(model="m", method="mpg", sparsity=0.5, z=2.0, nll=w + 9, tie_break="random", tie_seed=5),
                    dict(model="g", method="mpg", sparsity=0.5, z=2.0, nll=w)])
    scores = pd.concat([scores, _scores([dict(model="g", method="mpg", z=2.0, scores=[[1, 2], [3, 4], [5, 6]])])])
    ties, cap, _, _, *_ = T.ties(frame, scores, [0.5])
    rnd = [math.exp(3.35), math.exp(3.55)]  # seed 5 is not one of m's tie_seeds; seed 2 was not run
    assert ties.iloc[0].to_dict() == {"model": "m", "sparsity": "50.0%", "pruned": 3, "zero-score heads": 3,
                                      "index tie-break": round(math.exp(3.25), 2), "random seeds": 2,
                                      "random tie-break mean": round(float(np.mean(rnd)), 2),
                                      "min": round(rnd[0], 2), "max": round(rnd[1], 2)}
    assert ties.iloc[1]["random seeds"] == 0 and np.isnan(ties.iloc[1]["random tie-break mean"])
    assert cap.startswith("**MP-G tie-break sensitivity.** m, g; wiki:val, 2 x 32 tokens")
    zt, cap, _, _, *_ = T.zero_ties(scores, ["mpg", "wanda-head"], [1 / 6, 0.5, 0.75])  # m's MP-G: 3 of 6 heads score 0
    assert zt[["model", "method", "heads cut", "heads scoring exactly 0", "decided by the tie-break"]].values.tolist() \
        == [["m", "MP-G", 1, 3, True], ["m", "MP-G", 3, 3, False], ["m", "MP-G", 4, 3, False]]  # no zeros: no row
    assert zt.iloc[0]["what decides"] == "1 of the 3 zero-score heads, by (layer, head) order"
    assert cap.startswith("**Where exact-zero scores decide a cell of Table I")


def test_tables_with_captions_from_constructed_cells():
    w = np.tile([3.0, 3.5, 2.5, 4.0], 5)  # 20 windows: the fewest a paired bootstrap accepts
    rows = [dict(model="m", method="dense", sparsity=0.0, nll=w)]
    gaps = {"mpg": 0.1, "mp": 0.1, "wanda-head": 1.1, "gradient-head": -0.09, "sparsegpt-head": 5,
            "hybrid": 4, "magnitude-head": 2, "random": 3}
    for sp, extra in ((0.25, 0.0), (0.5, 0.2)):
        rows += [dict(model="m", method=m, sparsity=sp, z=2.0 if m in ("mpg", "mp", "hybrid") else None,
                      nll=w + gap + extra) for m, gap in gaps.items()]
    rows += [dict(model="m", method=m, sparsity=0.5, z=z, nll=w + z / 10 + (m == "mp"))
             for m in ("mpg", "mp") for z in (1.5, 2.5)]
    rows += [dict(model="m", method="mpg", sparsity=0.5, z=2.0, nll=w + 7, tie_break="random", tie_seed=0)]
    frame = _frame(rows)
    main = main_cells(frame)
    assert len(main) == 17  # dense + 8 methods x 2 sparsities; no z sweep, no random tie-break
    T = _tables({"m": _fake_experiment()})
    methods = list(gaps)
    table1 = T.table1(main, methods, [0.25, 0.5])
    table1_frame, cap1, reading1, vals, *_ = table1
    assert reading1.startswith("- **m** (dense ")  # each table carries its reading (repro.papers.mpg.readings)
    assert vals.loc["MP-G", ("m", "50.0%")] == pytest.approx(math.exp(3.55))
    assert table1_frame.loc["Gradient-Head", "m @ 25.0%"].startswith("**")
    assert table1_frame.loc["MP", "m @ 25.0%"].startswith("<u>") and table1_frame.loc["MP-G", "m @ 25.0%"].startswith("<u>")
    assert not table1_frame.loc["Dense", "m @ 25.0%"].startswith(("**", "<u>"))  # the reference is not ranked
    assert cap1 == ("**Table I. WikiText-2 validation perplexity (lower is better) at 25/50% head sparsity.** "
                    f"{MODELS_CAPTION}; 17 of 17 cells read from cached records. The paper's models need the hub "
                    "and a GPU: `paper` profile, not run here.")
    assert curve(main, "m", "mpg", [0.125, 0.25])[0] == pytest.approx(math.exp(3.25))
    assert np.isnan(curve(main, "m", "mpg", [0.125, 0.25])[1])
    paired, cap, reading, _, *_ = T.paired(main, [0.25])
    assert reading.startswith("- **m**: MP-G is better in ")
    assert paired.vs.tolist() == ["Wanda-Head", "SparseGPT-Head", "Gradient-Head", "Hybrid", "MP", "Magnitude-Head",
                                  "Random"]
    assert paired.loc[0, "ppl ratio"] == pytest.approx(math.exp(-1.0)) and paired.loc[0, "windows better"] == "20/20"
    assert cap.startswith("**Paired comparisons: MP-G / other method perplexity ratio")
    table2, cap2, _, t2v, *_ = T.table2(frame, [1.5, 2.0, 2.5], [0.5])
    assert t2v.index.tolist() == [f"{m}, z = {z}" for m in ("MP", "MP-G") for z in (1.5, 2.0, 2.5)]
    assert t2v.columns.tolist() == ["m @ 50%"]
    assert t2v.loc["MP-G, z = 2.0", "m @ 50%"] == pytest.approx(math.exp(3.55))  # not the random tie-break
    assert t2v.loc["MP, z = 1.5", "m @ 50%"] == pytest.approx(math.exp(4.4))
    assert table2.loc["MP-G, z = 1.5", "m @ 50%"].startswith("**")
    assert cap2.startswith("**Table II. Perplexity of MP and MP-G for z in {1.5, 2.0, 2.5}.** " + MODELS_CAPTION)
    assert cap2.endswith("6 of 6 cells read from cached records.")
    table4 = T.table4(vals, methods)
    cap4 = table4.caption
    assert table4.frame.index.tolist() == ["MP-G", "Wanda-Head", "SparseGPT-Head", "Gradient-Head", "Hybrid"]
    assert table4.frame.loc["Gradient-Head", "best"] == 2 and table4.frame.loc["MP-G", "second"] == 2
    assert cap4.startswith("**Table IV. Best / second-best counts among the paper's methods over 2 columns")
    table4b, cap4b, _, _, *_ = T.table4b(vals, methods)
    assert table4b.to_dict("index") == {"MP": {"best": 0, "second": 2}, "Magnitude-Head": {"best": 0, "second": 0},
                                        "Random": {"best": 0, "second": 0}}
    assert "Counts for MP, Magnitude-Head and Random, each added alone" in cap4b
    assert T.table4b(vals, ["mpg", "random"])[0].index.tolist() == ["Random"]
    assert T.zeroshot_cells(main, ["m", "absent"], [0.25]) == {
        "m": [("dense", 0.0), ("mpg", 0.25), ("mp", 0.25), ("gradient-head", 0.25), ("sparsegpt-head", 0.25)]}
    claims_table = T.claims(frame, [0.25, 0.5], [1.5, 2.0, 2.5], [0.5])
    claims, cap = claims_table.frame, claims_table.caption
    shown = shown_columns(claims)
    assert shown.columns.tolist() == ["claim", "paper says", "setting", "measured", "verdict", "power", "n", "paper effect",
                                      "half-width"] and len(claims) == len(shown)
    z25 = claims[claims.claim.str.startswith("z = 2.5 rescues")].iloc[0]  # the paper's 7227 -> 282.8, attached
    assert z25["paper effect"] == pytest.approx(282.8 / 7227) and z25.n == 20
    assert "effect" in claims and cap.startswith("**Claims checked.** Profile `t`; models m on wiki:val")
    assert "m (g = 3), 25.0%" in shown.setting.tolist()  # the fake's group size reached the claims
    summary = T.summary(main, claims_table, table4)
    assert summary.startswith(f"- **Dense references.** m: {math.exp(3.25):.2f} (first 2 x 32 tokens) of wiki:val.")
    assert "Table IV counts: MP-G best 0 / second 2, Wanda-Head best 0 / second 0" in summary
    assert "On m at 25% the paired ratio is x1.000, MP-G better on 0 of 20 windows" in summary
    m = metrics(main, frame, claims, ["m"])
    assert m["dense_ppl"] == {"m": pytest.approx(math.exp(3.25))} and m["n_cells"] == len(frame) == 22
    assert m["n_claims"] == len(claims) and sum(sum(v.values()) if isinstance(v, dict) else v
                                                   for v in m["verdicts"].values()) == len(claims)
    blocks = readme_blocks(table1, claims_table)
    assert set(blocks) == {"mpg-headline", "mpg-table1", "mpg-claims"} and blocks["mpg-table1"].startswith(cap1)
    assert "| Dense " in blocks["mpg-table1"] and "\n| claim " in blocks["mpg-claims"]
    assert blocks["mpg-headline"].startswith("*Calibration-free MP-G matches or beats")


def test_zeroshot_and_efficiency_tables_from_constructed_records():
    def zs(key, method, **sp):
        return {"key": key, "config": {"model": {"name": "m"}, "method": method, "limit": 30, "dtype": "bfloat16",
                                       **sp},
                "result": {"tasks": {"sst2": {"metrics": {"acc": {"value": 0.5, "stderr": 0.1}}, "n": 30},
                                     "mrpc": {"metrics": {"acc": {"value": 0.7, "stderr": 0.1},
                                                          "f1": {"value": 0.6, "stderr": None}}, "n": 28}}}}
    store = Store(None)
    store.status[("heads-zeroshot", "k2")] = "computed"
    T = _tables({"m": _fake_experiment()}, store)
    table, cap, _, _, *_ = T.table3([zs("k1", "dense"), zs("k2", "mpg", sparsity=0.25)])
    assert table.loc[("m", "Dense", "0.0%"), "sst2"] == "0.500 ± 0.196"
    assert table.loc[("m", "MP-G", "25.0%"), "mrpc (F1)"] == "0.600"  # the paper's metric for MRPC, no stderr
    assert cap.startswith("**Table III analogue (not the paper's setting).** Zero-shot accuracy, MRPC in F1 as the "
                          "paper reports it (lm-eval task YAMLs, "
                          "validation splits, first 30 documents each; n per task: mrpc 28, sst2 30), bfloat16, "
                          "profile `t`;")
    assert cap.endswith("1 of 2 cells read from cached records.")
    assert T.table3([]) is None
    t = [0.10, 0.20]
    machine = {"cpu": "Xeon", "flags": ["avx2"], "fast_bf16": False, "cores": 4, "threads": 2, "dtype": "bfloat16"}
    rec = {"config": {"method": "mpg", "dtype": "bfloat16", "seqlen": 256, "repeats": 5, "batches": [1]},
           "result": {"machine": machine, "dense": {"mode": "dense", "sparsity": 0.0, "params": 2e6, "nonzero_params": 2e6,
                                "attention_flops": 100, "heads": 8, "prefill_b1": {"median_s": 0.12, "times_s": t}},
                      "removed 0.5": {"mode": "removed", "sparsity": 0.5, "params": 1.5e6, "nonzero_params": 1.4e6,
                                      "attention_flops": 60, "heads": 5, "n_pruned": 4,
                                      "prefill_b1": {"median_s": 0.11, "times_s": [x / 1.2 for x in t]}}}}
    eff, cap, _, _, *_ = T.efficiency({"m": rec})
    assert eff.to_dict("list") == {"model": ["m", "m"], "model state": ["dense", "removed 50%"], "heads": [8, 5],
                                   "params (M)": [2.0, 1.5], "nonzero params (M)": [2.0, 1.4],
                                   "attention FLOPs vs dense": [1.0, 0.6], "prefill b=1 (ms)": [120.0, 110.0],
                                   "speed-up b=1": [1.0, 1.2]}  # the claims' paired-by-round speed-up, not 120/110
    assert cap == ("**Efficiency: zeroed (Algorithm 1, shapes kept) against physically removed heads.** MP-G heads, "
                   "bfloat16, 256 tokens, median of 5 prefill passes timed round-robin on Xeon (AVX2, no fast bfloat16), "
                   "4 cores, 2 threads (where the record was timed: `repro run --retime` times it on this machine); "
                   "profile `t`.")  # the machine is the record's, not the reader's
    assert "not run" in T.efficiency({}).caption
    c = {x.setting for x in mpg_claims(_frame([]), [], [], [], [], {}, efficiency={"m": rec["result"]})}
    assert c == {"m, removed 50%", "m, removed 50%, batch 1"}


def test_describe_names_each_model():
    assert describe({"m": _fake_experiment()}) == "m: hub; L x H = 3 x 2, KV heads 1; eval wiki:val, first 2 x 32 tokens"


def test_efficiency_claims_use_paired_rounds():
    """The paper's quantities come from the zeroed model (zeroed heads counted as removed); physical
    removal is its own row beyond the paper, with the heads GQA padding keeps."""
    t = [0.10, 0.20, 0.15, 0.12, 0.18]
    eff = {"dense": {"params": 100, "nonzero_params": 100, "attention_flops": 100, "heads": 8,
                     "prefill_b1": {"times_s": t}},
           "zeroed 0.5": {"mode": "zeroed", "sparsity": 0.5, "params": 100, "nonzero_params": 90, "n_pruned": 4,
                          "attention_flops": 100, "heads": 8, "prefill_b1": {"times_s": [x * 1.001 for x in t]}},
           "removed 0.5": {"mode": "removed", "sparsity": 0.5, "params": 95, "nonzero_params": 94, "n_pruned": 4,
                           "attention_flops": 60, "heads": 5, "prefill_b1": {"times_s": [x / 1.2 for x in t]}}}
    c = {(x.claim, x.setting): x for x in efficiency_claims(eff, "m")}
    assert c[("Zeroing heads speeds up inference by at most 3.5%", "m, zeroed 50%, batch 1")].verdict == HOLDS
    assert c[("(beyond the paper) Physically removing the heads speeds up prefill", "m, removed 50%, batch 1")
             ].verdict == HOLDS
    params = c[("50% head sparsity removes 8-16% of the parameters", "m, zeroed 50%")]
    assert params.verdict == HOLDS and params.effect == pytest.approx(0.10)  # non-zero parameters of the zeroed model
    flops = c[("50% head sparsity halves attention FLOPs (at most x0.55)", "m, zeroed 50%")]
    assert flops.verdict == HOLDS and flops.effect == 0.5  # 4 of 8 heads zeroed, counted as removed
    removed = c[("(beyond the paper) Physical removal at 50% removes 8-16% of the parameters", "m, removed 50%")]
    assert removed.verdict == FAILS and "3 heads removed, 1 kept as zeros by GQA padding" in removed.measured
    assert c[("(beyond the paper) Physical removal at 50% halves attention FLOPs (at most x0.55)", "m, removed 50%")
             ].verdict == FAILS  # x0.60


def test_auto_dtype_resolves_before_keys(monkeypatch):
    """"auto" becomes the dtype that really runs, in the setup (and so in keys and captions)."""
    import repro.assets.models as M

    monkeypatch.setattr(M, "fast_bf16", lambda device=None: False)
    assert Setup(eval_dtype="auto").eval_dtype == "float32"
    monkeypatch.setattr(M, "fast_bf16", lambda device=None: True)
    assert Setup(eval_dtype="auto").eval_dtype == "bfloat16"
    assert Setup(eval_dtype="float16").eval_dtype == "float16"


def test_optimal_z_is_chosen_on_half_the_windows_and_tested_on_the_other():
    """Model a's z = 2.0 wins on its first two windows only (chance), z = 1.5 on the two it is tested
    on: chosen and tested on the same windows, "own best z is better" would hold; held out, it fails."""
    w = np.array([3.0, 3.2, 3.1, 3.3])
    rows = []
    for model, nll15, nll20 in (("a", w + [0.5, 0.5, 0.0, 0.0], w + [0.0, 0.0, 0.3, 0.3]),
                                ("b", w, w + 1.0)):
        rows += [dict(model=model, method="mpg", sparsity=0.5, z=1.5, nll=nll15),
                 dict(model=model, method="mpg", sparsity=0.5, z=2.0, nll=nll20)]
    claims = mpg_claims(_frame(rows), ["a", "b"], [0.5], [1.5, 2.0], [0.5], {"a": 1, "b": 1})
    z = {c.setting: c for c in claims if c.claim == "The optimal z is model-dependent"}
    assert "own best z=2.0 / another model's best z=1.5" in z["a, 50.0%"].measured
    assert z["a, 50.0%"].effect == pytest.approx(np.exp(0.3)) and z["a, 50.0%"].verdict == FAILS
    assert z["b, 50.0%"].verdict == HOLDS and "compared on the other half" in z["b, 50.0%"].measured


def test_downstream_claim_pairs_documents_across_tasks():
    """SparseGPT-Head right on every document where MP-G is wrong on 10 of 40: the claim holds
    against MP-G, paired over the pooled documents of both tasks; other sparsities stay apart."""
    def rec(method, sp, a, b):
        return {"config": {"model": {"name": "m"}, "method": method, "sparsity": sp},
                "result": {"tasks": {"sst2": {"per_doc": {"acc": a}}, "rte": {"per_doc": {"acc": b}}}}}
    ones = [1.0] * 20
    records = [rec("dense", 0.0, ones, ones), rec("sparsegpt-head", 0.25, ones, ones),
               rec("mpg", 0.25, [0.0] * 5 + [1.0] * 15, [0.0] * 5 + [1.0] * 15), rec("mpg", 0.5, ones, ones)]
    [c] = downstream_claims(records)
    assert c.setting == "m, 25.0%, vs MP-G" and c.verdict == HOLDS and c.n == 40
    assert c.effect == pytest.approx(25.0) and "over 40 paired documents" in c.measured


def test_calibration_draw_zero_is_not_the_setup_seed_unless_it_is():
    e = HeadExperiment("tiny-llama", SMALL.replace(calib_seed=5), Store(None), grad_nsamples=1, progress=False)
    recs = e.grid(["wanda-head"], [0.25], calib_seeds=[0, 5])
    assert sorted(r["config"]["calibration"]["seed"] for r in recs) == [0, 5]


def test_the_same_best_z_everywhere_is_decided_only_on_the_held_out_half():
    w = np.tile([3.0, 3.2, 3.1, 3.3], 2)  # 8 windows: the first 4 choose, the last 4 test
    noise = np.array([0, 0, 0, 0, 0.4, -0.4, 0.3, -0.3])
    rows = []
    for model, later in (("a", w + 0.5), ("b", w + 0.5 + noise - 0.5 * (np.arange(8) >= 4))):
        rows += [dict(model=model, method="mpg", sparsity=0.5, z=2.0, nll=w),
                 dict(model=model, method="mpg", sparsity=0.5, z=1.5, nll=later)]
    claims = mpg_claims(_frame(rows), ["a", "b"], [0.5], [1.5, 2.0], [0.5], {"a": 1, "b": 1})
    z = {c.setting: c for c in claims if c.claim == "The optimal z is model-dependent"}
    assert z["a, 50.0%"].verdict == FAILS and "best z = 2.0 on every model" in z["a, 50.0%"].measured
    assert z["b, 50.0%"].verdict == "inconclusive" and "not decided" in z["b, 50.0%"].measured


def test_a_first_place_counts_only_where_the_paired_interval_separates_it():
    """Gradient-Head best by a clear margin at 25% and by a hair the windows cannot tell apart at 50%: one first
    place and one setting too close to call, so "the most first places" is not decided by point estimates."""
    w = np.tile([3.0, 3.5, 2.5, 4.0], 5)
    rows = [dict(model="m", method="dense", sparsity=0.0, nll=w)]
    for sp, grad in ((0.25, w - 0.2), (0.5, w + 0.099 + np.tile([-0.3, 0.3, -0.3, 0.3], 5))):
        rows += [dict(model="m", method="mpg", sparsity=sp, z=2.0, nll=w + 0.1),
                 dict(model="m", method="gradient-head", sparsity=sp, nll=grad),
                 dict(model="m", method="sparsegpt-head", sparsity=sp, nll=w + 1),
                 dict(model="m", method="wanda-head", sparsity=sp, nll=w + 1.5),
                 dict(model="m", method="hybrid", sparsity=sp, nll=w + 2)]
    claims = mpg_claims(_frame(rows), ["m"], [0.25, 0.5], [2.0], [], {"m": 1})
    (firsts,) = [c for c in claims if c.claim.startswith("Gradient-Head has the most first places")]
    assert "Gradient-Head 1" in firsts.measured and "1 setting too close to call" in firsts.measured
    assert firsts.ci == (0.0, 2.0) and firsts.verdict == "inconclusive"


def test_the_remedy_row_sets_mp_g_against_the_best_calibrated_score_ranked_within_layers():
    """Beside the paper's "MP-G matches or beats the calibration-based scores", the remedy row compares MP-G with
    the best calibrated score of the layer-ranked cells (section 3d), paired over windows; without such cells it
    is absent."""
    from repro.papers.mpg.claims import REMEDY

    w = np.tile([3.0, 3.5, 2.5, 4.0], 5)
    rows = [dict(model="m", method="dense", sparsity=0.0, nll=w),
            dict(model="m", method="mpg", sparsity=0.25, z=2.0, nll=w + 0.2),
            dict(model="m", method="wanda-head", sparsity=0.25, nll=w + 3.0),  # collapsed, ranked globally
            dict(model="m", method="wanda-head", sparsity=0.25, scale="layer", nll=w + 0.1),
            dict(model="m", method="gradient-head", sparsity=0.25, scale="layer", nll=w + 0.15)]
    claims = mpg_claims(_frame(rows), ["m"], [0.25], [2.0], [], {"m": 1})
    (row,) = [c for c in claims if c.claim == REMEDY]
    assert "MP-G / Wanda-Head ranked within layers" in row.measured and row.verdict == FAILS
    assert row.effect == pytest.approx(math.exp(0.1))
    (paper,) = [c for c in claims if c.claim.startswith("Calibration-free MP-G matches")]
    assert paper.verdict == HOLDS  # against the globally ranked (collapsed) Wanda-Head the paper's row holds
    assert not [c for c in mpg_claims(_frame(rows[:3]), ["m"], [0.25], [2.0], [], {"m": 1}) if c.claim == REMEDY]


def test_tie_counts_per_threshold():
    from repro.papers.mpg.tables import tie_counts, tie_counts_reading

    scores = pd.DataFrame([{"model": "m", "method": "mpg", "z": z, "scores": np.array(s)}
                           for z, s in ((2.0, [[0.0, 0.0, 1.0], [0.0, 2.0, 2.0]]), (1.5, [[0.0, 0.5, 1.0], [3.0, 2.0, 4.0]]))])
    t = tie_counts(scores, ["m"])
    assert list(t.z) == [1.5, 2.0] and list(t["heads scoring exactly 0"]) == [1, 3]
    assert list(t["largest tie"]) == [1, 3] and t.heads.eq(6).all()
    assert "1 of 6 heads score exactly 0 at z = 1.5, 3 at z = 2" in tie_counts_reading(t)


def test_cells_above_a_uniform_guess_and_mp_against_mpg_by_the_layers_they_empty():
    """Section 4's connection of odd cells to their selections: the cells at or above a uniform guess with the
    layers they empty (and the layer they share), and an MP / MP-G pair where the side emptying fewer layers is
    the worse one."""
    from repro.papers.mpg.collapse import above_uniform, above_uniform_reading, mp_against_mpg, mp_against_mpg_reading

    w = np.tile([3.0, 3.5, 2.5, 4.0], 5)
    layer1, layer0 = [[1, 0], [1, 1]], [[0, 0], [0, 1]]
    rows = [dict(model="m", method="dense", sparsity=0.0, nll=w, pruned=None),
            dict(model="m", method="mpg", sparsity=0.5, z=2.5, nll=w + 12, pruned=layer1 + [[0, 0], [2, 0]]),  # above
            dict(model="m", method="mp", sparsity=0.5, z=2.5, nll=w + 1, pruned=layer1 + layer0),       # empties 2
            dict(model="m", method="wanda-head", sparsity=0.5, nll=w + 13, pruned=layer1 + [[2, 0]])]  # above uniform
    frame = _frame(rows)
    t = above_uniform(frame, ["m"], {"m": 2}, {"m": math.exp(w.mean() + 10)})
    assert sorted(t.method) == ["MP-G", "Wanda-Head"] and all(e == [1] for e in t["emptied layers"])
    assert "Layer 1 is emptied by both cells." in above_uniform_reading(t)
    pair = mp_against_mpg(frame, ["m"], {"m": 2}).iloc[0]
    assert pair["MP empties"] == [0, 1] and pair["MP-G empties"] == [1] and pair["fewer emptied, worse"]
    assert pair["heads in common"] == 3 and pair["MP / MP-G"] == pytest.approx(math.exp(-11))
    assert "the heads only MP-G cuts sit mostly in layer 2" in mp_against_mpg_reading(mp_against_mpg(frame, ["m"], {"m": 2}))
