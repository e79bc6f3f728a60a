"""Notebook 3's grid, declared once: :class:`BanditGrid` (its experiments, one method per notebook section that runs, or while
the store plans, plans that section's cells and returns its frame). :func:`plan` is "call every
section", so the notebook and ``repro run`` ask for the same cells by the same calls.
"""
from __future__ import annotations

import pandas as pd

from repro.engines.bandit import BanditExperiment, VisionBanditExperiment
from repro.engines.plan import Sections, shown
from repro.papers.bandit.params import BanditParams
from repro.papers.bandit.records import MAB, bandit_frame, vision_frame


class BanditGrid(Sections):
    """Notebook 3's experiments (``lm``: ``{model: BanditExperiment}``, ``vision``: ``{model:
    VisionBanditExperiment}``) and the cells of each section."""
    sections = ("language_models", "vision_models", "memory_ablation", "wide_budget", "join_ablation", "removal")

    def __init__(self, session):
        self.session, self.store, self.p = session, session.store, BanditParams.of(session.params)
        p = self.p
        self.lm = session.experiments(BanditExperiment, p.models, calib_batch_size=p.calib_batch_size,
                                      search_dtype=p.search_dtype)
        self.vision = session.experiments(VisionBanditExperiment, p.vision_models, n_calib=p.vision_n_calib,
                                          n_eval=p.vision_n_eval, calib_batch_size=p.vision_calib_batch_size,
                                          search_dtype=p.search_dtype, images=p.vision_data)

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

    def memory_ablation(self) -> bool:
        """Section 5b: the MAB searches again under each of :meth:`BanditParams.ablation_memories` (same seeds,
        budgets and pools); False when the profile turns it off."""
        p = self.p
        for memory in self.p.ablation_memories():
            for name, e in self.lm.items():
                for methods, search in self._searches(list(MAB), p.search, memory=memory):
                    e.grid(self.ablation_units(name), methods, p.seeds, search, p.lambada_limit)
            for e in self.vision.values():
                for methods, search in self._searches(list(MAB), p.vision_search, memory=memory):
                    e.grid({"head": [p.vision_ratio]}, methods, p.seeds, search)
        return bool(self.p.ablation_memories())

    def join_ablation(self) -> bool:
        """Section 5d: the MAB-TS searches again under the other join rule (same seeds, memory, budgets and
        pools); False when the profile turns it off."""
        p, join = self.p, self.p.ablation_join()
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


def build(session) -> BanditGrid:
    """Notebook 3's grid from its parameters."""
    return BanditGrid(session)


def plan(session, grid: BanditGrid) -> None:
    """Ask for every cell notebook 3 asks for: every section of the grid."""
    grid.plan()
