"""Why loss-searched Gemma selections lower LAMBADA perplexity: the investigation's prose, generated from
the committed check (``benchmarks/gemma_lambada_check.py`` -> ``benchmarks/results/gemma_lambada_check.json``:
dense and single-head masks through the same lm-eval path, paired over documents) and from the notebook's
selection records (how often each head is selected). No number in it is typed by hand."""
from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pandas as pd

from repro.methods.bandit import SELECTORS


def read_check(path: str | Path) -> dict | None:
    """The check's result, or None where the file is absent (a fresh clone keeps it; a user's own run
    may not have made it)."""
    path = Path(path)
    return json.loads(path.read_text()) if path.is_file() else None


def head_counts(frame: pd.DataFrame, model: str) -> tuple[Counter, int]:
    """How many of ``model``'s loss-searched head selections (every sequential selector, seed and ratio of
    ``frame``) include each (layer, head), and how many selections there are."""
    runs = frame[(frame.model == model) & (frame.kinds == "head") &
                 frame.method.isin(SELECTORS.names(sequential=True))]
    counts = Counter((layer, index) for units in runs.units for _, layer, index in units)
    return counts, len(runs)


def _name(unit) -> str:
    return f"{unit[0]}.{unit[1]}"


def _points(d: dict) -> str:
    lo, hi = d["ci"]
    return f"{100 * d['estimate']:+.1f} points [{100 * lo:+.1f}, {100 * hi:+.1f}]"


def _lambada_changes(frame: pd.DataFrame, model: str, head) -> tuple[list[float], list[float]]:
    """The LAMBADA perplexity change (%) against dense of ``model``'s loss-searched head selections, split
    into those that include ``head`` and those that do not."""
    rows = frame[frame.model == model]
    dense = rows[rows.method == "dense"].lambada_ppl
    runs = rows[(rows.kinds == "head") & rows.method.isin(SELECTORS.names(sequential=True))]
    if dense.empty or "lambada_ppl" not in runs:
        return [], []
    change = 100 * (runs.lambada_ppl / dense.iloc[0] - 1)
    has = runs.units.map(lambda units: any((layer, index) == head for _, layer, index in units))
    return change[has].dropna().tolist(), change[~has].dropna().tolist()


def _spread(values: list[float]) -> str:
    lowered = sum(v < 0 for v in values)
    return (f"median {pd.Series(values).median():+.0f}% ({min(values):+.0f}% to {max(values):+.0f}%), "
            f"{lowered} of {len(values)} below dense")


def investigation(check: dict | None, frame: pd.DataFrame) -> str:
    """The findings as Markdown bullets: which measured head lowers LAMBADA perplexity alone, how often
    this run's loss searches include it and what their selections do to LAMBADA with and without it, the
    other shared heads alone, WikiText-2, float32, and the split by whether the target word occurs earlier
    in the passage."""
    if check is None:
        return ("*The LAMBADA check has not been run here* (`python benchmarks/gemma_lambada_check.py` writes "
                "`benchmarks/results/gemma_lambada_check.json`).")
    model = check["model"]
    counts, n = head_counts(frame, model)
    if not n:
        return f"*No loss-searched head selection of {model} in this run: nothing to investigate.*"
    bf = next(v for k, v in check["runs"].items() if k.startswith("bfloat16"))
    fp = next((v for k, v in check["runs"].items() if k.startswith("float32")), None)
    singles = {tuple(units[0][1:]): name for name, units in check["selections"].items()
               if len(units) == 1 and name in bf}
    if not singles:
        return "*The committed check measured no single head alone: rerun `benchmarks/gemma_lambada_check.py`.*"
    top = min(singles, key=lambda u: bf[singles[u]]["ppl"])  # the head whose masking lowers LAMBADA most
    key, shared = singles[top], counts.get(top, 0)
    dense, alone = bf["dense"], bf[key]
    ll = alone["loglik_diff"]
    lines = [f"- **One head does it alone.** Of the heads the check masked one at a time, {_name(top)} lowers LAMBADA "
             f"perplexity most: from {dense['ppl']:.2f} to {alone['ppl']:.2f} ({alone['ppl_change_pct']:+.0f}%) on the "
             f"first {dense['n']} documents in bfloat16, and last-word accuracy goes from {dense['acc']:.3f} to "
             f"{alone['acc']:.3f} ({_points(alone['acc_diff'])}, paired over documents). The last word's "
             f"log-likelihood improves on {ll['n_better']} of {ll['n']} documents, and the 10 largest gains are "
             f"{alone['share_of_nll_drop_from_top_10_docs']:.0%} of the total, so a few documents do not carry it."]
    with_head, without = _lambada_changes(frame, model, top)
    if with_head or without:
        said = (f"The {n} loss-searched head selections of {model} in this run include {_name(top)} in {shared}. "
                f"LAMBADA perplexity against dense, with it: {_spread(with_head) if with_head else 'none'}; "
                f"without it: {_spread(without) if without else 'none'}.")
        if without and sum(v < 0 for v in without):
            said += (f" So {_name(top)} is not the only route: selections without it also lower LAMBADA, through "
                     "heads the check did not measure alone.")
        lines.append(f"- **How often the searches take it.** {said}")
    others = [(u, c) for u, c in counts.most_common() if u != top and u in singles][:2]
    if others:
        said = "; ".join(f"{_name(u)} (in {c} selections): accuracy {100 * bf[singles[u]]['acc_diff']['estimate']:+.1f} "
                         f"points, perplexity {bf[singles[u]]['ppl_change_pct']:+.1f}%" for u, c in others)
        lines.append(f"- **The other heads most often shared do nothing of the kind alone:** {said}.")
    wt = check.get("wikitext2_ppl_bf16") or {}
    if key in wt and "dense" in wt:
        lines.append(f"- **It costs little on WikiText-2:** masking {_name(top)} alone moves WikiText-2 perplexity from "
                     f"{wt['dense']:.2f} to {wt[key]:.2f} ({100 * (wt[key] / wt['dense'] - 1):+.1f}%; the check loads "
                     "the model in bfloat16 directly, the notebook casts its float32 copy, so its dense figure differs "
                     "from the dense record in the last digits). A search that minimises loss has no reason to avoid it.")
    if fp is not None and key in fp:
        f_dense, f_alone = fp["dense"], fp[key]
        lines.append(f"- **It is not a bfloat16 artefact.** In float32 (first {f_dense['n']} documents), masking "
                     f"{_name(top)} alone takes LAMBADA perplexity from {f_dense['ppl']:.2f} to {f_alone['ppl']:.2f} "
                     f"({f_alone['ppl_change_pct']:+.1f}%; accuracy {_points(f_alone['acc_diff'])})" +
                     "".join(f"; the check's selection {k} changes it by {v['ppl_change_pct']:+.1f}% (bfloat16, "
                             f"{dense['n']} documents: {bf[k]['ppl_change_pct']:+.1f}%)"
                             for k, v in fp.items() if k not in ("dense", key) and k in bf) + ".")
    split = alone.get("loglik_diff_by_target") or {}
    seen, unseen = split.get("target earlier in the passage"), split.get("target not earlier")
    if seen and unseen:
        lines.append(f"- **Head {_name(top)} acts like a copy-suppression head.** In {seen['n']} of {ll['n']} documents "
                     "LAMBADA's target word already occurs earlier in the passage. There, masking the head raises the "
                     f"target's log-likelihood by {seen['estimate']:+.2f} nats [{seen['ci'][0]:+.2f}, {seen['ci'][1]:+.2f}]; "
                     f"where it does not occur, by {unseen['estimate']:+.2f} [{unseen['ci'][0]:+.2f}, "
                     f"{unseen['ci'][1]:+.2f}]. A head that lowers the logits of words already seen (as a head of GPT-2 "
                     "small was shown to do: McDougall et al., *Copy Suppression*) is what LAMBADA's copy-heavy "
                     "targets penalise. This is our reading of the split, not a measured mechanism: we did not trace "
                     "the head's attention or its direct effect on the logits.")
    return "\n".join(lines)
