"""Tables from numbers: best/second marks (ties share), CI formatting, README blocks."""
import pandas as pd
import pytest

from repro.report import marked_table, rank_marks, replace_block


def test_rank_marks_ties_and_nan():
    s = pd.Series({"a": 3.0, "b": 1.0, "c": 1.0, "d": 2.0, "e": float("nan")})
    assert rank_marks(s) == {"b": "best", "c": "best", "d": "second"}
    assert rank_marks(s, lower_is_better=False) == {"a": "best", "d": "second"}


def test_marked_table_skips_reference_row():
    v = pd.DataFrame({"x": [10.0, 5.0, 6.0]}, index=["Dense", "A", "B"])
    ci = pd.DataFrame({"x": [None, (4.0, 6.0), (5.5, 7.0)]}, index=v.index, dtype=object)
    t = marked_table(v, ci, skip_rows=["Dense"])
    assert t.at["Dense", "x"] == "10.00"
    assert t.at["A", "x"] == "**5.00 [4.00, 6.00]**" and t.at["B", "x"] == "<u>6.00 [5.50, 7.00]</u>"


def test_replace_block(tmp_path):
    p = tmp_path / "R.md"
    p.write_text("head\n<!-- begin t -->\nold\n<!-- end t -->\ntail\n")
    replace_block(p, "t", "new table")
    assert p.read_text() == "head\n<!-- begin t -->\nnew table\n<!-- end t -->\ntail\n"
    with pytest.raises(ValueError):
        replace_block(p, "missing", "x")


def test_column_reading_names_the_best_row_its_ratio_to_dense_and_the_focus_rank():
    import pandas as pd

    from repro.report import column_reading

    cols = pd.MultiIndex.from_tuples([("m", "25%"), ("m", "50%")])
    vals = pd.DataFrame([[10.0, 10.0], [20.0, 400.0], [20.0, 100.0], [30.0, 50.0]], columns=cols,
                        index=["Dense", "MP-G", "MP", "Random"])
    text = column_reading(vals, focus="MP-G")
    assert text == ("- **m** (dense 10): lowest perplexity at 25% MP-G and MP 20 (x2 dense); "
                    "at 50% Random 50 (x5 dense), MP-G 400 (3rd of 3).")


def test_ranking_reading_ranks_the_focus_methods_within_each_group():
    import pandas as pd

    from repro.report import ranking_reading

    t = pd.DataFrame({"model": ["a"] * 3 + ["b"] * 2, "method": ["UCB", "Greedy", "Fisher", "UCB", "Greedy"],
                      "change": [5.0, 3.0, 1.0, 2.0, 4.0]})
    assert ranking_reading(t, ["model"], "change", ["UCB"], "Greedy", "%").splitlines() == [
        "- **a**: least damage Fisher +1%; UCB +5% (3rd of 3), Greedy +3% (2nd of 3).",
        "- **b**: least damage UCB +2%; Greedy +4% (2nd of 2)."]


def test_merged_columns_shows_equal_columns_once_and_drops_empty_ones():
    import pandas as pd

    from repro.report import merged_columns, to_markdown

    df = pd.DataFrame({"a": [1, 2, 3], "b": [1, 2, 3], "c": [1, 2, 4], "flag": ["", "", ""]})
    out = merged_columns(df)
    assert list(out.columns) == ["a = b", "c"]  # equal columns joined, the one that differs in a row kept apart
    assert "flag" not in to_markdown(df)
    # two rows are too few to call two columns equal rather than alike by chance
    assert list(merged_columns(df.head(2)).columns) == list(df.columns)


def test_fit_titles_keeps_neighbouring_subplot_titles_apart(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from repro.report import save_figure

    fig, axes = plt.subplots(1, 3, figsize=(6, 2))
    for ax in axes:
        ax.set_title("a title far too long for a subplot this narrow, which would run into its neighbour")
    save_figure(fig, tmp_path / "f.png")
    renderer = fig.canvas.get_renderer()
    boxes = [ax.title.get_window_extent(renderer) for ax in axes]
    assert all(not a.overlaps(b) for a, b in zip(boxes, boxes[1:]))
    assert all("\n" in ax.get_title() for ax in axes)  # wrapped, not cut
    plt.close(fig)


def test_summarised_pivots_a_long_table_and_refuses_rows_it_cannot_tell_apart():
    import pandas as pd
    import pytest

    from repro.report import LONG, Table, summarised

    rows = [{"model": m, "units": f"u{u}", "method": f"m{k}", "value": 10 * u + k}
            for m in ("a", "b") for u in range(4) for k in range(5)]
    t = Table(pd.DataFrame(rows), "caption")
    assert len(t.frame) > LONG
    s = summarised(t, "method", ["model", "units"], "value").summary
    assert s.shape == (5, 8) and s.loc["m3", "b, u2"] == 23  # each cell is its own row's value
    assert summarised(t._replace(frame=t.frame.head(LONG)), "method", "model", "value").summary is None  # short: whole
    with pytest.raises(ValueError, match="do not identify"):
        summarised(t, "method", "model", "value")  # four rows per (method, model): a cell would hide three
