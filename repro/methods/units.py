"""Units of Paper 3's search and what every selector shares: a typed unit (an attention head or a group of MLP
channels), the evaluator protocol, a selection and its record, the candidates of a model, their magnitudes
(the pool's pre-screen) and the reward map. The searches and the registry: :mod:`repro.methods.bandit`; the
one-shot scorers: :mod:`repro.methods.unit_scores`.
"""
from __future__ import annotations

import re
import time
from dataclasses import asdict, dataclass, field, replace
from typing import Callable, NamedTuple, Protocol, Sequence

import numpy as np
import torch
from scipy.special import expit

from repro.arch import Adapter, Site
from repro.calib.budget import Budget
from repro.errors import ReproError, UnknownNameError
from repro.methods.heads import ROLES, combine
from repro.structure.masks import GROUP_SIZE, KINDS, n_groups

TAU = 0.02              # reward temperature


class Unit(NamedTuple):
    kind: str   # "head" or "mlp"
    layer: int
    index: int  # head, or channel group of the evaluator's group size

    def __str__(self) -> str:
        return f"{self.kind}{self.layer}.{self.index}"

    @classmethod
    def of(cls, named) -> "Unit":
        """The unit a record names: by ``str(unit)`` (``"mlp17.26"``: a selection's pulls and scores keys) or as
        ``[kind, layer, index]`` (its ``units``)."""
        if isinstance(named, str):
            m = re.fullmatch(r"([a-z]+)(\d+)\.(\d+)", named)
            if m is None:
                raise ReproError(f"not a unit name: {named!r} (expected e.g. 'head3.1' or 'mlp17.26')")
            return cls(m.group(1), int(m.group(2)), int(m.group(3)))
        kind, layer, index = named
        return cls(kind, int(layer), int(index))


class Evaluator(Protocol):
    """What the selectors need (``repro.evaluate.prefix.UnitEvaluator`` implements it)."""
    adapter: Adapter
    group_size: int
    n_batches: int
    budget: Budget

    def reset(self) -> None: ...                                         # empty mask, zero budget
    def add(self, unit: Unit) -> None: ...                               # unit joins the mask
    def damage(self, unit: Unit, batches: Sequence[int]) -> float: ...   # one paired evaluation
    def forward(self, batch: int) -> torch.Tensor: ...                   # one calibration pass (hooks read it)
    def gradient(self, batch: int) -> float: ...                         # forward + backward into .grad


@dataclass
class Selection:
    """Result of one selector run."""
    method: str
    units: list[Unit]                                            # in the order they joined
    budget: Budget
    params: dict = field(default_factory=dict)
    damages: list[float] = field(default_factory=list)           # sequential: damage estimate when it joined
    pulls: dict[Unit, int] = field(default_factory=dict)         # sequential: paired evaluations per unit
    rewards: list[list[float]] = field(default_factory=list)     # sequential: rewards of each step's pulls
    scores: dict[Unit, float] = field(default_factory=dict)      # one-shot scorers: every candidate's score
    pulled: list[list[Unit]] = field(default_factory=list)       # sequential: the units pulled in each step
    steps: list[dict] = field(default_factory=list)              # sequential: the budget spent up to each step

    def as_dict(self) -> dict:
        return {"method": self.method, "units": [list(u) for u in self.units], "budget": asdict(self.budget),
                "params": self.params, "damages": self.damages,
                "pulls": {str(u): n for u, n in self.pulls.items()}, "rewards": self.rewards,
                "scores": {str(u): s for u, s in self.scores.items()},
                "pulled": [[str(u) for u in step] for step in self.pulled], "steps": self.steps}

    def prefix(self, k: int) -> "Selection":
        """The selection of the first ``k`` units, exactly as a run to ``k`` would return it:
        no selector's step depends on how many units are still to come (a sequential search's
        first k steps, a one-shot ranking's first k entries, a random permutation's first k), so
        one run to the largest k of a setting serves every smaller k (tested). A sequential
        prefix keeps the budget, pulls and rewards of its first k steps."""
        check_k(k, len(self.units))
        params = {**self.params, "k": int(k)} if self.params else self.params
        if not self.steps:
            return replace(self, units=self.units[:k], params=params)
        return replace(self, units=self.units[:k], params=params, budget=Budget(**self.steps[k - 1]),
                       damages=self.damages[:k], rewards=self.rewards[:k], pulls=count_pulls(self.pulled[:k]),
                       pulled=self.pulled[:k], steps=self.steps[:k])


def count_pulls(pulled: list[list[Unit]]) -> dict[Unit, int]:
    """Paired evaluations per unit over the steps ``pulled``."""
    pulls: dict[Unit, int] = {}
    for u in (u for step in pulled for u in step):
        pulls[u] = pulls.get(u, 0) + 1
    return pulls


# ---- candidates and per-unit sums over weights ----------------------------------------------

def candidates(adapter: Adapter, kinds: Sequence[str] = KINDS, group_size: int = GROUP_SIZE) -> list[Unit]:
    """Every unit of ``kinds``, layer by layer (heads, then MLP groups of ``group_size``)."""
    kinds = check_kinds(kinds)
    out = []
    for i in range(adapter.n_layers):
        if "head" in kinds:
            out += [Unit("head", i, h) for h in range(adapter.attention(i).n_heads)]
        if "mlp" in kinds:
            out += [Unit("mlp", i, g) for g in range(n_groups(adapter.mlp(i).n_channels, group_size))]
    return out


def check_kinds(kinds) -> tuple[str, ...]:
    kinds = (kinds,) if isinstance(kinds, str) else tuple(kinds)
    bad = [k for k in kinds if k not in KINDS]
    if bad or not kinds:
        raise UnknownNameError("unit kind", ",".join(bad) or "(none)", KINDS)
    return kinds


def unit_sums(adapter: Adapter, units: Sequence[Unit], group_size: int,
              values: Callable[[Site, str], torch.Tensor]) -> np.ndarray:
    """Per-unit sums of per-feature ``values(site, role)`` (one number per feature of that role,
    in unit order): a head adds its Q and O features and 1/g of its KV group's K and V
    features; an MLP group adds its channels over every MLP site."""
    per_layer: dict[tuple[str, int], torch.Tensor] = {}
    out = np.empty(len(units))
    for j, u in enumerate(units):
        key = (u.kind, u.layer)
        if key not in per_layer:
            if u.kind == "head":
                a = adapter.attention(u.layer)
                role_units = {r: values(a.site(r), r).double().cpu().reshape(-1, a.head_dim).sum(1) for r in ROLES}
                per_layer[key] = combine(a, role_units, kv_share=True)
            else:
                m = adapter.mlp(u.layer)
                ch = sum(values(s, "c").double().cpu() for s in m.sites)
                n = n_groups(m.n_channels, group_size)  # the last group may be shorter
                per_layer[key] = torch.stack([ch[g * group_size:(g + 1) * group_size].sum() for g in range(n)])
        out[j] = float(per_layer[key][u.index])
    return out


def magnitudes(adapter: Adapter, units: Sequence[Unit], group_size: int) -> np.ndarray:
    """L2 norm of each unit's weights (shared K/V squares counted 1/g per head)."""
    return np.sqrt(unit_sums(adapter, units, group_size, lambda s, r: s.matrix(r).double().pow(2).sum(1)))


def per_kind_normalised(units: Sequence[Unit], scores: np.ndarray) -> np.ndarray:
    """Each kind's scores divided by that kind's mean |score| (comparable across kinds)."""
    scores = np.asarray(scores, dtype=float).copy()
    kinds = np.array([u.kind for u in units])
    if len(set(kinds)) > 1:
        for k in set(kinds):
            scale = np.abs(scores[kinds == k]).mean()
            if scale > 0:
                scores[kinds == k] /= scale
    return scores


# ---- rewards ----------------------------------------------------------------------------------

def reward(damage, tau: float = TAU):
    """``sigmoid(-damage / tau)`` in (0, 1): 0.5 neutral, -> 1 beneficial, -> 0 harmful."""
    if not tau > 0:
        raise ReproError(f"reward temperature tau must be positive, got {tau!r}")
    return expit(-np.asarray(damage, dtype=float) / tau)


# ---- sequential search ------------------------------------------------------------------------

def finish(sel: Selection, ev: Evaluator, t0: float) -> Selection:
    """Freeze the evaluator's budget into the result, with the run's wall time."""
    sel.budget = replace(ev.budget, seconds=time.perf_counter() - t0)
    return sel


def check_k(k: int, n: int) -> None:
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 1 <= k <= n:
        raise ReproError(f"k (units to select) must be an integer in [1, {n}], got {k!r}")


