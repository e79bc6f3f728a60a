"""What notebook 1's tables and paragraphs show, in generated sentences: every one a pure function of the
numbers it reads (frames, records, values in; Markdown out), nothing typed by hand, so a rerun on other models
or another profile reads its own numbers. :class:`.report.Report` puts each table's reading inside the
:class:`repro.report.Table` it returns; the notebook displays the others (the worked example's paragraphs, the
emptied layers, the MHA sanity check, the summary) itself.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from repro.claims import COLLAPSE, count_verdicts, underpowered
from repro.evaluate.stats import paired_difference, paired_ratio
from repro.methods.head_terms import collapse_compare
from repro.papers.mpg.collapse import best_restore
from repro.papers.mpg.records import CALIBRATED, LABEL, find, find_scores, paired_vs, pct, per_unit
from repro.report import column_reading
from repro.words import and_join, num, ordinal


def _list(items: list[str], most: int = 6) -> str:
    return ", ".join(items[:most]) + (f" and {len(items) - most} more" if len(items) > most else "")


# ---- section 1a: one layer worked by hand ---------------------------------------------------------

def layer_reading(terms: pd.DataFrame) -> str:
    """One sentence on a :func:`~repro.methods.head_terms.layer_terms` frame: the head MP-G ranks lower than MP
    by most places (only a head with a KV excess can fall), why, and a head MP-G puts above it that MP put at or
    below it."""
    layer, g, n = int(terms.layer.iloc[0]), int(terms.g.iloc[0]), len(terms)
    fall = terms.rank_mpg - terms.rank_mp
    if fall.max() <= 0:
        why = "g = 1, so MP-G is MP" if g == 1 else f"no head's rank moves when the KV term is divided by g = {g}"
        return f"In layer {layer}, MP and MP-G rank the {n} heads alike ({why})."
    h = terms.assign(_fall=fall).sort_values(["_fall", "kv_mp", "head"], ascending=[False, False, True]).iloc[0]
    past = terms[(terms.mp <= h.mp) & (terms.mpg > h.mpg)].sort_values("mpg", ascending=False).iloc[0]
    return (f"In layer {layer}, MP ranks head {int(h['head'])} {ordinal(int(h.rank_mp))} of {n} while MP-G ranks it "
            f"{ordinal(int(h.rank_mpg))}: its own Q+O excess is {h.qo:.2f}, and its KV group's K+V excess, "
            f"{h.kv_mp:.2f}, counts in full under MP and as {h.kv_mp:.2f}/{g} = {h.kv_mpg:.2f} under MP-G, so head "
            f"{int(past['head'])} (Q+O {past.qo:.2f}, its group's K+V {past.kv_mp:.2f}) overtakes it.")


def _pct(p: float) -> str:
    return "0%" if p == 0 else "under 0.01%" if p < 1e-4 else f"{100 * p:.2g}%"


def zero_reading(arith: dict) -> str:
    """Three sentences on a :func:`~repro.methods.head_terms.zero_score_arithmetic` dict: real counts,
    approximations, the two compared."""
    a, d = arith, arith["head_dim"]
    zero, expected = a["heads_zero"], a["independent_p_head_zero"] * a["heads_total"]
    than = ("more than" if zero >= 2 * expected and zero - expected >= 1 else
            "fewer than" if zero <= expected / 2 and expected - zero >= 1 else "close to")
    cluster = ": the features above the threshold cluster in fewer heads" if than == "more than" else ""
    return (f"With {d} rows per head and {_pct(a['fraction_above'])} of all Q/K/V rows and O columns above "
            f"mu + {a['z']:g} sigma of their projection ({a['above']} of {a['features']}), {a['heads_zero']} of "
            f"{a['heads_total']} heads ({_pct(a['fraction_zero'])}) have none of their {a['features_per_head']} Q, O, "
            f"K and V features above it, and so score exactly 0. Were the features independent, the observed "
            f"fractions would leave {_pct(a['independent_p_head_zero'])} of heads at 0 (a normal distribution puts "
            f"{_pct(a['normal_tail'])} beyond {a['z']:g} sigma, which would leave {_pct(a['normal_p_head_zero'])}; both "
            f"approximations). The real count, {zero}, is {than} the {expected:.1f} heads independence predicts{cluster}.")


def single_kv_reading(kv: pd.DataFrame) -> str:
    """One sentence on a :func:`~repro.methods.head_terms.single_kv_constant` frame (records): the KV term's
    range across layers, and whether it is constant, and the order MP's, within every layer."""
    return (f"The KV term ranges from {kv.kv_mpg.min():.3g} to {kv.kv_mpg.max():.3g} across layers under MP-G; it is "
            f"the same for every head of a layer in {int(kv.kv_constant.sum())} of {len(kv)} layers, and MP-G orders "
            f"the heads within a layer as MP does in {int(kv.same_order.sum())} of {len(kv)}.")


def collapse_reading(compare: pd.DataFrame, sparsity: float) -> str:
    """One sentence on a :func:`~repro.methods.head_terms.collapse_compare` frame: the layers each score empties
    at ``sparsity``."""
    parts = []
    for col in [c for c in compare.columns if c.endswith(" emptied")]:
        layers = compare.layer[compare[col]].tolist()
        what = f"empties layer{'s' * (len(layers) > 1)} {', '.join(map(str, layers))}" if layers else "empties no layer"
        parts.append(f"{col[:-len(' emptied')]} {what}")
    return f"At {sparsity:.0%} sparsity, " + "; ".join(parts) + "."


def emptied_reading(scores: pd.DataFrame, model: str, sparsity: float) -> str:
    """Which layers MP and MP-G empty at ``sparsity`` on ``model`` (``scores``: the notebook's score records,
    z = 2), in one sentence; "" without both records."""
    got = {label: r["scores"] for label, m in (("MP", "mp"), ("MP-G", "mpg"))
           if (r := find_scores(scores, model, m)) is not None}
    return collapse_reading(collapse_compare(got, sparsity), sparsity) if len(got) == 2 else ""


# ---- sections 2-3: scoring cost, Table I and what stands beside it -------------------------------

def cost_reading(cost: pd.DataFrame) -> str:
    """Per model: the calibration-free scorers' seconds against the slowest calibrated one, and how
    many heads score exactly 0 under each scorer that has any."""
    lines = []
    for model, g in cost.groupby("model", sort=False):
        free, calib = g[g.calibration == "none"], g[g.calibration != "none"]
        text = f"- **{model}**: the calibration-free scores take {num(free.seconds.max())} s at most"
        if len(calib):
            slow = calib.loc[calib.seconds.idxmax()]
            text += (f"; the calibrated ones {num(calib.seconds.min())}-{num(slow.seconds)} s "
                     f"({slow.label} the slowest)")
        zeros = g[g["zero-score heads"] > 0]
        text += ("; " + _list([f"{r.label} leaves {r['zero-score heads']} heads at exactly 0" for _, r in zeros.iterrows()])
                 if len(zeros) else "; no scorer gives a head exactly 0")
        lines.append(text + ".")
    return "\n".join(lines)


def zero_scores_reading(scores: np.ndarray) -> str:
    """How many of a model's heads (``scores``: layers x heads) score exactly 0, the tie a low sparsity cuts into."""
    s = np.asarray(scores)
    return f"{int((s == 0).sum())} of {s.size} heads score exactly 0: at low sparsity the cut falls inside this tie."


FALLS = 1.05  # a perplexity counts as falling below ``1 / FALLS`` of the one before (a smaller move is the windows' noise)


def non_monotone(vals: pd.DataFrame) -> list[str]:
    """Every line of a Table I frame (``vals``: methods x (model, sparsity)) whose perplexity *falls* (by more than
    :data:`FALLS`) somewhere as the sparsity rises (more heads pruned, a better model), as 'SparseGPT-Head on m:
    38,500,000 at 12.5% -> 1,498 at 25.0% -> ...'."""
    out = []
    for model in dict.fromkeys(c[0] for c in vals.columns):
        cols = sorted((c for c in vals.columns if c[0] == model), key=lambda c: float(str(c[1]).rstrip("%")))
        for method in vals.index:
            xs = [float(vals.loc[method, c]) for c in cols]
            if any(np.isfinite(a) and np.isfinite(b) and b < a / FALLS for a, b in zip(xs, xs[1:])):
                out.append(f"{method} on {model}: " + " -> ".join(f"{num(x)} at {c[1]}" for x, c in zip(xs, cols)))
    return out


def table1_reading(vals: pd.DataFrame) -> str:
    """What Table I shows, from its numbers: per model and sparsity the lowest perplexity (against dense)
    and where MP-G ranks; how often a calibration-based score does worse than the one Random draw; and every line
    that is not monotone in sparsity (:func:`non_monotone`), pointed to the anatomy that diagnoses its cells."""
    falls = non_monotone(vals)
    text = column_reading(vals, focus=LABEL["mpg"])
    if falls:
        text += ("\n- Not monotone in sparsity (pruning more heads gives a *lower* perplexity somewhere): "
                 + "; ".join(falls) + f". Such a line is a selection that breaks the model at one sparsity and less at "
                 f"the next, not a recovery: each of its cells above {COLLAPSE:g}x dense is diagnosed in section 3c "
                 "(which layers its selection empties, which single heads carry the damage).")
    calibrated = [LABEL[m] for m in CALIBRATED if LABEL[m] in vals.index]
    if LABEL["random"] not in vals.index or not calibrated:
        return text
    worse = [f"{m} on {' @ '.join(map(str, c))}" for c in vals.columns for m in calibrated
             if vals.loc[m, c] > vals.loc[LABEL["random"], c]]
    n = len(calibrated) * len(vals.columns)
    return text + (f"\n- A calibration-based score does worse than Random in {len(worse)} of "
                   f"{n} cells" + (f": {', '.join(worse[:6])}{' and more' if len(worse) > 6 else ''}" if worse else "")
                   + ("; the per-layer spread below shows where each method cuts, and section 3c measures why such a cut "
                      "collapses the model." if worse else "."))


def draw_spread_reading(table: pd.DataFrame) -> str:
    """Which drawn cell moves most between its draws, then per method how far its draws move a cell on each model
    (worst draw over best, the largest over the sparsities), and where they are identical to every digit."""
    if table.empty:
        return "Every method ran once here."
    w = table.loc[table["worst / best"].idxmax()]
    calm = (table["worst / best"] < 1.1).sum()
    lines = [f"The draw alone moves a cell by up to x{w['worst / best']:.2f} ({w.method}, {w.model} at "
             f"{w.sparsity}: {w['each draw']}); {calm} of {len(table)} drawn cells stay within x1.1 of their best "
             "draw."]
    for method, f in table.groupby("method", sort=False):
        worst = f.groupby("model", sort=False)["worst / best"].max()
        parts = [f"identical draws in every cell on {m}" if v == 1.0 else f"up to x{v:,.2f} on {m}"
                 for m, v in worst.items()]
        lines.append(f"- **{method}**: " + "; ".join(parts) + ".")
    return "\n".join(lines)


def zero_ties_reading(ties: pd.DataFrame) -> str:
    """The cells whose selection the (layer, head) tie-break decides rather than the scores."""
    if ties.empty:
        return "- No scorer here gives any head exactly 0: the scores decide every cell."
    decided = ties[ties["decided by the tie-break"]]
    cells = [f"{r.model} {r.method} @ {r.sparsity} ({r['heads cut']} of {r['heads scoring exactly 0']})"
             for _, r in decided.iterrows()]
    return (f"- The tie-break, not the score, picks the heads in {len(decided)} of {len(ties)} cells"
            + (f": {_list(cells)}." if cells else ".")
            + (" In those cells MP-G and MP cut the same heads." if {"MP-G", "MP"} <= set(decided.method) else ""))


def feeding_reading(pairs: dict[str, tuple[dict, dict]]) -> str:
    """Per model that requires ``<bos>``: how much worse its dense perplexity is without it."""
    lines = []
    for name, (on, off) in pairs.items():
        p = paired_ratio(off["result"]["window_nll"], on["result"]["window_nll"])
        lines.append(f"- **{name}**: plain windows give x{p.estimate:.2f} the perplexity it has with `<bos>` "
                     f"(worse on {p.n - p.n_better} of {p.n} windows): evaluated outside its input contract, "
                     "a dense model looks far worse than it is.")
    return "\n".join(lines)


def paired_reading(paired: pd.DataFrame) -> str:
    """What the paired table shows: per model, against how many methods and sparsities MP-G is better
    (the whole 95% interval of its perplexity ratio below 1), worse (above 1) or not separable."""
    lines = []
    for model, g in paired.groupby("model", sort=False):
        hi_lo = g["95% CI"].str.strip("[]").str.split(",", expand=True).astype(float)
        better, worse = int((hi_lo[1] < 1).sum()), int((hi_lo[0] > 1).sum())
        against = ", ".join(f"{v} at {s}" for v, s in zip(g.vs[hi_lo[0] > 1], g.sparsity[hi_lo[0] > 1]))
        lines.append(f"- **{model}**: MP-G is better in {better}, worse in {worse} and not separable in "
                     f"{len(g) - better - worse} of {len(g)} paired comparisons" +
                     (f"; worse than {against}." if against else "."))
    return "\n".join(lines)


def spread_reading(spread: pd.DataFrame, vals: pd.DataFrame) -> str:
    """Which methods empty a layer at the lowest sparsity, against their Table I perplexity there:
    whether emptying a layer goes with the worst cells (``vals``: Table I's values)."""
    lines = []
    for model, g in spread.groupby("model", sort=False):
        col = (model, g.sparsity.iloc[0])
        ppl = vals[col].drop(index="Dense", errors="ignore").astype(float) if col in vals.columns else None
        empties = g[g["layers emptied"] > 0]
        if empties.empty:
            lines.append(f"- **{model}**: no method empties a layer at {col[1]}.")
            continue
        def at(m):
            return f" (ppl {num(ppl[m])})" if ppl is not None and m in ppl.index else ""
        text = (f"- **{model}** at {col[1]}: " + "; ".join(f"{r.method} empties layer(s) {r['emptied layers']}"
                                                           f"{at(r.method)}" for _, r in empties.iterrows()))
        rest = [m for m in g.method if m not in set(empties.method)]
        if ppl is not None and rest:
            best_rest = ppl[[m for m in rest if m in ppl.index]]
            text += (f"; the methods that empty none reach {num(best_rest.min())}-{num(best_rest.max())}"
                     if len(best_rest) else "")
        lines.append(text + ".")
    return "\n".join(lines)


# ---- sections 3c-3d: why cells collapse, and the remedy ------------------------------------------

def _cell(a) -> str:
    return f"{a.model} {getattr(a, 'cell', None) or f'{LABEL[a.method]} @ {pct(a.sparsity)}'}"


def anatomy_reading(frame: pd.DataFrame) -> str:
    """What the diagnosed selections have in common, from their records: identical selections, emptied layers,
    selections that hang on one head, later layers that over-react, and (post-norm) whether the survivors'
    rescaling follows the damage."""
    if frame.empty:
        return "No Table I cell collapsed, and no selection was diagnosed."
    cells = list(frame.itertuples())
    lines = [f"{len(cells)} selections diagnosed ({and_join([f'{(frame.model == m).sum()} on {m}' for m in dict.fromkeys(frame.model)])})."]
    same: dict[tuple, list] = {}
    for a in cells:
        same.setdefault((a.model, frozenset(map(tuple, a.pruned))), []).append(a)
    twins = [and_join([_cell(a) for a in group]) for group in same.values() if len(group) > 1]
    if twins:
        lines.append(f"Identical selections (the same heads, so the same row): {'; '.join(twins)}.")
    emptied = [a for a in cells if a.emptied]
    worst = sorted(cells, key=lambda a: a.nll - a.nll_dense, reverse=True)[:max(1, len(cells) // 4)]
    lines.append(f"{len(emptied)} of {len(cells)} empty at least one layer; of the {len(worst)} largest damages "
                 f"({and_join([f'{_cell(a)} +{a.nll - a.nll_dense:.1f} nats' for a in worst])}), "
                 f"{sum(bool(a.emptied) for a in worst)} empty a layer.")
    restores = [(a, best_restore(a)) for a in cells]
    one = [(a, r) for a, r in restores if r is not None and r[1] > 0.5]
    spread = [a for a, r in restores if r is not None and r[1] < 0.2]
    if one:
        lines.append("One head carries the collapse (giving it back alone removes more than half the damage) in "
                     + and_join([f"{_cell(a)} (head {r[0]}, {r[1]:.0%})" for a, r in one]) + ".")
    if spread:
        lines.append(f"No single head carries it (each return removes under a fifth) in {len(spread)}: "
                     + and_join([_cell(a) for a in spread]) + ".")
    grown = [a for a in cells if a.grown_layer is not None and a.rms_ratio[f"head:{a.grown_layer}"] > 2]
    helped = [a for a in grown if a.add and min(t[2] for t in a.add) < a.nll - 0.1]
    if grown:
        lines.append(f"In {len(grown)} a later layer's attention output runs above twice its dense RMS, and in "
                     f"{len(helped)} of them cutting one more head of that layer lowers the loss by over 0.1 nats: "
                     "a later head that goes wrong without the earlier ones.")
    post = frame[frame.post_norm.astype(bool)] if "post_norm" in frame else frame.iloc[0:0]
    factors = [1 / min(r.values()) for r in post.get("remaining", []) if isinstance(r, dict) and r]
    if len(factors) >= 3 and len(factors) == len(post):
        from scipy.stats import spearmanr

        rho = spearmanr(factors, post.nll - post.nll_dense).statistic
        lines.append(f"Post-norm ({and_join(list(dict.fromkeys(post.model)))}): every selection scales up some layer's "
                     f"surviving heads, by x{min(factors):.2f} to x{max(factors):.2f}; the rank correlation of that "
                     f"factor with the damage is {rho:+.2f}"
                     + (", so the rescaling does not explain which cells collapse worst." if rho < 0.3 else "."))
    return "\n\n".join(lines)


def layer_scale_reading(table: pd.DataFrame, model: str, sparsity: float) -> str:
    """Which layers each method empties at ``sparsity`` and where their scale stands."""
    if table.empty:
        return ""
    lines = []
    for m in [c[:-len(" scale")] for c in table.columns if c.endswith(" scale")]:
        scale, cut = table[f"{m} scale"], table[f"{m} pruned"]
        full = [i for i in table.index if cut[i] > 1 and cut[i] == cut.max()]
        if not full:
            continue
        lowest = scale.nsmallest(len(full)).index.tolist()
        where = ", ".join(f"layer {table.layer[i]} at x{scale[i]:.2g}" for i in full)
        lines.append(f"- {m} on {model} at {pct(sparsity)} takes {int(cut.max())} heads from "
                     f"{'each of ' if len(full) > 1 else ''}{where} of the median head's score; "
                     + ("these are its lowest-scale layers." if set(full) == set(lowest) else
                        f"its lowest-scale layers are {and_join([str(table.layer[i]) for i in lowest])}."))
    return "\n".join(lines)


def remedy_reading(table: pd.DataFrame) -> str:
    """How often the layer-normalised ranking helps, hurts or ties (by its interval), and by how much."""
    if table.empty:
        return "The remedy ablation has not run."
    gone = table[table["both collapsed"]] if "both collapsed" in table else table.iloc[:0]
    t = table.drop(gone.index)
    apart = (f" In {len(gone)} more setting{'s' * (len(gone) > 1)} both rankings collapse (above {COLLAPSE:g}x dense): "
             + "; ".join(f"{r.method} on {r.model} at {r.sparsity}" for r in gone.itertuples())
             + ", compared nowhere.") if len(gone) else ""
    if t.empty:
        return "Every setting compares two collapsed models." + apart
    better, worse = int((t.hi < 1).sum()), int((t.lo > 1).sum())
    best, worst = t.loc[t.ratio.idxmin()], t.loc[t.ratio.idxmax()]
    return (f"Ranking by layer-normalised scores is better in {better}, worse in {worse} and undecided in "
            f"{len(t) - better - worse} of {len(t)} settings where at least one ranking keeps the model (paired over "
            f"the same windows). Largest gain: {best.method} on {best.model} at {best.sparsity}, x{best.ratio:.3g}; "
            f"largest loss: {worst.method} on {worst.model} at {worst.sparsity}, x{worst.ratio:.3g}." + apart)


# ---- sections 4-8: Tables II, IV and III, ties, efficiency ---------------------------------------

def table2_reading(t2v: pd.DataFrame, what: str = "perplexity") -> str:
    """What Table II shows: per model and sparsity, the (method, z) with the lowest ``what`` and
    MP-G's own best z against its default z = 2."""
    lines = []
    for c in t2v.columns:
        col = t2v[c].dropna().astype(float)
        if col.empty:
            continue
        mpg = col[[r for r in col.index if r.startswith(f"{LABEL['mpg']}, ")]]
        text = f"- **{c}**: lowest {what} {col.idxmin()} ({col.min():,.4g})"
        default = f"{LABEL['mpg']}, z = 2.0"
        if len(mpg) and default in mpg.index and mpg.idxmin() != default:
            text += f"; MP-G's best {mpg.idxmin().split(', ')[1]} ({mpg.min():,.4g}) against {mpg[default]:,.4g} at z = 2"
        elif len(mpg):
            text += "; MP-G is best at its default z = 2"
        lines.append(text + ".")
    return "\n".join(lines)


def table4_reading(table4: pd.DataFrame) -> str:
    """What Table IV shows: which methods have the most first places, and how many columns it counts."""
    firsts = table4["best"].astype(int)
    top = firsts[firsts == firsts.max()].index.tolist()
    return (f"- Most first places: {' and '.join(top)} ({firsts.max()} each, of {int(firsts.sum())} first places "
            "over Table I's columns); second places: "
            + ", ".join(f"{m} {int(v)}" for m, v in table4["second"].items() if v) + ".")


def table4b_reading(extra: pd.DataFrame) -> str:
    """How many first and second places each of our baselines would take in the paper's set."""
    return "- Added alone to the paper's set: " + "; ".join(
        f"{m} would take {int(r.best)} first and {int(r.second)} second places" for m, r in extra.iterrows()) + "."


def zeroshot_reading(zs: pd.DataFrame) -> str:
    """Per model and task (``zs``: :meth:`.tables.Tables.zeroshot_rows`): the dense value against the trivial
    answer (:func:`repro.claims.task_trivial`) and how many pruned cells lie outside the dense value's +-1.96
    standard errors."""
    lines = []
    for model, g in zs.groupby("model", sort=False):
        parts = []
        for task, t in g.groupby("task", sort=False):
            dense = t[t.method == "Dense"]
            if dense.empty:
                continue
            d = dense.iloc[0]
            half = 1.96 * (d.stderr or 0.0)
            pruned = t[t.method != "Dense"]
            out = int(((pruned.value - d.value).abs() > half).sum())
            level = d.get("trivial") if d.metric == "acc" else None
            note = (" (it never predicts the positive class)" if d.metric == "f1" and d.value == 0 else
                    f" (the trivial answer, {d['trivial answer']}: {level:.3f}"
                    f"{', inside its interval' if abs(d.value - level) <= half else ''})"
                    if level is not None and level == level else "")
            parts.append(f"{task} {d.metric} {d.value:.3f}{note}, {out} of {len(pruned)} pruned cells differ from it by more "
                         "than 1.96 standard errors")
        lines.append(f"- **{model}** dense: " + "; ".join(parts) + ".")
    return "\n".join(lines)


def ties_reading(ties: pd.DataFrame) -> str:
    """Per model and sparsity: the random tie-break's perplexities against the index one, where a tie
    is cut (fewer heads pruned than score 0)."""
    lines = []
    for model, g in ties.groupby("model", sort=False):
        inside = g[g.pruned < g["zero-score heads"]]
        if inside.empty:
            lines.append(f"- **{model}**: no cut falls inside a tie of zero scores"
                         + (" (no head scores 0)." if (g["zero-score heads"] == 0).all() else
                            "; the tie-break changes nothing."))
            continue
        for _, r in inside.iterrows():
            if not r["random seeds"]:
                lines.append(f"- **{model} @ {r.sparsity}**: the cut falls inside the tie; no random tie-break ran.")
                continue
            lines.append(f"- **{model} @ {r.sparsity}**: {r.pruned} of {r['zero-score heads']} zero-score heads cut; "
                         f"index order {num(r['index tie-break'])}, {int(r['random seeds'])} random tie-break(s) "
                         f"{num(r['min'])}-{num(r['max'])} (x{r['random tie-break mean'] / r['index tie-break']:.3f}"
                         " on average).")
    return "\n".join(lines)


def efficiency_reading(eff: pd.DataFrame) -> str:
    """What the efficiency table shows: per pruned state, the parameters it drops and its paired
    prefill speed-up at each batch size."""
    speed = [c for c in eff.columns if c.startswith("speed-up")]
    lines = []
    for _, r in eff[eff["model state"] != "dense"].iterrows():
        dense = eff[(eff.model == r.model) & (eff["model state"] == "dense")].iloc[0]
        drop = 1 - r["nonzero params (M)"] / dense["nonzero params (M)"]
        lines.append(f"- **{r.model}, {r['model state']}**: {drop:.1%} fewer non-zero parameters; prefill "
                     + ", ".join(f"x{r[c]:.3f} at {c.split()[-1]}" for c in speed) + ".")
    return "\n".join(lines)


# ---- section 9: MHA encoders ---------------------------------------------------------------------

def mha_reading(raw: pd.DataFrame, reference: str = "MP-G") -> str:
    """The MHA table's cross-entropy per model and sparsity: the best method against dense, where
    ``reference`` ranks, and whether MP and MP-G cut the same heads (equal in every cell)."""
    if raw.empty:
        return ""
    pruned = raw[raw.method != "Dense"]
    vals = pruned.pivot_table(index="method", columns=["model", "sparsity"], values="CE (nats)", sort=False)
    dense = raw[raw.method == "Dense"].set_index("model")["CE (nats)"]
    vals.loc["Dense"] = [dense.get(m, np.nan) for m, _ in vals.columns]
    text = column_reading(vals, focus=reference, what="cross-entropy")
    if {"MP", reference} <= set(vals.index):
        same = int((vals.loc["MP"] == vals.loc[reference]).sum())
        text += f"\n- MP and {reference} give the same cross-entropy in {same} of {vals.shape[1]} cells."
    return text


def surprising_cells_reading(frame: pd.DataFrame, models: list[str]) -> str:
    """Every pruned cell of ``frame`` (:func:`.records.vision_frame`) whose top-1 is above its dense model's or below
    chance (10%, or within a point of it): its images right against dense, and its cross-entropy minus dense's, paired
    over the same test images; a line saying so where none is above dense or below chance."""
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


# ---- section 11: what the results say ------------------------------------------------------------

def summary_reading(main: pd.DataFrame, claims: pd.DataFrame, table4: pd.DataFrame, windows: dict[str, str],
                    data: str, mha: pd.DataFrame | None = None) -> str:
    """'What the results say', generated from the cells and the claims (Markdown bullets); ``windows``: each
    model's evaluation sample in words, ``data`` their data set; ``mha``: the MHA encoders' claims frame, when
    they ran."""
    models = list(windows)

    def n(prefix: str) -> str:
        return count_verdicts(claims, prefix)
    mpg_vs_mp = paired_vs(main, models[0], "mpg", "mp", 0.25)
    lines = [
        "- **Dense references.** " + "; ".join(f"{m}: {find(main, m, 'dense').ppl:.2f} ("
                                              f"{windows[m]})" for m in models)
        + f" of {data}.",
        f"- **MP-G never collapses** (as the paper states it: a finite perplexity; the row counts the cells above "
        f"{COLLAPSE:g}x dense beside it): {n('MP-G never collapses')}.",
        f"- **MP-G in the top two of the paper's methods:** {n('MP-G ranks in the top two')}. Table IV counts: "
        + ", ".join(f"{i} best {r.best} / second {r.second}" for i, r in table4.iterrows()) + ".",
        f"- **MP-G vs the best calibration-based score** (paired): {n('Calibration-free MP-G')}. Wanda-, "
        "SparseGPT- and Gradient-Head sum un-normalised activation-weighted magnitudes, whose scale grows or shrinks "
        "with depth; ranked globally they can empty whole layers (see the per-layer table), which a norm *excess* "
        "above each projection's own profile cannot do.",
        f"- **GQA-aware MP-G vs MP:** {n('GQA-aware')}. On {models[0]} at 25% the paired ratio is "
        + (f"x{mpg_vs_mp.estimate:.3f}, MP-G better on {mpg_vs_mp.n_better} of {mpg_vs_mp.n} windows" if mpg_vs_mp
           else "not available")
        + ". With g = 3 (SmolLM2) or a single KV head (Gemma: the KV term is then a per-layer constant shared by "
        "every head of the layer, so dividing it by g only rescales that constant), the share changes which layers "
        "lose heads more than which heads within a layer.",
        f"- **z:** model-dependent optimum: {n('The optimal z')}; GQA models prefer 2.0-2.5: "
        f"{n('GQA models prefer')}; z = 2.5 rescues at 50%: {n('z = 2.5 rescues')}.",
        f"- **Cost:** {n('Calibration-free scoring')} (MP-G needs no forward pass at all).",
        f"- **Table III (section 6):** SparseGPT-Head the most robust downstream: "
        f"{n('SparseGPT-Head is the most robust')}; MP-G beats Random there: "
        f"{n('(beyond the paper) MP-G beats Random on a fine-tuned')}.",
        f"- **Efficiency:** zeroing at most 3.5% faster: {n('Zeroing heads')}; 8-16% fewer parameters at 50%: "
        f"{n('50% head sparsity removes')}; halved attention FLOPs: {n('50% head sparsity halves')}; "
        f"removal speeds up prefill: {n('(beyond the paper) Physically removing')}. SmolLM2's 28M-parameter tied embedding and "
        "its MLPs dominate its size, so removing half the heads saves a smaller share of parameters than in the "
        "paper's 7-8B models; GQA padding keeps zero heads where the surviving groups are uneven.",
        "- **Likely reasons for differences from the paper:** models 30-60x smaller than the paper's; 4-bit source "
        "weights (quantisation flattens the upper tail of the norm profiles that MP-G thresholds); Gemma-3's "
        "QK-norm rescales queries and keys after the projections, weakening the link between Q/K row norms and a "
        "head's effect.",
        f"- **Power:** {underpowered(claims)} The paper states a number for few of its claims; the rest say "
        "\"no paper number\" in the claims table.",
    ]
    if mha is not None and len(mha):
        def m(prefix) -> str:
            return count_verdicts(mha, prefix)
        lines.append("- **MHA encoders (beyond the paper's models; section 9):** MP-G reduces to MP for MHA: "
                     f"{m(('MP-G reduces to MP for MHA: identical head', 'MP-G reduces to MP for MHA: identical pruned'))}; MHA models prefer z = 1.5: {m('MHA models prefer')}; MP-G best "
                     f"at every sparsity: {m('MP-G is best at every sparsity')} (rows per model and sparsity).")
    return "\n".join(lines)


def calibration_size_reading(t) -> str:
    """Section 3e's table in sentences: per model, in how many cells the paper's calibration size prunes better
    (interval below 1), worse (above 1) or indistinguishably, and the largest change each way."""
    if t is None or t.empty:
        return ""
    ratio, before, after = "paper's / profile's", "profile's", "paper's"
    out = []
    for model, f in t.groupby("model", sort=False):
        better, worse = f[f.hi < 1], f[f.lo > 1]
        text = (f"- **{model}**: at the paper's calibration size {len(better)} of {len(f)} cells prune better, "
                f"{len(worse)} worse, {len(f) - len(better) - len(worse)} indistinguishable")
        moves = []
        for what, part, pick in (("gain", better, "idxmin"), ("loss", worse, "idxmax")):
            if len(part):
                r = part.loc[getattr(part[ratio], pick)()]
                moves.append(f"the largest {what} {r['method']} at {r['sparsity']}, x{r[ratio]:.3g} "
                             f"({r[before]:,.4g} -> {r[after]:,.4g})")
        out.append(text + ("; " + "; ".join(moves) if moves else "") + ".")
    return "\n".join(out)
