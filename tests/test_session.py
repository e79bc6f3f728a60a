"""What every notebook builds from its parameters (repro.notebooks.Session): the store, the figures
folder, each model's Setup with its own settings, experiments that share loaded models, and `show`."""
import pandas as pd
import pytest

from repro.engines.base import Experiment, Setup
from repro.engines.heads import HeadExperiment
from repro.errors import ReproError
from repro.notebooks import start
from repro.report import Table


def params(tmp_path, **over):
    p = {"profile": "test", "models": ["tiny-llama", "tiny-gemma3"], "results_dir": str(tmp_path / "results"),
         "figures_dir": str(tmp_path / "figures"), "recompute": False, "data": "wiki-sample", "seqlen": 32,
         "max_windows": 2, "calib_data": "wiki-sample", "calib_nsamples": 3, "calib_seqlen": 16,
         "model_settings": {"tiny-gemma3": {"max_windows": 1, "grad_nsamples": 2}}, "grad_nsamples": 3,
         "readme": str(tmp_path / "README.md"), "update_readme": True, "unrelated": object()}
    return {**p, **over}


def test_setup_takes_the_parameters_and_each_models_settings(tmp_path):
    nb = start(params(tmp_path))
    assert nb.figures.is_dir() and nb.profile == "test" and nb.store.root == tmp_path / "results"
    s = nb.setup()
    assert (s.data, s.seqlen, s.max_windows, s.calib_nsamples, s.calib_seed) == ("wiki-sample", 32, 2, 3, 0)
    assert nb.setup("tiny-gemma3", extra=("grad_nsamples",)).max_windows == 1  # the model's own setting wins
    assert nb.setup("tiny-llama", seqlen=16).seqlen == 16
    assert nb.setting("tiny-gemma3", "grad_nsamples") == 2 and nb.setting("tiny-llama", "grad_nsamples") == 3
    with pytest.raises(ReproError, match="unknown tiny-gemma3 setting key"):  # a key it may not set
        nb.setup("tiny-gemma3")


def test_unknown_model_in_settings_is_an_error(tmp_path):
    with pytest.raises(ReproError, match="model_settings model.*'tiny-gpt2'"):
        start(params(tmp_path, model_settings={"tiny-gpt2": {"max_windows": 1}}))


def test_experiments_apply_settings_and_share_loaded_models(tmp_path):
    nb = start(params(tmp_path))
    heads = nb.experiments(HeadExperiment, nb.params["models"], grad_nsamples=3, progress=False)
    assert heads["tiny-llama"].grad_nsamples == 3 and heads["tiny-gemma3"].grad_nsamples == 2
    assert heads["tiny-gemma3"].setup.max_windows == 1
    other = nb.experiments(Experiment, ["tiny-llama"], shared=heads, changes={"seqlen": 16}, progress=False)
    assert other["tiny-llama"].loaded is heads["tiny-llama"].loaded  # one copy of the weights
    assert other["tiny-llama"].setup == Setup(**{**vars(heads["tiny-llama"].setup), "seqlen": 16})


def test_show_saves_and_update_readme_replaces_blocks(tmp_path, capsys):
    nb = start(params(tmp_path))
    nb.show(pd.DataFrame({"a": [1.5]}, index=["x"]), "t1", "**Cap.**", raw=pd.DataFrame({"a": [1.4999]}))
    md = (tmp_path / "figures" / "t1.md").read_text()
    assert md.startswith("**Cap.**") and "| x " in md and "1.4999" in (tmp_path / "figures" / "t1.csv").read_text()
    assert md.splitlines()[0] == f"**Cap.** Profile `{nb.profile}`."  # a caption without its profile gets it
    nb.show(pd.DataFrame({"a": [1.5]}), "t2", "**Cap.** m; profile `x`.")
    assert (tmp_path / "figures" / "t2.md").read_text().splitlines()[0] == "**Cap.** m; profile `x`."  # once only
    (tmp_path / "README.md").write_text("a\n<!-- begin b -->\nold\n<!-- end b -->\nz\n")
    nb.update_readme({"b": "new"})
    assert (tmp_path / "README.md").read_text() == "a\n<!-- begin b -->\nnew\n<!-- end b -->\nz\n"
    off = start(params(tmp_path, update_readme=False))
    off.update_readme({"b": "newer"})
    assert "newer" not in (tmp_path / "README.md").read_text()


def test_show_takes_a_report_table_whole(tmp_path, monkeypatch):
    """A report's Table (frame, caption, reading, raw) is shown as its parts would be: caption on top, the raw
    numbers in the CSV, the reading displayed after the table."""
    import IPython.display

    shown = []
    monkeypatch.setattr(IPython.display, "display", lambda x: shown.append(x.data))
    nb = start(params(tmp_path))
    nb.show(Table(pd.DataFrame({"a": [1.5]}), "**Cap.**", "It reads 1.5.", pd.DataFrame({"a": [1.4999]})), "t3")
    assert (tmp_path / "figures" / "t3.md").read_text().splitlines()[0] == f"**Cap.** Profile `{nb.profile}`."
    assert "1.4999" in (tmp_path / "figures" / "t3.csv").read_text()
    assert shown[1:] == ["**What it shows.**\n\nIt reads 1.5."]


def test_each_generated_block_goes_to_the_file_that_holds_it(tmp_path, capsys):
    """The README holds the headline blocks, the results page the tables: each block lands where its
    markers are, and a block neither file holds is an error (never silently dropped)."""
    (tmp_path / "README.md").write_text("<!-- begin h -->\n<!-- end h -->\n")
    (tmp_path / "results.md").write_text("x\n<!-- begin t -->\nold\n<!-- end t -->\n")
    nb = start(params(tmp_path, results_page=str(tmp_path / "results.md")))
    nb.update_readme({"h": "headline", "t": "table"})
    assert (tmp_path / "README.md").read_text() == "<!-- begin h -->\nheadline\n<!-- end h -->\n"
    assert (tmp_path / "results.md").read_text() == "x\n<!-- begin t -->\ntable\n<!-- end t -->\n"
    with pytest.raises(ReproError, match="holds the block 'nope'"):
        nb.update_readme({"nope": "x"})
