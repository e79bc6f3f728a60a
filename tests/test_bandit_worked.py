"""MAB-UCB worked from a selection record (repro.papers.bandit.worked): the index rebuilt from the record's pulls
and rewards names every pull the search made, and one step's table shows each candidate's terms."""
import numpy as np
import pytest

from repro.methods.bandit import UCB, bandit_search
from repro.papers.bandit.synthetic import SyntheticArms, arms
from repro.papers.bandit.worked import replay_agreement, ucb_step


@pytest.fixture(scope="module")
def record():
    means = arms(12, 3, seed=0)
    sel = bandit_search(SyntheticArms(means, 0.02, 0), list(means), np.arange(12.0), 4, UCB(1.5), seed=0, budget=6,
                        pool_size=8)
    return sel.as_dict()


def test_the_rebuilt_index_names_every_pull_the_search_made(record):
    agree, decided = replay_agreement(record, 1.5)
    assert decided > 10 and agree == decided
    assert replay_agreement(record, 0.01)[0] < decided  # another c would have pulled otherwise: the check can fail


def test_one_step_shows_each_candidates_mean_pulls_bonus_and_index(record):
    t = ucb_step(record, 2, 1.5)
    assert t.pulled.sum() == 1 and t.iloc[0].pulled  # the pulled unit has the largest index
    assert (t["index"] == t["mean reward"] + t.bonus).all()
    assert t.bonus.iloc[0] == pytest.approx(1.5 * np.sqrt(np.log(t.t.iloc[0]) / t.pulls.iloc[0]))
    with pytest.raises(ValueError, match="no pull that the index decides"):
        ucb_step(record, 99, 1.5)


def test_the_refreshing_toy_shows_ucb_catching_up_on_each_newcomer():
    """With a pool refreshed as units join (the real searches' pool and budget), UCB spends a larger share of each
    step's pulls on the arm that just entered than greedy's even spread does: the bonus of an arm pulled once
    outweighs the reward gaps between arms pulled many times."""
    from repro.papers.bandit.synthetic import refresh_compare

    runs = refresh_compare(seeds=range(8)).groupby("policy").to_newcomers.mean()
    assert runs["ucb"] > runs["greedy"] + 0.15
    fixed = refresh_compare(seeds=range(2), arms=8, pool=8)  # nothing enters: after step 1 nothing is new
    assert (fixed.groupby("policy").to_newcomers.mean() <= 1 / 8 + 1e-9).all()
