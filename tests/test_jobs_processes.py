"""The executors' process-level behaviour, slow by nature (a local Ray instance, real interrupts of a run):
in a file of its own so that pytest-xdist's per-file scheduling (make test) runs it beside test_jobs.py."""
import json
import multiprocessing as mp
import time
from pathlib import Path

import jobs_paper
import pytest
from jobs_paper import records as _records
from jobs_paper import untimed

from repro.jobs import run_notebook

from conftest import ROOT


def test_ray_retries_a_killed_worker_and_writes_the_local_executors_records(tmp_path, capsys):
    """On a local Ray instance: the kill-once grid completes (Ray retries the task whose worker died),
    leaves no partial record, and its records equal those of the same grid computed in this process without a
    kill (measured times aside; the local executor's own kill-and-retry is tests/test_jobs.py's, and its
    records equal the in-process ones there)."""
    pytest.importorskip("ray")
    import ray

    folder = tmp_path / "ray"
    folder.mkdir()
    src = jobs_paper.write_notebook(folder)
    marker = folder / "killed"
    try:
        run_notebook(src, jobs=2, executor="ray", threads=1, overrides={"kill_marker": str(marker)})
    finally:
        ray.shutdown()
    assert marker.exists()
    assert not [p for p in (folder / "results").rglob("*") if p.name.endswith(".tmp")]
    got = {k: untimed(json.loads(v)["result"]) for k, v in _records(folder / "results").items()}
    (tmp_path / "here").mkdir()
    run_notebook(jobs_paper.write_notebook(tmp_path / "here"), jobs=1, threads=1)  # in this process, no kill
    want = {k: untimed(json.loads(v)["result"]) for k, v in _records(tmp_path / "here" / "results").items()}
    assert got == want and len(got) == 7


@pytest.mark.parametrize("jobs", [1, 2])
def test_ctrl_c_is_one_line_exit_130_and_loses_nothing(tmp_path, jobs):
    """Ctrl-C of `repro run` (smoke notebook 1): one line saying how many cells were written, exit status
    130, no traceback, no worker left, every record whole; the rerun plans only what is still missing."""
    import json
    import signal
    import subprocess
    import sys
    import time

    profile = tmp_path / "p.yaml"
    smoke = (ROOT / "notebooks/profiles/smoke.yaml").read_text()
    profile.write_text(smoke.replace('results_dir: "../.cache/smoke/results"', f'results_dir: "{tmp_path / "results"}"'))
    cmd = [sys.executable, "-m", "repro", "run", str(ROOT / "notebooks/01_mpg_head_pruning.py"), "--profile",
           str(profile), "--jobs", str(jobs), "--threads", "1"]
    # a shell's background job inherits SIGINT ignored (and Python then never raises KeyboardInterrupt):
    # give the run the default disposition, as a terminal's foreground command has
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    records = tmp_path / "results"
    deadline = time.time() + 300
    while time.time() < deadline and len(list(records.glob("*/*.json"))) < 3:  # a few cells done: mid-run
        time.sleep(0.5)
    children = subprocess.run(["pgrep", "-P", str(proc.pid)], capture_output=True, text=True).stdout.split()
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err[-2000:]
    assert "Traceback" not in err, err[-3000:]
    last = err.strip().splitlines()[-1]
    assert last.startswith("interrupted: ") and "a rerun resumes" in last, last
    for p in records.glob("*/*.json"):
        json.loads(p.read_text())  # whole records only
    def alive():
        out = {}
        for pid in children:
            try:
                out[pid] = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()[:200]
            except OSError:
                pass
        return out
    for _ in range(20):  # multiprocessing's own helpers end once the driver is gone
        if not alive():
            break
        time.sleep(0.25)
    assert not alive(), f"process(es) outlived the interrupt: {alive()}"


def test_ctrl_c_while_a_worker_starts_comes_after_the_start_and_the_worker_inherits_it_blocked():
    """A SIGINT in the middle of starting a spawned worker is raised once the start is complete (an
    interrupt between spawning the child and writing its preparation data left it reading an empty
    pipe: an EOFError traceback, CI of stop 35), and the child is born with SIGINT blocked, so a
    terminal's Ctrl-C to the process group cannot raise in it before its initializer ignores it."""
    import os
    import signal
    from concurrent.futures import ProcessPoolExecutor

    from repro.processes import sigint_deferred

    steps = []
    before = signal.getsignal(signal.SIGINT)  # Python's default_int_handler; SIG_IGN under nohup or `cmd &`
    with pytest.raises(KeyboardInterrupt):
        with sigint_deferred():
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.05)  # without the deferral, KeyboardInterrupt is raised here
            steps.append("started")
    assert steps == ["started"]
    assert signal.getsignal(signal.SIGINT) is before  # handler and mask restored
    assert signal.SIGINT not in signal.pthread_sigmask(signal.SIG_BLOCK, [])

    with ProcessPoolExecutor(1, mp_context=mp.get_context("spawn")) as pool:
        with sigint_deferred():
            child_mask = pool.submit(signal.pthread_sigmask, signal.SIG_BLOCK, [])
        assert signal.SIGINT in child_mask.result(timeout=60)


def test_a_run_killed_with_sigkill_leaves_no_process_and_its_rerun_loses_nothing(tmp_path):
    """SIGKILL of `repro run --jobs 2` while a worker is mid-cell, as the kernel's OOM killer would: the driver gets
    no moment to stop its workers, which hold both ends of their task pipes. Before, both workers and
    multiprocessing's resource tracker stayed alive for ever (1.3 GB resident). Now every process of the run is gone
    within seconds, every record left is whole, and the rerun computes only what is missing."""
    import os
    import subprocess
    import sys

    src = jobs_paper.write_notebook(tmp_path)
    held = tmp_path / "held"
    (tmp_path / "p.yaml").write_text(f"profile: test\nresults_dir: {tmp_path / 'results'}\nfigures_dir: "
                                     f"{tmp_path / 'figures'}\nnotebooks:\n  nb: {{models: [tiny-llama]}}\n")
    cmd = [sys.executable, "-m", "repro", "run", str(src), "--profile", str(tmp_path / "p.yaml"), "--jobs", "2",
           "--threads", "1"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "tests"), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.Popen([*cmd, "--set", f"hold_marker={held}"], cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 300
    while time.time() < deadline and not held.exists() and proc.poll() is None:
        time.sleep(0.1)
    assert held.exists(), proc.communicate(timeout=30)[1][-2000:]  # a worker is in the middle of the dense cell

    def tree(pid: str) -> list[str]:
        kids = subprocess.run(["pgrep", "-P", pid], capture_output=True, text=True).stdout.split()
        return kids + [g for k in kids for g in tree(k)]
    run = tree(str(proc.pid))
    assert len(run) >= 2, run  # the workers and multiprocessing's resource tracker
    proc.kill()
    proc.wait()
    records = tmp_path / "results"
    written = {p.relative_to(records) for p in records.glob("*/*.json")}

    def alive():
        return [pid for pid in run if Path(f"/proc/{pid}").exists()
                and Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"]
    for _ in range(40):
        if not alive():
            break
        time.sleep(0.25)
    assert not alive(), f"process(es) outlived the killed run: {alive()}"
    for p in records.glob("*/*.json"):
        json.loads(p.read_text())  # whole records only (a worker killed mid-write may leave its temporary file)
    import io

    log = io.StringIO()  # the rerun, in this process
    run_notebook(src, tmp_path / "p.yaml", jobs=1, threads=1, out=log)
    after = {p.relative_to(records) for p in records.glob("*/*.json")}
    assert written < after  # the dense cell the kill interrupted, computed by the rerun
    assert not list(records.rglob("*.tmp"))  # the rerun swept what the killed writers left
    cells = [p for p in written if p.parts[0] != "models"]  # the model card is no cell
    assert f"plan: {len(cells)} cell(s) done, " in log.getvalue(), log.getvalue()  # none computed twice
