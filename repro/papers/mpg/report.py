"""Notebook 1's tables with their captions for one session's grid (:class:`Report`): the language
models' tables (:class:`~repro.papers.mpg.tables.Tables`) and the MHA encoders' (``mha``)."""
from __future__ import annotations

from repro.papers.mpg.grid import MpgGrid
from repro.papers.mpg.mha import MhaTables
from repro.papers.mpg.records import describe
from repro.papers.mpg.tables import Tables
from repro.report import differences_table, model_line, provenance


class Report(Tables):
    """Paper 1's tables: each method takes what a section of the grid returned."""

    def __init__(self, session, grid: MpgGrid):
        super().__init__(session, grid.lm)
        self.grid = grid
        self.mha = MhaTables(session, grid.vision)

    def describe(self) -> str:
        """The models, their geometry and the evaluation sample, one line each."""
        return describe(self.grid.lm)

    def provenance(self) -> str:
        """The *This run* block's provenance: what each model is (source, geometry, weights), its
        evaluation sample and dtype, its calibration; the captions name only models, data and sample."""
        lines = [f"{line}, {e.setup.eval_dtype}{e.feeding_note}; weights {e.identity.get('quantisation')}; "
                 f"calibration {e.setup.calib_nsamples} x {e.setup.calib_seqlen} tokens of {e.calib_text.label} "
                 f"(Gradient-Head on the first {e.grad_nsamples})"
                 for line, e in zip(describe(self.grid.lm).splitlines(), self.grid.lm.values())]
        return provenance(lines + (self.mha.provenance() if self.grid.vision else []))

    def differences(self):
        """(table, caption): what differs from the paper, generated from the parameters that ran."""
        p, lm, vision = self.params, self.grid.lm, self.grid.vision
        evals = "; ".join(f"{n}: {e.data.label}, first {e.windows()}" for n, e in lm.items())
        calib = "; ".join(f"{n}: {e.setup.calib_nsamples} x {e.setup.calib_seqlen} tokens of {e.calib_text.label}, "
                          f"Gradient-Head on {e.grad_nsamples}" for n, e in lm.items())
        dtypes = ", ".join(sorted({e.setup.eval_dtype for e in [*lm.values(), *vision.values()]}))
        zs = (f"**zero-shot** {', '.join(p['zeroshot_tasks'])} of {', '.join(p['zeroshot_models'])} (lm-eval, first "
              f"{p['zeroshot_limit']} documents each): an analogue only, section 6" if p["zeroshot_tasks"] else "not run")
        enc = (f"{', '.join(vision)}, **trained here** on Fashion-MNIST: top-1 and cross-entropy on the first "
               f"{p['vision_n_eval']} test images (section 9)" if vision else "not run")
        rows = [("models", "RoBERTa-base/large, OPT-6.7B, LLaMA-3-8B, Mistral-7B",
                 "; ".join(model_line(e) for e in lm.values())),
                ("evaluation", "WikiText-2 validation, the whole split", evals),
                ("precision", "fp16 on a GPU", f"{dtypes} (captions name the dtype that ran)"),
                ("calibration", "64 x 512 tokens", calib),
                ("Table III", "RoBERTa fine-tuned on GLUE, then pruned", zs),
                ("encoder rows", "RoBERTa pseudo-perplexity", enc)]
        return differences_table(rows, self.profile)
