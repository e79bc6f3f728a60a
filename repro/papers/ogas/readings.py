"""What notebook 2's tables and figures show, in generated sentences: every one a pure function of the
numbers it reads (frames, records, values in; Markdown out), nothing typed by hand. :class:`.report.Report`
puts each table's reading inside the :class:`repro.report.Table` it returns; the notebook displays the
others (the zero-shot comparison, the worked example's figures)."""
from __future__ import annotations

import numpy as np
import pandas as pd

from repro.assets.machine import computed_on
from repro.claims import COLLAPSE, collapsed, count_verdicts, underpowered
from repro.papers.ogas.claims import ABOVE_TRIVIAL, PAPER_TASKS, ZEROSHOT_MEAN
from repro.papers.ogas.records import LABELS, paired_to, zeroshot_paired
from repro.papers.ogas.tables import falls_after_collapse
from repro.papers.ogas.worked import ROBUST, loss_curve, reallocation_table, root_curve, stretch, trace_of, used_setting
from repro.report import column_reading

# ---- Tables 1-2, the sample, the rounding, N:M -------------------------------------------------------------

def table12_reading(vals: pd.DataFrame) -> str:
    """What Tables 1-2 show (``vals``: their raw perplexities): per model and data set the lowest perplexity
    (against dense) and OGAS's rank."""
    return column_reading(vals, focus=LABELS["ogas"])


def paper_calibration_pending(p, paper: tuple[int, int]) -> str:
    """Where the parameters ``p`` calibrate on fewer tokens than the paper's ``paper`` (windows, length) and set no
    ``paper_calib``: one line saying which rows are still at the profile's calibration; "" otherwise."""
    if p.paper_calib is not None or p.calib_nsamples * p.calib_seqlen >= paper[0] * paper[1]:
        return ""
    return (f"Not yet at the paper's calibration: this profile calibrates every method of Tables 1-2 on "
            f"{p.calib_nsamples} x {p.calib_seqlen} tokens, below the paper's {paper[0]} x {paper[1]}, and sets no "
            "`paper_calib`: Tables 1-2 and every claim that reads them are at the profile's calibration. The cells at "
            "the paper's size are being computed across sessions (`tools/paper_settings.sh`); once they are among the "
            "records, the profile's `paper_calib` brings this section and its survival table to them.")


def calibration_cover(frame: pd.DataFrame) -> str:
    """How much text each calibration set drew on, from the records (``calibration_tokens``): one line per
    calibration text whose windows hold more tokens than it has distinct positions covered (they overlap)."""
    out = {}
    for data, cover in zip(frame.data, frame.get("calibration_tokens", [None] * len(frame))):
        if isinstance(cover, dict) and data not in out and cover["distinct"] < cover["drawn"]:
            out[data] = cover
    return "\n".join(f"- **{data}**: its calibration text holds {c['text']:,} tokens, so the {c['drawn']:,} tokens of "
                     f"the windows cover {c['distinct']:,} distinct positions: they overlap (each position read "
                     f"{c['drawn'] / c['distinct']:.1f} times on average)." for data, c in out.items())


def calibration_size_reading(t: pd.DataFrame) -> str:
    """Section 2b's comparison in sentences: per model and data set, in how many methods the paper's calibration
    prunes better (interval below 1), worse (above 1) or indistinguishably, and the largest change each way."""
    if t is None or t.empty:
        return ""
    ratio, out = "paper's / profile's", []
    for (model, data), f in t.groupby(["model", "data"], sort=False):
        better, worse = f[f.hi < 1], f[f.lo > 1]
        moves = []
        for part, pick in ((better, "idxmin"), (worse, "idxmax")):
            if len(part):
                r = part.loc[getattr(part[ratio], pick)()]
                before, after = r["profile's"], r["paper's"]
                moves.append(f"{r['method']} x{r[ratio]:.3g} ({before:,.4g} -> {after:,.4g})")
        out.append(f"- **{model}, {data}**: at the paper's calibration {len(better)} of {len(f)} methods prune better, "
                   f"{len(worse)} worse, {len(f) - len(better) - len(worse)} indistinguishably"
                   + ("; the largest changes: " + "; ".join(moves) if moves else "") + ".")
    return "\n".join(out)


def nm_reading(vals: pd.DataFrame) -> str:
    """What the N:M table shows (``vals``: its raw perplexities): per model and pattern the lowest perplexity."""
    return column_reading(vals)


def sample_reading(refs: dict[str, dict[str, dict]], dense: dict[str, float | None], seqlen: dict[str, int]) -> str:
    """One sentence per model splitting the step from the earlier sample (the first windows of the shorter
    length) to the whole split into its factors: which articles (first -> spread, same length), how much
    context (shorter -> the tables' length ``seqlen``, spread), and how the tables' sample (``dense``: its dense
    perplexity per model, None where it has none) sits in the split."""
    lines = []
    for name, r in refs.items():
        d = dense.get(name)
        if d is None or not {"first short", "spread short", "whole split"} <= set(r):
            continue
        a, b, c = (r[k]["result"] for k in ("first short", "spread short", "whole split"))
        lines.append(f"- **{name}**: {a['ppl']:.2f} on the first {a['n_windows']} x {a['seqlen']} tokens -> "
                     f"{b['ppl']:.2f} on as many spread over the split (which articles: x{b['ppl'] / a['ppl']:.3f}) -> "
                     f"{d:.2f} with {seqlen[name]} tokens each (more context per token: "
                     f"x{d / b['ppl']:.3f}); over all {c['n_windows']} windows {c['ppl']:.2f} (the sample / "
                     f"the split: x{d / c['ppl']:.3f}).")
    return "\n".join(lines)


def achieved_reading(achieved: pd.DataFrame) -> str:
    """Which methods hit the target exactly, what the others achieve, and each method's pruning time."""
    if achieved.empty:
        return ""
    exact = achieved[achieved.achieved == achieved.target]
    off = achieved[achieved.achieved != achieved.target]
    text = (f"- {', '.join(dict.fromkeys(exact.method))} remove exactly the target" if len(exact) else "- No method hits the target")
    text += ("; " + "; ".join(f"{m} {g.achieved.min():.5g}-{g.achieved.max():.5g}" for m, g in off.groupby("method", sort=False))
             + " (its rounding keeps a few weights more)" if len(off) else "") + "."
    times = achieved.groupby("method", sort=False)["prune seconds"]
    return text + "\n- Pruning time: " + ", ".join(f"{m} {t.min():.3g}-{t.max():.3g} s" for m, t in times) + "."


def rounding_reading(frame: pd.DataFrame, models: list[str], datas: list[str], sparsity: float) -> str:
    """Whether the paper's rounding changes OGAS's perplexity beyond the window sample's noise: OGAS over
    OGAS at the exact target, paired over windows, per model and data set where both ran."""
    lines = []
    for name in models:
        for d in datas:
            p = paired_to(frame, name, d, "ogas", "ogas-exact", sparsity)
            if p is not None:
                apart = p.ci[0] > 1 or p.ci[1] < 1
                lines.append(f"- **{name}, {d}**: x{p.estimate:.4f} [{p.ci[0]:.4f}, {p.ci[1]:.4f}]: "
                             + ("the rounding changes the perplexity beyond the windows' noise." if apart else
                                "not separable from no effect; the exact target reads the same."))
    return "\n".join(lines)


# ---- Tables 3-4: zero-shot ----------------------------------------------------------------------------------

def zeroshot_reading(results: dict[str, dict[str, dict]], chance: pd.DataFrame, tasks: list[str]) -> str:
    """Per zero-shot model: OGAS minus Wanda in mean accuracy, paired over documents, over all ``tasks`` and
    over only those where the dense model is above the trivial answer (``chance``: the dense-vs-trivial table)."""
    lines = []
    for name, res in results.items():
        if "ogas" not in res or "wanda" not in res:
            continue
        above = chance[(chance.model == name) & (chance["dense vs trivial"] == "above")].task.tolist()
        parts = []
        for label, ts in (("all tasks", tasks), ("the tasks where dense is above the trivial answer", above)):
            if ts:
                p = zeroshot_paired(res["ogas"], res["wanda"], ts)
                verdict = "better" if p.ci[0] > 0 else "worse" if p.ci[1] < 0 else "not separable"
                parts.append(f"over {label} ({len(ts)}) {p.estimate:+.3f} [{p.ci[0]:+.3f}, {p.ci[1]:+.3f}], {verdict}")
        lines.append(f"- **{name}**, OGAS minus Wanda in mean accuracy, paired over documents: " + "; ".join(parts) + ".")
    return "\n".join(lines)


def chance_reading(chance: pd.DataFrame) -> str:
    """One bullet per model of the dense-vs-trivial table: the tasks where its dense accuracy lies above, at
    and below the trivial answer (the paper's four tasks marked *)."""
    lines = []
    for name, g in chance.groupby("model", sort=False):
        parts = []
        for where in ("above", "at", "below"):
            t = g[g["dense vs trivial"] == where]
            if len(t):
                parts.append(f"{where} the trivial answer on " + ", ".join(f"{task}{'*' if paper else ''} {acc:.2f}" for task, paper, acc
                                                        in zip(t.task, t["paper's task"], t["dense accuracy"])))
        lines.append(f"- **{name}** dense: " + "; ".join(parts) + ".")
    return "\n".join(lines) + "\n\n(* the paper's four tasks; accuracy over the documents evaluated.)"


def answer_bias_reading(bias: pd.DataFrame) -> str:
    """One bullet per model: the tasks where its dense model gives one answer far more often than it is right
    (a share at least 0.15 above the gold share), with the pruned models' rates beside."""
    if bias.empty:
        return "- No per-document answers in these records (computed before they were kept)."
    lines = []
    for name, g in bias.groupby("model", sort=False):
        others = [c for c in g.columns if c not in ("model", "task", "answer", "gold share", "Dense")]
        parts = [f"{r.task} '{r.answer}' on {r.Dense:.0%} of documents (gold {r['gold share']:.0%}; "
                 + ", ".join(f"{m} {r[m]:.0%}" for m in others) + ")"
                 for _, r in g.iterrows() if r.Dense - r["gold share"] >= 0.15]
        lines.append(f"- **{name}** " + ("leans to one answer: " + "; ".join(parts) if parts else
                                         "gives no answer 0.15 more often than it is right") + ".")
    return "\n".join(lines)


# ---- Table 5, the gamma search, Figure 4 ---------------------------------------------------------------------

def ablation_reading(table5: pd.DataFrame) -> str:
    """What Table 5 shows: per model, each variant's perplexity and its paired ratio to Wanda, best first."""
    if table5.empty:
        return ""
    lines = []
    for model, g in table5.groupby("model", sort=False):
        g = g.sort_values("ppl")
        lines.append(f"- **{model}**: " + "; ".join(f"{r.variant} {r.ppl:.4g} ({r['vs Wanda (paired)']} against Wanda)"
                                               for _, r in g.iterrows() if r.variant != "Wanda") + ".")
    return "\n".join(lines)


def machines_reading(draws: pd.DataFrame, keys, check: dict | None,
                     path: str = "benchmarks/results/bf16_products_smollm2-135m.json") -> str:
    """Where the records ``keys`` behind a table were computed (``draws``: the frame with one row per draw and
    its ``machine``), when more than one machine computed them: a ratio between two machines' cells carries the
    drift between the machines too, which ``check`` (``benchmarks/bf16_products.py --cell``: one committed cell
    recomputed on another machine) measures. "" when one machine computed them all."""
    rows = draws[draws.key.isin(set(keys))]
    if rows.empty or rows.machine.nunique() < 2:
        return ""
    parts = [f"{len(g)} on {m if m != 'not recorded' else 'a machine their records do not name (older records)'} "
             f"(draw{'s' if g.draw.nunique() > 1 else ''} {', '.join(map(str, sorted(set(g.draw))))})"
             for m, g in rows.groupby("machine", sort=False)]
    text = (f"- **Where these cells ran**: {'; '.join(parts)}. A ratio between cells of two machines carries the "
            "drift between the machines as well as the methods' difference")
    c = (check or {}).get("cell")
    if not c:
        return text + f" (not measured here: `{path}` is absent; run `benchmarks/bf16_products.py --cell KEY`)."
    return text + (f": one committed cell recomputed on {computed_on(c['machine'])} ({c['config']['method']}, "
                   f"{c['config']['model']['name']}, calibration draw {c['calib_seed']}) came out at x"
                   f"{1 + c['rel_ppl_diff']:.4f} its recorded perplexity, its mask "
                   f"{'the same' if c['same_mask'] else 'changed (calibration sums taken in another order)'} "
                   f"(`{path}`). Ratios within that distance of 1 do not tell a method's effect from the machine.")


def bounds_reading(bounds: pd.DataFrame) -> str:
    """What the gamma-bounds table shows: per variant and interval, how many layers' searches ended at a
    bound (a search that ends there was stopped by the interval, not by the loss)."""
    return "\n".join(f"- **{r.model}, {r.variant}, {r.interval}**: {r['at the lower bound']} of {r.layers} layers at "
                     f"the lower bound, {r['at the upper bound']} at the upper; median gamma {r['median gamma']:.3g}."
                     for _, r in bounds.iterrows())


def curve_reading(curve: pd.DataFrame, dense: dict[str, float], uniform: dict[str, float | None]) -> str:
    """What Figure 4 shows from 70% on: per model and sparsity the lowest perplexity among the methods'
    own lines and which methods have collapsed there (above ``COLLAPSE`` x ``dense`` or at a ``uniform`` guess,
    :func:`repro.claims.collapsed`: a comparison among them cannot inform a claim); then every place a line
    falls as sparsity rises between two collapsed points (:func:`.tables.falls_after_collapse`)."""
    lines = []
    for model, g in curve[curve.headroom.isna()].groupby("model", sort=False):
        u = uniform[model]
        parts = []
        for sp, s in g[g.sparsity >= 0.7].groupby("sparsity"):
            s = s.set_index("label").ppl.astype(float)
            gone = [m for m, v in s.items() if collapsed(v, dense[model], u)]
            parts.append(f"at {sp:.0%} {s.idxmin()} {s.min():,.0f}" +
                         (f", collapsed: {', '.join(gone)}" if gone else ""))
        if parts:
            head = f"**{model}** (dense {dense[model]:.3g}, collapse above {COLLAPSE:g}x it" + \
                   (f"; a uniform guess {u:,.0f})" if u else ")")
            lines.append(f"- {head}: lowest " + "; ".join(parts) + ".")
    for f in falls_after_collapse(curve, dense, uniform):
        share = "" if f["of_uniform"] is None else (f" ({f['of_uniform'][0]:.2f} and {f['of_uniform'][1]:.2f} of a "
                                                    "uniform guess's)")
        lines.append(f"- **{f['model']}, {f['label']} falls** from {f['ppl_from']:,.0f} at {f['from']:.0%} to "
                     f"{f['ppl_to']:,.0f} at {f['to']:.0%}{share}: both points have collapsed, where perplexity "
                     "tells how a destroyed model is wrong (spread near uniformly, or confident and wrong), not "
                     "what it kept: not a recovery, and no comparison between the two.")
    return "\n".join(lines)


def clamp_share(quantiles: list[float], s_max: float) -> float:
    """The share of a layer's channels held at ``s_max``, read off its stored channel-sparsity quantiles
    (:data:`repro.engines.prune.QUANTILES`, 21 points): k points at ``s_max`` put at least (k - 1) / 20 of the
    channels there (a lower bound, to the quantiles' 5% resolution)."""
    k = int(np.isclose(np.asarray(quantiles, dtype=float), s_max).sum())
    return max(k - 1, 0) / (len(quantiles) - 1)


def headroom_reading(frame: pd.DataFrame, data: str, headrooms: list[float], dense: dict[str, float],
                     uniform: dict[str, float | None], default: float = 0.1) -> str:
    """Figure 4's S_max headroom rows (``frame``: the notebook's cells on ``data``) read against the clamp they
    change: per model and sparsity where another headroom prunes differently, each headroom's S_max, the share of
    channels it holds at S_max (mean over layers, :func:`clamp_share`), the mean change of the layers' searched
    gamma against the default headroom's, and the perplexity; then whether perplexity follows the clamp (it
    should fall, or rise, as the clamp binds less) and whether the points have collapsed."""
    lines = []
    f = frame[(frame.data == data) & (frame.method == "ogas")]
    for model, g in f.groupby("model", sort=False):
        for sp, s in g.groupby("sparsity"):
            own = s.own_gamma if "own_gamma" in s else ["search"] * len(s)  # each model's gamma rule's cells only
            cells = {float(p.get("s_max_headroom", default)): r for p, r, g in zip(s.params, s.itertuples(), own)
                     if p.get("rounding", "paper") == "paper" and p.get("gamma") == g}
            if len(cells) < 2 or default not in cells:
                continue
            order = sorted(h for h in cells if h in [default, *headrooms])
            stats = {}
            for h in order:
                ex, q = cells[h].extras or {}, cells[h].channel_quantiles or {}
                share = np.mean([clamp_share(q[n], e["s_max"]) for n, e in ex.items() if n in q]) if q else np.nan
                gammas = {n: e["gamma"] for n, e in ex.items()}
                stats[h] = (next(iter(ex.values()))["s_max"] if ex else np.nan, share, gammas, float(cells[h].ppl))
            base = stats[default][2]
            dgamma = {h: np.mean([abs(v[2][n] - base[n]) for n in base if n in v[2]]) for h, v in stats.items()}
            shares, ppls = [stats[h][1] for h in order], [stats[h][3] for h in order]
            gone = [collapsed(v, dense[model], uniform.get(model)) for v in ppls]
            monotone = all(a >= b for a, b in zip(shares, shares[1:]))
            follows = all(np.diff(ppls) <= 0) or all(np.diff(ppls) >= 0)
            text = (f"- **{model}, {sp:.0%}, S_max headroom {' / '.join(f'{h:g}' for h in order)}**: S_max "
                    f"{' / '.join(f'{stats[h][0]:.2f}' for h in order)} holds at least "
                    f"{' / '.join(f'{100 * v:.0f}%' for v in shares)} of the channels (mean over layers); "
                    + (f"the layers' searched gamma moves by {' / '.join(f'{dgamma[h]:.2f}' for h in order if h != default)}"
                       " on average against the default's" if any(dgamma.values()) else "gamma is fixed, so only the "
                       "clamp differs")
                    + f"; perplexity {' / '.join(f'{v:,.0f}' for v in ppls)}. ")
            if monotone and not follows:
                text += ("The clamp binds less as the headroom grows but perplexity does not follow it, so the clamp "
                         "alone does not explain the order" + ("; the headroom also moves every layer's searched gamma "
                         "(above), which these cells cannot separate from the clamp. " if any(dgamma.values()) else ". "))
            elif follows:
                text += "Perplexity moves one way as the clamp loosens. "
            if all(gone):
                text += ("Every point has collapsed: among destroyed models perplexity says how each is wrong, not "
                         "what it kept, so their order is no finding about the headroom.")
            lines.append(text.strip())
    return "\n".join(lines)


# ---- the claims -------------------------------------------------------------------------------------------------

def claims_reading(claims: pd.DataFrame, sparsity: float) -> str:
    """'What the results say' as Markdown bullets, counted from the claims frame."""
    return "\n".join([
        f"- **OGAS vs Wanda** at {sparsity:.0%}: {count_verdicts(claims, 'OGAS below Wanda at')} (on average over the "
        f"settings, the paper's average column: {count_verdicts(claims, 'OGAS below Wanda on average')}); **vs RIA**: "
        f"{count_verdicts(claims, 'OGAS below RIA')}; **vs SparseGPT**: "
        f"{count_verdicts(claims, 'OGAS at or below SparseGPT')}.",
        f"- **Single signals between Wanda and OGAS**: {count_verdicts(claims, ('Each single signal improves', 'Each single signal is improved'))}; **PAPR-only "
        f"comparable to energy-only**: {count_verdicts(claims, 'PAPR-only is comparable')}; **searched gamma better than "
        f"fixed**: {count_verdicts(claims, 'Searching gamma')}.",
        f"- **Zero-shot mean above Wanda** over the paper's four tasks: "
        f"{count_verdicts(claims, f'{ZEROSHOT_MEAN} ({PAPER_TASKS}')}; over those where the dense model is above the "
        f"trivial answer: {count_verdicts(claims, f'{ZEROSHOT_MEAN} ({ABOVE_TRIVIAL}')}.",
        f"- **Flattest from 70% to 90%**: {count_verdicts(claims, 'OGAS degrades least')}; **lowest at 80% and 90%** "
        f"(Figure 4's text): {count_verdicts(claims, 'OGAS has the lowest')}; **magnitude and SparseGPT collapse**: "
        f"{count_verdicts(claims, 'Magnitude and SparseGPT collapse')}; **OGAS does not**: "
        f"{count_verdicts(claims, 'OGAS does not collapse')}.",
        f"- **HellaSwag above Wanda** (+3.39 points in the paper): {count_verdicts(claims, 'OGAS beats Wanda on')}.",
        "- These are 135M/270M models from 4-bit weights with a few calibration windows; OGAS's signals come from "
        "output statistics of small layers. Its gain over Wanda in the paper is 8.85 -> 7.99 on an 8B model, "
        "x0.903 (9.7% lower perplexity): each claim row states whether our interval could detect an effect that "
        "large.",
        f"- **Power**: {underpowered(claims)}"])


# ---- the worked one-layer example (each takes the ``prune-worked`` record, its ``result`` or its trace) --------

def _shape(gammas: np.ndarray, losses: np.ndarray) -> str:
    d = np.diff(losses)
    if (d <= 0).all():
        return "falls monotonically, so its minimum on the interval is at the upper end"
    if (d >= 0).all():
        return "rises monotonically, so its minimum on the interval is at the lower end"
    i = int(np.argmin(losses))
    return f"is not monotone: on the grid it is lowest at gamma = {gammas[i]:.3g} (L = {losses[i]:.4f})"


def gamma_reading(record: dict) -> str:
    """Which gamma OGAS used on the layer, where it sits in the search interval, and why: the shape of
    ``L(gamma)`` over the interval on the grid, how much it varies there, and the grid's minimum beyond it."""
    t = trace_of(record)
    lo, hi = t["gamma_bounds"]
    tol, g, used = t["gamma_tol"], t["gamma"], used_setting(t)
    c = loss_curve(t)
    grid = c[c.source == "grid"].sort_values("gamma")
    inside = grid[grid.inside]
    gi, li = inside.gamma.to_numpy(), inside.L.to_numpy()
    shape = (f"Over the interval ({lo:g}, {hi:g}), L(gamma) goes from {li[0]:.4f} at gamma = {gi[0]:g} to "
             f"{li[-1]:.4f} at {gi[-1]:g} and {_shape(gi, li)}; it varies by "
             f"{100 * (li.max() - li.min()) / li.min():.2g}% of its minimum there")
    best = grid.loc[grid.L.idxmin()]
    beyond = (f"; on the whole grid ({grid.gamma.min():g} to {grid.gamma.max():g}) its minimum is at gamma = "
              f"{best.gamma:.3g} (L = {best.L:.4f}){', outside the interval' if not best.inside else ''}"
              if len(grid) > len(inside) else "")
    if not t["search"]:
        return (f"The setting fixes gamma = {g:g} (no search); L there is {used['rel_error']:.4f}. {shape}{beyond}.")
    where = ("within its tolerance of the lower end" if g - lo < tol else "within its tolerance of the upper end"
             if hi - g < tol else "inside the interval, away from both ends")
    n = len(t["search_path"]["gamma"])
    return (f"The search chose gamma = {g:.3g} for {t['layer']} after {n} "
            f"evaluations of L (tolerance {tol:g}), with L = {used['rel_error']:.4f}: {where}. {shape}{beyond}. "
            f"The search's L is {100 * (used['rel_error'] - li.min()) / li.min():+.2g}% against the interval's grid "
            f"minimum.")


def reallocation_reading(record: dict, tol: float = 0.01) -> str:
    """How much OGAS moves the channels off the uniform target at the gamma used (the 5-95% range of ``s``
    against the room ``[S_min, S_max]``), and at the interval's ends."""
    t = trace_of(record)
    r = reallocation_table(t, tol)
    mm = r[r.normalisation == "min-max"]
    u = mm[mm.gamma == t["gamma"]].iloc[0]
    room = t["s_max"] - t["s_min"]
    s = np.asarray(used_setting(t)["s"])
    less, more = int((s < t["target"] - 1e-12).sum()), int((s > t["target"] + 1e-12).sum())
    ends = "; ".join(f"{row.q05:.3f} to {row.q95:.3f} at gamma = {row.gamma:g} ({row.role})"
                     for row in mm.itertuples() if row.gamma != t["gamma"])
    return (f"At gamma = {t['gamma']:.3g}, 90% of the {t['rows']} channels get a sparsity between {u.q05:.3f} and "
            f"{u.q95:.3f} (5-95%; median {u.q50:.3f}, std {u['std']:.3f}) around the {t['target']:.0%} target, "
            f"{100 * (u.q95 - u.q05) / room:.2g}% of the room from S_min = {t['s_min']:g} to S_max = {t['s_max']:g}, "
            f"and {u.within:.0%} lie within {tol:g} of the target; the extremes are {u['min']:.3f} and {u['max']:.3f}. "
            f"{less} channels are pruned less than Wanda's uniform {t['target']:.0%}, {more} more. For comparison, the "
            f"5-95% range is {ends}.")


def _outliers(st: dict, label: str, what: str) -> str:
    out = st["outliers"]
    far = (f"{len(out)} channel{'s' * (len(out) != 1)} ({', '.join(map(str, out[:3]))}{', ...' if len(out) > 3 else ''}) "
           f"lie beyond Tukey's far-out fences" if out else "no channel lies beyond Tukey's far-out fences")
    return (f"For {label}, channel {st['top']} has the largest {what} ({st['top_value']:.3g}, {st['top_over_median']:.3g}x "
            f"the median channel's {st['median_value']:.3g}) and {far}; the min-max range is {st['range_ratio']:.3g}x "
            f"that of the channels between percentiles {st['lo']:g} and {st['hi']:g}, which land in x = {st['bulk'][0]:.2f} to "
            f"{st['bulk'][1]:.2f}, and the median channel sits at x = {st['median_x']:.2f} "
            f"({st['median_x_robust']:.2f} with the values beyond percentiles {st['lo']:g} and {st['hi']:g} clipped)")


def stretch_reading(record: dict) -> str:
    """What stretches min-max normalisation on the layer (its outlier channels and where the median channel
    lands), and the spread of ``s`` that robust normalisation would give at the same gamma."""
    t = trace_of(record)
    r = reallocation_table(t)
    mm = r[(r.normalisation == "min-max") & (r.gamma == t["gamma"])].iloc[0]
    rb = r[r.normalisation != "min-max"].iloc[0]
    e = stretch(np.asarray(t["energy"], dtype=float), *ROBUST)
    p = stretch(np.asarray(t["peak_ratio"], dtype=float), *ROBUST)
    return (f"{_outliers(e, 'log(1+E)', 'energy')}. {_outliers(p, 'log(1+P)', 'peak ratio')}. With both terms "
            f"normalised between their percentiles {ROBUST[0]:g} and {ROBUST[1]:g} instead (channels beyond clipped to 0 or 1), the same "
            f"gamma = {t['gamma']:.3g} would spread the channel sparsities over {rb.q05:.3f} to {rb.q95:.3f} (5-95%, std "
            f"{rb['std']:.3f}) instead of {mm.q05:.3f} to {mm.q95:.3f} (std {mm['std']:.3f}).")


def root_reading(record: dict, target: float | None = None) -> str:
    """Why alpha is unique (``f`` non-decreasing, checked on its grid) and where it is, or why there is none
    at ``target`` (default the record's; :func:`repro.methods.ogas_terms.alpha_curve`'s three cases)."""
    t = trace_of(record)
    c = root_curve(t, target)
    f, a = np.asarray(c["f"]), np.asarray(c["alpha"])
    mono = bool((np.diff(f) >= -1e-12).all())
    crossings = int(((f[:-1] < 0) & (f[1:] >= 0)).sum())
    head = (f"At gamma = {t['gamma']:.3g} and a {100 * c['target']:g}% target, f(alpha) = mean s - target "
            f"{'never decreases' if mono else 'DECREASES somewhere'} on its {len(a)} grid points, from "
            f"{f[0]:+.3f} at alpha = 0 (every channel at S_min = {t['s_min']:g}) to {f[-1]:+.4f} at alpha = "
            f"{c['alpha_hi']:.3g}, where every channel with I < 1 has reached S_max = {t['s_max']:g} (the largest mean "
            f"S_max allows is {c['max_mean']:.4f})")
    if c["root"] == "unique":
        return (f"{head}; it crosses zero {'once' if crossings == 1 else f'{crossings} times'}, at alpha = "
                f"{c['alpha_root']:.4f}: the alpha OGAS uses.")
    if c["root"] == "at alpha_hi":
        return (f"{head}; the target is exactly that largest mean, so f reaches zero only at alpha = {c['alpha_hi']:.4g} "
                f"and stays there: every larger alpha gives the same sparsities, and the root is not unique.")
    if c["root"] == "at 0":
        return f"{head}; the target is at or below S_min, so alpha = 0 and every channel keeps S_min."
    return (f"{head}; it stays below zero, so there is no root: OGAS takes alpha = {c['alpha_root']:.4g} "
            f"(alpha_at_bound) and the layer's mean sparsity falls {c['target'] - c['max_mean']:.4f} short of the target.")


def same_pruning_reading(record: dict, zeros_sha256: str | None) -> str:
    """Whether the worked example pruned the model exactly as the table's OGAS cell (its ``zeros_sha256``)."""
    rec = record.get("result", record)
    if zeros_sha256 is None:
        return "The table's OGAS cell has no mask fingerprint to compare with."
    same = rec["zeros_sha256"] == zeros_sha256
    return (f"The worked example's pruned model has {'the same' if same else 'a DIFFERENT'} zero pattern "
            f"{'as' if same else 'from'} the OGAS cell of Tables 1-2 (sha256 {rec['zeros_sha256'][:12]}...): "
            f"{'tracing changes nothing that is pruned' if same else 'the trace does not describe that cell'}.")
