"""Paper 1 on MHA encoders, the reader's side (repro.papers.mpg): the section's cells planned
without computing, its claims and tables on constructed records, and the paper sentence of every
Paper 1 claim row."""
from types import SimpleNamespace

import numpy as np
import pandas as pd
from test_mpg_encoder import loaded

from repro.claims import FAILS, HOLDS, claims_frame, with_sources
from repro.engines.base import Setup
from repro.engines.heads import VisionHeadExperiment
from repro.engines.plan import Plan
from repro.papers.mpg.claims import PAPER_SOURCES, mha_claims
from repro.papers.mpg.grid import MpgGrid
from repro.papers.mpg.mha import vision_table, vision_z_table
from repro.store import Store


def session(store, models=("tiny-vit",)):
    return SimpleNamespace(store=store, profile="test", params={
        "methods": ["mpg", "mp", "wanda-head", "gradient-head", "random"], "sparsities": [0.25, 0.5],
        "z_values": [1.5, 2.0, 2.5], "z_sparsities": [0.5], "vision_models": list(models)})


def test_plan_lists_the_section_without_computing(tmp_path):
    store = Store(tmp_path)
    e = VisionHeadExperiment("tiny-vit", Setup(eval_dtype="float32"), store, n_calib=16, grad_nsamples=8,
                             n_eval=40, progress=False, loaded=loaded("tiny-vit"))
    plan = Plan()
    plan.visit(MpgGrid(session(store), lm={}, vision={"tiny-vit": e}).mha.ask())
    jobs = plan.ordered()
    calls = [(j.call, j.args) for j in jobs]
    assert calls[:3] == [("scores", ("mp", 1.5)), ("scores", ("mp", 2.0)), ("scores", ("mp", 2.5))]
    assert ("dense", ()) in calls
    assert {a[0] for c, a in calls if c == "scores"} == {"mpg", "mp", "wanda-head", "gradient-head", "random"}
    assert {a[1] for c, a in calls if c == "scores" and a[0] == "mpg"} == {1.5, 2.0, 2.5}  # the z sweep's scores
    assert plan.blocked == 5 * 2 + 3  # each pruned cell waits for its scores (the z sweep asks 3 at 50%)
    assert not [f for f in tmp_path.rglob("*.json") if f.parent.name != "models"]  # no record (a model card only)


def constructed(n: int = 200, seed: int = 0):
    """A vision frame and score records of one MHA model: MP-G = MP; z = 1.5 better than 2.0 and
    2.5 at 50%; MP-G beats every other paper method at 25%, Wanda-Head beats it at 50%."""
    rng = np.random.default_rng(seed)
    base = rng.gamma(2.0, 0.3, n)
    rows = []

    def row(method, sp, ce, z=None):
        correct = (ce < 0.6).astype(int)
        rows.append({"key": ("heads-vision", f"{method}{sp}{z}"), "model": "m", "method": method, "z": z,
                     "sparsity": sp, "tie_break": "index", "tie_seed": None, "n_eval": n, "dtype": "float32",
                     "top1": float(correct.mean()), "ce": float(ce.mean()), "per_image_ce": ce.tolist(),
                     "per_image_correct": correct.tolist(), "pruned": [], "n_pruned": 1, "calibration": None})
    row("dense", 0.0, base)
    for sp, shift in ((0.25, 0.1), (0.5, 0.4)):
        for z in (1.5, 2.0, 2.5):
            row("mpg", sp, base + shift + (0.0 if z == 1.5 or sp == 0.25 and z == 2.0 else 0.05)
                + rng.normal(0, 0.01, n), z)
        row("mp", sp, np.asarray(rows[-2]["per_image_ce"]), 2.0)
        for m, extra in (("wanda-head", 0.1 if sp == 0.25 else -0.2), ("sparsegpt-head", 0.2),
                         ("gradient-head", 0.3), ("hybrid", 0.15)):
            row(m, sp, base + shift + extra + rng.normal(0, 0.01, n), 2.0 if m == "hybrid" else None)
    s = rng.random((3, 4))
    scores = pd.DataFrame([{"key": None, "model": "m", "method": m, "z": z, "seed": None, "calibration": None,
                            "scores": s * z, "seconds": 0.0} for m in ("mpg", "mp") for z in (1.5, 2.0, 2.5)])
    return pd.DataFrame(rows), scores


def test_mha_claims_on_constructed_records():
    frame, scores = constructed()
    claims = mha_claims(frame, scores, ["m"], [0.25, 0.5], [1.5, 2.0, 2.5], [0.25, 0.5], {"m": (3, 4, 4)})
    by = {(c.claim.split(":")[0] if c.claim.startswith("MP-G reduces") else c.claim, c.setting): c for c in claims}
    exact = [c for c in claims if c.claim.startswith("MP-G reduces to MP for MHA")]
    assert len(exact) == 2 and all(c.verdict == HOLDS for c in exact)
    assert {c.kind for c in exact} == {"true by construction"}  # as in Table III's and the main table's rows (issue 66)
    assert by[("MHA models prefer z = 1.5", "m, 50.0%")].verdict == HOLDS
    assert by[("MHA models prefer z = 1.5", "m, 25.0%")].verdict != HOLDS  # z = 2.0 is as good there
    best = "MP-G is best at every sparsity on an MHA model (paper: OPT-6.7B)"
    assert by[(best, "m, 25.0%")].verdict == HOLDS and "Wanda-Head" in by[(best, "m, 25.0%")].measured
    assert by[(best, "m, 50.0%")].verdict == FAILS and "Wanda-Head" in by[(best, "m, 50.0%")].measured
    # a model whose MP-G and MP scores differ does not hold the exact claim
    scores.loc[scores.method.eq("mp") & scores.z.eq(2.0), "scores"] = [np.ones((3, 4))]
    bad = mha_claims(frame, scores, ["m"], [0.25], [1.5, 2.0, 2.5], [], {"m": (3, 4, 4)})
    assert [c.verdict for c in bad if c.claim.startswith("MP-G reduces")] == [FAILS, FAILS]
    # every row carries the paper's sentence it tests, in quotation marks only where the issues quote it
    shown = claims_frame(with_sources(claims, PAPER_SOURCES))
    assert shown.source.str.len().gt(0).all()
    assert set(shown.source) >= {'Table II: "MHA models prefer z = 1.5"', 'eq. 3: "MP-G reduces to MP for MHA"'}


def test_every_paper1_claim_has_a_source():
    quoted = [v for v in PAPER_SOURCES.values() if '"' in v]
    for v in PAPER_SOURCES.values():
        assert v.startswith(("paraphrase:", "beyond the paper:")) or '"' in v, v
    assert all(v.count('"') == 2 for v in quoted)


def test_vision_tables(monkeypatch):
    frame, _ = constructed()
    table, raw = vision_table(frame, ["m"], [0.25, 0.5], ["mpg", "mp", "wanda-head"])
    assert list(table.method[:4]) == ["Dense", "MP-G", "MP", "Wanda-Head"]
    mp = table[(table.method == "MP") & (table.sparsity == "25.0%")].iloc[0]
    assert mp["CE - MP-G (nats)"].startswith("+0.0000") and mp["top-1 - MP-G (pp)"].startswith("+0.00")
    z, ce = vision_z_table(frame, ["m"], [1.5, 2.0, 2.5], [0.5])
    assert ce.loc["MP-G, z = 1.5", "m @ 50.0%"] == ce["m @ 50.0%"].min() and "**" in z.at["MP-G, z = 1.5", "m @ 50.0%"]


def test_surprising_cells_names_each_cell_above_dense_or_near_chance():
    """Section 9's check, moved out of the notebook: a pruned cell with a higher top-1 than dense, or one at chance,
    is named with its images right against dense and its paired cross-entropy difference; none, and it says so."""
    from repro.evaluate.stats import paired_difference
    from repro.papers.mpg.readings import surprising_cells_reading

    full, _ = constructed()
    dense = full[full.method == "dense"].iloc[0]
    n = len(dense.per_image_ce)
    worse = dict(dense, method="mpg", z=2.0, sparsity=0.25, top1=dense.top1 - 0.01)  # below dense, above chance
    frame = pd.DataFrame([dict(dense), worse])
    assert surprising_cells_reading(frame, ["m"]) == "No pruned cell above its dense top-1 or below chance."
    lucky = dict(worse, method="random", z=None, sparsity=0.25, per_image_correct=[1] * n, top1=1.0,
                 per_image_ce=(np.asarray(dense.per_image_ce) + 0.5).tolist(), ce=dense.ce + 0.5)
    broken = dict(lucky, sparsity=0.5, per_image_correct=[0] * n, top1=0.105)
    text = surprising_cells_reading(pd.concat([frame, pd.DataFrame([lucky, broken])], ignore_index=True),
                                    ["m"]).splitlines()
    right = n - int(np.sum(dense.per_image_correct))
    d = paired_difference(np.asarray(lucky["per_image_ce"]), np.asarray(dense.per_image_ce))
    assert text[0] == (f"m Random z=None at 25.0%: top-1 100.00% (dense {100 * dense.top1:.2f}%, {right:+d} of {n} "
                       f"images), CE - dense {d.estimate:+.4f} [{d.ci[0]:+.4f}, {d.ci[1]:+.4f}] nats (CE "
                       f"{lucky['ce']:.2f}; uniform guessing: ln 10 = 2.30)")
    assert len(text) == 2 and text[1].startswith("m Random z=None at 50.0%: top-1 10.50%")
