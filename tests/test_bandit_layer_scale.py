"""repro.papers.bandit.rescale's score-by-layer view: a one-shot score ranked across layers, where its units
go, and where they go once each score is put on its layer's stream scale (constructed records)."""
import pandas as pd
import pytest

from repro.errors import ReproError
from repro.papers.bandit.readings import score_layers_reading
from repro.papers.bandit.rescale import score_layers


def _frame():
    """Two seeds of Wanda-style on 3 layers x 2 MLP groups; scores rise with depth, so k = 2 empties layer 0."""
    scores = {"mlp0.0": 1.0, "mlp0.1": 1.2, "mlp1.0": 2.0, "mlp1.1": 2.2, "mlp2.0": 4.0, "mlp2.1": 4.4}
    rows = [{"model": "m", "kinds": "mlp", "method": "wanda", "seed": seed, "ratio": 0.3, "k": 2, "scores": scores,
             "units": [["mlp", 0, 0], ["mlp", 0, 1]]} for seed in (1, 2)]
    rows.append({"model": "m", "kinds": "dense", "method": "dense", "seed": None, "ratio": 0.0, "k": 0, "scores": None,
                 "units": None})
    return pd.DataFrame(rows)


def _scales(post: bool):
    # the stream grows 10x per layer; with a post norm, layer 1's gain is tiny
    gain = {0: 2.0, 1: 0.001, 2: 1.0} if post else {0: 1.0, 1: 1.0, 2: 1.0}
    return {"models": {"m": {"layers": [{"kind": "mlp", "layer": i, "post_norm": post, "gain": gain[i],
                                         "stream_rms": 10.0 ** i, "share": [0.9, 0.2, 0.1][i]} for i in range(3)]}}}


def test_score_layers_pools_seeds_and_reads_the_measured_layers():
    sl = score_layers(_frame(), _scales(False))
    assert list(sl.layer) == [0, 1, 2] and sl["median score"].tolist() == pytest.approx([1.1, 2.1, 4.2])
    assert sl["relative score"].tolist() == pytest.approx([1.1 / 2.1, 1.0, 4.2 / 2.1])
    assert sl.depth.tolist() == [0.0, 0.5, 1.0] and sl.share.tolist() == [0.9, 0.2, 0.1]
    assert score_layers(_frame()).share.isna().all()  # nothing measured: no share, no gain


def test_the_reading_counts_the_emptied_layer_and_re_ranks_on_the_stream_scale():
    text = score_layers_reading(score_layers(_frame(), _scales(False)), _frame())
    assert "rises with depth (Spearman +1.00 over 3 layers)" in text
    assert "sit in layer 0: 2: 100% of that layer's units" in text
    assert "write 0.90 of the residual stream's RMS at the median, the other layers' 0.15." in text
    # score / stream: 1.1 / 1 against 2.1 / 10 and 4.2 / 100: layer 2 is now the lowest, and as concentrated
    assert "the lowest 2 units sit in layer 2: 2: elsewhere, but as concentrated." in text
    named = {**_scales(False), "dtype": "float32", "windows": "first 8 x 128 tokens"}
    assert "Measured (`layer_scale.json`, float32, first 8 x 128 tokens): " in score_layers_reading(
        score_layers(_frame(), named), _frame(), scales=named)
    post = score_layers_reading(score_layers(_frame(), _scales(True)), _frame())
    assert "multiplies the output by x2 in layer 0 and x1 in layer 2" in post
    assert "the lowest 2 units sit in layer 1: 2" in post  # 2.1 x 0.001 / 10: the gain moves them


def test_unit_of_inverts_the_names_records_use():
    from repro.methods.bandit import Unit
    from repro.papers.bandit.records import unit_of

    for u in (Unit("mlp", 17, 26), Unit("head", 0, 3)):
        assert unit_of(str(u)) == u
    with pytest.raises(ReproError, match="not a unit name"):
        unit_of("mlp17")
