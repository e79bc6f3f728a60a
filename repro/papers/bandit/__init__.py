"""Paper 3 (damage-aware bandit pruning): what notebook 3 and ``repro run`` use. The grid (:mod:`.grid`) and its
parameters (:mod:`.params`), the report (:class:`.report.Report`: each table with its caption and reading), the
synthetic worked example (:mod:`.synthetic`), the layer-scale measurements (:mod:`.rescale`), the readings of the
cells that show no table (:mod:`.readings`) and the few helpers the notebook's cells call; the record frames
(:mod:`.records`), tables (:mod:`.tables`) and claims (:mod:`.claims`) are imported from their modules.
"""
from repro.methods.bandit import reward_summary
from repro.papers.bandit import rescale, synthetic
from repro.papers.bandit.claims import readme_blocks
from repro.papers.bandit.grid import BanditGrid, build
from repro.papers.bandit.lambada import read_check
from repro.papers.bandit.params import BanditParams
from repro.papers.bandit.readings import lambada_reading, rescale_reading, score_layers_reading, worked_join_reading
from repro.papers.bandit.records import LABELS, first_run
from repro.papers.bandit.report import Report
from repro.papers.bandit.tables import lm_table, seed_gaps, vision_table

Params = BanditParams  # the notebook's parameters (repro.notebooks.paper_module finds them by this name)

__all__ = ["Params", "BanditGrid", "BanditParams", "LABELS", "Report", "build", "first_run", "lambada_reading",
           "lm_table", "read_check", "readme_blocks", "rescale", "rescale_reading", "reward_summary",
           "score_layers_reading", "seed_gaps", "synthetic", "vision_table", "worked_join_reading"]
