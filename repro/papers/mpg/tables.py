"""Paper 1's tables of the language models from one notebook session's records (:class:`Tables`): each a
:class:`repro.report.Table`, its frame with its caption and its reading (:mod:`.readings`).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from repro.assets.machine import label
from repro.claims import claims_frame, fmt_ratio, task_trivial, with_paper, with_sources
from repro.evaluate.speed import timed
from repro.evaluate.stats import paired_ratio, speed_ratio
from repro.methods.heads import select_heads
from repro.papers.mpg.claims import PAPER_EFFECTS, PAPER_SOURCES, downstream_claims, mpg_claims
from repro.papers.mpg.glue import glue_claims
from repro.papers.mpg.params import MpgParams
from repro.papers.mpg.readings import (
    cost_reading,
    draw_spread_reading,
    efficiency_reading,
    feeding_reading,
    paired_reading,
    spread_reading,
    summary_reading,
    table1_reading,
    table2_reading,
    table4_reading,
    table4b_reading,
    ties_reading,
    zero_ties_reading,
    zeroshot_reading,
)
from repro.papers.mpg.records import (
    EXTRA_METHODS,
    LABEL,
    PAPER_METHODS,
    TABLE3_METRIC,
    Z_METHODS,
    find,
    find_scores,
    grid,
    group_size_of,
    main_cells,
    paired_table,
    pct,
    ppl_frame,
    rank_counts,
    scores_frame,
    zeroshot_cells,
)
from repro.report import Table, fmt_ci, lm_setting, marked_table, summarised
from repro.report import caption as caption_line
from repro.words import and_join


def zero_ties_frame(scores: pd.DataFrame, models: list[str], methods: list[str],
                    sparsities: list[float]) -> pd.DataFrame:
    """Where exact-zero scores decide a cell. Scores are non-negative, so the zero-score heads are cut first;
    when fewer heads are cut than score 0, *which* of them go is the tie-break's choice, not the score's."""
    rows = []
    for name in models:
        for m in methods:
            if (r := find_scores(scores, name, m)) is None or not (r["scores"] == 0).any():
                continue
            zeros = int((r["scores"] == 0).sum())
            for sp in sparsities:
                k = len(select_heads(r["scores"], sp))
                rows.append({"model": name, "method": LABEL[m], "sparsity": pct(sp), "heads cut": k,
                             "heads scoring exactly 0": zeros, "decided by the tie-break": k < zeros,
                             "what decides": (f"{k} of the {zeros} zero-score heads, by (layer, head) order"
                                              if k < zeros else "the scores (every zero-score head is cut)")})
    return pd.DataFrame(rows)


def tie_counts(scores: pd.DataFrame, models: list[str], methods=("mpg", "mp")) -> pd.DataFrame:
    """Per model, method and threshold z: how many heads score exactly 0 (no feature above mu + z sigma) and the
    largest group of heads sharing one exact score: where a global ranking's cut can fall inside a tie, so that
    the (layer, head) order decides (every z that has a score record: the z sweep's)."""
    rows = []
    f = scores[scores.model.isin(models) & scores.method.isin(methods)] if len(scores) else scores
    for (name, m, z), g in (f.groupby(["model", "method", "z"], sort=False) if len(f) else []):
        s = np.asarray(g.iloc[0]["scores"]).ravel()
        _, counts = np.unique(s, return_counts=True)
        rows.append({"model": name, "method": LABEL[m], "z": z, "heads": s.size, "heads scoring exactly 0":
                     int((s == 0).sum()), "share": (s == 0).mean(), "largest tie": int(counts.max())})
    t = pd.DataFrame(rows)
    return t.sort_values(["model", "method", "z"], ignore_index=True) if len(t) else t


def tie_counts_reading(t: pd.DataFrame) -> str:
    """Per model: the zero-score heads at the lowest and the highest z, for each method."""
    lines = []
    for (model, method), g in (t.groupby(["model", "method"], sort=False) if len(t) else []):
        lo, hi = g.iloc[0], g.iloc[-1]
        lines.append(f"- **{model}, {method}**: {lo['heads scoring exactly 0']} of {lo.heads} heads score exactly 0 "
                     f"at z = {lo.z:g}, {hi['heads scoring exactly 0']} at z = {hi.z:g}; the largest tie holds "
                     f"{g['largest tie'].max()} heads.")
    return "\n".join(lines)


class SessionTables:
    """Tables from the records of one notebook session's ``experiments`` (``{model: experiment}``: their identity,
    setup and evaluation data name the models in captions); ``session``: what names the setting (``store``,
    ``profile``, ``params``: the notebook's parameters, read as :class:`MpgParams`)."""

    def __init__(self, session, experiments: dict, p: MpgParams | None = None):
        """``p``: the grid's parameters, already typed (else typed here from ``session.params``)."""
        self.store, self.profile = session.store, session.profile
        self.p = p if p is not None else MpgParams.of(session.params)
        self.experiments = experiments
        self.models = list(experiments)

    def tie_counts(self, scores: pd.DataFrame) -> Table:
        """:func:`tie_counts` of these models: heads scoring exactly 0 at every z that has a score record."""
        t = tie_counts(scores, self.models)
        return Table(t.round(3) if len(t) else t, self.caption("Heads that score exactly 0 under MP-G and MP at each "
                                                               "threshold z, and the largest group sharing one "
                                                               "score (weights only)."), tie_counts_reading(t))


class Tables(SessionTables):
    """Paper 1's tables of the language models: each method returns a :class:`repro.report.Table` (frame,
    caption, reading and, where the notebook saves raw numbers, the raw frame)."""

    # -- the session's records
    def frame(self) -> pd.DataFrame:
        return ppl_frame(self.store, self.experiments)

    def main(self) -> pd.DataFrame:
        return main_cells(self.frame())

    def scores(self) -> pd.DataFrame:
        return scores_frame(self.store, self.experiments)

    def caption(self, title: str, keys=None) -> str:
        """'**title** models; data, windows; dtype; profile `cpu`; k of n cells read from cached records.'
        (:func:`repro.report.caption`: the calibration and what each model is are in *This run*);
        ``keys``: the cells' record keys, to say how many were read from cached records."""
        cache = self.store.cache_summary(keys) if keys is not None else ""
        return caption_line(title, lm_setting(self.experiments), self.profile, cache)

    # -- section 2
    def cost(self, scores: pd.DataFrame, methods: list[str]) -> pd.DataFrame:
        """What scoring each head took (its calibration pass included), the calibration it read and how many
        heads score exactly 0, per model and method (the claims read it too)."""
        rows = []
        for name in self.models:
            for m in methods:
                r = find_scores(scores, name, m)
                if r is None:
                    continue
                calib = r["calibration"]
                rows.append({"model": name, "method": m, "label": LABEL[m], "seconds": r["seconds"],
                             "calibration": f"{calib['nsamples']} x {calib['seqlen']} tokens" if calib else "none",
                             "zero-score heads": int((r["scores"] == 0).sum())})
        return pd.DataFrame(rows)

    def scoring_cost(self, cost: pd.DataFrame) -> Table:
        """:meth:`cost` as shown (method labels only, rounded)."""
        caption = (f"Scoring cost: each score record's own seconds, as measured on the machine that computed it (not "
                   f"this one), profile `{self.profile}`.")
        return Table(cost.drop(columns="method").round(3), caption, cost_reading(cost))

    # -- section 3
    def table1(self, main: pd.DataFrame, methods: list[str], sparsities: list[float], calibration: str = "") -> Table:
        """Table I, best per column bold, second underlined; ``raw``: its perplexities. ``calibration``: the
        calibration its calibration-based scorers read, where the caption must name it (section 3e's table)."""
        vals = grid(main, "ppl", methods, self.models, sparsities)
        table = marked_table(vals, grid(main, "ci95", methods, self.models, sparsities), skip_rows=["Dense"])
        table.columns = [f"{m} @ {s}" for m, s in table.columns]
        levels = "/".join(f"{s * 100:g}" for s in sparsities)
        at = f" Calibration-based scorers at {calibration}." if calibration else ""
        caption = self.caption(f"Table I. WikiText-2 validation perplexity (lower is better) at {levels}% head "
                               f"sparsity.{at}{self.draws_note(main)}", [k for ks in main["keys"] for k in ks])
        if self.profile != "paper":
            caption += " The paper's models need the hub and a GPU: `paper` profile, not run here."
        return Table(table, caption, table1_reading(vals), vals)

    @staticmethod
    def draws_note(main: pd.DataFrame) -> str:
        """What a table's drawn rows are: ' Random: geometric mean over its 5 seeds; ...' ('' when every
        method ran once)."""
        drawn = main[main.n_draws > 1] if "n_draws" in main else main.iloc[:0]
        if drawn.empty:
            return ""
        parts = []
        for m in [m for m in PAPER_METHODS + EXTRA_METHODS if m in set(drawn.method)]:
            n = sorted(set(drawn[drawn.method == m].n_draws))
            what = "seeds" if m == "random" else "calibration draws"
            parts.append(f"{LABEL[m]} over {'/'.join(map(str, n))} {what}")
        return (" Methods drawn several times show the geometric mean over their draws, the interval widened by "
                "the spread between draws: " + "; ".join(parts) + ".")

    def draw_spread(self, main: pd.DataFrame, sparsities: list[float]) -> Table:
        """For every method drawn several times, each draw's perplexity per model and
        sparsity, and the ratio of its worst draw to its best: how much the seed or calibration sample alone
        moves a Table I cell."""
        rows = []
        for _, c in main[main.n_draws > 1].iterrows():
            p = np.asarray(c.draws_ppl, float)
            rows.append({"model": c.model, "method": LABEL[c.method], "sparsity": pct(c.sparsity),
                         "draws": len(p), "geometric mean": float(np.exp(np.mean(np.log(p)))),
                         "each draw": ", ".join(f"{v:,.4g}" for v in p), "worst / best": float(p.max() / p.min())})
        table = pd.DataFrame(rows)
        if len(table):
            order = {LABEL[m]: i for i, m in enumerate(PAPER_METHODS + EXTRA_METHODS)}
            table = table.sort_values(["model", "method", "sparsity"], key=lambda c: c.map(order) if c.name ==
                                      "method" else c, kind="stable").reset_index(drop=True)
        caption = self.caption("Table I's drawn methods, draw by draw: Random's seeds and the calibration-based "
                               "scorers' calibration draws (each a new sample of the calibration corpus).",
                               [k for ks in main[main.n_draws > 1]["keys"] for k in ks])
        return Table(table, caption, draw_spread_reading(table))

    def feeding(self, pairs: dict[str, tuple[dict, dict]]) -> Table:
        """Each model that requires ``<bos>`` evaluated dense with its rule and with
        plain windows (``pairs``: ``{model: (record with BOS, record without)}``), paired over windows."""
        rows = []
        for name, (on, off) in pairs.items():
            a, b = on["result"], off["result"]
            p = paired_ratio(b["window_nll"], a["window_nll"])
            rows.append({"model": name, "windows": f"{a['n_windows']} x {a['seqlen']} text tokens",
                         "dense ppl, <bos> + text": fmt_ci(a["ppl"], a["ci95"]),
                         "dense ppl, plain windows": fmt_ci(b["ppl"], b["ci95"]),
                         "plain / <bos> (paired)": fmt_ratio(p), "windows worse without": f"{p.n - p.n_better}/{p.n}"})
        keys = [(k, r["key"]) for on, off in pairs.values() for k, r in (("heads-ppl", on), ("heads-ppl", off))]
        return Table(pd.DataFrame(rows), self.caption(
            "Feeding each model as it expects: dense perplexity with <bos> before every window (the family's rule, "
            "used everywhere here) and with plain windows (the SparseGPT / Wanda protocol).", keys),
            feeding_reading(pairs))

    def paired(self, main: pd.DataFrame, sparsities: list[float], reference: str = "mpg") -> Table:
        """``reference`` against every other method, paired over windows."""
        table = paired_table(main, self.models, sparsities, reference)
        shown = table.assign(ratio=[f"x{r:.3g} {ci}" for r, ci in zip(table["ppl ratio"], table["95% CI"])]) if len(
            table) else table
        return summarised(Table(table, self.caption(f"Paired comparisons: {LABEL[reference]} / other method perplexity "
                                                    "ratio, 95% paired bootstrap CI over windows."),
                                paired_reading(table)), "vs", ["model", "sparsity"], "ratio", source=shown)

    def spread(self, scores: pd.DataFrame, methods: list[str], sparsity: float, vals: pd.DataFrame) -> Table:
        """Per model and method, the layers whose heads are all pruned at ``sparsity`` and the most heads taken
        from one layer (global ranking can empty a layer); read against Table I's perplexities ``vals``."""
        rows = []
        for name in self.models:
            for m in methods:
                if (r := find_scores(scores, name, m)) is None:
                    continue
                s = r["scores"]
                pruned = select_heads(s, sparsity)
                n_layers, n_heads = s.shape
                per_layer = np.bincount([layer for layer, _ in pruned], minlength=n_layers)
                rows.append({"model": name, "method": LABEL[m], "sparsity": pct(sparsity), "pruned": len(pruned),
                             "layers emptied": int((per_layer == n_heads).sum()),
                             "most from one layer": int(per_layer.max()),
                             "emptied layers": ", ".join(map(str, np.flatnonzero(per_layer == n_heads))) or "-"})
        table = pd.DataFrame(rows)
        return Table(table, self.caption("Pruned heads per layer at the lowest sparsity."), spread_reading(table, vals))

    # -- section 4
    def table2(self, frame: pd.DataFrame, z_values: list[float], z_sparsities: list[float],
               methods: list[str] = Z_METHODS) -> Table:
        """Table II, ``methods`` for every z (rows) on every model and sparsity (columns); ``raw``: its
        perplexities."""
        dz = frame[frame.method.isin(methods) & frame.sparsity.isin(z_sparsities) & frame.z.isin(z_values)
                   & frame.tie_break.eq("index") & frame.scale.eq("global")]
        dz = dz.assign(row=[f"{LABEL[m]}, z = {z}" for m, z in zip(dz.method, dz.z)],
                       col=[f"{m} @ {s:.0%}" for m, s in zip(dz.model, dz.sparsity)])
        cols = [f"{m} @ {s:.0%}" for m in self.models for s in z_sparsities]
        vals = dz.pivot(index="row", columns="col", values="ppl")[cols]
        table = marked_table(vals, dz.pivot(index="row", columns="col", values="ci95")[cols])
        names = and_join(sorted(LABEL[m] for m in methods))
        caption = self.caption(f"Table II. Perplexity of {names} for z in {{" + ", ".join(map(str, z_values)) + "}.",
                               dz.key)
        return Table(table, caption, table2_reading(vals), vals)

    # -- section 5
    def table4(self, vals: pd.DataFrame, methods: list[str]) -> Table:
        """Best / second-best counts of the paper's methods over Table I's columns (``vals``: its perplexities)."""
        rows = [LABEL[m] for m in PAPER_METHODS if m in methods]
        table = rank_counts(vals.drop(index="Dense"), rows)
        return Table(table, self.caption(f"Table IV. Best / second-best counts among the paper's methods over "
                                         f"{vals.shape[1]} columns of Table I."), table4_reading(table))

    def table4b(self, vals: pd.DataFrame, methods: list[str]) -> Table:
        """The counts of each of our baselines, added alone to the paper's set."""
        rows = [LABEL[m] for m in PAPER_METHODS if m in methods]
        v = vals.drop(index="Dense")
        table = pd.concat([rank_counts(v, rows + [LABEL[m]]).loc[[LABEL[m]]] for m in EXTRA_METHODS if m in methods])
        names = and_join([LABEL[m] for m in EXTRA_METHODS])
        return Table(table, self.caption(f"Table IVb (ours). Counts for {names}, each added alone to the paper's set."),
                     table4b_reading(table))

    # -- section 6
    def zeroshot_cells(self, main: pd.DataFrame, models: list[str], sparsities: list[float]) -> dict:
        """``{model: [(method, sparsity), ...]}`` of the Table III analogue, for ``models`` that are
        among the experiments (:func:`zeroshot_cells`)."""
        return {n: zeroshot_cells(main, n, sparsities) for n in models if n in self.experiments}

    def zeroshot_rows(self, records: list[dict]) -> pd.DataFrame:
        """One row per (record, task): each task's metric as the paper reports it (:data:`TABLE3_METRIC`;
        else accuracy, else the first metric), its lm-eval standard error and document count, and for accuracy the
        trivial answer's (:func:`repro.claims.task_trivial`)."""
        rows = []
        for rec in records:
            c = rec["config"]
            for task, r in rec["result"]["tasks"].items():
                metric = next(m for m in (TABLE3_METRIC.get(task), "acc", *r["metrics"]) if m in r["metrics"])
                v, se = r["metrics"][metric]["value"], r["metrics"][metric]["stderr"]
                trivial = task_trivial(task, r["per_doc"]) if metric == "acc" and "per_doc" in r else None
                rows.append({"trivial": None if trivial is None else trivial[0],
                             "trivial answer": None if trivial is None else trivial[1],
                             "model": c["model"]["name"], "method": LABEL[c["method"]],
                             "sparsity": pct(c.get("sparsity", 0.0)), "task": task, "metric": metric, "value": v,
                             "stderr": se, "shown": f"{v:.3f}" if se is None else f"{v:.3f} ± {1.96 * se:.3f}",
                             "n": r["n"], "key": ("heads-zeroshot", rec["key"])})
        return pd.DataFrame(rows)

    def table3(self, records: list[dict]) -> Table | None:
        """The zero-shot records (None without records): :meth:`zeroshot_rows` +- 1.96 lm-eval standard errors,
        per model, method and sparsity."""
        zs = self.zeroshot_rows(records)
        if zs.empty:
            return None
        column = [t if m == "acc" else f"{t} ({m.upper() if m == 'f1' else m})" for t, m in zip(zs.task, zs.metric)]
        table = zs.assign(column=column).pivot_table(index=["model", "method", "sparsity"], columns="column",
                                                     values="shown", aggfunc="first")
        table.columns.name = "task"
        first = records[0]["config"]
        caption = (f"**Table III analogue (not the paper's setting).** Zero-shot accuracy, MRPC in F1 as the paper "
                   "reports it (lm-eval task YAMLs, "
                   f"validation splits, first {first['limit']} documents each; n per task: "
                   + ", ".join(f"{t} {n}" for t, n in zs.groupby("task").n.first().items())
                   + f"), {first['dtype']}, profile `{self.profile}`; ± 1.96 standard errors. "
                   f"{self.store.cache_summary(dict.fromkeys(zs.key))}.")
        return Table(table, caption, zeroshot_reading(zs))

    # -- section 7
    def ties(self, frame: pd.DataFrame, scores: pd.DataFrame, sparsities: list[float]) -> Table:
        """MP-G with the index tie-break against the random tie-breaks of each
        model's ``tie_seeds``, with how many heads score exactly 0."""
        rows = []
        for name, e in self.experiments.items():
            if (r := find_scores(scores, name, "mpg")) is None:
                continue
            s = r["scores"]
            for sp in sparsities:
                base = float(find(frame, name, "mpg", sp).ppl)
                rnd = [float(c.ppl) for seed in e.tie_seeds if (c := find(frame, name, "mpg", sp, tie_seed=seed))
                       is not None]
                rows.append({"model": name, "sparsity": pct(sp), "pruned": len(select_heads(s, sp)),
                             "zero-score heads": int((s == 0).sum()), "index tie-break": round(base, 2),
                             "random seeds": len(rnd),
                             "random tie-break mean": round(float(np.mean(rnd)), 2) if rnd else None,
                             "min": round(min(rnd), 2) if rnd else None, "max": round(max(rnd), 2) if rnd else None})
        table = pd.DataFrame(rows)
        return Table(table, self.caption("MP-G tie-break sensitivity."), ties_reading(table))

    def zero_ties(self, scores: pd.DataFrame, methods: list[str], sparsities: list[float]) -> Table:
        """:func:`zero_ties_frame` of these models: where exact-zero scores decide a cell of Table I."""
        table = zero_ties_frame(scores, self.models, methods, sparsities)
        return Table(table, self.caption("Where exact-zero scores decide a cell of Table I: the cut falls inside the "
                                         "zero-score tie when fewer heads are cut than score 0."),
                     zero_ties_reading(table))

    # -- section 8
    def efficiency(self, records: dict) -> Table:
        """``{model: efficiency record}``: heads, parameters, attention FLOPs
        and prefill time of the dense, zeroed and removed models, speed-ups against dense."""
        rows = []
        for name, rec in records.items():
            res = rec["result"]
            dense = res["dense"]
            for state, r in timed(res).items():
                row = {"model": name, "model state": state if state == "dense" else f"{r['mode']} {r['sparsity']:.0%}",
                       "heads": r["heads"], "params (M)": r["params"] / 1e6,
                       "nonzero params (M)": r["nonzero_params"] / 1e6,
                       "attention FLOPs vs dense": r["attention_flops"] / dense["attention_flops"]}
                for b in rec["config"]["batches"]:
                    row[f"prefill b={b} (ms)"] = 1000 * r[f"prefill_b{b}"]["median_s"]
                    # the claims' definition: the geometric mean of the per-round ratios (paired by round)
                    row[f"speed-up b={b}"] = speed_ratio(dense[f"prefill_b{b}"]["times_s"],
                                                         r[f"prefill_b{b}"]["times_s"]).estimate
                rows.append(row)
        if not records:
            return Table(pd.DataFrame(rows),
                         f"**Efficiency.** Profile `{self.profile}`: not run (no efficiency model).")
        c, res = next(iter(records.values()))["config"], next(iter(records.values()))["result"]
        caption = (f"**Efficiency: zeroed (Algorithm 1, shapes kept) against physically removed heads.** "
                   f"{LABEL[c['method']]} heads, {c['dtype']}, {c['seqlen']} tokens, median of {c['repeats']} prefill "
                   f"passes timed round-robin on {label(res.get('machine') or {})} (where the record was timed: `repro run --retime` "
                   f"times it on this machine); profile `{self.profile}`.")
        table = pd.DataFrame(rows).round(3)
        return Table(table, caption, efficiency_reading(table))

    # -- sections 9 and 10
    def claims(self, frame: pd.DataFrame, sparsities, z_values, z_sparsities, cost: pd.DataFrame | None = None,
               efficiency: dict | None = None, zeroshot: list[dict] | None = None,
               glue: pd.DataFrame | None = None, calibration: str = "") -> Table:
        """The claims checked (:func:`mpg_claims`; the frame of :func:`repro.claims.claims_frame`, effects kept) on
        this session's cells, the scoring ``cost``, the ``{model: efficiency record}``, and Table III's: on the
        fine-tuned encoder's frame ``glue`` (:func:`repro.papers.mpg.glue.glue_claims`) where it ran, else on the
        zero-shot records (:func:`downstream_claims`)."""
        groups = {n: group_size_of(e) for n, e in self.experiments.items()}
        uniform = {n: e.uniform_ppl for n, e in self.experiments.items()}
        found = mpg_claims(frame, self.models, sparsities, z_values, z_sparsities, groups, cost,
                           {n: r["result"] for n, r in (efficiency or {}).items()}, uniform) + \
            (glue_claims(glue, sparsities, self.p.glue_methods) if glue is not None and len(glue)
             else downstream_claims(zeroshot or []))
        claims = claims_frame(with_sources(with_paper(found, PAPER_EFFECTS), PAPER_SOURCES))
        caption = (f"**Claims checked.** Profile `{self.profile}`; models {', '.join(self.models)} on "
                   f"{self.p.data}; verdicts by one rule from paired 95% intervals (details in the notebook)."
                   + (f" Calibration-based head scores at {calibration}." if calibration else ""))
        return Table(claims, caption)

    # -- section 11
    def summary(self, main: pd.DataFrame, claims: Table, table4: Table, mha: Table | None = None) -> str:
        """'What the results say' (:func:`.readings.summary_reading`) from Table I's cells ``main``, the claims,
        Table IV and, when they ran, the MHA encoders' claims."""
        return summary_reading(main, claims.frame, table4.frame, {n: e.windows() for n, e in self.experiments.items()},
                               self.p.data, None if mha is None else mha.frame)
