"""Plan, run, render: a paper notebook's cells computed as independent jobs.

``python -m repro run NOTEBOOK --profile P --jobs N`` builds the notebook's experiments from its
parameters (the parameters cell, then the profile), *plans* its grid (the paper module's
``plan``: every cell the notebook asks for, by the notebook's own calls, see
:mod:`repro.experiments.plan`), computes the missing records in ``N`` worker processes, and plans
again until nothing is missing (a cell that needs another cell's record, or whose existence
depends on other cells' values, joins a later wave). The notebook then renders from records
(``python -m repro notebook``); opened interactively it still computes what is missing inline.

Which paper module plans a notebook: its metadata ``repro: {module: ...}`` (the jupytext header).

Workers are spawned processes, each with ``threads`` torch threads (default: the cores shared
out), each building the notebook's experiments once and keeping its models loaded between cells
(jobs are ordered by model). Cells that time something (``@plan.cell(exclusive=True)``:
efficiency, removal) run afterwards in this process, one at a time, with torch's own thread count,
as the notebook would run them. A record is written atomically under a per-cell lock
(:class:`repro.store.Store`), so two workers never write one cell twice, and a worker killed
mid-cell leaves no record: the wave is planned again and the cell retried.

``executor="ray"``: the same jobs as Ray tasks (``pip install '.[cluster]'``), see :func:`run_ray`.
"""
from __future__ import annotations

import importlib
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

from repro.errors import ReproError, UnknownNameError
from repro.experiments.base import Experiment
from repro.experiments.plan import Job, Plan

EXECUTORS = ("local", "ray")
PATH_PARAMS = ("results_dir", "figures_dir", "readme")  # relative to the notebook's folder, as papermill runs it


def notebook_params(source: str | Path, profile: str | Path | None = None, overrides: dict | None = None) -> dict:
    """The parameters a notebook runs with: its parameters cell's literal values, then the
    profile's (checked against the declared names, as :func:`repro.notebooks.execute` does), then
    ``overrides``; relative paths resolved against the notebook's folder."""
    from repro.notebooks import declared_parameters, default_parameters, load_profile, read_source

    nb = read_source(source)
    params = default_parameters(nb)
    if profile:
        params.update(load_profile(profile, nb, Path(source).stem))
    params.update(overrides or {})
    unknown = sorted(set(params) - declared_parameters(nb))
    if unknown:
        raise ReproError(f"unknown parameter(s) {', '.join(unknown)}")
    folder = Path(source).resolve().parent
    for k in PATH_PARAMS:
        if isinstance(params.get(k), str) and not Path(params[k]).is_absolute():
            params[k] = str((folder / params[k]).resolve())
    return params


def paper_module(source: str | Path):
    """The module that builds and plans the notebook ``source`` (its metadata ``repro.module``)."""
    from repro.notebooks import read_source

    name = (read_source(source).metadata.get("repro") or {}).get("module")
    if not name:
        raise ReproError(f"{source} names no paper module (notebook metadata 'repro: module: ...'): it cannot be planned")
    module = importlib.import_module(name)
    if not (hasattr(module, "build") and hasattr(module, "plan")):
        raise ReproError(f"{name} has no build(session) and plan(session, built)")
    return module


def experiments_of(built) -> list[Experiment]:
    """Every experiment in what a paper module's ``build`` returned (dicts, tuples, grids)."""
    if isinstance(built, Experiment):
        return [built]
    if isinstance(built, dict):
        built = list(built.values())
    elif hasattr(built, "all_experiments"):
        built = built.all_experiments()
    if isinstance(built, (list, tuple)):
        return [e for b in built for e in experiments_of(b)]
    return []


class Context:
    """What a process builds from a notebook and its parameters: the session (store, setups), the
    paper module's experiments, and each experiment by its address."""

    def __init__(self, source: str | Path, params: dict):
        from repro.notebooks import Session

        self.source, self.params = str(source), params
        self.module = paper_module(source)
        self.session = Session({**params, "recompute": False})
        self.built = self.module.build(self.session)
        self.index: dict[str, Experiment] = {}
        for e in experiments_of(self.built):
            for x in (e, e.without_bos()) if e.bos is not None else (e,):
                self.index.setdefault(x.address, x)

    def plan(self) -> list[Job]:
        """The jobs of every record the notebook would compute now."""
        store = self.session.store
        store.plan = Plan()
        try:
            self.module.plan(self.session, self.built)
            return store.plan.ordered()
        finally:
            store.plan = None

    def run(self, job: Job) -> float:
        """Compute ``job``'s records here; the seconds it took."""
        e = self.index.get(job.address)
        if e is None:
            raise ReproError(f"no experiment {job.address} in this notebook's build (does its plan match it?)")
        t0 = time.perf_counter()
        getattr(e, job.call)(*job.args, **dict(job.kwargs))
        return time.perf_counter() - t0


# ---- the local executor: worker processes ----------------------------------------------------------

_WORKER: Context | None = None


def _init_worker(source: str, params: dict, threads: int) -> None:
    import torch

    global _WORKER
    torch.set_num_threads(threads)
    os.environ["REPRO_PROGRESS"] = "off"
    _WORKER = Context(source, params)


def _run_in_worker(job: Job) -> float:
    return _WORKER.run(job)


class Progress:
    """One line per finished cell: its time, the elapsed time and an estimate of what remains."""

    def __init__(self, total: int, out=None):
        self.total, self.done, self.t0, self.out = total, 0, time.perf_counter(), out or sys.stderr

    def __call__(self, job: Job, seconds: float | None, error: str | None = None) -> None:
        self.done += 1
        elapsed = time.perf_counter() - self.t0
        left = elapsed / self.done * (self.total - self.done)
        what = f"failed: {error}" if error else f"{seconds:.1f} s"
        print(f"[{self.done}/{self.total}] {job.label}: {what} | elapsed {_clock(elapsed)}, about {_clock(left)} left",
              file=self.out, flush=True)


def _clock(s: float) -> str:
    s = int(round(s))
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}" if s >= 3600 else f"{s // 60}:{s % 60:02d}"


def run_local(ctx: Context, jobs: list[Job], n: int, threads: int, progress: Progress) -> list[tuple[Job, str]]:
    """Run ``jobs`` in ``n`` worker processes (in this process when ``n == 1``). Returns the
    failures; raises :class:`BrokenProcessPool` when a worker died (the caller plans again)."""
    failures = []
    if n == 1:
        for job in jobs:
            try:
                progress(job, ctx.run(job))
            except Exception as e:  # noqa: BLE001 - reported with the job, the other cells still run
                failures.append((job, f"{type(e).__name__}: {e}"))
                progress(job, None, failures[-1][1])
        return failures
    import multiprocessing as mp

    with ProcessPoolExecutor(n, mp_context=mp.get_context("spawn"), initializer=_init_worker,
                             initargs=(ctx.source, ctx.params, threads)) as pool:
        futures = {pool.submit(_run_in_worker, job): job for job in jobs}
        for f in as_completed(futures):
            job = futures[f]
            try:
                progress(job, f.result())
            except BrokenProcessPool:
                raise
            except Exception as e:  # noqa: BLE001
                failures.append((job, f"{type(e).__name__}: {e}"))
                progress(job, None, failures[-1][1])
    return failures


def run_notebook(source: str | Path, profile: str | Path | None = None, jobs: int = 1, executor: str = "local",
                 address: str | None = None, threads: int | None = None, max_retries: int = 2,
                 overrides: dict | None = None, out=None) -> dict:
    """Compute every record the notebook ``source`` needs under ``profile``, wave after wave, with
    ``jobs`` workers; returns a summary (cells computed per wave, seconds). Every input is checked
    before anything is computed or written."""
    if not isinstance(jobs, int) or jobs < 1:
        raise ReproError(f"jobs must be a positive integer, got {jobs!r}")
    if executor not in EXECUTORS:
        raise UnknownNameError("executor", executor, EXECUTORS)
    if threads is not None and (not isinstance(threads, int) or threads < 1):
        raise ReproError(f"threads must be a positive integer, got {threads!r}")
    if executor == "local" and address:
        raise ReproError("--address names a Ray cluster; the local executor takes none")
    out = out or sys.stderr
    params = notebook_params(source, profile, overrides)
    if params.get("recompute"):
        raise ReproError("run computes the missing records; to recompute, run the notebook with --recompute")
    cluster = connect_ray(address) if executor == "ray" else None  # an unreachable address fails here
    threads = threads or max(1, (os.cpu_count() or 1) // jobs)
    t0 = time.perf_counter()
    ctx = Context(source, params)
    waves, retries, done = [], 0, set()
    while True:
        planned = ctx.plan()
        if not planned:
            break
        stuck = [j for j in planned if j.record in done]
        if stuck:
            raise ReproError(f"{stuck[0].label} ran but its record is still missing: the plan and the cell disagree")
        parallel = [j for j in planned if not j.exclusive]
        exclusive = [j for j in planned if j.exclusive]
        progress = Progress(len(planned), out)
        retry = f" (retry {retries})" if retries else ""
        print(f"wave {len(waves) + 1}{retry}: {len(planned)} cell(s) to compute, {len(parallel)} on {jobs} "
              f"{executor} worker(s) x {threads} thread(s), {len(exclusive)} timed alone", file=out, flush=True)
        try:
            if cluster is not None:
                failures = run_ray(ctx, parallel, threads, progress)
            else:
                failures = run_local(ctx, parallel, jobs if len(parallel) > 1 else 1, threads, progress)
        except BrokenProcessPool:
            retries += 1
            if retries > max_retries:
                raise ReproError(f"workers died {retries} times; the cells they held left no record") from None
            print("a worker died; its cell left no record: planning again", file=out, flush=True)
            continue
        failures += run_local(ctx, exclusive, 1, threads, progress)  # timing cells: alone, torch's own threads
        if failures:
            job, error = failures[0]
            raise ReproError(f"{len(failures)} cell(s) failed, first {job.label}: {error}")
        done.update(j.record for j in planned)
        waves.append(len(planned))
    return {"notebook": str(source), "profile": str(profile) if profile else None, "jobs": jobs,
            "executor": executor, "threads": threads, "waves": waves, "cells": sum(waves), "retries": retries,
            "seconds": round(time.perf_counter() - t0, 1)}


# ---- Ray ------------------------------------------------------------------------------------------

def _ray_task(source: str, params: dict, job: Job, threads: int) -> float:
    """One job in a Ray worker process, which keeps the notebook's experiments between its tasks."""
    global _WORKER
    if _WORKER is None or _WORKER.source != source or _WORKER.params != params:
        _init_worker(source, params, threads)
    return _WORKER.run(job)


RAY_ENV = ("REPRO_DATA_DIR", "REPRO_CACHE", "HF_HUB_OFFLINE", "TOKENIZERS_PARALLELISM")  # passed on to Ray workers


def reachable(address: str, timeout: float = 5.0) -> None:
    """Refuse, within ``timeout`` seconds, a cluster address nothing listens on (Ray itself would
    retry for minutes): ``host:port`` or ``ray://host:port``."""
    import socket

    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not host or not port.isdigit():
        raise ReproError(f"--address {address!r}: expected host:port or ray://host:port")
    try:
        socket.create_connection((host, int(port)), timeout=timeout).close()
    except OSError as e:
        raise ReproError(f"cannot reach the Ray cluster at {address}: {e.strerror or e}") from None


def connect_ray(address: str | None):
    """Connect to the Ray cluster at ``address`` (None: start a local instance). Workers get this
    process's module path and data/cache variables: on a cluster, the repository and the data
    live at the same paths on every node (a shared filesystem), as the results folder does."""
    try:
        import ray
    except ImportError:
        raise ReproError("the ray executor needs Ray: pip install '.[cluster]'") from None
    if address and address != "auto":
        reachable(address)
    env = {k: os.environ[k] for k in RAY_ENV if k in os.environ}
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p and os.path.isdir(p))
    env["REPRO_PROGRESS"] = "off"
    try:
        ray.init(address=address, ignore_reinit_error=True, log_to_driver=False, include_dashboard=False,
                 runtime_env={"env_vars": env})
    except Exception as e:  # noqa: BLE001 - Ray raises ConnectionError, RuntimeError, ValueError...
        raise ReproError(f"cannot reach the Ray cluster at {address}: {' '.join(str(e).split())[:200]}") from None
    return ray


def run_ray(ctx: Context, jobs: list[Job], threads: int, progress: Progress) -> list[tuple[Job, str]]:
    """The jobs as Ray tasks (``threads`` CPUs each, one GPU each when the setup runs on CUDA),
    retried on worker loss; each task's process builds the notebook's experiments once (an actor
    per model group would be the next step) and writes to the shared results folder."""
    import ray

    gpu = 1 if str(ctx.session.params.get("device") or "").startswith("cuda") else 0
    task = ray.remote(num_cpus=threads, num_gpus=gpu, max_retries=2)(_ray_task)
    refs = {task.remote(ctx.source, ctx.params, job, threads): job for job in jobs}
    failures, pending = [], list(refs)
    while pending:
        done, pending = ray.wait(pending, num_returns=1)
        job = refs[done[0]]
        try:
            progress(job, ray.get(done[0]))
        except Exception as e:  # noqa: BLE001
            failures.append((job, f"{type(e).__name__}: {e}"))
            progress(job, None, failures[-1][1])
    return failures
