"""Adding a paper is a short recipe (docs/extending.md): a fourth, toy paper (tests/toy_paper_src: one parameters
model, one section, one table, one claim) in a package outside repro is planned, computed, rendered and re-read by
the machinery the three papers use, with no file of repro changed."""
import json
import shutil
from pathlib import Path

import nbformat

from repro.jobs import Context, notebook_params, run_notebook
from repro.notebooks import default_parameters, execute, paper_module, read_source

SRC = Path(__file__).parent / "toy_paper_src"


def test_a_fourth_paper_plans_runs_and_renders_on_a_tiny_model(tmp_path, monkeypatch):
    for f in SRC.iterdir():
        if f.suffix == ".py":
            shutil.copy(f, tmp_path / f.name)
    monkeypatch.syspath_prepend(str(tmp_path))  # the kernel imports it from the notebook's folder, its cwd
    source = tmp_path / "40_toy.py"
    module = paper_module(source)
    assert default_parameters(read_source(source)) == module.Params.defaults()  # each default declared once
    profile = tmp_path / "toy.yaml"
    profile.write_text("notebooks:\n  40_toy: {max_windows: 20, results_dir: results, figures_dir: figures}\n")

    planned = Context(source, notebook_params(source, profile)).plan()
    assert sorted((j.call, j.args) for j in planned) == [("cell", ("magnitude", 0.5)), ("cell", ("wanda", 0.5)),
                                                         ("dense", ())]
    summary = run_notebook(source, profile)
    assert summary["batches"] == [3]  # one wave: the three cells, each once
    assert Context(source, notebook_params(source, profile)).plan() == []  # every record written and read back

    execute(source, tmp_path / "40_toy.ipynb", profile)  # what repro notebook does: renders from the records
    records = [json.loads(p.read_text()) for p in (tmp_path / "results" / "prune-ppl").glob("*.json")]
    assert {r["config"]["method"] for r in records} == {"dense", "magnitude", "wanda"}
    assert {r["config"]["max_windows"] for r in records} == {20}  # the profile's value reached the keys
    table = (tmp_path / "figures" / "table1.md").read_text()
    assert table.startswith("**Perplexity at 50% unstructured sparsity.** tiny-llama; profile `toy`; 3 of 3 cells read")
    claims = (tmp_path / "figures" / "claims.md").read_text()
    assert "Wanda beats magnitude" in claims

    executed = nbformat.read(str(tmp_path / "40_toy.ipynb"), as_version=4)
    shown = "".join(o.get("data", {}).get("text/markdown", "") for c in executed.cells for o in c.get("outputs", []))
    assert "prunes best" in shown and "Wanda beats magnitude" in shown
