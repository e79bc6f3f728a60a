"""Claims as a reader sees them: the frame, the Markdown table split by kind, the counts and the README line."""
from __future__ import annotations

from dataclasses import asdict

import numpy as np

from repro.claims.combine import once
from repro.claims.rule import (
    CONSTRUCTION,
    DECIDED,
    DEPENDS,
    FAILS,
    HOLDS,
    INCONCLUSIVE,
    KINDS,
    UNDERPOWERED,
    UNINFORMATIVE,
    Claim,
)

COLUMNS = ["claim", "source", "setting", "measured", "verdict", "kind", "flag", "why uninformative", "power", "n", "unit",
           "n for 80% power", "effect sized", "paper effect", "half-width", "effect", "ci", "threshold", "side", "paper",
           "log", "depends"]

def claims_frame(claims: list[Claim]):
    """Claims as a DataFrame (the columns a reader needs first, the numbers after), each comparison counted once
    (:func:`once`)."""
    import pandas as pd

    rows = []
    for c in once(list(claims)):
        need = c.sample_needed
        rows.append({**asdict(c), "kind": c.kind, "why uninformative": c.why_uninformative, "power": c.power,
                     "half-width": c.half_width, "paper effect": c.paper_effect,
                     "n for 80% power": None if need is None else need[0], "effect sized": None if need is None else need[1]})
    return pd.DataFrame(rows, columns=COLUMNS)


def _paper_effect(row) -> str:
    e = row["paper effect"]
    if e is None or e != e:
        return "no paper number"
    return f"{'x' if row['log'] else ''}{e:.3g} ({row['paper']})"


def _count(n, unit="") -> str:
    if n is None or n != n:
        return ""
    return f"{int(n)} {unit}" if isinstance(unit, str) and unit else str(int(n))


def _counts(f) -> list[str]:
    units = f["unit"] if "unit" in f else [""] * len(f)
    return [_count(n, u) for n, u in zip(f.n, units)]


POWER_NOTE = ("*n for 80% power*: the sample, in the row's units, that a two-sided 5% test would need to "
              "detect the effect named with the spread measured here. \"This sample sufficed\": the paper's "
              "effect would have shown, so the effect here is smaller than the paper's. A large multiple of "
              "this sample: the effect measured here is so close to the threshold that only a far larger "
              "sample could decide it.")


def claims_markdown(claims, caption: str = "") -> str:
    """A claims table (``claims``: :func:`claims_frame`) as Markdown split by kind of answer, at most six
    columns each, with the paper's sentences as numbered notes below: decided rows (verdict, the paper's
    effect, n, power), inconclusive rows (with the sample that would decide them at 80% power),
    uninformative rows (why) and rows true by construction."""
    import pandas as pd

    if not len(claims):
        return (caption.strip() + "\n\n" if caption else "") + "No claim checked in this run.\n"
    notes = list(dict.fromkeys(s for s in claims["source"] if isinstance(s, str) and s))
    mark = {s: f"[{i + 1}]" for i, s in enumerate(notes)}
    def claim(row):
        return f"{row['claim']} {mark[row['source']]}" if row["source"] in mark else row["claim"]
    def needed(row):
        need, n = row["n for 80% power"], row["n"]
        if need is None or need != need:
            return "not sizeable"
        unit = row.get("unit")
        text = f"{int(need):,}{' ' + unit if isinstance(unit, str) and unit else ''} ({row['effect sized']} effect"
        if n is None or n != n or not n:
            return text + ")"
        if need <= n:  # the effect sized would have been detected: an inconclusive row argues it is smaller
            return text + "): this sample sufficed"
        return text + f", {need / n:,.{0 if need >= 10 * n else 1}f}x this sample)"
    parts = [caption.strip()] if caption else []
    views = {
        DECIDED: lambda f: pd.DataFrame({"claim": f.apply(claim, axis=1), "setting": f.setting, "measured": f.measured,
                                         "verdict": [v + (f" ({'; '.join(x)})" if (x := [t for t in (
                                                         p if p == UNDERPOWERED else "", g) if t]) else "")
                                                     for v, p, g in zip(f.verdict, f.power, _flags(f))],
                                         "paper effect": f.apply(_paper_effect, axis=1), "n": _counts(f)}),
        INCONCLUSIVE: lambda f: pd.DataFrame({"claim": f.apply(claim, axis=1), "setting": f.setting,
                                              "measured": [m + (f" ({g})" if g else "") for m, g in
                                                           zip(f.measured, _flags(f))], "paper effect": f.apply(_paper_effect, axis=1),
                                              "n": _counts(f), "n for 80% power": f.apply(needed, axis=1)}),
        DEPENDS: lambda f: pd.DataFrame({"claim": f.apply(claim, axis=1), "setting": f.setting, "measured": f.measured,
                                         "verdict": f.verdict, "under each variant": f.depends, "n": _counts(f)}),
        UNINFORMATIVE: lambda f: _grouped(pd.DataFrame({"claim": f.apply(claim, axis=1), "setting": f.setting,
                                                        "measured": f.measured,
                                                        "why uninformative": f["why uninformative"],
                                                        "n": _counts(f)})),
        CONSTRUCTION: lambda f: pd.DataFrame({"claim": f.apply(claim, axis=1), "setting": f.setting,
                                              "measured": f.measured, "verdict": f.verdict}),
    }
    for kind in KINDS:
        f = claims[claims.kind == kind]
        if len(f):
            parts.append(f"**{kind.capitalize()}** ({len(f)} of {len(claims)} rows)\n\n" +
                         views[kind](f).to_markdown(index=False))
            if kind == INCONCLUSIVE:
                parts.append(POWER_NOTE)
    if notes:
        parts.append("What the paper says: " + " ".join(f"{mark[s]} {s}" for s in notes))
    return "\n\n".join(parts) + "\n"


def _spanned(settings) -> str:
    """Settings such as 'RTE, 12.5%, vs MP-G' and 'RTE, 25.0%, vs Random' said once: each comma-separated part's
    distinct values joined by ' / ' ('RTE, 12.5% / 25.0%, vs MP-G / vs Random'), where every setting has as many
    parts; else the distinct settings joined by '; '."""
    parts = [s.split(", ") for s in settings]
    if len({len(p) for p in parts}) != 1:
        return "; ".join(dict.fromkeys(settings))
    return ", ".join(" / ".join(dict.fromkeys(col)) for col in zip(*parts))


def _grouped(view):
    """Uninformative rows with one reason shown as one line (the claims they touch, the settings they span, how many
    comparisons): the reason, not the comparisons, is what a reader learns from them. The claims CSV keeps each row."""
    import pandas as pd

    rows = []
    for why, g in view.groupby("why uninformative", sort=False):
        if len(g) == 1:
            rows.append(g.iloc[0].to_dict())
            continue
        rows.append({"claim": "; ".join(dict.fromkeys(g.claim)), "setting": _spanned(list(g.setting)),
                     "measured": f"{len(g)} comparisons, one reason (each row in the claims CSV)",
                     "why uninformative": why, "n": "; ".join(dict.fromkeys(n for n in g.n if n))})
    return pd.DataFrame(rows, columns=view.columns)


def _flags(f) -> list[str]:
    return [g if isinstance(g, str) else "" for g in (f["flag"] if "flag" in f else [""] * len(f))]


SHOWN = ["claim", "paper says", "setting", "measured", "verdict", "power", "n", "paper effect", "half-width"]


def shown(claims):
    """The columns a claims table shows (``claims``: :func:`claims_frame`), the paper's effect with
    where it comes from, the half-width to three significant figures."""
    def paper(row):
        e = row["paper effect"]
        if e is None or e != e:
            return ""
        return f"{'x' if row['log'] else ''}{e:.3g} ({row['paper']})"
    def half(row):
        h = row["half-width"]
        if h is None or h != h:
            return ""
        return f"x{np.exp(h):.3g}" if row["log"] else f"{h:.3g}"
    said = claims["source"].map(lambda s: s if isinstance(s, str) and s else "—") if "source" in claims else ""
    out = claims.assign(**{"paper says": said,
                           "paper effect": claims.apply(paper, axis=1) if len(claims) else [],
                           "half-width": claims.apply(half, axis=1) if len(claims) else [],
                           "n": claims["n"].map(lambda n: "" if n is None or n != n else str(int(n)))})
    return out[SHOWN]


def underpowered(claims) -> str:
    """The discussion's list: '3 of 12 rows are underpowered: <claim> (<setting>); ...'."""
    u = claims[claims.power == UNDERPOWERED]
    known = claims[claims.power != "no paper number"]
    if not len(known):
        return "No row has a paper number to size its power against."
    head = f"{len(u)} of {len(known)} rows with a paper number are underpowered (interval wider than the paper's effect)"
    if not len(u):
        return head + "."
    return head + ": " + "; ".join(f"{c} ({s})" for c, s in zip(u.claim, u.setting)) + "."

def kind_counts(claims) -> dict:
    """A claims table's rows counted as it shows them: decided rows by verdict, the other kinds by kind
    (``{"decided": {"holds": 3, "does not hold": 1}, "inconclusive": 2, "uninformative": 1}``), so that a summary
    line never counts a row the table does not."""
    out: dict = {}
    for kind in KINDS:
        rows = claims[claims["kind"] == kind] if len(claims) else claims
        if len(rows):
            out[kind] = ({v: int(n) for v, n in rows.verdict.value_counts().items()} if kind == DECIDED
                         else int(len(rows)))
    return out


def count_verdicts(claims, prefix: str | tuple[str, ...]) -> str:
    """'holds: 2, inconclusive: 1' for the rows of a claims frame whose claim starts with ``prefix``; rows
    that are no verdict (uninformative, true by construction) are counted apart: '...; uninformative: 4'. A prefix
    that names more than one claim is refused: a summary line counts the rows of the claims it names, no others
    (a tuple of prefixes, one per claim, counts several together)."""
    for p in (prefix,) if isinstance(prefix, str) else prefix:
        named = claims.claim[claims.claim.str.startswith(p)].unique()
        if len(named) > 1:
            raise ValueError(f"{p!r} names {len(named)} claims ({'; '.join(named)}): a count must name one")
    c = claims[claims.claim.str.startswith(prefix)]
    kind = c["kind"] if "kind" in c else c.verdict.map(lambda _: DECIDED)
    answered = c[kind.isin([DECIDED, INCONCLUSIVE])]
    text = ", ".join(f"{v}: {k}" for v, k in answered.verdict.value_counts().items())
    other = ", ".join(f"{v}: {k}" for v, k in kind[~kind.isin([DECIDED, INCONCLUSIVE])].value_counts().items())
    return "; ".join(t for t in (text, other) if t) or "not run"


def headline(claims, claim: str) -> str:
    """One generated line for the README: how the rows of the paper's headline ``claim`` (rows whose
    claim starts with it, in ``claims``: a claims table as shown) came out, and the measurement of
    the first decided row (else the first row)."""
    rows = claims[claims["claim"].astype(str).str.startswith(claim)] if len(claims) else claims
    if not len(rows):
        return f"*{claim}*: not checked in this run."
    apart = rows["kind"].isin([UNINFORMATIVE, CONSTRUCTION, DEPENDS]) if "kind" in rows else rows["verdict"].isna()
    counts = rows[~apart]["verdict"].value_counts()
    others = rows[apart]["kind"].value_counts().items() if apart.any() else []  # not verdicts: counted apart
    said = ", ".join([f"{v} in {counts[v]}" for v in (HOLDS, FAILS, INCONCLUSIVE) if v in counts]
                     + [f"{k} in {n}" for k, n in others])
    decided = rows[~apart & rows["verdict"].isin([HOLDS, FAILS])]
    first = (decided if len(decided) else rows).iloc[0]
    return (f"*{rows['claim'].iloc[0]}*: {said} of {len(rows)} settings; e.g. {first['setting']}: "
            f"{first['measured']} ({first['verdict']}).")
