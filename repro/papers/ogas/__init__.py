"""Paper 2 (OGAS): notebook 2's grid (:mod:`.grid`), its record frames (:mod:`.records`), tables and figures' data (:class:`.report.Report`, :mod:`.tables`) and claims (:mod:`.claims`).
"""
from repro.papers.ogas.claims import (  # noqa: F401
    COLLAPSE,
    PAPER_EFFECTS,
    PAPER_SOURCES,
    claims_table,
    metrics,
    ogas_claims,
    readme_blocks,
    summary,
)
from repro.papers.ogas.grid import ABLATION, OgasGrid, build, frame, own_headroom, plan, prune_frame  # noqa: F401
from repro.papers.ogas.records import (  # noqa: F401
    CHANCE,
    LABELS,
    PAPER_GAMMA,
    PAPER_ZEROSHOT,
    caption,
    dense_ppl,
    find,
    headroom_row,
    main_rows,
    paired_to,
    ratio_text,
    row_name,
    zeroshot_paired,
)
from repro.papers.ogas.report import Report  # noqa: F401
from repro.papers.ogas.tables import (  # noqa: F401
    ablation_table,
    achieved_table,
    chance_summary,
    curve_frame,
    curve_table,
    dense_vs_chance,
    figure2,
    figure2_axes,
    figure2_channels,
    gamma_bounds_table,
    gamma_frames,
    nm_table,
    ppl_table,
    rounding_table,
    table12,
    zeroshot_tables,
)
