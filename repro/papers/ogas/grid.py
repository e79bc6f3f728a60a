"""Notebook 2's grid (:class:`OgasGrid`): the setups and experiments per model and data set, and one
:func:`~repro.engines.plan.section` per notebook section (the cells it needs, the frame it shows); :func:`build`.
"""
from __future__ import annotations

import json
from functools import cached_property

import pandas as pd

from repro.assets.data import parse_spec
from repro.assets.machine import computed_on
from repro.engines import plan
from repro.engines.base import owned
from repro.engines.plan import Call, Sections, section
from repro.engines.prune import PruneExperiment
from repro.methods.unstructured import OGAS_SETTINGS, auto_s_max, get_pruner, ogas_setting
from repro.papers.ogas import tryit
from repro.papers.ogas.params import OgasParams
from repro.report import pool_draws

ABLATION = ("wanda", "ogas-energy", "ogas-papr", "ogas")  # Table 5's rows: uniform, energy only, PAPR only, both


def own_headroom(sparsity: float, headroom: float) -> bool:
    """Whether OGAS with ``S_max`` headroom ``headroom`` is its own cell at ``sparsity``: only above
    60% (the paper's 0.6 below), and only where its ``S_max`` differs from the default headroom's
    (at 90% every headroom >= 0.05 hits the 0.95 cap: the pruning is the default cell's)."""
    return sparsity > 0.6 and auto_s_max(sparsity, headroom) != auto_s_max(sparsity)


class OgasGrid(Sections):
    """The cells of Paper 2's notebook: per model a WikiText-2 experiment (``wt``: calibrated on
    WikiText-2 train, evaluated on its test split) and a C4 one (``c4``: the C4 sample's two
    halves) sharing one loaded model, and the notebook's parameters (``p``) that decide which cells each
    section asks for. Each ``run_*`` section computes (or reads) its cells and returns its frame; the tables
    are read from the records by :mod:`repro.papers.ogas`."""
    sections = ("worked", "worked_sparsegpt", "worked_ria", "exercises", "run_main", "run_main_paper", "run_references", "run_nm", "run_zeroshot",
                "run_ablation", "figure2_channels", "run_curve")

    def __init__(self, wt: dict[str, PruneExperiment], c4: dict[str, PruneExperiment], p: OgasParams,
                 paper: "OgasGrid | None" = None):
        """``paper``: the same models at the paper's calibration (``paper_calib``: section 2b's grid), or None."""
        self.wt, self.c4, self.p, self.paper = wt, c4, p, paper

    @property
    def models(self) -> list[str]:
        return list(self.wt)

    @property
    def store(self):
        return next(iter(self.wt.values())).store

    @property
    def wt_name(self) -> str:
        """The frame's data name of the WikiText-2 cells ("wikitext2"; the name of the text that really
        ran, e.g. the packaged sample where WikiText-2 is missing)."""
        return next(iter(self.wt.values())).data.name

    @property
    def c4_name(self) -> str:
        return next(iter(self.c4.values())).data.name

    def experiment(self, model: str, data: str) -> PruneExperiment:
        """``model``'s experiment on the data named ``data`` (``wt_name`` or ``c4_name``)."""
        return (self.wt if data == self.wt_name else self.c4)[model]

    def experiments(self) -> list[PruneExperiment]:
        """This grid's own experiments (not section 2b's): the ones its frame reads."""
        return [*self.wt.values(), *self.c4.values()]

    def all_experiments(self) -> list[PruneExperiment]:
        return [*self.experiments(), *(self.paper.all_experiments() if self.paper else []),
                *([self.tryit] if self.tryit else [])]

    @cached_property
    def tryit(self):
        """Section 1d's exercises on Figure 2's model and layer (:mod:`repro.papers.exercises`); None without a model."""
        return tryit.exercises(self.wt[self.figure_model], self.figure_layer_name) if self.wt else None

    @section
    def exercises(self):
        """Section 1d's "Try it" exercises: their default runs; the exercises object, or None without a model."""
        if self.tryit is not None:
            yield self.tryit.all_defaults.ask()
        return self.tryit

    @property
    def figure_model(self) -> str:
        return self.models[0]

    @cached_property
    def figure_layer_name(self) -> str:
        """Figure 2's layer: ``figure_layer``, else the down projection of the first model's middle block."""
        if self.p.figure_layer:
            return self.p.figure_layer
        downs = self.wt[self.figure_model].down_projections()
        return downs[len(downs) // 2]

    def params_for(self, model: str, method: str, **extra) -> dict:
        """A cell's pruner parameters: OGAS gets ``model``'s setting (lambda, gamma), then ``extra``."""
        return {**(ogas_setting(self.p.ogas_setting[model]) if method == "ogas" else {}), **extra}

    def describe(self) -> str:
        """One line per model: its source, OGAS setting, evaluation and calibration."""
        lines = []
        for name, e in self.wt.items():
            s = e.setup
            lines.append(f"{name}: {e.identity.get('upstream')}; OGAS setting {self.p.ogas_setting[name]} "
                         f"{ogas_setting(self.p.ogas_setting[name])}; eval {e.data.label} / {self.c4[name].data.label}, "
                         f"{e.windows()}; calibration {s.calib_nsamples} x {s.calib_seqlen}")
        return "\n".join(lines)

    # ---- the cells of each section ------------------------------------------------------------
    def main_cell(self, model: str, data: str, method: str, **params) -> Call:
        """The call of a cell at the main sparsity: WikiText-2 cells of the zero-shot models carry their zero-shot
        scores, and the first model's OGAS cell keeps Figure 2's per-channel arrays, so each pruned
        model is built once and every section reads the same record."""
        extra = {}
        if data == self.wt_name and model in self.p.zeroshot_models and not params:
            extra.update(zeroshot_tasks=self.p.zeroshot_tasks, zeroshot_limit=self.p.zeroshot_limit)
        if data == self.wt_name and model == self.figure_model and method == "ogas" and not params:
            extra["keep_layers"] = (self.figure_layer_name,)
        return self.experiment(model, data).cell.ask(method, self.p.sparsity,
                                                     params=self.params_for(model, method, **params), **extra)

    def extra_draws(self, model: str, data: str, method: str) -> list[int]:
        """The calibration draws of ``method`` beyond the setup's own (none for a method that reads no data)."""
        from repro.methods.unstructured import get_pruner

        own = self.experiment(model, data).setup.calib_seed
        return [s for s in self.p.calib_seeds if s is not None and s != own] if get_pruner(method).calibrated else []

    @section(shows=lambda g: frame(g))
    def run_main(self):
        """Tables 1-2: dense and every method at the main sparsity on WikiText-2 (and C4 for
        ``c4_models``), plus OGAS at the exact target on ``exact_rounding_data``."""
        yield from self.main_cells()

    @section(shows=lambda g: frame(g.paper) if g.paper else None)
    def run_main_paper(self):
        """Section 2b: Tables 1-2 at the paper's calibration (``paper_calib``; None without it): the same cells
        under the paper-calibration grid :func:`build` made (``paper``), the frame its own."""
        if self.paper is not None:
            yield from self.paper.main_cells()

    def main_cells(self):
        """The calls of Tables 1-2's cells (:meth:`run_main`)."""
        for name in self.models:
            for data in (self.wt_name, self.c4_name):
                if data == self.c4_name and name not in self.p.c4_models:
                    continue
                yield self.experiment(name, data).dense.ask()
                for m in self.p.methods:
                    yield self.main_cell(name, data, m)
                    for seed in self.extra_draws(name, data, m):  # further calibration draws: perplexity only
                        yield self.experiment(name, data).cell.ask(m, self.p.sparsity, params=self.params_for(name, m),
                                                                   calib_seed=seed)
                if {data, parse_spec(self.experiment(name, data).setup.data)[0]} & set(self.p.exact_rounding_data):
                    yield self.main_cell(name, data, "ogas", rounding="exact")
                    yield from self.control_draws(name, data, "ogas", rounding="exact")

    def control_draws(self, model: str, data: str, method: str, **params):
        """With ``control_draws``, a control row's cell (Table 5's variants, the exact rounding, the other gamma
        rule) on the further calibration draws of ``calib_seeds`` too, so that it compares with Wanda and OGAS
        draw by draw (:func:`repro.report.paired_cells`) instead of on the first draw alone."""
        if self.p.control_draws:
            for seed in self.extra_draws(model, data, method):
                yield self.experiment(model, data).cell.ask(method, self.p.sparsity,
                                                            params=self.params_for(model, method, **params),
                                                            calib_seed=seed)

    @section
    def run_references(self):
        """The dense WikiText-2 numbers that place the tables' sample: ``{model: {"first short", "spread short",
        "whole split": dense record}}``, the first two where the setup names a shorter ``reference_seqlen`` (an
        earlier sample's), the last where its windows are spread (:meth:`Experiment.full_split`)."""
        out = {}
        for name, e in self.wt.items():
            refs = {}
            if e.setup.reference_seqlen:
                refs["first short"] = yield e.short_windows(False).dense.ask()
                refs["spread short"] = yield e.short_windows(True).dense.ask()
            if e.setup.spread and e.setup.max_windows:
                refs["whole split"] = yield e.full_split().dense.ask()
            if refs:
                out[name] = refs
        return out

    @section(shows=lambda g: frame(g))
    def run_nm(self):
        """N:M cells (WikiText-2) of ``nm_methods`` on ``nm_models``."""
        for name in self.p.nm_models:
            for pattern in self.p.nm_patterns:
                for m in self.p.nm_methods:
                    yield self.wt[name].cell.ask(m, None, pattern=pattern)

    @plan.cells
    def zeroshot_cells(self):
        """``{model: {"dense" or method: record}}``: the zero-shot models' dense zero-shot cell and their main
        cells (the pruned models' scores are in those)."""
        out = {}
        for name in self.p.zeroshot_models:
            out[name] = {"dense": (yield self.wt[name].dense_zeroshot.ask(self.p.zeroshot_tasks, self.p.zeroshot_limit))}
            for m in self.p.methods:
                out[name][m] = yield self.main_cell(name, self.wt_name, m)
        return out

    @section(shows=lambda g: zeroshot_results(g.zeroshot_cells()))
    def run_zeroshot(self):
        """Tables 3-4: ``{model: {"dense" or method: lm-eval result}}`` of the zero-shot models."""
        yield self.zeroshot_cells.ask()

    @section(shows=lambda g: frame(g))
    def run_ablation(self):
        """Table 5: Wanda, OGAS with one signal (the model's gamma), and OGAS, on WikiText-2; and, beyond
        the paper, OGAS with its gamma searched on ``wide_gamma_bounds`` (models whose gamma is searched)."""
        for name in self.p.ablation_models:
            for r in ABLATION:
                if r in ("wanda", "ogas"):
                    yield self.main_cell(name, self.wt_name, r)
                else:
                    gamma = {"gamma": ogas_setting(self.p.ogas_setting[name])["gamma"]}
                    yield self.wt[name].cell.ask(r, self.p.sparsity, params=gamma)
                    if self.p.control_draws:
                        for seed in self.extra_draws(name, self.wt_name, r):
                            yield self.wt[name].cell.ask(r, self.p.sparsity, params=gamma, calib_seed=seed)
            if self.p.wide_gamma_bounds and self.params_for(name, "ogas").get("gamma") == "search":
                wide = {"gamma_bounds": tuple(self.p.wide_gamma_bounds)}
                yield self.main_cell(name, self.wt_name, "ogas", **wide)
                yield from self.control_draws(name, self.wt_name, "ogas", **wide)
        for name in self.p.gamma_rule_models:  # fixed against searched gamma on every model: the other rule
            own = self.params_for(name, "ogas")["gamma"]
            other = OGAS_SETTINGS["mistral"]["gamma"] if own == "search" else "search"
            yield self.wt[name].cell.ask("ogas", self.p.sparsity, params=self.params_for(name, "ogas", gamma=other))
            yield from self.control_draws(name, self.wt_name, "ogas", gamma=other)

    @section(shows=lambda g: frame(g))
    def run_curve(self):
        """Figure 4: every method at each of ``curve_sparsities`` (WikiText-2), and OGAS with the
        other ``S_max`` headrooms where they prune differently (:func:`own_headroom`); at the sparsities of
        ``curve_draws`` (other than the main one, whose draws are Tables 1-2's), the calibrated cells on every
        calibration draw of ``calib_seeds`` too; every cell's frame so far."""
        for name in self.p.curve_models:
            e = self.wt[name]
            for sp in self.p.curve_sparsities:
                drawn = sp in self.p.curve_draws and sp != self.p.sparsity
                for m in self.p.methods:
                    if sp == self.p.sparsity:
                        yield self.main_cell(name, self.wt_name, m)
                    else:
                        yield e.cell.ask(m, sp, params=self.params_for(name, m))
                    for seed in self.extra_draws(name, self.wt_name, m) if drawn else ():
                        yield e.cell.ask(m, sp, params=self.params_for(name, m), calib_seed=seed)
                for h in self.p.s_max_headrooms:
                    if own_headroom(sp, h):
                        params = self.params_for(name, "ogas", s_max_headroom=h)
                        yield e.cell.ask("ogas", sp, params=params)
                        for seed in self.extra_draws(name, self.wt_name, "ogas") if drawn else ():
                            yield e.cell.ask("ogas", sp, params=params, calib_seed=seed)

    def figure2_layers(self, model: str) -> tuple[str, ...]:
        """The down projections of ``model`` at the ``figure2_depths`` (relative: 0 the first block, 1 the last; "all":
        every one)."""
        downs = self.wt[model].down_projections()
        if self.p.figure2_depths == "all":
            return tuple(downs)
        return tuple(dict.fromkeys(downs[round(d * (len(downs) - 1))] for d in self.p.figure2_depths))

    @section
    def figure2_channels(self):
        """Section 5's corners: every model's per-channel OGAS arrays on :meth:`figure2_layers` (its own setting, the
        main sparsity, no evaluation: :meth:`PruneExperiment.channels`); ``{model: record}``."""
        out = {}
        for name, e in self.wt.items():
            if self.p.figure2_depths:
                out[name] = yield e.channels.ask("ogas", self.p.sparsity, self.figure2_layers(name),
                                                 self.params_for(name, "ogas"))
        return out

    @section
    def worked_sparsegpt(self):
        """The worked baseline: SparseGPT on Figure 2's layer at the main sparsity, its terms recorded
        (:meth:`PruneExperiment.worked_sparsegpt`; read by :mod:`repro.papers.ogas.sparsegpt_worked`)."""
        return (yield self.wt[self.figure_model].worked_sparsegpt.ask(self.figure_layer_name, self.p.sparsity))

    @section
    def worked_ria(self):
        """The worked RIA: RIA on Figure 2's layer at the main sparsity, its terms recorded
        (:meth:`PruneExperiment.worked_ria`; read by :mod:`repro.papers.ogas.ria_worked`)."""
        return (yield self.wt[self.figure_model].worked_ria.ask(self.figure_layer_name, self.p.sparsity))

    @section
    def worked(self):
        """The worked example: OGAS (the first model's setting, the main sparsity) on Figure 2's layer, its terms
        recorded (:meth:`PruneExperiment.worked_layer`; read by :mod:`repro.papers.ogas.worked`)."""
        return (yield self.wt[self.figure_model].worked_layer.ask(self.figure_layer_name, "ogas", self.p.sparsity,
                                                                  self.params_for(self.figure_model, "ogas")))




def prune_frame(store, experiments: list[PruneExperiment], session: bool = True) -> pd.DataFrame:
    """One row per prune-ppl cell of the current protocol under one of ``experiments``' setups;
    ``session``: only the cells asked for in this session (``store.status``), so records of an
    earlier run with other settings never slip into a table."""
    rows = []
    for r, e in owned(store, "prune-ppl", experiments, session):
        c, res = r["config"], r["result"]
        rep = res.get("report", {})
        rows.append({"key": ("prune-ppl", r["key"]), "model": e.name, "data": e.data.name, "method": c["method"],
                     "draw": int((c.get("calibration") or {}).get("seed", e.setup.calib_seed)),
                     "drawn": "calibration" if c["method"] != "dense" and get_pruner(c["method"]).calibrated else None,
                     "params_key": json.dumps(c.get("params", {}), sort_keys=True),
                     "sparsity": c.get("sparsity", 0.0) or 0.0, "pattern": c.get("pattern", "dense"),
                     "params": c.get("params", {}), "ppl": res["ppl"], "ci95": res["ci95"],
                     "window_nll": res["window_nll"], "achieved": rep.get("overall", 0.0),
                     "prune_seconds": rep.get("seconds"), "timings": rep.get("timings"), "extras": rep.get("extras"),
                     "zeros_sha256": res.get("zeros_sha256"), "zeroshot": res.get("zeroshot"),
                     "channels": res.get("channels"), "channel_quantiles": res.get("channel_quantiles"),
                     "calibration_tokens": res.get("calibration_tokens"),
                     "machine": computed_on(r.get("machine"))})
    return pd.DataFrame(rows)


CELL = ["model", "data", "method", "sparsity", "pattern", "params_key"]  # what names a cell apart from its draw


def frame(grid: OgasGrid, draws: bool = False) -> pd.DataFrame:
    """The frame of every cell the notebook's grid asked for so far in this session, one row per cell with
    its calibration draws pooled (:func:`repro.report.pool_draws`: the geometric mean over draws; the other
    columns, zero-shot scores and per-channel arrays included, are the first draw's); ``draws``: one row
    per draw instead."""
    f = prune_frame(grid.store, grid.experiments())
    if len(f):  # each model's own gamma rule: OGAS with the other one is its own row (records.row_name)
        f["own_gamma"] = [ogas_setting(grid.p.ogas_setting[m])["gamma"] for m in f.model]
    return f if draws else pool_draws(f, CELL)


def zeroshot_results(cells: dict) -> dict[str, dict[str, dict]]:
    """``{model: {"dense" or method: lm-eval result}}`` of :meth:`OgasGrid.zeroshot_cells`' records."""
    return {name: {k: r["result"] if k == "dense" else r["result"]["zeroshot"] for k, r in c.items()}
            for name, c in cells.items()}



def build(session) -> OgasGrid:
    """Notebook 2's grid from its parameters: per model a WikiText-2 and a C4 experiment sharing one
    loaded model."""
    p = OgasParams.of(session.params)  # every value checked before any model is loaded
    wt = session.experiments(PruneExperiment, p.models)
    c4_changes = {"data": p.c4_data, "calib_data": p.c4_calib}
    c4 = session.experiments(PruneExperiment, p.models, shared=wt, changes=c4_changes)
    paper = None
    if p.paper_calib is not None:  # section 2b: the same models, one copy of their weights, the paper's calibration
        pc = p.paper_calib
        size = {"calib_nsamples": pc.calib_nsamples, "calib_seqlen": pc.calib_seqlen}
        q = p.model_copy(update={**size, "calib_seeds": list(pc.calib_seeds), "paper_calib": None,
                                 "zeroshot_models": [], "exact_rounding_data": [], "control_draws": False,
                                 "nm_models": [], "ablation_models": [], "curve_models": [], "gamma_rule_models": []})
        paper = OgasGrid(session.experiments(PruneExperiment, p.models, shared=wt, changes=size),
                         session.experiments(PruneExperiment, p.models, shared=wt, changes={**c4_changes, **size}), q)
    return OgasGrid(wt, c4, p, paper)

