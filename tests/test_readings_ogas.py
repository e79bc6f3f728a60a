"""The generated sentences after notebook tables (issue 29): each reader on a constructed table, so a
reading that names the wrong row, miscounts or says 'better' for 'worse' fails here. Paper: ogas."""
import numpy as np
import pandas as pd

from repro.papers.ogas import readings as Rd

BASE = np.tile([2.0, 2.5, 3.0, 3.5], 5)  # 20 windows: the fewest a paired bootstrap accepts


def test_ogas_achieved_reading_separates_the_exact_methods_from_the_rounding():
    t = pd.DataFrame({"method": ["Wanda", "OGAS", "OGAS"], "target": [0.5] * 3, "achieved": [0.5, 0.49926, 0.49938],
                      "prune seconds": [11.0, 30.0, 15.0]})
    assert Rd.achieved_reading(t).splitlines() == [
        "- Wanda remove exactly the target; OGAS 0.49926-0.49938 (its rounding keeps a few weights more).",
        "- Pruning time: Wanda 11-11 s, OGAS 15-30 s."]
    assert Rd.achieved_reading(t.iloc[:0]) == ""


def test_rounding_reading_tells_a_separable_effect_from_none():
    def cell(data, nll, params):
        return {"model": "a", "data": data, "method": "ogas", "sparsity": 0.5, "pattern": "unstructured",
                "params": params, "window_nll": list(nll)}
    exact = {"rounding": "exact"}  # wt: the paper's rounding 0.1 nats worse on every window; c4: the same
    frame = pd.DataFrame([cell("wt", BASE + 0.1, {}), cell("wt", BASE, exact), cell("c4", BASE, {}), cell("c4", BASE, exact)])
    assert Rd.rounding_reading(frame, ["a"], ["wt", "c4", "none"], 0.5).splitlines() == [
        f"- **a, wt**: x{np.exp(0.1):.4f} [{np.exp(0.1):.4f}, {np.exp(0.1):.4f}]: the rounding changes the perplexity "
        "beyond the windows' noise.",
        "- **a, c4**: x1.0000 [1.0000, 1.0000]: not separable from no effect; the exact target reads the same."]


def test_zeroshot_reading_pairs_ogas_with_wanda_over_all_tasks_and_those_above_the_trivial_answer():
    def result(t1, t2):
        return {"tasks": {"t1": {"per_doc": {"acc": t1}}, "t2": {"per_doc": {"acc": t2}}}}
    half = [1.0, 0.0] * 10
    results = {"m": {"dense": result(half, half), "ogas": result([1.0] * 20, half), "wanda": result(half, half)},
               "n": {"dense": result(half, half)}}  # no pruned results: no line
    chance = pd.DataFrame({"model": ["m", "m"], "task": ["t1", "t2"], "dense vs trivial": ["above", "at"]})
    text = Rd.zeroshot_reading(results, chance, ["t1", "t2"])
    assert text.startswith("- **m**, OGAS minus Wanda in mean accuracy, paired over documents: over all tasks (2) "
                           "+0.250 [") and "better; over the tasks where dense is above the trivial answer (1) +0.500 [" in text
    assert text.endswith("better.") and "**n**" not in text


def test_curve_reading_names_the_best_line_the_collapsed_ones_and_falls_between_collapsed_points():
    curve = pd.DataFrame({"model": ["a"] * 6, "label": ["OGAS", "Wanda"] * 3,
                          "sparsity": [0.7, 0.7, 0.8, 0.8, 0.9, 0.9], "ppl": [50.0, 80.0, 950.0, 1500.0, 900.0, 1600.0],
                          "headroom": [np.nan] * 6})
    text = Rd.curve_reading(curve, {"a": 10.0}, {"a": 1000})
    assert text.splitlines() == [
        "- **a** (dense 10, collapse above 10x it; a uniform guess 1,000): lowest at 70% OGAS 50; at 80% OGAS 950, "
        "collapsed: OGAS, Wanda; at 90% OGAS 900, collapsed: OGAS, Wanda.",
        "- **a, OGAS falls** from 950 at 80% to 900 at 90% (0.95 and 0.90 of a uniform guess's): both points have "
        "collapsed, where perplexity tells how a destroyed model is wrong (spread near uniformly, or confident and "
        "wrong), not what it kept: not a recovery, and no comparison between the two."]
    curve.loc[4, "ppl"] = 95.0  # OGAS at 90% below 10x dense: a fall that ends in a living model is not this case
    assert "falls" not in Rd.curve_reading(curve, {"a": 10.0}, {"a": 1000})


def test_ablation_and_bounds_readings():
    t5 = pd.DataFrame({"model": ["a"] * 3, "variant": ["Wanda", "OGAS", "OGAS energy-only"], "ppl": [10.0, 9.0, 8.5],
                       "vs Wanda (paired)": ["x1.000 [1.000, 1.000]", "x0.900 [0.8, 1.0]", "x0.850 [0.8, 0.9]"]})
    assert Rd.ablation_reading(t5) == ("- **a**: OGAS energy-only 8.5 (x0.850 [0.8, 0.9] against Wanda); OGAS 9 "
                                       "(x0.900 [0.8, 1.0] against Wanda).")
    assert Rd.ablation_reading(pd.DataFrame()) == ""  # no ablation model: no table, no reading
    b = pd.DataFrame({"model": ["a"], "variant": ["OGAS"], "interval": ["(0.05, 1.1)"], "layers": [10],
                      "at the lower bound": [2], "at the upper bound": [3], "median gamma": [0.5]})
    assert Rd.bounds_reading(b) == ("- **a, OGAS, (0.05, 1.1)**: 2 of 10 layers at the lower bound, 3 at the "
                                    "upper; median gamma 0.5.")


def test_machines_reading_names_where_each_draw_ran_and_the_drift_between_machines():
    here = "AMD EPYC (AVX2, no fast bfloat16), 2 cores; bf16 products through float32"
    draws = pd.DataFrame({"key": [("p", k) for k in "abcde"], "draw": [0, 1, 2, 0, 1],
                          "machine": ["not recorded", here, here, "not recorded", "not recorded"]})
    check = {"cell": {"machine": {"cpu": "AMD EPYC", "flags": ["avx2"], "fast_bf16": False, "cores": 2,
                                  "bf16_products": "..."},
                      "config": {"method": "ogas", "model": {"name": "m"}}, "calib_seed": 1, "rel_ppl_diff": 0.0027,
                      "same_mask": False}}
    text = Rd.machines_reading(draws, [("p", k) for k in "abc"], check)
    assert text.startswith("- **Where these cells ran**: 1 on a machine their records do not name (older records) "
                           f"(draw 0); 2 on {here} (draws 1, 2). ")
    assert f"recomputed on {here} (ogas, m, calibration draw 1) came out at x1.0027 its recorded perplexity, its " \
           "mask changed" in text
    assert Rd.machines_reading(draws, [("p", k) for k in "ade"], check) == ""  # one machine: nothing to say
    assert "not measured here" in Rd.machines_reading(draws, [("p", "a"), ("p", "b")], None)
