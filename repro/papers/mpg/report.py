"""Notebook 1's tables with their captions for one session's grid (:class:`Report`): the language
models' tables (:class:`~repro.papers.mpg.tables.Tables`) and the MHA encoders' (``mha``)."""
from __future__ import annotations

from repro.papers.mpg.grid import MpgGrid
from repro.papers.mpg.mha import MhaTables
from repro.papers.mpg.records import describe
from repro.papers.mpg.tables import Tables


class Report(Tables):
    """Paper 1's tables: each method takes what a section of the grid returned."""

    def __init__(self, session, grid: MpgGrid):
        super().__init__(session, grid.lm)
        self.grid = grid
        self.mha = MhaTables(session, grid.vision)

    def describe(self) -> str:
        """The models, their geometry and the evaluation sample, one line each."""
        return describe(self.grid.lm)
