"""A record's identity never depends on the machine that reads it (issue 45): timing keys hold no thread count
(the machine is the record's data), a run says what it will compute, and for how long here, before the first
cell, and says once when its cells run in a precision this CPU runs slowly; another precision is a separate set
under .cache/ that reads the profile's records and writes nothing beside them. (The committed notebooks planned
on a CPU without fast bf16 and with another thread count: tests/test_committed.py.)"""
import io
import json
import subprocess
import sys
import time
from pathlib import Path

import jobs_paper
import pytest
import torch

from repro.assets import machine
from repro.engines.base import Setup
from repro.engines.heads import HeadExperiment
from repro.jobs import Context, notebook_params, run_notebook
from repro.notebooks import Session
from repro.store import Store

SMALL = Setup(data="wiki-sample", seqlen=32, max_windows=2, calib_data="wiki-sample", calib_nsamples=2, calib_seqlen=32,
              eval_dtype="float32")
SPEED = {"float32": 400.0, "bfloat16": 60.0}  # an AVX2-only CPU: bfloat16 about 7x slower


@pytest.fixture
def probed(monkeypatch):
    """A fixed speed probe (the real one builds a 135M-parameter model: tested once, below)."""
    monkeypatch.setattr(machine, "measure", lambda dtypes=("float32",), cache=True, reprobe=False:
                        machine.Probe({d: SPEED[d] for d in dtypes}, time.time(), 0.0))


def notebook(tmp_path: Path, dtype: str = "bfloat16") -> Path:
    """The jobs test notebook (tiny models) with an evaluation dtype and a results folder to read, under
    ``tmp_path/notebooks`` (a variant set then lands in ``tmp_path/.cache``)."""
    (tmp_path / "notebooks").mkdir(exist_ok=True)
    src = jobs_paper.write_notebook(tmp_path / "notebooks")
    text = src.read_text().replace('kill_marker = ""', f'kill_marker = ""\neval_dtype = "{dtype}"\nread_results = None')
    src.write_text(text)
    return src


def test_a_timing_key_names_no_machine_and_its_record_names_the_machine(tmp_path):
    """The efficiency cell timed with 1 thread and read back with 2 is one record; its result says where
    it was timed. With ``retime`` the same key is timed again here, once."""
    store = Store(tmp_path)
    e = HeadExperiment("tiny-llama", SMALL, store, progress=False)
    n = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        first = e.efficiency("mpg", sparsities=(0.5,), batches=(1,), seqlen=16, repeats=1)
        torch.set_num_threads(2)
        again = HeadExperiment("tiny-llama", SMALL, Store(tmp_path), progress=False).efficiency(
            "mpg", sparsities=(0.5,), batches=(1,), seqlen=16, repeats=1)
    finally:
        torch.set_num_threads(n)
    assert again == first and "threads" not in first["config"]
    m = first["result"]["machine"]
    assert m["threads"] == 1 and m["dtype"] == "float32" and m["cpu"] == machine.cpu()["cpu"]
    assert "machine" in first and first["machine"]["cores"] == machine.describe()["cores"]  # every record says where
    retimed = Store(tmp_path, retime=True)
    e2 = HeadExperiment("tiny-llama", SMALL, retimed, progress=False)
    new = e2.efficiency("mpg", sparsities=(0.5,), batches=(1,), seqlen=16, repeats=1)
    assert new["key"] == first["key"] and new["finished"] >= first["finished"] and new["result"]["machine"]["threads"] == n
    assert retimed.status[("heads-efficiency", new["key"])] == "computed"
    assert e2.efficiency("mpg", sparsities=(0.5,), batches=(1,), seqlen=16, repeats=1) == new  # once per session
    assert {v for (folder, _), v in retimed.status.items() if folder != "heads-efficiency"} == {"cached"}  # only timings


def test_the_estimate_line_comes_before_the_first_cell(tmp_path, probed):
    src = notebook(tmp_path, "float32")
    out = io.StringIO()
    run_notebook(src, None, out=out)
    lines = out.getvalue().splitlines()
    plan = next(i for i, ln in enumerate(lines) if ln.startswith("plan: "))
    first = next(i for i, ln in enumerate(lines) if ln.startswith("[1/"))
    assert plan < first
    assert "0 cell(s) done, 3 to compute, 4 waiting for those; estimated" in lines[plan]
    assert "probe float32 400 tokens/s" in lines[plan] and "note:" not in out.getvalue()  # float32: nothing slow
    out = io.StringIO()
    run_notebook(src, None, out=out)  # everything done: said, nothing estimated
    assert "3 to compute" not in out.getvalue() and "nothing to compute" in out.getvalue()


@pytest.mark.parametrize("native", [False, True])
def test_a_run_whose_cells_are_slow_here_says_so_once_before_the_first_cell(tmp_path, probed, monkeypatch, native):
    """By default its bf16 products go through float32 (repro.assets.precision), which the note says and each
    record keeps; with ``REPRO_BF16=native`` torch's own kernels run, and the note names the float32 set."""
    import repro.assets.models as models
    from repro.assets.precision import ENV

    monkeypatch.setattr(models, "fast_bf16", lambda device=None: False)
    if native:
        monkeypatch.setenv(ENV, "native")
    else:
        monkeypatch.delenv(ENV, raising=False)
    src = notebook(tmp_path, "bfloat16")
    out = io.StringIO()
    run_notebook(src, None, out=out)
    text = out.getvalue()
    assert text.count("note: this CPU has no fast bfloat16") == 1
    assert text.index("note: this CPU") < text.index("[1/")
    if native:
        assert "x6.7 slower than float32" in text and "make reproduce EVAL_DTYPE=float32" in text
    else:
        assert "computed as float32 products of their bf16 operands" in text and "x6.7 the time" in text
    records = [json.loads(p.read_text()) for p in (tmp_path / "notebooks" / "results" / "heads-ppl").glob("*.json")]
    assert records and all(("bf16_products" in r["machine"]) is (not native) for r in records)


def test_the_estimate_scales_the_same_cells_records_by_the_speed_probe(tmp_path, probed):
    """Cells computed elsewhere in bfloat16 price the same cells in float32 here: their seconds x the
    reference machine's bfloat16 speed / this machine's float32 speed."""
    src = notebook(tmp_path, "bfloat16")
    run_notebook(src, None, out=io.StringIO())
    for p in (tmp_path / "notebooks" / "results" / "heads-ppl").glob("*.json"):  # as if each took 10 s there
        r = json.loads(p.read_text())
        p.write_text(json.dumps({**r, "seconds": 10.0}))
    ctx = Context(src, notebook_params(src, None, {"eval_dtype": "float32"}))
    plan = ctx.survey()
    from repro.engines.estimate import local_seconds

    est = local_seconds(plan, ctx.index, ctx.session.store, SPEED, machine.REFERENCE)
    assert [j.call for j in plan.jobs.values()] == ["dense", *["cell"] * 4]  # the scores are read: no dtype in them
    assert est["matched"] == 5 and est["modelled"] == 0
    assert list(est["by_record"].values()) == pytest.approx([10.0 * machine.REFERENCE["bfloat16"] / 400.0] * 5)


def test_another_precision_is_a_separate_set_that_reads_the_profiles_records(tmp_path, probed):
    """``--eval-dtype float32`` over a bfloat16 set: the float32 records go under .cache/<profile>-float32/, the
    scores (no dtype in their key) and model cards are read from the profile's folder, which gains nothing;
    the set's profile name, which every caption prints, says float32."""
    src = notebook(tmp_path, "bfloat16")
    run_notebook(src, None, out=io.StringIO())
    committed = tmp_path / "notebooks" / "results"
    before = sorted(p.relative_to(committed) for p in committed.rglob("*.json"))
    params = notebook_params(src, None, {"eval_dtype": "float32"})
    assert params["profile"] == "test-float32" and params["read_results"] == str(committed.resolve())
    assert params["results_dir"] == str((tmp_path / ".cache" / "test-float32" / "results").resolve())
    out = io.StringIO()
    run_notebook(src, None, out=out, overrides={"eval_dtype": "float32"})
    assert "3 to compute" not in out.getvalue()  # the scores were read, not recomputed
    assert sorted(p.relative_to(committed) for p in committed.rglob("*.json")) == before
    variant = tmp_path / ".cache" / "test-float32" / "results"
    assert sorted(p.parent.name for p in variant.rglob("*.json")) == ["heads-ppl"] * 5  # dense + 4 cells
    assert {json.loads(p.read_text())["config"]["dtype"] for p in variant.rglob("*.json")} == {"float32"}
    session = Session({**params, "figures_dir": str(tmp_path / "f")})
    assert session.profile == "test-float32"
    assert Context(src, params).plan() == []  # the float32 set is complete: it renders from records
    assert notebook_params(src, None, {"eval_dtype": "bfloat16"})["results_dir"] == str(committed.resolve())


def quiet(speed: dict, load: float = 0.0, spread: float = 1.0):
    """A stand-in for :func:`machine._measure` that returns ``speed`` as measured on cores ``load`` busy."""
    calls = []

    def fake(dtypes, budget_s=1.0):
        calls.append(list(dtypes))
        return {**{d: speed[d] for d in dtypes}, "_load": load, "_spread": spread}
    return fake, calls


def test_the_speed_probe_measures_each_dtype_once_per_machine_and_says_how_old_it_is(monkeypatch):
    monkeypatch.delenv("REPRO_PROBE")
    monkeypatch.setattr(machine, "_cache_key", lambda: "test|once")
    fake, calls = quiet({"float32": 400.0, "bfloat16": 1500.0})
    monkeypatch.setattr(machine, "_measure", fake)
    first = machine.measure(["float32"])
    assert first.speed == {"float32": 400.0} and not first.disturbed and calls == [["float32"]]
    again = machine.measure(["float32"])
    assert again.speed == first.speed and again.measured == first.measured and len(calls) == 1  # cached
    assert "measured just now on a quiet machine" in again.describe()
    assert "measured 3 h ago" in again.describe(now=again.measured + 3 * 3600)
    machine.measure(["float32"], reprobe=True)  # --reprobe measures again, whatever the cache holds
    assert len(calls) == 2


def test_a_probe_under_load_or_out_of_line_with_the_cpu_is_used_once_and_never_cached(monkeypatch):
    """What the issue saw: a probe taken while other work shared the cores (bfloat16 at 10 tokens/s on an AMX CPU)
    was cached and priced every later run. A disturbed probe is said to be so, and the next plan measures again."""
    monkeypatch.delenv("REPRO_PROBE")
    monkeypatch.setattr(machine, "_cache_key", lambda: "test|disturbed")
    monkeypatch.setattr(machine, "fast_bf16", lambda *a: True)
    for speed, load, spread, why in [({"float32": 400.0, "bfloat16": 1500.0}, 0.6, 1.0, "60% of the cores"),
                                     ({"float32": 400.0, "bfloat16": 1500.0}, 0.0, 1.6, "rounds disagreed"),
                                     ({"float32": 661.0, "bfloat16": 106.0}, 0.0, 1.0, "bfloat16 measured slower")]:
        fake, calls = quiet(speed, load, spread)
        monkeypatch.setattr(machine, "_measure", fake)
        got = machine.measure(["float32", "bfloat16"])
        assert why in got.disturbed and "not cached" in got.describe()
        machine.measure(["float32", "bfloat16"])
        assert len(calls) == 2  # nothing was kept: measured again


def test_an_entry_cached_before_loads_were_measured_is_measured_again(monkeypatch):
    monkeypatch.delenv("REPRO_PROBE")
    monkeypatch.setattr(machine, "_cache_key", lambda: "test|old")
    path = machine.cache_dir("machine") / "probe.json"
    old = json.loads(path.read_text()) if path.is_file() else {}
    path.write_text(json.dumps({**old, "test|old": {"float32": 36.0, "bfloat16": 10.0}}))  # the old format
    fake, calls = quiet({"float32": 400.0, "bfloat16": 1500.0})
    monkeypatch.setattr(machine, "_measure", fake)
    assert machine.measure(["bfloat16"]).speed == {"bfloat16": 1500.0} and len(calls) == 1


def test_the_real_probe_under_synthetic_load_caches_nothing(monkeypatch):
    """The real probe (a SmolLM2-135M-shaped model) while as many busy processes as cores run beside it: the load
    is measured, the result is said to be disturbed, and the cache holds no entry for it."""
    monkeypatch.delenv("REPRO_PROBE")
    monkeypatch.setattr(machine, "_cache_key", lambda: "test|synthetic load")
    import os

    busy = [subprocess.Popen([sys.executable, "-c", "import time\nt = time.time()\nwhile time.time() - t < 120: pass"])
            for _ in range(os.cpu_count() or 1)]
    try:
        time.sleep(0.5)
        got = machine.measure(["float32"])
    finally:
        for p in busy:
            p.kill()
            p.wait()
    assert got.speed["float32"] > 1 and got.load is not None and got.load > machine.QUIET, got
    assert "busy with other work" in got.disturbed
    path = machine.cache_dir("machine") / "probe.json"
    assert "test|synthetic load" not in (json.loads(path.read_text()) if path.is_file() else {})


def test_speeds_assumed_through_the_environment_are_said_to_be_assumed(monkeypatch):
    monkeypatch.setenv("REPRO_PROBE", "float32=550,bfloat16=1400")
    got = machine.measure(["bfloat16"])
    assert got.speed == {"bfloat16": 1400.0} and "assumed (REPRO_PROBE)" in got.describe()
    monkeypatch.setenv("REPRO_PROBE", "fast")
    from repro.errors import ReproError

    with pytest.raises(ReproError, match="REPRO_PROBE"):
        machine.measure(["float32"])


def test_a_machine_label_names_what_decides_its_speed():
    assert machine.label({"cpu": "Xeon", "flags": ["avx2", "avx512f", "avx512_bf16"], "fast_bf16": True,
                          "cores": 2, "threads": 1}) == "Xeon (AVX512-BF16, fast bfloat16), 2 cores, 1 thread"
    assert machine.label({"cpu": None, "note": "old", "threads": 2, "fast_bf16": True}) == \
        "a CPU not recorded by name (fast bfloat16: AVX512-BF16 or AMX), 2 threads"


@pytest.mark.parametrize("argv", [["--dry-run", "--retime"]])
def test_retime_with_a_dry_run_is_refused_in_one_line(tmp_path, capsys, argv):
    from repro.cli import main

    src = notebook(tmp_path)
    assert main(["run", str(src), *argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--retime" in err[0]


if __name__ == "__main__":
    sys.exit(pytest.main([__file__]))
