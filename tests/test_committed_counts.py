"""Counts come from the claims table: in every committed notebook, the metrics line, the claims page's section
headers and the claims table itself count the same rows by kind (a summary that counted rows of another claim, or
verdicts across kinds, failed here)."""
import json
import re
from pathlib import Path

import pandas as pd
import pytest

from repro.claims import KINDS, kind_counts

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = {"01_mpg_head_pruning": "01_mpg", "02_ogas_unstructured": "02_ogas", "03_bandit_pruning": "03_bandit"}


def metrics_line(notebook: str) -> dict:
    """The executed notebook's metrics (its last printed JSON line with verdicts)."""
    nb = json.loads((ROOT / "notebooks" / f"{notebook}.ipynb").read_text())
    lines = [line for c in nb["cells"] for o in c.get("outputs", []) if o.get("name") == "stdout"
             for line in "".join(o.get("text", "")).splitlines() if line.startswith("{") and '"verdicts"' in line]
    return json.loads(lines[-1])


@pytest.mark.parametrize("notebook", NOTEBOOKS)
def test_the_metrics_line_and_the_claims_page_count_the_claims_table(notebook):
    claims = pd.read_csv(ROOT / "figures" / NOTEBOOKS[notebook] / "claims.csv")
    counts = kind_counts(claims)
    m = metrics_line(notebook)
    assert m["n_claims"] == len(claims) and m["verdicts"] == counts
    page = (ROOT / "figures" / NOTEBOOKS[notebook] / "claims.md").read_text()
    shown = {k.lower(): int(n) for k, n, total in re.findall(r"\*\*([A-Za-z ]+)\*\* \((\d+) of (\d+) rows\)", page)
             if int(total) == len(claims)}
    assert shown == {k: (sum(v.values()) if isinstance(v, dict) else v) for k, v in counts.items()}
    assert set(shown) <= set(KINDS)
