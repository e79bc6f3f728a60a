"""Notebook 3's grid, declared once: :class:`BanditParams` (the notebook's parameters that choose cells,
typed) and :class:`BanditGrid` (its experiments, one method per notebook section that runs, or while
the store plans, plans that section's cells and returns its frame). :func:`plan` is "call every
section", so the notebook and ``repro run`` ask for the same cells by the same calls.
"""
from __future__ import annotations

from dataclasses import MISSING, dataclass, fields

import pandas as pd

from repro.engines.bandit import BanditExperiment, VisionBanditExperiment
from repro.engines.plan import shown
from repro.errors import ReproError, UnknownNameError, check_list, check_number
from repro.methods.bandit import JOINS
from repro.papers.bandit.records import MAB, ablation_rules, bandit_frame, vision_frame


def _check_units(name: str, settings) -> None:
    """``settings`` is ``{model: {unit kind: [ratios in [0, 1)]}}``, or one line naming what is not."""
    from repro.structure.masks import KINDS

    if not isinstance(settings, dict):
        raise ReproError(f"parameter {name} must map each model to {{unit kind: [ratios]}}, got {settings!r}")
    for model, by_kind in settings.items():
        if not isinstance(by_kind, dict):
            raise ReproError(f"parameter {name}[{model!r}] must map unit kinds to ratios, got {by_kind!r}")
        for kind, ratios in by_kind.items():
            if kind not in KINDS:
                raise UnknownNameError(f"unit kind in {name}", kind, KINDS)
            check_list(f"{name}[{model!r}][{kind!r}]", ratios, "number", 0.0, 1.0)


@dataclass(frozen=True)
class BanditParams:
    """What decides notebook 3's cells (each field is the notebook parameter of that name)."""
    models: list
    unit_settings: dict
    methods: list
    seeds: list
    search: dict
    lambada_limit: int | None
    vision_models: list
    vision_ratio: float
    vision_methods: list
    vision_search: dict
    memory: str
    memory_ablation: bool
    join: str
    join_ablation: bool
    wide_search: dict
    removal: dict
    seqlen: int
    ablation_settings: dict | None = None

    def __post_init__(self):
        """Every value checked before any model is loaded (one line naming the parameter)."""
        from repro.methods.bandit import JOINS, MEMORY, SELECTORS

        check_list("models", self.models)
        check_list("vision_models", self.vision_models)
        check_list("methods", self.methods, known=list(SELECTORS))
        check_list("vision_methods", self.vision_methods, known=list(SELECTORS))
        check_list("seeds", self.seeds, "integer", 0)
        _check_units("unit_settings", self.unit_settings)
        if self.ablation_settings is not None:
            _check_units("ablation_settings", self.ablation_settings)
            for model, kinds in self.ablation_settings.items():
                if any(not set(rs) <= set(self.unit_settings.get(model, {}).get(k, [])) for k, rs in kinds.items()):
                    raise ReproError(f"parameter ablation_settings[{model!r}] must be a part of unit_settings"
                                     f"[{model!r}], got {kinds!r}")
        check_number("vision_ratio", self.vision_ratio, lo=0.0, hi=1.0)
        check_number("lambada_limit", self.lambada_limit, True, 1, allow_none=True)
        check_number("seqlen", self.seqlen, True, 1)
        if self.memory not in MEMORY:
            raise UnknownNameError("memory", self.memory, MEMORY)
        if self.join not in JOINS:
            raise UnknownNameError("join", self.join, JOINS)
        for name in ("search", "vision_search", "wide_search"):
            s = getattr(self, name)
            if not isinstance(s, dict):
                raise ReproError(f"parameter {name} must be a mapping (budget, pool_size, ...), got {s!r}")
            for k in ("budget", "pool_size"):
                if k in s:
                    check_number(f"{name}[{k!r}]", s[k], True, 1)

    @classmethod
    def from_params(cls, params: dict) -> "BanditParams":
        return cls(**{f.name: params[f.name] for f in fields(cls) if f.name in params or f.default is MISSING})


class BanditGrid:
    """Notebook 3's experiments (``lm``: ``{model: BanditExperiment}``, ``vision``: ``{model:
    VisionBanditExperiment}``) and the cells of each section."""

    def __init__(self, session):
        p = session.params
        self.session, self.store, self.p = session, session.store, BanditParams.from_params(p)
        self.lm = session.experiments(BanditExperiment, p["models"], calib_batch_size=p["calib_batch_size"],
                                      search_dtype=p["search_dtype"])
        self.vision = session.experiments(VisionBanditExperiment, p["vision_models"], n_calib=p["vision_n_calib"],
                                          n_eval=p["vision_n_eval"], calib_batch_size=p["vision_calib_batch_size"],
                                          search_dtype=p["search_dtype"], images=p["vision_data"])

    def all_experiments(self) -> list:
        return [*self.lm.values(), *self.vision.values()]

    # ---- one method per section ------------------------------------------------------------------
    def language_models(self) -> pd.DataFrame:
        """Section 2 (Table 1): per language model, dense and every (unit type, ratio, method, seed)."""
        p = self.p
        for name, e in self.lm.items():
            for methods, search in self._searches(p.methods, p.search):
                e.grid(p.unit_settings.get(name, {}), methods, p.seeds, search, p.lambada_limit)
        return shown(self.store, lambda: bandit_frame(self.store, self.lm, memory=p.memory, search=p.search,
                                                               join=p.join))

    def _searches(self, methods: list, search: dict, join: str | None = None,
                  memory: str | None = None) -> list[tuple[list, dict]]:
        """``methods`` split into the rest, MAB-UCB (searching with the ``memory`` parameter, or ``memory``
        given here) and MAB-TS (with that memory and the ``join`` parameter's rule, or ``join`` given here)."""
        memory = {**search, "memory": memory or self.p.memory}
        return [(m, s) for m, s in (([m for m in methods if m not in MAB], search),
                                    ([m for m in methods if m == "ucb"], memory),
                                    ([m for m in methods if m == "thompson"], {**memory, "join": join or self.p.join}))
                if m]

    def vision_models(self) -> pd.DataFrame:
        """Section 4 (Table 2): per vision model, dense and every method x seed at ``vision_ratio``."""
        p = self.p
        for e in self.vision.values():
            for methods, search in self._searches(p.vision_methods, p.vision_search):
                e.grid({"head": [p.vision_ratio]}, methods, p.seeds, search)
        return shown(self.store, lambda: vision_frame(self.store, self.vision, memory=p.memory,
                                                               search=p.vision_search, join=p.join))

    def ablation_units(self, model: str) -> dict:
        """The (unit kind: ratios) of ``model`` that the ablations of sections 5b and 5d run on: the
        ``ablation_settings`` parameter's part of ``unit_settings``, or all of it when that is None."""
        p = self.p
        return p.unit_settings.get(model, {}) if p.ablation_settings is None else p.ablation_settings.get(model, {})

    def ablation_memories(self) -> list[str]:
        """The memory rules section 5b runs beside the ``memory`` parameter's ("step", "carry")."""
        return ablation_rules(self.p.memory, self.p.memory_ablation)

    def memory_ablation(self) -> bool:
        """Section 5b: the MAB searches again under each of :meth:`ablation_memories` (same seeds,
        budgets and pools); False when the profile turns it off."""
        p = self.p
        for memory in self.ablation_memories():
            for name, e in self.lm.items():
                for methods, search in self._searches(list(MAB), p.search, memory=memory):
                    e.grid(self.ablation_units(name), methods, p.seeds, search, p.lambada_limit)
            for e in self.vision.values():
                for methods, search in self._searches(list(MAB), p.vision_search, memory=memory):
                    e.grid({"head": [p.vision_ratio]}, methods, p.seeds, search)
        return bool(self.ablation_memories())

    def ablation_join(self) -> str | None:
        """The Thompson join rule section 5d runs beside the ``join`` parameter's (None without ``join_ablation``)."""
        return next(j for j in JOINS if j != self.p.join) if self.p.join_ablation else None

    def join_ablation(self) -> bool:
        """Section 5d: the MAB-TS searches again under the other join rule (same seeds, memory, budgets and
        pools); False when the profile turns it off."""
        p, join = self.p, self.ablation_join()
        if join is None:
            return False
        for name, e in self.lm.items():
            for methods, search in self._searches(["thompson"], p.search, join=join):
                e.grid(self.ablation_units(name), methods, p.seeds, search, p.lambada_limit)
        for e in self.vision.values():
            for methods, search in self._searches(["thompson"], p.vision_search, join=join):
                e.grid({"head": [p.vision_ratio]}, methods, p.seeds, search)
        return True

    def wide_budget(self) -> pd.DataFrame | None:
        """Section 5c: budgeted greedy and the MAB searches on the vision models with the ``wide_search``
        budget (at least twice the pool: room for adaptive allocation); None when the profile has none."""
        p = self.p
        if not p.wide_search:
            return None
        for e in self.vision.values():
            for methods, search in self._searches(["greedy", *MAB], p.wide_search):
                e.grid({"head": [p.vision_ratio]}, methods, p.seeds, search)
        return shown(self.store, lambda: vision_frame(self.store, self.vision, memory=p.memory,
                                                               search=p.wide_search, join=p.join))

    def removal(self) -> dict | None:
        """Section 8: the removal record of the ``removal`` parameter's (model, method, seed), each unit
        type's largest ratio; None when that model is not in the profile."""
        p, rm = self.p, self.p.removal
        if rm["model"] not in self.lm:
            return None
        search = next(s for m, s in self._searches([rm["method"]], p.search) if m)
        return self.lm[rm["model"]].removal(rm["method"], p.unit_settings[rm["model"]], rm["seed"], search,
                                            rm["batches"], p.seqlen, rm["repeats"])

    def plan(self) -> None:
        """Every section, in the notebook's order."""
        self.language_models()
        self.vision_models()
        self.memory_ablation()
        self.wide_budget()
        self.join_ablation()
        self.removal()


def build(session) -> BanditGrid:
    """Notebook 3's grid from its parameters."""
    return BanditGrid(session)


def plan(session, grid: BanditGrid) -> None:
    """Ask for every cell notebook 3 asks for: every section of the grid."""
    grid.plan()
