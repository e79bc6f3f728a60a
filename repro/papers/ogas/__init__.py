"""Paper 2 (OGAS): what notebook 2 and ``repro run`` use. The grid (:mod:`.grid`) and its parameters
(:mod:`.params`), the report (:class:`.report.Report`: each table with its caption and reading), the worked example
(:mod:`.worked`) and the readings the notebook shows apart from a table (:mod:`.readings`); the record frames
(:mod:`.records`), tables (:mod:`.tables`) and claims (:mod:`.claims`) are imported from their modules.
"""
from repro.papers.ogas import readings, worked
from repro.papers.ogas.grid import OgasGrid, build
from repro.papers.ogas.params import OgasParams
from repro.papers.ogas.records import find
from repro.papers.ogas.report import Report

Params = OgasParams  # the notebook's parameters (repro.notebooks.paper_module finds them by this name)

__all__ = ["Params", "OgasGrid", "OgasParams", "Report", "build", "find", "readings", "worked"]
