"""Notebook 3's tables (:class:`Report`): each method returns a :class:`repro.report.Table`, the frame with
its caption and its reading (:mod:`.readings`).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from repro import origin
from repro.assets.machine import label
from repro.claims import claims_frame, kind_counts, with_paper, with_sources
from repro.engines.bandit import removal_parts
from repro.evaluate.stats import bh
from repro.papers.bandit import mechanism as M
from repro.papers.bandit import paper, readings
from repro.papers.bandit import scorers as S
from repro.papers.bandit.claims import PAPER_EFFECTS, PAPER_SOURCES, bandit_claims
from repro.papers.bandit.records import LABELS, MAB, SETTING, bandit_frame, head_maps, unit_of, vision_frame
from repro.papers.bandit.tables import (
    ALL_FAMILY,
    OTHER_FAMILY,
    PAPER_FAMILY,
    all_tests,
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
from repro.papers.bandit.worked import bonus_decided_pull, pull_reasons, ucb_step
from repro.report import Table, differences_table, lm_setting, model_line, provenance, summarised
from repro.report import caption as caption_line
from repro.structure import removal_counts
from repro.words import unit_pct

JOIN_REPLAY = ("MAB-TS's joins replayed from the records: where the best posterior mean and the best mean reward pick "
               "different units, whose pick had fewer pulls, and how much more damage the posterior's pick measured "
               "(nats; tau = 0.02).")
ALLOCATION = ("How the searches spent their pulls (mean over seeds): distinct units per step against pulls per step, "
              "pulls per unit over the run, the pulls a join was decided on, the share of joins backed by a pull "
              "under the joining mask, the share of a step's pulls that go to units first pulled in that step (the "
              "pool's newest entrants: to_newcomers) and the share of joins first pulled in the step they join "
              "(joins_new).")


class Report:
    """Notebook 3's tables for one session's grid: its parameters (``grid.p``), its language-model and
    vision experiments (``grid.lm``, ``grid.vision``: what the captions say about the models) and the
    session's store (how many cells were read from records). Every table method returns a
    :class:`repro.report.Table`."""

    def __init__(self, session, grid):
        self.p, self.lm, self.vision, self.store = grid.p, grid.lm, grid.vision, session.store
        self._exploration = None  # exploration_frames(), once built

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
                 f"{e.windows()}; calibration {e.setup.calib_nsamples} x "
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

    def four_bit_origin(self) -> Table | None:
        """What a GGUF Q4_1 round trip of two fp32 models does to this notebook's weight-only scores
        (:mod:`repro.origin`); None where the benchmark's result is not committed."""
        return origin.table("prescreen")

    def provenance(self) -> str:
        """The *This run* block's provenance: what each model is, its evaluation and calibration samples
        and the dtype its search losses ran in (:meth:`describe`, one bullet per model)."""
        lm = [f"{line}; weights {e.identity.get('quantisation')}, evaluated in {e.setup.eval_dtype}, "
              f"search losses in {e.search_dtype}" for line, e in zip(self.describe().splitlines(), self.lm.values())]
        vision = [f"{line}; evaluated in {e.setup.eval_dtype}, search losses in {e.search_dtype}"
                  for line, e in zip(self.describe().splitlines()[len(self.lm):], self.vision.values())]
        return provenance(lm + vision)

    def differences(self) -> Table:
        """What differs from the paper, generated from the parameters that ran."""
        p, lm, vision = self.p, self.lm, self.vision
        units = "; ".join(f"{model_line(e)}: " + ", ".join(f"{k} {', '.join(unit_pct(r) for r in rs)}"
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
        ratios = (f"{', '.join(unit_pct(r) for r in mlp)}: one search to {unit_pct(max(mlp))} per (method, seed), the "
                  "smaller ratios its first k units (no step depends on k)" if mlp else "none")
        rows = [("language models", "GPT-2, OPT-125m/350m, Pythia-160m/410m, Qwen2.5-0.5B, SmolLM2-360M", units),
                ("vision", "ViT-B/16, DeiT-Tiny, Swin-Tiny on ImageNet-style data",
                 (f"{', '.join(model_line(e) for e in vision.values())} on the "
                  f"{next(iter(vision.values())).images.describe()}") if vision else "not run"),
                ("calibration / evaluation", "up to 512 calibration texts, 1024 evaluation texts of 128 tokens", data),
                ("search", "32 paired evaluations per step, pool of 48, the model's precision", search),
                ("MLP ratios", "3 / 5 / 8%", ratios),
                ("seeds", "five", ", ".join(map(str, p.seeds)))]
        return Table(*differences_table(rows, p.profile))

    def table1(self, lm: pd.DataFrame, frame: pd.DataFrame) -> Table:
        """Table 1 (:func:`lm_summary` of ``lm``, :func:`lm_table`'s rows of ``frame``)."""
        t = lm_summary(lm, frame)
        return summarised(Table(t, self.caption("Table 1. Perplexity change against dense (mean and sd over seeds), "
                                                "LAMBADA perplexity and last-word accuracy change.", frame),
                                readings.table1_reading(t)), "method", ["model", "units"],
                          "WikiText-2 ppl change %", source=t.assign(units=t.kinds + " " + t.ratio.map(unit_pct)))

    def paper_settings_pending(self) -> str:
        """Where the language-model searches run below the paper's setting: one generated line (:func:`.paper.pending`);
        "" where they run at the paper's."""
        return paper.pending(self, self.search_dtypes())

    def search_dtypes(self) -> list[str]:
        """The precisions Table 1's searches computed their losses in (each language model's)."""
        return sorted({e.search_dtype for e in self.lm.values()})

    # ---- section 2b: the paper's search (repro.papers.bandit.paper) ------------------------------------------------
    def table1_paper(self, plm: pd.DataFrame, pframe: pd.DataFrame) -> Table:
        return paper.table1(self, plm, pframe)

    def claims_paper(self, plm: pd.DataFrame) -> Table:
        return paper.claims(self, plm)

    def survival(self, scaled: Table, paper_claims: Table, plm: pd.DataFrame) -> Table:
        return paper.survives(self, scaled, paper_claims, plm, self.search_dtypes())

    def table1_per_seed(self, lm: pd.DataFrame, frame: pd.DataFrame) -> Table:
        spans = lm.assign(method=lm.method.map(LABELS), units=lm.kinds + " " + lm.ratio.map(unit_pct)).groupby(
            ["model", "units", "method"], sort=False).change_pct.agg(["min", "max"]).reset_index()
        spans["span"] = [f"{lo:+.1f} to {hi:+.1f}" for lo, hi in zip(spans["min"], spans["max"])]
        return summarised(Table(per_seed_table(lm), self.caption(
            "Table 1 per seed: WikiText-2 ppl change % [paired 95% CI] / LAMBADA ppl change %.", frame),
            readings.per_seed_reading(lm)), "method", ["model", "units"], "span", source=spans)

    def rewards(self, frame: pd.DataFrame) -> Table:
        t = labelled(reward_table(frame)).round(3)
        return Table(t, self.caption("Rewards produced by r = sigmoid(-damage / 0.02).", frame),
                     readings.rewards_reading(t))

    def layers(self, frame: pd.DataFrame) -> Table:
        t = labelled(layer_profile(frame, {n: e.structure["n_layers"] for n, e in self.lm.items()})).round(3)
        return summarised(Table(t, self.caption("Where the selected units sit: mean layer and share in the first and "
                                                "in the last tenth of the layers.", frame), readings.layers_reading(t)),
                          "method", ["model", "units"], "mean layer")

    def head_maps(self, frame: pd.DataFrame) -> dict[str, tuple[np.ndarray, int]]:
        """:func:`head_maps` with each model's (layers, heads per layer)."""
        return head_maps(frame, {n: (e.structure["n_layers"], e.structure["heads_per_layer"][0]) for n, e in self.lm.items()})

    def budget(self, frame: pd.DataFrame) -> Table:
        t = budget_table(frame)
        return summarised(Table(t, self.caption("Table B1. Budget per run (mean over seeds): calibration passes, "
                                                "paired evaluations, losses, layer forwards, seconds on this machine.",
                                                frame), readings.budget_reading(t)),
                          "method", ["model", "units"], "layer_forwards")

    def table2(self, vis: pd.DataFrame, vframe: pd.DataFrame) -> Table:
        t = vision_summary(vis, self.n_heads)
        return Table(t, self.caption("Table 2. Vision: top-1 and its drop against dense (percentage points, mean and "
                                     "sd over seeds), cross-entropy increase, paired evaluations per run.", vframe,
                                     vision=True),
                     "\n\n".join(x for x in (readings.table2_reading(t), readings.magnitude_among_random(vis)) if x))

    def statistics(self, lm: pd.DataFrame, vis: pd.DataFrame, frame: pd.DataFrame) -> tuple[Table, Table, Table]:
        """Table B2 (per family: how many comparisons have a CI excluding zero, p < 0.05, q < 0.05, the
        paper's own counts beside its family): the paper's kind of family (every MAB-vs-baseline comparison on
        every data set, :func:`all_tests`), its like-for-like subfamily (MAB vs budgeted greedy on the language
        models), the rest of it (ours) and the selections against dense; and the across-seed tests of the
        subfamily and of the rest, each with BH q within its own family and within the whole family."""
        whole = all_tests(lm, vis)
        families = {ALL_FAMILY: whole, PAPER_FAMILY: greedy_tests(lm), OTHER_FAMILY: mab_tests(lm, vis)}
        _, tests, b2 = family_summary(pd.concat([lm, vis], ignore_index=True), families)
        q_all = tests[ALL_FAMILY].set_index(SETTING + ["value", "a", "b"]).q if len(whole) else pd.Series(dtype=float)

        def shown(t: pd.DataFrame) -> pd.DataFrame:
            if not len(t):
                return t
            t = t.assign(**{"q (whole family)": t.set_index(SETTING + ["value", "a", "b"]).index.map(q_all)})
            return t.assign(a=t.a.map(LABELS), b=t.b.map(LABELS)).round(4)
        paper, ours = shown(tests[PAPER_FAMILY]), shown(tests[OTHER_FAMILY])
        return (Table(b2, self.caption("Table B2. Comparisons with a 95% CI excluding zero, p < 0.05 and q < 0.05, "
                                       "Benjamini-Hochberg within each family: the paper's kind of family (every "
                                       "MAB-vs-baseline comparison on every data set), its like-for-like subfamily "
                                       "and the rest, each corrected on its own; the paper's counts beside its "
                                       "families.", frame), readings.b2_reading(b2, paper)),
                Table(paper, self.caption("The paper's comparison: MAB - budgeted greedy across seeds on the language "
                                          "models (WikiText-2 and LAMBADA ppl change %), 95% t interval, paired t, BH "
                                          "q within this subfamily and within the whole family.", frame),
                      readings.comparisons_reading(paper)),
                summarised(Table(ours, self.caption("Ours: MAB - every other baseline across seeds (ppl change %, "
                                                    "WikiText-2 and LAMBADA; vision: top-1 drop, pp), 95% t interval, "
                                                    "paired t, BH q within this family and within the whole family.",
                                                    frame), readings.comparisons_reading(ours)),
                           SETTING + ["value"], "comparison", "mean difference (BH q in this family)",
                           source=ours.assign(**{"comparison": ours.a + " - " + ours.b if len(ours) else [],
                                                 "mean difference (BH q in this family)": [
                                                     f"{d:+.2f} (q {q:.3f})" for d, q in zip(ours.get("mean_diff", []),
                                                                                            ours.get("q", []))]})))

    def memory_ablation(self, lm: pd.DataFrame, frame: pd.DataFrame, vis: pd.DataFrame,
                        vframe: pd.DataFrame) -> Table:
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
        t = t.round(4) if len(t) else t
        return Table(t, cap, readings.memory_reading(t))

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

    def join_replay(self, frame: pd.DataFrame, vframe: pd.DataFrame) -> Table:
        """Section 5d's first table: :func:`join_table` of this run's MAB-TS searches and of the ablation's."""
        other, vother, _ = self._join_frames()
        both = pd.concat([frame, vframe, other, vother], ignore_index=True)
        t = join_table(both)
        return Table(t, self.caption(JOIN_REPLAY, both), readings.join_reading(t))

    def join_ablation(self, lm: pd.DataFrame, frame: pd.DataFrame, vis: pd.DataFrame,
                      vframe: pd.DataFrame) -> tuple[Table, Table]:
        """Section 5d: MAB-TS under the other join rule against the notebook's (:func:`memory_ablation`'s
        table, one rule each side), and MAB-TS under the other rule against budgeted greedy (paired over
        seeds, BH q within these comparisons)."""
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
        cells = cells if len(cells) else None
        table = table.round(4) if len(table) else table
        return (Table(table, self.caption(f"Ablation: MAB-TS with join `{rule}` against join `{self.p.join}` (the "
                                          "notebook's), other - main over seeds (ppl change %; vision: top-1 drop, "
                                          "pp), 95% t interval, paired t.", cells), readings.memory_reading(table)),
                Table(tests, self.caption(f"MAB-TS with join `{rule}` - budgeted greedy across seeds (WikiText-2 and "
                                          "LAMBADA ppl change %; vision: top-1 drop, pp), 95% t interval, paired t, BH "
                                          "q within these comparisons.", cells), readings.comparisons_reading(tests)))

    def allocation(self, frame: pd.DataFrame, vframe: pd.DataFrame,
                   wframe: pd.DataFrame | None = None) -> Table:
        """:func:`allocation_table` of the notebook's searches (with ``wframe``, section 5c's wider budget)
        and of each ablation rule's."""
        frames = {self.p.memory: pd.concat([frame, vframe, wframe], ignore_index=True)}
        for rule in self.p.ablation_memories():
            frames[rule] = pd.concat(self._frames(memory=rule), ignore_index=True)
        t = allocation_table(frames)
        budget = t.assign(pulls=t.pulls_per_step.map(lambda n: f"{n:g} pulls per step")) if len(t) else t
        return summarised(Table(t, self.caption(ALLOCATION, frame), readings.allocation_reading(t)),
                          ["method", "memory"], ["model", "units", "pulls"], "to_newcomers", source=budget)

    # ---- issue 49: what the bandits' results owe to what (repro.papers.bandit.mechanism) ---------------------
    def decomposition(self, lm: pd.DataFrame, frame: pd.DataFrame) -> Table:
        """MAB - greedy split into memory (control - greedy) and allocation (MAB - control), paired over seeds."""
        t = M.decomposition(lm)
        shown = t[[c for c in t.columns if not c.endswith("_sign")]] if len(t) else t
        return Table(shown, self.caption("MAB against budgeted greedy, split in two by the greedy-with-memory control "
                                         "(the same trials as greedy, kept across steps under the bandits' rule): "
                                         "ppl change % differences, mean over seeds [95% t interval]; per seed the "
                                         "two parts add up to the whole.", frame), M.decomposition_reading(t))

    def reward_spread(self, frame: pd.DataFrame) -> Table:
        t = M.reward_spread(frame).round(4)
        return Table(t, self.caption("MAB-UCB's rewards against its exploration bonus (mean over seeds): the rewards' "
                                     "sd within a step, the median gap of the two best mean rewards at a join, and "
                                     "the bonus c sqrt(ln t / n) at the run's middle pull.", frame),
                     M.reward_spread_reading(t))

    def ucb_worked(self, frame: pd.DataFrame) -> Table:
        """One real step of one MAB-UCB search (the first pull its index, not its best mean, decides):
        every candidate's mean reward, pulls, bonus and index (:func:`.worked.ucb_step`)."""
        runs = frame[(frame.method == "ucb") & frame.pulled.map(bool)] if len(frame) else frame
        mlp = runs[runs.kinds == "mlp"] if len(runs) else runs
        run = (mlp if len(mlp) else runs).sort_values(["model", "ratio", "seed"]).iloc[0] if len(runs) else None
        if run is None:
            return Table(pd.DataFrame(), "", "")
        c = self.p.ucb_c
        result = {"units": run.units, "pulled": run.pulled, "rewards": run.rewards}
        decided = pull_reasons(result, c)
        if not len(decided):  # every pull went to a fresh entrant (a budget no larger than the pool's refresh)
            return Table(pd.DataFrame(), "", f"{run.model}'s MAB-UCB search pulled only fresh entrants: no pull was "
                                             "decided by the index, so there is no step to work through.")
        step, pull = bonus_decided_pull(result, c) or (int(decided.step.iloc[0]), int(decided.pull.iloc[0]))
        t = ucb_step(result, step, c, pull).round(4)
        top = t.iloc[0]
        best = t.sort_values("mean reward", ascending=False).iloc[0]
        reading = (f"Step {step} of {run.model}'s {run.kinds} {unit_pct(run.ratio)} seed-{int(run.seed)} search, pull {top.pull} "
                   f"(t = {top.t}): the index picks {top.unit} ({top.pulls} pull(s), mean reward {top['mean reward']:.3f},"
                   f" bonus {top.bonus:.3f}) over {best.unit}, the best mean reward ({best['mean reward']:.3f} after "
                   f"{best.pulls} pulls, bonus {best.bonus:.3f}). The bonus differs between them by "
                   f"{top.bonus - best.bonus:.3f}; their mean rewards by {best['mean reward'] - top['mean reward']:.3f}.")
        return Table(t[["unit", "pulls", "mean reward", "bonus", "index", "pulled"]],
                     self.caption(f"MAB-UCB worked: the index of every candidate before pull {top.pull} of step {step} "
                                  f"(c = {c:g}), rebuilt from the record.", frame), reading)

    def exploration_frames(self) -> tuple[dict[float, pd.DataFrame], dict[float, pd.DataFrame]]:
        """``{c: frame}`` and ``{c: lm_table}`` of the MAB-UCB cells at the notebook's c and at each constant of
        ``ucb_c_ablation`` (the notebook's memory, budget and pool). Built once per report from the records present
        then (the notebook asks for them after their cells: section 5f, then the verdict's scope)."""
        if self._exploration is None:
            self._exploration = self._exploration_frames()
        return self._exploration

    def _exploration_frames(self):
        p = self.p
        cs = [p.ucb_c, *sorted({c for kinds in p.ucb_c_ablation.values() for v in kinds.values()
                                                   for c in v}, reverse=True)]
        frames = {c: bandit_frame(self.store, self.lm, memory=p.memory, search=p.search, join=p.join, c=c) for c in cs}
        return frames, {c: lm_table(f) if len(f) else pd.DataFrame() for c, f in frames.items()}

    def verdict_scope(self, lm: pd.DataFrame, frame: pd.DataFrame) -> str:
        """:func:`.mechanism.verdict_scope` of this run's tables (the decomposition, the reward scale and the
        exploration ablation)."""
        frames, tables = self.exploration_frames()
        main = self.p.ucb_c
        explored = M.exploration_table({main: frames[main]}, {main: tables[main]}, main) if len(frames[main]) else \
            pd.DataFrame()
        return M.verdict_scope(M.decomposition(lm), M.reward_spread(frame), explored, main)

    def exploration(self) -> Table:
        frames, tables = self.exploration_frames()
        main = self.p.ucb_c
        ablated = {m: self.p.ablation_settings.get(m, {}) if self.p.ablation_settings is not None
                   else self.p.unit_settings.get(m, {}) for m in self.p.ucb_c_ablation}
        settings = {(m, k, r) for m, kinds in self.p.ucb_c_ablation.items() for k in kinds
                    for r in ablated[m].get(k, [])}
        frames = {c: f[[s in settings for s in zip(f.model, f.kinds, f.ratio)]] if len(f) else f
                  for c, f in frames.items()}
        t = M.exploration_table(frames, tables, main)
        shown = t.drop(columns="diff_sign").round(3) if len(t) else t
        cells = pd.concat([f[f.method == "ucb"] for f in frames.values() if len(f)] or [pd.DataFrame()])
        return Table(shown, self.caption(f"MAB-UCB at each exploration constant (the paper's c = {main:g} and smaller "
                                         "ones), same seeds, calibration draws, budget and pool: allocation (mean over "
                                         "seeds) and ppl change %, with its paired difference from c = "
                                         f"{main:g} [95% t interval].", cells if len(cells) else None),
                     M.exploration_reading(t, main))

    def replay(self, records: list[dict]) -> Table:
        selections = {r["key"]: r for r in self.store.records("bandit-select")}
        t = M.replay_table(records, selections)
        t = t.round(4) if len(t) else t
        return Table(t, self.caption("Joins replayed in float32: each search's own pulls, mini-batches and masks, "
                                     "its join rule applied to float32 damages; the damage difference per pull "
                                     "(nats) and the decisions' margins (nats)."),
                     M.replay_reading(t, next(iter(self.lm.values())).search_dtype if self.lm else None))

    def timing(self, frame: pd.DataFrame) -> Table:
        selections = {r["key"]: r for r in self.store.records("bandit-select")}
        t = M.timing_table(frame, selections)
        t = t.round(2) if len(t) else t
        return Table(t, self.caption("Seconds of the sequential searches (mean over seeds) against the work they did "
                                     "(layer forwards), and the machines the records were made on.", frame),
                     M.timing_reading(t))

    def magnitude_pool(self, frame: pd.DataFrame, lm: pd.DataFrame, model: str) -> Table:
        t = M.magnitude_pool(frame, model)
        shown = t.drop(columns=["model", "k", "all_norms"]).round(4) if len(t) else t
        return Table(shown, self.caption(f"{model}'s heads the MAB searches pulled, lowest norm first: magnitude's "
                                         "score (weight norm), the mean damage of the head's pulls (all seeds, nats) "
                                         "and magnitude's selection.", frame), M.magnitude_reading(t, lm))

    def scorer_layer(self, frame: pd.DataFrame, model: str, kinds: str, ratio: float, seed) -> Table:
        """Magnitude, Taylor and Fisher on one layer of one run (:func:`.scorers.layer_scores`)."""
        t = S.layer_scores(frame, model, kinds, ratio, seed)
        layer = t.unit.map(lambda u: unit_of(u).layer).iloc[0] if len(t) else None
        flags = [c for c in t.columns if c.endswith((" selects", " pulled"))]
        chosen = t[t[flags].any(axis=1)].round(5) if len(t) else t
        return summarised(Table(t.round(5) if len(t) else t, self.caption(
            f"Magnitude, Taylor and Fisher on {model}'s layer {layer} ({kinds} {unit_pct(ratio)}, seed {seed}, the "
            "layer holding most of Fisher's selection): each candidate's score, its rank among all candidates (1: "
            "selected first), whether each scorer selects it, and whether the seed-matched MAB-UCB search pulled or "
            "selected it.", frame), S.layer_reading(t)), None, None,
            "the candidates some scorer selects or the search pulled", source=chosen)

    def scorer_reach(self, frame: pd.DataFrame) -> Table:
        """How much of each one-shot scorer's selection lies where the seed-matched MAB-UCB search never looked
        (:func:`.scorers.reach`)."""
        t = S.reach(frame)
        return Table(t.round(3) if len(t) else t, self.caption(
            "Where the one-shot scorers choose: the share of each scorer's k units that the seed-matched MAB-UCB "
            "search never pulled, and the share beyond the pool's reach (past the k + P - 1 lowest norms), mean over "
            "seeds.", frame), S.reach_reading(t))

    def prescreen(self, lm: pd.DataFrame, vframe: pd.DataFrame | None = None) -> Table:
        """How much of each search's selection the magnitude pre-screen decides (:func:`.mechanism.prescreen_table`),
        the language models' searches and, where given, the vision models' (their pool is the paper's 48)."""
        frames = [f for f in (lm, vframe) if f is not None and len(f)]
        t = pd.concat([M.prescreen_table(f) for f in frames], ignore_index=True) if frames else pd.DataFrame()
        return Table(t.round(3) if len(t) else t, self.caption(
            "What the magnitude pre-screen decides: per setting and pool size, the share of a search's k units that "
            "must be magnitude's own (a pool of P entered in norm order reaches only the k + P - 1 lowest-norm units), "
            "and the overlap each method's selections have with magnitude's (mean, min, max over seeds).", lm),
            M.prescreen_reading(t))

    def wide(self, wframe: pd.DataFrame) -> Table:
        """Section 5c's table: :func:`vision_summary` of budgeted greedy and the MAB searches with the
        ``wide_search`` budget."""
        t = vision_summary(vision_table(wframe[wframe.method.isin(["dense", "greedy", *MAB])]), self.n_heads)
        w = self.p.wide_search
        return Table(t, self.caption(
            f"Vision at a budget of {w.get('budget')} pulls per step over a pool of {w.get('pool_size')}: top-1 and "
            "its drop against dense (pp, mean and sd over seeds), cross-entropy increase, paired evaluations per run.",
            wframe, vision=True, search=w), readings.table2_reading(t))

    def wide_tests(self, wframe: pd.DataFrame) -> Table:
        """Section 5c's paper comparison: MAB-UCB and MAB-TS against budgeted greedy at the ``wide_search``
        budget, top-1 drop across seeds (paired t), BH q within these comparisons."""
        table = vision_table(wframe[wframe.method.isin(["dense", "greedy", *MAB])])
        tests = mab_tests(pd.DataFrame(), table)
        if len(tests):
            tests = tests.assign(q=bh(tests.p), a=tests.a.map(LABELS), b=tests.b.map(LABELS)).round(4)
        w = self.p.wide_search
        return Table(tests, self.caption(
            f"MAB - budgeted greedy at {w.get('budget')} pulls per step over a pool of {w.get('pool_size')} (top-1 "
            "drop, pp), 95% t interval over seeds, paired t, BH q within these comparisons.", wframe, vision=True,
            search=w), readings.comparisons_reading(tests))

    def claims(self, lm: pd.DataFrame, vis: pd.DataFrame, wframe: pd.DataFrame | None = None) -> Table:
        """The claims (:func:`repro.claims.claims_frame`: every claim's numbers; with ``wframe``, section 5c's
        searches at the wider budget too), what :meth:`repro.notebooks.Notebook.show_claims` shows."""
        wide = vision_table(wframe) if wframe is not None and len(wframe) else None
        classes = {n: e.images.n_classes for n, e in self.vision.items()}
        claims = claims_frame(with_sources(with_paper(bandit_claims(lm, vis, wide, self.p.wide_search, classes),
                                                      PAPER_EFFECTS), PAPER_SOURCES))
        caption = (f"**Claims checked (Paper 3).** Profile `{self.p.profile}`; seeds {self.p.seeds}; "
                   f"verdicts from 95% t intervals of the difference paired over seeds.")
        return Table(claims, caption, readings.claims_reading(claims))

    def discussion(self, frame: pd.DataFrame, lm: pd.DataFrame, vis: pd.DataFrame, claims: pd.DataFrame,
                   ablation: pd.DataFrame | None = None) -> str:
        """The generated discussion (:func:`.readings.discussion_reading`) with this run's search parameters."""
        p = self.p
        return readings.discussion_reading(frame, lm, vis, claims, p.search,
                                           f"{p.calib_batch_size} window(s) of {p.calib_seqlen} tokens", ablation,
                                           p.vision_search, f"{p.vision_calib_batch_size} images")

    def removal(self, record: dict) -> Table:
        """The removal record of the ``removal`` parameter's (model, method, seed) as a table
        (:func:`removal_table`)."""
        rm, c, res = self.p.removal, record["config"], record["result"]
        which = " and ".join(f"{k[0]} {unit_pct(r)}" for k, r in removal_parts(self.p.unit_settings[rm["model"]]))
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
        t = removal_table(res, c["batches"]).round(2)
        return Table(t, caption, readings.removal_reading(t))

    def metrics(self, frame: pd.DataFrame, vframe: pd.DataFrame, claims: pd.DataFrame) -> dict:
        """The run's summary numbers: dense perplexity per model, cells, claims and verdicts."""
        return {"dense_ppl": {n: float(frame[(frame.model == n) & (frame.method == "dense")].ppl.iloc[0])
                              for n in self.lm},
                "n_cells": int(len(frame) + len(vframe)), "n_claims": int(len(claims)),
                "verdicts": kind_counts(claims)}
