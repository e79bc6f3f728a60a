"""What each of notebook 1's tables shows, in one or two generated sentences (:class:`Readings`).

Every reader takes the table (or the raw frame) the notebook displays and returns Markdown bullets;
nothing here is typed by hand, so a rerun on other models or another profile reads its own numbers.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from repro.evaluate.zeroshot import CHANCE
from repro.report import column_reading
from repro.words import num


def _list(items: list[str], most: int = 6) -> str:
    return ", ".join(items[:most]) + (f" and {len(items) - most} more" if len(items) > most else "")


class Readings:
    """The readers, as static methods, so :class:`~repro.papers.mpg.tables.Tables` (``R``) offers them
    beside the tables they read."""

    @staticmethod
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

    @staticmethod
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

    @staticmethod
    def feeding_reading(pairs: dict[str, tuple[dict, dict]]) -> str:
        """Per model that requires ``<bos>``: how much worse its dense perplexity is without it."""
        from repro.evaluate.stats import paired_ratio

        lines = []
        for name, (on, off) in pairs.items():
            p = paired_ratio(off["result"]["window_nll"], on["result"]["window_nll"])
            lines.append(f"- **{name}**: plain windows give x{p.estimate:.2f} the perplexity it has with `<bos>` "
                         f"(worse on {p.n - p.n_better} of {p.n} windows): evaluated outside its input contract, "
                         "a dense model looks far worse than it is.")
        return "\n".join(lines)

    @staticmethod
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

    @staticmethod
    def table4b_reading(extra: pd.DataFrame) -> str:
        """How many first and second places each of our baselines would take in the paper's set."""
        return "- Added alone to the paper's set: " + "; ".join(
            f"{m} would take {int(r.best)} first and {int(r.second)} second places" for m, r in extra.iterrows()) + "."

    @staticmethod
    def table3_reading(zs: pd.DataFrame) -> str:
        """Per model and task (``zs``: :meth:`Tables.zeroshot_rows`): the dense value against chance and
        how many pruned cells lie outside the dense value's +-1.96 standard errors."""
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
                chance = CHANCE.get(task) if d.metric == "acc" else None
                note = (" (it never predicts the positive class)" if d.metric == "f1" and d.value == 0 else
                        f" (chance {chance:g}{', inside its interval' if abs(d.value - chance) <= half else ''})"
                        if chance is not None else "")
                parts.append(f"{task} {d.metric} {d.value:.3f}{note}, {out} of {len(pruned)} pruned cells differ from it by more "
                             "than 1.96 standard errors")
            lines.append(f"- **{model}** dense: " + "; ".join(parts) + ".")
        return "\n".join(lines)

    @staticmethod
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

    @staticmethod
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

    @staticmethod
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

    @staticmethod
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

    @staticmethod
    def table4_reading(table4: pd.DataFrame) -> str:
        """What Table IV shows: which methods have the most first places, and how many columns it counts."""
        firsts = table4["best"].astype(int)
        top = firsts[firsts == firsts.max()].index.tolist()
        return (f"- Most first places: {' and '.join(top)} ({firsts.max()} each, of {int(firsts.sum())} first places "
                "over Table I's columns); second places: "
                + ", ".join(f"{m} {int(v)}" for m, v in table4["second"].items() if v) + ".")
