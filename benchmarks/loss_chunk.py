"""What the cache-sized loss chunks of ``repro.evaluate.ppl.shifted_nll`` buy: the per-token float32
loss of one window of bfloat16 logits, upcast 128 positions at a time (the old default) against
the default chunk (``LOSS_CHUNK_BYTES`` of float32 at a time), for each model's vocabulary size.

    python benchmarks/loss_chunk.py [--threads 1] [--positions 128] [--repeats 10] [--out PATH]

Random logits (the loss's cost does not depend on their values); reports milliseconds per window,
the ratio new / old, and whether the two are bit-identical (they must be: each position's loss is
its own row).
"""
import argparse
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from jobs_speedup import emit  # noqa: E402

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
    emit(out, a.out)


if __name__ == "__main__":
    main()
