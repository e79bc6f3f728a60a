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
from repro.papers import mpg as R
from repro.store import Store


def session(store, models=("tiny-vit",)):
    return SimpleNamespace(store=store, profile="test", params={
        "methods": ["mpg", "mp", "wanda-head", "gradient-head", "random"], "sparsities": [0.25, 0.5],
        "z_values": [1.5, 2.0, 2.5], "z_sparsities": [0.5], "vision_models": list(models)})


def test_plan_lists_the_section_without_computing(tmp_path):
    store = Store(tmp_path)
    e = VisionHeadExperiment("tiny-vit", Setup(eval_dtype="float32"), store, n_calib=16, grad_nsamples=8,
                             n_eval=40, progress=False, loaded=loaded("tiny-vit"))
    store.plan = Plan()
    try:
        R.MpgGrid(session(store), lm={}, vision={"tiny-vit": e}).mha()
        plan = store.plan
    finally:
        store.plan = None
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
    claims = R.mha_claims(frame, scores, ["m"], [0.25, 0.5], [1.5, 2.0, 2.5], [0.25, 0.5], {"m": (3, 4, 4)})
    by = {(c.claim.split(":")[0] if c.claim.startswith("MP-G reduces") else c.claim, c.setting): c for c in claims}
    exact = [c for c in claims if c.claim.startswith("MP-G reduces to MP for MHA")]
    assert len(exact) == 2 and all(c.verdict == HOLDS for c in exact)
    assert by[("MHA models prefer z = 1.5", "m, 50.0%")].verdict == HOLDS
    assert by[("MHA models prefer z = 1.5", "m, 25.0%")].verdict != HOLDS  # z = 2.0 is as good there
    best = "MP-G is best at every sparsity on an MHA model (paper: OPT-6.7B)"
    assert by[(best, "m, 25.0%")].verdict == HOLDS and "Wanda-Head" in by[(best, "m, 25.0%")].measured
    assert by[(best, "m, 50.0%")].verdict == FAILS and "Wanda-Head" in by[(best, "m, 50.0%")].measured
    # a model whose MP-G and MP scores differ does not hold the exact claim
    scores.loc[scores.method.eq("mp") & scores.z.eq(2.0), "scores"] = [np.ones((3, 4))]
    bad = R.mha_claims(frame, scores, ["m"], [0.25], [1.5, 2.0, 2.5], [], {"m": (3, 4, 4)})
    assert [c.verdict for c in bad if c.claim.startswith("MP-G reduces")] == [FAILS, FAILS]
    # every row carries the paper's sentence it tests, in quotation marks only where the issues quote it
    shown = claims_frame(with_sources(claims, R.PAPER_SOURCES))
    assert shown.source.str.len().gt(0).all()
    assert set(shown.source) >= {'Table II: "MHA models prefer z = 1.5"', 'eq. 3: "MP-G reduces to MP for MHA"'}


def test_every_paper1_claim_has_a_source():
    quoted = [v for v in R.PAPER_SOURCES.values() if '"' in v]
    for v in R.PAPER_SOURCES.values():
        assert v.startswith(("paraphrase:", "beyond the paper:")) or '"' in v, v
    assert all(v.count('"') == 2 for v in quoted)


def test_vision_tables(monkeypatch):
    frame, _ = constructed()
    table, raw = R.vision_table(frame, ["m"], [0.25, 0.5], ["mpg", "mp", "wanda-head"])
    assert list(table.method[:4]) == ["Dense", "MP-G", "MP", "Wanda-Head"]
    mp = table[(table.method == "MP") & (table.sparsity == "25.0%")].iloc[0]
    assert mp["CE - MP-G (nats)"].startswith("+0.0000") and mp["top-1 - MP-G (pp)"].startswith("+0.00")
    z, ce = R.vision_z_table(frame, ["m"], [1.5, 2.0, 2.5], [0.5])
    assert ce.loc["MP-G, z = 1.5", "m @ 50.0%"] == ce["m @ 50.0%"].min() and "**" in z.at["MP-G, z = 1.5", "m @ 50.0%"]
