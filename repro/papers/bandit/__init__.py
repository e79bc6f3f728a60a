"""Paper 3 (damage-aware bandit pruning): notebook 3's grid (:mod:`.grid`), its record frames (:mod:`.records`), tables (:class:`.report.Report`, :mod:`.tables`) and claims (:mod:`.claims`).
"""
from repro.papers.bandit.claims import (  # noqa: F401
    LAMBADA_VS_GREEDY,
    PAPER_EFFECTS,
    PAPER_SOURCES,
    _below_dense,
    bandit_claims,
    claims_summary,
    discussion,
    readme_blocks,
)
from repro.papers.bandit.grid import BanditGrid, BanditParams, build, plan  # noqa: F401
from repro.papers.bandit.lambada import investigation as lambada_investigation  # noqa: F401
from repro.papers.bandit.lambada import read_check  # noqa: F401
from repro.papers.bandit.records import (  # noqa: F401
    CELL,
    LABELS,
    LOWER_IS_BETTER,
    MAB,
    MAB_VS_GREEDY,
    SETTING,
    _keep,
    _selection_fields,
    _signature,
    ablation_rules,
    bandit_frame,
    first_run,
    head_maps,
    stale_picks,
    vision_frame,
)
from repro.papers.bandit.report import BanditReport, Report  # noqa: F401
from repro.papers.bandit.tables import (  # noqa: F401
    DENSE_FAMILY,
    OTHER_FAMILY,
    PAPER_COUNTS,
    PAPER_FAMILY,
    _labelled,
    allocation_table,
    budget_table,
    family_summary,
    greedy_tests,
    layer_profile,
    lm_summary,
    lm_table,
    mab_tests,
    memory_ablation,
    per_seed_table,
    removal_table,
    reward_table,
    summary,
    vision_summary,
    vision_table,
    vs_dense,
)
