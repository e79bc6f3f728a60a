"""Paper 1's claims, each checked by the one rule of :mod:`repro.claims`, with the paper's effects and sources.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from repro.claims import (
    COLLAPSE,
    FAILS,
    INCONCLUSIVE,
    Claim,
    across,
    at_chance,
    classifier_destroyed,
    difference_claim,
    fmt_ratio,
    judged_on,
    pooled_trivial,
    ratio_claim,
)
from repro.evaluate.speed import timed
from repro.evaluate.stats import paired_difference, paired_ratio, paired_ratio_t, speed_ratio
from repro.methods.heads import select_heads
from repro.papers.mpg.records import (
    CALIBRATED,
    LABEL,
    PAPER_METHODS,
    best_calibrated,
    find,
    find_scores,
    half_of,
    identical_scores,
    paired_vs,
    pct,
    tie_break_only,
    vision_paired,
)
from repro.report import one_draw, paired_cells, rank_marks

# The paper's own effect for a claim, on the claim's scale, where the paper gives a number
# (repro.claims.with_paper; the other claims say "no paper number").
REMEDY = ("(ours) Calibration-free MP-G beats the best calibration-based head score once that score is ranked within "
          "each layer")
PAPER_EFFECTS = {
    "z = 2.5 rescues MP-G at 50%": (282.8 / 7227, "LLaMA-3-8B 50%: z=2 7227 -> z=2.5 282.8"),
    "50% head sparsity removes 8-16%": (0.12, "8-16% of parameters"),
    "50% head sparsity halves attention FLOPs": (0.5, "about half the attention FLOPs"),
}
# The paper's sentence each claim row tests (repro.claims.with_sources), by the row's statement prefix.
# The paper's full text is not available offline: words in quotation marks are only those the
# project's issues quote from it; everything else names the place and paraphrases it ("paraphrase:").
PAPER_SOURCES = {
    "MP-G never collapses": "paraphrase: Tables I-II, MP-G never collapses: a finite perplexity in every "
                            "configuration (its own MP-G cells pass 10x dense, e.g. LLaMA-3-8B at z = 2: 7,227, yet "
                            "stay far below a uniform guess over its 128k-word vocabulary: read here as a perplexity "
                            "that is not finite or no better than a uniform guess)",
    "(ours) Calibration-free MP-G beats the best calibration-based head score once": "beyond the paper: the claim "
        "above against section 3d's remedy (each calibrated score divided by its layer's mean before the global "
        "ranking), which removes the collapses one score scale per layer causes",
    "(ours) MP-G's exactly-0 heads ordered by their norm": "beyond the paper: a control that changes only the "
        "tie-break (the paper does not say how ties are broken; ours is the index), to ask whether Table III's MP-G "
        "rows measure MP-G's scores or the order of its tied heads",
    "(beyond the paper) MP-G beats Random": "beyond the paper: a sanity row, a scored selection should beat a random "
                                            "one",
    "MP-G ranks in the top two": "paraphrase: Tables I and IV, MP-G is best or second-best in most settings",
    "Gradient-Head has the most first places": 'Table IV: "Gradient-Head has the most first places"',
    "Calibration-free MP-G matches or beats": "paraphrase: Table I, calibration-free MP-G matches or beats the "
                                              "calibration-based head scores",
    "GQA-aware MP-G improves on MP": "paraphrase: eq. 3, MP-G divides the KV term by the group size g as its "
                                     "GQA-aware correction of MP (no sentence of the paper compares the two: inferred)",
    "GQA models prefer z between 2.0 and 2.5": "paraphrase: Table II, GQA models prefer z between 2.0 and 2.5",
    "z = 2.5 rescues MP-G at 50%": "paraphrase: Table II, LLaMA-3-8B at 50% head sparsity: perplexity 7227 at "
                                   "z = 2 and 282.8 at z = 2.5",
    "The optimal z is model-dependent": 'Table II: "The optimal z is model-dependent"',
    "Calibration-free scoring takes seconds": "paraphrase: scoring cost, MP-G scores every head in seconds where "
                                              "the calibration-based methods take minutes",
    "Zeroing heads speeds up inference": "paraphrase: efficiency results, zeroing the heads (Algorithm 1) speeds "
                                         "up inference by at most 3.5%",
    "50% head sparsity removes 8-16%": 'efficiency results: 50% head sparsity removes "8-16% of parameters"',
    "50% head sparsity halves attention FLOPs": 'efficiency results: 50% head sparsity gives "the theoretical 50% '
                                                'reduction in attention FLOPs"',
    "(beyond the paper) Physically removing": "beyond the paper: the paper only zeroes heads; physical removal is "
                                              "its future work",
    "(beyond the paper) Physical removal at 50% removes": "beyond the paper: the parameter saving of physically "
                                                          "removed heads (the paper counts zeroed heads as removed)",
    "(beyond the paper) Physical removal at 50% halves": "beyond the paper: the attention FLOPs of physically "
                                                         "removed heads (the paper counts zeroed heads as removed)",
    "SparseGPT-Head is the most robust downstream": 'Table III: "SparseGPT-Head is the most robust downstream"',
    "MHA models prefer z = 1.5": 'Table II: "MHA models prefer z = 1.5"',
    "MP-G reduces to MP for MHA": 'eq. 3: "MP-G reduces to MP for MHA"',
    "MP-G is best at every sparsity on an MHA model": "paraphrase: Table I, on its MHA model (OPT-6.7B) MP-G has "
                                                      "the lowest perplexity at every sparsity",
}
def identity(claim: Claim) -> Claim:
    """A row that checks an identity of the equations (eq. 3 with g = 1: MP-G is MP on MHA): true by construction
    wherever it is checked (the MHA encoders' table, Table III), its measurement a check of the code, never evidence
    about the method (issue 66: one situation, one kind, in every table)."""
    claim.construction = True
    return claim


def downstream_claims(records: list[dict]) -> list[Claim]:
    """"SparseGPT-Head is the most robust downstream" (the paper's Table III): at each sparsity, its
    zero-shot accuracy minus each other pruned method's, pooled over the tasks' documents and paired
    document by document (the same documents for every method)."""
    def docs(rec):
        return np.concatenate([np.asarray(t["per_doc"]["acc"], float) for _, t in sorted(rec["result"]["tasks"].items())])

    out = []
    by = {(r["config"]["model"]["name"], r["config"]["method"], r["config"].get("sparsity", 0.0)): r for r in records}
    for (model, method, sp), rec in sorted(by.items()):
        if method != "sparsegpt-head":
            continue
        dense = next((r for (m, _, s), r in by.items() if m == model and s == 0.0), None)
        trivial = None if dense is None else pooled_trivial({t: r["per_doc"] for t, r in dense["result"]["tasks"].items()})
        why = "" if dense is None else at_chance(docs(dense), trivial, "the dense model (tasks pooled)")
        for (m2, other, sp2), rec2 in sorted(by.items()):
            if m2 == model and sp2 == sp and other != method:
                p = paired_difference(docs(rec), docs(rec2))
                c = difference_claim("SparseGPT-Head is the most robust downstream (Table III)",
                                     f"{model}, {pct(sp)}, vs {LABEL[other]}",
                                     f"zero-shot accuracy SparseGPT-Head - {LABEL[other]}", p.scaled(100),
                                     side="above", over="paired documents")
                c.uninformative = why
                out.append(c)
    return out


def mpg_claims(frame: pd.DataFrame, models: list[str], sparsities: list[float], z_values: list[float],
               z_sparsities: list[float], group_size: dict[str, int], cost: pd.DataFrame | None = None,
               efficiency: dict[str, dict] | None = None, uniform: dict[str, float | None] | None = None) -> list[Claim]:
    """The paper's claims, as it states them, checked on these models (see the notebook's text).

    ``cost``: rows (model, method, seconds) of scoring cost; ``efficiency``: ``{model: result}`` of
    ``HeadExperiment.efficiency`` records (dense / zeroed / removed with round-robin timings); ``uniform``:
    each model's uniform-guess perplexity (its vocabulary): a comparison of two cells both at or above it is
    uninformative, one of two cells both above ``COLLAPSE`` x dense is flagged (:func:`repro.claims.judged_on`)."""
    out: list[Claim] = []

    def unless_destroyed(claim: Claim, model: str, cells: dict) -> Claim:
        dense = find(frame, model, "dense")
        return judged_on(claim, {k: None if c is None else c.ppl for k, c in cells.items()},
                         (uniform or {}).get(model), None if dense is None else dense.ppl)

    def over_draws(claim: Claim, a, b) -> Claim:
        """An order between two collapsed cells (``claim`` flagged both beyond 10x dense) judged again on each draw
        of the side drawn more than once (a calibration draw, a Random seed: :func:`repro.report.one_draw`): a
        verdict that flips with the draw says so (:func:`repro.claims.across`)."""
        drawn = next((c for c in (a, b) if c is not None and isinstance(c.get("draws"), list) and len(c.draws) > 1),
                     None)
        if not claim.flag or drawn is None or a is None or b is None:
            return claim
        source = {"seed": "Random seed"}.get(drawn.draws[0][0], f"{drawn.draws[0][0]} draw")
        variants = {}
        for _, d in drawn.draws:
            ca, cb = one_draw(a, d), one_draw(b, d)
            if ca is not None and cb is not None:
                p = paired_cells(ca, cb)
                variants[f"{source} {d}"] = Claim.check(claim.claim, claim.setting, f"x{p.estimate:.3f} [{p.ci[0]:.3f}, "
                                                        f"{p.ci[1]:.3f}]", p.estimate, p.ci, claim.threshold, claim.side)
        return across(claim, variants, f"the {source}")

    for model in models:  # 1. no collapse, in the paper's words: every MP-G cell finite, and better than a uniform
        # guess (how many pass 10x dense said beside it)
        dense = find(frame, model, "dense")
        cells = [c for sp in sparsities for z in sorted({2.0, *z_values}) if (c := find(frame, model, "mpg", sp, z)) is not None]
        if dense is None or not cells:
            continue
        ratios = [c.ppl / dense.ppl for c in cells]
        bad = sum(not math.isfinite(r) or r > COLLAPSE for r in ratios)
        u = (uniform or {}).get(model)
        worst = cells[int(np.nanargmax(ratios))]
        broken = sum(not math.isfinite(c.ppl) or bool(u and c.ppl >= u) for c in cells)  # no better than guessing
        out.append(Claim.check("MP-G never collapses (as the paper states it: a finite perplexity in every "
                               "configuration, read here as below a uniform guess)", model,
                               f"{broken} of {len(cells)} MP-G cells not finite or at or above a uniform guess"
                               + (f" ({u:,.0f})" if u else "") + f"; {bad} above {COLLAPSE:g}x dense ({dense.ppl:.4g}); "
                               f"worst {worst.ppl:,.4g} (x{max(ratios):,.3g}, {pct(worst.sparsity)}, z = {worst.z:g})",
                               broken, (broken, broken), 0.5, "below"))
    for model in models:  # 2. top-two among the paper's methods: as Table IV counts it, and paired
        top2 = paired_top2 = 0
        for sp in sparsities:
            ppl = pd.Series({m: c.ppl for m in PAPER_METHODS if (c := find(frame, model, m, sp)) is not None})
            top2 += rank_marks(ppl).get("mpg") in ("best", "second")
            beaten_by = [m for m in PAPER_METHODS if m != "mpg"
                         if (p := paired_vs(frame, model, m, "mpg", sp)) is not None and p.ci and p.ci[1] < 1]
            paired_top2 += len(beaten_by) <= 1
        for what, k in (("best or second by point estimate, as Table IV counts", top2),
                        ("at most one method significantly better, paired over windows", paired_top2)):
            frac = k / len(sparsities)
            out.append(Claim.check("MP-G ranks in the top two of the paper's methods in most settings", model,
                                   f"top two ({what}) in {k} of {len(sparsities)} sparsities", frac, (frac, frac),
                                   0.5, "above"))
    # 2b. Table IV: Gradient-Head has the most first places. A first place counts where the paired interval
    # separates the best from the runner-up; a setting too close to call could go to either, so the lead's
    # "interval" runs from every such setting going to the rival to every one going to Gradient-Head.
    firsts, close = {m: 0 for m in PAPER_METHODS}, 0
    for model in models:
        for sp in sparsities:
            ppl = pd.Series({m: c.ppl for m in PAPER_METHODS if (c := find(frame, model, m, sp)) is not None})
            if len(ppl) < 2:
                continue
            best, runner = ppl.nsmallest(2).index
            p = paired_vs(frame, model, best, runner, sp)
            if p is not None and p.ci is not None and p.ci[1] < 1:
                firsts[best] += 1
            else:
                close += 1
    if "gradient-head" in firsts and sum(firsts.values()) + close:
        lead = firsts["gradient-head"] - max(v for m, v in firsts.items() if m != "gradient-head")
        out.append(Claim.check("Gradient-Head has the most first places among the paper's methods (Table IV)",
                               ", ".join(models), "first places where the paired interval separates the best from "
                               "the runner-up: " + ", ".join(f"{LABEL[m]} {v}" for m, v in firsts.items())
                               + f"; {close} setting{'s' * (close != 1)} too close to call", lead,
                               (lead - close, lead + close), 0.0, "above"))
    for model in models:  # 3. against the best calibration-based score
        for sp in sparsities:
            best = best_calibrated(frame, model, sp)
            a, b = find(frame, model, "mpg", sp), find(frame, model, best, sp)
            out.append(over_draws(unless_destroyed(ratio_claim(
                "Calibration-free MP-G matches or beats the best calibration-based head score (tested as 'beats': "
                "the paper states no equivalence margin)", f"{model}, {pct(sp)}", f"MP-G / {LABEL[best]}",
                paired_vs(frame, model, "mpg", best, sp)), model, {"MP-G": a, LABEL[best]: b}), a, b))
    for model in models:  # 3a. ours: the same comparison once the calibrated scores are ranked within each layer
        for sp in sparsities:  # (section 3d's remedy: their collapses come from one score scale per layer)
            ranked = {m: c for m in CALIBRATED if (c := find(frame, model, m, sp, scale="layer")) is not None}
            mpg = find(frame, model, "mpg", sp)
            if not ranked or mpg is None:
                continue
            best = min(ranked, key=lambda m: ranked[m].ppl)
            out.append(over_draws(unless_destroyed(ratio_claim(
                REMEDY, f"{model}, {pct(sp)}", f"MP-G / {LABEL[best]} ranked within layers",
                paired_cells(mpg, ranked[best])), model, {"MP-G": mpg, f"{LABEL[best]} (within layers)": ranked[best]}),
                mpg, ranked[best]))
    for model in models:  # 3b. beyond the paper: a sanity row, MP-G against Random over its seeds
        for sp in sparsities:
            rnd = find(frame, model, "random", sp)
            if rnd is None or find(frame, model, "mpg", sp) is None:
                continue
            seeds = int(rnd.n_draws) if "n_draws" in rnd else 1
            out.append(over_draws(unless_destroyed(ratio_claim(
                "(beyond the paper) MP-G beats Random head selection", f"{model}, {pct(sp)}",
                f"MP-G / Random (geometric mean over {seeds} seed{'s' * (seeds > 1)})",
                paired_vs(frame, model, "mpg", "random", sp)), model,
                {"MP-G": find(frame, model, "mpg", sp), "Random": rnd}), find(frame, model, "mpg", sp), rnd))
    for model in models:  # 4. the GQA-aware share
        if group_size.get(model, 1) == 1:
            continue
        for sp in sparsities:
            a, b = find(frame, model, "mpg", sp), find(frame, model, "mp", sp)
            c = unless_destroyed(ratio_claim(
                "GQA-aware MP-G improves on MP in GQA models (inferred from the method, not the paper's sentence)",
                f"{model} (g = {group_size[model]}), {pct(sp)}", "MP-G / MP", paired_vs(frame, model, "mpg", "mp", sp)),
                model, {"MP-G": a, "MP": b})
            same = [c.get("pruned") for c in (a, b) if c is not None]
            if len(same) == 2 and same[0] is not None and sorted(map(tuple, same[0])) == sorted(map(tuple, same[1])):
                c.uninformative = (f"identical selections: MP-G and MP prune the same {len(same[0])} heads (their "
                                   "zero-score heads, taken in index order)")
            if c.flag:  # an order between two collapsed cells: judged again at each other z the notebook ran
                zs = {z: (find(frame, model, "mpg", sp, z), find(frame, model, "mp", sp, z)) for z in z_values if z != 2.0}
                c = across(c, {f"z = {z:g}": ratio_claim(c.claim, c.setting, f"MP-G / MP at z = {z:g}",
                                                         paired_cells(*pair)) for z, pair in zs.items()
                               if all(x is not None for x in pair)}, "z")
            out.append(c)
    for model in models:  # 5. z: GQA models prefer 2.0-2.5; z = 2.5 rescues at 50%
        for sp in z_sparsities:
            zs = {z: c for z in z_values if (c := find(frame, model, "mpg", sp, z)) is not None}
            if not zs:
                continue
            hi = [z for z in zs if 2.0 <= z <= 2.5]
            lo = [z for z in zs if z < 2.0]
            if group_size.get(model, 1) > 1 and hi and lo:
                zh = min(hi, key=lambda z: zs[z].ppl)
                zl = min(lo, key=lambda z: zs[z].ppl)
                out.append(unless_destroyed(ratio_claim(
                    "GQA models prefer z between 2.0 and 2.5", f"{model}, {pct(sp)}", f"MP-G z={zh} / z={zl}",
                    paired_ratio(zs[zh].window_nll, zs[zl].window_nll)), model,
                    {f"z={zh}": zs[zh], f"z={zl}": zs[zl]}))
            if math.isclose(sp, 0.5) and 2.5 in zs and 2.0 in zs:
                out.append(unless_destroyed(ratio_claim(
                    "z = 2.5 rescues MP-G at 50% (paper: LLaMA-3-8B 7227 -> 282.8)", f"{model}, {pct(sp)}",
                    "MP-G z=2.5 / z=2.0", paired_ratio(zs[2.5].window_nll, zs[2.0].window_nll)), model,
                    {"z=2.5": zs[2.5], "z=2.0": zs[2.0]}))
    for sp in z_sparsities:  # 6. the optimal z is model-dependent: chosen on half the windows, tested on the rest
        cells = {m: zs for m in models if (zs := {z: c for z in z_values
                                                  if (c := find(frame, m, "mpg", sp, z)) is not None})}
        chosen = {m: min(zs, key=lambda z: np.mean(half_of(zs[z].window_nll, 0))) for m, zs in cells.items()}
        if len(chosen) < 2:
            continue
        for model, z in chosen.items():
            others = {z2 for m2, z2 in chosen.items() if m2 != model}
            if others == {z}:  # the same z everywhere: decided only if it also wins on the other half
                zs = cells[model]
                if len(zs) < 2:
                    continue
                runner = min((v for v in zs if v != z), key=lambda v: np.mean(half_of(zs[v].window_nll, 0)))
                p = paired_ratio_t(half_of(zs[z].window_nll, 1), half_of(zs[runner].window_nll, 1))
                decided = p.ci is not None and p.ci[1] < 1
                out.append(unless_destroyed(Claim(
                    "The optimal z is model-dependent", f"{model}, {pct(sp)}",
                    f"best z = {z} on every model, each chosen on the first half of its windows; on the other half "
                    f"z={z} / runner-up z={runner} {fmt_ratio(p)}" + ("" if decided else
                                                                      ": the choice itself is not decided"),
                    FAILS if decided else INCONCLUSIVE, p.estimate, p.ci, 1.0, "above", p.n, log=True, unit="windows"),
                    model, {f"z={z}": zs[z], f"z={runner}": zs[runner]}))
                continue
            zs = cells[model]
            zo = min(others - {z}, key=lambda v: np.mean(half_of(zs[v].window_nll, 0)))
            out.append(unless_destroyed(ratio_claim(
                "The optimal z is model-dependent", f"{model}, {pct(sp)}",
                f"own best z={z} / another model's best z={zo}, each chosen on the first half of its windows, compared "
                "on the other half:", paired_ratio_t(half_of(zs[z].window_nll, 1), half_of(zs[zo].window_nll, 1))),
                model, {f"z={z}": zs[z], f"z={zo}": zs[zo]}))
    if cost is not None and len(cost):  # 7. seconds vs minutes
        for model in models:
            c = cost[cost.model == model].set_index("method").seconds
            cal = c[[m for m in CALIBRATED if m in c.index]]
            if "mpg" in c.index and len(cal):
                r = float(cal.min() / c["mpg"])
                out.append(Claim.check("Calibration-free scoring takes seconds, calibration-based minutes",
                                       model, f"MP-G {c['mpg']:.3g} s; calibrated {cal.min():.3g}-{cal.max():.3g} s "
                                       f"(x{r:.0f}; threshold x10)", r, (r, r), 10.0, "above"))
    for model, result in (efficiency or {}).items():
        out += efficiency_claims(result, model)
    return out


def efficiency_claims(eff: dict, model: str) -> list[Claim]:
    """Zeroing: at most 3.5% faster (paper); removal at 50%: 8-16% fewer parameters and about half
    the attention FLOPs (paper); removal speeds up prefill (beyond the paper). Speed-ups are paired
    by timing round (round-robin), so their CIs come from the spread measured over repeats."""
    out = []
    dense = eff["dense"]
    batches = sorted(int(k[len("prefill_b"):]) for k in dense if k.startswith("prefill_b"))
    for state, r in timed(eff).items():
        if state == "dense":
            continue
        setting = f"{model}, {r['mode']} {r['sparsity']:.0%}"
        for b in batches:
            s = speed_ratio(dense[f"prefill_b{b}"]["times_s"], r[f"prefill_b{b}"]["times_s"])
            what = f"speed-up {fmt_ratio(s)} over {s.n} rounds, batch {b}"
            if r["mode"] == "zeroed":
                c = Claim.check("Zeroing heads speeds up inference by at most 3.5%", f"{setting}, batch {b}",
                                what + "; zeroed weights are still multiplied, so no speed-up can come of it: a "
                                "bound on a null effect", s.estimate, s.ci, 1.035, "below")
                c.construction = True  # the same matrix products run: the bound holds by how zeroing works
                out.append(c)
            else:
                out.append(Claim.check("(beyond the paper) Physically removing the heads speeds up prefill",
                                       f"{setting}, batch {b}", what, s.estimate, s.ci, 1.0, "above"))
        if not math.isclose(r["sparsity"], 0.5):
            continue
        if r["mode"] == "zeroed":  # the paper's own quantities: zeroed heads count as removed
            saved = 1 - r["nonzero_params"] / dense["nonzero_params"]
            out.append(Claim.check("50% head sparsity removes 8-16% of the parameters", setting,
                                   f"{saved:.1%} fewer non-zero parameters ({dense['nonzero_params'] / 1e6:.1f}M -> "
                                   f"{r['nonzero_params'] / 1e6:.1f}M), zeroed heads counted as removed as the paper "
                                   "does", saved, (saved, saved), 0.08, "above"))
            f = 1 - r["n_pruned"] / dense["heads"]
            flops = Claim.check("50% head sparsity halves attention FLOPs (at most x0.55)", setting,
                                f"attention FLOPs x{f:.2f} counting the {r['n_pruned']} zeroed of {dense['heads']} "
                                "heads as removed (the paper's theoretical count)", f, (f, f), 0.55, "below")
            flops.construction = True  # half the heads counted as gone is half the heads' FLOPs
            out.append(flops)
        else:  # beyond the paper: what physical removal really saves, GQA padding included
            saved = 1 - r["params"] / dense["params"]
            kept = r["heads"] - (dense["heads"] - r["n_pruned"])
            f = r["attention_flops"] / dense["attention_flops"]
            out.append(Claim.check("(beyond the paper) Physical removal at 50% removes 8-16% of the parameters",
                                   setting, f"{saved:.1%} fewer ({dense['params'] / 1e6:.1f}M -> "
                                   f"{r['params'] / 1e6:.1f}M): {r['n_pruned'] - kept} heads removed, {kept} kept "
                                   "as zeros by GQA padding", saved, (saved, saved), 0.08, "above"))
            out.append(Claim.check("(beyond the paper) Physical removal at 50% halves attention FLOPs (at most x0.55)",
                                   setting, f"attention FLOPs x{f:.2f} ({r['heads']} of {dense['heads']} heads kept, "
                                   f"{kept} of them zero heads that GQA padding keeps)", f, (f, f), 0.55, "below"))
    return out


# ---- MHA encoders: the image classifiers ---------------------------------------------------------

def mha_claims(frame: pd.DataFrame, scores: pd.DataFrame, models: list[str], sparsities: list[float],
               z_values: list[float], z_sparsities: list[float], structure: dict[str, tuple[int, int, int]],
               n_classes: dict[str, int] | None = None) -> list[Claim]:
    """The paper's MHA statements on the image classifiers (``frame``: :func:`vision_frame`;
    ``structure``: ``{model: (layers, heads, KV heads)}``). Effects are per-image cross-entropy
    differences in nats, paired over the same test images (the classifier's analogue of the
    perplexity ratio's mean NLL difference). ``n_classes``: the classes each model's evaluation scores; a comparison
    of two classifiers both at or past a uniform guess over them is uninformative
    (:func:`repro.claims.classifier_destroyed`), as two language models at a uniform guess are."""
    out: list[Claim] = []

    def unless_destroyed(claim: Claim, model: str, cells: dict, mpg_at: list[tuple[float, float]] = ()) -> Claim:
        """``claim`` uninformative where both classifiers are destroyed, or where MP-G's side at a (z, sparsity) of
        ``mpg_at`` is its tie-break's choice (:func:`.records.tie_break_only`)."""
        sides = {k: (float(c.top1), float(c.ce)) for k, c in cells.items()}
        ties = (w for z, sp in mpg_at if (w := tie_decided(scores, model, z, sp)))
        claim.uninformative = (claim.uninformative or classifier_destroyed(sides, (n_classes or {}).get(model))
                               or next(ties, ""))
        return claim

    for model in models:  # exact: identical scores and selections when H_kv = H
        n_layers, h, h_kv = structure[model]
        same = identical_scores(scores, model, z_values, sparsities)
        if same is None or h_kv != h:
            continue
        d = same["max_abs_diff"]
        out.append(identity(Claim.check(
            "MP-G reduces to MP for MHA: identical head scores", f"{model} (H = H_kv = {h}, g = 1)",
            f"largest |MP-G - MP| score difference over {n_layers} x {h} heads and {same['n_z']} values of z: {d:.3g} "
            f"(exactly equal: {d == 0})", d, (d, d), 1e-12, "below")))
        k = len(same["differ"])
        out.append(identity(Claim.check(
            "MP-G reduces to MP for MHA: identical pruned heads", f"{model} (H = H_kv = {h}, g = 1)",
            f"{k} of {same['n_z'] * len(sparsities)} (z, sparsity) cells select different heads", k, (k, k), 0.5,
            "below")))
    for model in models:  # z = 1.5 against the better of the other values of z (the harder comparison)
        for sp in z_sparsities:
            zs = {z: c for z in z_values if (c := find(frame, model, "mpg", sp, z)) is not None}
            if 1.5 not in zs or len(zs) < 2:
                continue
            rival = min((z for z in zs if z != 1.5), key=lambda z: zs[z].ce)
            out.append(unless_destroyed(difference_claim(
                "MHA models prefer z = 1.5", f"{model}, {pct(sp)}",
                f"cross-entropy MP-G z=1.5 - z={rival} (the better other z):",
                vision_paired(frame, model, "mpg", "mpg", sp, z_a=1.5, z_b=rival), side="below", unit="nats",
                over="paired test images"), model, {"z = 1.5": zs[1.5], f"z = {rival}": zs[rival]},
                [(1.5, sp), (rival, sp)]))
    for model in models:  # MP-G against the strongest other paper method at each sparsity
        for sp in sparsities:
            others = {m: c for m in PAPER_METHODS if m != "mpg" and (c := find(frame, model, m, sp)) is not None}
            if not others or find(frame, model, "mpg", sp) is None:
                continue
            rival = min(others, key=lambda m: others[m].ce)
            out.append(unless_destroyed(difference_claim(
                "MP-G is best at every sparsity on an MHA model (paper: OPT-6.7B)", f"{model}, {pct(sp)}",
                f"cross-entropy MP-G - {LABEL[rival]} (the best other paper method):",
                vision_paired(frame, model, "mpg", rival, sp), side="below", unit="nats", over="paired test images"),
                model, {"MP-G": find(frame, model, "mpg", sp), LABEL[rival]: others[rival]}, [(2.0, sp)]))
    return out


def tie_decided(scores: pd.DataFrame, model: str, z: float, sparsity: float) -> str:
    """:func:`.records.tie_break_only` of ``model``'s MP-G cell at (``z``, ``sparsity``), from its score record ("" where
    there is none)."""
    r = find_scores(scores, model, "mpg", z)
    if r is None:
        return ""
    s = np.asarray(r["scores"])
    return tie_break_only(z, int((s == 0).sum()), s.size, len(select_heads(s, sparsity)))
