"""Notebook 1's experiments and the cells it asks for (:func:`build`, :func:`plan`).
"""
from __future__ import annotations

from repro.engines.heads import HeadExperiment, VisionHeadExperiment
from repro.papers.mpg.records import Z_METHODS, main_cells, ppl_frame
from repro.papers.mpg.tables import Tables


def build(session) -> tuple[dict, dict]:
    """Notebook 1's experiments from its parameters: ``({model: HeadExperiment}, {model:
    VisionHeadExperiment})``, the language models and the MHA image classifiers."""
    p = session.params
    lm = session.experiments(HeadExperiment, p["models"], grad_nsamples=p["grad_nsamples"], tie_seeds=p["tie_seeds"])
    vision = session.experiments(VisionHeadExperiment, p.get("vision_models") or [], n_calib=p["vision_n_calib"],
                                 grad_nsamples=p["vision_grad_nsamples"], n_eval=p["vision_n_eval"])
    return lm, vision


def plan_vision(session, vision: dict) -> None:
    """The MHA-encoder section's cells: every method's scores (MP's at every z too, for the exact
    MP-G = MP check), dense and every method x sparsity, and MP-G's z sweep."""
    p = session.params
    for e in vision.values():
        e.grid(["mp"], (), p["z_values"])  # scores only
        e.grid(p["methods"], p["sparsities"], dense=True)
        e.grid(["mpg"], p["z_sparsities"], p["z_values"])


def plan(session, built: tuple[dict, dict]) -> None:
    """Ask for every cell notebook 1 asks for, by the calls its cells make, in their order (while
    the store plans, a missing record becomes a job; ``tests/test_notebooks.py`` runs the plan,
    then the notebook, and checks that the notebook computed nothing)."""
    p = session.params
    exps, vision = built
    if exps:  # the norm-profile figure: the middle layer of the first model
        first = next(iter(exps.values()))
        first.norm_profile(first.shape[0] // 2)
    for e in exps.values():
        e.grid(p["methods"])  # scores
    for e in exps.values():
        e.grid(p["methods"], p["sparsities"], dense=True)  # Table I
    for e in exps.values():
        if e.bos is not None:
            e.without_bos().dense()  # the feeding table
    for e in exps.values():
        e.grid(Z_METHODS, p["z_sparsities"], p["z_values"])  # Table II
    if p["zeroshot_tasks"] and session.store.plan.empty:  # the cells follow Table I's ranking
        cells = Tables(session, exps).zeroshot_cells(main_cells(ppl_frame(session.store, exps)),
                                                     p["zeroshot_models"], p["zeroshot_sparsities"])
        for n, c in cells.items():
            exps[n].zeroshot_grid(c, p["zeroshot_tasks"], p["zeroshot_limit"])
    for e in exps.values():
        e.grid(["mpg"], p["sparsities"], tie_break="random")
    for n in p["efficiency_models"]:
        if n in exps:
            exps[n].efficiency("mpg", p["efficiency_sparsities"], p["efficiency_batches"], p["efficiency_seqlen"],
                               p["efficiency_repeats"])
    plan_vision(session, vision)
