"""Section 2b: Table 1's searches at the paper's own setting (issue 63). The paper's language-model searches make 32
paired evaluations per step over a low-magnitude pool of 48 (budgeted greedy: 32 trials); the ``cpu`` profile's make 8
over 16, with their losses in bfloat16. ``paper_search`` runs MAB-UCB, MAB-TS, budgeted greedy and greedy with memory
again at the paper's budget and pool with float32 losses, on the same models, windows and seeds, and the notebook shows
their Table 1 rows, their claims, and whether each verdict of the scaled setting survives.
"""
from __future__ import annotations

import pandas as pd

from repro.claims import claims_frame, with_paper, with_sources
from repro.papers.bandit.claims import PAPER_EFFECTS, PAPER_SOURCES, bandit_claims
from repro.papers.bandit.tables import lm_summary
from repro.report import Table
from repro.survive import survival, survival_reading, unchanged_rows
from repro.words import unit_pct


def words(p) -> str:
    """The paper-setting search in words: '32 paired evaluations per step over a pool of 48, losses in float32'."""
    ps = p.paper_search
    return f"{ps.budget} paired evaluations per step over a pool of {ps.pool_size}, losses in {ps.search_dtype}"


def scaled_words(p, dtypes: list[str]) -> str:
    """The profile's own search in words (``dtypes``: the precisions its searches' losses were computed in)."""
    return (f"{p.search.get('budget')} paired evaluations per step over a pool of {p.search.get('pool_size')}, losses "
            f"in {' and '.join(dtypes)}")


def table1(report, plm: pd.DataFrame, pframe: pd.DataFrame) -> Table:
    """Table 1's rows of the paper-setting searches (:func:`.tables.lm_summary`)."""
    t = lm_summary(plm, pframe) if len(plm) else pd.DataFrame()
    ps = report.p.paper_search
    return Table(t, report.caption(f"Table 1 at the paper's search: {words(report.p)}. Perplexity change against dense "
                                   "(mean and sd over seeds), LAMBADA perplexity and last-word accuracy change.",
                                   pframe, search=ps.search))


def claims(report, plm: pd.DataFrame) -> Table:
    """The claims that read these searches (:func:`.claims.bandit_claims` on their rows alone)."""
    frame = claims_frame(with_sources(with_paper(bandit_claims(plm), PAPER_EFFECTS), PAPER_SOURCES)) if len(
        plm) else claims_frame([])
    return Table(frame, f"**Claims at the paper's search** ({words(report.p)}; seeds {report.p.seeds}; profile "
                        f"`{report.p.profile}`): verdicts from 95% t intervals of the difference paired over seeds.")


def settings_of(plm: pd.DataFrame) -> set[str]:
    """The claims' setting prefixes ('smollm2-135m, mlp 5%') of the paper-setting rows."""
    return {f"{m}, {k} {unit_pct(r)}" for m, k, r in plm[["model", "kinds", "ratio"]].drop_duplicates().itertuples(
        index=False)} if len(plm) else set()


def survives(report, scaled: Table, paper: Table, plm: pd.DataFrame, dtypes: list[str]) -> Table:
    """Does each verdict of Table 1's claims survive the paper's search? The scaled rows of the claims and settings
    the paper-setting searches check, beside theirs (:func:`repro.survive.survival`)."""
    where = settings_of(plm)
    s = scaled.frame
    keep = s[s.claim.isin(set(paper.frame.claim)) & s.setting.map(lambda x: any(x.startswith(w) for w in where))] \
        if len(s) and len(paper.frame) else s.iloc[0:0]
    t = survival(keep, paper.frame)
    what = f"the paper's search ({words(report.p)})"
    return Table(t, f"**Does each verdict survive the paper's search?** The claims that read Table 1's searches at "
                    f"{scaled_words(report.p, dtypes)} and at {words(report.p)}, each by the same rule, on "
                    f"{', '.join(sorted(where))} (profile `{report.p.profile}`).",
                 survival_reading(t, unchanged_rows(keep, paper.frame), what))


def pending(report, dtypes: list[str]) -> str:
    """Where the profile's language-model searches run below the paper's setting: one generated line saying which
    rows are still at it, and whether section 2b holds the paper-setting searches; "" where they run at the paper's."""
    p = report.p
    fields = type(p).model_fields
    paper, dtype = fields["search"].default, fields["search_dtype"].default
    searched = {k: p.search.get(k) for k in ("budget", "pool_size")}
    if searched == paper and dtypes == [dtype]:
        return ""
    where = ("Section 2b holds the searches at the paper's setting for the settings it names, with the verdicts "
             "side by side" if p.paper_search is not None else
             "The searches at the paper's setting are being computed across sessions (`tools/paper_settings.sh`, "
             "section 2b once the profile names `paper_search`)")
    return (f"Not at the paper's search: this profile's language-model searches make {searched['budget']} paired "
            f"evaluations per step over a pool of {searched['pool_size']}, their losses in {' and '.join(dtypes)}; the "
            f"paper's make {paper['budget']} over {paper['pool_size']} ({dtype} here). Table 1, the claims below and the "
            f"README headline are at the profile's setting. {where}; the table 'What the pre-screen decides' (after "
            "section 5's vision table) shows what the smaller pool decides.")
