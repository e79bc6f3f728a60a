"""Result store: keys, atomic records, and a run killed midway that resumes losslessly."""
import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from repro.store import Store, config_key


def test_key_ignores_order_and_detects_changes():
    assert config_key({"a": 1, "b": [1, 2]}) == config_key({"b": [1, 2], "a": 1})
    assert config_key({"a": 1}) != config_key({"a": 2})


def test_run_computes_once(tmp_path):
    s = Store(tmp_path)
    calls = []
    r1 = s.run("exp", {"x": 1}, lambda: calls.append(1) or {"v": 3})
    r2 = s.run("exp", {"x": 1}, lambda: calls.append(1) or {"v": 4})
    assert calls == [1] and r1["result"] == r2["result"] == {"v": 3}
    assert [r["config"] for r in s.records("exp")] == [{"x": 1}]


def test_failed_cell_writes_nothing(tmp_path):
    s = Store(tmp_path)
    with pytest.raises(ZeroDivisionError):
        s.run("exp", {"x": 1}, lambda: {"v": 1 / 0})
    assert list(tmp_path.rglob("*")) == [] or not list((tmp_path / "exp").glob("*"))


WORKER = textwrap.dedent("""
    import sys, time
    from repro.store import Store
    import repro.store as st
    slow = float(sys.argv[2])
    real = st.atomic_write_text
    def slow_write(path, text):          # widen the window in which a kill can land mid-write
        time.sleep(slow)
        real(path, text)
    st.atomic_write_text = slow_write
    from repro.experiments.heads import HeadExperiment, Setup
    setup = Setup(data="wiki-sample", seqlen=64, max_windows=2, calib_data="wiki-sample", calib_nsamples=2,
                  grad_nsamples=1, calib_seqlen=32)
    store = Store(sys.argv[1])
    e = HeadExperiment("tiny-llama", setup, store, progress=False)
    before = sum(1 for _ in store.records("heads-ppl"))
    e.dense()
    for m in ("mpg", "wanda-head", "random"):
        for s in (0.125, 0.25, 0.5):
            e.cell(m, s)
    after = sum(1 for _ in store.records("heads-ppl"))
    print("computed", after - before)
""")


def _run(args, **kw):
    return subprocess.Popen([sys.executable, "-c", WORKER, *args], stdout=subprocess.PIPE, text=True, **kw)


def _ppl_by_key(root):
    return {r["key"]: r["result"]["ppl"] for r in Store(root).records("heads-ppl")}


def test_killed_run_resumes_identically(tmp_path):
    clean = _run([str(tmp_path / "clean"), "0"])
    assert clean.wait(timeout=300) == 0
    reference = _ppl_by_key(tmp_path / "clean")
    assert len(reference) == 10

    root = tmp_path / "killed"
    p = _run([str(root), "0.3"], start_new_session=True)
    deadline = time.time() + 240
    while time.time() < deadline and len(list((root / "heads-ppl").glob("*.json"))) < 3:
        time.sleep(0.05)
    time.sleep(0.15)  # land inside a later cell's (slowed) write
    os.killpg(p.pid, signal.SIGKILL)
    p.wait()
    done = list((root / "heads-ppl").glob("*.json"))
    assert 3 <= len(done) < 10, "the kill must land midway"
    for f in done:
        json.loads(f.read_text())  # every record complete
    resumed = _run([str(root), "0"])
    out, _ = resumed.communicate(timeout=300)
    assert resumed.returncode == 0
    assert out.strip() == f"computed {10 - len(done)}", "finished cells are skipped"
    assert _ppl_by_key(root) == reference
    # a kill inside the write can leave only a hidden temporary file, never a partial record
    assert all(f.name.endswith(".json") or f.name.startswith(".") for f in (root / "heads-ppl").iterdir())
