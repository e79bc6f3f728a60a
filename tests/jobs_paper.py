"""A paper module for tests/test_jobs.py: notebook 1's head experiment on tiny models, whose dense
cell can kill its own worker process mid-cell (once: a marker file says it happened), and a
notebook source that names this module."""
import os
import signal
import time
from pathlib import Path

from repro.engines import plan as P
from repro.engines.heads import HeadExperiment

NOTEBOOK = '''# ---
# jupyter:
#   repro:
#     module: jobs_paper
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% tags=["parameters"]
profile = "test"
results_dir = "results"
figures_dir = "figures"
models = ["tiny-llama"]
methods = ["mpg", "mp"]
sparsities = [0.25, 0.5]
data = "wiki-sample"
seqlen = 32
max_windows = 2
calib_data = "wiki-sample"
calib_nsamples = 2
calib_seqlen = 32
kill_marker = ""
hold_marker = ""

# %%
print("rendered")
'''


def write_notebook(folder: Path) -> Path:
    path = Path(folder) / "nb.py"
    path.write_text(NOTEBOOK)
    return path


class KillOnce(HeadExperiment):
    """The dense cell kills its own process in the middle of its computation (record not yet
    written, cell lock held) the first time, when ``kill_marker`` names a file that does not exist;
    with ``hold_marker`` naming one that does not exist, it writes it and waits there for a minute instead
    (a test kills the run while the cell is held)."""

    def __init__(self, *args, kill_marker: str = "", hold_marker: str = "", **kwargs):
        super().__init__(*args, **kwargs)
        self.kill_marker, self.hold_marker = kill_marker, hold_marker

    @P.cell
    def dense(self) -> dict:
        def compute():
            out = self._evaluate(None)
            if self.kill_marker and not os.path.exists(self.kill_marker):
                Path(self.kill_marker).write_text(str(os.getpid()))
                os.kill(os.getpid(), signal.SIGKILL)
            if self.hold_marker and not os.path.exists(self.hold_marker):
                Path(self.hold_marker).write_text(str(os.getpid()))
                time.sleep(60)
            return out
        return (yield P.Ask("heads-ppl", {**self.base_config(), "method": "dense"}, compute))


class Grid(P.Sections):
    """One section: dense and every method x sparsity of every model."""
    sections = ("table",)

    def __init__(self, session):
        self.p = session.params
        self.lm = {m: KillOnce(m, session.setup(m), session.store, progress=False, kill_marker=self.p["kill_marker"],
                                hold_marker=self.p.get("hold_marker", ""))
                   for m in self.p["models"]}

    @P.section
    def table(self):
        for e in self.lm.values():
            yield e.grid.ask(self.p["methods"], self.p["sparsities"], dense=True)


def build(session) -> Grid:
    return Grid(session)


def records(root) -> dict:
    """Every record under ``root`` (model cards aside), by path: its text."""
    return {p.relative_to(root): p.read_text() for p in root.rglob("*.json") if p.parent.name != "models"}


def untimed(x):
    """A record's result without its measured times (what differs between two runs of one cell)."""
    if isinstance(x, dict):
        return {k: untimed(v) for k, v in x.items() if "seconds" not in k}
    return [untimed(v) for v in x] if isinstance(x, list) else x
