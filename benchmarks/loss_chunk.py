"""What the cache-sized loss chunks of ``repro.evaluate.ppl.shifted_nll`` buy: the per-token float32
loss of one window of bfloat16 logits, upcast 128 positions at a time (the old default) against
the default chunk (``LOSS_CHUNK_BYTES`` of float32 at a time), for each model's vocabulary size.

    python benchmarks/loss_chunk.py [--threads 1] [--positions 128] [--repeats 10] [--ppl gemma3-270m] [--out PATH]

Random logits (the loss's cost does not depend on their values); reports milliseconds per window,
the ratio new / old, and whether the two are bit-identical (they must be: each position's loss is
its own row). With ``--ppl MODEL``, also a whole perplexity evaluation as notebook 2 runs it (bf16,
the first 32 windows of 256 tokens of WikiText-2 test, the family's window rule), once with chunks of 128
positions and once with the default, with the perplexities of both.
"""
import argparse
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from jobs_speedup import emit  # noqa: E402

import repro.evaluate.ppl as ppl  # noqa: E402
from repro.arch import bos_token  # noqa: E402
from repro.assets import load_model, load_text  # noqa: E402
from repro.evaluate.ppl import LOSS_CHUNK_BYTES, shifted_nll  # noqa: E402

VOCABS = {"smollm2-135m": 49152, "gemma3-270m": 262144, "qwen2.5-coder-0.5b": 151936}


def ms(f, repeats: int) -> float:
    f()
    t = time.perf_counter()
    for _ in range(repeats):
        f()
    return (time.perf_counter() - t) / repeats * 1000


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--positions", type=int, default=128)
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--ppl", default=None, help="also time a whole perplexity evaluation of this model")
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    out = {"threads": a.threads, "positions": a.positions, "chunk_bytes": LOSS_CHUNK_BYTES, "models": {}}
    for name, vocab in VOCABS.items():
        g = torch.Generator().manual_seed(0)
        logits = (torch.randn(1, a.positions, vocab, generator=g) * 3).to(torch.bfloat16)
        ids = torch.randint(0, vocab, (1, a.positions), generator=g)
        old, new = shifted_nll(logits, ids, chunk=128), shifted_nll(logits, ids)
        t_old = ms(lambda: shifted_nll(logits, ids, chunk=128), a.repeats)
        t_new = ms(lambda: shifted_nll(logits, ids), a.repeats)
        out["models"][name] = {"vocab": vocab, "chunk": max(1, LOSS_CHUNK_BYTES // (4 * vocab)),
                               "ms_chunk_128": round(t_old, 2), "ms_default": round(t_new, 2),
                               "ratio": round(t_new / t_old, 3), "bit_identical": bool(torch.equal(old, new))}
    if a.ppl:
        out["perplexity"] = whole_evaluation(a.ppl)
    emit(out, a.out)


def whole_evaluation(name: str) -> dict:
    """Seconds and perplexity of one evaluation with 128-position chunks, then with the default."""
    loaded = load_model(name, "bfloat16")
    data, vocab = load_text("wikitext2:test"), loaded.model.config.vocab_size
    bos = bos_token(loaded.model.config, loaded.tokenizer)
    out = {"model": name, "windows": "32 x 256, wikitext2:test", "bos": bos}
    for label, chunk_bytes in (("chunk_128", 128 * 4 * vocab), ("default", LOSS_CHUNK_BYTES)):
        ppl.LOSS_CHUNK_BYTES = chunk_bytes
        t = time.perf_counter()
        r = ppl.perplexity(loaded.model, loaded.tokenizer, data, 256, 32, 8, progress=False, bos=bos)
        out[label] = {"seconds": round(time.perf_counter() - t, 2), "ppl": r.ppl}
    ppl.LOSS_CHUNK_BYTES = LOSS_CHUNK_BYTES
    out["ratio"] = round(out["default"]["seconds"] / out["chunk_128"]["seconds"], 3)
    return out


if __name__ == "__main__":
    main()
