"""Notebook 3's grid, declared once: :class:`BanditGrid` (its experiments, and one :func:`~repro.engines.plan.section`
per notebook section: the cells it needs and the frame it shows). The notebook calls each section;
``repro run`` surveys them (:func:`repro.engines.plan.survey`): the same cells by the same calls.
"""
from __future__ import annotations

from repro.engines.bandit import BanditExperiment, VisionBanditExperiment
from repro.engines.plan import Sections, section
from repro.papers.bandit import tryit
from repro.papers.bandit.params import BanditParams
from repro.papers.bandit.records import MAB, bandit_frame, vision_frame


def _language_frame(g):
    return bandit_frame(g.store, g.lm, memory=g.p.memory, search=g.p.search, join=g.p.join)


def _vision_frame(g):
    return vision_frame(g.store, g.vision, memory=g.p.memory, search=g.p.vision_search, join=g.p.join)


def _paper_frame(g):
    ps = g.p.paper_search
    return bandit_frame(g.store, g.paper_lm, memory=g.p.memory, search=ps.search, join=g.p.join) if ps else None


def _wide_frame(g):
    return vision_frame(g.store, g.vision, memory=g.p.memory, search=g.p.wide_search, join=g.p.join) \
        if g.p.wide_search else None


class BanditGrid(Sections):
    """Notebook 3's experiments (``lm``: ``{model: BanditExperiment}``, ``vision``: ``{model:
    VisionBanditExperiment}``) and the cells of each section."""
    sections = ("exercises", "language_models", "paper_searches", "vision_models", "memory_ablation", "wide_budget", "join_ablation",
                "exploration_ablation", "precision_replay", "removal")

    def __init__(self, session):
        self.session, self.store, self.p = session, session.store, BanditParams.of(session.params)
        p = self.p
        self.lm = session.experiments(BanditExperiment, p.models, calib_batch_size=p.calib_batch_size,
                                      search_dtype=p.search_dtype)
        self.vision = session.experiments(VisionBanditExperiment, p.vision_models, n_calib=p.vision_n_calib,
                                          n_eval=p.vision_n_eval, calib_batch_size=p.vision_calib_batch_size,
                                          search_dtype=p.search_dtype, images=p.vision_data)
        ps = p.paper_search  # section 2b: the same models (one copy of the weights), the paper's search precision
        self.paper_lm = {} if ps is None else session.experiments(
            BanditExperiment, [m for m in p.models if m in ps.unit_settings], shared=self.lm,
            calib_batch_size=p.calib_batch_size, search_dtype=ps.search_dtype)

        first = next(iter(self.lm.values()), None)
        self.tryit = None if first is None else tryit.exercises(first)

    def all_experiments(self) -> list:
        return [*self.lm.values(), *self.paper_lm.values(), *self.vision.values(), *([self.tryit] if self.tryit else [])]

    @section
    def exercises(self):
        """Section 1's "Try it" exercises: their default runs (:mod:`repro.papers.exercises`); the exercises
        object, or None without a model to run them on."""
        if self.tryit is not None:
            yield self.tryit.all_defaults.ask()
        return self.tryit

    # ---- one method per section ------------------------------------------------------------------
    @section(shows=_language_frame)
    def language_models(self):
        """Section 2 (Table 1): per language model, dense and every (unit type, ratio, method, seed)."""
        p = self.p
        for name, e in self.lm.items():
            for methods, search in self._searches(p.methods, p.search):
                yield e.grid.ask(p.unit_settings.get(name, {}), methods, p.seeds, search, p.lambada_limit)

    @section(shows=_paper_frame)
    def paper_searches(self):
        """Section 2b: Table 1's searches at the paper's setting (``paper_search``: its budget, pool and precision, its
        methods and unit settings), every seed, the dense cell shared with section 2; nothing without it."""
        ps = self.p.paper_search
        for name, e in self.paper_lm.items():
            for methods, search in self._searches(ps.methods, ps.search):
                yield e.grid.ask(ps.unit_settings.get(name, {}), methods, self.p.seeds, search, self.p.lambada_limit)

    def _searches(self, methods: list, search: dict, join: str | None = None,
                  memory: str | None = None) -> list[tuple[list, dict]]:
        """``methods`` split into the rest, MAB-UCB (searching with the ``memory`` parameter, or ``memory``
        given here) and MAB-TS (with that memory and the ``join`` parameter's rule, or ``join`` given here)."""
        memory = {**search, "memory": memory or self.p.memory}
        return [(m, s) for m, s in (([m for m in methods if m not in MAB], search),
                                    ([m for m in methods if m == "ucb"], memory),
                                    ([m for m in methods if m == "thompson"], {**memory, "join": join or self.p.join}))
                if m]

    @section(shows=_vision_frame)
    def vision_models(self):
        """Section 4 (Table 2): per vision model, dense and every method x seed at ``vision_ratio``."""
        p = self.p
        for e in self.vision.values():
            for methods, search in self._searches(p.vision_methods, p.vision_search):
                yield e.grid.ask({"head": [p.vision_ratio]}, methods, p.seeds, search)

    def ablation_units(self, model: str) -> dict:
        """The (unit kind: ratios) of ``model`` that the ablations of sections 5b and 5d run on: the
        ``ablation_settings`` parameter's part of ``unit_settings``, or all of it when that is None."""
        p = self.p
        return p.unit_settings.get(model, {}) if p.ablation_settings is None else p.ablation_settings.get(model, {})

    @section
    def memory_ablation(self):
        """Section 5b: the MAB searches again under each of :meth:`BanditParams.ablation_memories` (same seeds,
        budgets and pools); False when the profile turns it off."""
        p = self.p
        for memory in self.p.ablation_memories():
            for name, e in self.lm.items():
                for methods, search in self._searches(list(MAB), p.search, memory=memory):
                    yield e.grid.ask(self.ablation_units(name), methods, p.seeds, search, p.lambada_limit)
            for e in self.vision.values():
                for methods, search in self._searches(list(MAB), p.vision_search, memory=memory):
                    yield e.grid.ask({"head": [p.vision_ratio]}, methods, p.seeds, search)
        return bool(self.p.ablation_memories())

    @section
    def join_ablation(self):
        """Section 5d: the MAB-TS searches again under the other join rule (same seeds, memory, budgets and
        pools); False when the profile turns it off."""
        p, join = self.p, self.p.ablation_join()
        if join is None:
            return False
        for name, e in self.lm.items():
            for methods, search in self._searches(["thompson"], p.search, join=join):
                yield e.grid.ask(self.ablation_units(name), methods, p.seeds, search, p.lambada_limit)
        for e in self.vision.values():
            for methods, search in self._searches(["thompson"], p.vision_search, join=join):
                yield e.grid.ask({"head": [p.vision_ratio]}, methods, p.seeds, search)
        return True

    @section
    def exploration_ablation(self):
        """Section 5e: MAB-UCB again with each exploration constant of ``ucb_c_ablation`` (per model and unit kind),
        on that model's ablation settings, with the same seeds, memory, budgets and pools; False when the profile
        names none."""
        p = self.p
        for name, by_kind in p.ucb_c_ablation.items():
            e, units = self.lm.get(name), self.ablation_units(name)
            for kind, cs in by_kind.items() if e is not None else ():
                for c in cs if kind in units else ():
                    yield e.grid.ask({kind: units[kind]}, ["ucb"], p.seeds, {**p.search, "memory": p.memory, "c": c},
                                     p.lambada_limit)
        return bool(p.ucb_c_ablation)

    @section
    def precision_replay(self):
        """Section 5f: the replay record (:meth:`BanditExperiment.replay`, float32) of each search of
        ``search_replay`` (of a model in the profile), as the grid searched it."""
        p, out = self.p, []
        for r in p.search_replay:
            if r["model"] in self.lm:
                search = next(s for m, s in self._searches([r["method"]], p.search) if m)
                out.append((yield self.lm[r["model"]].replay.ask(r["method"], [r["kind"]], r["ratio"], r["seed"],
                                                                   search)))
        return out

    @section(shows=_wide_frame)
    def wide_budget(self):
        """Section 5c: budgeted greedy and the MAB searches on the vision models with the ``wide_search``
        budget (at least twice the pool: room for adaptive allocation); None when the profile has none."""
        p = self.p
        for e in self.vision.values() if p.wide_search else ():
            for methods, search in self._searches(["greedy", *MAB], p.wide_search):
                yield e.grid.ask({"head": [p.vision_ratio]}, methods, p.seeds, search)

    @section
    def removal(self):
        """Section 8: the removal record of the ``removal`` parameter's (model, method, seed), each unit
        type's largest ratio; None when that model is not in the profile."""
        p, rm = self.p, self.p.removal
        if rm is None or rm["model"] not in self.lm:
            return None
        search = next(s for m, s in self._searches([rm["method"]], p.search) if m)
        return (yield self.lm[rm["model"]].removal.ask(rm["method"], p.unit_settings[rm["model"]], rm["seed"], search,
                                                       rm["batches"], p.seqlen, rm["repeats"]))


def build(session) -> BanditGrid:
    """Notebook 3's grid from its parameters."""
    return BanditGrid(session)

