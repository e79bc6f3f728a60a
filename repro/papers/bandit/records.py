"""Paper 3 (damage-aware bandit pruning) records as frames: one row per evaluated cell, with its
selection's search statistics. Reads records only (no model is run).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from repro.engines.bandit import LAMBADA
from repro.engines.base import owned
from repro.methods.bandit import SELECTORS, UCB_C, Unit
from repro.store import Store

MAB = ("ucb", "thompson")  # the bandit selectors (greedy is the sequential baseline they are compared with)
LABELS = SELECTORS.labels(dense="Dense")
MAB_VS_GREEDY = "MAB degrades perplexity less than budgeted greedy"
SETTING = ["model", "kinds", "ratio"]
CELL = SETTING + ["method"]


# ---- frames: one row per evaluated cell ------------------------------------------------------

def _keep(rows: list[dict], memory: str, search: dict | None = None, join: str = "posterior",
          c: float = UCB_C) -> pd.DataFrame:
    """The rows of the MAB searches run with ``memory`` (``repro.methods.bandit``: "persist", the
    default, "step" or "carry"), for MAB-TS the ``join`` rule and for MAB-UCB the exploration constant
    ``c``, and every other row (dense, baselines: they have none of these); with ``search``, only the
    sequential searches run with its budget and pool."""
    want = None if search is None else (search.get("budget"), search.get("pool_size"))
    return pd.DataFrame([r for r in rows if r["memory"] in (None, memory) and r["join"] in (None, join)
                         and r["c"] in (None, c) and (want is None or r["search"] is None or r["search"] == want)])


def bandit_frame(store: Store, experiments, session: bool = True, memory: str = "persist",
                 search: dict | None = None, join: str = "posterior", c: float = UCB_C) -> pd.DataFrame:
    """One row per evaluated cell (dense included) of ``experiments`` (a list or ``{name:
    BanditExperiment}``); ``session``: only the cells asked for in this session; ``memory``, ``search``,
    ``join`` and ``c``: which sequential searches (:func:`_keep`)."""
    selections = {r["key"]: r for r in store.records("bandit-select")}
    rows = []
    for r, e in owned(store, "bandit-ppl", experiments, session):
        cfg, res = r["config"], r["result"]
        lam = (res.get("lambada") or {}).get("tasks", {}).get(LAMBADA)
        rows.append({"key": ("bandit-ppl", r["key"]), "model": e.name, "method": cfg["method"],
                     "selection": cfg.get("selection"),
                     **_selection_fields(selections.get(cfg.get("selection"), {})),
                     "ppl": res["ppl"], "window_nll": res["window_nll"],
                     "lambada_ppl": None if lam is None else lam["metrics"]["perplexity"]["value"],
                     "lambada_acc": None if lam is None else lam["metrics"]["acc"]["value"],
                     "lambada_per_doc": None if lam is None else lam["per_doc"],
                     "finite": bool(np.isfinite(res["ppl"]))})
    return _keep(rows, memory, search, join, c)


def vision_frame(store: Store, experiments, session: bool = True, memory: str = "persist",
                 search: dict | None = None, join: str = "posterior") -> pd.DataFrame:
    """One row per evaluated vision cell (dense included) of ``experiments`` (a list or ``{name:
    VisionBanditExperiment}``); ``memory``, ``search`` and ``join`` as in :func:`bandit_frame`."""
    selections = {r["key"]: r for r in store.records("bandit-select")}
    rows = []
    for r, e in owned(store, "bandit-vision", experiments, session):
        c, res = r["config"], r["result"]
        rows.append({"key": ("bandit-vision", r["key"]), "model": e.name, "method": c["method"],
                     **_selection_fields(selections.get(c.get("selection"), {})),
                     "top1": res["top1"], "ce": res["ce"], "per_image_ce": res["per_image_ce"],
                     "per_image_correct": res["per_image_correct"]})
    return _keep(rows, memory, search, join)


def _selection_fields(sel: dict) -> dict:
    """The frame columns a cell takes from its selection record (empty record: the dense cell)."""
    sc, sr = sel.get("config", {}), sel.get("result", {})
    memory = sc["params"]["memory"] if sc.get("method") in MAB else None
    seq = sc.get("method") in SELECTORS and SELECTORS[sc["method"]].sequential
    search = (sc["params"].get("budget"), sc["params"].get("pool_size")) if seq else None
    return {"kinds": "+".join(sc.get("kinds", [])) or "dense", "ratio": sc.get("ratio", 0.0), "k": sc.get("k", 0),
            "candidates": sc.get("candidates"), "seed": sc.get("seed"), "units": sr.get("units"),
            "budget": sr.get("budget"), "pulls": sr.get("pulls"), "rewards": sr.get("rewards"),
            "damages": sr.get("damages"), "pulled": sr.get("pulled"), "scores": sr.get("scores"),
            "memory": memory, "search": search,
            "join": sc["params"]["join"] if sc.get("method") == "thompson" else None,
            "c": sc["params"]["c"] if sc.get("method") == "ucb" else None,
            "tau": sc["params"].get("tau") if seq else None}


def unit_of(name: str) -> Unit:
    """The :class:`Unit` a selection record names by ``str(unit)`` (its ``scores`` keys, its pulls):
    ``Unit("mlp", 17, 26)`` from ``"mlp17.26"``."""
    return Unit.of(name)


def stale_picks(units, pulled) -> float:
    """The share of a sequential run's joined units that had no pull in the step they joined (under
    the mask they joined): 0 by construction for ``memory="step"``; what carry-over allows."""
    if not units or not pulled:
        return np.nan
    return float(np.mean([f"{u[0]}{u[1]}.{u[2]}" not in step for u, step in zip(units, pulled)]))


def first_run(frame: pd.DataFrame, model: str, method: str, kinds: str, ratio: float):
    """The row of ``method``'s lowest seed in the setting (model, kinds, ratio); None if it did not run."""
    run = frame[(frame.model == model) & (frame.method == method) & (frame.kinds == kinds) & (frame.ratio == ratio)]
    return run.sort_values("seed").iloc[0] if len(run) else None


def head_maps(frame: pd.DataFrame, shapes: dict[str, tuple[int, int]]) -> dict[str, tuple[np.ndarray, int]]:
    """Per model, how many times each (layer, head) was selected by the sequential searches
    (seeds and ratios pooled), with the number of seeds. ``shapes``: (layers, heads) per model."""
    runs = frame[(frame.kinds == "head") & frame.method.isin(SELECTORS.names(sequential=True))]
    out = {}
    for model, f in runs.groupby("model"):
        grid = np.zeros(shapes[model])
        for units in f.units:
            for _, layer, index in units:
                grid[layer, index] += 1
        out[model] = (grid, f.seed.nunique())
    return out


# ---- per-cell tables -------------------------------------------------------------------------

def signature(units) -> str:
    """One string per distinct set of selected units (two seeds of a deterministic selector, e.g.
    magnitude, select the same units: one comparison with dense, not one per seed)."""
    return ";".join(sorted("{}.{}.{}".format(*u) for u in units or []))


LOWER_IS_BETTER = ("change_pct", "top1_drop_pp", "ce", "lambada_change_pct")
