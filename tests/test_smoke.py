"""Each notebook end to end on the smoke profile (tiny random models), as `make reproduce` runs it: plan,
compute, render from the records. In a file of its own so that pytest-xdist's
per-file scheduling (make test) can run it beside the other slow files."""
import json
import math
import re

import pytest

from repro.jobs import run_notebook
from repro.notebooks import execute, load_profile

from conftest import ROOT

SOURCES = sorted((ROOT / "notebooks").glob("[0-9]*.py"))
# what each notebook's smoke run must write (tables as .md, figures as .png), and its first table
WRITES = {
    "01_mpg_head_pruning": ({"table1_ppl.md", "claims.md", "efficiency.md", "paired_vs_mpg.md", "feeding_bos.md",
                             "worked_layer_siblings.md", "gguf_roundtrip_heads.md",
                             "mpg_scores_heatmap.png", "mha_encoders.md", "mha_z_sweep.md", "claims_mha.md",
                             "table3_glue.md"},
                            "table1_ppl.md", "wikitext2:validation"),
    "02_ogas_unstructured": ({"table12_ppl.md", "table_nm.md", "table3_zeroshot_tiny-llama.md", "table5_ablation.md",
                              "rounding_worth.md", "claims.md", "fig2_energy_papr.png", "fig4_ppl_vs_sparsity.png",
                              "figure2_corners.md", "sparsegpt_first_block.md", "sparsegpt_vs_wanda.md",
                              "gamma_and_channel_sparsity_tiny-llama.png", "table12_paper_calibration.md",
                              "table12_calibration_size.md", "claims_survival.md", "gguf_roundtrip_magnitude.md"},
                             "table12_ppl.md", "wikitext2:test"),
    "03_bandit_pruning": ({"table1_lm.md", "table1_per_seed.md", "table_rewards.md", "table_unit_layers.md", "table_b1_budget.md",
                           "table_b2_statistics.md", "table2_vision.md", "table_removal.md", "claims.md", "table_memory_ablation.md", "fig_ppl_change_seeds.png", "fig_pulls_rewards.png",
                           "fig_head_map.png", "fig_vision_top1_drop.png", "table_allocation.md", "synthetic_arms.md",
                           "fig_synthetic_arms.png", "table_wide_budget.md", "table_wide_tests.md", "table_b2_tests.md",
                           "table_join_replay.md", "table_join_ablation.md", "table_join_vs_greedy.md",
                           "synthetic_refresh.md", "table_reward_spread.md", "table_timing.md",
                           "table_memory_allocation.md", "table_exploration.md", "table_precision_replay.md",
                           "table_magnitude_pool.md", "table_prescreen.md", "gguf_roundtrip_prescreen.md",
                           "fig_mab_minus_greedy_seeds.png", "table_scorers_reach.md", "table1_paper_search.md",
                           "table_prescreen_paper_search.md", "claims_paper_search.md", "survival_paper_search.md"},
                          "table1_lm.md", "wikitext2:test"),
}


# CI runs each notebook on one model, tiny-gemma3 (the family with a BOS and post-sublayer norms, so every
# section the notebooks have still runs, the Gemma-only ones included); `make reproduce PROFILE=smoke` and the
# profile's own runs keep both models. Names of per-model outputs follow the model.
G = "tiny-gemma3"
ONE_MODEL = {
    "01_mpg_head_pruning": {"models": [G], "model_settings": {G: {"calib_nsamples": 4, "tie_seeds": [0, 1]}},
                            "zeroshot_models": [G], "efficiency_models": [G],
                            # no dense pass over all 9k windows of the split: test_committed renders that section
                            # from the cpu profile's records, tests/test_experiments.py plans its cell
                            "spread": False, "glue_recipe": {"epochs": 1, "max_length": 32}},  # RTE pairs cut shorter
    "02_ogas_unstructured": {"models": [G], "ogas_setting": {G: "llama"},  # the gamma search and its figure
                             **{k: [G] for k in ("c4_models", "nm_models", "ablation_models", "curve_models",
                                                 "zeroshot_models")}},
    "03_bandit_pruning": {"models": [G], "unit_settings": {G: {"head": [0.25], "mlp": [0.25]}},
                          "seeds": [1, 2],  # the fewest the across-seed tests take (the profile: 3)
                          "ucb_c_ablation": {G: {"head": [0.2]}},  # sections 5e and 5f on the one model
                          "search_replay": [{"model": G, "kind": "head", "ratio": 0.25, "method": "ucb", "seed": 1}],
                          "removal": {"model": G, "method": "thompson", "seed": 1, "batches": [1], "repeats": 3},
                          "paper_search": {"budget": 6, "pool_size": 8, "methods": ["ucb", "greedy"],
                                           "unit_settings": {G: {"head": [0.25]}}}},  # section 2b
}


def test_every_notebook_has_a_smoke_expectation():
    assert {s.stem for s in SOURCES} == set(WRITES)


@pytest.mark.parametrize("src", SOURCES, ids=[s.stem for s in SOURCES])
def test_notebook_smoke(src, tmp_path):
    """``make reproduce``'s path (its default ``JOBS=1``): the plan's cells computed in this process, then the
    notebook renders from those records, computing nothing (the plan asked for every cell the notebook asks for).
    Worker processes are tests/test_jobs.py's and tests/test_jobs_processes.py's: here they would only add two
    more imports of torch and two more loads of each model (x3 the CPU time of the computation itself)."""
    profile = ROOT / "notebooks/profiles/smoke.yaml"
    params = {**load_profile(profile, src.stem), **ONE_MODEL[src.stem]}
    out = tmp_path / src.with_suffix(".ipynb").name
    overrides = {"results_dir": str(tmp_path / "results"), "figures_dir": str(tmp_path / "figures"),
                 "update_readme": False, **ONE_MODEL[src.stem]}
    summary = run_notebook(src, profile, jobs=1, threads=1, overrides=overrides)  # make test runs 2 files at once
    assert summary["cells"] > 0 and summary["retries"] == 0
    before = {p: p.stat().st_mtime_ns for p in (tmp_path / "results").rglob("*.json")}
    execute(src, out, profile, cwd=ROOT / "notebooks", log_output=False, overrides=overrides)
    after = {p: p.stat().st_mtime_ns for p in (tmp_path / "results").rglob("*.json")}
    assert after == before, "the notebook computed cells its plan did not list: " + \
        ", ".join(str(p.relative_to(tmp_path)) for p in set(after) - set(before) or after)
    executed = json.loads(out.read_text())
    assert "widgets" not in executed["metadata"]
    outputs = [o for c in executed["cells"] for o in c.get("outputs", [])]
    assert not [o for o in outputs if o["output_type"] == "error"]
    assert sum("image/png" in o.get("data", {}) for o in outputs) >= 3, "figures must show inline"
    assert not any("%|" in "".join(o.get("text", "")) for o in outputs), "progress residue left"
    last = executed["cells"][-1]["outputs"]
    text = "".join("".join(o.get("text", "")) for o in last if o.get("name") == "stdout")
    metrics = json.loads(text.strip().splitlines()[-1])
    assert set(metrics["dense_ppl"]) == set(params["models"])
    assert all(math.isfinite(v) for v in metrics["dense_ppl"].values())
    expected, first, data = WRITES[src.stem]
    expected = {name.replace("tiny-llama", G) for name in expected}
    figs = {p.name for p in (tmp_path / "figures").iterdir()}
    assert expected <= figs, sorted(expected - figs)
    table1 = (tmp_path / "figures" / first).read_text()
    assert "profile `smoke`" in table1 and data in table1
    cached = re.search(r"(\d+) of (\d+) cells read from cached records", table1)
    assert cached and cached[1] == cached[2], cached and cached[0]
