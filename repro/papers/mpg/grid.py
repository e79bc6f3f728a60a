"""Notebook 1's grid, declared once: :class:`MpgGrid` (its experiments, one method per notebook section that runs, or while the
store plans, plans that section's cells and returns what the section shows). :func:`plan` is "call
every section", so the notebook and ``repro run`` ask for the same cells by the same calls.
"""
from __future__ import annotations

import pandas as pd

from repro.engines.glue import GlueHeadExperiment
from repro.engines.heads import HeadExperiment, VisionHeadExperiment
from repro.engines.mlm import MlmHeadExperiment
from repro.engines.plan import Sections, shown
from repro.papers.mpg.glue import glue_frame
from repro.papers.mpg.params import MpgParams
from repro.papers.mpg.records import Z_METHODS, main_cells, ppl_frame, scores_frame, vision_frame, zeroshot_cells


class MpgGrid(Sections):
    """Notebook 1's experiments (``lm``: ``{model: HeadExperiment}``, ``vision``: ``{model:
    VisionHeadExperiment}``, the MHA image classifiers; ``mlm``: ``{model: MlmHeadExperiment}``, the masked
    LMs of Table I's encoder rows) and the cells of each section."""
    sections = ("norm_profile", "worked", "scores", "table1", "full_split", "feeding", "anatomy", "remedy", "table2",
                "table3", "zeroshot", "ties", "efficiency", "mha", "encoder_rows")

    def __init__(self, session, lm: dict | None = None, vision: dict | None = None, glue: dict | None = None,
                 mlm: dict | None = None):
        """``lm``, ``vision``, ``glue``, ``mlm``: experiments to use instead of building them from the parameters."""
        self.session, self.store, self.p = session, session.store, MpgParams.of(session.params)
        q = self.p
        self.lm = lm if lm is not None else session.experiments(
            HeadExperiment, q.models, grad_nsamples=q.grad_nsamples, tie_seeds=q.tie_seeds)
        self.vision = vision if vision is not None else session.experiments(
            VisionHeadExperiment, q.vision_models, n_calib=q.vision_n_calib, grad_nsamples=q.vision_grad_nsamples,
            n_eval=q.vision_n_eval, images=q.vision_data)
        self.mlm = mlm if mlm is not None else {} if not q.mlm_models else session.experiments(
            MlmHeadExperiment, q.mlm_models, changes=q.mlm_changes(), grad_nsamples=q.grad_nsamples)
        self.glue = glue if glue is not None else {
            t: GlueHeadExperiment(q.glue_encoder, t, self.store, q.glue_k, recipe=q.recipe(t), n_calib=q.glue_n_calib,
                                  grad_nsamples=q.glue_grad_nsamples, methods=q.methods, sparsities=q.sparsities,
                                  z_values=q.z_values, random_seeds=q.glue_random_seeds)
            for t in q.glue_tasks}

    def all_experiments(self) -> list:
        return [*self.lm.values(), *self.vision.values(), *self.glue.values(), *self.mlm.values()]

    # ---- one method per section ------------------------------------------------------------------
    def norm_profile(self) -> dict | None:
        """Section 1's figure: eq. 1's norms of every role in the middle layer of the first model."""
        if not self.lm:
            return None
        first = next(iter(self.lm.values()))
        return first.norm_profile(first.shape[0] // 2)

    def worked(self) -> dict:
        """Section 1a: ``{model: worked-example record}`` (:meth:`HeadExperiment.worked`, z = 2)."""
        return {n: e.worked() for n, e in self.lm.items()}

    def scores(self) -> pd.DataFrame:
        """Section 2: every method's head scores on every model."""
        for e in self.lm.values():
            e.grid(self.p.methods)
        return shown(self.store, lambda: scores_frame(self.store, self.lm))

    def table1(self) -> pd.DataFrame:
        """Section 3 (Table I): dense and every method x sparsity, Random once per seed of ``random_seeds``
        and the calibrated scorers once per draw of ``calib_seeds``; the frame of the main cells (z = 2,
        index tie-break)."""
        for e in self.lm.values():
            e.grid(self.p.methods, self.p.sparsities, dense=True, random_seeds=self.p.random_seeds,
                   calib_seeds=self.p.calib_seeds)
        return shown(self.store, lambda: main_cells(ppl_frame(self.store, self.lm)))

    def full_split(self) -> dict:
        """Section 3: ``{model: dense record over every window of the split}`` (where the table's sample
        is a subset of it)."""
        return {n: e.full_split().dense() for n, e in self.lm.items() if e.setup.spread and e.setup.max_windows}

    def feeding(self) -> dict:
        """Section 3a: ``{model: (dense record, dense record without <bos>)}`` of the families that need <bos>."""
        return {n: (e.dense(), e.without_bos().dense()) for n, e in self.lm.items() if e.bos is not None}

    def table2(self) -> pd.DataFrame:
        """Section 4 (Table II): MP-G and MP at every z on ``z_sparsities``; every perplexity cell so far."""
        for e in self.lm.values():
            e.grid(Z_METHODS, self.p.z_sparsities, self.p.z_values)
        return shown(self.store, lambda: ppl_frame(self.store, self.lm))

    def zeroshot(self) -> list[dict]:
        """Section 6 (Table III analogue): zero-shot records of the cells Table I's ranking picks; they
        exist only once Table I's records do (while planning, nothing before may be pending)."""
        p = self.p
        if not p.zeroshot_tasks or (self.store.plan is not None and not self.store.plan.empty):
            return []
        main = main_cells(ppl_frame(self.store, self.lm))
        cells = {n: zeroshot_cells(main, n, p.zeroshot_sparsities) for n in p.zeroshot_models if n in self.lm}
        return [r for n, c in cells.items() for r in self.lm[n].zeroshot_grid(c, p.zeroshot_tasks, p.zeroshot_limit)]

    def anatomy(self) -> list[dict]:
        """Section 3c: the anatomy record (:meth:`HeadExperiment.anatomy`) of every Table I cell that
        collapses (perplexity above ``COLLAPSE`` x dense; its first draw), and of MP-G and MP at the highest
        sparsity; they exist only once Table I's records do (while planning, nothing before may be pending)."""
        from repro.papers.mpg.claims import COLLAPSE

        if not self.p.anatomy or (self.store.plan is not None and not self.store.plan.empty):
            return []
        main = main_cells(ppl_frame(self.store, self.lm))
        out = []
        for n, e in self.lm.items():
            dense = main[(main.model == n) & (main.method == "dense")]
            if dense.empty:
                continue
            cells = main[(main.model == n) & (main.method != "dense") & (main.ppl > COLLAPSE * dense.ppl.iloc[0])]
            wanted = {(m, float(sp)) for m, sp in zip(cells.method, cells.sparsity)}
            wanted |= {(m, max(self.p.sparsities)) for m in ("mpg", "mp") if m in self.p.methods}
            out += [e.anatomy(m, sp) for m, sp in sorted(wanted)]
        return out

    def remedy(self) -> pd.DataFrame:
        """Section 3d (our ablation): ``remedy_methods`` ranked by layer-normalised scores at every sparsity
        (their first draw); every perplexity cell so far, one row per draw."""
        for e in self.lm.values():
            for m in self.p.remedy_methods:
                for sp in self.p.sparsities:
                    e.cell(m, sp, scale="layer")
        return shown(self.store, lambda: ppl_frame(self.store, self.lm, pool=False))

    def table3(self) -> pd.DataFrame:
        """Section 6 (Table III as the paper runs it): every fold of every fine-tuning seed on every task."""
        for e in self.glue.values():
            e.grid(self.p.glue_seeds)
        return shown(self.store, lambda: glue_frame(self.store, self.glue))

    def ties(self) -> pd.DataFrame:
        """Section 7: MP-G with each model's seeded random tie-breaks; every perplexity cell so far."""
        for e in self.lm.values():
            e.grid(["mpg"], self.p.sparsities, tie_break="random")
        return shown(self.store, lambda: ppl_frame(self.store, self.lm))

    def efficiency(self) -> dict:
        """Section 8: ``{model: efficiency record}`` of zeroed against removed heads."""
        p = self.p
        return {n: self.lm[n].efficiency("mpg", p.efficiency_sparsities, p.efficiency_batches, p.efficiency_seqlen,
                                         p.efficiency_repeats) for n in p.efficiency_models if n in self.lm}

    def mha(self) -> tuple[pd.DataFrame, pd.DataFrame]:
        """Section 9: every method's scores (MP's at every z too, for the exact MP-G = MP check), dense and
        every method x sparsity, and MP-G's z sweep on the MHA encoders; their (frame, scores)."""
        p = self.p
        for e in self.vision.values():
            e.grid(["mp"], (), p.z_values)  # scores only
            e.grid(p.methods, p.sparsities, dense=True)
            e.grid(["mpg"], p.z_sparsities, p.z_values)
        return shown(self.store, lambda: (vision_frame(self.store, self.vision), scores_frame(self.store, self.vision)))

    def encoder_rows(self) -> pd.DataFrame:
        """Section 9b (Table I's encoder rows): on every masked LM of ``mlm_models``, dense and every method x
        sparsity (z = 2, index tie-break), Random once per seed of ``random_seeds``, the calibrated scorers on the
        first calibration draw only (the setup's ``calib_seed``); the frame of those cells, pseudo-perplexity in
        its ``ppl`` column."""
        for e in self.mlm.values():
            e.grid(self.p.methods, self.p.sparsities, dense=True, random_seeds=self.p.random_seeds)
        return shown(self.store, lambda: main_cells(ppl_frame(self.store, self.mlm, records=MlmHeadExperiment.records)))


def build(session) -> MpgGrid:
    """Notebook 1's grid from its parameters."""
    return MpgGrid(session)


def plan(session, grid: MpgGrid) -> None:
    """Ask for every cell notebook 1 asks for: every section of the grid."""
    grid.plan()
