"""Prose a reader can trust: what a notebook's hand-written markdown may say without the records behind it.

Numbers (:func:`typed_numbers`) and data quantifiers (:func:`quantifiers`: "usually", "most of", "on both models"...)
typed in a markdown cell are what goes stale when the records change. A number may stand there only where it is not
a measurement of this run; a quantifier only where a test checks it against the committed tables (``tests/test_prose.py``
holds those checks, one per sentence)."""
from __future__ import annotations

import re

# ---- numbers typed in prose ------------------------------------------------------------------------
# A notebook's numbers come from records (generated Markdown) or from its parameters; a markdown cell may
# hold a number only where it is not a measurement of this run: an equation or code, a reference (Table 2,
# section 3, eq. 1), a name (WikiText-2, ViT-S/14, top-1), a quotation ("..."), a sentence that gives the
# paper's own number (it names the paper), a parameter's value, or one of a few constants of the method
# (0, 1, 2, 0.5, the 95% intervals, 80% power, a 5% test).
_MATH = re.compile(r"\$\$.*?\$\$|\$[^$]*\$", re.S)
_CODE = re.compile(r"```.*?```|`[^`]*`", re.S)
_LINK = re.compile(r"\]\([^)]*\)")
_QUOTE = re.compile(r'"[^"\n]*"|“[^”]*”')
_ENUMERATION = re.compile(r"\(\d+\)")
_REF = re.compile(r"\b(?:Tables?|Figures?|Fig\.|eqs?\.|equations?|[Ss]ections?|Algorithm|[Nn]otebooks?|Papers?|Appendix|"
                  r"steps?|[Ii]ssue)\s+[IVX0-9]+[a-z]?(?:\s*(?:-|–|,|and|or|/)\s*[IVX0-9]+[a-z]?)*")
_NUMBER = re.compile(r"(?<![\w.\-/])\d+(?:[.,]\d+)*%?(?![\w\-/])")
_SENTENCE = re.compile(r"(?<=[.;:!?])\s+(?=[A-Z(*])")
_PAPER = re.compile(r"\bpaper(?:'s|s)?\b", re.I)
CONSTANTS = frozenset({"0", "1", "2", "0.5", "95%", "80%", "5%"})


def parameter_numbers(*values) -> set[str]:
    """Every number in ``values`` (parameters, profiles: nested dicts and lists) as prose would write
    it: ``0.125`` and ``12.5%``, ``8``."""
    out: set[str] = set()

    def walk(v):
        if isinstance(v, bool):
            return
        if isinstance(v, (int, float)):
            out.update({f"{v:g}", f"{v * 100:g}%"})
        elif isinstance(v, dict):
            for k, x in v.items():
                walk(k)
                walk(x)
        elif isinstance(v, (list, tuple, set)):
            for x in v:
                walk(x)

    for v in values:
        walk(v)
    return out


def typed_numbers(nb, allowed: set[str] = frozenset()) -> list[tuple[int, str, str]]:
    """(cell index, number, sentence) for every number typed in a markdown cell of ``nb`` outside the
    places listed above (``allowed``: the notebook's parameter values, :func:`parameter_numbers`):
    a number that should have been generated from the records."""
    hits = []
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "markdown":
            continue
        text = _LINK.sub(" ", _CODE.sub(" ", _MATH.sub(" ", cell.source)))
        text = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith(("#", ">")))
        text = _ENUMERATION.sub(" ", _REF.sub(" ", _QUOTE.sub(" ", text)))
        for sentence in _SENTENCE.split(" ".join(text.split())):
            if _PAPER.search(sentence):
                continue
            for m in _NUMBER.finditer(sentence):
                number = m.group().rstrip(".,")
                if number not in CONSTANTS and number not in allowed:
                    hits.append((i, number, sentence.strip()))
    return hits


# ---- quantifiers typed in prose ---------------------------------------------------------------------
# Words that say how often or how much *in the results* ("usually", "most of", "on both models", "orders of
# magnitude"): each is a claim about the tables, and a test must check it (or the sentence must be generated).
QUANTIFIER = re.compile(r"\b(?:usually|mostly|most of|almost (?:all|always|every|none|no)\w*|a little|nearly|"
                        r"(?:on|for|in) both (?:dense )?models|both (?:dense )?models|orders? of magnitude|rarely|"
                        r"(?<!how )(?<!most )often|large share|in every (?:setting|cell|model|seed))\b", re.I)


def sentences(nb):
    """(cell index, sentence) of every markdown cell's prose (equations, code and links blanked out)."""
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "markdown":
            continue
        text = _LINK.sub(" ", _CODE.sub(" ", _MATH.sub(" ", cell.source)))
        for sentence in _SENTENCE.split(" ".join(text.split())):
            yield i, sentence.strip()


def quantifiers(nb, checked=()) -> list[tuple[int, str, str]]:
    """(cell index, quantifier, sentence) for every data quantifier in a markdown cell of ``nb`` whose sentence holds
    none of the ``checked`` phrases (the sentences a test checks against the tables)."""
    return [(i, m.group(), s) for i, s in sentences(nb) for m in QUANTIFIER.finditer(s)
            if not any(c in s for c in checked)]
