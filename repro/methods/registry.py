"""One shape for every method of every paper: what a table, a claim or the CLI needs to know.

A :class:`Method` names its implementation (a scoring function, a selector or a pruner class),
its label, its parameters with their defaults and its capability flags. The three registries
(``HEAD_METHODS``, ``PRUNERS``, ``SELECTORS``) are :class:`Registry` objects of such entries;
adding a method is its function or class plus one entry, and nothing else reads a hand-written
list of names or labels.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from repro.errors import ReproError, UnknownNameError

CALIBRATION_KINDS = (None, "activations", "gradients", "losses")


@dataclass(frozen=True)
class Method:
    """A method: ``impl`` is what runs it (its signature is the registry's business)."""
    name: str
    label: str
    impl: Callable
    defaults: dict = field(default_factory=dict)  # every parameter it takes, with its default
    calibration: str | None = None  # what it reads from data: None, "activations", "gradients", "losses"
    nm: bool = False  # supports N:M patterns (unstructured pruners)
    paper: bool = True  # one of its paper's own methods (False: a sanity baseline of ours)
    ablation: bool = False  # ours: another method with one of its choices changed (a control, not a baseline)

    def __post_init__(self):
        if self.calibration not in CALIBRATION_KINDS:
            raise ValueError(f"{self.name}: calibration must be one of {CALIBRATION_KINDS}, got {self.calibration!r}")

    @property
    def calibration_free(self) -> bool:
        return self.calibration is None

    @property
    def needs_gradients(self) -> bool:
        return self.calibration == "gradients"

    @property
    def sequential(self) -> bool:
        """Chooses units one at a time on measured damage (a per-step budget of evaluations)."""
        return "budget" in self.defaults

    @property
    def params(self) -> tuple[str, ...]:
        return tuple(self.defaults)

    def check_params(self, params: dict | None, kind: str = "method") -> dict:
        """``params`` if this method takes every one of them; else a one-line error (a typo must not
        silently run the default)."""
        return check_params(kind, self.name, self.defaults, params)


class Registry(dict):
    """``{name: Method}``; ``registry[name]`` of an unknown name raises :class:`UnknownNameError`
    naming the known ones."""

    def __init__(self, kind: str, methods: list[Method]):
        super().__init__((m.name, m) for m in methods)
        self.kind = kind

    def __missing__(self, name: str):
        raise UnknownNameError(self.kind, name, self)

    def labels(self, **extra: str) -> dict[str, str]:
        """``{name: label}`` (plus ``extra`` rows such as ``dense="Dense"``)."""
        return {k: m.label for k, m in self.items()} | extra

    def names(self, **flags) -> list[str]:
        """Names whose attributes equal ``flags`` (e.g. ``calibration_free=True``), registry order."""
        return [k for k, m in self.items() if all(getattr(m, f) == v for f, v in flags.items())]

    def help(self) -> str:
        return ", ".join(self)


# ---- small helpers every method family shares ------------------------------------------------

class Hyper(dict):
    """A method's parameters (its registry defaults with the caller's values): a dict, which records store, read by
    name (``params.gamma``)."""

    def __getattr__(self, name: str):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


def check_params(kind: str, name: str, allowed, params: dict | None) -> dict:
    """``params`` if every key is in ``allowed``; else a one-line error naming what is taken."""
    unknown = sorted(set(params or {}) - set(allowed))
    if unknown:
        raise ReproError(f"{kind} {name!r} takes {', '.join(allowed) or 'no parameters'}; got {', '.join(unknown)}")
    return dict(params or {})


def n_lowest(fraction: float, size: int) -> int:
    """floor(fraction * size), robust to float representation (0.29 * 100 -> 29)."""
    return math.floor(round(fraction * size, 9))


def minmax(x: np.ndarray) -> np.ndarray:
    """``x`` rescaled to [0, 1] (all zeros when it is constant)."""
    lo, hi = x.min(), x.max()
    return np.zeros_like(x) if hi == lo else (x - lo) / (hi - lo)
