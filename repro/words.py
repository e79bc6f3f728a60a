"""The few words every generated sentence needs (no repro imports: any floor may use them)."""
from __future__ import annotations


def and_join(words: list[str]) -> str:
    """'A, B and C'."""
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def ordinal(n: int) -> str:
    """'1st', '2nd', '11th', '23rd'."""
    return f"{n}{'th' if 10 <= n % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"


def num(v: float) -> str:
    """A number as a sentence shows it: thousands grouped, else 3 significant digits, small ones to 2 decimals."""
    return f"{v:,.0f}" if abs(v) >= 1000 else f"{v:.3g}" if abs(v) >= 10 else f"{v:.2f}"


def unit_pct(ratio: float) -> str:
    """A share of units as a setting names it: ``0.05`` -> ``5%``, ``0.003`` -> ``0.3%`` (never rounded to ``0%``)."""
    return f"{float(ratio) * 100:.3g}%"


def short(v, width: int = 40) -> str:
    """``repr(v)``, cut to ``width`` characters (ending in '...') where longer."""
    text = repr(v)
    return text if len(text) <= width else text[:width - 3] + "..."
