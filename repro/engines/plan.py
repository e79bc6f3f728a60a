"""Cells as jobs: a notebook's grid listed without computing it.

Every experiment cell is a method of an experiment object that ends in one
:meth:`repro.store.Store.run` (the record of a configuration). Marked with :func:`cell`, such a
method can be *planned*: while its store holds a :class:`Plan`, a missing record is not computed;
the call is kept as a :class:`Job` (the experiment's :attr:`~repro.engines.base.Experiment.address`,
the method's name and its arguments), and the method returns None. A worker process that builds
the same experiments replays the job (``getattr(experiment, call)(*args, **kwargs)``) and writes
the record; the notebook then reads it.

Rules that keep the plan honest:

* A cell asks for the records it depends on (head scores, a bandit selection) *before* its own
  record. A missing dependency becomes the job; the cell waits for a later plan (it is
  *blocked*), so no two workers search or score the same thing.
* One job per missing record: the first record a call finds missing names the job, and a second
  call that meets the same record first (another ratio of the same bandit search) is the same job.
* Code that needs a record's *value* to decide which cells exist (notebook 1's zero-shot cells
  follow the perplexity ranking) plans them only once nothing before it is pending
  (:attr:`Plan.empty`), i.e. in a later plan.

The paper modules (:mod:`repro.papers.mpg`, ``ogas``, ``bandit``) each define ``build(session)``
(the notebook's experiments) and ``plan(session, built)`` (every cell the notebook asks for, by the
same calls the notebook makes); :mod:`repro.jobs` plans again as records are written.
"""
from __future__ import annotations

import functools
import inspect
from dataclasses import dataclass, field
from types import SimpleNamespace

from repro.store import Pending
from repro.words import short


class Blocked(Exception):
    """A cell waits for a record that another job of this plan will write."""


@dataclass(frozen=True)
class Job:
    """One missing record's computation: ``getattr(experiment at address, call)(*args, **kwargs)``.
    ``record``: the ``(experiment folder, key)`` it writes first (the job's identity); for a cell that
    is listed, not run (:attr:`Plan.waiting`, :attr:`Plan.done`), the record it returned, or None."""
    address: str
    call: str
    args: tuple
    kwargs: tuple  # sorted (name, value) pairs
    record: tuple[str, str] | None
    model: str
    exclusive: bool = False  # it times something: run alone, with torch's own threads

    @property
    def label(self) -> str:
        args = ", ".join([*map(short, self.args), *(f"{k}={short(v)}" for k, v in self.kwargs)])
        return f"{self.model} {self.call}({args})"

    @property
    def cell_id(self) -> str:
        """The call itself (experiment, method, arguments): one cell however often the notebook asks for it."""
        return repr((self.address, self.call, self.args, self.kwargs))

    def parameters(self, experiment) -> SimpleNamespace:
        """Every parameter of the call by name (``.method``, ``.sparsity``), defaults filled in (``experiment``: the
        object at :attr:`address`), e.g. for a cost estimate (:mod:`repro.engines.estimate`)."""
        bound = inspect.signature(getattr(experiment, self.call)).bind(*self.args, **dict(self.kwargs))
        bound.apply_defaults()
        return SimpleNamespace(**bound.arguments)


@dataclass
class Plan:
    """The jobs met so far, one per missing record, in the order the notebook asks for them; and, listed
    for a dry run (:func:`repro.jobs.dry_run`), the cells that wait for one of them and those whose records
    all exist, each once (:attr:`Job.cell_id`)."""
    jobs: dict[tuple[str, str], Job] = field(default_factory=dict)
    blocked: int = 0  # cells that wait for a job of this plan
    depth: int = 0  # nesting of @cell calls (the outermost one swallows Pending / Blocked)
    waiting: dict[str, Job] = field(default_factory=dict)  # outermost cells blocked by a job of this plan
    done: dict[str, Job] = field(default_factory=dict)  # outermost cells that read every record they need
    configs: dict[tuple[str, str], dict] = field(default_factory=dict)  # each job's record -> its configuration

    @property
    def empty(self) -> bool:
        """Nothing asked so far is missing: code that reads values to choose cells may run."""
        return not self.jobs and not self.blocked

    def add(self, job: Job) -> None:
        self.jobs.setdefault(job.record, job)

    def ordered(self) -> list[Job]:
        """The jobs grouped by model (a worker keeps its model loaded between them), each model's
        in the notebook's order."""
        models = list(dict.fromkeys(j.model for j in self.jobs.values()))
        return sorted(self.jobs.values(), key=lambda j: models.index(j.model))


def cell(method=None, *, exclusive: bool = False):
    """Mark an experiment method that computes (or reads) records through ``self.run``: while the
    store plans (:attr:`repro.store.Store.plan`), a missing record makes this call a :class:`Job`
    and the call returns None (see the module's rules). ``exclusive``: the cell times something,
    so it runs alone (``@plan.cell(exclusive=True)``)."""
    if method is None:
        return functools.partial(cell, exclusive=exclusive)

    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        plan = self.store.plan
        if plan is None:
            return method(self, *args, **kwargs)
        outermost = plan.depth == 0
        plan.depth += 1

        def job(record=None) -> Job:
            return Job(self.address, method.__name__, args, tuple(sorted(kwargs.items())), record, self.name, exclusive)
        try:
            out = method(self, *args, **kwargs)
        except Pending as p:
            plan.add(job(p.record))
            if p.config is not None:
                plan.configs.setdefault(p.record, p.config)
            if outermost:
                return None
            raise Blocked from None
        except Blocked:
            if outermost:
                plan.blocked += 1
                plan.waiting.setdefault(job().cell_id, job())
                return None
            raise
        finally:
            plan.depth -= 1
        if outermost:
            read = (out["experiment"], out["key"]) if isinstance(out, dict) and "experiment" in out else None
            plan.done.setdefault(job().cell_id, job(read))
        return out
    return wrapper


def shown(store, read):
    """What a grid's section returns: ``read()`` (its frame of records), or None while ``store`` plans:
    no table is shown then, and replanning, which runs whenever workers run low, reads no record it does
    not need."""
    return None if store.plan is not None else read()


class Sections:
    """A paper's grid: one method per notebook section that asks for that section's cells (computing them, or
    while the store plans, listing them) and returns what the section shows. ``sections`` names those methods in
    the notebook's order, as data: :meth:`plan` walks the list, so ``repro run`` asks for every cell by the calls
    the notebook makes (``tests/test_papers.py`` checks that the notebook calls each one)."""
    sections: tuple[str, ...] = ()

    def all_experiments(self) -> list:
        """Every experiment of the grid, each once (:mod:`repro.jobs` finds a cell's experiment by its address):
        here, those held in the grid's dict attributes (``{model: experiment}``); a grid may list them itself."""
        found = [e for v in vars(self).values() if isinstance(v, dict) for e in v.values() if hasattr(e, "address")]
        return list({id(e): e for e in found}.values())

    def plan(self) -> None:
        """Every section, in the notebook's order."""
        for name in self.sections:
            getattr(self, name)()
