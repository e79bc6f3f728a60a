"""Notebook 1's grid, declared once: :class:`MpgGrid` (its experiments, and one :func:`~repro.engines.plan.section`
per notebook section: the cells it needs and what it shows). The notebook calls each section; ``repro run``
surveys them (:func:`repro.engines.plan.survey`): the same cells by the same calls.
"""
from __future__ import annotations

from repro.engines.glue import GlueHeadExperiment
from repro.engines.heads import HeadExperiment, VisionHeadExperiment
from repro.engines.mlm import MlmHeadExperiment
from repro.engines.plan import Sections, section
from repro.methods.heads import get_method
from repro.papers.mpg import tryit
from repro.papers.mpg.glue import glue_frame
from repro.papers.mpg.params import MpgParams
from repro.papers.mpg.records import Z_METHODS, main_cells, ppl_frame, scores_frame, vision_frame, zeroshot_cells


class MpgGrid(Sections):
    """Notebook 1's experiments (``lm``: ``{model: HeadExperiment}``, ``vision``: ``{model:
    VisionHeadExperiment}``, the MHA image classifiers; ``mlm``: ``{model: MlmHeadExperiment}``, the masked
    LMs of Table I's encoder rows) and the cells of each section."""
    sections = ("norm_profile", "worked", "exercises", "scores", "table1", "full_split", "feeding", "anatomy", "remedy",
                "table1_paper", "table2", "table3", "zeroshot", "ties", "efficiency", "mha", "encoder_rows")

    def __init__(self, session, lm: dict | None = None, vision: dict | None = None, glue: dict | None = None,
                 mlm: dict | None = None):
        """``lm``, ``vision``, ``glue``, ``mlm``: experiments to use instead of building them from the parameters."""
        self.session, self.store, self.p = session, session.store, MpgParams.of(session.params)
        q = self.p
        self.lm = lm if lm is not None else session.experiments(
            HeadExperiment, q.models, grad_nsamples=q.grad_nsamples, tie_seeds=q.tie_seeds)
        # section 3e: the same models at the paper's calibration sizes, sharing their loaded weights
        self.lm_paper = {} if q.paper_calib is None or lm is not None else {
            n: HeadExperiment(n, e.setup.replace(calib_nsamples=q.paper_calib.calib_nsamples), self.store,
                              grad_nsamples=q.paper_calib.grad_nsamples, tie_seeds=e.tie_seeds, loaded=e)
            for n, e in self.lm.items()}
        self.vision = vision if vision is not None else session.experiments(
            VisionHeadExperiment, q.vision_models, n_calib=q.vision_n_calib, grad_nsamples=q.vision_grad_nsamples,
            n_eval=q.vision_n_eval, images=q.vision_data)
        self.mlm = mlm if mlm is not None else {} if not q.mlm_models else session.experiments(
            MlmHeadExperiment, q.mlm_models, changes=q.mlm_changes(), grad_nsamples=q.grad_nsamples)
        self.glue = glue if glue is not None else {
            t: GlueHeadExperiment(q.glue_encoder, t, self.store, q.glue_k, recipe=q.recipe(t), n_calib=q.glue_n_calib,
                                  grad_nsamples=q.glue_grad_nsamples, methods=q.glue_methods, sparsities=q.sparsities,
                                  z_values=q.z_values, random_seeds=q.glue_random_seeds)
            for t in q.glue_tasks}

        first = next(iter(self.lm.values()), None)
        self.tryit = None if first is None else tryit.exercises(first)

    def all_experiments(self) -> list:
        return [*self.lm.values(), *self.lm_paper.values(), *self.vision.values(), *self.glue.values(),
                *self.mlm.values(), *([self.tryit] if self.tryit else [])]

    @section
    def exercises(self):
        """Section 1's "Try it" exercises: their default runs (:mod:`repro.papers.exercises`); the exercises
        object, or None without a model to run them on."""
        if self.tryit is not None:
            yield self.tryit.all_defaults.ask()
        return self.tryit

    # ---- one method per section ------------------------------------------------------------------
    @section
    def norm_profile(self):
        """Section 1's figure: eq. 1's norms of every role in the middle layer of the first model."""
        if not self.lm:
            return None
        first = next(iter(self.lm.values()))
        return (yield first.norm_profile.ask(first.shape[0] // 2))

    @section
    def worked(self):
        """Section 1a: ``{model: worked-example record}`` (:meth:`HeadExperiment.worked`, z = 2)."""
        out = {}
        for n, e in self.lm.items():
            out[n] = yield e.worked.ask()
        return out

    @section(shows=lambda g: scores_frame(g.store, g.lm))
    def scores(self):
        """Section 2: every method's head scores on every model."""
        for e in self.lm.values():
            yield e.grid.ask(self.p.methods)

    @section(shows=lambda g: main_cells(ppl_frame(g.store, g.lm)))
    def table1(self):
        """Section 3 (Table I): dense and every method x sparsity, Random once per seed of ``random_seeds``
        and the calibrated scorers once per draw of ``calib_seeds``; the frame of the main cells (z = 2,
        index tie-break)."""
        for e in self.lm.values():
            yield e.grid.ask(self.p.methods, self.p.sparsities, dense=True, random_seeds=self.p.random_seeds,
                             calib_seeds=self.p.calib_seeds)

    @section
    def full_split(self):
        """Section 3: ``{model: dense record over every window of the split}`` (where the table's sample
        is a subset of it)."""
        out = {}
        for n, e in self.lm.items():
            if e.setup.spread and e.setup.max_windows:
                out[n] = yield e.full_split().dense.ask()
        return out

    @section
    def feeding(self):
        """Section 3a: ``{model: (dense record, dense record without <bos>)}`` of the families that need <bos>."""
        out = {}
        for n, e in self.lm.items():
            if e.bos is not None:
                out[n] = ((yield e.dense.ask()), (yield e.without_bos().dense.ask()))
        return out

    @section(shows=lambda g: ppl_frame(g.store, g.lm))
    def table2(self):
        """Section 4 (Table II): MP-G and MP at every z on ``z_sparsities``; every perplexity cell so far."""
        for e in self.lm.values():
            yield e.grid.ask(Z_METHODS, self.p.z_sparsities, self.p.z_values)

    @section(reads_earlier=True)
    def zeroshot(self):
        """Section 6 (Table III analogue): zero-shot records of the cells Table I's ranking picks (they
        exist only once Table I's records do)."""
        p = self.p
        if not p.zeroshot_tasks:
            return []
        main = main_cells(ppl_frame(self.store, self.lm))
        n_win, win_len = self.p.anatomy_sample
        out = []
        for n in p.zeroshot_models:
            if n in self.lm:
                cells = zeroshot_cells(main, n, p.zeroshot_sparsities)
                out += (yield self.lm[n].zeroshot_grid.ask(cells, p.zeroshot_tasks, p.zeroshot_limit))
        return out

    @section(reads_earlier=True)
    def anatomy(self):
        """Section 3c: the anatomy record (:meth:`HeadExperiment.anatomy`) of every Table I cell that
        collapses (perplexity above ``COLLAPSE`` x dense; its first draw), and of MP-G and MP at the highest
        sparsity (they exist only once Table I's records do)."""
        from repro.papers.mpg.claims import COLLAPSE

        if not self.p.anatomy:
            return []
        main = main_cells(ppl_frame(self.store, self.lm))
        n_win, win_len = self.p.anatomy_sample
        out = []
        for n, e in self.lm.items():
            dense = main[(main.model == n) & (main.method == "dense")]
            if dense.empty:
                continue
            cells = main[(main.model == n) & (main.method != "dense") & (main.ppl > COLLAPSE * dense.ppl.iloc[0])]
            wanted = {(m, float(sp)) for m, sp in zip(cells.method, cells.sparsity)}
            wanted |= {(m, max(self.p.sparsities)) for m in ("mpg", "mp") if m in self.p.methods}
            for m, sp in sorted(wanted):
                out.append((yield e.anatomy.ask(m, sp, n_windows=n_win, seqlen=win_len)))
            for m, sp, draw in self.outlier_draws(n, COLLAPSE * dense.ppl.iloc[0]):
                out.append((yield e.anatomy.ask(m, sp, calib_seed=draw, n_windows=n_win, seqlen=win_len)))
            if self.p.z_values and max(self.p.z_values) != 2.0 and "mpg" in self.p.methods and self.p.z_sparsities:
                out.append((yield e.anatomy.ask("mpg", max(self.p.z_sparsities), z=max(self.p.z_values),
                                                n_windows=n_win, seqlen=win_len)))
        return out

    def outlier_draws(self, model: str, collapse: float) -> list[tuple[str, float, int]]:
        """(method, sparsity, calibration draw) of each Table I cell whose worst draw collapses (perplexity above
        ``collapse``) and lies more than ten times above its first draw's: a collapse the first draw's diagnosis
        does not describe."""
        every = main_cells(ppl_frame(self.store, self.lm, pool=False))
        first = self.lm[model].setup.calib_seed
        out = []
        for (m, sp), g in every[(every.model == model) & (every.method != "dense")].groupby(["method", "sparsity"]):
            if g.draw.nunique() < 2 or not get_method(m).calibration:
                continue
            worst, base = g.loc[g.ppl.idxmax()], g[g.draw == first]
            if int(worst.draw) != first and len(base) and worst.ppl > collapse and worst.ppl > 10 * base.ppl.iloc[0]:
                out.append((m, float(sp), int(worst.draw)))
        return out

    @section(shows=lambda g: ppl_frame(g.store, g.lm, pool=False))
    def remedy(self):
        """Section 3d (our ablation): ``remedy_methods`` ranked by layer-normalised scores at every sparsity
        (their first draw); every perplexity cell so far, one row per draw."""
        for e in self.lm.values():
            for m in self.p.remedy_methods:
                for sp in self.p.sparsities:
                    yield e.cell.ask(m, sp, scale="layer")

    @section(shows=lambda g: main_cells(ppl_frame(g.store, g.lm_paper)))
    def table1_paper(self):
        """Section 3e: Table I's calibration-based scorers at the paper's calibration sizes (``paper_calib``), on
        every calibration draw; the frame of Table I's cells at that setting (dense and the calibration-free
        methods are the same cells as Table I's)."""
        calibrated = [m for m in self.p.methods if get_method(m).calibration]
        for e in self.lm_paper.values():
            yield e.grid.ask(calibrated, self.p.sparsities, calib_seeds=self.p.calib_seeds)

    def paper_frame(self):
        """Every perplexity cell of the session with the calibration-based scorers at the paper's calibration
        sizes (what the claims read when ``paper_calib`` is set; None when it is not)."""
        return ppl_frame(self.store, self.lm_paper) if self.lm_paper else None

    @section(shows=lambda g: glue_frame(g.store, g.glue))
    def table3(self):
        """Section 6 (Table III as the paper runs it): every fold of every fine-tuning seed on every task."""
        for e in self.glue.values():
            yield e.grid.ask(self.p.glue_seeds)

    @section(shows=lambda g: ppl_frame(g.store, g.lm))
    def ties(self):
        """Section 7: MP-G with each model's seeded random tie-breaks; every perplexity cell so far."""
        for e in self.lm.values():
            yield e.grid.ask(["mpg"], self.p.sparsities, tie_break="random")

    @section
    def efficiency(self):
        """Section 8: ``{model: efficiency record}`` of zeroed against removed heads."""
        p, out = self.p, {}
        for n in p.efficiency_models:
            if n in self.lm:
                out[n] = yield self.lm[n].efficiency.ask("mpg", p.efficiency_sparsities, p.efficiency_batches,
                                                         p.efficiency_seqlen, p.efficiency_repeats)
        return out

    @section(shows=lambda g: (vision_frame(g.store, g.vision), scores_frame(g.store, g.vision)))
    def mha(self):
        """Section 9: every method's scores (MP's at every z too, for the exact MP-G = MP check), dense and
        every method x sparsity, and MP-G's z sweep on the MHA encoders; their (frame, scores)."""
        p = self.p
        for e in self.vision.values():
            yield e.grid.ask(["mp"], (), p.z_values)  # scores only
            yield e.grid.ask(p.methods, p.sparsities, dense=True)
            yield e.grid.ask(["mpg"], p.z_sparsities, p.z_values)

    @section(shows=lambda g: main_cells(ppl_frame(g.store, g.mlm, records=MlmHeadExperiment.records)))
    def encoder_rows(self):
        """Section 9b (Table I's encoder rows): on every masked LM of ``mlm_models``, dense and every method x
        sparsity (z = 2, index tie-break), Random once per seed of ``random_seeds``, the calibrated scorers on the
        first calibration draw only (the setup's ``calib_seed``); the frame of those cells, pseudo-perplexity in
        its ``ppl`` column."""
        for e in self.mlm.values():
            yield e.grid.ask(self.p.methods, self.p.sparsities, dense=True, random_seeds=self.p.random_seeds)


def build(session) -> MpgGrid:
    """Notebook 1's grid from its parameters."""
    return MpgGrid(session)

