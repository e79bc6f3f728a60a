"""Does a verdict survive the paper's own setting? The claims of one notebook checked twice, by the same rule
(:func:`repro.claims.verdict`), once on the cells a profile scaled down to fit the machine and once on the same
comparisons at the paper's setting (its calibration size, its search budget and pool, its precision), side by side.

A row is a claim in a setting (the claims frame's ``claim`` and ``setting``); where one setting holds several rows
of one claim, they align in the order the claims function wrote them (the same function made both frames). Rows
whose measurement is the same text at both settings read no cell the setting changed: they are counted, not shown.
"""
from __future__ import annotations

import pandas as pd

ROW = ["claim", "setting"]
PAPER_VERDICT = "verdict, paper's setting"


def _aligned(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with ``nth``: the row's rank among the rows of its claim and setting."""
    f = frame.reset_index(drop=True).copy()
    f["nth"] = f.groupby(ROW, sort=False).cumcount()
    return f


def survival(scaled: pd.DataFrame, paper: pd.DataFrame) -> pd.DataFrame:
    """One row per claim whose measurement differs between the two claims frames (:func:`repro.claims.claims_frame`
    of the scaled and of the paper's setting): its verdict and measurement at each, and whether the verdict changed
    ("same", "changed", or "only scaled" / "only paper's" where one setting has no such row)."""
    a, b = _aligned(scaled), _aligned(paper)
    both = a.merge(b, on=[*ROW, "nth"], how="outer", suffixes=(" scaled", " paper"), indicator=True)
    rows = []
    for _, r in both.iterrows():
        if r["_merge"] == "both" and r["measured scaled"] == r["measured paper"]:
            continue
        status = {"left_only": "only scaled", "right_only": "only paper's"}.get(r["_merge"])
        if status is None:
            status = "same" if r["verdict scaled"] == r["verdict paper"] else "changed"
        rows.append({"claim": r["claim"], "setting": r["setting"], "verdict, scaled": r.get("verdict scaled"),
                     "measured, scaled": r.get("measured scaled"), "verdict, paper's setting": r.get("verdict paper"),
                     "measured, paper's setting": r.get("measured paper"), "survives": status})
    cols = ["claim", "setting", "verdict, scaled", "measured, scaled", "verdict, paper's setting",
            "measured, paper's setting", "survives"]
    return pd.DataFrame(rows, columns=cols).fillna("")


def unchanged_rows(scaled: pd.DataFrame, paper: pd.DataFrame) -> int:
    """How many rows read the same measurement at both settings (no cell the setting changes)."""
    a, b = _aligned(scaled), _aligned(paper)
    both = a.merge(b, on=[*ROW, "nth"], suffixes=(" scaled", " paper"))
    return int((both["measured scaled"] == both["measured paper"]).sum())


def survival_reading(t: pd.DataFrame, unchanged: int, what: str) -> str:
    """What the survival table shows, from its rows: how many verdicts that read a changed cell stay, which
    change (claim, setting: before -> after), and how many rows read no changed cell. ``what``: the paper's
    setting in words."""
    if t.empty:
        return f"No claim reads a cell that {what} changes ({unchanged} rows read the same measurement at both)."
    paired = t[t.survives.isin(["same", "changed"])]
    changed = paired[paired.survives == "changed"]
    text = (f"At {what}, {len(paired) - len(changed)} of the {len(paired)} verdicts that read a changed cell stay as "
            f"they were")
    if len(changed):
        text += f"; {len(changed)} change: " + "; ".join(
            f"*{r['claim']}* ({r['setting']}): {r['verdict, scaled']} -> {r[PAPER_VERDICT]}"
            for _, r in changed.iterrows())
    else:
        text += "; none changes"
    only = t[~t.survives.isin(["same", "changed"])]
    if len(only):
        text += (f". {len(only)} row(s) exist at one setting only (a cell computed at one of them: "
                 + "; ".join(f"*{r.claim}* ({r.setting}): {r.survives}" for _, r in only.iterrows()) + ")")
    return text + f". The other {unchanged} rows read the same measurement at both settings."
