"""Hand-written prose held to the tables (issue 66): every data quantifier a markdown cell types ("usually", "most of",
"on both models", "nearly") sits in a sentence this file checks against the committed tables, or in one listed as
not about the results (a definition, the toy's construction, what an equation implies), with the reason. A reworded
sentence drops out of both lists and fails the scan, so a check never outlives its sentence.

The numbers typed in prose are held by tests/test_notebooks.py (test_no_measurement_is_typed_in_prose)."""
import nbformat
import pandas as pd
import pytest

from repro.notebooks import read_source
from repro.prose import quantifiers

from conftest import ROOT

FIG = ROOT / "figures"


def csv(folder: str, name: str) -> pd.DataFrame:
    return pd.read_csv(FIG / folder / f"{name}.csv")


# ---- the checks, one per sentence (the phrase each one keys on must stay in that sentence) ------------------------
def one_head_restores_nearly_all():
    """nb1 3c: where one head carries a collapse, giving it back alone leaves the model nearly whole."""
    share = csv("01_mpg", "collapse_anatomy")["best single restore"].str.extract(r"\((\d+)% of the damage")[0]
    assert share.astype(float).max() >= 85


def dense_above_trivial_on_three_tasks():
    t = csv("02_ogas", "zeroshot_dense_vs_chance").set_index(["model", "task"])["dense vs trivial"]
    for model in ("smollm2-135m", "gemma3-270m"):
        assert all(t[model, task] == "above" for task in ("hellaswag", "arc_easy", "piqa"))


def arc_challenge_below_for_both():
    t = csv("02_ogas", "zeroshot_dense_vs_chance")
    assert (t[t.task == "arc_challenge"]["dense vs trivial"] == "below").all() and len(t[t.task == "arc_challenge"]) == 2


def boolq_mostly_yes_and_smollm2_ogas_all_yes():
    bias = csv("02_ogas", "zeroshot_answer_bias").set_index(["model", "task"])
    assert bias.loc[("gemma3-270m", "boolq"), "answer"] == "yes" and bias.loc[("gemma3-270m", "boolq"), "gold share"] > 0.5
    row = bias.loc[("smollm2-135m", "boolq")]
    assert row["answer"] == "no" and row["OGAS"] == 0  # never "no": "yes" on every document
    chance = csv("02_ogas", "zeroshot_dense_vs_chance").set_index(["model", "task"])["dense vs trivial"]
    assert chance["gemma3-270m", "boolq"] == "at" and chance["smollm2-135m", "boolq"] == "below"


def boolq_carries_most_of_ogas_wanda():
    c = csv("02_ogas", "claims")
    why = c["why uninformative"].fillna("")
    row = c[why.str.contains("comes from boolq") & c.setting.str.contains("smollm2")]
    assert len(row) == 1 and int(row["why uninformative"].iloc[0].split("%")[0]) > 50


def winogrande_at_uniform_and_hellaswag_above():
    t = csv("02_ogas", "zeroshot_dense_vs_chance")
    assert (t[t.task == "winogrande"]["dense vs trivial"] == "at").all()
    assert (t[t.task == "hellaswag"]["dense vs trivial"] == "above").all()


def ucb_pulls_go_to_newcomers():
    """nb3: at the paper's c, UCB gives a large share of its pulls to the pool's newest entrants (language models)."""
    a = csv("03_bandit", "table_allocation")
    ucb = a[(a.method == "MAB-UCB") & (a.memory == "persist") & ~a.model.str.startswith("fashion")]
    assert len(ucb) and ucb.to_newcomers.min() >= 0.45 and ucb.to_newcomers.median() > 0.6


def prescreen_forces_most_of_mlp_selections():
    p = csv("03_bandit", "table_prescreen")
    mlp = p[(p.units == "mlp") & (p.pool == 16)]
    assert len(mlp) and (mlp.forced > 0.5).all()


def pulls_rarely_help():
    r = csv("03_bandit", "table_rewards")
    assert r.beneficial.max() <= 0.05 and (r["mean reward"] < 0.5).all()


def wanda_style_crowds_into_few_layers():
    """nb3: in most settings Wanda-style's units crowd into the first or the last tenth of the layers."""
    t = csv("03_bandit", "table_unit_layers")
    w = t[t.method == "Wanda-style"]
    crowded = w[["share in early layers", "share in last layers"]].max(axis=1) >= 0.75
    assert len(w) and crowded.sum() > len(w) / 2


CHECKED = {
    "01_mpg_head_pruning": {"the model is nearly whole again": one_head_restores_nearly_all},
    "02_ogas_unstructured": {
        "Both dense models are above the trivial answer on HellaSwag, ARC-Easy and PIQA": dense_above_trivial_on_three_tasks,
        "both dense models score below always picking": arc_challenge_below_for_both,
        "most of its first validation documents are": boolq_mostly_yes_and_smollm2_ogas_all_yes,
        "that is most of its mean difference to Wanda": boolq_carries_most_of_ogas_wanda,
        "is above the trivial answer for both dense models": winogrande_at_uniform_and_hellaswag_above,
    },
    "03_bandit_pruning": {
        "giving a large share of its pulls to the pool's": ucb_pulls_go_to_newcomers,
        "that bound is most of the selection": prescreen_forces_most_of_mlp_selections,
        "A pull rarely helps": pulls_rarely_help,
        "lowest units crowd into the first or the last few layers": wanda_style_crowds_into_few_layers,
    },
}

# sentences whose quantifier is not about the results, and why
NOT_RESULTS = {
    "01_mpg_head_pruning": {},
    "02_ogas_unstructured": {
        "so all of them get nearly the target": "what the equation gives for gamma near 0",
    },
    "03_bandit_pruning": {
        "A few are nearly harmless": "the toy's construction (its arms are drawn that way)",
        "a unit of an early layer can have a small score and still a large share": "what the score's definition implies",
        "Removing most of a layer's units also shrinks": "a mechanism, stated conditionally",
        "so the rules rarely disagree": "the formula: with one pull each, the posterior mean orders units as the mean reward",
    },
}

SOURCES = sorted((ROOT / "notebooks").glob("[0-9]*.py"))


@pytest.mark.parametrize("src", SOURCES, ids=[s.stem for s in SOURCES])
def test_every_quantifier_in_prose_is_checked_or_not_about_results(src):
    nb = read_source(src)
    known = [*CHECKED.get(src.stem, {}), *NOT_RESULTS.get(src.stem, {})]
    assert [(i, q, s[:160]) for i, q, s in quantifiers(nb, known)] == []


@pytest.mark.parametrize("stem,phrase", [(s, p) for s, d in {**CHECKED}.items() for p in d]
                         + [(s, p) for s, d in NOT_RESULTS.items() for p in d])
def test_each_listed_sentence_is_still_in_its_notebook(stem, phrase):
    text = " ".join(c.source for c in read_source(ROOT / "notebooks" / f"{stem}.py").cells if c.cell_type == "markdown")
    assert phrase in " ".join(text.replace("#", " ").split())


@pytest.mark.parametrize("check", [c for d in CHECKED.values() for c in d.values()], ids=lambda c: c.__name__)
def test_each_checked_sentence_holds_in_the_committed_tables(check):
    check()


def test_the_quantifier_scan_can_fail():
    cell = nbformat.v4.new_markdown_cell
    nb = nbformat.v4.new_notebook(cells=[cell("MP-G usually wins. It loses on both models."),
                                         cell("How often each method wins, and the answer most often right.")])
    assert [q for _, q, _ in quantifiers(nb)] == ["usually", "on both models"]
    assert quantifiers(nb, checked=["usually wins", "loses on both"]) == []
