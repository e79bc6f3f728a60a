"""Paper 1's tables, each with its caption, from one notebook session's records (:class:`Tables`).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from repro.assets.machine import label
from repro.claims import (
    COLLAPSE,
    claims_frame,
    count_verdicts,
    fmt_ratio,
    shown,
    underpowered,
    with_paper,
    with_sources,
)
from repro.evaluate.speed import timed
from repro.evaluate.stats import paired_ratio, speed_ratio
from repro.methods.heads import select_heads
from repro.papers.mpg.claims import PAPER_EFFECTS, PAPER_SOURCES, downstream_claims, mpg_claims
from repro.papers.mpg.glue import glue_claims
from repro.papers.mpg.params import MpgParams
from repro.papers.mpg.readings import Readings
from repro.papers.mpg.records import (
    CALIBRATED,
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
    paired_vs,
    pct,
    ppl_frame,
    rank_counts,
    scores_frame,
    zeroshot_cells,
)
from repro.report import caption as caption_line
from repro.report import column_reading, fmt_ci, lm_setting, marked_table
from repro.words import and_join


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


class Tables(SessionTables, Readings):
    """Paper 1's tables of the language models, each returned with its caption (and, where the notebook saves raw
    numbers, the raw frame)."""

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
    def scoring_cost(self, scores: pd.DataFrame, methods: list[str]):
        """(table, caption, cost): what scoring each head took (its calibration pass included), the
        calibration it read and how many heads score exactly 0; ``cost`` keeps the method names."""
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
        cost = pd.DataFrame(rows)
        caption = (f"Scoring cost: each score record's own seconds, as measured on the machine that computed it (not "
                   f"this one), profile `{self.profile}`.")
        return cost.drop(columns="method").round(3), caption, cost

    # -- section 3
    def table1(self, main: pd.DataFrame, methods: list[str], sparsities: list[float]):
        """(marked table, caption, perplexities): Table I, best per column bold, second underlined."""
        vals = grid(main, "ppl", methods, self.models, sparsities)
        table = marked_table(vals, grid(main, "ci95", methods, self.models, sparsities), skip_rows=["Dense"])
        table.columns = [f"{m} @ {s}" for m, s in table.columns]
        levels = "/".join(f"{s * 100:g}" for s in sparsities)
        caption = self.caption(f"Table I. WikiText-2 validation perplexity (lower is better) at {levels}% head "
                               f"sparsity.{self.draws_note(main)}", [k for ks in main["keys"] for k in ks])
        if self.profile != "paper":
            caption += " The paper's models need the hub and a GPU: `paper` profile, not run here."
        return table, caption, vals

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

    def draw_spread(self, main: pd.DataFrame, sparsities: list[float]):
        """(table, caption): for every method drawn several times, each draw's perplexity per model and
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
        return table, caption

    @staticmethod
    def draw_spread_reading(table: pd.DataFrame) -> str:
        """Which drawn cell moves most between its draws."""
        if table.empty:
            return "Every method ran once here."
        w = table.loc[table["worst / best"].idxmax()]
        calm = (table["worst / best"] < 1.1).sum()
        return (f"The draw alone moves a cell by up to x{w['worst / best']:.2f} ({w.method}, {w.model} at "
                f"{w.sparsity}: {w['each draw']}); {calm} of {len(table)} drawn cells stay within x1.1 of their "
                "best draw.")

    def table1_reading(self, vals: pd.DataFrame) -> str:
        """What Table I shows, from its numbers: per model and sparsity the lowest perplexity (against dense)
        and where MP-G ranks; and how often a calibration-based score does worse than the one Random draw."""
        text = column_reading(vals, focus=LABEL["mpg"])
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

    def table2_reading(self, t2v: pd.DataFrame, what: str = "perplexity") -> str:
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

    def feeding(self, pairs: dict[str, tuple[dict, dict]]):
        """(table, caption): each model that requires ``<bos>`` evaluated dense with its rule and with
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
        return pd.DataFrame(rows), self.caption(
            "Feeding each model as it expects: dense perplexity with <bos> before every window (the family's rule, "
            "used everywhere here) and with plain windows (the SparseGPT / Wanda protocol).", keys)

    def paired(self, main: pd.DataFrame, sparsities: list[float], reference: str = "mpg"):
        """(table, caption): ``reference`` against every other method, paired over windows."""
        return paired_table(main, self.models, sparsities, reference), self.caption(
            f"Paired comparisons: {LABEL[reference]} / other method perplexity ratio, 95% paired bootstrap CI "
            "over windows.")

    def spread(self, scores: pd.DataFrame, methods: list[str], sparsity: float):
        """(table, caption): per model and method, the layers whose heads are all pruned at
        ``sparsity`` and the most heads taken from one layer (global ranking can empty a layer)."""
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
        return pd.DataFrame(rows), self.caption("Pruned heads per layer at the lowest sparsity.")

    # -- section 4
    def table2(self, frame: pd.DataFrame, z_values: list[float], z_sparsities: list[float],
               methods: list[str] = Z_METHODS):
        """(marked table, caption, perplexities): Table II, ``methods`` for every z (rows) on every
        model and sparsity (columns)."""
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
        return table, caption, vals

    # -- section 5
    def table4(self, vals: pd.DataFrame, methods: list[str]):
        """(table, caption): best / second-best counts of the paper's methods over Table I's columns."""
        rows = [LABEL[m] for m in PAPER_METHODS if m in methods]
        return rank_counts(vals.drop(index="Dense"), rows), self.caption(
            f"Table IV. Best / second-best counts among the paper's methods over {vals.shape[1]} columns of Table I.")

    def table4b(self, vals: pd.DataFrame, methods: list[str]):
        """(table, caption): the counts of each of our baselines, added alone to the paper's set."""
        rows = [LABEL[m] for m in PAPER_METHODS if m in methods]
        v = vals.drop(index="Dense")
        table = pd.concat([rank_counts(v, rows + [LABEL[m]]).loc[[LABEL[m]]] for m in EXTRA_METHODS if m in methods])
        names = and_join([LABEL[m] for m in EXTRA_METHODS])
        return table, self.caption(f"Table IVb (ours). Counts for {names}, each added alone to the paper's set.")

    # -- section 6
    def zeroshot_cells(self, main: pd.DataFrame, models: list[str], sparsities: list[float]) -> dict:
        """``{model: [(method, sparsity), ...]}`` of the Table III analogue, for ``models`` that are
        among the experiments (:func:`zeroshot_cells`)."""
        return {n: zeroshot_cells(main, n, sparsities) for n in models if n in self.experiments}

    def zeroshot_rows(self, records: list[dict]) -> pd.DataFrame:
        """One row per (record, task): each task's metric as the paper reports it (:data:`TABLE3_METRIC`;
        else accuracy, else the first metric), its lm-eval standard error and document count."""
        rows = []
        for rec in records:
            c = rec["config"]
            for task, r in rec["result"]["tasks"].items():
                metric = next(m for m in (TABLE3_METRIC.get(task), "acc", *r["metrics"]) if m in r["metrics"])
                v, se = r["metrics"][metric]["value"], r["metrics"][metric]["stderr"]
                rows.append({"model": c["model"]["name"], "method": LABEL[c["method"]],
                             "sparsity": pct(c.get("sparsity", 0.0)), "task": task, "metric": metric, "value": v,
                             "stderr": se, "shown": f"{v:.3f}" if se is None else f"{v:.3f} ± {1.96 * se:.3f}",
                             "n": r["n"], "key": ("heads-zeroshot", rec["key"])})
        return pd.DataFrame(rows)

    def table3(self, records: list[dict]):
        """(table, caption) of the zero-shot records (None, None without records): :meth:`zeroshot_rows`
        +- 1.96 lm-eval standard errors, per model, method and sparsity."""
        zs = self.zeroshot_rows(records)
        if zs.empty:
            return None, None
        zs["column"] = [t if m == "acc" else f"{t} ({m.upper() if m == 'f1' else m})" for t, m in zip(zs.task, zs.metric)]
        table = zs.pivot_table(index=["model", "method", "sparsity"], columns="column", values="shown", aggfunc="first")
        table.columns.name = "task"
        first = records[0]["config"]
        caption = (f"**Table III analogue (not the paper's setting).** Zero-shot accuracy, MRPC in F1 as the paper "
                   "reports it (lm-eval task YAMLs, "
                   f"validation splits, first {first['limit']} documents each; n per task: "
                   + ", ".join(f"{t} {n}" for t, n in zs.groupby("task").n.first().items())
                   + f"), {first['dtype']}, profile `{self.profile}`; ± 1.96 standard errors. "
                   f"{self.store.cache_summary(dict.fromkeys(zs.key))}.")
        return table, caption

    # -- section 7
    def ties(self, frame: pd.DataFrame, scores: pd.DataFrame, sparsities: list[float]):
        """(table, caption): MP-G with the index tie-break against the random tie-breaks of each
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
        return pd.DataFrame(rows), self.caption("MP-G tie-break sensitivity.")

    def zero_ties(self, scores: pd.DataFrame, methods: list[str], sparsities: list[float]):
        """(table, caption): where exact-zero scores decide a cell. Scores are non-negative, so the
        zero-score heads are cut first; when fewer heads are cut than score 0, *which* of them go is
        the tie-break's choice, not the score's."""
        rows = []
        for name in self.models:
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
        return pd.DataFrame(rows), self.caption("Where exact-zero scores decide a cell of Table I: the cut falls "
                                                "inside the zero-score tie when fewer heads are cut than score 0.")

    # -- section 8
    def efficiency(self, records: dict):
        """(table, caption) of ``{model: efficiency record}``: heads, parameters, attention FLOPs
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
            return pd.DataFrame(rows), f"**Efficiency.** Profile `{self.profile}`: not run (no efficiency model)."
        c, res = next(iter(records.values()))["config"], next(iter(records.values()))["result"]
        caption = (f"**Efficiency: zeroed (Algorithm 1, shapes kept) against physically removed heads.** "
                   f"{LABEL[c['method']]} heads, {c['dtype']}, {c['seqlen']} tokens, median of {c['repeats']} prefill "
                   f"passes timed round-robin on {label(res.get('machine') or {})} (where the record was timed: `repro run --retime` "
                   f"times it on this machine); profile `{self.profile}`.")
        return pd.DataFrame(rows).round(3), caption

    # -- sections 9 and 10
    def claims(self, frame: pd.DataFrame, sparsities, z_values, z_sparsities, cost: pd.DataFrame | None = None,
               efficiency: dict | None = None, zeroshot: list[dict] | None = None, glue: pd.DataFrame | None = None):
        """(table, caption, claims): the claims checked (:func:`mpg_claims`) on this session's cells,
        the scoring ``cost``, the ``{model: efficiency record}``, and Table III's: on the fine-tuned
        encoder's frame ``glue`` (:func:`repro.papers.mpg.glue.glue_claims`) where it ran, else on the
        zero-shot records (:func:`downstream_claims`); ``claims`` keeps the effects."""
        groups = {n: group_size_of(e) for n, e in self.experiments.items()}
        uniform = {n: e.uniform_ppl for n, e in self.experiments.items()}
        found = mpg_claims(frame, self.models, sparsities, z_values, z_sparsities, groups, cost,
                           {n: r["result"] for n, r in (efficiency or {}).items()}, uniform) + \
            (glue_claims(glue, sparsities, self.p.methods) if glue is not None and len(glue)
             else downstream_claims(zeroshot or []))
        claims = claims_frame(with_sources(with_paper(found, PAPER_EFFECTS), PAPER_SOURCES))
        caption = (f"**Claims checked.** Profile `{self.profile}`; models {', '.join(self.models)} on "
                   f"{self.p.data}; verdicts by one rule from paired 95% intervals (details in the notebook).")
        return shown(claims), caption, claims

    def summary(self, main: pd.DataFrame, claims: pd.DataFrame, table4: pd.DataFrame,
                mha: pd.DataFrame | None = None) -> str:
        """'What the results say', generated from the cells and the claims (Markdown bullets);
        ``mha``: the MHA encoders' claims frame (:meth:`MhaTables.claims`), when they ran."""
        models = self.models

        def n(prefix: str) -> str:
            return count_verdicts(claims, prefix)
        mpg_vs_mp = paired_vs(main, models[0], "mpg", "mp", 0.25)
        lines = [
            "- **Dense references.** " + "; ".join(f"{m}: {find(main, m, 'dense').ppl:.2f} ("
                                                  f"{self.experiments[m].windows()})" for m in models)
            + f" of {self.p.data}.",
            f"- **MP-G never collapses** (above {COLLAPSE:g}x dense): {n('MP-G never collapses')}.",
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
            f"{n('SparseGPT-Head is the most robust')}; MP-G beats Random there: {n('(beyond the paper) MP-G beats')}.",
            f"- **Efficiency:** zeroing at most 3.5% faster: {n('Zeroing heads')}; 8-16% fewer parameters at 50%: "
            f"{n('50% head sparsity removes')}; halved attention FLOPs: {n('50% head sparsity halves')}; "
            f"removal speeds up prefill: {n('(beyond the paper)')}. SmolLM2's 28M-parameter tied embedding and "
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
            def m(prefix: str) -> str:
                return count_verdicts(mha, prefix)
            lines.append("- **MHA encoders (beyond the paper's models; section 9):** MP-G reduces to MP for MHA: "
                         f"{m('MP-G reduces to MP')}; MHA models prefer z = 1.5: {m('MHA models prefer')}; MP-G best "
                         f"at every sparsity: {m('MP-G is best at every sparsity')} (rows per model and sparsity).")
        return "\n".join(lines)


# ---- claims ----------------------------------------------------------------------------------
