"""Paper 1 (MP-G): notebook 1's grid (:mod:`.grid`), its record frames (:mod:`.records`), tables (:class:`.report.Report`, :mod:`.tables`, :mod:`.mha`) and claims (:mod:`.claims`).
"""
from repro.evaluate.stats import paired_difference  # noqa: F401  (the notebook's sanity cell)
from repro.papers.mpg import worked  # noqa: F401  (section 1a's sentences)
from repro.papers.mpg.claims import (  # noqa: F401
    PAPER_EFFECTS,
    PAPER_SOURCES,
    downstream_claims,
    efficiency_claims,
    mha_claims,
    mpg_claims,
)
from repro.papers.mpg.grid import MpgGrid, MpgParams, build, plan  # noqa: F401
from repro.papers.mpg.mha import MhaTables, vision_table, vision_z_table  # noqa: F401
from repro.papers.mpg.records import (  # noqa: F401
    CALIBRATED,
    EXTRA_METHODS,
    LABEL,
    PAPER_METHODS,
    TABLE3_METRIC,
    Z_METHODS,
    _and,
    _diff,
    _group_size,
    _half,
    _images,
    _kv_heads,
    _points,
    best_calibrated,
    curve,
    describe,
    draws,
    find,
    find_scores,
    grid,
    identical_scores,
    main_cells,
    metrics,
    paired_table,
    paired_vs,
    pct,
    pool_draws,
    ppl_frame,
    rank_counts,
    readme_blocks,
    scores_frame,
    vision_frame,
    vision_paired,
    zeroshot_cells,
)
from repro.papers.mpg.report import Report  # noqa: F401
from repro.papers.mpg.tables import Tables  # noqa: F401
