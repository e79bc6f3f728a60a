"""repro.family: a notebook's claims as one family of tests, each decided row's verdict read again at the
Bonferroni level from its own interval."""
from repro.claims import Claim, claims_frame, ratio_claim
from repro.evaluate.stats import Paired
from repro.family import family_note, stays


def test_a_row_far_from_its_threshold_stays_and_one_just_past_it_does_not():
    """A ratio interval [0.50, 0.60] (far below 1) stays decided at 0.05 / 20; one at [0.90, 0.999] (just below) does
    not, nor does a t interval over 5 seeds just past 0; an exact quantity always stays; at m = 1 every row stays."""
    far = ratio_claim("A", "s", "a / b", Paired(0.55, (0.50, 0.60), 32, 30, 2))
    near = ratio_claim("B", "s", "a / b", Paired(0.95, (0.90, 0.999), 32, 20, 12))
    seeds = Claim.check("C", "s", "m", -2.0, (-3.9, -0.1), 0.0, "below", 5)
    seeds.unit = "seeds"
    exact = Claim.check("D", "s", "m", 0.0, (0.0, 0.0), 0.5, "below", 1)
    f = claims_frame([far, near, seeds, exact])
    kept = [stays(r, 20) for _, r in f.iterrows()]
    assert kept == [True, False, False, True]
    # one comparison is no family: every decided row, t or normal interval, keeps its verdict (the row's own level)
    assert all(stays(r, 1) for _, r in f.iterrows())
    text = family_note(f)
    assert "4 of the 4 rows that are tests are decided" in text and "2 of the 4 decided rows keep" in text
    assert "*B* (s, holds); *C* (s, holds)" in text


def test_no_decided_row_no_note():
    f = claims_frame([Claim.check("A", "s", "m", 1.0, (0.5, 1.5), 1.0, "below", 20)])
    assert family_note(f) == ""
