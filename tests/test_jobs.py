"""Cells as jobs (repro.engines.plan, repro.jobs): the plan lists exactly the missing records,
a worker's death costs nothing but a retry, two processes never write one cell twice, and bad input
is one line and exit 2 with nothing written. (Each smoke notebook runs its plan, then renders
computing nothing: tests/test_notebooks.py.)"""
import json
import multiprocessing as mp
import time
from pathlib import Path

import jobs_paper
import pytest

from repro.cli import main
from repro.engines.base import Setup
from repro.engines.heads import HeadExperiment
from repro.engines.plan import Job, Plan
from repro.errors import ReproError
from repro.jobs import Context, notebook_params, run_notebook
from repro.store import Store, config_key

from conftest import ROOT

SMALL = Setup(data="wiki-sample", seqlen=32, max_windows=2, calib_data="wiki-sample", calib_nsamples=2, calib_seqlen=32)


def planned(e, ask):
    e.store.plan = Plan()
    try:
        ask()
        return e.store.plan
    finally:
        e.store.plan = None


def test_a_planned_cell_waits_for_the_scores_it_needs_and_computes_nothing(tmp_path):
    e = HeadExperiment("tiny-llama", SMALL, Store(tmp_path), progress=False)
    plan = planned(e, lambda: e.grid(["mpg", "mp"], [0.25, 0.5], dense=True))
    assert [(j.call, j.args) for j in plan.ordered()] == [("dense", ()), ("scores", ("mpg", 2.0)),
                                                          ("scores", ("mp", 2.0))]
    assert plan.blocked == 4 and not plan.empty  # the cells wait for their scores: a later wave
    assert [p.parent.name for p in tmp_path.rglob("*.json")] == ["models"]  # planning wrote no record (a model card)
    for job in plan.ordered():
        getattr(e, job.call)(*job.args, **dict(job.kwargs))
    plan = planned(e, lambda: e.grid(["mpg", "mp"], [0.25, 0.5], dense=True))
    assert [(j.call, j.args[:2]) for j in plan.ordered()] == [("cell", (m, s)) for m in ("mpg", "mp") for s in (0.25, 0.5)]
    assert plan.blocked == 0
    for job in plan.ordered():
        getattr(e, job.call)(*job.args, **dict(job.kwargs))
    assert planned(e, lambda: e.grid(["mpg", "mp"], [0.25, 0.5], dense=True)).empty


def test_one_job_per_missing_record(tmp_path):
    """Asking twice for the same scores (the grid, then a cell's dependency) plans them once."""
    e = HeadExperiment("tiny-llama", SMALL, Store(tmp_path), progress=False)
    plan = planned(e, lambda: (e.scores("mpg"), e.scores("mpg"), e.cell("mpg", 0.25)))
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


def _records(root: Path) -> dict:
    """Every record under ``root`` (model cards aside)."""
    return {p.relative_to(root): p.read_text() for p in root.rglob("*.json") if p.parent.name != "models"}


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


def untimed(x):
    """A record's result without its measured times (what differs between two runs of one cell)."""
    if isinstance(x, dict):
        return {k: untimed(v) for k, v in x.items() if "seconds" not in k}
    return [untimed(v) for v in x] if isinstance(x, list) else x


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
    (tmp_path / "p.yaml").write_text("profile: test\n")
    profile = [] if "--profile" in args else ["--profile", str(tmp_path / "p.yaml")]
    code = cli(["run", str(src), *profile, *args])
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and err.count("\n") == 1 and err.startswith("error: ") and message in err
    assert not (tmp_path / "results").exists()


def test_unreachable_ray_address_is_one_line(tmp_path, capsys):
    pytest.importorskip("ray")
    src = jobs_paper.write_notebook(tmp_path)
    (tmp_path / "p.yaml").write_text("profile: test\n")
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


def test_ray_retries_a_killed_worker_and_writes_the_local_executors_records(tmp_path, capsys):
    """On a local Ray instance: the kill-once grid completes (Ray retries the task whose worker died),
    leaves no partial record, and its records equal the local executor's (measured times aside)."""
    pytest.importorskip("ray")
    import ray

    runs = {}
    try:
        for executor in ("ray", "local"):
            folder = tmp_path / executor
            folder.mkdir()
            src = jobs_paper.write_notebook(folder)
            marker = folder / "killed"
            run_notebook(src, jobs=2, executor=executor, threads=1, overrides={"kill_marker": str(marker)})
            assert marker.exists()
            assert not [p for p in (folder / "results").rglob("*") if p.name.endswith(".tmp")]
            runs[executor] = {k: untimed(json.loads(v)["result"]) for k, v in _records(folder / "results").items()}
    finally:
        ray.shutdown()
    assert runs["ray"] == runs["local"] and len(runs["ray"]) == 7


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


@pytest.mark.parametrize("jobs", [1, 2])
def test_ctrl_c_is_one_line_exit_130_and_loses_nothing(tmp_path, jobs):
    """Ctrl-C of `repro run` (smoke notebook 1): one line saying how many cells were written, exit status
    130, no traceback, no worker left, every record whole; the rerun plans only what is still missing."""
    import json
    import signal
    import subprocess
    import sys
    import time

    profile = tmp_path / "p.yaml"
    smoke = (ROOT / "notebooks/profiles/smoke.yaml").read_text()
    profile.write_text(smoke.replace('results_dir: "../.cache/smoke/results"', f'results_dir: "{tmp_path / "results"}"'))
    cmd = [sys.executable, "-m", "repro", "run", str(ROOT / "notebooks/01_mpg_head_pruning.py"), "--profile",
           str(profile), "--jobs", str(jobs), "--threads", "1"]
    # a shell's background job inherits SIGINT ignored (and Python then never raises KeyboardInterrupt):
    # give the run the default disposition, as a terminal's foreground command has
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    records = tmp_path / "results"
    deadline = time.time() + 300
    while time.time() < deadline and len(list(records.glob("*/*.json"))) < 3:  # a few cells done: mid-run
        time.sleep(0.5)
    children = subprocess.run(["pgrep", "-P", str(proc.pid)], capture_output=True, text=True).stdout.split()
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err[-2000:]
    assert "Traceback" not in err, err[-3000:]
    last = err.strip().splitlines()[-1]
    assert last.startswith("interrupted: ") and "a rerun resumes" in last, last
    for p in records.glob("*/*.json"):
        json.loads(p.read_text())  # whole records only
    def alive():
        out = {}
        for pid in children:
            try:
                out[pid] = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()[:200]
            except OSError:
                pass
        return out
    for _ in range(20):  # multiprocessing's own helpers end once the driver is gone
        if not alive():
            break
        time.sleep(0.25)
    assert not alive(), f"process(es) outlived the interrupt: {alive()}"


def test_ctrl_c_while_a_worker_starts_comes_after_the_start_and_the_worker_inherits_it_blocked():
    """A SIGINT in the middle of starting a spawned worker is raised once the start is complete (an
    interrupt between spawning the child and writing its preparation data left it reading an empty
    pipe: an EOFError traceback, CI of stop 35), and the child is born with SIGINT blocked, so a
    terminal's Ctrl-C to the process group cannot raise in it before its initializer ignores it."""
    import os
    import signal
    from concurrent.futures import ProcessPoolExecutor

    from repro.jobs import sigint_deferred

    steps = []
    with pytest.raises(KeyboardInterrupt):
        with sigint_deferred():
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.05)  # without the deferral, KeyboardInterrupt is raised here
            steps.append("started")
    assert steps == ["started"]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # handler and mask restored
    assert signal.SIGINT not in signal.pthread_sigmask(signal.SIG_BLOCK, [])

    with ProcessPoolExecutor(1, mp_context=mp.get_context("spawn")) as pool:
        with sigint_deferred():
            child_mask = pool.submit(signal.pthread_sigmask, signal.SIG_BLOCK, [])
        assert signal.SIGINT in child_mask.result(timeout=60)
