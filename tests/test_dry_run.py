"""``repro run --dry-run`` (repro.jobs.dry_run, repro.engines.dry, repro.engines.estimate): the plan of a notebook
with nothing loaded, downloaded, computed or written, its counts those of the real plan, and a cost model whose
arithmetic is the stated one."""
import json
import re
from collections import Counter
from types import SimpleNamespace

import pytest

import repro.assets.models as models
import repro.engines.base as base
from repro.cli import main
from repro.engines import estimate as E
from repro.engines.dry import HUB_CONFIGS, DryRun, count_parameters, skeleton
from repro.jobs import Context, dry_run, notebook_params

from conftest import ROOT

SRC = ROOT / "notebooks/02_ogas_unstructured.py"
SMOKE = ROOT / "notebooks/profiles/smoke.yaml"


def files(folder):
    return {p: p.stat().st_mtime_ns for p in folder.rglob("*") if p.is_file()}


def refuse(*args, **kwargs):
    raise AssertionError("a model was loaded")


def table_counts(text: str) -> dict[tuple[str, str], tuple[int, int, int]]:
    """(model, cell) -> (done, to compute, waiting) from the printed table."""
    rows = re.findall(r"^(\S+)\s+\S+\s+(\w+)\s+\S+\s+(\d+)\s+(\d+)\s+(\d+)\s", text, re.M)
    return {(m, c): tuple(map(int, n)) for m, c, *n in rows}


def test_the_smoke_dry_run_loads_and_writes_nothing_and_counts_what_the_plan_holds(tmp_path, monkeypatch, capsys):
    overrides = {"results_dir": str(tmp_path / "results"), "figures_dir": str(tmp_path / "figures")}
    ctx = Context(SRC, notebook_params(SRC, SMOKE, overrides))  # loads the tiny models (their cards)
    first = ctx.plan()
    for job in first[:2]:
        ctx.run(job)
    survey = ctx.survey()
    before = files(tmp_path)
    monkeypatch.setattr(models, "load_model", refuse)
    monkeypatch.setattr(base, "load_model", refuse)

    summary = dry_run(SRC, SMOKE, overrides=overrides)
    printed = capsys.readouterr().err
    assert files(tmp_path) == before  # no record, card, lock or figure
    assert summary["cells"] == {"done": len(survey.done), "to_compute": len(survey.jobs), "waiting": len(survey.waiting)}
    assert summary["cells"]["done"] >= 2 and summary["cells"]["to_compute"] == len(first) - 2
    wanted = Counter((j.model, j.call) for j in survey.jobs.values())
    assert {k: v[1] for k, v in table_counts(printed).items() if v[1]} == dict(wanted)
    assert "an estimate from a stated cost model, not a measurement" in printed

    # a results folder without cards: stand-ins from the configs, the same jobs as the real first plan
    fresh = {**overrides, "results_dir": str(tmp_path / "fresh")}
    summary = dry_run(SRC, SMOKE, overrides=fresh)
    printed = capsys.readouterr().err
    assert not (tmp_path / "fresh").exists()
    assert summary["cells"]["to_compute"] == len(first) and summary["cells"]["done"] == 0
    assert {k: v[1] for k, v in table_counts(printed).items()} == dict(Counter((j.model, j.call) for j in first))
    assert "tiny-llama: no model card in the results folder: a stand-in" in printed


def test_bad_dry_run_input_is_one_line(tmp_path, capsys):
    def cli(args):
        try:
            return main(args)
        except SystemExit as e:  # argparse's usage errors
            return e.code

    for args, message in ((["--profile", str(tmp_path / "nowhere.yaml"), "--dry-run"], "--profile: no such file"),
                          (["--profile", str(SMOKE), "--tflops", "100"], "--tflops and --fp32-tflops go with --dry-run"),
                          (["--profile", str(SMOKE), "--dry-run", "--tflops", "0"], "--tflops: expected a positive number"),
                          (["--profile", str(SMOKE), "--dry-run", "--set", "search_dtype"], "--set: expected NAME=VALUE"),
                          (["--profile", str(SMOKE), "--dry-run", "--set", "serch_dtype=float32"],
                           "unknown parameter(s) serch_dtype"),
                          (["--profile", str(SMOKE), "--dry-run", "--set", "max_windows=-3"], "max_windows must be a positive")):
        code = cli(["run", str(SRC), *args])
        out, err = capsys.readouterr()
        assert code == 2 and out == "" and err.count("\n") == 1 and message in err, (args, err)


def test_a_set_parameter_reaches_the_plan(capsys):
    """``--set NAME=VALUE`` sets a parameter over the profile's, its value read as YAML (a list here)."""
    def cells(*extra):
        assert main(["run", str(SRC.parent / "03_bandit_pruning.py"), "--profile", str(SMOKE), "--dry-run", *extra]) == 0
        return json.loads(capsys.readouterr().out.strip().splitlines()[-1])["cells"]

    base, other = cells(), cells("--set", "search_dtype=bfloat16", "--set", "seeds=[1]")
    assert 0 < sum(other.values()) < sum(base.values())  # one seed of three: fewer cells


def test_the_cost_model_is_the_stated_arithmetic():
    n, tokens = 1e9, 1e6
    assert E.flops(n, tokens, "float16") == E.Cost(half=2 * n * tokens)
    assert E.flops(n, tokens, "float32", E.TRAINING) == E.Cost(fp32=6 * n * tokens)
    # 2e15 FLOPs at 100 TFLOPS: 20 s; 6e15 at 10 TFLOPS: 600 s
    assert E.Cost(half=2e15).hours(tflops=100, fp32_tflops=10) == pytest.approx(20 / 3600)
    assert E.Cost(half=2e15, fp32=6e15).hours(tflops=100, fp32_tflops=10) == pytest.approx(620 / 3600)

    # an evaluation: max_windows x seqlen, one more token a window where the family needs <bos>
    setup = SimpleNamespace(max_windows=4, seqlen=128, eval_dtype="float16")
    e = SimpleNamespace(setup=setup, bos=None)
    assert E.eval_tokens(e) == 4 * 128
    assert E.eval_tokens(SimpleNamespace(setup=setup, bos=2)) == 4 * 129
    # the whole split: its characters over the vocabulary's characters per token, whole windows only
    whole = SimpleNamespace(max_windows=None, seqlen=100)
    data = SimpleNamespace(rows=["x" * 4400 * 3], text=lambda: "x" * 4400 * 3, name="d", split="s")
    e = SimpleNamespace(setup=whole, bos=None, data=data, structure={"vocab_size": 50257})
    assert E.eval_tokens(e) == 3000 // 100 * 100


def test_a_search_is_priced_by_its_own_parameters():
    """k steps of budget paired evaluations (batches_per_eval mini-batches each) plus a baseline pass over
    the mini-batches after each join, to the largest k of the ratios one run serves."""
    ks = {0.1: 5, 0.2: 10}
    e = SimpleNamespace(search_dtype_for=lambda m: "float32",
                        select_config=lambda m, kinds, r, seed, params: {"k": ks[r], "params": {
                            "budget": 32, "batches_per_eval": 2, "pool_size": 48}})
    p = dict(method="thompson", kinds=["head"], ratio=0.1, ratios=(0.1, 0.2), seed=1, params=None)
    forwards = 10 * 32 * 2 + 10 * 8
    assert E._search(e, SimpleNamespace(**p), n=1e6, batch_tokens=1024, n_batches=8) == E.Cost(
        fp32=2 * 1e6 * forwards * 1024)
    assert E._search(e, SimpleNamespace(**{**p, "method": "magnitude"}), 1e6, 1024, 8) == E.Cost()  # weights only
    taylor = E._search(e, SimpleNamespace(**{**p, "method": "taylor"}), 1e6, 1024, 8)  # one pass with gradients
    assert taylor == E.Cost(fp32=6 * 1e6 * 8 * 1024)


def test_a_glue_fold_is_priced_by_its_recipe_and_scorings():
    """Fine-tuning (6 N per token, ``epochs`` over the other folds), calibration, and one held-out forward for the
    dense model and each scoring at each sparsity; an example's tokens capped at the recipe's ``max_length``."""
    from repro.assets.glue import Recipe

    docs, _, per = E.TASKS["rte"]
    e = SimpleNamespace(task="rte", k=5, recipe=Recipe(epochs=10, max_length=64), n_calib=8, grad_nsamples=4,
                        sparsities=[0.25, 0.5], _scorings=lambda: [("mpg", {}), ("random", {"seed": 0})])
    tokens = min(per, 64)
    cost = E._glue_cell(e, "fold", None, n=1e6)
    assert cost == E.Cost(fp32=6e6 * 10 * docs * 4 / 5 * tokens + 2e6 * 8 * tokens + 6e6 * 4 * tokens
                          + 2e6 * (1 + 2 * 2) * docs / 5 * tokens)
    assert E._glue_cell(SimpleNamespace(**{**vars(e), "task": "toy"}), "fold", None, 1e6) is None  # unpriced


def test_an_unpriced_cell_counts_as_unpriced_never_as_free(monkeypatch):
    """A cell the cost model cannot price is reported as such: its 0 FLOPs are not an estimate of 0 s."""
    job = SimpleNamespace(address="a", record=None)
    plan = SimpleNamespace(jobs={"j": job}, waiting={}, configs={})
    monkeypatch.setattr(E, "cell_cost", lambda e, j: E.Cost(unknown=1))
    est = E.local_seconds(plan, {"a": None}, None, {"float32": 100.0}, {"float32": 100.0})
    assert (est["unpriced"], est["modelled"], est["seconds"]) == (1, 0, 0.0)


@pytest.mark.parametrize("hub_id", list(HUB_CONFIGS))
def test_a_stand_in_has_the_published_parameter_count(hub_id):
    model, source = skeleton(hub_id)
    assert "published config.json" in source
    assert count_parameters(model) == pytest.approx(E.PUBLISHED_PARAMS[hub_id], rel=0.01)
    card = DryRun().card(hub_id)
    task = "image-classification" if "224" in hub_id else "masked-lm" if "roberta" in hub_id else "causal-lm"
    assert card["identity"]["standin"] and card["task"] == task
    assert card["structure"]["n_layers"] == len(card["structure"]["heads_per_layer"]) > 0
