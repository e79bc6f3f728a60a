"""Paper 3's prose: every sentence notebook 3 generates, one function each (frames and values in, Markdown out),
from the numbers of its tables (:class:`.report.Report` puts each into its table), its claims, the LAMBADA and
layer-scale investigations and the synthetic arms. No number in it is typed by hand.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats

from repro.claims import count_verdicts, underpowered
from repro.methods.bandit import SELECTORS, TAU
from repro.papers.bandit.lambada import head_counts, lambada_changes
from repro.papers.bandit.records import CELL, LABELS, MAB, MAB_VS_GREEDY, SETTING, unit_of
from repro.papers.bandit.rescale import layer_counts, unit_damage
from repro.report import group_lines, ranking_reading
from repro.words import unit_pct

# ---- the tables ---------------------------------------------------------------------------------


def table1_reading(table1: pd.DataFrame) -> str:
    """What Table 1 shows: per model, unit type and ratio, the method with the least WikiText-2 damage
    and where the two bandits and budgeted greedy rank (mean over seeds)."""
    return ranking_reading(table1, ["model", "kinds", "ratio"], "WikiText-2 ppl change %",
                           [LABELS["ucb"], LABELS["thompson"]], LABELS["greedy"], "%")


def table2_reading(table2: pd.DataFrame) -> str:
    """What Table 2 (or section 5c's table) shows: per vision model, the least top-1 drop and the bandits'
    and greedy's ranks."""
    return ranking_reading(table2, ["model"], "drop_pp", [LABELS["ucb"], LABELS["thompson"]], LABELS["greedy"],
                           " points")


def magnitude_among_random(vis: pd.DataFrame) -> str:
    """Per vision model where magnitude drops more top-1 than Random's mean: where its drop falls among Random's seeds
    (one random selection each), which says whether it is worse than a random selection or one draw of their spread."""
    out = []
    for model, g in vis.groupby("model", sort=False) if len(vis) else []:
        mag, rnd = g[g.method == "magnitude"].top1_drop_pp, g[g.method == "random"].top1_drop_pp
        if not len(mag) or len(rnd) < 2 or mag.mean() <= rnd.mean():
            continue
        better = int((rnd > mag.mean()).sum())
        out.append(f"on {model} Magnitude drops {mag.mean():.1f} points, more than Random's mean ({rnd.mean():.1f}) but "
                   f"less than {better} of its {len(rnd)} seeds ({rnd.min():.1f}-{rnd.max():.1f})"
                   + ("" if better else ": worse than every random selection"))
    return ("Magnitude against Random's seeds: " + "; ".join(out) + ".") if out else ""


def per_seed_reading(lm: pd.DataFrame) -> str:
    """What the per-seed table shows: per setting, the method whose WikiText-2 change moves most from
    seed to seed, and the runs whose LAMBADA perplexity *falls* after pruning (surprising: see the
    LAMBADA section for what was found)."""
    lines = []
    for (model, kinds, ratio), g in lm.groupby(["model", "kinds", "ratio"], sort=False):
        spread = g[np.isfinite(g.change_pct)].groupby("method").change_pct.agg(lambda x: x.max() - x.min())
        widest = spread.idxmax()
        fell = g[g.lambada_change_pct < 0]
        text = (f"- **{model}, {kinds} {unit_pct(ratio)}**: seed to seed the WikiText-2 change moves most for "
                f"{LABELS[widest]} ({spread.max():.3g} points between its best and worst seed)")
        runs = [f"{LABELS[r.method]} seed {int(r.seed)} ({r.lambada_change_pct:+.1f}%"
                + (f", last-word accuracy {r.lambada_acc_change:+.2f}" if "lambada_acc_change" in r else "") + ")"
                for _, r in fell.iterrows()]
        text += (f"; LAMBADA perplexity falls in {len(runs)} of {len(g)} runs: " + ", ".join(runs[:4])
                 + (f" and {len(runs) - 4} more" if len(runs) > 4 else "")
                 if runs else "; LAMBADA perplexity rises in every run")
        lines.append(text + ".")
    return "\n".join(lines)


def rewards_reading(rewards: pd.DataFrame) -> str:
    """What the rewards table shows: per model and unit setting, the share of pulls judged harmful and
    the range of mean rewards over the methods (rewards near 0 for every pull: the reward saturates)."""
    if not len(rewards):
        return ""
    return group_lines(rewards, ["model", "units"], lambda g: (
        f"{g.harmful.min():.0%}-{g.harmful.max():.0%} of pulls harmful, mean reward {g['mean reward'].min():.3f}-"
        f"{g['mean reward'].max():.3f} over {', '.join(g.method)}."))


def layers_reading(lp: pd.DataFrame) -> str:
    """What the unit-layers table shows: per setting, the method that puts most of its units in the
    first (or the last) tenth of the layers, against the largest share any other method puts there."""
    def say(g: pd.DataFrame) -> str:
        end = max([c for c in ("share in early layers", "share in last layers") if c in g], key=lambda c: g[c].max())
        g = g.sort_values(end, ascending=False)
        top, rest = g.iloc[0], g.iloc[1:]
        return (f"{LABELS.get(top.method, top.method)} puts {top[end]:.0%} of its units in the "
                f"{'first' if 'early' in end else 'last'} {int(top['early layers'])} layer(s); no other method "
                f"more than {rest[end].max():.0%}.")
    return group_lines(lp, ["model", "units"], say) if len(lp) else ""


def budget_reading(b1: pd.DataFrame) -> str:
    """What Table B1 shows: whether the sequential searches of a setting spent the same paired
    evaluations (the matched budget), and their seconds against the one-shot scorers'."""
    lines = []
    for (model, units), g in b1.groupby(["model", "units"], sort=False):
        search = g[g.paired_evaluations > 0]
        one = g[(g.paired_evaluations == 0) & (g.calibration_passes > 0)]
        if search.empty:
            continue
        same = search.paired_evaluations.nunique() == 1
        text = (f"- **{model}, {units}**: the searches spend "
                + (f"the same {search.paired_evaluations.iloc[0]:.0f} paired evaluations"
                   if same else "different budgets: " + ", ".join(f"{r.method} {r.paired_evaluations:.0f}"
                                                               for _, r in search.iterrows()))
                + f" per run in {search.seconds.min():.3g}-{search.seconds.max():.3g} s")
        if len(one):
            text += f"; the one-shot scorers {one.seconds.min():.3g}-{one.seconds.max():.3g} s"
        lines.append(text + ".")
    return "\n".join(lines)


def comparisons_reading(tests: pd.DataFrame) -> str:
    """What a family of across-seed tests shows: how many intervals exclude 0 and in whose favour (every
    value here is lower-is-better: a negative difference favours the bandit), and how many survive BH."""
    if not len(tests):
        return ""
    decided = tests[(tests.ci_lo > 0) | (tests.ci_hi < 0)]
    mab_better = decided[decided.mean_diff < 0]
    against = ", ".join(dict.fromkeys(decided[decided.mean_diff > 0].b))
    q = int((tests.q < 0.05).sum()) if "q" in tests else 0
    return (f"- The 95% interval excludes 0 in {len(decided)} of {len(tests)} comparisons: {len(mab_better)} "
            f"favour the bandit, {len(decided) - len(mab_better)} the baseline" + (f" ({against})" if against else "")
            + f"; {q} have q < 0.05 within the family.")


def b2_reading(b2: pd.DataFrame, paper: pd.DataFrame) -> str:
    """Table B2 in sentences: each family's count of q < 0.05 beside the paper's like-for-like one, and why rows that
    hold at 95% on their own (the claims table's MAB-vs-greedy rows) need not survive the correction: their
    subfamily's smallest q, and how often the whole family's q is below the subfamily's."""
    from repro.papers.bandit.tables import ALL_FAMILY, PAPER_BH, PAPER_COUNTS, PAPER_FAMILY

    if not len(b2) or not len(paper):
        return ""
    fam = b2.set_index("family")
    q_col = next(c for c in b2.columns if c.startswith("q <"))
    sub, whole = fam.loc[PAPER_FAMILY], fam.loc[ALL_FAMILY]
    favour = paper[(paper.ci_hi < 0)]
    lower = int((paper["q (whole family)"] < paper.q).sum())
    return (f"- **Like for like.** The paper's comparison (MAB against budgeted greedy on the language models) has "
            f"q < 0.05 in {PAPER_COUNTS['q < 0.05']} of its {PAPER_COUNTS['comparisons']} tests; here in "
            f"{int(sub[q_col])} of {int(sub.comparisons)}. Its whole family: {PAPER_BH['q < 0.05']} of "
            f"{PAPER_BH['tests']}; here {int(whole[q_col])} of {int(whole.comparisons)}.\n"
            f"- **Holds at 95%, not after correction.** {len(favour)} of these {len(paper)} intervals lie below 0 in "
            "MAB's favour: each such row holds in the claims table, judged on its own at 95%. Corrected with the "
            f"other {len(paper) - 1} tests of the subfamily, the smallest q is {paper.q.min():.3f}: "
            + (f"{found} remain discoveries" if (found := int((paper.q < 0.05).sum())) else "none is a discovery")
            + " once the comparisons are counted together.\n"
            f"- **Family size.** The whole family's q is below the subfamily's in {lower} of {len(paper)} rows: under "
            "Benjamini-Hochberg a test's q depends on how many of its family's p-values are small, and the whole "
            "family holds many small ones from the other baselines.")


def allocation_reading(alloc: pd.DataFrame) -> str:
    """What the allocation table shows, per budget (pulls per step), memory rule and method: distinct
    candidates per step, and the pulls a join was decided on (one: greedy in effect)."""
    def span(values: pd.Series, fmt: str = ".3g") -> str:
        lo, hi = values.min(), values.max()
        return f"{lo:{fmt}}" if f"{lo:{fmt}}" == f"{hi:{fmt}}" else f"{lo:{fmt}}-{hi:{fmt}}"

    if not len(alloc):
        return ""
    lines = []
    for (pulls, memory, method), g in alloc.groupby(["pulls_per_step", "memory", "method"], sort=False):
        lines.append(f"- **{method}{'' if memory == '-' else f', {memory}'}, {pulls:.3g} pulls per step** "
                     f"({len(g)} setting{'s' if len(g) > 1 else ''}): {span(g.distinct_per_step)} distinct "
                     f"candidates per step; joins decided on {span(g.join_evidence)} pulls; "
                     f"{span(g.joins_backed, '.0%')} of joins pulled under their mask"
                     + (f"; {span(g.to_newcomers, '.0%')} of the pulls and {span(g.joins_new, '.0%')} of the joins go to "
                        "units first pulled in that step" if {"to_newcomers", "joins_new"} <= set(g) else "") + ".")
    return "\n".join(lines)


def memory_reading(ablation: pd.DataFrame) -> str:
    """What the memory (or join) ablation shows, per other rule: its verdicts ("the notebook's rule is
    better") counted, with the settings where the other rule did better (the whole interval of other - main
    below 0: every value here is lower-is-better)."""
    if not len(ablation):
        return ""
    col = next(c for c in ablation.columns if c.startswith("verdict ("))
    main = col[len("verdict ("):-len(" better)")]
    lines = []
    for rule, g in ablation.groupby("rule", sort=False):
        counts = ", ".join(f"{v} {n}" for v, n in g[col].value_counts().items())
        won = "; ".join(f"{r.model} {r.kinds} {unit_pct(r.ratio)} {r.method} ({r['other - main']:+.3g})"
                        for _, r in g[g.ci_hi < 0].iterrows())
        lines.append(f"- **{main} against {rule}**, {main} better: {counts} (of {len(g)} settings)"
                     + (f"; {rule} did better in: {won}." if won else "."))
    return "\n".join(lines)


def join_reading(table: pd.DataFrame) -> str:
    """What the join replay shows, per setting and join rule that ran."""
    lines = []
    for _, r in table.iterrows():
        fewer = r["posterior's pick had fewer pulls"]
        lines.append(f"- **{r.model}, {r.units}, join {r['join that ran']}**: the picks differ at "
                     f"{r['picks differ']} of {r.joins} joins" +
                     (f", the posterior's pick had fewer pulls in {fewer} and measured "
                      f"{r['mean damage gap (nats)']:+.3f} nats more damage on average (largest "
                      f"{r['largest damage gap (nats)']:+.3f})" if r["picks differ"] else "") + ".")
    return "\n".join(lines)


def removal_reading(removal: pd.DataFrame) -> str:
    """What the removal table shows: parameters and paired prefill speed-up of the zeroed and the removed
    model against dense."""
    speed = [c for c in removal.columns if c.startswith("speed-up")]
    dense = removal[removal.model == "dense"].iloc[0]
    return "\n".join(f"- **{r.model}**: {1 - r.params / dense.params:.1%} fewer parameters; prefill "
                     + ", ".join(f"{r[c]} at {c.split()[1]}" for c in speed) + "."
                     for _, r in removal[removal.model != "dense"].iterrows())


# ---- the claims and the discussion ------------------------------------------------------------------

def claims_reading(claims: pd.DataFrame) -> str:
    """The sentence on how configuration-dependent the MAB-vs-greedy verdicts are."""
    n = int(claims.claim.str.startswith(MAB_VS_GREEDY).sum())
    return (f"The paper itself cautions that the advantage is configuration-dependent: across the {n} (setting, "
            f"MAB variant) comparisons with greedy here the verdicts are {count_verdicts(claims, MAB_VS_GREEDY)}. "
            f"Power: {underpowered(claims)}")


def discussion_reading(frame: pd.DataFrame, lm: pd.DataFrame, vis: pd.DataFrame, claims: pd.DataFrame, search: dict,
                       batch: str, ablation: pd.DataFrame | None = None, vision_search: dict | None = None,
                       vision_batch: str = "") -> str:
    """What the results say, as Markdown bullets generated from the records: the dense references,
    the best method of each setting (mean over seeds) against the two bandits, and what the verdicts
    mean (with the rows too imprecise to decide). ``search``: the language-model searches' budget and
    pool; ``batch``: what one of their mini-batches holds; ``vision_search``, ``vision_batch``: the same of the
    vision models' searches (each setting is explained with its own); ``ablation``: the memory ablation's rows."""
    lines = []
    dense = frame[frame.method == "dense"] if len(frame) else frame
    if len(dense):
        lines.append("- **Dense references** (the same windows and documents every method is paired with): " +
                     "; ".join(f"{r.model}: WikiText-2 {r.ppl:.2f}" +
                               (f", LAMBADA {r.lambada_ppl:.2f} (last-word accuracy {r.lambada_acc:.3f})"
                                if getattr(r, "lambada_ppl", None) is not None and np.isfinite(r.lambada_ppl) else "")
                               for r in dense.itertuples()) + ".")
    one_shot_wins = {}  # settings whose lowest mean damage is a one-shot score's, by the searches they ran with
    searched = {"lm": (search, batch), "vision": (vision_search or {}, vision_batch)}
    for table, value, what, which in ((lm, "change_pct", "WikiText-2 perplexity change", "lm"),
                                      (vis, "top1_drop_pp", "top-1 drop (points)", "vision")):
        if not len(table):
            continue
        for (model, kinds, ratio), t in table.groupby(SETTING):
            means = t[np.isfinite(t[value])].groupby("method")[value].mean().sort_values()
            if means.empty:
                continue
            best = means.index[0]
            if best in SELECTORS.names() and not SELECTORS[best].sequential and best != "random":  # a one-shot score
                one_shot_wins.setdefault(which, []).append(f"{LABELS.get(best, best)} on {model} {kinds} {unit_pct(ratio)}")
            ranks = {m: int(list(means.index).index(m)) + 1 for m in MAB if m in means}
            mab = ", ".join(f"{LABELS[m]} {means[m]:+.2f} (rank {ranks[m]} of {len(means)})" for m in ranks)
            lines.append(f"- **{model}, {kinds} {unit_pct(ratio)}**: lowest mean {what} over seeds is "
                         f"{LABELS.get(best, best)}'s ({means.iloc[0]:+.2f}); {mab}.")
    if len(claims):
        seeds = max(int(lm.seed.nunique()) if "seed" in lm else 0, 2)
        lines.append(f"- **Verdicts**: {', '.join(f'{v}: {k}' for v, k in claims.verdict.value_counts().items())}. "
                     f"*Inconclusive* means the 95% interval over seeds contains zero: with {seeds} seeds the t "
                     f"interval is wide ({stats.t.ppf(0.975, seeds - 1):.2f} times the standard error), so an effect "
                     f"of the paper's size is often not resolvable. {underpowered(claims)}")
    lower = below_dense(lm)
    if lower:
        lines.append("- **Pruning that lowers LAMBADA perplexity below dense**: " + lower +
                     ". The same selections raise WikiText-2 perplexity, and every seed is scored on the same LAMBADA "
                     "documents, so the seeds' agreement is not independent evidence; what we found when we "
                     "investigated it follows this list.")
    if ablation is not None and len(ablation):
        what = {"change_pct": "ppl change", "top1_drop_pp": "top-1 drop"}
        col = next(c for c in ablation.columns if c.startswith("verdict ("))
        main = col[len("verdict ("):-len(" better)")]
        decided = ablation[ablation[col] != "inconclusive"]
        rows = "; ".join(f"{r.model} {r.kinds} {unit_pct(r.ratio)} {r.method}, {r.rule}: {r['other - main']:+.2f} "
                         f"[{r.ci_lo:+.2f}, {r.ci_hi:+.2f}] {what.get(r.value, r.value)}, {r[col]}"
                         for _, r in decided.iterrows())
        lines.append(f"- **The memory rule** (section 5b, other rule - `{main}`, mean over seeds [t interval]; positive: "
                     f"`{main}` degrades less): {len(decided)} of {len(ablation)} (setting, policy, rule) comparisons "
                     f"are decided{': ' + rows if rows else ''}; the rest are inconclusive. The per-step rule forgets "
                     "every statistic at each step, so with fewer pulls a step than candidates UCB measures each "
                     "candidate it looks at once (section 5b's allocation table); `persist` keeps a candidate's pulls "
                     "while it stays in the pool and lets it join only after a pull under the mask it joins.")
    for which, wins in one_shot_wins.items():
        s, b = searched[which]
        lines.append(f"- **Where a one-shot score beats the bandits** ({'; '.join(wins)}): the one-shot "
                     "scorers rank every candidate at once from the whole calibration set, while each bandit step "
                     f"sees only its pool ({s.get('pool_size')} candidates, chosen by magnitude) and "
                     f"{s.get('budget')} paired evaluations on mini-batches of {b}, so its damage estimates "
                     "are noisy, and the units a scorer picks may lie beyond what the pool ever offers the search "
                     "(section 3's table 'Where the one-shot scorers choose' measures that share). This is a reading "
                     "of the numbers above, not a tested claim.")
    return "\n".join(lines)


def below_dense(lm: pd.DataFrame) -> str:
    """'<model> <kinds> <ratio> <method> -4.9% (4 of 5 seeds lower, last-word accuracy +0.036)' for each
    setting and method whose mean LAMBADA perplexity change over seeds is below zero ('' if none)."""
    if not len(lm) or "lambada_change_pct" not in lm or not lm.lambada_change_pct.notna().any():
        return ""
    out = []
    for (model, kinds, ratio, method), t in lm.groupby(CELL):
        x = t.lambada_change_pct.dropna()
        if len(x) and x.mean() < 0:
            out.append(f"{model} {kinds} {unit_pct(ratio)} {LABELS.get(method, method)} {x.mean():+.1f}% ({int((x < 0).sum())} "
                       f"of {len(x)} seeds lower, last-word accuracy {t.lambada_acc_change.mean():+.3f})")
    return "; ".join(out)


# ---- why loss-searched Gemma selections lower LAMBADA perplexity (:mod:`.lambada`) ---------------------

def _name(unit) -> str:
    return f"{unit[0]}.{unit[1]}"


def _points(d: dict) -> str:
    lo, hi = d["ci"]
    return f"{100 * d['estimate']:+.1f} points [{100 * lo:+.1f}, {100 * hi:+.1f}]"


def _spread(values: list[float]) -> str:
    lowered = sum(v < 0 for v in values)
    return (f"median {pd.Series(values).median():+.0f}% ({min(values):+.0f}% to {max(values):+.0f}%), "
            f"{lowered} of {len(values)} below dense")


def lambada_reading(check: dict | None, frame: pd.DataFrame) -> str:
    """The LAMBADA investigation's findings as Markdown bullets, from the committed check (``check``:
    ``benchmarks/results/gemma_lambada_check.json``) and this run's selections: which measured head lowers
    LAMBADA perplexity alone, how often this run's loss searches include it and what their selections do to
    LAMBADA with and without it, the other shared heads alone, WikiText-2, float32, and the split by whether
    the target word occurs earlier in the passage."""
    if check is None:
        return ("*The LAMBADA check has not been run here* (`python benchmarks/gemma_lambada_check.py` writes "
                "`benchmarks/results/gemma_lambada_check.json`).")
    model = check["model"]
    counts, n = head_counts(frame, model)
    if not n:
        return f"*No loss-searched head selection of {model} in this run: nothing to investigate.*"
    bf = next(v for k, v in check["runs"].items() if k.startswith("bfloat16"))
    fp = next((v for k, v in check["runs"].items() if k.startswith("float32")), None)
    singles = {tuple(units[0][1:]): name for name, units in check["selections"].items()
               if len(units) == 1 and name in bf}
    if not singles:
        return "*The committed check measured no single head alone: rerun `benchmarks/gemma_lambada_check.py`.*"
    top = min(singles, key=lambda u: bf[singles[u]]["ppl"])  # the head whose masking lowers LAMBADA most
    key, shared = singles[top], counts.get(top, 0)
    dense, alone = bf["dense"], bf[key]
    ll = alone["loglik_diff"]
    lines = [f"- **One head does it alone.** Of the heads the check masked one at a time, {_name(top)} lowers LAMBADA "
             f"perplexity most: from {dense['ppl']:.2f} to {alone['ppl']:.2f} ({alone['ppl_change_pct']:+.0f}%) on the "
             f"first {dense['n']} documents in bfloat16, and last-word accuracy goes from {dense['acc']:.3f} to "
             f"{alone['acc']:.3f} ({_points(alone['acc_diff'])}, paired over documents). The last word's "
             f"log-likelihood improves on {ll['n_better']} of {ll['n']} documents, and the 10 largest gains are "
             f"{alone['share_of_nll_drop_from_top_10_docs']:.0%} of the total, so a few documents do not carry it."]
    with_head, without = lambada_changes(frame, model, top)
    if with_head or without:
        said = (f"The {n} loss-searched head selections of {model} in this run include {_name(top)} in {shared}. "
                f"LAMBADA perplexity against dense, with it: {_spread(with_head) if with_head else 'none'}; "
                f"without it: {_spread(without) if without else 'none'}.")
        if without and sum(v < 0 for v in without):
            said += (f" So {_name(top)} is not the only route: selections without it also lower LAMBADA, through "
                     "heads the check did not measure alone.")
        lines.append(f"- **How often the searches take it.** {said}")
    others = [(u, c) for u, c in counts.most_common() if u != top and u in singles][:2]
    if others:
        said = "; ".join(f"{_name(u)} (in {c} selections): accuracy {100 * bf[singles[u]]['acc_diff']['estimate']:+.1f} "
                         f"points, perplexity {bf[singles[u]]['ppl_change_pct']:+.1f}%" for u, c in others)
        lines.append(f"- **The other heads most often shared do nothing of the kind alone:** {said}.")
    wt = check.get("wikitext2_ppl_bf16") or {}
    if key in wt and "dense" in wt:
        lines.append(f"- **It costs little on WikiText-2:** masking {_name(top)} alone moves WikiText-2 perplexity from "
                     f"{wt['dense']:.2f} to {wt[key]:.2f} ({100 * (wt[key] / wt['dense'] - 1):+.1f}%; the check loads "
                     "the model in bfloat16 directly, the notebook casts its float32 copy, so its dense figure differs "
                     "from the dense record in the last digits). A search that minimises loss has no reason to avoid it.")
    if fp is not None and key in fp:
        f_dense, f_alone = fp["dense"], fp[key]
        lines.append(f"- **It is not a bfloat16 artefact.** In float32 (first {f_dense['n']} documents), masking "
                     f"{_name(top)} alone takes LAMBADA perplexity from {f_dense['ppl']:.2f} to {f_alone['ppl']:.2f} "
                     f"({f_alone['ppl_change_pct']:+.1f}%; accuracy {_points(f_alone['acc_diff'])})" +
                     "".join(f"; the check's selection {k} changes it by {v['ppl_change_pct']:+.1f}% (bfloat16, "
                             f"{dense['n']} documents: {bf[k]['ppl_change_pct']:+.1f}%)"
                             for k, v in fp.items() if k not in ("dense", key) and k in bf) + ".")
    split = alone.get("loglik_diff_by_target") or {}
    seen, unseen = split.get("target earlier in the passage"), split.get("target not earlier")
    if seen and unseen:
        lines.append(f"- **Head {_name(top)} acts like a copy-suppression head.** In {seen['n']} of {ll['n']} documents "
                     "LAMBADA's target word already occurs earlier in the passage. There, masking the head raises the "
                     f"target's log-likelihood by {seen['estimate']:+.2f} nats [{seen['ci'][0]:+.2f}, {seen['ci'][1]:+.2f}]; "
                     f"where it does not occur, by {unseen['estimate']:+.2f} [{unseen['ci'][0]:+.2f}, "
                     f"{unseen['ci'][1]:+.2f}]. A head that lowers the logits of words already seen (as a head of GPT-2 "
                     "small was shown to do: McDougall et al., *Copy Suppression*) is what LAMBADA's copy-heavy "
                     "targets penalise. This is our reading of the split, not a measured mechanism: we did not trace "
                     "the head's attention or its direct effect on the logits.")
    return "\n".join(lines)


# ---- layer scale (:mod:`.rescale`) ----------------------------------------------------------------------

def rescale_reading(check: dict | None, frame: pd.DataFrame, model: str = "gemma3-270m", focus: str = "head17.2") -> str:
    """What Gemma's rescaling measurement (``check``: ``benchmarks/results/gemma_rescale.json``) shows, as
    Markdown bullets: single heads' and MLP groups' remaining output RMS (survivors scaled up by its inverse),
    ``focus`` among its layer's heads, the selections' layers, and whether the heads whose masking rescales
    most are the ones this run's searches (``frame``) found most damaging."""
    if check is None:
        return "- The measurement `benchmarks/results/gemma_rescale.json` is not here: run `benchmarks/gemma_rescale.py`."
    u = pd.DataFrame(check["units"])
    u["unit"] = u.kind + u.layer.astype(str) + "." + u["index"].astype(str)
    heads, mlp = u[u.kind == "head"], u[u.kind == "mlp"]
    q = heads.remaining.quantile([0, 0.5, 1])
    lines = [f"- **Single heads** ({len(heads)}, {check['windows']}, {check['dtype']}): masking one leaves "
             f"{q[0.5]:.2f} of its layer's attention-output RMS at the median ({q[0]:.2f}-{q[1]:.2f}), so the "
             f"post-attention norm scales the layer's other heads up by x{1 / q[0.5]:.2f} at the median and up to "
             f"x{1 / q[0]:.2f}. In a pre-norm model (SmolLM2) the same mask leaves the others as they were."]
    if len(mlp):
        lines.append(f"- **MLP groups** ({len(mlp)}): median {mlp.remaining.median():.3f}; "
                     f"{int((mlp.remaining < 0.9).sum())} of {len(mlp)} leave less than 0.9: one group of 32 channels "
                     "rarely carries enough of its MLP's output to rescale the rest.")
    if focus in set(u.unit):
        f = u[u.unit == focus].iloc[0]
        layer = heads[heads.layer == f.layer].sort_values("remaining")
        less = f.remaining >= layer.remaining.median()
        lines.append(f"- **{focus}** leaves {f.remaining:.3f} (its layer: "
                     + ", ".join(f"{r.unit} {r.remaining:.3f}" for _, r in layer.iterrows()) + "): "
                     + ("masking it rescales its layer's other heads less than most of the layer's heads do, so its "
                        "LAMBADA effect is not the rescaling." if less else
                        "masking it rescales its layer's other heads more than most of the layer's heads do."))
    sels = [s for s in check.get("selections") or [] if s.get("kind", "head") == "head"]
    if sels:
        low = [min(s["remaining_by_layer"].values()) for s in sels]
        lines.append(f"- **The {len(sels)} head selections** (every method, seed and memory rule): in the layer they "
                     f"cut most, the attention output keeps {np.median(low):.2f} of its RMS at the median "
                     f"({min(low):.2f}-{max(low):.2f}).")
    dmg = unit_damage(frame, model)
    both = pd.DataFrame({"damage": dmg}).join(heads.set_index("unit").remaining, how="inner")
    if len(both) >= 3:
        rho, p = stats.spearmanr(1 - both.remaining, both.damage)
        lines.append(f"- **Does the rescaling predict the damage?** Over the {len(both)} heads this run's bandit searches "
                     f"pulled, the Spearman correlation of how much a head's masking rescales (1 - remaining) with its "
                     f"mean measured damage is {rho:+.2f} (p = {p:.2g}; rho squared {rho ** 2:.2f}): "
                     + ("the heads whose masking rescales their layer most tend to be the most damaging, which is "
                        "part of, not all of, why the rewards saturate." if p < 0.05 and rho > 0 else
                        "over these heads the rescaling does not detectably predict which heads damage most.")
                     + f" Their mean damage is {both.damage.mean():+.3f} nats, "
                     f"{both.damage.mean() / TAU:.1f} tau: the reward sigma(-d / tau) of such a pull is near 0.")
    return "\n".join(lines)


def _layers_of(counts: pd.Series) -> str:
    """'layer 17: 57, layer 16: 35' from :func:`.rescale.layer_counts`."""
    shown = ", ".join(f"layer {layer}: {n}" for layer, n in counts.head(3).items())
    more = len(counts) - 3
    return shown + (f" and {more} more layer{'s' if more > 1 else ''}" if more > 0 else "")


def _x(v: float) -> str:
    return f"x{v:,.0f}" if v >= 100 else f"x{v:.2g}"


def score_layers_reading(sl: pd.DataFrame, frame: pd.DataFrame, rescale: dict | None = None,
                         method: str = "wanda", scales: dict | None = None) -> str:
    """What the score-by-layer figure (``sl``: :func:`.rescale.score_layers`) shows, per (model, unit kind):
    how the median score moves with depth (Spearman over layers) and where the selections of the largest
    ratio sit; where the layers were measured, the share of the residual stream the chosen layers write
    against the other layers', the post-norm's gain at both ends, and where the same k units sit when each
    score is put on the stream's scale (score x gain / stream); from ``rescale`` (``gemma_rescale.json``),
    what the selections leave of the output RMS of the layer they cut most. ``scales`` (``layer_scale.json``)
    names the measurement's dtype and tokens."""
    where = ", ".join(x for x in ((scales or {}).get("dtype"), (scales or {}).get("windows")) if x)
    where = f"`layer_scale.json`{', ' + where if where else ''}"
    lines = []
    for (model, kinds), g in sl.groupby(["model", "kinds"], sort=False):
        runs = frame[(frame.method == method) & (frame.model == model) & (frame.kinds == kinds)]
        runs = runs[runs.ratio == runs.ratio.max()].sort_values("seed")
        if not len(runs):
            continue
        run, rho = runs.iloc[0], stats.spearmanr(g.layer, g["median score"])[0]
        trend = ("falls with depth" if rho <= -0.5 else "rises with depth" if rho >= 0.5 else
                 "has no steady trend with depth")
        units = [unit_of(name) for name in run.scores]
        chosen, per_layer = layer_counts(run.units), layer_counts(units)
        top = chosen.head(3)
        emptied = ", ".join(f"{n / per_layer[layer]:.0%}" for layer, n in top.items())
        whose = "that layer's" if len(top) == 1 else "those layers'"
        lines.append(f"- **{model}, {kinds}**: the median unit score {trend} (Spearman {rho:+.2f} over {len(g)} layers), "
                     f"so ranked across layers the {int(run.k)} units of seed {int(run.seed)} "
                     f"(ratio {unit_pct(run.ratio)}) sit in {_layers_of(chosen)}: {emptied} of "
                     f"{whose} units.")
        if g.share.isna().any():
            continue
        share = dict(zip(g.layer, g.share))
        inside = np.median([share[i] for i in chosen.index])
        outside = np.median([v for i, v in share.items() if i not in chosen.index])
        text = (f"  Measured ({where}): those layers' sublayers write {inside:.2f} of the residual stream's "
                f"RMS at the median, the other layers' {outside:.2f}"
                + (" (so the stream's scale does not single these layers out)" if inside < 1.2 * outside else ""))
        if g["post norm"].all():
            first, last = g.iloc[0], g.iloc[-1]
            text += (f"; the post-sublayer norm multiplies the output by {_x(first.gain)} in layer {first.layer} and "
                     f"{_x(last.gain)} in layer {last.layer}, after the score is measured")
        gain, stream = dict(zip(g.layer, g.gain)), dict(zip(g.layer, g.stream))
        scaled = sorted(units, key=lambda u: run.scores[str(u)] * gain[u.layer] / stream[u.layer])
        moved = layer_counts(scaled[:int(run.k)])
        lines.append(text + f". Put on the stream's scale (score x gain / stream), the lowest {int(run.k)} units sit in "
                     f"{_layers_of(moved)}"
                     + (": elsewhere, but as concentrated." if moved.head(3).sum() >= 0.8 * run.k else "."))
        cut = list({s["seed"]: min(s["remaining_by_layer"].values()) for s in (rescale or {}).get("selections", [])
                    if s.get("kind") == kinds and s["method"] == method and s.get("ratio") == run.ratio}.values())
        if cut and g["post norm"].all():
            left = float(np.median(cut))
            lines.append(f"  Gemma's selections ({len(cut)} seeds) leave {left:.2f} of the output RMS of the layer they "
                         "cut most (median): " + ("that sublayer is gone, nothing is left to rescale." if left < 0.05 else
                                                  f"the norm scales its surviving units up by {_x(1 / left)}."))
    return "\n".join(lines)


# ---- the synthetic arms (:mod:`.synthetic`) ------------------------------------------------------------

def synthetic_reading(summary: pd.DataFrame) -> str:
    """What the synthetic-arms table shows, per budget: each policy's mean regret against greedy's on the
    same seeds, and on how many seeds it found the better units."""
    lines = []
    for b, g in summary.groupby("budget", sort=False):
        greedy = g[g.policy == "greedy"].iloc[0]
        parts = [f"{r.policy} ({r.memory}) {r['mean regret']:.4f}, better than greedy on {r['seeds better than greedy']} "
                 f"and worse on {r['seeds worse']} of {r.seeds} seeds" for _, r in g[g.policy != "greedy"].iterrows()]
        lines.append(f"- **{b} pulls per step**: greedy's mean regret {greedy['mean regret']:.4f}; " + "; ".join(parts) + ".")
    return "\n".join(lines)


def worked_join_reading(w: dict) -> str:
    """One sentence on two candidates that Thompson's join rules rank differently (``w``:
    :func:`.synthetic.worked_join`): each one's pulls, mean reward and damage, the posterior means, and
    each rule's pick."""
    (n_few, r_few), (n_many, r_many) = w["few"], w["many"]
    name = {"few": f"the candidate pulled {n_few} time(s)", "many": f"the one pulled {n_many} times"}
    return (f"Pulled {n_few} time(s) with mean reward {r_few} (damage {w['damage'][0]:+.3f} nats) against {n_many} "
            f"times with mean reward {r_many} (damage {w['damage'][1]:+.3f}): posterior means {w['posterior'][0]:.3f} "
            f"and {w['posterior'][1]:.3f}, so join `posterior` takes {name[w['posterior picks']]}; join `mean` takes "
            f"{name[w['mean picks']]}.")
