"""The bad-input matrix of issue 47: each bad profile value, results folder, record folder, model folder, standard
output and interrupt gives one clear line and a non-zero exit before any long work (or a sensible result), and
nothing committed is touched. (The CLI's argument checks: tests/test_cli.py.)"""
import errno
import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import jobs_paper
import pytest
import yaml

from repro.cli import main
from repro.errors import INTERRUPTED, ReproError
from repro.jobs import run_notebook
from repro.notebooks import run_parameters

from conftest import ROOT

NB1 = ROOT / "notebooks" / "01_mpg_head_pruning.py"
SECTION = {"models": ["tiny-llama"], "calib_data": "wiki-sample", "data": "wiki-sample", "seqlen": 64, "calib_seqlen": 32}


def profile(tmp_path: Path, text: str, name: str = "bad.yaml") -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def one_line(capsys) -> str:
    err = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert len(err) == 1, err
    assert err[0].startswith("error: ")
    return err[0]


# (profile text, what the one line must say): each was accepted, or ran for minutes, before
PROFILES = {
    "quoted false": ("profile: x\nnotebooks:\n  01_mpg_head_pruning: {spread: \"false\"}\n",
                     "spread must be true or false"),
    "quoted no": ("profile: x\nnotebooks:\n  01_mpg_head_pruning: {anatomy: \"no\"}\n", "anatomy must be true or false"),
    "a string for a list": ("profile: x\nnotebooks:\n  01_mpg_head_pruning:\n    models: tiny-llama\n"
                            "    model_settings: {tiny-llama: {tie_seeds: [0]}}\n", "models must be a list"),
    "a key given twice": ("profile: x\nnotebooks:\n  01_mpg_head_pruning:\n    max_windows: 20\n    max_windows: 3\n",
                          "key 'max_windows' given twice (line 5)"),
    "results_dir null": ("profile: x\nresults_dir: null\nnotebooks:\n  01_mpg_head_pruning: {seqlen: 64}\n",
                         "results_dir must name a folder, got None"),
    "results_dir empty": ("profile: x\nresults_dir: \"\"\nnotebooks:\n  01_mpg_head_pruning: {seqlen: 64}\n",
                          "results_dir must name a folder, got ''"),
    "results_dir a number": ("profile: x\nresults_dir: 7\nnotebooks:\n  01_mpg_head_pruning: {seqlen: 64}\n",
                             "results_dir must name a folder, got 7"),
    "no section": ("profile: x\nnotebooks: {}\n", "names no notebook section"),
    "only a name": ("profile: x\n", "names no notebook section"),
    "a section for no notebook": ("profile: x\nnotebooks:\n  01_mpg_head_pruning: {seqlen: 64}\n  01_mpg: {seqlen: 8}\n",
                                  "section(s) '01_mpg' under 'notebooks' name no notebook"),
}


@pytest.mark.parametrize("case", PROFILES)
def test_a_bad_profile_value_is_one_line_before_any_work(tmp_path, capsys, case):
    text, message = PROFILES[case]
    p = profile(tmp_path, text)
    assert main(["run", str(NB1), "--profile", str(p)]) == 2
    assert message in one_line(capsys)
    assert not (tmp_path / ".cache").exists() and not (ROOT / ".cache" / "x").exists()


def test_a_copy_of_the_committed_profile_never_writes_the_committed_outputs(tmp_path):
    """`profile: cpu` in a file other than notebooks/profiles/cpu.yaml: its records, figures and notebook go
    under .cache/cpu/, and no README block is written."""
    copy = profile(tmp_path, (ROOT / "notebooks" / "profiles" / "cpu.yaml").read_text(), "cpu.yaml")
    params = run_parameters(NB1, copy)
    assert params["results_dir"] == "../.cache/cpu/results" and params["update_readme"] is False
    assert params["figures_dir"] == "../.cache/cpu/figures/01_mpg_head_pruning"
    committed = run_parameters(NB1, ROOT / "notebooks" / "profiles" / "cpu.yaml")
    assert "results_dir" not in committed and committed["update_readme"] is True  # the notebook's own ../results


def results_profile(tmp_path, results_dir) -> Path:
    return profile(tmp_path, yaml.safe_dump({"profile": "x", "results_dir": str(results_dir),
                                             "notebooks": {"01_mpg_head_pruning": SECTION}}))


@pytest.mark.parametrize("case", ["a file", "under a file"])
def test_a_results_folder_that_cannot_be_written_is_refused_before_the_first_cell(tmp_path, capsys, case):
    f = tmp_path / "file"
    f.write_text("not a folder")
    target, message = {"a file": (f, "is a file, not a folder"), "under a file": (f / "sub", "cannot be written")}[case]
    assert main(["run", str(NB1), "--profile", str(results_profile(tmp_path, target))]) == 2
    assert message in one_line(capsys)


def test_a_full_disk_is_refused_before_the_first_cell(tmp_path, capsys, monkeypatch):
    import shutil

    monkeypatch.setattr(shutil, "disk_usage", lambda p: shutil._ntuple_diskusage(10**9, 10**9 - 10**6, 10**6))
    assert main(["run", str(NB1), "--profile", str(results_profile(tmp_path, tmp_path / "r"))]) == 2
    assert "only 1 MB free (at least 50 MB needed)" in one_line(capsys)


def test_a_failed_write_stops_the_run_at_once_and_the_written_records_stay_whole(tmp_path, monkeypatch):
    """The disk fills after the first record: the run stops at the second write, in one line, instead of
    computing every cell and failing to write each."""
    import repro.store as store

    real, writes = store.atomic_write_text, []

    def fill_up(path, text):
        writes.append(path)
        if Path(path).parent.name != "models" and len([w for w in writes if Path(w).parent.name != "models"]) > 1:
            raise OSError(errno.ENOSPC, "No space left on device")
        real(path, text)

    monkeypatch.setattr(store, "atomic_write_text", fill_up)
    (tmp_path / "nb").mkdir()
    src = jobs_paper.write_notebook(tmp_path / "nb")
    with pytest.raises(ReproError, match=r"stopped at the first record that could not be written \(cannot write "
                                         r"record .*No space left on device\); the 1 record\(s\) written"):
        run_notebook(src, None, out=open(os.devnull, "w"))
    records = [p for p in (tmp_path / "nb" / "results").rglob("*.json") if p.parent.name != "models"]
    assert len(records) == 1 and json.loads(records[0].read_text())["result"]  # whole
    assert len([w for w in writes if Path(w).parent.name != "models"]) == 2  # no third cell was tried
    assert not list((tmp_path / "nb" / "results").rglob("*.tmp"))


def test_migrate_refuses_an_empty_name_and_a_truncated_record_in_one_line(tmp_path, capsys):
    assert main(["migrate", ""]) == 2
    assert "an empty name" in one_line(capsys)
    (tmp_path / "heads-ppl").mkdir()
    good = {"schema": 1, "experiment": "heads-ppl", "key": "a", "config": {"protocol": 3}, "result": {}}
    (tmp_path / "heads-ppl" / "a.json").write_text(json.dumps(good))
    (tmp_path / "heads-ppl" / "b.json").write_text('{"schema": 1, "experim')
    before = {p: p.read_text() for p in tmp_path.rglob("*.json")}
    assert main(["migrate", str(tmp_path)]) == 2
    line = one_line(capsys)
    assert "b.json cannot be read" in line and "nothing was migrated" in line
    assert {p: p.read_text() for p in tmp_path.rglob("*.json")} == before


def tiny_folder(tmp_path) -> Path:
    from repro.assets.models import load_model

    loaded = load_model("tiny-llama")
    folder = tmp_path / "model"
    loaded.model.save_pretrained(folder)
    (folder / "tokenizer_config.json").write_text("{}")
    return folder


@pytest.mark.parametrize("damage", ["truncated weights", "malformed config", "no weights"])
def test_a_broken_model_folder_is_one_line(tmp_path, capsys, damage):
    folder = tiny_folder(tmp_path)
    capsys.readouterr()  # save_pretrained's own progress lines
    weights = folder / "model.safetensors"
    if damage == "truncated weights":
        weights.write_bytes(weights.read_bytes()[:100])
    elif damage == "malformed config":
        (folder / "config.json").write_text('{"model_type": "llama",')
    else:
        weights.unlink()
    assert main(["ppl", "--model", str(folder), "--data", "wiki-sample", "--seqlen", "16", "--max-windows", "1"]) == 2
    line = one_line(capsys)
    assert line.startswith(("error: model folder", "error: --model")) and str(folder) in line


@pytest.mark.parametrize("redirect", ["closed", "full"])
def test_a_closed_or_full_standard_output_is_one_line_before_any_work(tmp_path, redirect):
    cmd = shlex.join([sys.executable, "-m", "repro", "migrate", str(tmp_path)])
    with open("/dev/full", "w") as full:
        r = subprocess.run(["bash", "-c", cmd + (" >&-" if redirect == "closed" else "")], stderr=subprocess.PIPE,
                           stdout=full if redirect == "full" else None, text=True, timeout=120)
    assert r.returncode == 2
    err = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(err) == 1 and err[0].startswith("error: standard output is") and "Traceback" not in r.stderr


def test_a_dry_run_with_data_whose_sha256_fails_says_so_and_exits_2(tmp_path, capsys, monkeypatch):
    data = tmp_path / "wikitext-2"
    data.mkdir()
    for name in ("wiki.test.raw", "wiki.valid.raw", "wiki.train.tokens"):
        (data / name).write_text(" = not WikiText = \n")
    monkeypatch.setenv("REPRO_DATA_DIR", str(tmp_path))
    p = profile(tmp_path, yaml.safe_dump({"profile": "x", "results_dir": str(tmp_path / "r"),
                                          "notebooks": {"01_mpg_head_pruning": {**SECTION, "data": "wikitext2:validation"}}}))
    assert main(["run", str(NB1), "--profile", str(p), "--dry-run"]) == 2
    line = one_line(capsys)
    assert "wiki.valid.raw: sha256" in line and "is not the expected" in line


def test_a_hub_id_that_cannot_be_reached_is_one_line_without_retrying(monkeypatch):
    from repro.assets.models import load_model

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setenv("REPRO_OFFLINE", "1")
    with pytest.raises(ReproError, match="the Hugging Face hub is not reachable .*HF_HUB_OFFLINE=1"):
        load_model("someorg/some-model")


def test_an_interrupt_python_swallowed_still_ends_the_command_with_130(tmp_path, capsys, monkeypatch):
    """A KeyboardInterrupt raised inside a ``__del__`` is dropped by Python ("Exception ignored in ..."); the
    signal handler's flag still ends the command as interrupted, with no result line."""
    import repro.cli as cli

    def swallowed(args):
        INTERRUPTED.set()  # what the handler does before raising, which Python then swallowed
        return {"done": True}

    monkeypatch.setattr(cli, "cmd_migrate", swallowed)
    assert main(["migrate", str(tmp_path)]) == 130
    out = capsys.readouterr()
    assert out.out == "" and out.err.strip().startswith("interrupted:")
    assert not INTERRUPTED.is_set()  # cleared for the next command


def test_an_interrupted_notebook_is_one_line_without_a_kernel_traceback(tmp_path):
    """Ctrl-C in a terminal reaches the whole process group, the kernel too: before, ipykernel's ZMQError and
    nbclient's 'Task exception was never retrieved' tracebacks came before the ``interrupted:`` line."""
    import os
    import signal
    import subprocess
    import sys
    import time

    marker = tmp_path / "cell-started"
    header = "# ---\n# jupyter:\n#   kernelspec:\n#     display_name: Python 3\n#     language: python\n#     name: python3\n# ---\n\n"
    (tmp_path / "nb.py").write_text(header + '# %% tags=["parameters"]\nx = 1\n\n# %%\nimport pathlib, time\n'
                                    f'pathlib.Path({str(marker)!r}).touch()\ntime.sleep(120)\n')
    (tmp_path / "p.yaml").write_text("notebooks:\n  nb: {x: 2}\n")
    proc = subprocess.Popen([sys.executable, "-m", "repro", "notebook", str(tmp_path / "nb.py"), "--profile",
                             str(tmp_path / "p.yaml"), "--out", str(tmp_path / "nb.ipynb")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                            # as from a terminal: a job a shell starts in the background inherits SIGINT ignored,
                            # which `repro` leaves alone (nohup's contract), and the Ctrl-C below would do nothing
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        deadline = time.monotonic() + 120
        while not marker.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        assert marker.exists(), proc.communicate(timeout=30)
        os.killpg(proc.pid, signal.SIGINT)  # what a terminal's Ctrl-C does
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "Task exception" not in err, err
    assert err.strip().splitlines()[-1].startswith("interrupted:") and out == ""
    assert not (tmp_path / "nb.ipynb").exists()


# ---- issue 64: what was checked late, or not at all ------------------------------------------------------------

@pytest.mark.parametrize("dry", [False, True])
@pytest.mark.parametrize("case", ["figures_dir a file", "results_dir a file", "REPRO_CACHE a file"])
def test_a_folder_a_run_writes_into_is_checked_before_any_work_dry_run_too(tmp_path, capsys, monkeypatch, case, dry):
    """Before, figures_dir naming a file failed inside the kernel, REPRO_CACHE naming a file after the model loaded,
    and a dry run with results_dir naming a file planned 87 cells and exited 0 while the run refused it."""
    f = tmp_path / "file"
    f.write_text("not a folder")
    section = dict(SECTION)
    top = {"profile": "x", "results_dir": str(tmp_path / "r")}
    if case == "figures_dir a file":
        section["figures_dir"] = str(f)
    elif case == "results_dir a file":
        top["results_dir"] = str(f)
    else:
        monkeypatch.setenv("REPRO_CACHE", str(f))
    p = profile(tmp_path, yaml.safe_dump({**top, "notebooks": {"01_mpg_head_pruning": section}}))
    assert main(["run", str(NB1), "--profile", str(p), *(["--dry-run"] if dry else [])]) == 2
    line = one_line(capsys)
    assert "is a file, not a folder" in line and case.split()[0] in line, line
    assert not (tmp_path / "r").exists() or not dry  # a dry run writes nothing


def test_a_yaml_alias_bomb_is_refused_at_once(tmp_path, capsys):
    """Nested aliases expand exponentially: before, no answer within 100 s."""
    bomb = ("profile: x\na: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
            "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\nnotebooks:\n  01_mpg_head_pruning:\n    models: [*c, *c]\n")
    assert main(["run", str(NB1), "--profile", str(profile(tmp_path, bomb)), "--dry-run"]) == 2
    assert "alias *a" in one_line(capsys)


def test_migrate_on_a_folder_that_cannot_be_written_is_one_line_and_moves_nothing(tmp_path, capsys, monkeypatch):
    """A read-only file system (chmod does not stop root: the write check is made to fail as EROFS would)."""
    import tempfile

    from repro.store import config_key

    config = {"protocol": 2, "model": {"name": "m", "source": "s"}, "seqlen": 8, "method": "mpg"}
    (tmp_path / "heads-ppl").mkdir()
    old = {"schema": 1, "experiment": "heads-ppl", "key": config_key(config), "config": config, "result": {"ppl": 2.0}}
    (tmp_path / "heads-ppl" / f"{old['key']}.json").write_text(json.dumps(old))
    before = {p: p.read_text() for p in tmp_path.rglob("*.json")}

    def read_only(*a, **k):
        raise OSError(errno.EROFS, "Read-only file system")
    monkeypatch.setattr(tempfile, "NamedTemporaryFile", read_only)
    assert main(["migrate", str(tmp_path)]) == 2
    assert "cannot be written: Read-only file system" in one_line(capsys)
    assert {p: p.read_text() for p in tmp_path.rglob("*.json")} == before


def test_a_notebook_cell_that_fails_is_one_error_line_naming_the_cause(tmp_path, capsys, monkeypatch):
    """Before, `repro notebook` printed the kernel's whole traceback for any error raised in a cell. A cell's failure
    reaches the CLI as papermill's PapermillExecutionError, made here without starting a kernel (a real kernel's
    gives the same line: checked by hand when this was written, 17 s a run)."""
    import papermill
    from papermill.exceptions import PapermillExecutionError

    header = "# ---\n# jupyter:\n#   kernelspec:\n#     display_name: Python 3\n#     language: python\n#     name: python3\n# ---\n\n"
    (tmp_path / "nb.py").write_text(header + '# %% tags=["parameters"]\nx = 1\n\n# %%\nprint(x)\n')
    (tmp_path / "p.yaml").write_text("notebooks:\n  nb: {x: 2}\n")
    source = "# the check\nfrom repro.errors import ReproError\nraise ReproError('...')"
    cases = [("ReproError", "seqlen 100000 exceeds the model's limit of 512 positions",
              "the cell beginning `from repro.errors import ReproError` failed: seqlen 100000 exceeds the model's "
              "limit of 512 positions"),
             ("KeyError", "'model'", "the cell beginning `from repro.errors import ReproError` failed: KeyError: "
                                     "'model'")]
    for ename, evalue, said in cases:
        def failed(*a, **k):
            raise PapermillExecutionError(2, 3, source, ename, evalue, ["Traceback (most recent call last):", "..."])
        monkeypatch.setattr(papermill, "execute_notebook", failed)
        assert main(["notebook", str(tmp_path / "nb.py"), "--profile", str(tmp_path / "p.yaml"), "--out",
                     str(tmp_path / "nb.ipynb")]) == 2
        err = capsys.readouterr().err
        assert err.strip().splitlines() == [f"error: notebook: {said}"] and "Traceback" not in err, err
        assert not (tmp_path / "nb.ipynb").exists()


def test_every_error_a_worker_raises_reaches_the_driver_intact():
    """With --jobs 2 a worker's error is pickled to the driver: UnknownNameError could not be rebuilt there, so the
    pool broke ("workers died 3 times") and the real cause was lost."""
    import pickle

    from repro import errors

    made = [errors.UnknownNameError("zero-shot task", "bogus", ["boolq", "piqa"]), errors.Interrupted(3),
            errors.ReproError("one line"), errors.RecordWriteError("disk full")]
    for e in made:
        back = pickle.loads(pickle.dumps(e))
        assert type(back) is type(e) and str(back) == str(e)
    assert {type(e) for e in made} >= {v for v in vars(errors).values() if isinstance(v, type)
                                       and issubclass(v, Exception) and v.__init__ is not Exception.__init__}
