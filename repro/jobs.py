"""Plan, run, render: a paper notebook's cells computed as independent jobs.

``python -m repro run NOTEBOOK --profile P --jobs N`` builds the notebook's experiments from its
parameters (the parameters cell, then the profile), *plans* its grid (:func:`repro.engines.plan.survey` of
the paper module's ``build``: every cell the notebook asks for, by the notebook's own calls), computes the
missing records in ``N`` worker processes, and plans again whenever a worker is about to run out of cells, until nothing is missing (a cell that needs
another cell's record, or whose existence depends on other cells' values, joins as soon as its
inputs are written: no wave barrier, see :func:`compute`). The notebook then renders from records
(``python -m repro notebook``); opened interactively it still computes what is missing inline.

Which paper module plans a notebook: its metadata ``repro: {module: ...}`` (the jupytext header).

Workers are spawned processes, started once per run, each with ``threads`` torch threads (default:
the cores shared out), each building the notebook's experiments once and keeping its models and
calibration statistics between cells (jobs are ordered by model). Cells that time something
(``@plan.cell(exclusive=True)``: efficiency, removal) run when nothing else does, in this process,
one at a time, with torch's own thread count, as the notebook would run them. A record is written atomically under a per-cell lock
(:class:`repro.store.Store`), so two workers never write one cell twice, and a worker killed
mid-cell leaves no record: the workers are started again, the notebook planned again and the
cell retried.

``executor="ray"``: the same jobs as Ray tasks (``pip install '.[cluster]'``), see :class:`RayTasks`.

``repro run NOTEBOOK --dry-run`` (:func:`dry_run`) plans once with nothing loaded or computed and prints the
cells done, to compute and waiting, with estimated device-hours (:mod:`repro.engines.estimate`).
"""
from __future__ import annotations

import os
import signal
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager, nullcontext
from pathlib import Path

from repro.engines.base import Experiment
from repro.engines.plan import Job, Plan, survey
from repro.errors import (
    Interrupted,
    RecordWriteError,
    ReproError,
    UnknownNameError,
    check_folder,
    check_interrupted,
)
from repro.processes import die_with_parent, sigint_deferred

EXECUTORS = ("local", "ray")
PATH_PARAMS = ("results_dir", "read_results", "figures_dir", "readme", "results_page")  # relative to the notebook's folder, as papermill runs it


def notebook_params(source: str | Path, profile: str | Path | None = None, overrides: dict | None = None) -> dict:
    """The parameters a notebook runs with: its parameters cell's literal values updated with what
    the run sets (:func:`repro.notebooks.run_parameters`: the profile's section, then ``overrides``,
    checked there); relative paths resolved against the notebook's folder."""
    from repro.notebooks import default_parameters, read_source, run_parameters

    nb = read_source(source)
    params = {**default_parameters(nb), **run_parameters(source, profile, overrides, nb)}
    folder = Path(source).resolve().parent
    for k in PATH_PARAMS:
        if isinstance(params.get(k), str) and not Path(params[k]).is_absolute():
            params[k] = str((folder / params[k]).resolve())
    return params


def check_folders(params: dict, create: bool = True) -> None:
    """Every folder a run writes into, before any work: results, figures and the model cache (``$REPRO_CACHE``);
    ``create=False`` for a dry run, which writes nothing (:func:`repro.errors.check_folder`)."""
    from repro.assets.files import cache_root

    if "figures_dir" in params:  # made when the notebook first writes a figure: checked here, not made
        check_folder("figures_dir", params["figures_dir"], create=False)
    check_folder("the model cache (REPRO_CACHE, default ~/.cache/repro)", cache_root(), create=False)
    check_folder("results_dir", params["results_dir"], create=create)  # made now, once every other check passed


def experiments_of(built) -> list[Experiment]:
    """Every experiment in what a paper module's ``build`` returned (dicts, tuples, grids): an
    :class:`Experiment`, or any object with planned cells (an ``address`` and a ``store``, e.g.
    :class:`repro.engines.glue.GlueHeadExperiment`)."""
    if isinstance(built, Experiment) or (hasattr(built, "address") and hasattr(built, "store")):
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

    def __init__(self, source: str | Path, params: dict, dry=None, retime: bool = False):
        """``dry``: a :class:`repro.engines.dry.DryRun`, for planning with nothing loaded (:func:`dry_run`);
        ``retime``: the timing cells are computed again here (:attr:`repro.store.Store.retime`)."""
        from repro.notebooks import Session, paper_module

        self.source, self.params = str(source), params
        self.module = paper_module(source)
        self.session = Session({**params, "recompute": False})
        self.session.store.dry = dry
        self.session.store.retime = retime
        self.built = self.module.build(self.session)
        self.index: dict[str, Experiment] = {}
        for e in experiments_of(self.built):
            for x in (e, *(e.variants() if hasattr(e, "variants") else ())):
                self.index.setdefault(x.address, x)

    def plan(self) -> list[Job]:
        """The jobs of every record the notebook would compute now."""
        return self.survey().ordered()

    def survey(self) -> Plan:
        """The notebook surveyed now (:func:`repro.engines.plan.survey`: nothing computed): its jobs, and the cells
        that wait for them or are done."""
        return survey(self.built)

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


def _init_worker(source: str, params: dict, threads: int, parent: int | None = None) -> None:
    import torch

    global _WORKER
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the driver's to handle: it stops the workers
    if parent is not None:
        die_with_parent(parent)
    torch.set_num_threads(threads)
    os.environ["REPRO_PROGRESS"] = "off"
    _WORKER = Context(source, params)


def _run_in_worker(job: Job) -> float:
    return _WORKER.run(job)


class Progress:
    """One line per finished cell: its time, the elapsed time and an estimate of what remains (of
    the cells planned so far: later cells join as their inputs are written). ``estimates``: each job's
    estimated seconds by record (:func:`announce`): what remains is their sum over the cells not finished,
    corrected by how the finished cells' times compared with their estimates."""

    def __init__(self, out=None, estimates: dict | None = None):
        self.total, self.done, self.t0, self.out = 0, 0, time.perf_counter(), out or sys.stderr
        self.estimates, self.finished = dict(estimates or {}), []

    def __call__(self, job: Job, seconds: float | None, error: str | None = None) -> None:
        self.done += 1
        elapsed = time.perf_counter() - self.t0
        left = elapsed / self.done * (self.total - self.done)
        self.finished.append(job.record)
        guessed = sum(self.estimates.get(r, 0.0) for r in self.finished)
        if guessed > 0 and self.estimates:
            rest = sum(v for r, v in self.estimates.items() if r not in set(self.finished))
            left = rest * elapsed / guessed
        what = f"failed: {error}" if error else f"{seconds:.1f} s"
        print(f"[{self.done}/{self.total}] {job.label}: {what} | elapsed {_clock(elapsed)}, about {_clock(left)} left",
              file=self.out, flush=True)


def _clock(s: float) -> str:
    s = int(round(s))
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}" if s >= 3600 else f"{s // 60}:{s % 60:02d}"


# ---- where jobs run: this process, worker processes, Ray --------------------------------------------

def attempt(ctx: Context, job: Job) -> tuple[float | None, str | None]:
    """Run ``job`` here: its seconds, or its error (reported with the job; the other cells still run)."""
    try:
        return ctx.run(job), None
    except RecordWriteError:
        raise  # the run stops: every later record would fail alike
    except Exception as e:  # noqa: BLE001
        return None, f"{type(e).__name__}: {e}"


class InProcess:
    """Jobs run here, one at a time, in the order given."""

    def __init__(self, ctx: Context):
        self.ctx, self.queue = ctx, []

    def submit(self, job: Job):
        handle = object()  # a job may hold lists: unhashable
        self.queue.append((handle, job))
        return handle

    def next_done(self, handles) -> tuple[object, float | None, str | None]:
        handle, job = self.queue.pop(0)
        return handle, *attempt(self.ctx, job)

    def close(self) -> None:
        pass


class Workers:
    """``n`` spawned worker processes kept for the whole run (each builds the notebook's
    experiments once and keeps its models and calibration statistics between cells)."""

    def __init__(self, ctx: Context, n: int, threads: int):
        import multiprocessing as mp

        self.pool = ProcessPoolExecutor(n, mp_context=mp.get_context("spawn"), initializer=_init_worker,
                                        initargs=(ctx.source, ctx.params, threads, os.getpid()))

    def submit(self, job: Job):
        with sigint_deferred():  # a submit may start a worker process
            return self.pool.submit(_run_in_worker, job)

    def next_done(self, handles):
        """The first handle to finish, its seconds or its error; raises :class:`BrokenProcessPool`
        when a worker died."""
        f = next(as_completed(handles))
        try:
            return f, f.result(), None
        except (BrokenProcessPool, RecordWriteError):
            raise
        except Exception as e:  # noqa: BLE001
            return f, None, f"{type(e).__name__}: {e}"

    def close(self) -> None:
        self.pool.shutdown(wait=True, cancel_futures=True)

    def stop(self) -> None:
        """At an interrupt: end the workers now (their cells in flight leave no record: records are
        written atomically), instead of waiting for those cells to finish."""
        for proc in list((self.pool._processes or {}).values()):  # noqa: SLF001 - no public way before 3.14
            proc.terminate()
        self.pool.shutdown(wait=True, cancel_futures=True)


def compute(ctx: Context, start, slots: int, progress: Progress, out, max_retries: int = 2) -> dict:
    """Compute every missing record of ``ctx``'s notebook on the backend that ``start()`` returns
    (:class:`InProcess`, :class:`Workers` or :class:`RayTasks`), ``slots`` cells at a time.

    Rolling, not in waves: the notebook is planned again whenever fewer than ``slots`` cells are
    unfinished, so a cell whose inputs were just written starts while the last cells of the earlier
    plan still run, and no worker waits at a barrier. Cells that time something run when nothing
    else does, here, with torch's own threads. A dead worker's cells left no record: the workers
    are started again and the notebook planned again (at most ``max_retries`` times)."""
    pending: dict[object, Job] = {}  # backend handle -> its job
    finished, failed, batches, retries = set(), {}, [], 0

    def settle(job: Job, seconds: float | None, error: str | None) -> None:
        if error and "RecordWriteError" in error.split(":", 1)[0]:  # e.g. from a Ray task
            raise RecordWriteError(error.split(":", 1)[1].strip())
        if error:
            failed[job.record] = (job, error)
        else:
            finished.add(job.record)
        progress(job, seconds, error)

    def plan_more(backend) -> bool:
        """Submit the cells that are missing and not running; False when nothing is left at all."""
        flight = {j.record for j in pending.values()}
        planned = [j for j in ctx.plan() if j.record not in flight and j.record not in failed]
        stuck = [j for j in planned if j.record in finished]
        if stuck:
            raise ReproError(f"{stuck[0].label} ran but its record is still missing: the plan and the cell disagree")
        parallel = [j for j in planned if not j.exclusive]
        if parallel:
            print(f"plan {len(batches) + 1}: {len(parallel)} cell(s) to compute"
                  f"{f', {len(pending)} still running' if pending else ''}", file=out, flush=True)
            progress.total += len(parallel)
            batches.append(len(parallel))
            pending.update((backend.submit(j), j) for j in parallel)
            return True
        if pending:
            return True
        timed = [j for j in planned if j.exclusive]
        if timed:
            print(f"plan {len(batches) + 1}: {len(timed)} timing cell(s), each alone with torch's own threads",
                  file=out, flush=True)
            progress.total += len(timed)
            batches.append(len(timed))
            for job in timed:
                settle(job, *attempt(ctx, job))
        return bool(timed)

    backend = start()
    try:
        while True:
            check_interrupted()  # one Python swallowed (raised inside a __del__) still stops the run
            if len(pending) < slots and not plan_more(backend):
                break
            if not pending:
                continue
            try:
                handle, seconds, error = backend.next_done(list(pending))
            except BrokenProcessPool:
                retries += 1
                if retries > max_retries:
                    raise ReproError(f"workers died {retries} times; the cells they held left no record") from None
                print("a worker died; its cell left no record: starting the workers again and planning again",
                      file=out, flush=True)
                backend.close()
                ctx.session.store.sweep_partial_writes()  # a terminated worker's half-written record
                backend = start()
                progress.total -= len(pending)
                pending.clear()
                continue
            settle(pending.pop(handle), seconds, error)
    except (KeyboardInterrupt, RecordWriteError) as e:  # stop the workers now; no half-written record stays
        getattr(backend, "stop", backend.close)()
        ctx.session.store.sweep_partial_writes()
        backend = None
        if isinstance(e, KeyboardInterrupt):
            raise Interrupted(len(finished)) from None
        raise ReproError(f"stopped at the first record that could not be written ({e}); the {len(finished)} "
                         "record(s) written before it are whole, and a rerun resumes from them") from None
    finally:
        if backend is not None:
            backend.close()
    if failed:
        job, error = next(iter(failed.values()))
        raise ReproError(f"{len(failed)} cell(s) failed, first {job.label}: {error}")
    return {"batches": batches, "cells": sum(batches), "retries": retries}


def announce(ctx: Context, jobs: int, out, reprobe: bool = False) -> dict:
    """Before the first cell, one line: the cells done, to compute and waiting for those, with the wall time
    they are estimated to take here (:func:`repro.engines.estimate.local_seconds`, from a speed probe of this
    machine); and, once, a note when they run in a precision this CPU runs slowly, with the measured slowdown
    and the override that computes a float32 set instead. Returns each job's estimate (for :class:`Progress`)."""
    from repro.assets.machine import REFERENCE, measure
    from repro.assets.models import fast_bf16
    from repro.assets.precision import ENV as PRECISION_ENV
    from repro.assets.precision import wanted
    from repro.engines.estimate import cell_dtype, clock, local_seconds

    plan = ctx.survey()
    head = f"plan: {len(plan.done)} cell(s) done, {len(plan.jobs)} to compute, {len(plan.waiting)} waiting for those"
    if plan.empty:
        print(f"{head}: nothing to compute", file=out, flush=True)
        return {}
    dtypes = sorted({"float32", *(cell_dtype(c) for c in plan.configs.values())})
    with torch_threads(min(2, os.cpu_count() or 1)):  # the reference machine's threads: like with like
        probed = measure(dtypes, reprobe=reprobe)
    speed = probed.speed
    est = local_seconds(plan, ctx.index, ctx.session.store, speed, REFERENCE)
    how = [f"{est['matched']} from the records of the same cells computed elsewhere, scaled by a speed probe",
           f"{est['modelled']} from the cost model"] + ([f"{est['unpriced']} unpriced"] if est["unpriced"] else [])
    print(f"{head}; estimated {clock(est['seconds'] / jobs)} on this machine with {jobs} worker(s) "
          f"({clock(est['seconds'])} of compute: {', '.join(how)}; {probed.describe()}; an estimate, often off by half)",
          file=out, flush=True)
    slow = sorted(d for d in est["dtypes"] if d in ("bfloat16", "float16"))
    on_cpu = not fast_bf16(ctx.session.params.get("device"))
    if "bfloat16" in slow and on_cpu and wanted():
        print(f"note: this CPU has no fast bfloat16 (no AVX512-BF16 or AMX): the cells' bfloat16 matrix products are "
              f"computed as float32 products of their bf16 operands, rounded to bf16, the arithmetic of fast bf16 "
              f"kernels (repro.assets.precision; a forward pass measured x{speed['float32'] / speed['bfloat16']:.1f} "
              f"the time of float32's here; {PRECISION_ENV}=native keeps torch's own, slower kernels). Records say so "
              "in their machine field", file=out, flush=True)
    elif slow and on_cpu:
        print(f"note: this CPU has no fast {slow[0]} (no AVX512-BF16 or AMX): a {slow[0]} forward pass measured "
              f"x{speed['float32'] / speed[slow[0]]:.1f} slower than float32 here. The cells to compute run in "
              f"{slow[0]}, the precision the profile pins (its committed records ran in it). To compute a separate "
              "float32 set instead: make reproduce EVAL_DTYPE=float32 (repro run NOTEBOOK --eval-dtype float32)",
              file=out, flush=True)
    return est["by_record"]


@contextmanager
def torch_threads(n: int):
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def run_notebook(source: str | Path, profile: str | Path | None = None, jobs: int = 1, executor: str = "local",
                 address: str | None = None, threads: int | None = None, max_retries: int = 2,
                 overrides: dict | None = None, out=None, retime: bool = False, reprobe: bool = False) -> dict:
    """Compute every record the notebook ``source`` needs under ``profile`` with ``jobs`` workers
    (:func:`compute`); returns a summary (cells submitted per plan, seconds). Every input is
    checked before anything is computed or written."""
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
    check_folders(params)
    cluster = connect_ray(address) if executor == "ray" else None  # an unreachable address fails here
    threads = threads or max(1, (os.cpu_count() or 1) // jobs)
    t0 = time.perf_counter()
    ctx = Context(source, params, retime=retime)
    ctx.session.store.sweep_partial_writes()  # what a run killed outright (SIGKILL, the OOM killer) left half-written
    print(f"{source}: {jobs} {executor} worker(s) x {threads} thread(s)", file=out, flush=True)
    estimates = announce(ctx, jobs, out, reprobe)
    if cluster is not None:
        def start():
            return RayTasks(ctx, threads)
    elif jobs > 1:
        def start():
            return Workers(ctx, jobs, threads)
    else:
        def start():
            return InProcess(ctx)
    with torch_threads(threads) if cluster is None and jobs == 1 else nullcontext():  # in this process: its threads
        summary = compute(ctx, start, jobs, Progress(out, estimates), out, max_retries)
    return {"notebook": str(source), "profile": str(profile) if profile else None, "jobs": jobs,
            "executor": executor, "threads": threads, **summary, "seconds": round(time.perf_counter() - t0, 1)}


# ---- before a GPU-day: the dry run ------------------------------------------------------------------

def dry_run(source: str | Path, profile: str | Path | None = None, tflops: float | None = None,
            fp32_tflops: float | None = None, overrides: dict | None = None, out=None, reprobe: bool = False) -> dict:
    """Plan the notebook ``source`` under ``profile`` with nothing loaded, downloaded or computed
    (:mod:`repro.engines.dry`: models without a card get stand-in cards, corpora that cannot be read here
    stand-ins), print its table (:func:`repro.engines.estimate.table`: cells done, to compute and waiting,
    by model and cell function, with estimated device-hours) on ``out``, and return the totals. Nothing is
    written: the figures folder is a temporary one, and no record, card or lock is made. ``overrides``:
    parameters set over the profile's, as for :func:`run_notebook`."""
    import tempfile

    from repro.engines import estimate
    from repro.engines.dry import DryRun, offline

    tflops, fp32_tflops = tflops or estimate.DEFAULT_TFLOPS, fp32_tflops or estimate.DEFAULT_FP32_TFLOPS
    for name, v in (("tflops", tflops), ("fp32_tflops", fp32_tflops)):
        if not isinstance(v, (int, float)) or not 0 < v < float("inf"):
            raise ReproError(f"{name} must be a positive number, got {v!r}")
    out = out or sys.stderr
    params = notebook_params(source, profile, overrides)
    check_folders(params, create=False)
    dry = DryRun()
    with offline(), tempfile.TemporaryDirectory() as figures:
        ctx = Context(source, {**params, "figures_dir": figures}, dry=dry)
        plan = ctx.survey()
        rows = estimate.tally(plan, ctx.index)
    cost = sum((r["cost"] for r in rows), estimate.Cost())
    print(f"{source} under {profile or 'the default profile'}, results in {params['results_dir']}: a dry run, "
          "nothing loaded or computed", file=out)
    print(estimate.table(rows, tflops, fp32_tflops), file=out)
    here = _dry_here(ctx, plan, reprobe)
    for line in [*_dry_notes(plan), estimate.assumptions(tflops, fp32_tflops), here["line"], *dry.notes]:
        print(f"- {line}", file=out)
    cells = {k.replace(" ", "_"): sum(r[k] for r in rows) for k in estimate.STATUSES}
    return {"notebook": str(source), "profile": str(profile) if profile else None, "dry_run": True,
            "results_dir": params["results_dir"], "cells": cells,
            "device_hours": round(cost.hours(tflops, fp32_tflops), 3), "pflop_half": round(cost.half / 1e15, 3),
            "pflop_fp32": round(cost.fp32 / 1e15, 3), "unpriced_cells": cost.unknown, "tflops": tflops,
            "fp32_tflops": fp32_tflops, "cpu_hours": here["cpu_hours"]}


def _dry_here(ctx: Context, plan: Plan, reprobe: bool = False) -> dict:
    """The dry run's estimate on this machine's CPU, in CPU-hours (as :func:`announce` prices a run)."""
    from repro.assets.machine import REFERENCE, describe, label, measure
    from repro.engines.estimate import cell_dtype, clock, local_seconds

    if plan.empty:
        return {"line": "on this machine: nothing to compute", "cpu_hours": 0.0}
    threads = min(2, os.cpu_count() or 1)
    with torch_threads(threads):
        probed = measure(sorted({"float32", *(cell_dtype(c) for c in plan.configs.values())}), reprobe=reprobe)
    est = local_seconds(plan, ctx.index, ctx.session.store, probed.speed, REFERENCE)
    hours = est["seconds"] / 3600
    return {"cpu_hours": round(hours, 2),
            "line": f"on this machine ({label(describe(threads=threads))}): about {hours:.1f} CPU-hours at {threads} "
                    f"threads ({clock(est['seconds'])}; {est['matched']} cells from the records of the same cells "
                    f"computed elsewhere, scaled by a speed probe, {est['modelled']} from the cost model, "
                    f"{est['unpriced']} unpriced; {probed.describe()})"}


def _dry_notes(plan: Plan) -> list[str]:
    """What the counts mean."""
    notes = ["done: cells whose records exist; to compute: jobs of records missing now (what `run` starts with); "
             "waiting: cells that need one of those first (a later plan runs them)"]
    if not plan.empty:
        notes.append("cells the notebook chooses from other cells' values (e.g. notebook 1's zero-shot and "
                     "collapse-diagnosis cells) join only once those exist: they are not in this table")
    return notes


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


class RayTasks:
    """The jobs as Ray tasks (``threads`` CPUs each, one GPU each when the setup runs on CUDA),
    retried by Ray on worker loss; each task's process builds the notebook's experiments once (an
    actor per model group would be the next step) and writes to the shared results folder."""

    def __init__(self, ctx: Context, threads: int):
        import ray

        self.ray, self.ctx, self.threads = ray, ctx, threads
        gpu = 1 if str(ctx.session.params.get("device") or "").startswith("cuda") else 0
        self.task = ray.remote(num_cpus=threads, num_gpus=gpu, max_retries=2)(_ray_task)

    def submit(self, job: Job):
        return self.task.remote(self.ctx.source, self.ctx.params, job, self.threads)

    def next_done(self, handles):
        done, _ = self.ray.wait(handles, num_returns=1)
        try:
            return done[0], self.ray.get(done[0]), None
        except Exception as e:  # noqa: BLE001
            return done[0], None, f"{type(e).__name__}: {e}"

    def close(self) -> None:
        pass
