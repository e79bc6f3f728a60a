"""Notebook 2's check of RIA against its authors' code, read from the benchmark's JSON: the ratios are paired over
windows, and the sentence follows the reference's interval (a property of RIA, of this implementation, or open)."""
import numpy as np

from repro.papers.ogas.reference import EXACT, REFERENCE, WANDA_EXACT, ratios, reference_reading


def _check(ria_shift: float, ours_shift: float) -> dict:
    rng = np.random.default_rng(0)
    base = 3.0 + rng.normal(0, 0.3, 32)  # per-window NLLs of Wanda's model

    def ppl(nll):
        return {"ppl": float(np.exp(np.mean(nll))), "window_nll": list(map(float, nll))}

    noise = rng.normal(0, 0.01, 32)
    agree = {"bits_differing": 10, "overall": 1 - 10 / 1000, "layers_identical": 3, "layers": 4}
    return {"model": "m", "nsamples": 16, "seqlen": 256, "seed": 0, "sparsity": 0.5,
            "dense": {"eval": {"data": "wikitext2:test", "seqlen": 1024, "windows": 32}},
            "cases": {"wanda unstructured": {"reference ppl": ppl(base), WANDA_EXACT: {"ppl": ppl(base + noise)}},
                      "ria unstructured": {"reference ppl": ppl(base + ria_shift + noise),
                                           EXACT: {**agree, "ppl": ppl(base + ours_shift + noise)},
                                           REFERENCE: {**agree, "bits_differing": 0, "overall": 1.0,
                                                       "layers_identical": 4}}}}


def test_the_reading_follows_the_references_interval():
    worse = _check(0.05, 0.05)
    r = ratios(worse)
    assert r["reference"].estimate > 1.04 and r["reference"].ci[0] > 1  # exp(0.05), paired: the shift is exact
    text = reference_reading(worse)
    assert "property of RIA on this model" in text and "differ in 0 bits" in text and "of 1,000" in text
    assert "comes from this implementation" in reference_reading(_check(-0.05, 0.05))
    assert "cannot say" in reference_reading(_check(0.0, 0.05))


def test_a_missing_check_says_how_to_make_it():
    assert "run `benchmarks/reference_masks.py" in reference_reading(None)
    c = _check(0.05, 0.05)
    del c["cases"]["wanda unstructured"]
    assert ratios(c) is None and "property" not in reference_reading(c)


def test_the_headroom_reading_sets_perplexity_against_the_clamp_it_changes():
    """Three headrooms at 80%: the clamp holds 10% / 0% of the channels as the headroom grows (read off the 21
    stored quantiles) while perplexity rises then falls: the reading says the clamp alone does not explain it,
    reports the gamma moves, and, every point above a uniform guess, that their order is no finding."""
    import pandas as pd

    from repro.papers.ogas.readings import clamp_share, headroom_reading

    q = np.linspace(0.5, 0.9, 21)
    q[-3:] = 0.9  # 3 points at S_max: at least 2 / 20 of the channels
    assert clamp_share(q.tolist(), 0.9) == 0.1 and clamp_share(np.linspace(0, 0.5, 21).tolist(), 0.9) == 0.0

    def cell(h, s_max, share_points, gamma, ppl):
        qs = np.linspace(0.4, s_max - 0.05, 21)
        if share_points:
            qs[-share_points:] = s_max
        return {"data": "wt", "method": "ogas", "model": "m", "sparsity": 0.8, "ppl": ppl,
                "params": {"gamma": "search", "s_max_headroom": h, "rounding": "paper"},
                "extras": {"l0": {"s_max": s_max, "gamma": gamma}}, "channel_quantiles": {"l0": qs.tolist()}}

    frame = pd.DataFrame([cell(0.05, 0.85, 3, 0.5, 18000.0), cell(0.1, 0.9, 2, 0.8, 50000.0),
                          cell(0.2, 1.0, 0, 0.6, 16000.0)])
    text = headroom_reading(frame, "wt", [0.05, 0.2], {"m": 20.0}, {"m": 15000.0})
    assert "holds at least 10% / 5% / 0%" in text and "moves by 0.30 / 0.20" in text
    assert "does not explain the order" in text and "Every point has collapsed" in text
    frame.loc[1, "ppl"] = 17000.0  # now it falls as the clamp loosens
    assert "moves one way" in headroom_reading(frame, "wt", [0.05, 0.2], {"m": 20.0}, {"m": 15000.0})
    assert headroom_reading(frame[frame.params.map(lambda p: p["s_max_headroom"]) != 0.1], "wt", [0.05, 0.2],
                            {"m": 20.0}, {"m": None}) == ""  # no default cell: nothing to read against


def test_sparsegpt_reading_says_float_order_only_where_the_masks_agree_with_the_same_accumulation():
    from repro.papers.ogas.reference import SGPT_EXACT, SGPT_RUNNING, SGPT_SAME_H, sparsegpt_reading

    check = {"model": "m", "sparsity": 0.5, "nsamples": 8, "seqlen": 512, "batch_size": 4,
             SGPT_RUNNING: {"bits_differing": 0, "layers": 7, "layers_identical": 7},
             SGPT_EXACT: {"bits_differing": 1200, "overall": 0.96},
             SGPT_SAME_H: {"l0": {"weights_identical": True}}}
    text = sparsegpt_reading(check)
    assert "0 mask bits differ in 7 layers" in text and "float order in which H is accumulated" in text
    assert "1,200 bits (4.0%) differ" in text
    apart = sparsegpt_reading({**check, SGPT_RUNNING: {"bits_differing": 3, "layers": 7, "layers_identical": 6}})
    assert "the implementations differ" in apart and "float order in which" not in apart
    assert sparsegpt_reading(None).startswith("No committed SparseGPT reference check")
