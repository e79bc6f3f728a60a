"""Notebook 3's parameters (:class:`BanditParams`), each default declared here once: the notebook's parameters cell
says the same values (tested), a profile changes some of them, and :meth:`BanditParams.of` checks a run's values
before any model is loaded."""
from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from repro.engines.params import NotebookParams, Number
from repro.errors import ReproError, UnknownNameError, check_list, check_number


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


class PaperSearch(BaseModel):
    """Section 2b: the language-model searches again at the paper's setting, ``budget`` paired evaluations per step
    over a pool of ``pool_size`` with losses in ``search_dtype`` (the paper: 32 over 48; float32 here, the paper's
    GPU precision being unstated), for ``methods`` on ``unit_settings`` (a part of the notebook's), every seed."""
    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    budget: int = 32
    pool_size: int = 48
    search_dtype: str = "float32"
    methods: list[str] = ["ucb", "thompson", "greedy", "greedy-memory"]
    unit_settings: dict[str, dict[str, list[Number]]] = {"smollm2-135m": {"head": [0.10], "mlp": [0.05]},
                                                         "gemma3-270m": {"head": [0.10]}}

    @property
    def search(self) -> dict:
        """The ``search`` mapping the grid's searches take (``budget``, ``pool_size``)."""
        return {"budget": self.budget, "pool_size": self.pool_size}


class BanditParams(NotebookParams):
    """Notebook 3 (damage-aware bandit pruning): the session's parameters with notebook 3's defaults, then what
    chooses its cells, section by section."""
    figures_dir: str = "../figures/03_bandit"
    unit_settings: dict[str, dict[str, list[Number]]] = {"smollm2-135m": {"head": [0.10], "mlp": [0.03, 0.05, 0.08]},
                                                         "gemma3-270m": {"head": [0.10]}}
    ablation_settings: dict[str, dict[str, list[Number]]] | None = None  # the part of unit_settings 5b and 5d run on
    data: str = "wikitext2:test"
    seqlen: int = 128
    max_windows: int | None = 1024
    batch_size: int = 8
    calib_nsamples: int = 512
    calib_seqlen: int = 128
    calib_batch_size: int = 8
    search_dtype: str = "float32"  # losses of the searches: float32, or "eval" for eval_dtype (Taylor/Fisher: float32)
    methods: list[str] = ["random", "magnitude", "wanda", "taylor", "fisher", "greedy", "greedy-memory", "ucb",
                          "thompson"]
    seeds: list[int] = [1, 2, 3, 42, 123]
    search: dict[str, Any] = {"budget": 32, "pool_size": 48}
    lambada_limit: int | None = 1024
    vision_search: dict[str, Any] = {"budget": 32, "pool_size": 48}  # the vision searches' budget and pool
    vision_models: list[str] = ["fashion-vit", "fashion-dinov2"]
    vision_ratio: Number = 0.10
    vision_methods: list[str] = ["random", "magnitude", "greedy", "ucb", "thompson"]
    vision_n_calib: int = 512
    vision_calib_batch_size: int = 64
    vision_n_eval: int = 10000
    vision_data: str = "fashion-mnist"  # or "imagenette[:/path]": ImageNet classifiers on Imagenette
    memory: str = "persist"  # MAB arm statistics (repro.methods.bandit): kept while in the pool; "step": this step's
    memory_ablation: bool = True  # section 5b: the MAB searches again under the other memory rules
    join: str = "posterior"  # MAB-TS: the best posterior mean joins; "mean": the best mean reward, as MAB-UCB
    join_ablation: bool = True  # section 5d: the MAB-TS searches again under the other join rule
    ucb_c_ablation: dict[str, dict[str, list[Number]]] = {}  # section 5e: {model: {kind: [c]}}, MAB-UCB again
    search_replay: list[dict[str, Any]] = []  # section 5f: searches whose joins are replayed in float32
    wide_search: dict[str, Any] = {}  # section 5c: greedy and the MAB searches on the vision models, budget >= 2 x pool
    paper_search: PaperSearch | None = None  # section 2b: Table 1's searches at the paper's budget, pool and precision
    removal: dict[str, Any] | None = {"model": "smollm2-135m", "method": "thompson", "seed": 1, "batches": [1, 8],
                               "repeats": 5}

    def check(self) -> None:
        """Every value in range and every name known, before any model is loaded."""
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
        self._check_exploration()
        self._check_replay()
        known = sorted({k for m in SELECTORS.values() for k in m.defaults})
        for name in ("search", "vision_search", "wide_search"):
            s = getattr(self, name)
            if not isinstance(s, dict):
                raise ReproError(f"parameter {name} must be a mapping (budget, pool_size, ...), got {s!r}")
            for k in s:
                if k not in known:
                    raise UnknownNameError(f"key of parameter {name}", k, known)
            for k in ("budget", "pool_size", "batches_per_eval"):
                if k in s:
                    check_number(f"{name}[{k!r}]", s[k], True, 1)
            if "c" in s:
                check_number(f"{name}['c']", s["c"], lo=0.0)
        self._check_removal()
        self._check_paper_search()

    def _check_paper_search(self) -> None:
        """``paper_search``: known methods, sequential ones (the setting changes only the searches), and unit settings
        that are a part of the notebook's (its rows sit beside Table 1's)."""
        from repro.methods.bandit import SELECTORS

        ps = self.paper_search
        if ps is None:
            return
        check_list("paper_search['methods']", ps.methods, known=SELECTORS.names(sequential=True))
        check_number("paper_search['budget']", ps.budget, True, 1)
        check_number("paper_search['pool_size']", ps.pool_size, True, 1)
        _check_units("paper_search['unit_settings']", ps.unit_settings)
        for model, kinds in ps.unit_settings.items():
            if any(not set(rs) <= set(self.unit_settings.get(model, {}).get(k, [])) for k, rs in kinds.items()):
                raise ReproError(f"parameter paper_search['unit_settings'][{model!r}] must be a part of unit_settings"
                                 f"[{model!r}], got {kinds!r}")

    def _check_removal(self) -> None:
        """``removal``: every field named (a model of ``models``, a selector, a seed, batch sizes and repeats), or
        null for no removal section."""
        from repro.methods.bandit import SELECTORS

        rm, fields = self.removal, ("model", "method", "seed", "batches", "repeats")
        if rm is None or self.at_default("removal") and rm["model"] not in self.models:
            return  # the default names the paper's model: no removal section where the run does not have it
        if not isinstance(rm, dict) or set(rm) != set(fields):
            raise ReproError(f"parameter removal must name {', '.join(fields)} (or be null: no removal section), "
                             f"got {rm!r}")
        if rm["model"] not in self.models:
            raise ReproError(f"parameter removal names model {rm['model']!r}, which is not in models "
                             f"({', '.join(self.models)})")
        if rm["model"] not in self.unit_settings:
            raise ReproError(f"parameter removal names model {rm['model']!r}, which has no unit_settings")
        if rm["method"] not in SELECTORS:
            raise UnknownNameError("removal method", rm["method"], list(SELECTORS))
        check_number("removal['seed']", rm["seed"], True, 0)
        check_list("removal['batches']", rm["batches"], "integer", 1)
        check_number("removal['repeats']", rm["repeats"], True, 1)

    def _check_exploration(self) -> None:
        """``ucb_c_ablation``: ``{model: {unit kind: [positive c]}}``, each model and kind one the ablations run on."""
        from repro.structure.masks import KINDS

        if not isinstance(self.ucb_c_ablation, dict):
            raise ReproError(f"parameter ucb_c_ablation must map each model to {{unit kind: [c]}}, got "
                             f"{self.ucb_c_ablation!r}")
        for model, by_kind in self.ucb_c_ablation.items():
            if model not in self.unit_settings or not isinstance(by_kind, dict):
                raise ReproError(f"parameter ucb_c_ablation[{model!r}] must map unit kinds of a model in "
                                 f"unit_settings to exploration constants, got {by_kind!r}")
            for kind, cs in by_kind.items():
                if kind not in KINDS:
                    raise UnknownNameError("unit kind in ucb_c_ablation", kind, KINDS)
                check_list(f"ucb_c_ablation[{model!r}][{kind!r}]", cs, "number", 0.0)

    def _check_replay(self) -> None:
        """``search_replay``: each entry names a search of the grid (model, kind, ratio, sequential method, seed)."""
        from repro.methods.bandit import SELECTORS

        fields = {"model", "kind", "ratio", "method", "seed"}
        if not isinstance(self.search_replay, list):
            raise ReproError(f"parameter search_replay must be a list of searches, got {self.search_replay!r}")
        for i, r in enumerate(self.search_replay):
            if not isinstance(r, dict) or set(r) != fields:
                raise ReproError(f"parameter search_replay[{i}] must name {', '.join(sorted(fields))}, got {r!r}")
            ratios = self.unit_settings.get(r["model"], {}).get(r["kind"], [])
            if r["ratio"] not in ratios or r["seed"] not in self.seeds:
                raise ReproError(f"parameter search_replay[{i}] must name a setting and seed of the grid "
                                 f"(unit_settings, seeds), got {r!r}")
            if r["method"] not in SELECTORS or not SELECTORS[r["method"]].sequential:
                raise ReproError(f"parameter search_replay[{i}]: {r['method']!r} is not a sequential search "
                                 f"({', '.join(SELECTORS.names(sequential=True))})")

    @property
    def ucb_c(self) -> float:
        """MAB-UCB's exploration constant in ``search`` (its ``c``; the method's default where the profile names none):
        the one place a reader of the parameters finds it."""
        from repro.methods.bandit import UCB_C

        return self.search.get("c", UCB_C)

    def ablation_memories(self) -> list[str]:
        """The memory rules section 5b runs beside ``memory`` ("step", "carry"; none without ``memory_ablation``)."""
        return [m for m in ("step", "carry") if m != self.memory] if self.memory_ablation else []

    def ablation_join(self) -> str | None:
        """The MAB-TS join rule section 5d runs beside ``join`` (None without ``join_ablation``)."""
        from repro.methods.bandit import JOINS

        return next(j for j in JOINS if j != self.join) if self.join_ablation else None
