"""Paper 1 (MP-G): what notebook 1 and ``repro run`` use. The grid (:mod:`.grid`) and its parameters
(:mod:`.params`), the report (:class:`.report.Report`: each table with its caption and reading), the readings the
notebook shows apart from a table (:mod:`.readings`) and the few helpers its teaching cells call; the record frames
(:mod:`.records`), tables (:mod:`.tables`, :mod:`.mha`, :mod:`.glue`, :mod:`.collapse`) and claims (:mod:`.claims`)
are imported from their modules.
"""
from repro.methods.heads import excess, select_heads
from repro.papers.mpg import readings
from repro.papers.mpg.grid import MpgGrid, build
from repro.papers.mpg.params import MpgParams
from repro.papers.mpg.records import LABEL, curve, find, metrics, pct, readme_blocks
from repro.papers.mpg.report import Report

Params = MpgParams  # the notebook's parameters (repro.notebooks.paper_module finds them by this name)

__all__ = ["Params", "LABEL", "MpgGrid", "MpgParams", "Report", "build", "curve", "excess", "find", "metrics", "pct",
           "readings", "readme_blocks", "select_heads"]
