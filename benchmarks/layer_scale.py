"""How large is each sublayer's write to the residual stream, layer by layer (notebook 3: why Wanda-style
does worse than random)?

    python benchmarks/layer_scale.py [--models smollm2-135m gemma3-270m] [--windows 8] [--out PATH]

A one-shot score such as Wanda-style's ``sum |W| ||X||`` measures a unit against its sublayer's output
``o``. Ranked across layers, it compares units whose ``o`` reaches the residual stream through a
post-sublayer norm's gain (Gemma 2/3) and lands on a stream whose size grows with depth.
:func:`repro.evaluate.rescale.layer_scales` measures, from one dense float32 forward over the first
``--windows`` windows of 128 tokens of WikiText-2 test (fed as notebook 3 feeds each model), per layer and
sublayer: ``rms(o)``, ``rms`` of what the residual receives, ``rms`` of the stream entering the layer, the
gain and the share (what the residual receives over the stream).
"""
import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from jobs_speedup import emit  # noqa: E402

from repro.arch import adapter, bos_token  # noqa: E402
from repro.assets import load_model, load_text  # noqa: E402
from repro.evaluate.ppl import tokenize, windows  # noqa: E402
from repro.evaluate.rescale import layer_scales  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", nargs="+", default=["smollm2-135m", "gemma3-270m"])
    ap.add_argument("--windows", type=int, default=8)
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    text = load_text("wikitext2:test")
    models = {}
    for name in a.models:
        loaded = load_model(name, dtype="float32")
        model, tok = loaded.model.eval(), loaded.tokenizer
        bos = bos_token(model.config, tok)
        ids = windows(tokenize(tok, text), 128, a.windows, bos=bos)
        models[name] = {"feeding": "<bos> + text" if bos is not None else "text", "tokens": int(ids.numel()),
                        "layers": layer_scales(adapter(model), ids)}
    emit({"dtype": "float32", "windows": f"first {a.windows} x 128 tokens of wikitext2:test", "models": models},
         a.out)


if __name__ == "__main__":
    main()
