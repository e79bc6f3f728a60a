"""The perplexity protocol against an independent implementation, CIs, limits."""
import math

import numpy as np
import pytest
import torch

from repro.assets.data import TextData
from repro.assets.tiny import byte_tokenizer
from repro.errors import ReproError
from repro.evaluate import perplexity, ppl_ci
from repro.evaluate.ppl import windows

from helpers import build_tiny

ROWS = [r for i in range(40) for r in ("", f" = Title {i} = \n", "", f" Some text about thing {i * 7 % 13} , and more . \n")]


def data():
    return TextData("toy", "test", ROWS, "0" * 64, "test")


@pytest.mark.parametrize("name", ["tiny-llama", "tiny-gpt2"])
@pytest.mark.parametrize("batch_size", [1, 3])
def test_matches_labels_loss_loop(name, batch_size):
    """Same tokens, windows and NLL as the textbook loop (transformers' own shifted loss)."""
    m = build_tiny(name)
    tok = byte_tokenizer()
    r = perplexity(m, tok, data(), seqlen=64, max_windows=5, batch_size=batch_size, progress=False)
    ids = torch.tensor(tok.encode("\n\n".join(ROWS)))
    nll = []
    with torch.no_grad():
        for i in range(5):
            x = ids[i * 64:(i + 1) * 64][None]
            nll.append(m(input_ids=x, labels=x).loss.item())
    np.testing.assert_allclose(r.window_nll, nll, rtol=1e-5)
    assert r.ppl == pytest.approx(math.exp(np.mean(nll)), rel=1e-6)
    assert (r.n_windows, r.n_tokens, r.seqlen) == (5, 320, 64)
    assert r.ci95 is None  # 5 windows: no interval is shown rather than a false one (20 at least)


def test_windows_drop_the_tail():
    ids = torch.arange(10)
    w = windows(ids, 4)
    assert w.tolist() == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert windows(ids, 4, max_windows=1).tolist() == [[0, 1, 2, 3]]
    with pytest.raises(ReproError, match="fewer than one window"):
        windows(ids, 11)


def test_spread_windows_cover_the_whole_split_in_order():
    ids = torch.arange(100)  # 10 windows of 10
    w = windows(ids, 10, max_windows=4, spread=True)
    assert w[:, 0].tolist() == [0, 30, 60, 90]  # the first and the last window, evenly between
    assert windows(ids, 10, max_windows=4).tolist() == windows(ids, 40 // 4, max_windows=4).tolist()  # not spread: first 4
    assert windows(ids, 10, max_windows=20, spread=True).tolist() == windows(ids, 10).tolist()  # fewer than asked: all
    bos = windows(ids, 10, max_windows=2, bos=-1, spread=True)
    assert bos[:, 0].tolist() == [-1, -1] and bos[:, 1].tolist() == [0, 90]


def test_seqlen_beyond_model_limit():
    m = build_tiny("tiny-gpt2")  # 512 positions
    with pytest.raises(ReproError, match="exceeds the model's limit of 512"):
        perplexity(m, byte_tokenizer(), data(), seqlen=1024, progress=False)


def test_ppl_ci():
    assert ppl_ci([1.0]) is None and ppl_ci([1.0, 2.0, 3.0, 2.5]) is None  # below 20 windows: no interval
    lo, hi = ppl_ci([1.0, 2.0, 3.0, 2.5] * 5)
    assert math.exp(1.0) <= lo < hi <= math.exp(3.0)


@pytest.mark.parametrize("name", ["tiny-llama", "tiny-gemma3", "tiny-opt", "tiny-neox", "tiny-gpt2"])
def test_fused_head_path_equals_plain_logits(name):
    """The fused output-layer + loss path gives the numbers of the plain logits path."""
    from repro.evaluate.ppl import _fusable, shifted_nll, window_nll

    m = build_tiny(name)
    assert _fusable(m)
    wins = torch.randint(4, 260, (3, 40), generator=torch.Generator().manual_seed(1))
    fused = window_nll(m, wins, batch_size=2, progress=False)
    with torch.no_grad():
        plain = shifted_nll(m(input_ids=wins).logits, wins).mean(1).double().numpy()
    np.testing.assert_allclose(fused, plain, rtol=1e-6)


def test_softcapped_logits_take_the_plain_path():
    from repro.evaluate.ppl import _fusable

    m = build_tiny("tiny-gemma3")
    m.config.final_logit_softcapping = 30.0
    assert not _fusable(m)
    tok = byte_tokenizer()
    r = perplexity(m, tok, data(), seqlen=64, max_windows=2, progress=False)
    ids = torch.tensor(tok.encode("\n\n".join(ROWS)))
    with torch.no_grad():
        ref = [m(input_ids=ids[i * 64:(i + 1) * 64][None], labels=ids[i * 64:(i + 1) * 64][None]).loss.item()
               for i in range(2)]
    np.testing.assert_allclose(r.window_nll, ref, rtol=1e-5)


@pytest.mark.parametrize("text", ["Hello world\n\n = A = \n", "naïve café — 日本", "  two  spaces\ttab", ""])
def test_tiny_models_byte_tokenizer(text):
    """The tiny models' Hugging Face tokenizer is exactly UTF-8 bytes + 4, and round-trips."""
    tok = byte_tokenizer()
    assert tok(text)["input_ids"] == [b + 4 for b in text.encode("utf-8")]
    assert tok.decode(tok(text)["input_ids"]) == text
    assert (tok.pad_token_id, tok.bos_token_id, tok.eos_token_id, tok.mask_token_id, len(tok)) == (0, 1, 2, 3, 260)


@pytest.mark.parametrize("gemma_first", [False, True])
def test_token_memo_is_per_tokenizer_not_per_name(gemma_first):
    """Two tokenizers with one name ("bytes"), one adding BOS: each model's windows come from its
    own tokenizer whichever was asked first. (The memo was keyed by the name: a process that had
    evaluated tiny-gemma3 fed tiny-llama Gemma's tokens, shifted by the BOS, and a record depended
    on the order of cells in its worker.)"""
    from repro.evaluate.ppl import tokenize

    plain, bos = byte_tokenizer(), byte_tokenizer(add_bos=True)
    assert plain.name_or_path == bos.name_or_path
    d = TextData("toy", "test", ROWS, "1" * 64, "test")
    order = [bos, plain] if gemma_first else [plain, bos]
    got = {id(t): tokenize(t, d) for t in order}
    assert int(got[id(bos)][0]) == 1 and int(got[id(plain)][0]) != 1
    assert torch.equal(got[id(plain)], torch.tensor(plain.encode("\n\n".join(ROWS))))
    assert torch.equal(got[id(bos)][1:], got[id(plain)])
    assert tokenize(plain, d) is got[id(plain)]  # still memoised


@pytest.mark.parametrize("vocab", [97, 70_000, 300_000])
def test_chunked_loss_equals_one_float32_cross_entropy_bit_for_bit(vocab):
    """The loss is upcast a few positions at a time (cache-sized chunks, 2 positions at 300k
    words); each position's loss must equal one cross-entropy over the whole float32 tensor
    exactly, or every record's perplexity would depend on the chunk size."""
    from repro.evaluate.ppl import LOSS_CHUNK_BYTES, shifted_nll

    g = torch.Generator().manual_seed(vocab)
    logits = (torch.randn(2, 40, vocab, generator=g) * 4).to(torch.bfloat16)
    ids = torch.randint(0, vocab, (2, 40), generator=g)
    whole = torch.nn.functional.cross_entropy(logits[:, :-1].float().reshape(-1, vocab), ids[:, 1:].reshape(-1),
                                              reduction="none").reshape(2, 39)
    assert LOSS_CHUNK_BYTES // (4 * vocab) < 39 or vocab == 97  # the large vocabularies really are chunked
    for chunk in (None, 1, 3, 128):
        assert torch.equal(shifted_nll(logits, ids, chunk=chunk), whole)


def _fast_tokenizer(extra: str | None = None):
    """A real ``tokenizers``-backed tokenizer (word level); ``extra``: one more vocabulary entry (another
    definition, other ids)."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    words = sorted({w for r in ROWS for w in r.split()} | ({extra} if extra else set()))
    vocab = {"[UNK]": 0, **{w: i + 1 for i, w in enumerate(words)}}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    return PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]")


def test_long_texts_keep_their_ids_on_disk_per_tokenizer_definition(monkeypatch, tmp_path):
    """A training split is tokenized once per tokenizer definition and text, not once per worker process: a
    new tokenizer object of the same definition reads the ids from $REPRO_CACHE/tokens (what a fresh worker
    sees); another definition never reads them; a broken file is tokenized again; short texts stay in memory."""
    from repro.evaluate import ppl

    monkeypatch.setenv("REPRO_CACHE", str(tmp_path))
    rows = ROWS * 300  # ~330k characters: above DISK_CACHE_CHARS
    long = TextData("toy", "train", rows, "2" * 64, "test")
    assert len("\n\n".join(rows)) >= ppl.DISK_CACHE_CHARS
    first = ppl.tokenize(_fast_tokenizer(), long)
    files = list((tmp_path / "tokens").glob("*.npy"))
    assert len(files) == 1 and first.dtype == torch.int64 and first.numel() > 10_000

    def no_tokenizing(tokenizer, text):
        raise AssertionError("tokenized again although its ids are on disk")
    with monkeypatch.context() as m:
        m.setattr(ppl, "_tokenize_text", no_tokenizing)
        again = ppl.tokenize(_fast_tokenizer(), long)  # a new object: not in the in-memory memo
    assert again.dtype == torch.int64 and torch.equal(again, first)

    other = ppl.tokenize(_fast_tokenizer(extra="!!"), long)  # one more word, sorted first: every id shifts
    assert not torch.equal(other, first) and len(list((tmp_path / "tokens").glob("*.npy"))) == 2

    files[0].write_bytes(files[0].read_bytes()[:100])  # a truncated file (a killed writer would leave none)
    assert torch.equal(ppl.tokenize(_fast_tokenizer(), long), first)
    assert torch.equal(torch.from_numpy(np.load(files[0])).long(), first)  # rewritten whole

    ppl.tokenize(_fast_tokenizer(), data())  # short: memory only
    assert len(list((tmp_path / "tokens").glob("*.npy"))) == 2
