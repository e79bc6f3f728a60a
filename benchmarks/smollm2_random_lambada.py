"""Does SmolLM2's Random seed-2 head selection really lower LAMBADA perplexity (notebook 3, Table 1 per seed)?

    python benchmarks/smollm2_random_lambada.py [--limit 500] [--heads] [--out PATH]

Notebook 3 scores LAMBADA on its first 100 documents; one of its 40 SmolLM2-135M head runs, Random seed 2
(10% of heads), lowers LAMBADA perplexity there by about 13% while raising WikiText-2 perplexity by about
40%. This evaluates the dense model and that selection on the first ``--limit`` documents through the same
lm-eval path as the notebook (bfloat16), paired over documents (``gemma_lambada_check``'s helpers): the
change on the notebook's 100 documents and on all ``--limit``, and the share of the log-likelihood gain
carried by the 10 documents that gain most. With ``--heads``, each of the selection's heads alone too.
"""
import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import gemma_lambada_check as G  # noqa: E402
from jobs_speedup import emit  # noqa: E402

import repro.evaluate.zeroshot as zs  # noqa: E402
from repro.assets import load_model  # noqa: E402


def selection(root: Path, method: str = "random", seed: int = 2) -> list[tuple]:
    """The committed SmolLM2 head 10% selection of ``method`` and ``seed``."""
    for p in (root / "bandit-select").glob("*.json"):
        c = json.loads(p.read_text())
        cfg = c["config"]
        if (cfg["model"]["name"], cfg["kinds"], cfg.get("ratio"), cfg["method"], cfg["seed"]) == \
                ("smollm2-135m", ["head"], 0.1, method, seed):
            return [tuple(u) for u in c["result"]["units"]]
    raise SystemExit(f"no committed smollm2-135m head 10% selection of {method} seed {seed}")


def compare(r: dict, d: dict, first: int | None = None) -> dict:
    """``r`` against dense ``d`` on their first ``first`` documents (all if None), paired per document."""
    ll, dll = np.asarray(r["loglik"][:first]), np.asarray(d["loglik"][:first])
    gain = ll - dll
    ppl = lambda x: float(np.exp(-np.mean(x)))  # noqa: E731 (lm-eval's perplexity of the last word)
    return {"n": int(ll.size), "ppl": ppl(ll), "dense_ppl": ppl(dll), "ppl_change_pct": 100 * (ppl(ll) / ppl(dll) - 1),
            "acc_diff": G.paired(r["doc_acc"][:first], d["doc_acc"][:first]), "loglik_diff": G.paired(ll, dll),
            "share_of_gain_from_top_10_docs": float(np.sort(gain)[::-1][:10].sum() / gain.sum()) if gain.sum() > 0 else None}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--limit", type=int, default=500)
    ap.add_argument("--heads", action="store_true")
    ap.add_argument("--results", default="results")
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    zs._per_doc = G.per_doc
    units = selection(Path(a.results))
    loaded = load_model("smollm2-135m", dtype="bfloat16")
    model, tok = loaded.model.eval(), loaded.tokenizer
    dense = G.lambada(model, tok, [], a.limit)
    sel = G.lambada(model, tok, units, a.limit)
    out = {"model": "smollm2-135m", "selection": "random seed 2, head 10%", "units": [list(u) for u in units],
           "first 100": compare(sel, dense, 100), f"first {a.limit}": compare(sel, dense)}
    if a.heads:
        out["heads alone"] = {f"{layer}.{index}": compare(G.lambada(model, tok, [(kind, layer, index)], a.limit), dense)
                              for kind, layer, index in units}
    emit(out, a.out)


if __name__ == "__main__":
    main()
