"""Paper 1's encoder rows (repro.engines.mlm, MpgGrid.encoder_rows): MP-G's head cells on a masked LM scored by
pseudo-perplexity, on the simulated hub's random RoBERTa (``<s> ... </s>`` tokenizer, ``<mask>``, 514 positions)."""
from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from repro.assets import load_model, load_text
from repro.calib import loss_gradients, masked_windows
from repro.engines.base import Setup
from repro.engines.estimate import PUBLISHED_PARAMS, cell_cost
from repro.engines.heads import HeadExperiment
from repro.engines.mlm import MASK_RATE, MlmHeadExperiment
from repro.errors import ReproError
from repro.evaluate.mlm import pseudo_perplexity
from repro.evaluate.ppl import tokenize
from repro.papers.mpg.report import Report
from repro.store import Store

from conftest import ROOT, load_tool

ROBERTA = "FacebookAI/roberta-base"
SETUP = Setup(data="wiki-sample", seqlen=16, max_windows=4, spread=True, eval_dtype="float32",
              calib_data="wiki-sample", calib_nsamples=4, calib_seqlen=16)
NB = ROOT / "notebooks" / "01_mpg_head_pruning.py"


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    cache = tmp_path_factory.mktemp("hf") / "hub"
    load_tool("simulated_hub").write(cache, [ROBERTA])
    return cache


def _offline(mp, cache) -> None:
    import huggingface_hub.constants as constants

    mp.setenv("HF_HUB_OFFLINE", "1")
    mp.setenv("HF_HUB_CACHE", str(cache))
    mp.setattr(constants, "HF_HUB_OFFLINE", True)
    mp.setattr(constants, "HF_HUB_CACHE", str(cache))


@pytest.fixture
def offline(hub, monkeypatch):
    _offline(monkeypatch, hub)
    return hub


@pytest.fixture(scope="module")
def roberta(hub):
    with pytest.MonkeyPatch.context() as mp:
        _offline(mp, hub)
        return load_model(ROBERTA)


def mlm(roberta, store, setup=SETUP, **kw) -> MlmHeadExperiment:
    return MlmHeadExperiment(ROBERTA, setup, store, grad_nsamples=kw.pop("grad_nsamples", 2), progress=False,
                             loaded=roberta, **kw)


def by_hand(roberta) -> torch.Tensor:
    """SETUP's evaluation windows cut here: the split's text tokens (the tokenizer's own <s> / </s> around it
    dropped), 4 windows of 16 spread evenly over all of them, each wrapped <s> ... </s>."""
    tok = roberta.tokenizer
    ids = tokenize(tok, load_text("wiki-sample"))
    assert (int(ids[0]), int(ids[-1])) == (tok.cls_token_id, tok.sep_token_id)  # the tokenizer wraps the split
    text = ids[1:-1]
    n = len(text) // 16
    rows = [text[16 * i:16 * (i + 1)] for i in np.linspace(0, n - 1, 4).round().astype(int)]
    return torch.stack([torch.cat([torch.tensor([tok.cls_token_id]), r, torch.tensor([tok.sep_token_id])])
                        for r in rows])


def test_dense_cell_is_the_pseudo_perplexity_of_the_wrapped_windows(roberta, tmp_path):
    e = mlm(roberta, Store(tmp_path))
    rec = e.dense()
    res = rec["result"]
    wins = by_hand(roberta)
    assert torch.equal(e.eval_windows(), wins)
    tok = roberta.tokenizer
    ref = pseudo_perplexity(roberta.model, wins, tok.mask_token_id, {tok.cls_token_id, tok.sep_token_id},
                            progress=False)
    assert res["ppl"] == pytest.approx(ref["pppl"], rel=1e-6)
    assert res["window_nll"] == pytest.approx(ref["sequence_nll"], rel=1e-6)
    assert set(res) == {"ppl", "ci95", "window_nll", "seqlen", "n_windows", "n_tokens", "dtype"}  # PPLResult's shape
    assert (res["seqlen"], res["n_windows"], res["n_tokens"], res["dtype"]) == (16, 4, 64, "float32")
    assert rec["config"]["windows"] == "<s>+text+</s>"
    assert [p.parent.name for p in tmp_path.rglob("*.json") if p.parent.name != "models"] == ["heads-mlm"]


def test_a_pruned_cell_differs_and_its_masks_are_undone(roberta, tmp_path):
    e = mlm(roberta, Store(tmp_path))
    dense = e.dense()["result"]
    cell = e.cell("mpg", 0.25)["result"]
    assert cell["n_pruned"] == 2 and len(cell["window_nll"]) == cell["n_windows"] == 4
    assert abs(cell["ppl"] - dense["ppl"]) > 1e-6 * dense["ppl"]
    again = e.ppl(e.eval_model())  # the evaluation copy after the cell: the dense model again
    assert again["window_nll"] == pytest.approx(dense["window_nll"], rel=1e-9)


def test_gradient_head_reads_the_masked_lm_loss_of_seeded_masks(roberta, tmp_path):
    e = mlm(roberta, Store(tmp_path))
    scores, _ = e.scores("gradient-head")
    assert scores.shape == (2, 4) and np.isfinite(scores).all() and np.ptp(scores) > 0
    cal = e.method_calibration("gradient-head")
    assert cal.source["mask_rate"] == MASK_RATE and cal.source["windows"] == "<s>+text+</s>"
    plain, masked = e.calibration(2).windows, cal.windows
    tok = roberta.tokenizer
    hit = masked["labels"] != -100
    assert hit.sum(1).tolist() == [round(MASK_RATE * 16)] * 2  # 15% of the 16 text positions of each window
    assert not hit[:, [0, -1]].any()  # <s> and </s> are never masked
    assert (masked["input_ids"][hit] == tok.mask_token_id).all() and torch.equal(masked["labels"][hit], plain[hit])
    assert torch.equal(masked["input_ids"][~hit], plain[~hit])
    again = mlm(roberta, Store(None)).method_calibration("gradient-head").windows  # a new experiment, the same draw
    assert all(torch.equal(again[k], masked[k]) for k in ("input_ids", "labels"))
    other = e.method_calibration("gradient-head", calib_seed=1).windows
    assert not torch.equal(other["labels"] != -100, hit) or not torch.equal(other["input_ids"], masked["input_ids"])


def test_masked_windows_are_seeded():
    wins = torch.arange(4, 4 + 3 * 22).view(3, 22)
    a, b, c = (masked_windows(wins, 1, {4}, 0.15, s) for s in (0, 0, 1))
    assert torch.equal(a["input_ids"], b["input_ids"]) and torch.equal(a["labels"], b["labels"])
    assert not torch.equal(a["labels"], c["labels"])
    assert int(a["labels"][0, 0]) == -100  # a special id is never masked


def test_the_gradient_branch_is_the_models_masked_lm_loss(roberta):
    model = roberta.model
    wins = masked_windows(torch.randint(4, 380, (2, 12), generator=torch.Generator().manual_seed(0)),
                          roberta.tokenizer.mask_token_id, seed=0)
    w = model.roberta.encoder.layer[0].attention.self.query.weight
    loss_gradients(model, wins, progress=False, only=[w])
    got = w.grad.clone()
    model.zero_grad(set_to_none=True)
    with torch.enable_grad():
        sum(model(input_ids=wins["input_ids"][i:i + 1], labels=wins["labels"][i:i + 1]).loss / 2
            for i in range(2)).backward()
    assert torch.allclose(got, w.grad, rtol=1e-5, atol=1e-8) and got.abs().sum() > 0
    model.zero_grad(set_to_none=True)


def test_each_class_refuses_the_other_kind_of_language_model(roberta, tmp_path):
    with pytest.raises(ReproError, match=r"tiny-llama is a causal-lm model \(LlamaForCausalLM\); MlmHeadExperiment "
                                         "evaluates masked-lm models"):
        MlmHeadExperiment("tiny-llama", SETUP, Store(None), progress=False)
    with pytest.raises(ReproError, match="masked language model .*not a causal language model.*mlm_models"):
        HeadExperiment(ROBERTA, SETUP, Store(None), progress=False, loaded=roberta)
    store = Store(tmp_path)
    mlm(roberta, store)  # writes the model card (task masked-lm)
    with pytest.raises(ReproError, match="masked language model"):  # refused from the card, nothing loaded
        HeadExperiment(ROBERTA, SETUP, store, progress=False)


def test_too_long_windows_are_refused_before_any_work(roberta, tmp_path, monkeypatch):
    store = Store(tmp_path)
    mlm(roberta, store, SETUP.replace(seqlen=510))  # 510 + <s> + </s> = 512 positions: fits
    with pytest.raises(ReproError, match=r"seqlen 511 .* = 513 positions exceeds .*512 .*at most 510 text tokens"):
        mlm(roberta, store, SETUP.replace(seqlen=511))
    monkeypatch.setenv("REPRO_NO_LOAD", "1")  # from the card alone: no load
    with pytest.raises(ReproError, match="seqlen 511"):
        MlmHeadExperiment(ROBERTA, SETUP.replace(seqlen=511), store, progress=False)
    monkeypatch.delenv("REPRO_NO_LOAD")
    e = mlm(roberta, store, SETUP.replace(calib_seqlen=511))
    with pytest.raises(ReproError, match="calib_seqlen 511"):
        e.scores("wanda-head")
    assert not [p for p in tmp_path.rglob("*.json") if p.parent.name != "models"]  # no record was written


def _context(tmp_path, mlm_models, **more):
    from repro.jobs import Context, notebook_params

    params = notebook_params(NB, None, {
        "results_dir": str(tmp_path / "results"), "figures_dir": str(tmp_path / "figures"), "update_readme": False,
        "models": [], "vision_models": [], "glue_tasks": [], "zeroshot_models": [], "efficiency_models": [],
        "data": "wiki-sample", "calib_data": "wiki-sample", "max_windows": 4, "calib_nsamples": 4, "grad_nsamples": 2,
        "mlm_models": mlm_models, "mlm_seqlen": 16, **more})
    return Context(NB, params)


@pytest.mark.parametrize("override, message", [
    ({"mlm_models": "FacebookAI/roberta-base"}, "parameter mlm_models must be a list"),
    ({"mlm_seqlen": 1}, "parameter mlm_seqlen"), ({"mlm_seqlen": 64.5}, "parameter mlm_seqlen")])
def test_bad_parameters_are_refused_before_any_load(tmp_path, monkeypatch, override, message):
    monkeypatch.setenv("REPRO_NO_LOAD", "1")
    with pytest.raises(ReproError, match=message):
        _context(tmp_path, **{"mlm_models": [], **override})


def test_no_masked_lm_plans_nothing_and_loads_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("REPRO_NO_LOAD", "1")
    ctx = _context(tmp_path, [])
    assert ctx.built.mlm == {} and ctx.plan() == []
    frame = ctx.built.encoder_rows()
    assert frame is not None and frame.empty
    session = SimpleNamespace(store=ctx.session.store, profile="test", params=ctx.session.params)
    assert Report(session, ctx.built).encoder_table(frame) is None


def test_the_notebook_plans_and_runs_the_encoder_rows(offline, tmp_path):
    ctx = _context(tmp_path, [ROBERTA], methods=["mpg", "gradient-head", "random"], sparsities=[0.25],
                   random_seeds=[0, 1])
    e = ctx.built.mlm[ROBERTA]
    assert (e.setup.seqlen, e.setup.calib_seqlen, e.setup.eval_dtype) == (16, 16, "float32")  # calib: min(512, 16)
    jobs = ctx.plan()
    calls = [(j.call, j.args, j.kwargs) for j in jobs]
    assert ("dense", (), ()) in calls and all(j.address == e.address for j in jobs)
    assert {c[1][0] for c in calls if c[0] == "scores"} == {"mpg", "gradient-head", "random"}
    assert ("scores", ("random", 2.0), (("seed", 1),)) in calls  # Random once per seed
    dense_job = next(j for j in jobs if j.call == "dense")  # priced: each window read once per masked token
    assert cell_cost(e, dense_job).fp32 == 2 * PUBLISHED_PARAMS[ROBERTA] * 4 * 16 * (16 + 2)
    for _ in range(3):  # what `repro run` does: plan, run, plan again
        for job in jobs:
            ctx.run(job)
        jobs = ctx.plan()
    assert jobs == []
    frame = ctx.built.encoder_rows()
    assert set(frame.method) == {"dense", "mpg", "gradient-head", "random"}
    assert int(frame[frame.method == "random"].n_draws.iloc[0]) == 2
    session = SimpleNamespace(store=ctx.session.store, profile="test", params=ctx.session.params)
    table, caption, _, _, *_ = Report(session, ctx.built).encoder_table(frame)
    dense = frame[frame.method == "dense"].ppl.iloc[0]
    column = table[f"{ROBERTA} @ 25.0%"]
    def shown(cell: str) -> str:  # the value of a marked cell, without its interval and mark
        return cell.removeprefix("**").removeprefix("<u>").split(" [")[0].removesuffix("**").removesuffix("</u>")
    assert shown(column["Dense"]) == f"{dense:.2f}" and list(table.index) == ["Dense", "MP-G", "Gradient-Head", "Random"]
    rnd = frame[frame.method == "random"].iloc[0]
    assert shown(column["Random"]) == f"{math.exp(np.mean(np.log(rnd.draws_ppl))):.2f}"
    for words in (ROBERTA, "4 x 16 tokens between <s> and </s>", "FP32", "wiki-sample",
                  "pseudo-perplexity (Salazar et al. 2020), lower is better", "first calibration draw only"):
        assert words in caption, words
    assert table.shape == (4, 1)
