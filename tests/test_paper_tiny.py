"""The `paper` profile's sections and hub ids end to end on a simulated hub (profile `paper-tiny`): every
notebook planned, computed (in this process; by two Ray workers for one of them) and rendered from the records, offline, with tiny random models
under the papers' own ids (tools/simulated_hub.py) and stand-in C4 and Imagenette (tools/simulated_data.py);
one notebook again through a local Ray instance. CI trims repeated dimensions (fewer models per notebook, one
MLP ratio, one GLUE task) so that it stays within minutes; `make reproduce PROFILE=paper-tiny` runs the whole
profile."""
from __future__ import annotations

import json

import pytest

from repro.jobs import Context, notebook_params, run_notebook
from repro.notebooks import execute, load_profile

from conftest import ROOT, load_tool

PROFILE = ROOT / "notebooks/profiles/paper-tiny.yaml"
PAPER = ROOT / "notebooks/profiles/paper.yaml"
SOURCES = sorted((ROOT / "notebooks").glob("[0-9]*.py"))
NB3_LMS = ["openai-community/gpt2"]  # the other families load and prune in tests/test_gpu_check.py
MISTRAL = "mistralai/Mistral-7B-v0.1"  # notebooks 1 and 2: one model family for both
# CI calibrates on the stand-in C4's train documents: tokenizing all of WikiText-2 train (the profiles' calibration
# text) takes ~20 s per tokenizer and worker; its loading is tests/test_data.py's, the sampling is the same code
CALIB = {"calib_data": "c4:train"}
TRIM = {  # CI only (minutes, not a quarter of an hour): fewer models and tasks; every section still runs
    "01_mpg_head_pruning": {**CALIB, "models": [MISTRAL], "zeroshot_models": [MISTRAL], "efficiency_models": [MISTRAL],
                            "zeroshot_tasks": ["rte"], "mlm_models": ["FacebookAI/roberta-base"], "glue_tasks": ["rte"]},
    "02_ogas_unstructured": {**CALIB, "models": [MISTRAL], "ogas_setting": {MISTRAL: "mistral"}, "curve_sparsities": [0.5, 0.9],
                             **{k: [MISTRAL] for k in ("c4_models", "nm_models", "ablation_models", "curve_models",
                                                       "zeroshot_models")}},
    "03_bandit_pruning": {**CALIB, "models": NB3_LMS, "unit_settings": {m: {"head": [0.10], "mlp": [0.05]} for m in NB3_LMS},
                          # Swin, the vision family with an adapter of its own (DeiT and ViT run the code of the smoke
                          # profile's tiny ViT, tests/test_smoke.py)
                          "vision_models": ["microsoft/swin-tiny-patch4-window7-224"],
                          "removal": {"model": "openai-community/gpt2", "method": "thompson", "seed": 1, "batches": [1],
                                      "repeats": 2}},
}
NOTE = "simulated hub: random weights"


@pytest.fixture(scope="module")
def simulated(tmp_path_factory):
    """The simulated hub and data, written once; the environment `make reproduce PROFILE=paper-tiny` sets."""
    root = tmp_path_factory.mktemp("simulated")
    load_tool("simulated_hub").write(root / "hub")
    data = root / "data"
    load_tool("simulated_data").write_imagenette(data)
    load_tool("simulated_data").write_c4(data)
    return {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "HF_HUB_CACHE": str(root / "hub"),
            "REPRO_C4_DIR": str(data / "c4"), "REPRO_IMAGENETTE": str(data / "imagenette2")}


@pytest.fixture
def offline(simulated, monkeypatch):
    """The environment for the workers and kernels this test starts, and huggingface_hub's constants for this
    process (it reads HF_HUB_OFFLINE and HF_HUB_CACHE once, at import)."""
    import huggingface_hub.constants as constants

    for k, v in simulated.items():
        monkeypatch.setenv(k, v)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", simulated["HF_HUB_CACHE"])


def test_every_paper_section_and_id_is_in_paper_tiny():
    """paper-tiny is the paper profile at tiny sizes: the same sections and the same models."""
    for src in SOURCES:
        paper, tiny = load_profile(PAPER, src.stem), load_profile(PROFILE, src.stem)
        for key in ("models", "vision_models", "mlm_models", "glue_encoder", "glue_tasks", "zeroshot_models", "c4_models",
                    "curve_models", "nm_models", "unit_settings", "c4_data", "c4_calib", "vision_data", "data"):
            assert tiny.get(key) == paper.get(key), (src.stem, key)


def _run(src, tmp_path, executor: str = "local", render: bool = True, **trim) -> dict:
    overrides = {"results_dir": str(tmp_path / "results"), "figures_dir": str(tmp_path / "figures"),
                 "update_readme": False, "results_page": str(tmp_path / "results.md"), **TRIM[src.stem], **trim}
    summary = run_notebook(src, PROFILE, jobs=2 if executor == "ray" else 1, executor=executor, threads=1,
                           overrides=overrides)  # one thread: make test runs two test files at once
    if not render:
        return {"summary": summary, "missing": Context(src, notebook_params(src, PROFILE, overrides)).plan()}
    out = tmp_path / src.with_suffix(".ipynb").name
    execute(src, out, PROFILE, cwd=ROOT / "notebooks", log_output=False, overrides=overrides)
    return {"summary": summary, "notebook": json.loads(out.read_text())}


@pytest.mark.parametrize("src", SOURCES, ids=[s.stem for s in SOURCES])
def test_paper_tiny_end_to_end(src, tmp_path, offline):
    run = _run(src, tmp_path)
    assert run["summary"]["cells"] > 0 and run["summary"]["retries"] == 0
    outputs = [o for c in run["notebook"]["cells"] for o in c.get("outputs", [])]
    assert not [o for o in outputs if o["output_type"] == "error"]
    tables = list((tmp_path / "figures").glob("*.md"))
    assert tables and all(NOTE in t.read_text() for t in tables if "profile `" in t.read_text())
    cards = [json.loads(p.read_text()) for p in (tmp_path / "results" / "models").glob("*.json")]
    assert cards and all(c["identity"].get("simulated") for c in cards), "every model from the simulated hub"


def test_paper_tiny_through_ray(tmp_path, offline):
    """Notebook 2's cells computed by Ray workers, offline on the simulated hub: every cell the plan holds gets
    its record (the render from records is the local test's, the same for either executor)."""
    pytest.importorskip("ray")
    run = _run(SOURCES[1], tmp_path, executor="ray", render=False,  # a few cells: what Ray does is per cell
               methods=["magnitude", "wanda"], exact_rounding_data=[],
               **{k: [] for k in ("c4_models", "nm_models", "ablation_models", "curve_models", "zeroshot_models")})
    assert run["summary"]["executor"] == "ray" and run["summary"]["retries"] == 0 and run["summary"]["cells"] > 0
    assert run["missing"] == []
