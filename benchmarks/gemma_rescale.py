"""How much does masking a unit of Gemma-3-270m rescale the rest of its sublayer (notebook 3, issue 31)?

    python benchmarks/gemma_rescale.py [--windows 8] [--results results] [--out PATH]

Gemma 3 normalises each sublayer's output before the residual add (``post_attention_layernorm``,
``post_feedforward_layernorm``), so masking a head or an MLP channel group multiplies the surviving units'
contribution by ``rms(o) / rms(o_U)`` (:mod:`repro.evaluate.rescale`). From one dense float32 forward over
the first ``--windows`` windows of 128 tokens of WikiText-2 test (``<bos>`` + text, as notebook 3 evaluates),
this measures ``rms(o_U) / rms(o)`` for every single head and every MLP group of 32 channels; for each
committed Gemma selection of one unit kind in notebook 3 (every method, seed and memory rule), the same per
layer it touches with its units of that layer masked together.
"""
import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from jobs_speedup import emit  # noqa: E402

from repro.arch import adapter, bos_token  # noqa: E402
from repro.assets import load_model, load_text  # noqa: E402
from repro.evaluate.ppl import tokenize, windows  # noqa: E402
from repro.evaluate.rescale import out_inputs, remaining_rms, single_units  # noqa: E402


def selections(root: Path) -> list[dict]:
    """Notebook 3's Gemma selections of one unit kind in ``root``: kind, method, seed, memory rule, units."""
    out = []
    for p in sorted((root / "bandit-select").glob("*.json")):
        r = json.loads(p.read_text())
        c = r["config"]
        if c["model"]["name"] != "gemma3-270m" or len(c["kinds"]) != 1:
            continue
        out.append({"kind": c["kinds"][0], "method": c["method"], "seed": c["seed"],
                    "memory": (c.get("params") or {}).get("memory"), "ratio": c.get("ratio"),
                    "units": r["result"]["units"]})
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--windows", type=int, default=8)
    ap.add_argument("--results", default="results")
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    loaded = load_model("gemma3-270m", dtype="float32")
    model, tok = loaded.model.eval(), loaded.tokenizer
    ad = adapter(model)
    ids = windows(tokenize(tok, load_text("wikitext2:test")), 128, a.windows,
                  bos=bos_token(model.config, tok))
    z = out_inputs(ad, ids)
    units = single_units(ad, z)
    sels = []
    for s in selections(Path(a.results)):
        layers = sorted({u[1] for u in s["units"]})
        s["remaining_by_layer"] = {str(i): remaining_rms(ad, z[(s["kind"], i)], s["kind"], i,
                                                         [u[2] for u in s["units"] if u[1] == i]) for i in layers}
        sels.append(s)
    emit({"model": "gemma3-270m", "dtype": "float32", "windows": f"first {a.windows} x 128 tokens of wikitext2:test, "
          "<bos> + text", "tokens": int(ids.numel()), "units": units, "selections": sels}, a.out)


if __name__ == "__main__":
    main()
