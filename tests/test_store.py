"""Result store: keys, atomic records, and writers killed between the complete temporary file
and ``os.replace`` (the one instant where atomicity matters) that resume losslessly."""
import json
import os
import signal
import subprocess
import sys
import textwrap

import pytest
import torch

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


def test_a_record_is_parsed_once_and_read_anew_when_its_file_changes(tmp_path, monkeypatch):
    """Sections read the same folders again and again: a file is parsed once per store, and a record written
    again (another worker, or --recompute) is read as it is now, never from the earlier parse."""
    s = Store(tmp_path)
    s.put("exp", {"x": 1}, {"v": 3})
    parsed = []
    real = json.loads
    monkeypatch.setattr(json, "loads", lambda text, *a, **k: parsed.append(1) or real(text, *a, **k))
    assert [r["result"] for r in s.records("exp")] == [{"v": 3}]
    assert [r["result"] for r in s.records("exp")] == [{"v": 3}] and len(parsed) == 1
    Store(tmp_path).put("exp", {"x": 1}, {"v": 40})  # rewritten by another store
    assert [r["result"] for r in s.records("exp")] == [{"v": 40}]


def test_failed_cell_writes_nothing(tmp_path):
    s = Store(tmp_path)
    with pytest.raises(ZeroDivisionError):
        s.run("exp", {"x": 1}, lambda: {"v": 1 / 0})
    assert [p for p in tmp_path.rglob("*") if p.is_file() and ".locks" not in p.parts] == []
    assert s.get("exp", {"x": 1}) is None and list(s.records("exp")) == []


# The writer process: os.replace (looked up by repro.store.atomic_write_text at call time) is
# replaced by a SIGKILL of the process itself, so the process dies exactly after the temporary
# file has been written, flushed and fsynced, and before it is renamed to the record's name.
KILL_IN_REPLACE = textwrap.dedent("""
    import os, signal, sys
    def die(src, dst):
        print("replace", src, dst, flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
    os.replace = die
""")

WRITER = KILL_IN_REPLACE + textwrap.dedent("""
    from repro.store import Store
    s = Store(sys.argv[1])
    if sys.argv[2] == "run":
        s.run("exp", {"x": 3}, lambda: {"v": 9})
    else:  # overwrite an existing record
        s.put("exp", {"x": 1}, {"v": -1})
    print("survived", flush=True)
""")


def _killed(script, *args):
    p = subprocess.run([sys.executable, "-c", script, *map(str, args)], capture_output=True, text=True, timeout=300)
    assert p.returncode == -signal.SIGKILL, p.stderr
    assert "survived" not in p.stdout
    lines = [ln.split() for ln in p.stdout.splitlines() if ln.startswith("replace ")]
    assert len(lines) == 1, p.stdout
    return lines[0][1], lines[0][2]


@pytest.mark.parametrize("how", ["run", "overwrite"])
def test_kill_between_temp_write_and_replace(tmp_path, how):
    s = Store(tmp_path)
    for x in range(3):
        s.run("exp", {"x": x}, lambda x=x: {"v": x * x})
    folder = tmp_path / "exp"
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    assert len(before) == 3

    cfg = {"x": 3} if how == "run" else {"x": 1}
    src, dst = _killed(WRITER, tmp_path, how)
    # the kill landed exactly there: the record's final name was the target, and the temporary
    # file beside it is complete (a whole record) but was never renamed
    assert dst == str(s.path("exp", cfg))
    tmp = folder / os.path.basename(src)
    assert os.path.dirname(src) == str(folder)
    assert tmp.name.startswith(f".{os.path.basename(dst)}.") and tmp.name.endswith(".tmp")
    assert json.loads(tmp.read_text())["config"] == cfg

    # nothing lost or corrupt: the old records are byte-identical, no partial record under any final name
    after = {p.name: p.read_bytes() for p in folder.iterdir() if p != tmp}
    assert after == before
    assert sorted(p.name for p in folder.iterdir()) == sorted([*before, tmp.name])
    recs = list(s.records("exp"))  # the leftover temporary file is not a record
    assert sorted(r["config"]["x"] for r in recs) == [0, 1, 2]
    assert {r["config"]["x"]: r["result"]["v"] for r in recs} == {0: 0, 1: 1, 2: 4}
    assert s.get("exp", {"x": 1})["result"] == {"v": 1}

    if how == "run":  # the interrupted cell is simply absent, and a rerun computes it once
        assert s.get("exp", cfg) is None and not os.path.exists(dst)
        assert Store(tmp_path).sweep_partial_writes() == [tmp]  # the dead writer's leftover goes
        assert not tmp.exists() and sorted(p.name for p in folder.iterdir()) == sorted(before)
        calls = []
        rec = Store(tmp_path).run("exp", cfg, lambda: calls.append(1) or {"v": 9})
        assert calls == [1] and rec["result"] == {"v": 9}
        assert Store(tmp_path).run("exp", cfg, lambda: calls.append(1) or {"v": 0})["result"] == {"v": 9}
        assert calls == [1]
    else:
        Store(tmp_path).put("exp", cfg, {"v": -1})
    on_disk = json.loads(open(dst).read())
    assert on_disk["config"] == cfg and on_disk["key"] == config_key(cfg)
    assert on_disk["result"] == ({"v": 9} if how == "run" else {"v": -1})
    recs = list(Store(tmp_path).records("exp"))
    assert sorted(r["config"]["x"] for r in recs) == ([0, 1, 2, 3] if how == "run" else [0, 1, 2])
    assert tmp.exists() == (how == "overwrite"), "ignored by reads; swept only in the run case, above"


# End to end: a head-pruning run whose 3rd perplexity record dies between its temporary write
# and os.replace resumes to exactly the records of an uninterrupted run.
def run_cells(root) -> int:
    """A small head-pruning run (dense + 4 cells, one needing calibration); returns how many
    perplexity records it added."""
    from repro.engines.heads import HeadExperiment, Setup

    setup = Setup(data="wiki-sample", seqlen=64, max_windows=2, calib_data="wiki-sample", calib_nsamples=2,
                  calib_seqlen=32)
    store = Store(root)
    e = HeadExperiment("tiny-llama", setup, store, grad_nsamples=1, progress=False)
    before = sum(1 for _ in store.records("heads-ppl"))
    e.dense()
    for m in ("wanda-head", "random"):
        for s in (0.25, 0.5):
            e.cell(m, s)
    return sum(1 for _ in store.records("heads-ppl")) - before


EXPERIMENT = textwrap.dedent(f"""
    import os, signal, sys
    kill_at, done = int(sys.argv[2]), []
    real_replace = os.replace
    def replace(src, dst):
        if "heads-ppl" in str(dst):
            done.append(dst)
            if len(done) == kill_at:
                print("replace", src, dst, flush=True)
                os.kill(os.getpid(), signal.SIGKILL)
        real_replace(src, dst)
    os.replace = replace
    import torch
    torch.set_num_threads({torch.get_num_threads()})  # as in the test process, which computes the reference
    sys.path.insert(0, {os.path.dirname(os.path.abspath(__file__))!r})
    from test_store import run_cells
    print("computed", run_cells(sys.argv[1]), flush=True)
""")


def _ppl_by_key(root):
    return {r["key"]: r["result"]["ppl"] for r in Store(root).records("heads-ppl")}


def test_killed_run_resumes_identically(tmp_path):
    assert run_cells(tmp_path / "clean") == 5  # the reference, uninterrupted, in this process
    reference = _ppl_by_key(tmp_path / "clean")
    assert len(reference) == 5

    root = tmp_path / "killed"
    src, dst = _killed(EXPERIMENT, root, 3)  # dies on the 3rd record, after 2 complete ones
    folder = root / "heads-ppl"
    records = sorted(p.name for p in folder.glob("*.json") if not p.name.startswith("."))
    assert len(records) == 2 and os.path.basename(dst) not in records
    assert all(json.loads((folder / n).read_text())["key"] + ".json" == n for n in records)
    assert os.path.exists(src) and _ppl_by_key(root).keys() < reference.keys()

    resumed = subprocess.run([sys.executable, "-c", EXPERIMENT, str(root), "0"], capture_output=True, text=True,
                             timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stdout.split()[-2:] == ["computed", "3"], "finished cells are skipped, the killed one is redone"
    assert _ppl_by_key(root) == reference
    assert os.path.exists(dst)


# ---- a corrupt record is never fatal ---------------------------------------------------------------

def _corrupt(path, how: str, other: str) -> None:
    if how == "truncated":
        path.write_text(path.read_text()[: len(path.read_text()) // 2])
    elif how == "empty":
        path.write_text("")
    elif how == "another record":
        path.write_text(other)
    elif how == "not a record":
        path.write_text("[1, 2, 3]\n")
    elif how == "binary":
        path.write_bytes(b"\xff\xfe\x00garbage")
    elif how == "key edited":  # by hand: before, counted as cached while its table row showed a dash
        record = json.loads(path.read_text())
        path.write_text(json.dumps({**record, "key": "0123456789abcdef"}))


@pytest.mark.parametrize("how", ["truncated", "empty", "another record", "not a record", "binary", "key edited"])
def test_a_corrupt_record_is_moved_aside_and_its_cell_recomputed(tmp_path, how):
    from repro.store import QUARANTINE, Store

    store = Store(tmp_path)
    a, b = {"method": "a"}, {"method": "b"}
    store.run("exp", a, lambda: {"x": 1})
    store.run("exp", b, lambda: {"x": 2})
    path, other = store.path("exp", a), store.path("exp", b).read_text()
    _corrupt(path, how, other)
    fresh = Store(tmp_path)  # a later run
    with pytest.warns(UserWarning, match=f"record {path} moved to .*{QUARANTINE}"):
        rec = fresh.run("exp", a, lambda: {"x": 10})
    assert rec["result"] == {"x": 10} and fresh.status[("exp", rec["key"])] == "computed"
    moved = list((tmp_path / QUARANTINE / "exp").iterdir())
    assert len(moved) == 1 and moved[0].name == path.name  # kept for inspection, not deleted
    assert [r["config"] for r in Store(tmp_path).records("exp")] == sorted([a, b], key=lambda c: config_key(c))


def test_reading_every_record_skips_a_corrupt_one(tmp_path):
    from repro.store import Store

    store = Store(tmp_path)
    for m in "abc":
        store.run("exp", {"method": m}, lambda: {"x": 1})
    store.path("exp", {"method": "b"}).write_text("{")
    with pytest.warns(UserWarning, match="not valid JSON"):
        configs = [r["config"]["method"] for r in Store(tmp_path).records("exp")]
    assert sorted(configs) == ["a", "c"]


def test_records_are_written_with_the_users_umask(tmp_path):
    import os
    import stat

    from repro.store import Store

    old = os.umask(0o022)
    try:
        p = Store(tmp_path).put("exp", {"method": "a"}, {"x": 1}) and Store(tmp_path).path("exp", {"method": "a"})
        assert stat.S_IMODE(p.stat().st_mode) == 0o644  # mkstemp's own 0600 would hide it from other users
        os.umask(0o077)
        Store(tmp_path).put("exp", {"method": "b"}, {"x": 1})
        assert stat.S_IMODE(Store(tmp_path).path("exp", {"method": "b"}).stat().st_mode) == 0o600
    finally:
        os.umask(old)


def test_sweeping_keeps_the_temporary_file_of_a_cell_whose_lock_is_held(tmp_path):
    """A live writer holds its cell's lock while its temporary file exists: the sweep must leave it
    (deleting it would make that writer's ``os.replace`` fail), and take it once the lock is free."""
    s = Store(tmp_path)
    cfg = {"x": 1}
    with s._claim("exp", cfg):  # noqa: SLF001 - stands for another process holding the cell
        tmp = s.path("exp", cfg).with_name(f".{s.path('exp', cfg).name}.abc123.tmp")
        tmp.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text("{}")
        held = subprocess.run([sys.executable, "-c", "import sys; from repro.store import Store; "
                               "print(len(Store(sys.argv[1]).sweep_partial_writes()))", str(tmp_path)],
                              capture_output=True, text=True, timeout=120)
        assert held.stdout.strip() == "0" and tmp.exists(), held.stderr
    assert s.sweep_partial_writes() == [tmp] and not tmp.exists()
