"""The `lab` profile (a class period's cut of the real models): its values pass each notebook's checks, everything
it writes lands under `.cache/lab/`, its captions and its opening say it is a lab sample, and the cuts the issue
promised hold (one language model, float32, two seeds at least where a test across seeds needs them)."""
import subprocess

import pytest

from repro.jobs import PATH_PARAMS
from repro.notebooks import DEFAULT_PROFILE, Session, paper_module, run_parameters

from conftest import ROOT

LAB = ROOT / "notebooks/profiles/lab.yaml"
SOURCES = sorted((ROOT / "notebooks").glob("[0-9]*.py"))
WRITTEN = ("results_dir", "figures_dir")  # what a run writes besides the executed notebook (no README: below)


@pytest.mark.parametrize("src", SOURCES, ids=[s.stem for s in SOURCES])
def test_lab_values_pass_the_notebook_checks(src):
    params = run_parameters(src, LAB)  # every key one the notebook declares
    p = paper_module(src).Params.of(params, "lab profile: ")  # typed and range-checked, as a run does first
    assert p.profile == "lab" and p.eval_dtype == "float32" and p.try_it  # float32: fast on every CPU
    assert p.sample_label == "lab sample" and not p.update_readme
    assert p.models == ["smollm2-135m"]  # the real model, one of it


@pytest.mark.parametrize("src", SOURCES, ids=[s.stem for s in SOURCES])
def test_lab_writes_nothing_outside_cache_lab(src):
    params = run_parameters(src, LAB)
    lab = (ROOT / ".cache/lab").resolve()
    for key in WRITTEN:
        path = (ROOT / "notebooks" / params[key]).resolve()
        assert path.is_relative_to(lab), f"{key} = {params[key]} writes outside .cache/lab/"
    assert not params["update_readme"]  # the README and docs/results.md stay the committed ones
    assert set(WRITTEN) <= set(PATH_PARAMS)


def test_make_reproduce_lab_renders_under_cache_lab():
    """`make reproduce PROFILE=lab`'s commands, as make would run them (-n: printed, not run)."""
    out = subprocess.run(["make", "-n", "-o", "setup", "reproduce", "PROFILE=lab"], cwd=ROOT, capture_output=True,
                         text=True, check=True).stdout
    renders = [line for line in out.split(";") if "repro notebook" in line]
    assert renders and all("--out .cache/lab/notebooks/" in line for line in renders), renders
    assert "profiles/lab.yaml" in out


def test_a_lab_session_says_so_in_captions_and_at_the_top(tmp_path):
    import pandas as pd

    from repro.report import Table

    params = {"profile": "lab", "sample_label": "lab sample", "models": ["tiny-llama"],
              "results_dir": str(tmp_path / "r"), "figures_dir": str(tmp_path / "f")}
    session = Session(params)
    assert session.profile == "lab, lab sample"
    session.show(Table(pd.DataFrame({"a": [1]}), "**T.** tiny-llama; x."), "t")  # a caption without its profile
    assert "Profile `lab, lab sample`." in (tmp_path / "f" / "t.md").read_text()
    opening = session.opening()
    assert opening.startswith("**This run is a lab sample**") and f"`{DEFAULT_PROFILE}` profile's committed" in opening
    assert Session({**params, "sample_label": ""}).opening() == ""  # the reference run says nothing of the kind


def test_try_it_off_computes_nothing(tmp_path):
    session = Session({"profile": "cpu", "try_it": False, "models": ["tiny-llama"], "results_dir": str(tmp_path / "r"),
                       "figures_dir": str(tmp_path / "f")})
    called = []
    assert session.try_it(lambda: called.append(1), seconds=5) is None and called == []
