"""Notebook 3's tables with their captions (:class:`BanditReport`).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from repro.assets.machine import label
from repro.claims import (
    claims_frame,
    shown,
    with_paper,
    with_sources,
)
from repro.engines.bandit import BanditExperiment, VisionBanditExperiment, removal_parts
from repro.evaluate.stats import bh
from repro.papers.bandit.claims import PAPER_EFFECTS, PAPER_SOURCES, bandit_claims, discussion
from repro.papers.bandit.params import BanditParams
from repro.papers.bandit.records import LABELS, MAB, bandit_frame, head_maps, vision_frame
from repro.papers.bandit.tables import (
    OTHER_FAMILY,
    PAPER_FAMILY,
    allocation_table,
    budget_table,
    family_summary,
    greedy_tests,
    join_table,
    labelled,
    layer_profile,
    lm_summary,
    lm_table,
    mab_tests,
    memory_ablation,
    per_seed_table,
    removal_table,
    reward_table,
    vision_summary,
    vision_table,
)
from repro.report import caption as caption_line
from repro.report import differences_table, group_lines, lm_setting, model_line, provenance, ranking_reading
from repro.store import Store
from repro.structure import removal_counts

JOIN_REPLAY = ("MAB-TS's joins replayed from the records: where the best posterior mean and the best mean reward pick "
               "different units, whose pick had fewer pulls, and how much more damage the posterior's pick measured "
               "(nats; tau = 0.02).")
ALLOCATION = ("How the searches spent their pulls (mean over seeds): distinct units per step against pulls per step, "
              "pulls per unit over the run, the pulls a join was decided on, and the share of joins backed by a pull "
              "under the joining mask.")


class BanditReport:
    """The notebook's tables, each with its caption: ``params`` (the notebook's parameters:
    profile, seeds, search budgets, LAMBADA limit, unit settings, removal), its language-model
    and vision experiments (``{name: experiment}``, for what the captions say about the models)
    and ``store`` (how many cells were read from records). Every method returns
    ``(table, caption)`` (the claims also their raw frame)."""

    def __init__(self, params: dict | BanditParams, lm: dict[str, BanditExperiment],
                 vision: dict[str, VisionBanditExperiment], store: Store):
        self.p = params if isinstance(params, BanditParams) else BanditParams.of(params)
        self.lm, self.vision, self.store = lm, vision, store

    @property
    def settings(self) -> list[tuple[str, str, float]]:
        """Every (model, unit type, ratio) of the language-model grid, in the notebook's order."""
        units = self.p.unit_settings
        return [(m, k, r) for m in self.lm for k, rs in units.get(m, {}).items() for r in rs]

    @property
    def n_heads(self) -> dict[str, int]:
        return {n: sum(e.structure["heads_per_layer"]) for n, e in self.vision.items()}

    def describe(self) -> str:
        """One line per model: what it is, its evaluation and calibration data."""
        lines = [f"{n}: {e.identity.get('upstream')}; {e.structure['n_layers']} layers; evaluation {e.data.label}, "
                 f"first {e.setup.max_windows} x {e.setup.seqlen} tokens; calibration {e.setup.calib_nsamples} x "
                 f"{e.setup.calib_seqlen} tokens per seed in mini-batches of {e.calib_batch_size}"
                 for n, e in self.lm.items()]
        lines += [f"{n}: {e.identity['source']}" + (f", seed {e.identity['seed']}, test top-1 {e.identity['test_top1']:.3f}"
                                                      if "test_top1" in e.identity else "")
                  + f"; calibration {e.n_calib} training images per seed; evaluation on the {e.images.describe()}"
                  for n, e in self.vision.items()]
        return "\n".join(lines)

    def caption(self, title: str, frame: pd.DataFrame | None = None, vision: bool = False,
                search: dict | None = None) -> str:
        """``title`` with one line of setting (:func:`repro.report.caption`): the models (the vision ones
        with ``vision``), their evaluation sample and dtype, the search budget (``search``, else the
        profile's for those models), the memory rule and seeds, the profile, and how many of ``frame``'s
        cells were read from records (the rest: the *This run* block)."""
        p = self.p
        cache = self.store.cache_summary(frame.key) if frame is not None and len(frame) else ""
        def budget(search: dict) -> str:
            return (f"{search.get('budget')} pulls per step over a pool of {search.get('pool_size')}, memory "
                    f"`{p.memory}`")

        seeds = ", ".join(map(str, p.seeds))
        if vision:
            e = next(iter(self.vision.values()))
            trained = " (trained here)" if e.images.root is None else ""
            setting = (f"{', '.join(self.vision)}{trained}; {e.images.describe()}; "
                       f"{e.setup.eval_dtype}; {budget(search or p.vision_search)}; seeds {seeds}")
        else:
            setting = (f"{lm_setting(self.lm)}; LAMBADA first {p.lambada_limit} documents; "
                       f"{budget(search or p.search)}; seeds {seeds}")
        return caption_line(title, setting, p.profile, cache)

    def provenance(self) -> str:
        """The *This run* block's provenance: what each model is, its evaluation and calibration samples
        and the dtype its search losses ran in (:meth:`describe`, one bullet per model)."""
        lm = [f"{line}; weights {e.identity.get('quantisation')}, evaluated in {e.setup.eval_dtype}{e.feeding_note}, "
              f"search losses in {e.search_dtype}" for line, e in zip(self.describe().splitlines(), self.lm.values())]
        vision = [f"{line}; evaluated in {e.setup.eval_dtype}, search losses in {e.search_dtype}"
                  for line, e in zip(self.describe().splitlines()[len(self.lm):], self.vision.values())]
        return provenance(lm + vision)

    def table1(self, lm: pd.DataFrame, frame: pd.DataFrame) -> tuple[pd.DataFrame, str]:
        return lm_summary(lm, frame), self.caption(
            "Table 1. Perplexity change against dense (mean and sd over seeds), LAMBADA perplexity and last-word "
            "accuracy change.", frame)

    def table1_per_seed(self, lm: pd.DataFrame, frame: pd.DataFrame) -> tuple[pd.DataFrame, str]:
        return per_seed_table(lm), self.caption(
            "Table 1 per seed: WikiText-2 ppl change % [paired 95% CI] / LAMBADA ppl change %.", frame)

    def rewards(self, frame: pd.DataFrame) -> tuple[pd.DataFrame, str]:
        t = reward_table(frame)
        return (labelled(t).round(3),
                self.caption("Rewards produced by r = sigmoid(-damage / 0.02).", frame))

    def layers(self, frame: pd.DataFrame) -> tuple[pd.DataFrame, str]:
        t = layer_profile(frame, {n: e.structure["n_layers"] for n, e in self.lm.items()})
        return (labelled(t).round(3), self.caption(
            "Where the selected units sit: mean layer and share in the first and in the last tenth of the layers.", frame))

    def head_maps(self, frame: pd.DataFrame) -> dict[str, tuple[np.ndarray, int]]:
        """:func:`head_maps` with each model's (layers, heads per layer)."""
        return head_maps(frame, {n: (e.structure["n_layers"], e.structure["heads_per_layer"][0]) for n, e in self.lm.items()})

    def budget(self, frame: pd.DataFrame) -> tuple[pd.DataFrame, str]:
        return budget_table(frame), self.caption(
            "Table B1. Budget per run (mean over seeds): calibration passes, paired evaluations, losses, layer "
            "forwards, seconds on this machine.", frame)

    def table2(self, vis: pd.DataFrame, vframe: pd.DataFrame) -> tuple[pd.DataFrame, str]:
        return vision_summary(vis, self.n_heads), self.caption(
            "Table 2. Vision: top-1 and its drop against dense (percentage points, mean and sd over seeds), "
            "cross-entropy increase, paired evaluations per run.", vframe, vision=True)

    def table1_reading(self, table1: pd.DataFrame) -> str:
        """What Table 1 shows: per model, unit type and ratio, the method with the least WikiText-2 damage
        and where the two bandits and budgeted greedy rank (mean over seeds)."""
        return ranking_reading(table1, ["model", "kinds", "ratio"], "WikiText-2 ppl change %",
                               [LABELS["ucb"], LABELS["thompson"]], LABELS["greedy"], "%")

    def table2_reading(self, table2: pd.DataFrame) -> str:
        """What Table 2 shows: per vision model, the least top-1 drop and the bandits' and greedy's ranks."""
        return ranking_reading(table2, ["model"], "drop_pp", [LABELS["ucb"], LABELS["thompson"]], LABELS["greedy"],
                               " points")

    def statistics(self, lm: pd.DataFrame, vis: pd.DataFrame, frame: pd.DataFrame) -> tuple[tuple, tuple, tuple]:
        """Table B2 (per family: how many comparisons have a CI excluding zero, p < 0.05, q < 0.05, the
        paper's own counts beside its family) and the across-seed tests of the paper's family (MAB vs
        budgeted greedy on the language models) and of ours, each with BH q within its family and its caption."""
        families = {PAPER_FAMILY: greedy_tests(lm), OTHER_FAMILY: mab_tests(lm, vis)}
        _, tests, b2 = family_summary(pd.concat([lm, vis], ignore_index=True), families)
        shown = [t.assign(a=t.a.map(LABELS), b=t.b.map(LABELS)).round(4) if len(t) else t for t in tests.values()]
        return ((b2, self.caption("Table B2. Comparisons with a 95% CI excluding zero, p < 0.05 and q < 0.05, "
                                  "Benjamini-Hochberg within each family; the paper's counts beside its own family.",
                                  frame)),
                (shown[0], self.caption("The paper's comparison: MAB - budgeted greedy across seeds on the language "
                                        "models (WikiText-2 and LAMBADA ppl change %), 95% t interval, paired t, BH q "
                                        "within this family.", frame)),
                (shown[1], self.caption("Ours: MAB - every other baseline across seeds (ppl change %; vision: top-1 "
                                        "drop, pp), 95% t interval, paired t, BH q within this family.", frame)))

    def memory_ablation(self, lm: pd.DataFrame, frame: pd.DataFrame, vis: pd.DataFrame,
                        vframe: pd.DataFrame) -> tuple[pd.DataFrame, str]:
        """:func:`memory_ablation` on the language models (WikiText-2 perplexity change) and the vision
        models (top-1 drop): this session's cells under each other memory rule against the notebook's."""
        main, parts, frames = self.p.memory, [], []
        for rule in self.p.ablation_memories():
            other, vother = self._frames(memory=rule)
            frames += [f[f.method.isin(MAB)] for f in (other, vother) if len(f)]
            if len(other):
                parts.append(memory_ablation(lm, lm_table(other), frame, other, "change_pct", rule, main))
            if len(vother):
                parts.append(memory_ablation(vis, vision_table(vother), vframe, vother, "top1_drop_pp", rule, main))
        t = pd.concat([x for x in parts if len(x)] or [pd.DataFrame()], ignore_index=True)
        cap = self.caption(
            f"Ablation: the MAB searches under each other memory rule against `{main}` (the notebook's): other - "
            f"{main} over seeds (ppl change %; vision: top-1 drop, pp), 95% t interval and paired t-test.",
            pd.concat(frames, ignore_index=True) if any(len(f) for f in frames) else None)
        return (t.round(4) if len(t) else t), cap

    def _frames(self, memory: str | None = None, join: str | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
        """This session's cells (language models, vision models) of the searches under ``memory`` and
        ``join`` (default: the notebook's), at the notebook's budgets and pools."""
        p = self.p
        memory, join = memory or p.memory, join or p.join
        return (bandit_frame(self.store, self.lm, memory=memory, search=p.search, join=join),
                vision_frame(self.store, self.vision, memory=memory, search=p.vision_search, join=join))

    def _join_frames(self) -> tuple[pd.DataFrame, pd.DataFrame, str | None]:
        """This session's cells of the MAB-TS searches under the other join rule (language and vision
        models, the notebook's memory, budgets and pools), and that rule (None without the ablation)."""
        other = self.p.ablation_join()
        return (pd.DataFrame(), pd.DataFrame(), None) if other is None else (*self._frames(join=other), other)

    def join_replay(self, frame: pd.DataFrame, vframe: pd.DataFrame) -> tuple[pd.DataFrame, str]:
        """Section 5d's first table: :func:`join_table` of this run's MAB-TS searches and of the ablation's."""
        other, vother, _ = self._join_frames()
        both = pd.concat([frame, vframe, other, vother], ignore_index=True)
        return join_table(both), self.caption(JOIN_REPLAY, both)

    @staticmethod
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

    def join_ablation(self, lm: pd.DataFrame, frame: pd.DataFrame, vis: pd.DataFrame,
                      vframe: pd.DataFrame) -> tuple[pd.DataFrame, str, pd.DataFrame, str]:
        """Section 5d: MAB-TS under the other join rule against the notebook's (:func:`memory_ablation`'s
        table, one rule each side), and MAB-TS under the other rule against budgeted greedy (paired over
        seeds, BH q within these comparisons); each with its caption."""
        other, vother, rule = self._join_frames()
        main = f"join {self.p.join}"
        parts, tests = [], []
        if len(other):
            ts = other[other.method == "thompson"]  # lm_table needs the dense rows: the other frame in full
            parts.append(memory_ablation(lm[lm.method == "thompson"], lm_table(other), frame, ts, "change_pct",
                                         f"join {rule}", main))
            t = greedy_tests(lm_table(other))
            tests.append(t[t.a == "thompson"])
        if len(vother):
            ts = vother[vother.method == "thompson"]
            parts.append(memory_ablation(vis[vis.method == "thompson"], vision_table(vother), vframe, ts, "top1_drop_pp",
                                         f"join {rule}", main))
            t = mab_tests(pd.DataFrame(), vision_table(vother))
            tests.append(t[(t.a == "thompson") & (t.b == "greedy")])
        table = pd.concat([x for x in parts if len(x)] or [pd.DataFrame()], ignore_index=True)
        tests = pd.concat([x for x in tests if len(x)] or [pd.DataFrame()], ignore_index=True)
        if len(tests):
            tests = tests.assign(q=bh(tests.p), a=f"MAB-TS (join {rule})", b=tests.b.map(LABELS)).round(4)
        cells = pd.concat([other, vother], ignore_index=True)
        return ((table.round(4) if len(table) else table), self.caption(
                    f"Ablation: MAB-TS with join `{rule}` against join `{self.p.join}` (the notebook's), "
                    "other - main over seeds (ppl change %; vision: top-1 drop, pp), 95% t interval, paired t.",
                    cells if len(cells) else None),
                tests, self.caption(f"MAB-TS with join `{rule}` - budgeted greedy across seeds (WikiText-2 and LAMBADA "
                                    "ppl change %; vision: top-1 drop, pp), 95% t interval, paired t, BH q within "
                                    "these comparisons.", cells if len(cells) else None))

    def allocation(self, frame: pd.DataFrame, vframe: pd.DataFrame,
                   wframe: pd.DataFrame | None = None) -> tuple[pd.DataFrame, str]:
        """:func:`allocation_table` of the notebook's searches (with ``wframe``, section 5c's wider budget)
        and of each ablation rule's."""
        frames = {self.p.memory: pd.concat([frame, vframe, wframe], ignore_index=True)}
        for rule in self.p.ablation_memories():
            frames[rule] = pd.concat(self._frames(memory=rule), ignore_index=True)
        return allocation_table(frames), self.caption(ALLOCATION, frame)

    @staticmethod
    def rewards_reading(rewards: pd.DataFrame) -> str:
        """What the rewards table shows: per model and unit setting, the share of pulls judged harmful and
        the range of mean rewards over the methods (rewards near 0 for every pull: the reward saturates)."""
        return group_lines(rewards, ["model", "units"], lambda g: (
            f"{g.harmful.min():.0%}-{g.harmful.max():.0%} of pulls harmful, mean reward {g['mean reward'].min():.3f}-"
            f"{g['mean reward'].max():.3f} over {', '.join(g.method)}."))

    @staticmethod
    def removal_reading(removal: pd.DataFrame) -> str:
        """What the removal table shows: parameters and paired prefill speed-up of the zeroed and the removed
        model against dense."""
        speed = [c for c in removal.columns if c.startswith("speed-up")]
        dense = removal[removal.model == "dense"].iloc[0]
        return "\n".join(f"- **{r.model}**: {1 - r.params / dense.params:.1%} fewer parameters; prefill "
                         + ", ".join(f"{r[c]} at {c.split()[1]}" for c in speed) + "."
                         for _, r in removal[removal.model != "dense"].iterrows())

    @staticmethod
    def per_seed_reading(lm: pd.DataFrame) -> str:
        """What the per-seed table shows: per setting, the method whose WikiText-2 change moves most from
        seed to seed, and the runs whose LAMBADA perplexity *falls* after pruning (surprising: see the
        LAMBADA section for what was found)."""
        lines = []
        for (model, kinds, ratio), g in lm.groupby(["model", "kinds", "ratio"], sort=False):
            spread = g[np.isfinite(g.change_pct)].groupby("method").change_pct.agg(lambda x: x.max() - x.min())
            widest = spread.idxmax()
            fell = g[g.lambada_change_pct < 0]
            text = (f"- **{model}, {kinds} {ratio:.0%}**: seed to seed the WikiText-2 change moves most for "
                    f"{LABELS[widest]} ({spread.max():.3g} points between its best and worst seed)")
            runs = [f"{LABELS[r.method]} seed {int(r.seed)} ({r.lambada_change_pct:+.1f}%"
                    + (f", last-word accuracy {r.lambada_acc_change:+.2f}" if "lambada_acc_change" in r else "") + ")"
                    for _, r in fell.iterrows()]
            text += (f"; LAMBADA perplexity falls in {len(runs)} of {len(g)} runs: " + ", ".join(runs[:4])
                     + (f" and {len(runs) - 4} more" if len(runs) > 4 else "")
                     if runs else "; LAMBADA perplexity rises in every run")
            lines.append(text + ".")
        return "\n".join(lines)

    @staticmethod
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
        return group_lines(lp, ["model", "units"], say)

    @staticmethod
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

    @staticmethod
    def tests_reading(tests: pd.DataFrame) -> str:
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

    @staticmethod
    def allocation_reading(alloc: pd.DataFrame) -> str:
        """What the allocation table shows, per budget (pulls per step), memory rule and method: distinct
        candidates per step, and the pulls a join was decided on (one: greedy in effect)."""
        def span(values: pd.Series, fmt: str = ".3g") -> str:
            lo, hi = values.min(), values.max()
            return f"{lo:{fmt}}" if f"{lo:{fmt}}" == f"{hi:{fmt}}" else f"{lo:{fmt}}-{hi:{fmt}}"

        lines = []
        for (pulls, memory, method), g in alloc.groupby(["pulls_per_step", "memory", "method"], sort=False):
            lines.append(f"- **{method}{'' if memory == '-' else f', {memory}'}, {pulls:.3g} pulls per step** "
                         f"({len(g)} setting{'s' if len(g) > 1 else ''}): {span(g.distinct_per_step)} distinct "
                         f"candidates per step; joins decided on {span(g.join_evidence)} pulls; "
                         f"{span(g.joins_backed, '.0%')} of joins pulled under their mask.")
        return "\n".join(lines)

    def wide(self, wframe: pd.DataFrame) -> tuple[pd.DataFrame, str]:
        """Section 5c's table: :func:`vision_summary` of budgeted greedy and the MAB searches with the
        ``wide_search`` budget."""
        t = vision_table(wframe[wframe.method.isin(["dense", "greedy", *MAB])])
        w = self.p.wide_search
        return vision_summary(t, self.n_heads), self.caption(
            f"Vision at a budget of {w.get('budget')} pulls per step over a pool of {w.get('pool_size')}: top-1 and "
            "its drop against dense (pp, mean and sd over seeds), cross-entropy increase, paired evaluations per run.",
            wframe, vision=True, search=w)

    def wide_tests(self, wframe: pd.DataFrame) -> tuple[pd.DataFrame, str]:
        """Section 5c's paper comparison: MAB-UCB and MAB-TS against budgeted greedy at the ``wide_search``
        budget, top-1 drop across seeds (paired t), BH q within these comparisons."""
        table = vision_table(wframe[wframe.method.isin(["dense", "greedy", *MAB])])
        tests = mab_tests(pd.DataFrame(), table)
        if len(tests):
            tests = tests.assign(q=bh(tests.p), a=tests.a.map(LABELS), b=tests.b.map(LABELS)).round(4)
        w = self.p.wide_search
        return tests, self.caption(
            f"MAB - budgeted greedy at {w.get('budget')} pulls per step over a pool of {w.get('pool_size')} (top-1 "
            "drop, pp), 95% t interval over seeds, paired t, BH q within these comparisons.", wframe, vision=True,
            search=w)

    @staticmethod
    def memory_reading(ablation: pd.DataFrame) -> str:
        """What the memory ablation shows, per other rule: its verdicts ("the notebook's rule is better")
        counted, with the settings where the other rule did better (the whole interval of other - main
        below 0: every value here is lower-is-better)."""
        if not len(ablation):
            return ""
        col = next(c for c in ablation.columns if c.startswith("verdict ("))
        main = col[len("verdict ("):-len(" better)")]
        lines = []
        for rule, g in ablation.groupby("rule", sort=False):
            counts = ", ".join(f"{v} {n}" for v, n in g[col].value_counts().items())
            won = "; ".join(f"{r.model} {r.kinds} {r.ratio:.0%} {r.method} ({r['other - main']:+.3g})"
                            for _, r in g[g.ci_hi < 0].iterrows())
            lines.append(f"- **{main} against {rule}**, {main} better: {counts} (of {len(g)} settings)"
                         + (f"; {rule} did better in: {won}." if won else "."))
        return "\n".join(lines)

    def claims(self, lm: pd.DataFrame, vis: pd.DataFrame,
               wframe: pd.DataFrame | None = None) -> tuple[pd.DataFrame, str, pd.DataFrame]:
        """The claims table (claim, setting, measured, verdict), its caption, and every claim's numbers
        (with ``wframe``, section 5c's searches at the wider budget too)."""
        wide = vision_table(wframe) if wframe is not None and len(wframe) else None
        claims = claims_frame(with_sources(with_paper(bandit_claims(lm, vis, wide, self.p.wide_search),
                                                      PAPER_EFFECTS), PAPER_SOURCES))
        caption = (f"**Claims checked (Paper 3).** Profile `{self.p.profile}`; seeds {self.p.seeds}; "
                   f"verdicts from 95% t intervals of the difference paired over seeds.")
        return shown(claims), caption, claims

    def discussion(self, frame: pd.DataFrame, lm: pd.DataFrame, vis: pd.DataFrame, claims: pd.DataFrame,
                   ablation: pd.DataFrame | None = None) -> str:
        """The generated discussion (:func:`discussion`) with this run's search parameters."""
        p = self.p
        return discussion(frame, lm, vis, claims, p.search,
                          f"{p.calib_batch_size} window(s) of {p.calib_seqlen} tokens", ablation)

    def removal(self, record: dict) -> tuple[pd.DataFrame, str]:
        """The removal record of the ``removal`` parameter's (model, method, seed) as a table
        (:func:`removal_table`) and its caption."""
        rm, c, res = self.p.removal, record["config"], record["result"]
        which = " and ".join(f"{k[0]} {r:.0%}" for k, r in removal_parts(self.p.unit_settings[rm["model"]]))
        sels = [r for r in self.store.records("bandit-select") if r["key"] in c.get("selections", [])]
        heads = list(dict.fromkeys((u[1], u[2]) for r in sels for u in r["result"]["units"] if u[0] == "head"))
        st = self.lm[rm["model"]].structure
        n = removal_counts((st["heads_per_layer"], st["kv_heads_per_layer"]), heads) if heads else None
        split = "" if n is None else (f" selected ({n['removed']} physically removed, {n['kept_as_zeros']} kept as "
                                      f"zero heads by GQA padding, so the parameter drop is {n['removed']} heads' worth)")
        caption = (f"**Removal of {rm['model']}'s {LABELS[rm['method']]} seed-{rm['seed']} selection ({which}): "
                   f"{res['heads']} heads{split} and {res['mlp_channels']} MLP channels.** Prefill of {c['seqlen']} "
                   f"tokens, median of {c['repeats']} round-robin repeats, {c['dtype']}, timed on {label(res.get('machine') or {})}"
                   f"; removed vs zeroed logits "
                   f"differ by at most {res['removed_vs_zeroed_max_abs_logit_diff']:.1e}; profile "
                   f"`{self.p.profile}`.")
        return removal_table(res, c["batches"]).round(2), caption

    def metrics(self, frame: pd.DataFrame, vframe: pd.DataFrame, claims: pd.DataFrame) -> dict:
        """The run's summary numbers: dense perplexity per model, cells, claims and verdicts."""
        return {"dense_ppl": {n: float(frame[(frame.model == n) & (frame.method == "dense")].ppl.iloc[0])
                              for n in self.lm},
                "n_cells": int(len(frame) + len(vframe)), "n_claims": int(len(claims)),
                "verdicts": claims.verdict.value_counts().to_dict()}


class Report(BanditReport):
    """:class:`BanditReport` of one session's grid (notebook 3's tables with their captions)."""

    def __init__(self, session, grid):
        super().__init__(grid.p, grid.lm, grid.vision, session.store)
        self.grid = grid

    def differences(self):
        """(table, caption): what differs from the paper, generated from the parameters that ran."""
        p, lm, vision = self.p, self.grid.lm, self.grid.vision
        units = "; ".join(f"{model_line(e)}: " + ", ".join(f"{k} {', '.join(f'{r:.0%}' for r in rs)}"
                                                          for k, rs in p.unit_settings.get(n, {}).items())
                          for n, e in lm.items())
        e0 = next(iter(lm.values()), None)
        data = ("; ".join(f"{n}: {e.setup.calib_nsamples} calibration windows of {e.setup.calib_seqlen} tokens per "
                          f"seed in mini-batches of {e.calib_batch_size}; evaluation {e.data.label}, "
                          f"{e.windows()}" for n, e in lm.items())
                + (f"; LAMBADA first {p.lambada_limit} documents" if e0 is not None else ""))
        s, vs = p.search, p.vision_search
        search = (f"language models: budget {s['budget']} paired evaluations per step, pool {s['pool_size']}, memory "
                  f"`{p.memory}`, losses in {p.search_dtype}; vision: budget {vs['budget']}, pool "
                  f"{vs['pool_size']}" + (f" (section 5c: budget {p.wide_search['budget']}, pool "
                                          f"{p.wide_search['pool_size']})" if p.wide_search else ""))
        mlp = sorted({r for st in p.unit_settings.values() for r in st.get("mlp", [])})
        ratios = (f"{', '.join(f'{r:.0%}' for r in mlp)}: one search to {max(mlp):.0%} per (method, seed), the "
                  "smaller ratios its first k units (no step depends on k)" if mlp else "none")
        rows = [("language models", "GPT-2, OPT-125m/350m, Pythia-160m/410m, Qwen2.5-0.5B, SmolLM2-360M", units),
                ("vision", "ViT-B/16, DeiT-Tiny, Swin-Tiny on ImageNet-style data",
                 (f"{', '.join(model_line(e) for e in vision.values())} on the "
                  f"{next(iter(vision.values())).images.describe()}") if vision else "not run"),
                ("calibration / evaluation", "up to 512 calibration texts, 1024 evaluation texts of 128 tokens", data),
                ("search", "32 paired evaluations per step, pool of 48, the model's precision", search),
                ("MLP ratios", "3 / 5 / 8%", ratios),
                ("seeds", "five", ", ".join(map(str, p.seeds)))]
        return differences_table(rows, p.profile)
