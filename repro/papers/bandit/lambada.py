"""Why loss-searched Gemma selections lower LAMBADA perplexity: the numbers the investigation reads (its prose:
:func:`.readings.lambada_reading`), from the committed check (``benchmarks/gemma_lambada_check.py`` ->
``benchmarks/results/gemma_lambada_check.json``: dense and single-head masks through the same lm-eval path,
paired over documents) and from the notebook's selection records (how often each head is selected)."""
from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pandas as pd

from repro.methods.bandit import SELECTORS


def read_check(path: str | Path) -> dict | None:
    """A committed check's result (this one's, or the layer-scale measurements' that :mod:`.rescale` reads), or
    None where the file is absent (a fresh clone keeps it; a user's own run may not have made it)."""
    path = Path(path)
    return json.loads(path.read_text()) if path.is_file() else None


def head_counts(frame: pd.DataFrame, model: str) -> tuple[Counter, int]:
    """How many of ``model``'s loss-searched head selections (every sequential selector, seed and ratio of
    ``frame``) include each (layer, head), and how many selections there are."""
    runs = frame[(frame.model == model) & (frame.kinds == "head") &
                 frame.method.isin(SELECTORS.names(sequential=True))]
    counts = Counter((layer, index) for units in runs.units for _, layer, index in units)
    return counts, len(runs)


def lambada_changes(frame: pd.DataFrame, model: str, head) -> tuple[list[float], list[float]]:
    """The LAMBADA perplexity change (%) against dense of ``model``'s loss-searched head selections, split
    into those that include ``head`` and those that do not."""
    rows = frame[frame.model == model]
    dense = rows[rows.method == "dense"].lambada_ppl
    runs = rows[(rows.kinds == "head") & rows.method.isin(SELECTORS.names(sequential=True))]
    if dense.empty or "lambada_ppl" not in runs:
        return [], []
    change = 100 * (runs.lambada_ppl / dense.iloc[0] - 1)
    has = runs.units.map(lambda units: any((layer, index) == head for _, layer, index in units))
    return change[has].dropna().tolist(), change[~has].dropna().tolist()
