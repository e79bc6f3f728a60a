"""Why do loss-searched Gemma head selections lower LAMBADA perplexity below dense (notebook 3)?

    python benchmarks/gemma_lambada_check.py [--limit 500] [--fp32-limit 200] [--out PATH]

Takes notebook 3's committed Gemma-3-270m head selections (10%, memory "step" for the bandits), evaluates
the dense model and some of them on the first ``--limit`` LAMBADA (OpenAI) documents through the same
lm-eval path as the notebook (bfloat16, <bos> on every request), and on the first ``--fp32-limit`` in
float32 (dense, one selection, one head). Per document: last-word log-likelihood and greedy accuracy, so each selection is compared with
dense *paired* over documents (t interval of the mean difference, and the share of documents whose
log-likelihood improved, ``n_better``), and the single heads' WikiText-2 perplexity as notebook 3
measures it. Answers three questions: does the improvement survive 5x more documents;
is it a bfloat16 artefact (does it hold in float32); is it carried by a few documents.
"""
import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from jobs_speedup import emit  # noqa: E402

import repro.evaluate.zeroshot as zs  # noqa: E402
from repro.arch import adapter, bos_token  # noqa: E402
from repro.assets import load_model, load_text  # noqa: E402
from repro.engines.bandit import LAMBADA  # noqa: E402
from repro.evaluate import perplexity  # noqa: E402
from repro.evaluate.stats import paired_t  # noqa: E402
from repro.structure.masks import Masks  # noqa: E402

PICKS = [("thompson", 42), ("greedy", 123), ("fisher", 1)]  # two that lowered LAMBADA ppl most, one control
# the heads the 25 loss-searched selections (greedy, UCB and TS under both memories, 5 seeds) share most:
# (16, 3) in 21, (0, 1) in 20, (17, 2) in 19, (16, 2) in 15, (4, 0) in 15, (16, 1) in 14
SHARED = {"head 17.2 alone": [("head", 17, 2)], "head 16.3 alone": [("head", 16, 3)], "head 0.1 alone": [("head", 0, 1)],
          "heads 16.1-3 and 17.2": [("head", 16, 1), ("head", 16, 2), ("head", 16, 3), ("head", 17, 2)]}


def selections(root: Path) -> dict[str, list]:
    """{"method seed": units} of the committed Gemma head 10% searches (bandits under memory "step")."""
    out = {}
    for p in (root / "bandit-select").glob("*.json"):
        r = json.loads(p.read_text())
        c = r["config"]
        if (c["model"]["name"] != "gemma3-270m" or c["kinds"] != ["head"] or c.get("ratio") != 0.1
                or (c.get("calibration") or {}).get("windows") != "bos+text"):
            continue
        if c["method"] in ("ucb", "thompson") and (c.get("params") or {}).get("memory") != "step":
            continue
        if (c["method"], c["seed"]) in PICKS:
            out[f"{c['method']} {c['seed']}"] = [tuple(u) for u in r["result"]["units"]]
    return {**dict(sorted(out.items())), **SHARED}


def in_context(text: str) -> bool:
    """Does the passage's last word occur earlier in it (LAMBADA's target is often a copy)?"""
    words = [w.strip(".,;:!?\"'()").lower() for w in text.split()]
    return words[-1] in words[:-1]


def per_doc(samples):  # the product's per-document scores plus each document's last-word log-likelihood
    samples = sorted(samples, key=lambda d: d["doc_id"])
    return {"acc": [float(d["acc"]) for d in samples], "loglik": [float(d["perplexity"]) for d in samples],
            "in_context": [in_context(d["doc"]["text"]) for d in samples]}


def lambada(model, tok, units, limit):
    with Masks(adapter(model)) as m:
        for kind, layer, index in units:
            m.set_unit(kind, layer, index, False)
        res = zs.evaluate_zeroshot(model, tok, [LAMBADA], limit=limit, progress=False)["tasks"][LAMBADA]
    return {"ppl": res["metrics"]["perplexity"]["value"], "acc": res["metrics"]["acc"]["value"],
            "n": res["n"], "doc_acc": res["per_doc"]["acc"], "loglik": res["per_doc"]["loglik"],
            "in_context": res["per_doc"]["in_context"]}


def paired(x, d) -> dict:
    """mean(x - d) with its paired t interval; n_better: documents where x > d."""
    return paired_t(x, d).as_dict()


def wikitext(model, tok, units) -> float:
    """WikiText-2 test perplexity as notebook 3 measures it (first 32 windows of 128 tokens, <bos> + text)."""
    with Masks(adapter(model)) as m:
        for kind, layer, index in units:
            m.set_unit(kind, layer, index, False)
        return perplexity(model, tok, load_text("wikitext2:test"), 128, 32, 8, progress=False,
                          bos=bos_token(model.config, tok)).ppl


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--limit", type=int, default=500)
    ap.add_argument("--fp32-limit", type=int, default=200)
    ap.add_argument("--results", default="results")
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    zs._per_doc = per_doc
    sels = selections(Path(a.results))
    out = {"model": "gemma3-270m", "task": LAMBADA, "selections": {k: [list(u) for u in v] for k, v in sels.items()},
           "runs": {}}
    for dtype, limit, names in (("bfloat16", a.limit, ["dense", *sels]),
                               ("float32", a.fp32_limit, ["dense", "thompson 42", "head 17.2 alone"])):
        if not limit:
            continue
        loaded = load_model("gemma3-270m", dtype=dtype)
        model = loaded.model.eval()
        runs = {}
        for name in names:
            runs[name] = lambada(model, loaded.tokenizer, [] if name == "dense" else sels[name], limit)
            print(dtype, name, f"ppl {runs[name]['ppl']:.2f} acc {runs[name]['acc']:.3f}", file=sys.stderr, flush=True)
        d = runs["dense"]
        summary = {}
        for name, r in runs.items():
            row = {"ppl": r["ppl"], "acc": r["acc"], "n": r["n"]}
            if name != "dense":
                ll, dll = np.asarray(r["loglik"]), np.asarray(d["loglik"])
                gain = ll - dll  # > 0: the pruned model gives the right last word more probability
                row |= {"acc_diff": paired(r["doc_acc"], d["doc_acc"]), "loglik_diff": paired(ll, dll),
                        "share_of_nll_drop_from_top_10_docs": float(np.sort(gain)[::-1][:10].sum() / gain.sum())
                        if gain.sum() > 0 else None,
                        "ppl_change_pct": 100 * (r["ppl"] / d["ppl"] - 1)}
                ctx = np.asarray(d["in_context"])
                row["loglik_diff_by_target"] = {
                    "target earlier in the passage": paired(ll[ctx], dll[ctx]) | {"n": int(ctx.sum())},
                    "target not earlier": paired(ll[~ctx], dll[~ctx]) | {"n": int((~ctx).sum())}}
            summary[name] = row
        out["runs"][f"{dtype} first {limit}"] = summary
        if dtype == "bfloat16":  # what the same heads cost on the searches' own kind of text
            out["wikitext2_ppl_bf16"] = {name: wikitext(model, loaded.tokenizer, [] if name == "dense" else sels[name])
                                         for name in ("dense", "head 17.2 alone", "head 16.3 alone", "head 0.1 alone")}
        del model, loaded
    emit(out, a.out)


if __name__ == "__main__":
    main()
