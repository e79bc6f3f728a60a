"""A bad parameter value is refused in one line naming it, before any model is loaded or cell computed
(each notebook's typed parameters check themselves when its grid is built: ``repro run`` and the notebook
build the grid first)."""
import re

import pytest

from repro.errors import ReproError, check_list
from repro.jobs import Context, notebook_params

from conftest import ROOT

SMOKE = ROOT / "notebooks/profiles/smoke.yaml"
NB = {p.stem[:2]: p for p in (ROOT / "notebooks").glob("[0-9]*.py")}
BAD = [
    ("01", {"sparsities": "abc"}, "parameter sparsities must be a list of numbers (the notebook's default is [0.125, 0.25, 0.5]), got 'abc'"),
    ("01", {"sparsities": [0.25, 1.5, -0.1]}, "parameter sparsities must be a list of numbers in [0, 1), got 1.5"),
    ("01", {"methods": ["mpg", "magic"]}, "unknown methods entry 'magic'"),
    ("01", {"efficiency_batches": [1, 0]}, "parameter efficiency_batches must be a list of integers >= 1, got 0"),
    ("01", {"zeroshot_limit": -3}, "parameter zeroshot_limit"),
    ("02", {"sparsity": 1.2}, "parameter sparsity"),
    ("02", {"curve_sparsities": [0.3, "0.5"]}, "parameter curve_sparsities must be a list of numbers"),
    ("02", {"methods": "wanda"}, "parameter methods must be a list of names (the notebook's default is ['magnitude', 'wanda', 'ria', 'sparsegpt', 'ogas']), got 'wanda'"),
    ("03", {"seeds": [1, -2]}, "parameter seeds must be a list of integers >= 0, got -2"),
    ("03", {"seeds": [1, 2.5]}, "parameter seeds must be a list of whole numbers"),
    ("03", {"unit_settings": {"tiny-llama": {"neurons": [0.1]}}}, "unknown unit kind in unit_settings 'neurons'"),
    ("03", {"unit_settings": {"tiny-llama": {"head": [1.0]}}}, "unit_settings['tiny-llama']['head']"),
    ("03", {"search": {"budget": 0, "pool_size": 4}}, "parameter search['budget']"),
    ("03", {"vision_ratio": float("nan")}, "parameter vision_ratio"),
    # issue 64: each of these ran (for minutes) before failing in a cell, failed without naming the parameter, or
    # dropped a table without a word
    ("01", {"zeroshot_models": ["tiny-bogus"]}, "parameter zeroshot_models names 'tiny-bogus', which is not in models"),
    ("01", {"efficiency_models": ["tiny-qwen2"]}, "parameter efficiency_models names 'tiny-qwen2', which is not in models"),
    ("01", {"zeroshot_tasks": ["bogus"]}, "unknown zeroshot_tasks entry 'bogus'"),
    ("01", {"glue_recipe": {"lr": "abc"}}, "parameter glue_recipe['lr'] must be a number > 0, got 'abc'"),
    ("01", {"glue_recipe": {"epochs": -1}}, "parameter glue_recipe['epochs'] must be a whole number > 0, got -1"),
    ("01", {"calib_seeds": [-1]}, "parameter calib_seeds must be a list of integers >= 0, got -1"),
    ("01", {"seqlen": 100000}, "parameter seqlen 100000 exceeds tiny-llama's 512 positions"),
    ("01", {"calib_seqlen": 100000}, "parameter calib_seqlen 100000 exceeds tiny-llama's 512 positions"),
    ("01", {"calib_nsamples": 0}, "calib_nsamples must be a positive integer, got 0"),
    ("01", {"paper_calib": {"calib_nsamples": 64}}, "parameter paper_calib['grad_nsamples'] is missing"),
    ("01", {"paper_calib": {"calib_nsamples": 64, "grad_nsamples": 32, "seed": 1}}, "parameter paper_calib must be"),
    ("01", {"paper_calib": {"calib_nsamples": 64, "grad_nsamples": 0}}, "parameter paper_calib['grad_nsamples']"),
    ("02", {"gamma_rule_models": ["tiny-bogus"]}, "parameter gamma_rule_models names 'tiny-bogus', which is not in models"),
    ("02", {"curve_models": ["tiny-qwen2"]}, "parameter curve_models names 'tiny-qwen2'"),
    ("02", {"c4_models": ["tiny-qwen2"]}, "parameter c4_models names 'tiny-qwen2'"),
    ("02", {"zeroshot_models": ["tiny-qwen2"]}, "parameter zeroshot_models names 'tiny-qwen2'"),
    ("02", {"zeroshot_tasks": ["bogus"]}, "unknown zeroshot_tasks entry 'bogus'"),
    ("02", {"exact_rounding_data": ["bogus"]}, "unknown exact_rounding_data entry 'bogus'"),
    ("02", {"wide_gamma_bounds": [4.0, 0.01]}, "parameter wide_gamma_bounds must be [low, high] with 0 < low < high"),
    ("02", {"wide_gamma_bounds": [1.0]}, "parameter wide_gamma_bounds must be [low, high]"),
    ("02", {"calib_seeds": [-1]}, "parameter calib_seeds must be a list of integers >= 0, got -1"),
    ("02", {"seqlen": 100000}, "parameter seqlen 100000 exceeds tiny-llama's 512 positions"),
    ("03", {"removal": {}}, "parameter removal must name model, method, seed, batches, repeats"),
    ("03", {"removal": {"model": "bogus-model", "method": "thompson", "seed": 1, "batches": [1], "repeats": 3}},
     "parameter removal names model 'bogus-model', which is not in models"),
    ("03", {"removal": {"model": "tiny-llama", "method": "thompson", "seed": 1, "batches": [0], "repeats": 3}},
     "parameter removal['batches'] must be a list of integers >= 1, got 0"),
    ("03", {"removal": {"model": "tiny-llama", "method": "thompson", "seed": 1, "batches": [1], "repeats": -1}},
     "parameter removal['repeats']"),
    ("03", {"search": {"budgett": 4}}, "unknown key of parameter search 'budgett'"),
]


@pytest.mark.parametrize("nb, override, message", BAD, ids=[f"{n}-{next(iter(o))}-{i}" for i, (n, o, _) in enumerate(BAD)])
def test_bad_values_are_refused_before_any_model_loads(monkeypatch, nb, override, message):
    monkeypatch.setenv("REPRO_NO_LOAD", "1")  # a load would raise a different error
    src = NB[nb]
    with pytest.raises(ReproError) as e:
        Context(src, notebook_params(src, SMOKE, override))
    assert message in str(e.value) and "REPRO_NO_LOAD" not in str(e.value)


def test_good_smoke_values_pass_the_checks():
    assert check_list("x", [0.0, 0.5], "number", 0.0, 1.0) == [0.0, 0.5]
    assert check_list("x", (1, 2), "integer", 0) == [1, 2]
    with pytest.raises(ReproError, match="got True"):
        check_list("x", [True], "integer", 0)  # a bool is not a count


@pytest.mark.parametrize("stem", sorted(p.stem for p in NB.values()))
def test_an_interactive_run_applies_the_profile_its_parameters_cell_names(capsys, stem):
    """Opened in JupyterLab (nothing injected), a notebook runs with profiles/<profile>.yaml, not its
    paper-scale defaults: every value the cpu profile sets reaches the globals, except one the user set by
    hand; one line says so, and 'This run' gets the defaults to compare with."""
    from repro.notebooks import apply_profile, default_parameters, load_profile, read_source

    src = NB[stem[:2]]
    defaults = default_parameters(read_source(src))
    profile = load_profile(ROOT / "notebooks/profiles/cpu.yaml", stem)
    by_hand = next(k for k, v in profile.items() if defaults.get(k) != v)  # a value the profile changes
    g = {**defaults, by_hand: "set by hand"}
    changed = apply_profile(g, stem, ROOT / "notebooks")
    assert by_hand not in changed and g[by_hand] == "set by hand"
    assert all(g[k] == v for k, v in profile.items() if k != by_hand)
    assert set(changed) == {k for k, v in profile.items() if k != by_hand and defaults.get(k) != v}
    assert g["_run"]["defaults"] == {k: defaults[k] for k in profile if k in defaults}
    assert "profile" in capsys.readouterr().out


def test_an_interactive_run_without_its_profile_says_so_and_changes_nothing(tmp_path, capsys):
    from repro.notebooks import apply_profile

    g = {"profile": "cpu", "seqlen": 1024}
    assert apply_profile(g, "01_mpg_head_pruning", tmp_path) == [] and g == {"profile": "cpu", "seqlen": 1024}
    assert "not found" in capsys.readouterr().out


@pytest.mark.parametrize("nb", sorted(NB))
def test_each_default_is_declared_once_and_the_parameters_cell_says_it(nb):
    """The notebook's parameters cell names exactly its paper's parameters model's fields, with the model's
    defaults: a default changed in one place only (or a parameter added to one) fails here."""
    from repro.notebooks import default_parameters, paper_module, read_source

    source = read_source(NB[nb])
    params = paper_module(NB[nb], source).Params
    cell = default_parameters(source)
    assert set(cell) == set(params.model_fields)
    assert cell == params.defaults()


def test_a_parameters_model_types_the_values_and_keeps_numbers_as_written():
    from repro.papers.bandit.params import BanditParams
    from repro.papers.mpg.params import MpgParams

    p = MpgParams.of({"sparsities": [0, 0.5], "max_windows": None, "spread": False, "not a parameter": 1})
    assert p.sparsities == [0, 0.5] and type(p.sparsities[0]) is int  # a key never changes by validation
    assert p.max_windows is None and p.spread is False and p.models == MpgParams.defaults()["models"]
    for bad, says in [({"spread": "false"}, "parameter spread must be true or false"),
                      ({"anatomy": "no"}, "parameter anatomy must be true or false"),
                      ({"models": "tiny-llama"}, "parameter models must be a list of names"),
                      ({"max_windows": 1.5}, "parameter max_windows must be a whole number or null"),
                      ({"calib_seeds": [0, "a"]}, "parameter calib_seeds must be a list of whole numbers (or null)"),
                      ({"results_dir": " "}, "parameter results_dir must name a folder")]:
        with pytest.raises(ReproError, match=f"^{re.escape(says)}"):
            MpgParams.of(bad)
    with pytest.raises(ReproError, match=r"^parameter memory_ablation must be true or false .* got 'yes'$"):
        BanditParams.of({"memory_ablation": "yes"})
    assert BanditParams.of({"memory": "step"}).ablation_memories() == ["carry"]
    assert BanditParams.of({"join_ablation": False}).ablation_join() is None
