"""Paper 4, a toy: Wanda against magnitude pruning at one sparsity, on tiny models. It is the recipe of
docs/extending.md in one file (a real paper splits it into params, grid, records, tables, claims, report):
parameters declared once, sections as data, a report that returns each table with its caption and reading, one
claim through repro.claims. tests/test_toy_paper.py copies it beside a notebook and runs both."""
import numpy as np
import pandas as pd

from repro.claims import claims_frame, ratio_claim
from repro.engines.base import owned
from repro.engines.params import NotebookParams
from repro.engines.plan import Sections, section
from repro.engines.prune import PruneExperiment
from repro.evaluate.stats import paired_ratio
from repro.report import caption as caption_line


class ToyParams(NotebookParams):
    """Every parameter of the toy notebook, each default declared here once."""
    profile: str = "toy"
    results_dir: str = "results"
    figures_dir: str = "figures"
    update_readme: bool = False
    models: list[str] = ["tiny-llama"]
    data: str = "wiki-sample"
    seqlen: int = 32
    max_windows: int | None = 24
    batch_size: int = 4
    calib_data: str = "wiki-sample"
    calib_nsamples: int = 4
    calib_seqlen: int = 32
    methods: list[str] = ["magnitude", "wanda"]
    sparsity: float = 0.5


Params = ToyParams


class ToyGrid(Sections):
    """Per model one pruning experiment; one section: dense and every method at ``sparsity``."""
    sections = ("table",)

    def __init__(self, session):
        self.p, self.store = ToyParams.of(session.params), session.store
        self.lm = session.experiments(PruneExperiment, self.p.models)

    @section(shows=lambda grid: grid.frame())
    def table(self):
        for e in self.lm.values():
            yield e.dense.ask()
            for m in self.p.methods:
                yield e.cell.ask(m, self.p.sparsity)

    def frame(self) -> pd.DataFrame:
        return pd.DataFrame([{"key": ("prune-ppl", r["key"]), "model": e.name, "method": r["config"]["method"],
                              "ppl": r["result"]["ppl"], "window_nll": r["result"]["window_nll"]}
                             for r, e in owned(self.store, "prune-ppl", self.lm)])


class Report:
    """The toy's table and claim: each returned with its caption and a sentence generated from the numbers."""

    def __init__(self, session, grid: ToyGrid):
        self.session, self.grid = session, grid

    def table(self, frame: pd.DataFrame):
        table = frame.pivot(index="model", columns="method", values="ppl")
        best = table.drop(columns="dense").idxmin(axis=1)
        reading = "; ".join(f"on {m} {b} prunes best (perplexity {table.loc[m, b]:.4g}, dense "
                            f"{table.loc[m, 'dense']:.4g})" for m, b in best.items()) + "."
        cap = caption_line(f"Perplexity at {self.grid.p.sparsity:.0%} unstructured sparsity.",
                           ", ".join(self.grid.lm), self.grid.p.profile, self.grid.store.cache_summary(list(frame.key)))
        return table, cap, reading

    def claims(self, frame: pd.DataFrame) -> pd.DataFrame:
        out = []
        for model, g in frame.groupby("model"):
            by = {r.method: np.asarray(r.window_nll) for r in g.itertuples()}
            out.append(ratio_claim("Wanda beats magnitude", model, "ppl Wanda / magnitude",
                                   paired_ratio(by["wanda"], by["magnitude"])))
        return claims_frame(out)


def build(session) -> ToyGrid:
    return ToyGrid(session)
