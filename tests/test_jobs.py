"""Cells as jobs (repro.engines.plan, repro.jobs): the plan lists exactly the missing records,
a worker's death costs nothing but a retry, two processes never write one cell twice, and bad input
is one line and exit 2 with nothing written. (Each smoke notebook runs its plan, then renders
computing nothing: tests/test_notebooks.py.)"""
import json
import multiprocessing as mp
import time

import jobs_paper
import pytest
from jobs_paper import records as _records
from jobs_paper import untimed

from repro.cli import main
from repro.engines.base import Setup
from repro.engines.heads import HeadExperiment
from repro.engines.plan import Job, Plan
from repro.errors import ReproError
from repro.jobs import Context, notebook_params, run_notebook
from repro.store import Store, config_key

SMALL = Setup(data="wiki-sample", seqlen=32, max_windows=2, calib_data="wiki-sample", calib_nsamples=2, calib_seqlen=32)


def planned(*calls):
    """The plan of surveying ``calls`` (each a cell's or a group's :class:`repro.engines.plan.Call`)."""
    plan = Plan()
    for call in calls:
        plan.visit(call)
    return plan


def test_a_planned_cell_waits_for_the_scores_it_needs_and_computes_nothing(tmp_path):
    e = HeadExperiment("tiny-llama", SMALL, Store(tmp_path), progress=False)
    plan = planned(e.grid.ask(["mpg", "mp"], [0.25, 0.5], dense=True))
    assert [(j.call, j.args) for j in plan.ordered()] == [("dense", ()), ("scores", ("mpg", 2.0)),
                                                          ("scores", ("mp", 2.0))]
    assert plan.blocked == 4 and not plan.empty  # the cells wait for their scores: a later wave
    assert [p.parent.name for p in tmp_path.rglob("*.json")] == ["models"]  # planning wrote no record (a model card)
    for job in plan.ordered():
        getattr(e, job.call)(*job.args, **dict(job.kwargs))
    plan = planned(e.grid.ask(["mpg", "mp"], [0.25, 0.5], dense=True))
    assert [(j.call, j.args[:2]) for j in plan.ordered()] == [("cell", (m, s)) for m in ("mpg", "mp") for s in (0.25, 0.5)]
    assert plan.blocked == 0
    for job in plan.ordered():
        getattr(e, job.call)(*job.args, **dict(job.kwargs))
    assert planned(e.grid.ask(["mpg", "mp"], [0.25, 0.5], dense=True)).empty


def test_one_job_per_missing_record(tmp_path):
    """Asking twice for the same scores (the grid, then a cell's dependency) plans them once."""
    e = HeadExperiment("tiny-llama", SMALL, Store(tmp_path), progress=False)
    plan = planned(e.scores.ask("mpg"), e.scores.ask("mpg"), e.cell.ask("mpg", 0.25))
    assert len(plan.jobs) == 1 and plan.blocked == 1


def _compute_once(root, counter, start):
    store = Store(root)
    while time.time() < start:
        time.sleep(0.001)

    def compute():
        with open(counter, "a") as f:
            f.write("x")
        time.sleep(0.5)  # long enough for the other process to arrive while this one holds the cell
        return {"value": 1}
    return store.run("exp", {"cell": 1}, compute)["result"]


def test_two_processes_asking_for_one_cell_compute_it_once(tmp_path):
    ctx = mp.get_context("spawn")
    counter = tmp_path / "computed"
    start = time.time() + 3
    with ctx.Pool(2) as pool:
        results = pool.starmap(_compute_once, [(str(tmp_path / "r"), str(counter), start)] * 2)
    assert results == [{"value": 1}, {"value": 1}]
    assert counter.read_text() == "x"  # the second process waited, then read the first one's record
    records = list((tmp_path / "r" / "exp").glob("*.json"))
    assert [r.name for r in records] == [f"{config_key({'cell': 1})}.json"]
    assert json.loads(records[0].read_text())["result"] == {"value": 1}


def test_a_worker_killed_mid_cell_leaves_no_record_and_the_cell_is_retried(tmp_path, capsys):
    src = jobs_paper.write_notebook(tmp_path)
    marker = tmp_path / "killed"
    summary = run_notebook(src, jobs=2, overrides={"kill_marker": str(marker)})
    err = capsys.readouterr().err
    assert marker.exists()  # the dense cell really killed its worker
    assert "a worker died" in err
    root = tmp_path / "results"
    assert not [p for p in root.rglob("*") if p.name.endswith(".tmp")]  # no partial record
    records = _records(root)
    dense = [json.loads(t) for t in records.values() if json.loads(t)["config"].get("method") == "dense"]
    assert len(dense) == 1 and dense[0]["result"]["ppl"] > 0
    assert len(records) == 7 and summary["retries"] == 1  # dense + 2 scores + 4 cells, one wave retried
    ctx = Context(src, notebook_params(src, None, {"kill_marker": str(marker)}))
    assert ctx.plan() == []  # nothing missing


def test_local_jobs_write_the_records_one_process_writes(tmp_path):
    """The same grid with 2 workers and in-process: identical results (measured times aside)."""
    runs = {}
    for jobs in (1, 2):
        folder = tmp_path / f"j{jobs}"
        folder.mkdir()
        src = jobs_paper.write_notebook(folder)
        run_notebook(src, jobs=jobs, threads=1)
        runs[jobs] = {k: untimed(json.loads(v)["result"]) for k, v in _records(folder / "results").items()}
    assert runs[1] == runs[2] and len(runs[1]) == 7


def test_a_record_does_not_depend_on_the_cells_its_process_ran_before(tmp_path):
    """Two models whose tokenizers share a name ("bytes") but not a BOS rule, each cell computed in
    one process, in the plan's order and reversed: identical records. (A token memo keyed by the
    tokenizer's name gave tiny-llama Gemma's tokens when tiny-gemma3 came first: Ray workers, which
    take cells in any order, wrote records that differed from the local executor's.)"""
    from repro.evaluate import ppl

    runs = {}
    for order in ("planned", "reversed"):
        ppl._TOKEN_CACHE.clear()  # as in a fresh worker process
        folder = tmp_path / order
        folder.mkdir()
        src = jobs_paper.write_notebook(folder)
        ctx = Context(src, notebook_params(src, None, {"models": ["tiny-gemma3", "tiny-llama"], "methods": ["mp"]}))
        while jobs := ctx.plan():
            for job in jobs if order == "planned" else jobs[::-1]:
                ctx.run(job)
        runs[order] = {k: untimed(json.loads(v)["result"]) for k, v in _records(folder / "results").items()}
    assert runs["planned"] == runs["reversed"] and len(runs["planned"]) == 8


def cli(args) -> int:
    try:
        return main(args)
    except SystemExit as e:  # argparse's usage errors
        return e.code


@pytest.mark.parametrize("args, message", [
    (["--jobs", "0"], "--jobs: expected a positive integer"),
    (["--executor", "spark"], "--executor: invalid choice"),
    (["--address", "ray://nowhere:1"], "--address names a Ray cluster"),
    (["--profile", "nowhere.yaml"], "--profile: no such file"),
])
def test_bad_run_input_is_one_line_exit_2_and_writes_nothing(tmp_path, capsys, args, message):
    src = jobs_paper.write_notebook(tmp_path)
    (tmp_path / "p.yaml").write_text("profile: test\nnotebooks:\n  nb: {}\n")
    profile = [] if "--profile" in args else ["--profile", str(tmp_path / "p.yaml")]
    code = cli(["run", str(src), *profile, *args])
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and err.count("\n") == 1 and err.startswith("error: ") and message in err
    assert not (tmp_path / "results").exists()


def test_unreachable_ray_address_is_one_line(tmp_path, capsys):
    pytest.importorskip("ray")
    src = jobs_paper.write_notebook(tmp_path)
    (tmp_path / "p.yaml").write_text("profile: test\nnotebooks:\n  nb: {}\n")
    code = cli(["run", str(src), "--profile", str(tmp_path / "p.yaml"), "--executor", "ray", "--address", "127.0.0.1:1"])
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and err.count("\n") == 1 and "Ray cluster at 127.0.0.1:1" in err
    assert not (tmp_path / "results").exists()


def test_a_notebook_without_a_paper_module_cannot_be_planned(tmp_path):
    src = tmp_path / "plain.py"
    src.write_text(jobs_paper.NOTEBOOK.replace("#   repro:\n#     module: jobs_paper\n", ""))
    with pytest.raises(ReproError, match="names no paper module"):
        run_notebook(src)
    with pytest.raises(ReproError, match="unknown parameter"):
        run_notebook(jobs_paper.write_notebook(tmp_path), overrides={"modelz": []})


# ---- rendering from records needs no model ------------------------------------------------------

def no_loading(*args, **kwargs):
    raise AssertionError("a model was loaded")


def test_an_experiment_whose_records_exist_reads_them_without_loading_its_model(tmp_path, monkeypatch):
    import repro.engines.base as base

    e = HeadExperiment("tiny-llama", SMALL, Store(tmp_path), progress=False)  # loads, and keeps its card
    first = e.grid(["mpg", "wanda-head"], [0.25], dense=True)
    monkeypatch.setattr(base, "load_model", no_loading)
    fresh = HeadExperiment("tiny-llama", SMALL, Store(tmp_path), progress=False)
    assert fresh.grid(["mpg", "wanda-head"], [0.25], dense=True) == first  # read, never loaded
    assert fresh._loaded is None and fresh.shape == e.shape and fresh.identity == e.loaded.identity
    with pytest.raises(AssertionError, match="a model was loaded"):
        fresh.cell("mpg", 0.5)  # a missing cell needs the model


@pytest.mark.skipif(not (__import__("repro.assets.data", fromlist=["x"]).FASHION_MNIST_DIR
                         / "train-images-idx3-ubyte.gz").exists(), reason="dataset-fashion-mnist not installed")
def test_a_trained_vision_model_is_not_trained_or_loaded_to_render_its_records(tmp_path, monkeypatch):
    import repro.engines.base as base
    from repro.engines.bandit import VisionBanditExperiment

    kw = dict(n_calib=8, calib_batch_size=4, n_eval=50)
    e = VisionBanditExperiment("tiny-vit", Setup(), Store(tmp_path), progress=False, **kw)
    first = e.cell("greedy", ["head"], 0.25, seed=1, params={"budget": 2, "pool_size": 3})
    monkeypatch.setattr(base, "load_model", no_loading)
    fresh = VisionBanditExperiment("tiny-vit", Setup(), Store(tmp_path), progress=False, **kw)
    assert fresh.cell("greedy", ["head"], 0.25, seed=1, params={"budget": 2, "pool_size": 3}) == first
    assert fresh._loaded is None and fresh.k(["head"], 0.25) == e.k(["head"], 0.25)


def test_weights_that_differ_from_the_card_are_said_and_get_their_own_keys(tmp_path):
    store = Store(tmp_path)
    e = HeadExperiment("tiny-llama", SMALL, store, progress=False)
    key = e.base_config()["model"]
    card = store.model_card("tiny-llama")
    store.save_model_card("tiny-llama", {**card, "identity": {**card["identity"], "weights_sha256": "0" * 64}})
    fresh = HeadExperiment("tiny-llama", SMALL, store, progress=False)
    assert fresh.base_config()["model"]["weights_sha256"] == "0" * 64  # the card's, until the model loads
    with pytest.warns(UserWarning, match="differ from those its records were made with"):
        fresh.loaded  # noqa: B018
    assert fresh.base_config()["model"] == key and store.model_card("tiny-llama")["identity"] == card["identity"]


class _Grid:
    """A fake notebook: cells a and b; c needs b's record. ``plan()`` lists what is missing now."""

    def __init__(self):
        self.written, self.plans = set(), 0

    def plan(self):
        self.plans += 1
        names = [n for n in ("a", "b") if n not in self.written]
        if "b" in self.written and "c" not in self.written:
            names.append("c")
        return [Job("grid", "cell", (n,), (), ("exp", n), "m") for n in names]


class _Backend:
    """Two slots; finishes cells in the order of ``finish`` and writes their records."""

    def __init__(self, grid, finish):
        self.grid, self.finish, self.log = grid, list(finish), []

    def submit(self, job):
        self.log.append(("submit", job.args[0]))
        return job.args[0]

    def next_done(self, handles):
        name = next(n for n in self.finish if n in handles)
        self.finish.remove(name)
        self.grid.written.add(name)
        self.log.append(("done", name))
        return name, 1.0, None

    def close(self):
        pass


def test_a_cell_starts_as_soon_as_its_input_is_written_not_after_a_wave(capsys):
    """b finishes while a still runs: c (which needs b) is submitted before a finishes."""
    import sys

    from repro.jobs import Progress, compute

    grid = _Grid()
    backend = _Backend(grid, finish=["b", "c", "a"])
    summary = compute(grid, lambda: backend, 2, Progress(sys.stderr), sys.stderr)
    assert backend.log == [("submit", "a"), ("submit", "b"), ("done", "b"), ("submit", "c"), ("done", "c"),
                           ("done", "a")]
    assert summary == {"batches": [2, 1], "cells": 3, "retries": 0} and grid.written == {"a", "b", "c"}
