"""A notebook's "Try it" exercises as cells (issue 67). Each run of an exercise is a record of its own (folder
``tryit``), keyed by the exercise, its arguments (the function's defaults filled in) and, where it reads a model, the
experiment's configuration. The grid's ``exercises`` section asks for each exercise's default run, so ``repro run``
computes it like any other cell and the committed render shows its answer from the record, loading no model; a student
who changes the values computes live, and that run is cached the same way (:meth:`repro.notebooks.Session.try_it`).
"""
from __future__ import annotations

import inspect
import time

import numpy as np
import pandas as pd

from repro.engines import plan
from repro.engines.prune import plain
from repro.report import Table

PROTOCOL = 1


def _plain(v):
    """``v`` as JSON keeps it (tuples as lists), so that a key does not depend on how the notebook wrote a value."""
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if isinstance(v, dict):
        return {str(k): _plain(x) for k, x in v.items()}
    return v


class Exercises:
    """The exercises ``functions`` (``{name: function}``; a function whose first parameter is ``exp`` reads
    ``experiment``'s model, the others compute without one) of one notebook, with ``defaults`` (``[(name, {argument:
    value})]``: the runs the notebook's cells start with, which the ``exercises`` section asks for)."""

    def __init__(self, experiment, functions: dict, defaults: list[tuple[str, dict]]):
        unknown = {name for name, _ in defaults} - set(functions)
        if unknown:
            raise ValueError(f"defaults name exercises that are not there: {sorted(unknown)}")
        self.experiment, self.functions, self.defaults = experiment, functions, defaults
        self.store = experiment.store

    @property
    def name(self) -> str:
        return self.experiment.name

    @property
    def address(self) -> str:
        return f"Exercises:{self.experiment.address}"

    def reads_model(self, name: str) -> bool:
        return next(iter(inspect.signature(self.functions[name]).parameters)) == "exp"

    def arguments(self, name: str, kwargs: dict) -> dict:
        """``kwargs`` bound to exercise ``name``'s signature, every default filled in (the model excluded)."""
        fn = self.functions[name]
        params = list(inspect.signature(fn).parameters)
        bound = inspect.signature(fn).bind_partial(**({"exp": None} if self.reads_model(name) else {}), **kwargs)
        bound.apply_defaults()
        return {k: _plain(v) for k, v in bound.arguments.items() if k != "exp" and k in params}

    def config(self, name: str, kwargs: dict) -> dict:
        fn = self.functions[name]
        cfg = {"protocol": PROTOCOL, "exercise": f"{fn.__module__}.{fn.__name__}", "arguments": self.arguments(name, kwargs)}
        return {**cfg, "model": self.experiment.base_config()} if self.reads_model(name) else cfg

    def stored(self, name: str, kwargs: dict) -> dict | None:
        """The record of this run where it exists (nothing computed)."""
        return self.store.get("tryit", self.config(name, kwargs))

    @plan.cell
    def run(self, name: str, kwargs: dict | None = None) -> dict:
        """Exercise ``name`` with ``kwargs``: its answer (a :class:`repro.report.Table`) as a record, with the seconds
        it took."""
        args = self.arguments(name, kwargs or {})
        fn, model = self.functions[name], self.reads_model(name)

        def compute():
            start = time.perf_counter()
            table = fn(self.experiment, **args) if model else fn(**args)
            return {"frame": plain(table.frame.to_dict(orient="split")), "caption": table.caption, "reading": table.reading,
                    "raw": _stored_raw(table.raw), "seconds": round(time.perf_counter() - start, 1)}
        return (yield plan.Ask("tryit", self.config(name, kwargs or {}), compute))

    @plan.cells
    def all_defaults(self):
        """Every exercise's default run (the grid's ``exercises`` section)."""
        out = []
        for name, kwargs in self.defaults:
            out.append((yield self.run.ask(name, kwargs)))
        return out

    @staticmethod
    def table(record: dict) -> Table:
        """The answer a record holds, as the exercise returned it."""
        r = record["result"]
        return Table(pd.DataFrame(**r["frame"]), r["caption"], r["reading"], _read_raw(r.get("raw")))


def _stored_raw(raw):
    """An exercise's ``raw`` numbers (a frame, or ``{key: array}`` for a plot) as a record keeps them, keys and all."""
    if raw is None:
        return None
    if isinstance(raw, pd.DataFrame):
        return {"frame": plain(raw.to_dict(orient="split"))}
    return {"pairs": [[plain(k), plain(v)] for k, v in raw.items()]}


def _read_raw(stored):
    if stored is None:
        return None
    if "frame" in stored:
        return pd.DataFrame(**stored["frame"])
    return {k: np.asarray(v) for k, v in stored["pairs"]}
