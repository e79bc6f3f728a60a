"""Notebooks: each jupytext source runs end to end on the smoke profile with figures inline and no
widget state or progress residue; every committed .ipynb holds exactly its source's cells."""
import json

import nbformat
import pytest

from repro.errors import ReproError
from repro.notebooks import (
    clean,
    declared_parameters,
    in_sync,
    load_profile,
    read_source,
    run_parameters,
    tables_shown_twice,
)

from conftest import ROOT

SOURCES = sorted((ROOT / "notebooks").glob("[0-9]*.py"))
PROFILES = sorted((ROOT / "notebooks/profiles").glob("*.yaml"))
@pytest.mark.parametrize("src", SOURCES, ids=[s.stem for s in SOURCES])
def test_pair_in_sync(src):
    ipynb = src.with_suffix(".ipynb")
    assert ipynb.exists(), f"{ipynb.name} missing: run `make reproduce`"
    assert in_sync(src, ipynb), f"{ipynb.name} is out of sync with {src.name}: run `make reproduce`"
    nb = json.loads(ipynb.read_text())
    assert "widgets" not in nb["metadata"], "widget state committed"
    images = sum("image/png" in o.get("data", {}) for c in nb["cells"] for o in c.get("outputs", []))
    assert images > 0, "no figure shown inline"


def test_in_sync_detects_an_edit(tmp_path):
    src = SOURCES[0]
    edited = tmp_path / src.name
    edited.write_text(src.read_text().replace("## 1. The scores", "## 1. The scores (edited)"))
    assert not in_sync(edited, src.with_suffix(".ipynb"))


@pytest.mark.parametrize("src", SOURCES, ids=[s.stem for s in SOURCES])
def test_no_table_is_rendered_twice(src):
    """Each table of an executed notebook appears once (as Markdown), never again as the frame's HTML."""
    import nbformat

    nb = nbformat.read(str(src.with_suffix(".ipynb")), as_version=4)
    assert tables_shown_twice(nb) == []


def test_the_twice_check_can_fail():
    import nbformat

    md = nbformat.v4.new_output("display_data", data={"text/markdown": "| a |\n|---|\n| 1 |"})
    html = nbformat.v4.new_output("execute_result", data={"text/html": '<table class="dataframe">'}, execution_count=1)
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x", outputs=[md, html]),
                                         nbformat.v4.new_code_cell("y", outputs=[md])])
    assert tables_shown_twice(nb) == [0]


@pytest.mark.parametrize("src", SOURCES, ids=[s.stem for s in SOURCES])
def test_no_measurement_is_typed_in_prose(src):
    """Every number in a notebook's markdown cells is a parameter, a reference, a name, an equation, the
    paper's own number or a constant of the method: what a run measured is generated from its records."""
    from repro.notebooks import default_parameters, load_profile, read_source
    from repro.prose import parameter_numbers, typed_numbers

    nb = read_source(src)
    allowed = parameter_numbers(default_parameters(nb), *(load_profile(p, src.stem) for p in PROFILES))
    assert typed_numbers(nb, allowed) == []


def test_the_typed_number_check_can_fail():
    from repro.prose import typed_numbers

    cell = nbformat.v4.new_markdown_cell
    nb = nbformat.v4.new_notebook(cells=[
        cell("Masking it takes perplexity from 20.81 to 12.05 in 419 of 500 documents."),
        cell("Table 2 and section 3 (eq. 1) with $x = 3.5$ and `seqlen=256`: WikiText-2 on ViT-S/14, top-1, "
             "(4) an enumeration; the paper reports 7227 -> 282.8, \"its 8-16%\"; 95% intervals; a value of 8."),
        nbformat.v4.new_code_cell("ppl = 20.81")])
    hits = typed_numbers(nb, allowed={"8"})
    assert [(i, n) for i, n, _ in hits] == [(0, "20.81"), (0, "12.05"), (0, "419"), (0, "500")]


@pytest.mark.parametrize("profile", PROFILES, ids=[p.stem for p in PROFILES])
def test_profiles_name_only_declared_parameters(profile):
    for src in SOURCES:
        params = run_parameters(src, profile)  # raises on an unknown key
        assert params["profile"] == profile.stem and "models" in params  # shared keys + the notebook's section


def test_unknown_profile_key_is_an_error(tmp_path):
    p = tmp_path / "bad.yaml"
    p.write_text("profile: x\nmax_window: 3\nnotebooks:\n  01_mpg_head_pruning: {}\n")
    with pytest.raises(ReproError, match="unknown parameter.*max_window.*it declares:"):
        run_parameters(SOURCES[0], p)
    assert "max_windows" in declared_parameters(read_source(SOURCES[0]))
    p.write_text("profile: x\nnotebooks:\n  01_mpg_head_pruning: {max_window: 3}\n")
    with pytest.raises(ReproError, match="unknown parameter.*max_window"):
        run_parameters(SOURCES[0], p)
    with pytest.raises(ReproError, match="unknown parameter.*max_window"):  # overrides are checked the same way
        run_parameters(SOURCES[0], None, {"max_window": 3})


def test_profile_sections_are_per_notebook(tmp_path):
    p = tmp_path / "two.yaml"
    p.write_text("profile: x\nseqlen: 64\nnotebooks:\n  a: {seqlen: 32, models: [m]}\n  b: {models: [n]}\n")
    assert load_profile(p, "a") == {"profile": "x", "seqlen": 32, "models": ["m"]}  # the section wins
    assert load_profile(p, "b") == {"profile": "x", "seqlen": 64, "models": ["n"]}
    with pytest.raises(ReproError, match="no section for notebook 'c'"):
        load_profile(p, "c")


def test_clean_drops_widgets_and_progress_only():
    nb = nbformat.v4.new_notebook()
    nb.metadata["widgets"] = {"state": {}}
    cell = nbformat.v4.new_code_cell("x")
    cell.outputs = [
        nbformat.v4.new_output("display_data", data={"application/vnd.jupyter.widget-view+json": {}, "text/plain": "0%"}),
        nbformat.v4.new_output("stream", name="stderr", text="ppl:  50%|#####     | 1/2\rppl: 100%|##########| 2/2\n"
                                                              "a real warning\n"),
        nbformat.v4.new_output("stream", name="stdout", text="42% of heads\n"),
        nbformat.v4.new_output("display_data", data={"image/png": "iVBOR"}),
    ]
    nb.cells = [cell]
    out = clean(nb).cells[0].outputs
    assert "widgets" not in nb.metadata
    assert [o.output_type for o in out] == ["stream", "stream", "display_data"]
    assert out[0].text == "a real warning\n" and out[1].text == "42% of heads\n"


def test_clean_joins_a_cells_consecutive_prints_into_one_stream():
    """A slow cell's prints reach the notebook as one stream output or several, by timing: the committed notebook
    re-rendered elsewhere differed by that alone. Consecutive outputs of one stream are joined; others stay apart."""
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("x")
    cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text="a\n"),
                    nbformat.v4.new_output("stream", name="stdout", text="b\n"),
                    nbformat.v4.new_output("stream", name="stderr", text="w\n"),
                    nbformat.v4.new_output("stream", name="stdout", text="c\n"),
                    nbformat.v4.new_output("display_data", data={"image/png": "iVBOR"}),
                    nbformat.v4.new_output("stream", name="stdout", text="d\n")]
    nb.cells = [cell]
    out = clean(nb).cells[0].outputs
    assert [(o.output_type, o.get("name"), o.get("text")) for o in out] == [
        ("stream", "stdout", "a\nb\n"), ("stream", "stderr", "w\n"), ("stream", "stdout", "c\n"),
        ("display_data", None, None), ("stream", "stdout", "d\n")]


@pytest.mark.parametrize("name", ["01_mpg_head_pruning", "02_ogas_unstructured", "03_bandit_pruning"])
def test_every_section_of_the_grid_is_called_by_its_notebook(name):
    """A grid's ``sections`` are what ``repro run`` computes; a section the notebook never calls would compute
    cells nothing shows (and one the notebook calls outside the list would be missed by ``repro run``)."""
    import re

    from repro.notebooks import paper_module

    src = ROOT / "notebooks" / f"{name}.py"
    module = paper_module(src)
    grid_cls = next(v for v in vars(module).values() if isinstance(v, type) and getattr(v, "sections", None))
    text = src.read_text()
    called = set(re.findall(r"grid\.(\w+)\(", text))
    missing = [s for s in grid_cls.sections if s not in called]
    assert not missing, f"{name} never calls grid.{missing}"
