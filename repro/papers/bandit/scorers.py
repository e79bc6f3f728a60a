"""The one-shot scorers worked on one real layer, from their selection records: magnitude, Taylor and Fisher score
every candidate once on the unmasked model (their records keep every unit's score) and take the k lowest.

- magnitude: the L2 norm of the unit's weights, :math:`\\lVert W_u \\rVert_2`;
- Taylor: the first-order change of the mean calibration loss when the unit's weights are zeroed,
  :math:`|\\sum_{w \\in u} g_w w|`, g the gradient of the mean loss over the calibration mini-batches;
- Fisher: the same product per mini-batch b, squared, then summed, :math:`\\sum_b (\\sum_{w \\in u} g_{b,w} w)^2`
  (the diagonal-Fisher estimate of the loss's second-order change).

:func:`layer_scores` puts the three side by side on the layer where Fisher's selection and the bandit's differ
most; :func:`reach` measures how much of each scorer's selection lies where the seed-matched MAB-UCB search could
not look: units it never pulled, outside the magnitude pool's reach (the k + P - 1 lowest norms).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from repro.papers.bandit.records import LABELS, unit_of

SCORERS = ("magnitude", "taylor", "fisher")


def _run(frame: pd.DataFrame, model: str, kinds: str, ratio: float, method: str, seed) -> pd.Series | None:
    f = frame[(frame.model == model) & (frame.kinds == kinds) & (frame.ratio == ratio) & (frame.method == method)
              & (frame.seed == seed)]
    return f.iloc[0] if len(f) else None


def _names(units) -> set[str]:
    """A selection's units as their record names ("mlp17.26", as the scores and pulls name them)."""
    return {f"{u[0]}{u[1]}.{u[2]}" for u in units or []}


def reach(frame: pd.DataFrame, bandit: str = "ucb") -> pd.DataFrame:
    """Per setting (model, unit kind, ratio) and scorer: the share of the scorer's k units that the seed-matched
    ``bandit`` search never pulled (mean over seeds), and the share beyond the pool's reach (ranked past the k + P - 1
    lowest norms, where no pool of P could take them)."""
    rows = []
    for (model, kinds, ratio), f in frame.groupby(["model", "kinds", "ratio"], sort=False):
        runs = f[f.method == bandit]
        mag = f[f.method == "magnitude"]
        if not len(runs) or not len(mag) or mag.scores.iloc[0] is None:
            continue
        norms = pd.Series(mag.scores.iloc[0]).sort_values(kind="stable")  # lowest norm first: the pool's order
        pool = int(runs.search.iloc[0][1])
        for method in ("taylor", "fisher", "wanda"):
            unpulled, beyond = [], []
            for seed in sorted(set(runs.seed)):
                own, run = _run(f, model, kinds, ratio, method, seed), _run(f, model, kinds, ratio, bandit, seed)
                if own is None or run is None or not own.units:
                    continue
                chosen, k = _names(own.units), len(own.units)
                pulled = {u for step in run.pulled for u in step}
                reachable = set(norms.index[:k + pool - 1])
                unpulled.append(len(chosen - pulled) / k)
                beyond.append(len(chosen - reachable) / k)
            if unpulled:
                rows.append({"model": model, "units": kinds, "ratio": ratio, "scorer": LABELS[method],
                             f"never pulled by {LABELS[bandit]}": float(np.mean(unpulled)),
                             "beyond the pool's reach": float(np.mean(beyond)), "seeds": len(unpulled)})
    return pd.DataFrame(rows)


def layer_scores(frame: pd.DataFrame, model: str, kinds: str, ratio: float, seed, layer: int | None = None,
                 bandit: str = "ucb") -> pd.DataFrame:
    """One layer's candidates (``layer``; default: the layer holding most of Fisher's selection) with each scorer's
    score, its rank among all candidates (1: the first selected) and whether it selects the unit, and whether the
    seed-matched ``bandit`` search pulled it and selected it."""
    runs = {m: _run(frame, model, kinds, ratio, m, seed) for m in (*SCORERS, bandit)}
    if any(r is None for r in runs.values()) or any(runs[m].scores is None for m in SCORERS):
        return pd.DataFrame()
    if layer is None:
        layer = pd.Series([u[1] for u in runs["fisher"].units]).mode().iloc[0]
    pulled = {u for step in runs[bandit].pulled for u in step}
    rows = {}
    for m in SCORERS:
        s = pd.Series(runs[m].scores)
        rank = s.rank(method="first").astype(int)
        chosen = _names(runs[m].units)
        for name, v in s.items():
            if unit_of(name).layer == layer:
                row = rows.setdefault(name, {"unit": name})
                row[LABELS[m]], row[f"{LABELS[m]} rank"] = v, int(rank[name])
                row[f"{LABELS[m]} selects"] = name in chosen
    out = pd.DataFrame(list(rows.values()))
    out[f"{LABELS[bandit]} pulled"] = out.unit.isin(pulled)
    out[f"{LABELS[bandit]} selects"] = out.unit.isin(_names(runs[bandit].units))
    return out.sort_values(f"{LABELS['fisher']} rank", ignore_index=True)


def reach_reading(t: pd.DataFrame) -> str:
    """What the reach table shows: how much of Fisher's selection the bandit never pulled, and why (beyond the
    pool's reach), per setting."""
    if not len(t):
        return ""
    col = next(c for c in t.columns if c.startswith("never pulled"))
    lines = []
    for _, r in t[t.scorer == LABELS["fisher"]].iterrows():
        unpulled, beyond = r[col], r["beyond the pool's reach"]
        lines.append(f"- **{r.model}, {r.units} {r.ratio:.0%}**: {unpulled:.0%} of Fisher's units were never pulled by "
                     f"the seed-matched {col.removeprefix('never pulled by ')} search, {beyond:.0%} lie beyond the "
                     "pool's reach (no pool of this size could offer them): where Fisher beats the bandit, it does so "
                     "with units the magnitude pre-screen never let the bandit measure, so the comparison weighs the "
                     "pre-screen as much as the search.")
    return "\n".join(lines)


def layer_reading(t: pd.DataFrame) -> str:
    """What the layer table shows: how many of the layer's candidates each scorer selects, and how many of them the
    bandit pulled and selected."""
    if not len(t):
        return ""
    sel = {c.removesuffix(" selects"): int(t[c].sum()) for c in t.columns if c.endswith(" selects")}
    pulled = next(c for c in t.columns if c.endswith(" pulled"))
    bandit = pulled.removesuffix(" pulled")
    fisher_only = t[t[f"{LABELS['fisher']} selects"] & ~t[pulled]]
    return (f"Of this layer's {len(t)} candidates, " + ", ".join(f"{k} selects {v}" for k, v in sel.items() if k != bandit)
            + f"; {bandit} pulled {int(t[pulled].sum())} of them and selected {sel.get(bandit, 0)}. "
            f"{len(fisher_only)} of Fisher's picks here were never pulled by the search, so its damage measurements say "
            "nothing about them.")
