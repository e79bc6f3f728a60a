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


def test_try_it_off_computes_nothing_and_shows_a_recorded_run(tmp_path, capsys):
    """With ``try_it`` off, a run without a record computes nothing; a run with one (the grid's ``exercises`` section
    computed it) is shown from its record, however the cell writes its values; on, other values compute and are
    recorded."""
    import pandas as pd

    from repro.engines.base import Setup
    from repro.engines.heads import HeadExperiment
    from repro.papers.exercises import Exercises
    from repro.report import Table
    from repro.store import Store

    params = {"profile": "cpu", "try_it": False, "models": ["tiny-llama"], "results_dir": str(tmp_path / "r"),
              "figures_dir": str(tmp_path / "f")}
    session = Session(params)
    called = []

    def count(exp, n: int = 2, values=(1, 2)) -> Table:
        called.append(n)
        return Table(pd.DataFrame({"n": [n], "total": [sum(values)]}), f"**Count.** {exp.name}", f"{n} counted")

    setup = Setup(data="wiki-sample", seqlen=16, max_windows=2, calib_data="wiki-sample", calib_nsamples=2, calib_seqlen=16)
    ex = Exercises(HeadExperiment("tiny-llama", setup, Store(tmp_path / "r"), progress=False), {"count": count},
                   [("count", {"n": 3})])
    assert session.try_it(ex, "count", seconds=5, n=3) is None and called == []  # no record yet: nothing computed
    ex.all_defaults()  # the section's default run
    assert called == [3]
    shown = session.try_it(ex, "count", seconds=5, n=3, values=[1, 2])  # the same run, its default written out
    assert called == [3] and shown.frame.total.tolist() == [3] and "3 counted" in shown.reading
    assert "when this run was computed" in capsys.readouterr().out
    live = Session({**params, "try_it": True})
    assert live.try_it(ex, "count", seconds=5, n=4).frame.n.tolist() == [4] and called == [3, 4]
    assert ex.stored("count", {"n": 4}) is not None  # a student's own values are recorded too
