"""Notebook 2's tables (:class:`Report`): each method takes what a section of the grid returned and gives the
:class:`repro.report.Table` the notebook shows (frame, caption, raw numbers from :mod:`.tables`, :mod:`.claims`,
:mod:`.worked`; the reading from :mod:`.readings`)."""
from __future__ import annotations

import pandas as pd

from repro import origin
from repro.family import family_note
from repro.papers.ogas import claims as C
from repro.papers.ogas import corners as K
from repro.papers.ogas import readings as Rd
from repro.papers.ogas import ria_worked as RW
from repro.papers.ogas import sparsegpt_worked as S
from repro.papers.ogas import tables as T
from repro.papers.ogas import worked as W
from repro.papers.ogas.grid import OgasGrid
from repro.papers.ogas.grid import frame as draws_frame
from repro.papers.ogas.records import dense_ppl, find
from repro.report import Table, differences_table, model_line, provenance, summarised
from repro.survive import survival, survival_reading, unchanged_rows

PAPER_CALIBRATION = (128, 2048)  # the paper's calibration: 128 windows of 2048 tokens


def join(*readings: str) -> str:
    """Readings one after another, the empty ones left out."""
    return "\n".join(r for r in readings if r)


class Report:
    """Paper 2's tables for one notebook session's grid."""

    def __init__(self, session, grid: OgasGrid):
        self.session, self.grid = session, grid

    @staticmethod
    def family_note(claims: Table) -> str:
        """The claims as one family of tests (:func:`repro.family.family_note`)."""
        return family_note(claims.frame)

    def four_bit_origin(self) -> Table | None:
        """What a GGUF Q4_1 round trip of two fp32 models does to this notebook's weight-only scores
        (:mod:`repro.origin`); None where the benchmark's result is not committed."""
        return origin.table("magnitude")

    def provenance(self) -> str:
        """The *This run* block's provenance: what each model is, its OGAS setting, evaluation samples
        (WikiText-2 test and C4's held-out half), dtype and calibration."""
        g = self.grid
        lines = [f"{line}; weights {e.identity.get('quantisation')}, evaluated in {e.setup.eval_dtype}"
                 f"; calibration of {e.calib_text.label} (WikiText-2 rows) and "
                 f"{g.c4[n].calib_text.label} (C4 rows)"
                 for line, (n, e) in zip(g.describe().splitlines(), g.wt.items())]
        return provenance(lines)

    def differences(self) -> Table:
        """What differs from the paper, generated from the parameters that ran."""
        g = self.grid
        models = "; ".join(f"{model_line(e)}, the paper's {g.p.ogas_setting[n]} setting" for n, e in g.wt.items())
        calib = "; ".join(f"{n}: {e.setup.calib_nsamples} x {e.setup.calib_seqlen} tokens of {e.calib_text.label} "
                          f"(WikiText rows), of {g.c4[n].calib_text.label} (C4 rows)" for n, e in g.wt.items())
        evals = "; ".join(f"{n}: {e.data.label} and {g.c4[n].data.label}, {e.windows()}" for n, e in g.wt.items())
        zs = (f"{', '.join(g.p.zeroshot_tasks)} on {', '.join(g.p.zeroshot_models)}, first {g.p.zeroshot_limit} documents "
              "each (lm-eval's own task YAMLs)" if g.p.zeroshot_models else "not run")
        dtypes = ", ".join(sorted({e.setup.eval_dtype for e in [*g.experiments(), *(g.paper.experiments() if g.paper
                                                                                        else [])]}))
        rows = [("models / settings", "LLaMA-3.1-8B-Instruct (lambda 0.4, gamma searched), Mistral-7B-v0.1 (lambda "
                 "0.2, gamma 0.2)", models),
                ("calibration", "128 x 2048 tokens (WikiText-2 train for WikiText rows, C4 for C4 rows)", calib),
                ("evaluation", "WikiText-2 test, C4 validation", evals),
                ("zero-shot", "the full task sets", zs),
                ("precision", "fp16 on a GPU", f"pruning in float32; evaluation {dtypes}")]
        return Table(*differences_table(rows, self.session.profile))

    # ---- the worked example (section 1a) ----

    def worked_channels(self, worked: dict) -> Table:
        """The worked layer's most and least important channels (:func:`.worked.channel_terms`)."""
        g, layer = self.grid, W.trace_of(worked)["layer"]
        return Table(W.channel_terms(worked).round(4),
                     f"**The most and least important channels of {layer}** ({g.figure_model}, OGAS "
                     f"{g.p.ogas_setting[g.figure_model]} setting, {g.p.sparsity:.0%}). E: energy, P: peak ratio, x and "
                     f"y their normalised terms, I the importance, s the sparsity OGAS assigns; vs Wanda: weights "
                     f"removed from the row minus Wanda's (negative: the row keeps more).")

    def worked_reallocation(self, worked: dict) -> Table:
        """How far OGAS moves the worked layer's channels off the target, per gamma (:func:`.worked.reallocation_table`)."""
        return Table(W.reallocation_table(worked).round(4),
                     f"**How much OGAS moves channels off the uniform {self.grid.p.sparsity:.0%}**, per gamma: alpha, "
                     f"the layer's relative output error L, quantiles and spread of s, and the share of channels within "
                     f"0.01 of the target.", Rd.reallocation_reading(worked))

    # ---- Tables 1-2 and beside them (section 2) ----

    def table12(self, frame: pd.DataFrame) -> Table:
        """Tables 1-2 (:func:`.tables.table12`) and what they show."""
        t = T.table12(frame, self.grid)
        return t._replace(reading=Rd.table12_reading(t.raw))

    # ---- section 2b: Tables 1-2 at the paper's calibration (grid.paper) ----

    def calibration_words(self, paper: bool) -> str:
        """"the paper's calibration (128 x 2048 tokens, draw 0)" (``paper``), or the profile's own in the same words."""
        g = self.grid.paper if paper else self.grid
        s, seeds = next(iter(g.wt.values())).setup, [x for x in g.p.calib_seeds if x is not None]
        draws = f"draw {seeds[0]}" if len(seeds) == 1 else f"{len(seeds) or 1} draw(s)"
        return (f"{'the paper' if paper else 'this profile'}'s calibration ({s.calib_nsamples} x {s.calib_seqlen} "
                f"tokens, {draws})")

    def paper_calibration_pending(self) -> str:
        """Where the profile calibrates below the paper's 128 x 2048 tokens and sets no ``paper_calib``: which rows
        are still at the profile's calibration (one generated line); "" where nothing is pending."""
        return Rd.paper_calibration_pending(self.grid.p, PAPER_CALIBRATION)

    def table12_paper(self, frame: pd.DataFrame) -> Table:
        """Tables 1-2 again at the paper's calibration (section 2b's grid), with how much text each calibration drew on."""
        t = T.table12(frame, self.grid.paper)
        cover = Rd.calibration_cover(frame)
        return t._replace(reading=join(Rd.table12_reading(t.raw), cover))  # its caption names the calibration

    def calibration_size(self, scaled: pd.DataFrame, paper: pd.DataFrame) -> Table:
        """Each calibrated method's Tables 1-2 cell at the profile's calibration and at the paper's, paired on the
        windows and the draws they share (:func:`.tables.calibration_size`)."""
        t = T.calibration_size(scaled, paper, self.grid)
        return Table(t.round(3) if len(t) else t,
                     f"**What the calibration size changes.** Tables 1-2's calibrated methods at "
                     f"{self.calibration_words(False)} and at {self.calibration_words(True)}: perplexity (geometric "
                     "mean over the draws) and paper's / profile's paired on the evaluation windows (< 1: the paper's "
                     f"larger sample prunes better); profile `{self.grid.p.profile}`.", Rd.calibration_size_reading(t))

    def claims_paper(self, paper: pd.DataFrame) -> Table:
        """The claims of Tables 1-2 on section 2b's cells (:func:`.claims.claims_table` on the paper's grid)."""
        return C.claims_table(paper, self.grid.paper)

    def survival(self, scaled: Table, paper: Table) -> Table:
        """Does each verdict of Tables 1-2 survive the paper's calibration? (:func:`repro.survive.survival`, the
        scaled rows of the claims the paper's grid checks.)"""
        keep = scaled.frame[scaled.frame.claim.isin(set(paper.frame.claim))]
        t = survival(keep, paper.frame)
        return Table(t, f"**Does each verdict survive the paper's calibration?** The claims on Tables 1-2 at "
                        f"{self.calibration_words(False)} and at {self.calibration_words(True)}, each by the same "
                        f"rule (profile `{self.grid.p.profile}`).",
                     survival_reading(t, unchanged_rows(keep, paper.frame), self.calibration_words(True)))

    def sample_vs_split(self, frame: pd.DataFrame, refs: dict) -> Table:
        """The tables' sample against shorter windows and the whole split (:func:`.tables.sample_vs_split`)."""
        g = self.grid
        dense = {n: None if (d := find(frame, n, g.wt_name, "dense")) is None else float(d.ppl) for n in refs}
        return Table(T.sample_vs_split(frame, g, refs),
                     f"**Which windows.** Dense perplexity, {g.wt_name} (test): the tables' sample beside the "
                     "earlier sample's shorter windows (first ones, and as many spread over the split) and the whole "
                     f"split; profile `{g.p.profile}`.",
                     Rd.sample_reading(refs, dense, {n: g.wt[n].setup.seqlen for n in refs}))

    def achieved(self, frame: pd.DataFrame) -> Table:
        t = T.achieved_table(frame, self.grid)
        return t._replace(reading=Rd.achieved_reading(t.frame))

    def rounding(self, frame: pd.DataFrame, check: dict | None = None) -> Table:
        """``check``: ``benchmarks/results/bf16_products_*.json`` (how far a cell moves between machines), read
        where the cells ran on more than one (:func:`.readings.machines_reading`)."""
        g = self.grid
        return T.rounding_table(frame, g)._replace(reading=join(
            Rd.rounding_reading(frame, g.models, [g.wt_name, g.c4_name], g.p.sparsity),
            Rd.machines_reading(draws_frame(g, draws=True), T.rounding_keys(frame, g), check)))

    def nm(self, frame: pd.DataFrame) -> Table:
        t = T.nm_table(frame, self.grid)
        return t._replace(reading=Rd.nm_reading(t.raw))

    # ---- Tables 3-4: zero-shot (section 3) ----

    def zeroshot(self, results: dict) -> list[tuple[str, Table]]:
        """Tables 3-4, ``(file stem, table)`` per zero-shot model (:func:`.tables.zeroshot_tables`); what they
        show together is :func:`.readings.zeroshot_reading`."""
        return T.zeroshot_tables(results, self.grid)

    def dense_vs_chance(self, results: dict) -> Table:
        t = T.dense_vs_chance(results, self.grid.p.zeroshot_tasks)
        return t._replace(reading=Rd.chance_reading(t.frame))

    def answer_bias(self, results: dict) -> Table:
        t = T.answer_bias(results, self.grid.p.zeroshot_tasks)
        return t._replace(reading=Rd.answer_bias_reading(t.frame))

    # ---- Table 5, Figure 2, the gamma search (sections 4-5) ----

    def ablation(self, frame: pd.DataFrame, check: dict | None = None) -> Table:
        """``check``: as for :meth:`rounding`."""
        t = T.ablation_table(frame, self.grid)
        return t._replace(reading=join(Rd.ablation_reading(t.frame), Rd.machines_reading(
            draws_frame(self.grid, draws=True), T.ablation_keys(frame, self.grid), check)))

    def figure2(self, frame: pd.DataFrame):
        """Figure 2's data: ``(model, layer, axes)`` (:func:`.tables.figure2`)."""
        return T.figure2(frame, self.grid)

    def gamma_frames(self, frame: pd.DataFrame):
        """Per model whose OGAS searched gamma: ``(model, layers, quantiles)`` (:func:`.tables.gamma_frames`)."""
        return T.gamma_frames(frame, self.grid)

    def gamma_bounds(self, frame: pd.DataFrame) -> Table:
        t = T.gamma_bounds_table(frame, self.grid)
        return t._replace(reading=Rd.bounds_reading(t.frame))

    # ---- Figure 4 (section 6) ----

    def curve(self, frame: pd.DataFrame):
        """Figure 4's lines and the dense perplexity of each model."""
        return T.curve_frame(frame, self.grid), dense_ppl(frame, self.grid)

    def curve_table(self, curve: pd.DataFrame, frame: pd.DataFrame) -> Table:
        """Figure 4's data as a table, and what the figure shows from 70% on."""
        uniform = {m: self.grid.wt[m].uniform_ppl for m in set(curve.model)}
        dense = dense_ppl(frame, self.grid)
        reading = "\n".join(x for x in (Rd.curve_reading(curve, dense, uniform), Rd.headroom_reading(
            frame, self.grid.wt_name, self.grid.p.s_max_headrooms, dense, uniform)) if x)
        return T.curve_table(curve, frame, self.grid)._replace(reading=reading)

    # ---- the claims (sections 7-8) ----

    def ria_worked(self, record: dict) -> tuple[Table, Table]:
        """The worked RIA (:mod:`.ria_worked`): one row's disagreements with Wanda, and the layer's summary."""
        t = record["result"]["trace"]
        where = (f"{self.grid.figure_model}, {t['layer']}, {self.grid.p.sparsity:.0%}, the setup's calibration draw; "
                 f"profile `{self.grid.p.profile}`")
        return (Table(RW.example(record).round(5), f"**RIA against Wanda in row {t['example_row']}** ({where}): the "
                      "weights one prunes and the other keeps, with RIA's terms.", ""),
                Table(RW.summary(record), f"**RIA against Wanda on the same layer and inputs** ({where}).",
                      RW.reading(record)))

    def sparsegpt_worked(self, record: dict) -> tuple[Table, Table]:
        """The worked baseline (:mod:`.sparsegpt_worked`): the first block's first columns, and the layer's summary
        against Wanda."""
        t = record["result"]["trace"]
        where = (f"{self.grid.figure_model}, {t['layer']}, {self.grid.p.sparsity:.0%}, the setup's calibration draw; "
                 f"profile `{self.grid.p.profile}`")
        return (Table(S.first_columns(record).round(5), f"**SparseGPT's first block, first columns** ({where}): "
                      f"U_jj, weights pruned, |e_j| and how far the later columns of the block moved.", ""),
                Table(S.summary(record), f"**SparseGPT against Wanda on the same layer and inputs** ({where}); output "
                      "errors relative to the dense output energy tr(W H W^T).", S.reading(record)))

    def corners(self, records: dict) -> Table:
        """Section 5's corners (:mod:`.corners`) of the ``figure2_channels`` records."""
        g = self.grid
        t = K.corners(records, g.p.sparsity)
        lam = {n: float(g.params_for(n, "ogas").get("lam", 0.4)) for n in records}
        return summarised(Table(t.round(3) if len(t) else t,
                     f"**Figure 2's corners on {len(t)} down projections**: channels in the top quarter of normalised "
                     f"log energy and bottom quarter of log PAPR (high E, low P) and the reverse, their mean OGAS "
                     f"sparsity against Wanda's {g.p.sparsity:.0%} on every channel (OGAS, each model's setting; the "
                     f"setup's calibration draw; profile `{g.p.profile}`).", K.corners_reading(t, lam)), None, None,
                          "each model's layers in one row: the corners' mean sparsity and the Spearman correlations' "
                          "median over its layers", source=K.per_model(t))

    def claims(self, frame: pd.DataFrame, corners: Table | None = None) -> Table:
        """The claims checked (:func:`.claims.claims_table`, with ``corners``' rows where section 5 ran them); the
        reading is section 8's summary."""
        g = self.grid
        dense = {n: r["dense"] for n, r in g.run_zeroshot().items()} if g.p.zeroshot_models else None
        extra = K.corner_claims(corners.frame) if corners is not None and len(corners.frame) else []
        t = C.claims_table(frame, g, dense, extra)
        return t._replace(reading=Rd.claims_reading(t.frame, g.p.sparsity))

    def readme_blocks(self, table12: Table, claims: Table) -> dict:
        return C.readme_blocks(table12, claims)

    def metrics(self, frame: pd.DataFrame, claims: Table) -> dict:
        return C.metrics(frame, claims.frame, self.grid)
