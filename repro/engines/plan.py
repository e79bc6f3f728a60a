"""Cells as jobs: a notebook's grid listed without computing it.

A *cell* is an experiment method marked :func:`cell` and written as a generator. It ``yield``\\ s what it
needs, in order, and ``return``\\ s its value:

* ``yield Ask(folder, config, compute)``: one record (receives the record);
* ``yield self.scores.ask(method, z)``: another cell's value (receives that value).

The body says *what* it needs; whoever drives it decides *how*, and nothing else changes mode:

* **run** (calling the method, ``exp.cell("mpg", 0.5)``, or :func:`run` of a :class:`Call`): each record is
  read or computed (:meth:`repro.store.Store.run`), each nested cell run, the value returned;
* **survey** (:meth:`Plan.cell`): each record only looked up (:meth:`repro.store.Store.lookup`). The first
  missing record stops the walk: the cell that asked for it is a :class:`Job` (one per missing record), and
  an outer cell that needed it *waits* for that job. A cell whose records all exist is *done*.

A cell asks for what it depends on (head scores, a bandit selection) *before* its own record, so a missing
dependency becomes the job and no two workers search or score the same thing. A worker replays a job by
its call (``getattr(experiment, call)(*args, **kwargs)``) and writes the records; the notebook then reads them.

A grid is a :class:`Sections`: one method per notebook section, marked :func:`section`, that yields the cells
it needs (a group such as ``exp.grid`` is a call marked :func:`cells`) and shows a frame built from the records
(``shows``). Calling a section runs it; :func:`survey` walks every section's calls, in the notebook's order,
without computing. A section whose cells follow from other records' values (notebook 1's zero-shot cells
follow the perplexity ranking) is marked ``reads_earlier``: it is surveyed only once nothing before it is
missing (:attr:`Plan.empty`), so it reads only records that exist.

The paper modules (:mod:`repro.papers.mpg`, ``ogas``, ``bandit``) each define ``build(session)``, the grid;
:mod:`repro.jobs` surveys it again as records are written.
"""
from __future__ import annotations

import functools
import inspect
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any, Callable

from repro.store import config_key
from repro.words import short


@dataclass(frozen=True)
class Ask:
    """What a cell yields for one record: ``folder`` (the record's experiment folder), its ``config``, and
    ``compute`` (called only where the record is missing and the cell runs)."""
    folder: str
    config: dict
    compute: Callable[[], dict]

    @property
    def record(self) -> tuple[str, str]:
        return self.folder, config_key(self.config)


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


@dataclass(frozen=True, eq=False)
class Call:
    """One call of a cell (or of a group of cells, :func:`cells`) on an object, not yet made: what a cell or a
    section yields, and what :func:`run` makes."""
    owner: Any  # the experiment (or grid) whose method it calls
    name: str
    args: tuple
    kwargs: dict

    @property
    def function(self):
        return getattr(type(self.owner), self.name)

    @property
    def group(self) -> bool:
        return getattr(self.function, "group", False)

    def steps(self):
        """The call's body as a generator (nothing runs until it is driven)."""
        return self.function.steps(self.owner, *self.args, **self.kwargs)

    def job(self, record: tuple[str, str] | None = None) -> Job:
        return Job(self.owner.address, self.name, self.args, tuple(sorted(self.kwargs.items())), record,
                   self.owner.name, getattr(self.function, "exclusive", False))


def run_steps(steps, store=None):
    """Drive ``steps`` (a cell's or a section's generator): each :class:`Ask` read or computed in ``store``,
    each :class:`Call` run; the generator's return value."""
    try:
        need = next(steps)
        while True:
            if isinstance(need, Ask):
                value = store.run(need.folder, need.config, need.compute)
            elif isinstance(need, Call):
                value = run(need)
            else:
                raise TypeError(f"a cell yields Ask or Call, got {need!r}")
            need = steps.send(value)
    except StopIteration as stop:
        return stop.value


def run(call: Call):
    """Make ``call``: its records read or computed, its value returned."""
    return run_steps(call.steps(), getattr(call.owner, "store", None))


class _Bound:
    """A cell bound to its object: call it to run it, :meth:`ask` for the :class:`Call` a generator yields."""

    def __init__(self, function, owner):
        self.function, self.owner = function, owner
        self.__name__, self.__doc__ = function.__name__, function.__doc__
        self.__signature__ = inspect.signature(functools.partial(function.steps, owner))

    def __call__(self, *args, **kwargs):
        return run(self.ask(*args, **kwargs))

    def ask(self, *args, **kwargs) -> Call:
        return Call(self.owner, self.function.__name__, args, kwargs)


class _Cell:
    """A cell method (:func:`cell`, :func:`cells`): a descriptor that binds as :class:`_Bound`."""
    bound = _Bound

    def __init__(self, steps, exclusive: bool = False, group: bool = False):
        self.steps, self.exclusive, self.group = steps, exclusive, group
        functools.update_wrapper(self, steps)

    def __get__(self, owner, kind=None):
        return self if owner is None else self.bound(self, owner)


def cell(method=None, *, exclusive: bool = False):
    """Mark a generator method as a cell (see the module's rules); ``exclusive``: the cell times something, so a
    ``repro run`` runs it alone (``@plan.cell(exclusive=True)``)."""
    if method is None:
        return functools.partial(cell, exclusive=exclusive)
    return _Cell(method, exclusive)


def cells(method):
    """Mark a generator method that yields several cells' calls (``exp.grid``): a survey lists each of them as a
    cell of its own (each done, to compute or waiting), not the group as one."""
    return _Cell(method, group=True)


class _BoundSection(_Bound):
    """A section bound to its grid: calling it runs its cells and returns what it shows."""

    def __call__(self, *args, **kwargs):
        value = run_steps(self.function.steps(self.owner, *args, **kwargs))
        return value if self.function.shows is None else self.function.shows(self.owner)


class _Section(_Cell):
    bound = _BoundSection

    def __init__(self, steps, shows, reads_earlier: bool):
        super().__init__(steps, group=True)
        self.shows, self.reads_earlier = shows, reads_earlier


def section(method=None, *, shows: Callable | None = None, reads_earlier: bool = False):
    """Mark a grid method as one notebook section: a generator that yields the calls of the cells it needs.
    Calling the section runs them and returns ``shows(grid)`` (the frame the notebook shows, built from the
    records only when the section runs), or without ``shows`` the generator's own return value.
    ``reads_earlier``: the section's cells follow from earlier records' values (see the module's rules)."""
    if method is None:
        return functools.partial(section, shows=shows, reads_earlier=reads_earlier)
    return _Section(method, shows, reads_earlier)


_WAIT = object()  # a survey's answer for a call that cannot finish yet


@dataclass
class Plan:
    """The jobs met so far, one per missing record, in the order the notebook asks for them; and, listed
    for a dry run (:func:`repro.jobs.dry_run`), the cells that wait for one of them and those whose records
    all exist, each once (:attr:`Job.cell_id`)."""
    jobs: dict[tuple[str, str], Job] = field(default_factory=dict)
    blocked: int = 0  # cells that wait for a job of this plan
    waiting: dict[str, Job] = field(default_factory=dict)  # outermost cells blocked by a job of this plan
    done: dict[str, Job] = field(default_factory=dict)  # outermost cells that read every record they need
    configs: dict[tuple[str, str], dict] = field(default_factory=dict)  # each job's record -> its configuration

    @property
    def empty(self) -> bool:
        """Nothing asked so far is missing: code that reads values to choose cells may run."""
        return not self.jobs and not self.blocked

    def ordered(self) -> list[Job]:
        """The jobs grouped by model (a worker keeps its model loaded between them), each model's
        in the notebook's order."""
        models = list(dict.fromkeys(j.model for j in self.jobs.values()))
        return sorted(self.jobs.values(), key=lambda j: models.index(j.model))

    # -- surveying: records looked up, never computed -------------------------------------------------
    def visit(self, call: Call):
        """Survey ``call``: a group's calls each as a cell of its own, a cell as :meth:`cell`; its value, or None."""
        if not call.group:
            return self.cell(call)
        return self.walk(call.steps(), self.visit)

    def cell(self, call: Call):
        """Survey one outermost cell: it is done (its value returned), a job, or waiting for one (None)."""
        value, missing = self._walk_cell(call)
        if missing is _WAIT:
            self.blocked += 1
            self.waiting.setdefault(call.job().cell_id, call.job())
        elif missing is None:
            read = (value["experiment"], value["key"]) if isinstance(value, dict) and "experiment" in value else None
            self.done.setdefault(call.job().cell_id, call.job(read))
            return value
        return None

    def _walk_cell(self, call: Call):
        """``(value, None)`` where every record ``call`` needs exists; ``(None, record)`` where ``call`` is the
        job of its first missing record; ``(None, _WAIT)`` where a cell it asks for cannot finish."""
        store = call.owner.store
        state = {}

        def need(x):
            if isinstance(x, Ask):
                record = store.lookup(x.folder, x.config)
                if record is None:
                    self.jobs.setdefault(x.record, call.job(x.record))
                    self.configs.setdefault(x.record, x.config)
                    state["missing"] = x.record
                return record
            value, missing = self._walk_cell(x)
            if missing is not None:
                state["missing"] = _WAIT
            return value
        value = self.walk(call.steps(), need, stop=lambda: "missing" in state)
        return (None, state["missing"]) if "missing" in state else (value, None)

    @staticmethod
    def walk(steps, answer, stop=lambda: False):
        """Drive ``steps`` with ``answer(need)`` for each thing it yields until ``stop()``; its return value (None
        where stopped)."""
        try:
            need = next(steps)
            while True:
                value = answer(need)
                if stop():
                    steps.close()
                    return None
                need = steps.send(value)
        except StopIteration as done:
            return done.value


class Sections:
    """A paper's grid: one :func:`section` per notebook section, named in the notebook's order in
    ``sections`` (as data: :func:`survey` walks the list, so ``repro run`` asks for every cell by the calls the
    notebook makes; ``tests/test_notebooks.py`` checks that the notebook calls each one)."""
    sections: tuple[str, ...] = ()

    def all_experiments(self) -> list:
        """Every experiment of the grid, each once (:mod:`repro.jobs` finds a cell's experiment by its address):
        here, those held in the grid's dict attributes (``{model: experiment}``); a grid may list them itself."""
        found = [e for v in vars(self).values() if isinstance(v, dict) for e in v.values() if hasattr(e, "address")]
        return list({id(e): e for e in found}.values())


def survey(grid: Sections) -> Plan:
    """Every section of ``grid`` surveyed in the notebook's order (nothing computed): what is done, to compute,
    and waiting. A ``reads_earlier`` section is surveyed only where nothing before it is missing."""
    plan = Plan()
    for name in grid.sections:
        function = getattr(type(grid), name)
        if getattr(function, "reads_earlier", False) and not plan.empty:
            continue
        plan.visit(getattr(grid, name).ask())
    return plan
