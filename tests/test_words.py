"""The few words generated sentences share (repro.words) and the report's per-group bullets."""
import pandas as pd

from repro.report import group_lines
from repro.words import and_join, num, ordinal, short


def test_words():
    assert [and_join(["a"]), and_join(["a", "b"]), and_join(["a", "b", "c"])] == ["a", "a and b", "a, b and c"]
    assert [ordinal(n) for n in (1, 2, 3, 4, 11, 12, 13, 21, 22, 101, 111)] == [
        "1st", "2nd", "3rd", "4th", "11th", "12th", "13th", "21st", "22nd", "101st", "111th"]
    assert [num(1234.5), num(12.345), num(1.234)] == ["1,234", "12.3", "1.23"]
    assert short("x" * 50) == repr("x" * 50)[:37] + "..." and short(3) == "3" and len(short("y" * 200, 90)) == 90


def test_group_lines_keeps_the_frames_order():
    f = pd.DataFrame({"model": ["b", "b", "a"], "units": ["h", "h", "m"], "v": [1, 2, 3]})
    assert group_lines(f, ["model", "units"], lambda g: f"sum {g.v.sum()}.") == "- **b, h**: sum 3.\n- **a, m**: sum 3."
