"""Paper 2's claims by the one rule of :mod:`repro.claims`, README blocks and metrics (what they say in words:
:func:`.readings.claims_reading`).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from repro.claims import (
    COLLAPSE,
    Claim,
    across,
    at_chance,
    carried_by_bias,
    claims_frame,
    claims_markdown,
    headline,
    judged_on,
    kind_counts,
    one_answer,
    ratio_claim,
    task_trivial,
    with_paper,
    with_sources,
)
from repro.evaluate.stats import discordant_sample_size, mean_ratio, paired_ratio
from repro.evaluate.zeroshot import ANSWER_NAMES
from repro.papers.ogas.grid import OgasGrid, own_headroom
from repro.papers.ogas.records import (
    LABELS,
    PAPER_ZEROSHOT,
    dense_ppl,
    find,
    paired_to,
    zeroshot_docs,
    zeroshot_paired,
)
from repro.report import Table, one_draw, paired_cells, to_markdown

ZEROSHOT_MEAN = "OGAS zero-shot mean accuracy above Wanda's"  # the claim, over two sets of tasks:
PAPER_TASKS, ABOVE_TRIVIAL = "the paper's four tasks", "those where the dense model is above the trivial answer"


def draw_of(a: pd.Series, b: pd.Series) -> str:
    """'; calibration draw 0 of both' where either cell was drawn more than once (its zero-shot scores are its
    first draw's: like is compared with like); "" otherwise."""
    return f"; calibration draw {a.draw} of both" if max(a.get("n_draws", 1), b.get("n_draws", 1)) > 1 else ""


def bias_of(a: dict, b: dict, tasks: list[str], n: int) -> str:
    """:func:`repro.claims.carried_by_bias` of OGAS's zero-shot result ``a`` against Wanda's ``b`` over ``tasks``
    (``n`` documents in all): each task's share of the pooled difference, and the tasks where either side gives
    one answer on nearly every document."""
    gains, biased = {}, {}
    for t in tasks:
        da, db = a["tasks"][t]["per_doc"], b["tasks"][t]["per_doc"]
        gains[t] = float(np.sum(np.asarray(da["acc"], float) - np.asarray(db["acc"], float))) / n
        said = [f"{side} {text}" for side, d in (("OGAS", da), ("Wanda", db))
                if (text := one_answer(d.get("pred"), ANSWER_NAMES.get(t)))]
        if said:
            biased[t] = " and ".join(said)
    return carried_by_bias(gains, biased)


def ogas_claims(frame: pd.DataFrame, models: list[str], sparsity: float, zeroshot_tasks: list[str],
                curve_models: list[str], ablation_models: list[str], high=(0.7, 0.9), wt: str = "wikitext2",
                uniform: dict[str, float | None] | None = None, dense_zeroshot: dict | None = None,
                headrooms=()) -> list:
    """Paper 2's claims, each judged by :func:`repro.claims.verdict` on a paired interval; the
    ablation, zero-shot and curve claims read the ``wt`` (WikiText-2) cells. ``uniform``: each model's
    uniform-guess perplexity (its vocabulary): a comparison whose cells are all at or above it is
    uninformative, however its interval lies, and one whose cells are all beyond ``COLLAPSE`` x dense is flagged
    (:func:`repro.claims.judged_on`). Where OGAS ran with other ``S_max`` headrooms (``headrooms``, which the paper
    does not state), a row about OGAS above 60% is judged at each, and an order between two collapsed models on
    each calibration draw too: a verdict that flips with either says so (:func:`repro.claims.across`)."""
    out = []

    def cell(model: str, data: str, row: str, sp: float, draw: int | None = None) -> pd.Series | None:
        """A cell of the frame, or as it was on calibration draw ``draw`` alone (:func:`repro.report.one_draw`)."""
        c = find(frame, model, data, row, sp)
        return c if c is None or draw is None else one_draw(c, draw)

    def paired(model: str, data: str, a: str, b: str, sp: float, draw: int | None = None):
        ca, cb = cell(model, data, a, sp, draw), cell(model, data, b, sp, draw)
        return None if ca is None or cb is None else paired_cells(ca, cb)

    def unless_destroyed(claim: Claim, model: str, data: str, cells: dict, draw: int | None = None) -> Claim:
        found = {LABELS.get(k, k): cell(model, data, k, sp, draw) for k, sp in cells.items()}
        dense = find(frame, model, data, "dense", 0.0)
        return judged_on(claim, {k: None if c is None else c.ppl for k, c in found.items()},
                         (uniform or {}).get(model), None if dense is None else dense.ppl)

    def over_variants(make, model: str, data: str, sp: float) -> Claim:
        """``make(row, draw)``'s claim (OGAS's row name and a calibration draw; the notebook's own: "ogas", None,
        every draw pooled), judged again with OGAS at each other S_max headroom that prunes differently at ``sp``,
        and, where it orders two collapsed models, on each calibration draw (:func:`repro.claims.across`)."""
        rows = [f"ogas-h{h:g}" for h in headrooms if own_headroom(sp, h)]
        c = across(make("ogas", None), {f"S_max headroom {r[6:]}": make(r, None) for r in rows
                                        if find(frame, model, data, r, sp) is not None},
                   "the S_max headroom (the paper states none)")
        o = find(frame, model, data, "ogas", sp)
        if c.flag and o is not None and isinstance(o.get("draws"), list) and len(o.draws) > 1:
            c = across(c, {f"calibration draw {d}": make("ogas", d) for _, d in o.draws}, "the calibration draw")
        return c

    datas = sorted(set(frame.data)) if len(frame) else []
    for model in models:
        for data in datas:
            if find(frame, model, data, "ogas", sparsity) is None:
                continue  # this model was not run on this data
            for other, claim in (("wanda", "OGAS below Wanda"), ("ria", "OGAS below RIA"),
                                 ("sparsegpt", "OGAS at or below SparseGPT")):
                def main(row, draw, other=other, claim=claim, model=model, data=data):
                    return unless_destroyed(ratio_claim(
                        f"{claim} at {sparsity:.0%}", f"{model}, {data}", f"OGAS / {LABELS[other]}",
                        paired(model, data, row, other, sparsity, draw)), model, data, {row: sparsity, other: sparsity},
                        draw)
                out.append(over_variants(main, model, data, sparsity))
    settings = {(m, d): p for m in models for d in datas
                if (p := paired_to(frame, m, d, "ogas", "wanda", sparsity)) is not None}
    if len(settings) > 1:  # the paper's average column, over the settings that ran
        out.append(ratio_claim(f"OGAS below Wanda on average at {sparsity:.0%} (the tables' average column)",
                               "; ".join(f"{m} {d}" for m, d in settings),
                               f"geometric mean over {len(settings)} settings of OGAS / Wanda",
                               mean_ratio(list(settings.values()))))
    for model in ablation_models:
        out.append(ratio_claim(f"PAPR-only is comparable to energy-only (read here: at most x{SIMILAR:g}, the gain "
                               "OGAS's combination adds in Table 5)", model, "PAPR-only / energy-only",
                               paired_to(frame, model, wt, "ogas-papr", "ogas-energy", sparsity), SIMILAR))
        for single in ("ogas-energy", "ogas-papr"):
            out.append(ratio_claim("Each single signal improves on Wanda", f"{model}, {LABELS[single]}",
                                   f"{LABELS[single]} / Wanda", paired_to(frame, model, wt, single, "wanda",
                                                                          sparsity)))
            out.append(ratio_claim("Each single signal is improved on by OGAS", f"{model}, {LABELS[single]}",
                                   f"OGAS / {LABELS[single]}", paired_to(frame, model, wt, "ogas", single,
                                                                         sparsity)))
    for model in models:  # fixed against searched gamma: the paper's two settings use one each; the variant the other
        pair = next(((a, b) for a, b in (("ogas", "ogas-gamma-fixed"), ("ogas-gamma-search", "ogas"))
                     if find(frame, model, wt, a, sparsity) is not None and find(frame, model, wt, b, sparsity)
                     is not None), None)
        if pair is not None:
            fixed = find(frame, model, wt, pair[1], sparsity).params.get("gamma")
            out.append(ratio_claim("Searching gamma per layer improves on a fixed gamma", f"{model}, fixed gamma {fixed}",
                                   "OGAS gamma searched / fixed", paired_to(frame, model, wt, *pair, sparsity)))
    for model in models:
        a, b = find(frame, model, wt, "ogas", sparsity), find(frame, model, wt, "wanda", sparsity)
        if zeroshot_tasks and a is not None and b is not None and a.zeroshot and b.zeroshot:
            tasks = [t for t in zeroshot_tasks if t in PAPER_ZEROSHOT] or zeroshot_tasks
            dense = (dense_zeroshot or {}).get(model)
            above = [t for t in tasks if dense is None or not at_chance(dense["tasks"][t]["per_doc"]["acc"],
                                                                        task_trivial(t, dense["tasks"][t]["per_doc"]))]
            if "hellaswag" in zeroshot_tasks:
                h = zeroshot_paired(a.zeroshot, b.zeroshot, ["hellaswag"])
                out.append(Claim.check("OGAS beats Wanda on HellaSwag (+3.39 points in the paper)", model,
                                       f"HellaSwag accuracy difference {100 * h.estimate:+.1f} [{100 * h.ci[0]:+.1f}, "
                                       f"{100 * h.ci[1]:+.1f}] points over {h.n} paired documents",
                                       h.estimate, h.ci, 0.0, "above", h.n))
            for label, ts in ((PAPER_TASKS, tasks), (ABOVE_TRIVIAL, above)):
                if not ts or (label != PAPER_TASKS and ts == tasks):
                    continue  # the second row only where it drops a task
                p = zeroshot_paired(a.zeroshot, b.zeroshot, ts)
                k, need = discordant_sample_size(*zeroshot_docs(a.zeroshot, b.zeroshot, ts), PAPER_ZEROSHOT_GAIN)
                c = Claim.check(f"{ZEROSHOT_MEAN} ({label})", model,
                                f"mean accuracy difference {p.estimate:+.3f} [{p.ci[0]:+.3f}, {p.ci[1]:+.3f}] "
                                f"over {p.n} paired documents ({', '.join(ts)}{draw_of(a, b)}); {k} discordant (one "
                                "side right); a paired test needs " + ("?" if need is None else f"{need:,}")
                                + f" documents for the paper's +{100 * PAPER_ZEROSHOT_GAIN:.2f} points",
                                p.estimate, p.ci, 0.0, "above", p.n)
                c.unit, c.uninformative = "documents", bias_of(a.zeroshot, b.zeroshot, ts, p.n)
                out.append(c)
    lo, hi = high
    for model in curve_models:  # Figure 4's text: OGAS lowest at the two highest sparsities
        for sp in (0.8, 0.9):
            for other in ("magnitude", "wanda", "ria", "sparsegpt"):
                def lowest(row, draw, sp=sp, other=other, model=model):
                    return unless_destroyed(ratio_claim(
                        "OGAS has the lowest perplexity at 80% and 90%", f"{model}, {sp:.0%}, vs {LABELS[other]}",
                        f"OGAS / {LABELS[other]}", paired(model, wt, row, other, sp, draw)), model, wt,
                        {row: sp, other: sp}, draw)
                if find(frame, model, wt, "ogas", sp) is not None:
                    out.append(over_variants(lowest, model, wt, sp))
        dense = find(frame, model, wt, "dense", 0.0)
        for other in ("magnitude", "sparsegpt", "ogas"):  # "magnitude and SparseGPT collapse", OGAS (implied) not
            c = find(frame, model, wt, other, hi)
            p = None if c is None or dense is None else paired_ratio(c.window_nll, dense.window_nll)
            what = "(read here: perplexity above x{:g} the dense one, the collapse of every notebook)".format(COLLAPSE)
            if other == "ogas":
                out.append(ratio_claim(f"OGAS does not collapse at high sparsity where they do {what}",
                                       f"{model}, OGAS", f"OGAS {hi:.0%} / dense", p, COLLAPSE, "below"))
            else:
                out.append(ratio_claim(f"Magnitude and SparseGPT collapse at high sparsity {what}",
                                       f"{model}, {LABELS[other]}", f"{LABELS[other]} {hi:.0%} / dense", p, COLLAPSE,
                                       "above"))
    for model in curve_models:
        for other in ("magnitude", "wanda", "ria", "sparsegpt"):
            def flattest(row, draw, other=other, model=model):  # row: OGAS at 70% (at 90% every headroom is one cell)
                o70, o90, m70, m90 = (cell(model, wt, r, sp, draw) for r, sp in ((row, lo), ("ogas", hi), (other, lo),
                                                                                   (other, hi)))
                p = None
                if all(c is not None for c in (o70, o90, m70, m90)):
                    p = paired_ratio(np.subtract(o90.window_nll, o70.window_nll), np.subtract(m90.window_nll,
                                                                                              m70.window_nll))
                return unless_destroyed(ratio_claim(
                    f"OGAS degrades least from {lo:.0%} to {hi:.0%} (flattest curve)", f"{model}, vs {LABELS[other]}",
                    f"(ppl{hi * 100:.0f}/ppl{lo * 100:.0f} of OGAS) / (same of {LABELS[other]})", p), model, wt,
                    {"ogas": hi, other: hi}, draw)
            out.append(over_variants(flattest, model, wt, lo))
    return out


PAPER_ZEROSHOT_GAIN = 0.0163  # Table 3: OGAS's mean zero-shot accuracy 1.63 points above Wanda's
SIMILAR = round(8.16 / 7.99, 3)  # "comparable": within the 2.1% that Table 5's combination gains over energy-only

# The paper's own effect for a claim, on the claim's scale (a perplexity ratio), where the paper gives a
# number (repro.claims.with_paper): Table 1 and Table 5, LLaMA-3.1-8B, WikiText-2, 50%.
PAPER_EFFECTS = {
    ("OGAS below Wanda at", "c4"): (16.25 / 17.75, "Table 2, LLaMA-3.1-8B C4: Wanda 17.75 -> OGAS 16.25"),
    "OGAS below Wanda on average": (1 - 0.0884, "Tables 1-2, average column: OGAS 8.84% below Wanda"),
    "OGAS below Wanda": (7.99 / 8.85, "Table 1, LLaMA-3.1-8B WikiText-2: Wanda 8.85 -> OGAS 7.99"),
    "PAPR-only is comparable": (1.0, "Table 5: PAPR-only 'similar' to energy-only (read as x1.00)"),
    "OGAS zero-shot mean accuracy above": (PAPER_ZEROSHOT_GAIN, "Table 3: mean accuracy +1.63 points over Wanda"),
    "Each single signal improves on Wanda": (8.16 / 8.85, "Table 5: Wanda 8.85 -> energy-only 8.16"),
    "Each single signal is improved on by OGAS": (7.99 / 8.16, "Table 5: energy-only 8.16 -> OGAS 7.99"),
    "OGAS beats Wanda on HellaSwag": (0.0339, "Table 3: HellaSwag +3.39 points over Wanda"),
}


# The paper's statement each claim row tests (repro.claims.with_sources), by claim prefix: every row of
# ogas_claims. The paper's full text is not available offline: words in quotation marks are only those quoted
# from the paper; everything else names the table or figure and paraphrases it ("paraphrase:",
# no quotation marks); the numbers are the paper's as the issues give them.
PAPER_SOURCES = {
    "OGAS prunes high-energy, low-PAPR channels more than Wanda": "paraphrase: Figure 2, OGAS prunes the "
        "'high-energy static redundant' channels (high energy, low PAPR) that Wanda keeps",
    "OGAS prunes low-energy, high-PAPR channels less than Wanda": "paraphrase: Figure 2, OGAS saves low-energy "
        "channels with a high peak-to-average ratio",
    "OGAS below Wanda": "Tables 1-2 (WikiText-2 and C4 perplexity, 50% unstructured); Table 1, LLaMA-3.1-8B, "
                        "WikiText-2: Wanda 8.85 -> OGAS 7.99. paraphrase: OGAS has a lower perplexity than Wanda at 50%",
    "OGAS below RIA": "Tables 1-2 (WikiText-2 and C4 perplexity, 50% unstructured). paraphrase: OGAS has a lower "
                      "perplexity than RIA at 50%",
    "OGAS at or below SparseGPT": "Tables 1-2 (WikiText-2 and C4 perplexity, 50% unstructured). paraphrase: OGAS "
                                  "matches or improves on SparseGPT's perplexity at 50%",
    "OGAS below Wanda on average": "Tables 1-2, their average column: OGAS 8.84% below Wanda. paraphrase: OGAS "
                                   "lowers perplexity against Wanda on average over the models and data sets",
    "PAPR-only is comparable": "Table 5 (ablation, LLaMA-3.1-8B, WikiText-2, 50%): energy-only 8.16, PAPR-only "
                               "similar. paraphrase: either signal alone does about as well as the other",
    "Searching gamma per layer": "Tables 1-2's two settings (gamma searched per layer for LLaMA-3.1-8B, fixed "
                                 "at 0.2 for Mistral-7B). paraphrase: the per-layer search of gamma is worth its cost",
    "OGAS does not collapse": 'Figure 4 (its text): "magnitude and SparseGPT collapse at high '
                              'sparsity", said of OGAS\'s competitors. paraphrase: OGAS itself does not',
    "Each single signal improves on Wanda": "Table 5 (ablation, LLaMA-3.1-8B, WikiText-2, 50%): Wanda 8.85 -> "
                                            "energy-only 8.16, PAPR-only similar. paraphrase: either signal alone "
                                            "(energy, lambda 0; PAPR, lambda 1) improves on Wanda's uniform sparsity",
    "Each single signal is improved on by OGAS": "Table 5 (ablation, LLaMA-3.1-8B, WikiText-2, 50%): energy-only 8.16 "
                                                 "-> OGAS 7.99. paraphrase: combining energy and PAPR improves on "
                                                 "either signal alone",
    "OGAS zero-shot mean accuracy above Wanda's": "Table 3 (LLaMA setting: SmolLM2 here) and Table 4 (Mistral setting: "
                                                  "Gemma here), ARC-Challenge, BoolQ, HellaSwag, WinoGrande and their "
                                                  "mean. paraphrase: OGAS's mean zero-shot accuracy at 50% is at or "
                                                  "above Wanda's",
    "OGAS beats Wanda on HellaSwag": 'Table 3 (LLaMA-3.1-8B, 50%): "HellaSwag +3.39% over Wanda"',
    "OGAS has the lowest perplexity at 80% and 90%": 'Figure 4 (its text): "OGAS has the lowest perplexity at 80% '
                                                     'and 90%"',
    "Magnitude and SparseGPT collapse": 'Figure 4 (its text): "magnitude and SparseGPT '
                                        'collapse at high sparsity" (the paper gives no threshold; x10 the dense '
                                        'perplexity is our reading, the same for every method and notebook)',
    "OGAS degrades least from": "Figure 4 (perplexity vs sparsity, 30-90%). paraphrase: OGAS's curve rises least "
                                "from 70% to 90% sparsity (the flattest of the methods)",
}


def claims_table(frame: pd.DataFrame, grid: OgasGrid, dense_zs: dict | None = None, extra=()) -> Table:
    """The claims checked on the grid's cells (:func:`repro.claims.claims_frame`, with the paper's statement
    each row tests, :data:`PAPER_SOURCES`) and their caption; ``dense_zs``: ``{model: dense lm-eval result}``
    of the zero-shot models (the zero-shot mean is also tested without the tasks at chance); ``extra``: claim rows
    made elsewhere (Figure 2's corners, :mod:`.corners`)."""
    rows = ogas_claims(frame, grid.models, grid.p.sparsity, grid.p.zeroshot_tasks if grid.p.zeroshot_models else [],
                       grid.p.curve_models, grid.p.ablation_models, wt=grid.wt_name,
                       uniform={n: e.uniform_ppl for n, e in grid.wt.items()}, dense_zeroshot=dense_zs,
                       headrooms=grid.p.s_max_headrooms) + list(extra)
    claims = claims_frame(with_sources(with_paper(rows, PAPER_EFFECTS), PAPER_SOURCES))
    cap = (f"**Claims checked (Paper 2).** Profile `{grid.p.profile}`; models {', '.join(grid.models)}; verdicts by "
           "one rule from paired 95% intervals. 'paper says': the table or figure a row tests; words in quotation "
           "marks are the paper's, 'paraphrase:' marks ours.")
    return Table(claims, cap)


def readme_blocks(table12: Table, claims: Table) -> dict[str, str]:
    """The generated blocks from Tables 1-2 and the claims: the README's headline, the tables and claims
    of docs/results.md."""
    return {"ogas-headline": headline(claims.frame, "OGAS below Wanda at"),
            "ogas-tables": to_markdown(table12.frame, table12.caption),
            "ogas-claims": claims_markdown(claims.frame, claims.caption)}


def metrics(frame: pd.DataFrame, claims: pd.DataFrame, grid: OgasGrid) -> dict:
    """The run's summary numbers (the notebook's last line, read by the smoke test)."""
    return {"dense_ppl": dense_ppl(frame, grid), "n_cells": int(len(frame)), "n_claims": int(len(claims)),
            "verdicts": kind_counts(claims)}
