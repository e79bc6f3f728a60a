"""Rows joined to each other and to the paper: the paper's effect and words attached, a comparison judged across
the variants the notebook ran, each comparison counted once."""
from __future__ import annotations

import numpy as np

from repro.claims.rule import DECIDED, FAILS, HOLDS, INCONCLUSIVE, Claim


def with_paper(claims: list[Claim], effects: dict) -> list[Claim]:
    """Attach the paper's own effect to every claim whose statement starts with a key of ``effects``
    (``{statement prefix: (effect on the claim's scale, where the paper gives it)}``). A key may also be
    ``(statement prefix, text in the setting)`` for an effect the paper gives for one setting only (e.g. its
    C4 table); such a key wins over a plain prefix."""
    def matches(key, c: Claim) -> bool:
        prefix, where = key if isinstance(key, tuple) else (key, "")
        return c.claim.startswith(prefix) and where in c.setting

    order = sorted(effects, key=lambda k: not isinstance(k, tuple))  # setting-specific keys first
    for c in claims:
        hit = next((effects[k] for k in order if matches(k, c)), None)
        if hit is not None:
            c.paper_effect, c.paper = hit
    return claims


def with_sources(claims: list[Claim], sources: dict[str, str]) -> list[Claim]:
    """Attach to every claim whose statement starts with a key of ``sources`` the paper's own words it
    tests, with the section they come from (``{statement prefix: '§4.2: "..."'}``). A sentence in
    quotation marks is the paper's; one without is our paraphrase of where the paper says it (the
    paper modules say which). A claim with no entry keeps ``source == ""`` and shows "—"; a row
    beyond the paper says so in its source ("beyond the paper: ...")."""
    for c in claims:
        hit = next((v for k, v in sources.items() if c.claim.startswith(k)), None)
        if hit is not None:
            c.source = hit
    return claims


def across(claim: Claim, variants: dict[str, Claim], choice: str) -> Claim:
    """``claim`` (a comparison at the notebook's own value of ``choice``, a choice the paper does not fix: "S_max
    headroom", "calibration draw") judged again under each other value the notebook ran (``variants``: ``{label:
    the same comparison there}``, e.g. ``{"headroom 0.05": ...}``). Where the decided verdicts among them include
    both "holds" and "does not hold", the order is the choice's, not the method's: the row's verdict becomes
    "depends on <choice>" and :attr:`Claim.depends` lists each value's verdict and measurement, so its kind is
    *depends on a variant*. An inconclusive or uninformative variant flips nothing (it decides nothing); a row that
    no variant flips is returned unchanged."""
    decided = {label: c for label, c in variants.items() if c.kind == DECIDED}
    if claim.kind not in (DECIDED, INCONCLUSIVE) or not decided:
        return claim
    verdicts = {c.verdict for c in decided.values()} | ({claim.verdict} if claim.kind == DECIDED else set())
    if verdicts != {HOLDS, FAILS}:
        return claim
    claim.depends = "; ".join([f"this notebook's: {claim.verdict}"]
                              + [f"{label}: {c.verdict} ({c.measured})" for label, c in variants.items()])
    claim.verdict = f"depends on {choice}"
    return claim

def once(claims: list[Claim]) -> list[Claim]:
    """Each comparison counted once: a row whose measurement is another row's (the same effect up to its sign, the
    same interval mirrored, over the same sample: one comparison read by two claims) says which row it repeats and is
    not a second verdict (*uninformative*). Exact quantities (zero-width intervals) are left alone."""
    seen: dict[tuple, Claim] = {}
    for c in claims:
        if c.ci is None or c.effect is None or c.ci[0] == c.ci[1] or not all(np.isfinite([c.effect, *c.ci])):
            continue
        scale = np.log if c.log else float  # a ratio's mirror is its reciprocal
        key = (round(abs(scale(c.effect)), 12), tuple(sorted(round(abs(scale(v)), 12) for v in c.ci)), c.n, c.log)
        if key in seen and not c.uninformative:
            first = seen[key]
            c.uninformative = (f"the same comparison as the row *{first.claim}* ({first.setting}): one measurement, "
                               "counted there")
        seen.setdefault(key, c)
    return claims
