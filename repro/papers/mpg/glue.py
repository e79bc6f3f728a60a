"""Paper 1's Table III as the paper runs it (fine-tune, then prune) on an MHA text encoder: the records of
:mod:`repro.engines.glue` as a frame, the table, its claims and its reading (what it shows in words).
Reads records only.

Every number is over all of a task's examples, each scored once by the model of the fold that held it
out (the ``k`` folds of one fine-tuning seed), averaged over the fine-tuning seeds; a comparison is paired
over examples, an example keeping its label and every seed's predictions on both sides. A task informs a
comparison only where the dense model beats the trivial answer: the majority class for accuracy, always
answering 1 for F1 (MRPC's "equivalent", F1 about 0.81 there); otherwise its rows are uninformative.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from repro.claims import Claim, difference_claim
from repro.engines.base import owned
from repro.evaluate.stats import Paired, classification_metric, paired_metric_difference
from repro.methods.heads import HEAD_METHODS
from repro.papers.mpg.claims import identity
from repro.papers.mpg.records import LABEL, PAPER_METHODS, pct
from repro.papers.mpg.records import tie_break_only as tie_words
from repro.store import Store

TASK_LABEL = {"sst2": "SST-2", "mrpc": "MRPC", "rte": "RTE"}
# our controls (:attr:`repro.methods.registry.Method.ablation`): the method each changes, and the claim row
ABLATES = {"mpg-norm": ("mpg", "(ours) MP-G's exactly-0 heads ordered by their norm beat their index order")}


def glue_frame(store: Store, experiments, session: bool = True) -> pd.DataFrame:
    """One row per (task, fine-tuning seed, method, its z or Random seed, sparsity) whose ``k`` folds are
    all recorded: ``pred`` and ``labels`` over every example of the task (by example index), the heads
    pruned in each fold, the fine-tuning's last-epoch training loss; dense rows have method "dense"."""
    folds: dict[tuple, dict[int, dict]] = {}
    for r, e in owned(store, "heads-glue", experiments, session):
        c = r["config"]
        folds.setdefault((e.task, c["task"]["metric"], c["seed"], c["k"]), {})[c["fold"]] = r
    rows = []
    for (task, metric, seed, k), got in folds.items():
        if len(got) < k:
            continue
        res = [got[f]["result"] for f in range(k)]
        order = np.argsort(np.concatenate([r["test"] for r in res]))
        labels = np.concatenate([r["labels"] for r in res])[order]
        base = {"task": task, "metric": metric, "seed": seed, "k": k, "labels": labels,
                "train_loss": float(np.mean([r["train_losses"][-1] for r in res])),
                "finetune_seconds": float(sum(r["finetune_seconds"] for r in res)),
                "keys": tuple(("heads-glue", got[f]["key"]) for f in range(k))}
        rows.append({**base, "method": "dense", "param": None, "sparsity": 0.0, "n_pruned": 0, "pruned": [],
                     "pred": np.concatenate([r["dense"] for r in res])[order]})
        zeros = {}  # (method, param) -> heads scored exactly 0, mean over folds (a tie the index order breaks)
        for r in res:
            for c in r["cells"]:
                if "scores" in c:
                    zeros.setdefault((c["method"], c.get("z", c.get("seed"))), []).append(
                        int((np.asarray(c["scores"]) == 0).sum()))
        for i, cell in enumerate(res[0]["cells"]):
            cells = [r["cells"][i] for r in res]
            param = cell.get("z", cell.get("seed"))
            rows.append({**base, "method": cell["method"], "param": param, "sparsity": cell["sparsity"],
                         "n_pruned": len(cell["pruned"]), "n_heads": int(np.prod(res[0]["shape"])),
                         "zero_scores": float(np.mean(zeros.get((cell["method"], param), [np.nan]))),
                         "pruned_layers": np.bincount([p[0] for c in cells for p in c["pruned"]],
                                                      minlength=res[0]["shape"][0]).tolist(),
                         "pruned": [sorted(map(tuple, c["pruned"])) for c in cells],
                         "pred": np.concatenate([c["pred"] for c in cells])[order]})
    return pd.DataFrame(rows)


def trivial(metric: str, labels) -> tuple[float, str]:
    """The trivial answer's value and name (:func:`trivial_answer`): the majority class's accuracy, or always-1's F1."""
    return (float(classification_metric(metric, labels, trivial_answer(metric, labels))),
            "always 1" if metric == "f1" else "majority class")


def method_preds(frame: pd.DataFrame, task: str, method: str, sparsity: float, param=None) -> list[np.ndarray]:
    """The predictions of ``method`` (every Random seed, every fine-tuning seed) on ``task``: one array each."""
    f = frame[(frame.task == task) & (frame.method == method) & np.isclose(frame.sparsity, sparsity)]
    if param is not None:
        f = f[f.param == param]
    elif method in HEAD_METHODS and "z" in HEAD_METHODS[method].params and len(f):
        f = f[f.param == 2.0]
    return list(f.pred)


def dense_preds(frame: pd.DataFrame, task: str) -> list[np.ndarray]:
    """The dense model's predictions on ``task``, one array per fine-tuning seed."""
    return method_preds(frame, task, "dense", 0.0)


def metric_of(frame: pd.DataFrame, task: str, preds: list[np.ndarray]) -> float:
    """``task``'s metric averaged over ``preds`` (one array per seed or draw)."""
    t = frame[frame.task == task].iloc[0]
    return float(np.mean([classification_metric(t.metric, t.labels, p) for p in preds]))


def versus(frame: pd.DataFrame, task: str, a: tuple, b: tuple) -> Paired | None:
    """``metric(a) - metric(b)`` on ``task``, paired over its examples; ``a``, ``b``: (method, sparsity[, param])."""
    pa, pb = method_preds(frame, task, *a), method_preds(frame, task, *b)
    if not pa or not pb:
        return None
    t = frame[frame.task == task].iloc[0]
    return paired_metric_difference(t.metric, t.labels, pa, pb)


def trivial_answer(metric: str, labels) -> np.ndarray:
    """The trivial answer's predictions: the majority class everywhere (accuracy), or 1 everywhere (F1)."""
    labels = np.asarray(labels)
    return np.full_like(labels, 1 if metric == "f1" else int(np.bincount(labels).argmax()))


def dense_speaks(frame: pd.DataFrame, task: str) -> str:
    """"" where the dense model beats the trivial answer on ``task`` (the paired 95% interval of their
    difference over examples lies above 0); else why the task cannot inform a comparison of pruned models."""
    t = frame[(frame.task == task) & (frame.method == "dense")].iloc[0]
    value, name = trivial(t.metric, t.labels)
    dense = dense_preds(frame, task)
    p = paired_metric_difference(t.metric, t.labels, dense, trivial_answer(t.metric, t.labels))
    if p.ci[0] > 0:
        return ""
    seeds = f" (mean of {len(dense)} fine-tuning seeds)" if len(dense) > 1 else ""
    return (f"the fine-tuned dense model does not beat the trivial answer on {TASK_LABEL.get(task, task)}: "
            f"{t.metric} {100 * metric_of(frame, task, dense):.1f}{seeds} against {100 * value:.1f} "
            f"({name}), difference {100 * p.estimate:+.1f} [{100 * p.ci[0]:+.1f}, {100 * p.ci[1]:+.1f}] points")


def _cell(frame: pd.DataFrame, task: str, method: str, sparsity: float) -> str:
    preds = method_preds(frame, task, method, sparsity)
    if not preds:
        return ""
    t = frame[frame.task == task].iloc[0]
    values = [100 * classification_metric(t.metric, t.labels, p) for p in preds]
    d = versus(frame, task, (method, sparsity), ("dense", 0.0))
    spread = f" ({len(values)} draws: {min(values):.1f}-{max(values):.1f})" if method == "random" else ""
    return (f"{np.mean(values):.1f}{spread}; {100 * d.estimate:+.1f} [{100 * d.ci[0]:+.1f}, {100 * d.ci[1]:+.1f}]")


def table3(frame: pd.DataFrame, methods: list[str], sparsities: list[float]) -> pd.DataFrame:
    """Rows: dense, then (sparsity, method); one column per task: the metric (%) over all examples and the
    change against dense with its paired 95% interval (points). The dense row gives the trivial answer."""
    tasks = list(dict.fromkeys(frame.task))
    cols = {t: f"{TASK_LABEL.get(t, t)} {frame[frame.task == t].metric.iloc[0]}" for t in tasks}
    rows = []
    dense = {}
    for t in tasks:
        d = frame[(frame.task == t) & (frame.method == "dense")].iloc[0]
        value, name = trivial(d.metric, d.labels)
        dense[cols[t]] = (f"{100 * metric_of(frame, t, dense_preds(frame, t)):.1f} ({name} {100 * value:.1f}"
                          f"{'' if not dense_speaks(frame, t) else '; not above it'})")
    rows.append({"sparsity": "0%", "method": "Dense", **dense})
    for sp in sparsities:
        for m in methods:
            cells = {cols[t]: _cell(frame, t, m, sp) for t in tasks}
            if any(cells.values()):
                rows.append({"sparsity": pct(sp), "method": LABEL[m], **cells})
    return pd.DataFrame(rows)


def tie_break_only(mpg: pd.DataFrame, sparsity: float, z: float) -> str:
    """Why a row with MP-G's cell at (``sparsity``, ``z``) is evidence about its tie-break, not its scores
    (:func:`.records.tie_break_only`, the zero scores' mean over folds and seeds): MP-G's selection is that
    tie taken in index order; "" otherwise (``mpg``: one task's MP-G rows of the frame)."""
    f = mpg[np.isclose(mpg.sparsity.astype(float), sparsity) & np.isclose(mpg.param.astype(float), z)]
    if not len(f):
        return ""
    why = tie_words(z, f.zero_scores.mean(), int(f.n_heads.iloc[0]), int(f.n_pruned.iloc[0]))
    return why and why + " (section 6's norm-key row orders the same tie by norm)"


def glue_claims(frame: pd.DataFrame, sparsities: list[float], methods: list[str]) -> list[Claim]:
    """Table III's claim ("SparseGPT-Head is the most robust downstream"), per task and sparsity against
    each other paper method; (beyond the paper) MP-G against Random's draws; and the paper's MHA claims in
    this encoder's own quantity: MP-G's selections equal MP's (true by construction when g = 1), z = 1.5
    against the better other z. Differences are paired over the task's examples (points), uninformative
    where the dense model does not beat the trivial answer."""
    out = []
    for task in dict.fromkeys(frame.task):
        why, name = dense_speaks(frame, task), TASK_LABEL.get(task, task)
        metric = frame[frame.task == task].metric.iloc[0]
        mpg, mp = (frame[(frame.task == task) & (frame.method == m)] for m in ("mpg", "mp"))
        if len(mpg) and len(mp):
            both = mpg.merge(mp, on=["seed", "param", "sparsity"])
            differ = int(sum(a != b for x, y in zip(both.pruned_x, both.pruned_y) for a, b in zip(x, y)))
            cells = int(sum(len(x) for x in both.pruned_x))
            out.append(identity(Claim.check("MP-G reduces to MP for MHA: identical pruned heads", f"{name} (g = 1)",
                                            f"{differ} of {cells} (fold, z, sparsity) selections differ", differ,
                                            (differ, differ), 0.5, "below")))
        for sp in sparsities:
            rows = [("SparseGPT-Head is the most robust downstream (Table III)", ("sparsegpt-head", sp), (m, sp))
                    for m in PAPER_METHODS if m != "sparsegpt-head" and m in methods]
            rows.append(("(beyond the paper) MP-G beats Random on a fine-tuned MHA encoder", ("mpg", sp),
                         ("random", sp)))
            rows += [(claim, (m, sp), (of, sp)) for m, (of, claim) in ABLATES.items() if m in methods]
            zs = {z: classification_metric(metric, frame[frame.task == task].labels.iloc[0], p[0])
                  for z in sorted(set(mpg.param.dropna())) if (p := method_preds(frame, task, "mpg", sp, z))}
            if 1.5 in zs and len(zs) > 1:
                rival = max((z for z in zs if z != 1.5), key=zs.get)
                rows.append(("MHA models prefer z = 1.5", ("mpg", sp, 1.5), ("mpg", sp, rival)))
            for claim, a, b in rows:
                p = versus(frame, task, a, b)
                if p is None:
                    continue
                lab = [f"{LABEL[x[0]]}" + (f" z={x[2]:g}" if len(x) > 2 else "") for x in (a, b)]
                c = difference_claim(claim, f"{name}, {pct(sp)}, vs {lab[1]}", f"{metric} {lab[0]} - {lab[1]}",
                                     p.scaled(100), side="above", over="paired examples")
                same = p.ci == (p.estimate, p.estimate) and p.n_better == p.n_worse == 0
                tie = "" if claim in {c for _, c in ABLATES.values()} else next(
                    (t for x in (a, b) if x[0] == "mpg" and (t := tie_break_only(mpg, sp, x[2] if len(x) > 2 else 2.0))),
                    "")
                c.uninformative = why or ("both predict the same class on every example (identical answers)"
                                          if same else "") or tie
                out.append(c)
    return out


# ---- the reading ------------------------------------------------------------------------------------

def glue_reading(frame: pd.DataFrame, sparsities: list[float]) -> str:
    """Per task: whether the dense model speaks for it, and at each sparsity the best and worst method."""
    lines = []
    for task in dict.fromkeys(frame.task):
        why = dense_speaks(frame, task)
        d = frame[(frame.task == task) & (frame.method == "dense")].iloc[0]
        dense = dense_preds(frame, task)
        head = (f"- **{TASK_LABEL.get(task, task)}** (dense {d.metric} {100 * metric_of(frame, task, dense):.1f}"
                f" over {d.labels.size} examples{f', mean of {len(dense)} fine-tuning seeds' if len(dense) > 1 else ''}): ")
        if why:
            lines.append(head + why + "; its rows cannot rank the methods. " + _why_trivial(frame, task))
            continue
        parts = []
        for sp in sparsities:
            f = frame[(frame.task == task) & np.isclose(frame.sparsity, sp) & ~frame.method.isin(list(ABLATES))
                      & (frame.param.isna() | (frame.param == 2.0) | (frame.method == "random"))]
            vals = f.groupby("method").apply(lambda g: np.mean([classification_metric(d.metric, d.labels, p)
                                                                for p in g.pred]), include_groups=False)
            if len(vals):
                parts.append(f"at {pct(sp)} {' and '.join(LABEL[m] for m in vals.index[vals == vals.max()])} keeps "
                             f"the most ({100 * vals.max():.1f}), "
                             f"{' and '.join(LABEL[m] for m in vals.index[vals == vals.min()])} the least ({100 * vals.min():.1f})")
        lines.append(head + "; ".join(parts) + "." + _below_random(frame, task, sparsities))
    lines += _glue_ties(frame)
    return "\n".join(lines)


def _below_random(frame: pd.DataFrame, task: str, sparsities: list[float]) -> str:
    """Where MP-G (or its norm-key control) keeps less than Random's mean: where its value falls among Random's
    draws (each draw one random selection on one fine-tuning seed), which says whether it is worse than a random
    selection or one draw of their spread."""
    t = frame[frame.task == task].iloc[0]
    out = []
    for sp in sparsities:
        draws = [100 * classification_metric(t.metric, t.labels, p) for p in method_preds(frame, task, "random", sp)]
        for m in ("mpg", *ABLATES):
            preds = method_preds(frame, task, m, sp)
            if not preds or not draws:
                continue
            v = float(np.mean([100 * classification_metric(t.metric, t.labels, p) for p in preds]))
            if v < np.mean(draws):
                below = sum(d < v for d in draws)
                where = (f"more than {below} of its {len(draws)} draws ({min(draws):.1f}-{max(draws):.1f}): within "
                         "the spread of single random selections" if below else
                         f"less than every one of its {len(draws)} draws ({min(draws):.1f}-{max(draws):.1f})")
                out.append(f"{LABEL.get(m, m)} at {pct(sp)} ({v:.1f}) keeps less than Random's mean "
                           f"({np.mean(draws):.1f}), {where}")
    return (" Below Random: " + "; ".join(out) + ".") if out else ""


def _why_trivial(frame: pd.DataFrame, task: str) -> str:
    """Where the dense model does not beat the trivial answer on ``task``: how well it fits its training folds
    (last-epoch loss per fine-tuning seed) against its held-out metric per seed, and how often the dense and the
    pruned models give the trivial answer, so that a pruned value at or above dense reads as that answer's."""
    t = frame[frame.task == task]
    dense = t[t.method == "dense"]
    labels, metric = dense.labels.iloc[0], dense.metric.iloc[0]
    answer = int(trivial_answer(metric, labels)[0])
    n_train = round(labels.size * (dense.k.iloc[0] - 1) / dense.k.iloc[0])
    per_seed = ", ".join(f"{100 * classification_metric(metric, labels, p):.1f}" for p in dense.pred)
    losses = ", ".join(f"{v:.3f}" for v in dense.train_loss)
    share = {m: 100 * np.mean([np.mean(p == answer) for p in g.pred]) for m, g in t.groupby("method", sort=False)}
    pruned = {m: v for m, v in share.items() if m != "dense"}
    lo, hi = min(pruned, key=pruned.get), max(pruned, key=pruned.get)
    fits = ("it fits its training folds almost exactly without learning the task" if dense.train_loss.max() < 0.05
            else "what it learns from them does not carry to held-out examples")
    return (f"Why: the dense model's last-epoch training loss is {losses} (fine-tuning seed by seed, on about "
            f"{n_train} training examples) while it scores {per_seed} held out: {fits}. It gives the trivial answer ({answer}) on {share['dense']:.0f}% of the examples; the "
            f"pruned models, over their sparsities, on {pruned[lo]:.0f}% ({LABEL[lo]}) to {pruned[hi]:.0f}% ({LABEL[hi]}), so a pruned value "
            "near or above dense is that answer's, not a skill the pruning kept.")


def _glue_ties(frame: pd.DataFrame) -> list[str]:
    """How many heads MP-G scores exactly 0 at each z (mean over folds and fine-tuning seeds), and where at z = 2
    they are at least as many as it prunes: its selection is then the tie, broken by index (the lowest layers
    first), not a ranking; one line per sparsity it happens at. With the norm-key control (``mpg-norm``) in the
    frame, what ordering the tie by norm does to the metric, per task and sparsity."""
    f = frame[(frame.method == "mpg") & frame.param.notna()]
    if not len(f):
        return []
    n_heads = int(f.n_heads.iloc[0])
    per_z = f.groupby("param").zero_scores.mean()
    lines = ["- **Heads scoring exactly 0 under MP-G** (of " + str(n_heads) + ", mean over tasks, folds and seeds): "
             + ", ".join(f"z = {z:g}: {v:.1f}" for z, v in per_z.items()) + "."]
    at2 = f[f.param == 2.0]
    tied = [(sp, g) for sp, g in at2.groupby("sparsity") if g.zero_scores.mean() >= g.n_pruned.iloc[0]]
    if tied:
        n_tasks = at2.task.nunique()
        over = (f"the {n_tasks} tasks' folds" if n_tasks > 1 else "the task's folds") + (
            " and seeds" if at2.seed.nunique() > 1 else "")
        lines.append("- **Ties.** At z = 2 few of a head's rows pass mu + 2 sigma, so at " + ", ".join(
            f"{pct(sp)} ({g.n_pruned.iloc[0]} heads; pruned per layer over {over}: "
            f"{np.sum(list(g.pruned_layers), axis=0).tolist()})" for sp, g in tied)
            + " MP-G's selection is that tie broken by index, the lowest layers first, not a ranking of the heads.")
    for m, (of, _) in ABLATES.items():
        if m not in set(frame.method):
            continue
        parts, tasks = [], list(dict.fromkeys(frame.task))
        counted = [t for t in tasks if not dense_speaks(frame, t)]  # as the claims: where the dense model speaks
        for task in counted:
            for sp in sorted(set(frame[frame.method == m].sparsity)):
                a, b = (metric_of(frame, task, ps) if (ps := method_preds(frame, task, x, sp)) else np.nan
                        for x in (m, of))
                parts.append(f"{TASK_LABEL.get(task, task)} {pct(sp)} {100 * (a - b):+.1f}")
        left = [TASK_LABEL.get(t, t) for t in tasks if t not in counted]
        lines.append(f"- **{LABEL[m]}** against {LABEL[of]} (points, both at z = 2): " + "; ".join(parts or ["no task"])
                     + " (paired intervals in the claims)" + (f"; {' and '.join(left)} left out, where the dense model "
                                                             "does not beat the trivial answer" if left else "") + ".")
    return lines
