"""Notebook 2's tables with their captions (:class:`Report`): each method takes the frame a section
of the grid returned and gives what the notebook shows; the functions it calls are pure functions of
records (:mod:`.tables`, :mod:`.claims`)."""
from __future__ import annotations

import pandas as pd

from repro.claims import COLLAPSE, collapsed
from repro.papers.ogas import claims as C
from repro.papers.ogas import tables as T
from repro.papers.ogas.grid import OgasGrid
from repro.papers.ogas.records import LABELS, dense_ppl, paired_to, zeroshot_paired
from repro.report import column_reading, differences_table, model_line, provenance


def _of_grid(table):
    """A report method ``(self, frame)`` of ``table(frame, grid)``, one of :mod:`.tables`' functions (its docstring)."""
    def method(self, frame):
        return table(frame, self.grid)
    method.__doc__ = table.__doc__
    return method


class Report:
    """Paper 2's tables for one notebook session's grid."""

    def __init__(self, session, grid: OgasGrid):
        self.session, self.grid = session, grid

    # the tables of :mod:`.tables` that need only their frame (or zero-shot results) and the grid
    table12 = _of_grid(T.table12)
    achieved = _of_grid(T.achieved_table)
    rounding = _of_grid(T.rounding_table)
    nm = _of_grid(T.nm_table)
    zeroshot = _of_grid(T.zeroshot_tables)
    ablation = _of_grid(T.ablation_table)
    figure2 = _of_grid(T.figure2)
    gamma_frames = _of_grid(T.gamma_frames)
    gamma_bounds = _of_grid(T.gamma_bounds_table)

    def describe(self) -> str:
        return self.grid.describe()

    def provenance(self) -> str:
        """The *This run* block's provenance: what each model is, its OGAS setting, evaluation samples
        (WikiText-2 test and C4's held-out half), dtype and calibration."""
        g = self.grid
        lines = [f"{line}; weights {e.identity.get('quantisation')}, evaluated in {e.setup.eval_dtype}"
                 f"{e.feeding_note}; calibration of {e.calib_text.label} (WikiText-2 rows) and "
                 f"{g.c4[n].calib_text.label} (C4 rows)"
                 for line, (n, e) in zip(g.describe().splitlines(), g.wt.items())]
        return provenance(lines)

    def table12_reading(self, vals: pd.DataFrame) -> str:
        """What Tables 1-2 show: per model and data set the lowest perplexity (against dense) and OGAS's rank."""
        return column_reading(vals, focus=LABELS["ogas"])

    def nm_reading(self, vals: pd.DataFrame) -> str:
        """What the N:M table shows: per model and pattern the lowest perplexity (against dense)."""
        return column_reading(vals)

    @staticmethod
    def ablation_reading(table5: pd.DataFrame) -> str:
        """What Table 5 shows: per model, each variant's perplexity and its paired ratio to Wanda, best first."""
        lines = []
        for model, g in table5.groupby("model", sort=False):
            g = g.sort_values("ppl")
            lines.append(f"- **{model}**: " + "; ".join(f"{r.variant} {r.ppl:.4g} ({r['vs Wanda (paired)']} against Wanda)"
                                                   for _, r in g.iterrows() if r.variant != "Wanda") + ".")
        return "\n".join(lines)

    @staticmethod
    def bounds_reading(bounds: pd.DataFrame) -> str:
        """What the gamma-bounds table shows: per variant and interval, how many layers' searches ended at a
        bound (a search that ends there was stopped by the interval, not by the loss)."""
        return "\n".join(f"- **{r.model}, {r.variant}, {r.interval}**: {r['at the lower bound']} of {r.layers} layers at "
                         f"the lower bound, {r['at the upper bound']} at the upper; median gamma {r['median gamma']:.3g}."
                         for _, r in bounds.iterrows())

    def sample_vs_split(self, frame: pd.DataFrame, refs: dict):
        """The tables' sample against shorter windows and the whole split (table, caption, reading)."""
        return (T.sample_vs_split(frame, self.grid, refs),
                f"**Which windows.** Dense perplexity, {self.grid.wt_name} (test): the tables' sample beside the "
                "earlier sample's shorter windows (first ones, and as many spread over the split) and the whole "
                f"split; profile `{self.grid.p.profile}`.", T.sample_reading(frame, self.grid, refs))

    def answer_bias(self, results: dict):
        return T.answer_bias(results, self.grid.p.zeroshot_tasks)

    @staticmethod
    def answer_bias_reading(bias: pd.DataFrame) -> str:
        return T.answer_bias_reading(bias)

    def dense_vs_chance(self, results: dict):
        return T.dense_vs_chance(results, self.grid.p.zeroshot_tasks)

    def chance_summary(self, chance: pd.DataFrame) -> str:
        return T.chance_summary(chance)

    @staticmethod
    def achieved_reading(achieved: pd.DataFrame) -> str:
        """Which methods hit the target exactly, what the others achieve, and each method's pruning time."""
        exact = achieved[achieved.achieved == achieved.target]
        off = achieved[achieved.achieved != achieved.target]
        text = (f"- {', '.join(dict.fromkeys(exact.method))} remove exactly the target" if len(exact) else "- No method hits the target")
        text += ("; " + "; ".join(f"{m} {g.achieved.min():.5g}-{g.achieved.max():.5g}" for m, g in off.groupby("method", sort=False))
                 + " (its rounding keeps a few weights more)" if len(off) else "") + "."
        times = achieved.groupby("method", sort=False)["prune seconds"]
        return text + "\n- Pruning time: " + ", ".join(f"{m} {t.min():.3g}-{t.max():.3g} s" for m, t in times) + "."

    def rounding_reading(self, frame: pd.DataFrame) -> str:
        """Whether the paper's rounding changes OGAS's perplexity beyond the window sample's noise."""
        lines = []
        for name in self.grid.models:
            for d in (self.grid.wt_name, self.grid.c4_name):
                p = paired_to(frame, name, d, "ogas", "ogas-exact", self.grid.p.sparsity)
                if p is not None:
                    apart = p.ci[0] > 1 or p.ci[1] < 1
                    lines.append(f"- **{name}, {d}**: x{p.estimate:.4f} [{p.ci[0]:.4f}, {p.ci[1]:.4f}]: "
                                 + ("the rounding changes the perplexity beyond the windows' noise." if apart else
                                    "not separable from no effect; the exact target reads the same."))
        return "\n".join(lines)

    def zeroshot_reading(self, results: dict, chance: pd.DataFrame) -> str:
        """Per zero-shot model: OGAS minus Wanda in mean accuracy, paired over documents, over all tasks and
        over only the tasks where the dense model is above chance (``chance``: :meth:`dense_vs_chance`)."""
        lines = []
        for name, res in results.items():
            if "ogas" not in res or "wanda" not in res:
                continue
            tasks = self.grid.p.zeroshot_tasks
            above = chance[(chance.model == name) & (chance["dense vs chance"] == "above chance")].task.tolist()
            parts = []
            for label, ts in (("all tasks", tasks), ("the tasks where dense is above chance", above)):
                if ts:
                    p = zeroshot_paired(res["ogas"], res["wanda"], ts)
                    verdict = "better" if p.ci[0] > 0 else "worse" if p.ci[1] < 0 else "not separable"
                    parts.append(f"over {label} ({len(ts)}) {p.estimate:+.3f} [{p.ci[0]:+.3f}, {p.ci[1]:+.3f}], {verdict}")
            lines.append(f"- **{name}**, OGAS minus Wanda in mean accuracy, paired over documents: " + "; ".join(parts) + ".")
        return "\n".join(lines)

    def curve(self, frame: pd.DataFrame):
        """Figure 4's lines and the dense perplexity of each model."""
        return T.curve_frame(frame, self.grid), dense_ppl(frame, self.grid)

    def curve_reading(self, curve: pd.DataFrame, dense: dict) -> str:
        """What Figure 4 shows from 70% on: per model and sparsity the lowest perplexity among the methods'
        own lines and which methods have collapsed there (above ``COLLAPSE`` x dense or at a uniform guess,
        :func:`repro.claims.collapsed`: a comparison among them cannot inform a claim); then every place a line
        falls as sparsity rises between two collapsed points (:func:`tables.falls_after_collapse`)."""
        lines = []
        uniform = {m: self.grid.wt[m].uniform_ppl for m in set(curve.model)}
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
        for f in T.falls_after_collapse(curve, dense, uniform):
            share = "" if f["of_uniform"] is None else (f" ({f['of_uniform'][0]:.2f} and {f['of_uniform'][1]:.2f} of a "
                                                        "uniform guess's)")
            lines.append(f"- **{f['model']}, {f['label']} falls** from {f['ppl_from']:,.0f} at {f['from']:.0%} to "
                         f"{f['ppl_to']:,.0f} at {f['to']:.0%}{share}: both points have collapsed, where perplexity "
                         "tells how a destroyed model is wrong (spread near uniformly, or confident and wrong), not "
                         "what it kept: not a recovery, and no comparison between the two.")
        return "\n".join(lines)

    def curve_table(self, curve: pd.DataFrame, frame: pd.DataFrame):
        return T.curve_table(curve, frame, self.grid)

    def claims(self, frame: pd.DataFrame):
        dense = {n: r["dense"] for n, r in self.grid.run_zeroshot().items()} if self.grid.p.zeroshot_models else None
        return C.claims_table(frame, self.grid, dense)

    def summary(self, claims: pd.DataFrame) -> str:
        return C.summary(claims, self.grid.p.sparsity)

    def readme_blocks(self, table12: tuple, claims: tuple) -> dict:
        return C.readme_blocks(table12, claims)

    def metrics(self, frame: pd.DataFrame, claims: pd.DataFrame) -> dict:
        return C.metrics(frame, claims, self.grid)

    def differences(self):
        """(table, caption): what differs from the paper, generated from the parameters that ran."""
        g = self.grid
        models = "; ".join(f"{model_line(e)}, the paper's {g.p.ogas_setting[n]} setting" for n, e in g.wt.items())
        calib = "; ".join(f"{n}: {e.setup.calib_nsamples} x {e.setup.calib_seqlen} tokens of {e.calib_text.label} "
                          f"(WikiText rows), of {g.c4[n].calib_text.label} (C4 rows)" for n, e in g.wt.items())
        evals = "; ".join(f"{n}: {e.data.label} and {g.c4[n].data.label}, {e.windows()}" for n, e in g.wt.items())
        zs = (f"{', '.join(g.p.zeroshot_tasks)} on {', '.join(g.p.zeroshot_models)}, first {g.p.zeroshot_limit} documents "
              "each (lm-eval's own task YAMLs)" if g.p.zeroshot_models else "not run")
        dtypes = ", ".join(sorted({e.setup.eval_dtype for e in g.all_experiments()}))
        rows = [("models / settings", "LLaMA-3.1-8B-Instruct (lambda 0.4, gamma searched), Mistral-7B-v0.1 (lambda "
                 "0.2, gamma 0.2)", models),
                ("calibration", "128 x 2048 tokens (WikiText-2 train for WikiText rows, C4 for C4 rows)", calib),
                ("evaluation", "WikiText-2 test, C4 validation", evals),
                ("zero-shot", "the full task sets", zs),
                ("precision", "fp16 on a GPU", f"pruning in float32; evaluation {dtypes}")]
        return differences_table(rows, self.session.profile)
