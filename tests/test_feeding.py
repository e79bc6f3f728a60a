"""Each model fed as its family expects (repro.assets.feeding): Gemma windows start with <bos> in every
path (perplexity, calibration, search mini-batches, timing, lm-eval), Llama-like windows stay exactly
the SparseGPT / Wanda protocol."""
import numpy as np
import pytest
import torch

from repro.arch import bos_token
from repro.assets import load_model
from repro.assets.feeding import prepend, rule, text_tokens
from repro.calib import sample_windows
from repro.evaluate.ppl import windows

IDS = torch.arange(1, 22)  # a token stream whose first token (1) is the tokenizer's BOS


def first_tokens(model):
    """Record the first input id of every forward pass of ``model``."""
    seen = []
    model.get_input_embeddings().register_forward_pre_hook(lambda m, a: seen.extend(a[0][:, 0].tolist()))
    return seen


def test_rule_by_family():
    gemma, llama = load_model("tiny-gemma3"), load_model("tiny-llama")
    assert bos_token(gemma.model.config, gemma.tokenizer) == 1 and rule(1) == "bos+text"
    assert bos_token(llama.model.config, llama.tokenizer) is None and rule(None) == "plain"


def test_windows_with_bos_hold_seqlen_text_tokens_after_bos():
    w = windows(IDS, 5, bos=1)
    assert w.shape == (4, 6) and (w[:, 0] == 1).all()
    assert w[:, 1:].flatten().tolist() == list(range(2, 22))  # the tokenizer's own BOS dropped, no text lost
    plain = windows(IDS, 5)
    assert plain.shape == (4, 5) and plain.flatten().tolist() == list(range(1, 21))  # unchanged protocol
    assert text_tokens(torch.tensor([7, 1, 2]), 1).tolist() == [7, 1, 2]  # only a leading BOS goes
    assert prepend(torch.zeros(2, 3, dtype=torch.long), None).shape == (2, 3)


def test_calibration_windows_start_with_bos_and_plain_ones_are_unchanged():
    w = sample_windows(IDS, 3, 4, seed=0, bos=1)
    assert w.shape == (3, 5) and (w[:, 0] == 1).all() and (w[:, 1:] > 1).all()
    starts = np.random.default_rng(0).integers(0, len(IDS) - 4, size=3)  # the draw the protocol always made
    assert torch.equal(sample_windows(IDS, 3, 4, seed=0), torch.stack([IDS[s:s + 4] for s in starts.tolist()]))


@pytest.fixture
def gemma():
    from repro.engines.base import Experiment, Setup
    from repro.store import Store

    setup = Setup(data="wiki-sample", seqlen=16, max_windows=3, calib_data="wiki-sample", calib_nsamples=2,
                  calib_seqlen=8, eval_dtype="float32")
    return Experiment("tiny-gemma3", setup, Store(None), progress=False)


def test_perplexity_and_calibration_of_a_gemma_experiment_see_bos_first(gemma):
    model = gemma.eval_model()
    seen = first_tokens(model)
    r = gemma.ppl(model)
    assert r["n_windows"] == 3 and r["n_tokens"] == 48 and seen == [1, 1, 1]
    assert (gemma.calibration().windows[:, 0] == 1).all() and gemma.calibration().windows.shape == (2, 9)
    assert gemma.base_config()["windows"] == "bos+text" and gemma.calibration().source["windows"] == "bos+text"


def test_plain_family_keys_name_the_plain_rule():
    from repro.engines.base import Experiment, Setup
    from repro.store import Store

    e = Experiment("tiny-llama", Setup(data="wiki-sample", seqlen=16, max_windows=1, calib_data="wiki-sample",
                                       calib_nsamples=2, calib_seqlen=8), Store(None), progress=False)
    assert e.base_config()["windows"] == e.calibration().source["windows"] == "plain"  # protocol 3: always written


def test_prefill_timing_inputs_start_with_bos():
    from repro.evaluate.speed import prefill_seconds

    m = load_model("tiny-gemma3").model
    seen = first_tokens(m)
    prefill_seconds({"dense": m}, 2, 8, repeats=1, warmup=0, bos=1)
    assert seen == [1, 1]


def test_lm_eval_requests_to_gemma_start_with_bos():
    from repro.evaluate.zeroshot import evaluate_zeroshot

    loaded = load_model("tiny-gemma3")
    seen = first_tokens(loaded.model)
    evaluate_zeroshot(loaded.model, loaded.tokenizer, ["sst2"], limit=2, batch_size=2, progress=False)
    assert seen and set(seen) == {1}


def test_bandit_search_batches_and_removal_timing_of_gemma_start_with_bos():
    from repro.engines.bandit import BanditExperiment
    from repro.engines.base import Setup
    from repro.store import Store

    e = BanditExperiment("tiny-gemma3", Setup(data="wiki-sample", seqlen=16, max_windows=2, calib_data="wiki-sample",
                                              calib_nsamples=2, calib_seqlen=8), Store(None), calib_batch_size=1,
                         progress=False)
    batches, source = e.calibration_batches(1)
    assert all(int(b["input_ids"][0, 0]) == 1 for b in batches) and source["windows"] == "bos+text"
    seen = first_tokens(e.search_model("ucb"))
    e.select("ucb", ["head"], 0.25, 1, {"budget": 2, "pool_size": 2})
    assert seen and set(seen) == {1}  # every loss of the search
    assert e.select_config("magnitude", ["head"], 0.25, 1)["calibration"] is None  # reads no data: key unchanged
