"""The experiment skeleton: setup validation, record keys that cannot silently mix, recompute,
cache accounting, and Paper 1's tables and claims from constructed records."""
import math

import numpy as np
import pandas as pd
import pytest

import repro.experiments.base as base
from repro.claims import FAILS, HOLDS
from repro.errors import ReproError
from repro.experiments import mpg as R
from repro.experiments.base import Experiment, Setup, check_keys
from repro.experiments.heads import HeadExperiment
from repro.methods.heads import score_heads
from repro.store import Store, config_key

SMALL = Setup(data="wiki-sample", seqlen=32, max_windows=2, calib_data="wiki-sample", calib_nsamples=2, calib_seqlen=16)


@pytest.mark.parametrize("bad", [dict(batch_size=0), dict(seqlen=-1), dict(max_windows=0), dict(calib_nsamples=0),
                                 dict(eval_dtype="float8")])
def test_setup_rejects_bad_values(bad):
    with pytest.raises(ReproError):
        Setup(**bad)


def test_unknown_keys_are_errors():
    with pytest.raises(ReproError, match="unknown setting key.*'max_window'"):
        check_keys({"max_window": 3}, Setup.keys(), "setting")
    with pytest.raises(ReproError, match="unknown setup key"):
        SMALL.replace(windows=3)


def test_unknown_scorer_parameter_is_an_error():
    from helpers import build_tiny

    with pytest.raises(ReproError, match="takes z; got Z"):
        score_heads("mpg", build_tiny("tiny-llama"), Z=3)
    with pytest.raises(ReproError, match="no parameters; got z"):
        score_heads("magnitude-head", build_tiny("tiny-llama"), z=3)


def test_every_key_field_changes_the_key(monkeypatch, tmp_path):
    e = Experiment("tiny-llama", SMALL, Store(None), progress=False)
    k0 = config_key(e.base_config())
    for change in (dict(batch_size=2), dict(seqlen=16), dict(max_windows=1), dict(eval_dtype="bfloat16" if SMALL.eval_dtype == "float32" else "float32"),
                   dict(data="c4-sample")):
        e2 = Experiment("tiny-llama", SMALL.replace(**change), Store(None), progress=False)
        assert config_key(e2.base_config()) != k0, change
    assert config_key(Experiment("tiny-llama", SMALL, Store(None)).base_config()) == k0  # and is stable
    other_weights = Experiment("tiny-llama", SMALL, Store(None))
    other_weights.loaded.identity["seed"] = 1
    assert config_key(other_weights.base_config()) != k0
    monkeypatch.setattr(base, "PROTOCOL", base.PROTOCOL + 1)
    assert config_key(e.base_config()) != k0


def _word_tokenizer():
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.WordLevel({"<unk>": 0, "a": 1, "b": 2}, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    return PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>")


def test_local_folder_weights_hash_is_in_the_key(tmp_path):
    import torch
    import transformers as T

    from repro.assets import load_model

    cfg = T.LlamaConfig(vocab_size=64, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                        num_attention_heads=2, num_key_value_heads=1)
    _word_tokenizer().save_pretrained(tmp_path / "m")
    torch.manual_seed(0)
    T.LlamaForCausalLM(cfg).save_pretrained(tmp_path / "m")
    a = load_model(str(tmp_path / "m")).identity["weights_sha256"]
    torch.manual_seed(1)
    T.LlamaForCausalLM(cfg).save_pretrained(tmp_path / "m")
    b = load_model(str(tmp_path / "m")).identity["weights_sha256"]
    assert a and b and a != b


def test_non_causal_folder_is_a_clear_error(tmp_path):
    import transformers as T

    from repro.assets import load_model

    T.BertForMaskedLM(T.BertConfig(vocab_size=32, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                                   intermediate_size=16)).save_pretrained(tmp_path / "bert")
    with pytest.raises(ReproError, match="'bert' model .* not a causal language model"):
        load_model(str(tmp_path / "bert"))


def test_recompute_and_cache_summary(tmp_path):
    calls = []
    s = Store(tmp_path)
    s.run("x", {"a": 1}, lambda: calls.append(1) or {"v": 1})
    s2 = Store(tmp_path)
    s2.run("x", {"a": 1}, lambda: calls.append(2) or {"v": 2})
    assert calls == [1] and s2.cache_summary([("x", config_key({"a": 1}))]).startswith("1 of 1")
    s3 = Store(tmp_path, recompute=True)
    r = s3.run("x", {"a": 1}, lambda: calls.append(3) or {"v": 3})
    r2 = s3.run("x", {"a": 1}, lambda: calls.append(4) or {"v": 4})  # once per session, then reused
    assert calls == [1, 3] and r["result"] == r2["result"] == {"v": 3}
    assert s3.cache_summary([("x", config_key({"a": 1}))]).startswith("0 of 1")
    assert [rec["result"] for rec in Store(tmp_path).records("x")] == [{"v": 3}]


def test_memory_store_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    s = Store(None)
    s.run("x", {"a": 1}, lambda: {"v": 1})
    assert [r["result"] for r in s.records("x")] == [{"v": 1}] and list(tmp_path.iterdir()) == []


def test_head_experiment_cells_and_frame(tmp_path):
    """Cells of a tiny run land in the frame; records of another protocol never do."""
    store = Store(tmp_path)
    e = HeadExperiment("tiny-llama", SMALL, store, grad_nsamples=1, progress=False)
    e.dense()
    e.cell("mpg", 0.25)
    e.cell("wanda-head", 0.25)
    frame = R.ppl_frame(store, {"tiny-llama": e})
    assert sorted(frame.method) == ["dense", "mpg", "wanda-head"]
    assert R.cell(frame, "tiny-llama", "mpg", 0.25).z == 2.0
    assert R.cell(frame, "tiny-llama", "wanda-head", 0.25).calibration["nsamples"] == 2
    old = {**e.base_config(), "protocol": 1, "method": "dense"}
    store.put("heads-ppl", old, {"ppl": 1.0, "ci95": None, "window_nll": [0.0], "n_windows": 1, "n_tokens": 1,
                                 "dtype": "bfloat16", "seqlen": 32})
    assert len(R.ppl_frame(store, {"tiny-llama": e})) == 3
    # gradient-head draws grad_nsamples windows, the others calib_nsamples; the key says which
    assert e.method_config("gradient-head")["calibration"]["nsamples"] == 1
    assert "z" not in e.method_config("wanda-head") and e.method_config("mp", z=2.5)["z"] == 2.5


def _frame(rows):
    return pd.DataFrame([{"key": ("heads-ppl", str(i)), "tie_break": "index", "z": r.get("z"),
                          "ppl": math.exp(np.mean(r["nll"])), "ci95": None, "window_nll": r["nll"], **r}
                         for i, r in enumerate(rows)])


def test_tables_and_claims_from_constructed_records():
    w = np.array([3.0, 3.5, 2.5, 4.0])
    rows = [dict(model="m", method="dense", sparsity=0.0, nll=w)]
    for sp, gap in ((0.25, 0.1), (0.5, 0.3)):
        rows += [dict(model="m", method="mpg", sparsity=sp, z=2.0, nll=w + gap),
                 dict(model="m", method="mp", sparsity=sp, z=2.0, nll=w + gap),          # identical selection
                 dict(model="m", method="wanda-head", sparsity=sp, nll=w + gap + 1.0),  # worse on every window
                 dict(model="m", method="gradient-head", sparsity=sp, nll=w + gap - 0.2 + [0.0, 0.01, 0.0, 0.02]),
                 dict(model="m", method="sparsegpt-head", sparsity=sp, nll=w + 5), dict(model="m", method="hybrid",
                                                                                         sparsity=sp, nll=w + 4)]
    frame = _frame(rows)
    vals = R.grid(frame, "ppl", ["mpg", "wanda-head", "gradient-head"], ["m"], [0.25, 0.5])
    assert vals.loc["Dense", ("m", "25.0%")] == vals.loc["Dense", ("m", "50.0%")] == pytest.approx(math.exp(w.mean()))
    counts = R.rank_counts(vals.drop(index="Dense"), ["MP-G", "Wanda-Head", "Gradient-Head"])
    assert counts.loc["Gradient-Head", "best"] == 2 and counts.loc["MP-G", "second"] == 2
    p = R.paired_vs(frame, "m", "mpg", "wanda-head", 0.25)
    assert p.estimate == pytest.approx(math.exp(-1.0)) and p.n_better == 4
    claims = R.mpg_claims(frame, ["m"], [0.25, 0.5], [2.0], [], {"m": 3})

    def find(prefix, setting):
        (c,) = [c for c in claims if c.claim.startswith(prefix) and c.setting == setting]
        return c.verdict
    assert find("MP-G never collapses", "m") == HOLDS
    assert find("MP-G ranks in the top two", "m") == HOLDS  # only Gradient-Head is better
    assert find("Calibration-free MP-G", "m, 25.0%") == FAILS  # Gradient-Head better on every window
    assert find("GQA-aware MP-G", "m (g = 3), 25.0%") == FAILS  # identical selection: not better


def test_efficiency_claims_use_paired_rounds():
    t = [0.10, 0.20, 0.15, 0.12, 0.18]
    eff = {"dense": {"params": 100, "attention_flops": 100, "heads": 8, "prefill_b1": {"times_s": t}},
           "zeroed 0.5": {"mode": "zeroed", "sparsity": 0.5, "params": 100, "attention_flops": 100, "heads": 8,
                          "prefill_b1": {"times_s": [x * 1.001 for x in t]}},
           "removed 0.5": {"mode": "removed", "sparsity": 0.5, "params": 90, "attention_flops": 60, "heads": 5,
                           "prefill_b1": {"times_s": [x / 1.2 for x in t]}}}
    c = {x.claim[:30]: x for x in R.efficiency_claims(eff, "m")}
    assert c["Zeroing heads speeds up infere"].verdict == HOLDS      # x0.999 exactly every round
    assert c["(beyond the paper) Physically "].verdict == HOLDS
    assert c["50% head sparsity removes 8-16"].verdict == HOLDS      # 10% saved
    assert c["50% head sparsity halves atten"].verdict == FAILS      # x0.60 > 0.55


def test_auto_dtype_resolves_before_keys(monkeypatch):
    """"auto" becomes the dtype that really runs, in the setup (and so in keys and captions)."""
    import repro.assets.models as M

    monkeypatch.setattr(M, "fast_bf16", lambda device=None: False)
    assert Setup(eval_dtype="auto").eval_dtype == "float32"
    monkeypatch.setattr(M, "fast_bf16", lambda device=None: True)
    assert Setup(eval_dtype="auto").eval_dtype == "bfloat16"
    assert Setup(eval_dtype="float16").eval_dtype == "float16"
