import os
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]
# tests never reach the network: no hub lookup before the packaged fallbacks (each process, workers and
# papermill kernels included, would otherwise retry the hub for ~40 s where it is unreachable, as in CI)
os.environ.setdefault("REPRO_OFFLINE", "1")
# every xdist worker (make test: -n 2) keeps torch's own thread count, as `repro run` and the notebooks run with
# (no record key names it: a timing's machine is its data, tests/test_portable.py)
torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
# estimates in tests assume the reference machine's speeds instead of probing this one (a probe under the suite's
# own load is never cached, so each plan would measure again): tests/test_portable.py measures the real probe
os.environ.setdefault("REPRO_PROBE", "float32=550,bfloat16=1400,float16=1400")


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory, monkeypatch):
    """Tests never touch the user's model cache (tiny models need none)."""
    monkeypatch.setenv("REPRO_CACHE", str(tmp_path_factory.getbasetemp() / "cache"))


def load_tool(name: str):
    """The script ``tools/<name>.py`` as a module (registered in ``sys.modules``: its dataclasses need it)."""
    import importlib.util
    import sys

    spec = importlib.util.spec_from_file_location(name, ROOT / "tools" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def have_wikitext() -> bool:
    from repro.assets.data import wikitext_dir

    return wikitext_dir() is not None


def one_thread_context():
    """One torch thread for a module's tests (searches whose float sums must not depend on threads);
    a module opts in with ``one_thread = pytest.fixture(autouse=True, scope="module")(one_thread_context)``."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


# make test runs the files in two pytest-xdist workers, a file at a time each (--dist loadfile), handed out in
# collection order (--no-loadscope-reorder: xdist's default reorders files by their number of tests, most first,
# which left the few-test notebook files to the end): the slowest files first (longest first: the two workers
# finish together instead of one waiting on the other); the order within a file is kept
SLOW_FIRST = ("test_paper_tiny.py", "test_smoke.py", "test_committed.py", "test_jobs_processes.py", "test_jobs.py",
              "test_real_model.py", "test_gpu_check.py", "test_cli.py", "test_docs.py", "test_store.py")


def pytest_collection_modifyitems(items):
    rank = {name: i for i, name in enumerate(SLOW_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: every other file keeps its order


def ogas_params(ogas_setting: dict, **chosen):
    """Notebook 2's parameters for a unit test's grid: ``ogas_setting``'s models, no section's cells but those
    ``chosen`` (the notebook's defaults name the real models of every section)."""
    from repro.papers.ogas.params import OgasParams

    bare = dict(profile="", methods=[], c4_models=[], exact_rounding_data=[], nm_models=[], nm_patterns=[],
                nm_methods=[], ablation_models=[], curve_models=[], curve_sparsities=[], s_max_headrooms=[],
                wide_gamma_bounds=None, gamma_rule_models=[], zeroshot_models=[], zeroshot_tasks=[],
                zeroshot_limit=None, figure_layer=None, calib_seeds=[None], sparsity=0.5, seqlen=64, calib_seqlen=32)
    return OgasParams(**{**bare, "models": list(ogas_setting), "ogas_setting": ogas_setting, **chosen})
