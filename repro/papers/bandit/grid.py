"""Notebook 3's experiments and the cells it asks for (:func:`build`, :func:`plan`).
"""
from __future__ import annotations

from repro.engines.bandit import BanditExperiment, VisionBanditExperiment
from repro.papers.bandit.records import MAB


def build(session) -> tuple[dict, dict]:
    """Notebook 3's experiments from its parameters: ``({model: BanditExperiment},
    {model: VisionBanditExperiment})``."""
    p = session.params
    lm = session.experiments(BanditExperiment, p["models"], calib_batch_size=p["calib_batch_size"],
                             search_dtype=p["search_dtype"])
    vision = session.experiments(VisionBanditExperiment, p["vision_models"], n_calib=p["vision_n_calib"],
                                 n_eval=p["vision_n_eval"], calib_batch_size=p["vision_calib_batch_size"],
                                 search_dtype=p["search_dtype"])
    return lm, vision


def plan(session, built: tuple[dict, dict]) -> None:
    """Ask for every cell notebook 3 asks for (see :func:`repro.papers.mpg.plan`)."""
    p, (lm, vision) = session.params, built
    for name, e in lm.items():
        e.grid(p["unit_settings"].get(name, {}), p["methods"], p["seeds"], p["search"], p["lambada_limit"])
    for e in vision.values():
        e.grid({"head": [p["vision_ratio"]]}, p["vision_methods"], p["seeds"], p["vision_search"])
    if p.get("memory_ablation"):  # the carry-over variant of the MAB searches, same seeds and budgets
        for name, e in lm.items():
            e.grid(p["unit_settings"].get(name, {}), list(MAB), p["seeds"], {**p["search"], "memory": "carry"},
                   p["lambada_limit"])
        for e in vision.values():
            e.grid({"head": [p["vision_ratio"]]}, list(MAB), p["seeds"], {**p["vision_search"], "memory": "carry"})
    rm = p["removal"]
    if rm["model"] in lm:
        lm[rm["model"]].removal(rm["method"], p["unit_settings"][rm["model"]], rm["seed"], p["search"], rm["batches"],
                                p["seqlen"], rm["repeats"])
