"""Shared helpers: inputs for tiny models, an output function per task, masks from head and
channel lists, and a relative equivalence check for pruned outputs."""
import torch
import transformers as T

from repro.assets.tiny import TINY, build_tiny


def inputs(name: str, batch: int = 2, seqlen: int = 12, seed: int = 0) -> dict:
    g = torch.Generator().manual_seed(seed)
    task = TINY[name][2] if name in TINY else "causal-lm"
    if task in ("causal-lm", "masked-lm"):
        return {"input_ids": torch.randint(4, 260, (batch, seqlen), generator=g)}
    return {"pixel_values": torch.randn(batch, 1, 28, 28, generator=g)}


@torch.no_grad()
def output(model, kw) -> torch.Tensor:
    o = model(**kw)
    return o.logits if hasattr(o, "logits") else o.last_hidden_state


def n_params(model) -> int:
    return sum(p.numel() for p in {id(p): p for p in model.parameters()}.values())


def build_llama_g3(n_layers: int = 3, seed: int = 0) -> torch.nn.Module:
    """A tiny Llama with SmolLM2's GQA shape: 9 query heads over 3 KV heads (g = 3), head_dim 8."""
    cfg = T.LlamaConfig(vocab_size=260, hidden_size=72, intermediate_size=48, num_hidden_layers=n_layers,
                        num_attention_heads=9, num_key_value_heads=3, head_dim=8, max_position_embeddings=64,
                        tie_word_embeddings=True)
    cfg._attn_implementation = "sdpa"
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        return T.LlamaForCausalLM(cfg).eval()


def head_mask(n_layers: int, n_heads: int, heads) -> torch.Tensor:
    """[L, H] 0/1 mask with ``heads`` [(layer, head), ...] off."""
    mask = torch.ones(n_layers, n_heads)
    for layer, h in heads:
        mask[layer, h] = 0
    return mask


def channel_masks(counts: list[int], channels: dict) -> list[torch.Tensor]:
    """Per-layer 0/1 masks over ``counts[i]`` channels with ``channels[i]`` off."""
    return [torch.tensor([0.0 if c in channels.get(i, ()) else 1.0 for c in range(n)]) for i, n in enumerate(counts)]


def assert_same_pruned(dense: torch.Tensor, reference: torch.Tensor, rel: float = 1e-3, **others) -> float:
    """Every tensor in ``others`` equals ``reference`` (a pruned model's output) up to ``rel`` times
    the pruning's own effect max|dense - reference|, which must itself be clearly non-zero (else
    the comparison could not tell pruned from unpruned). Returns that effect."""
    effect = (dense - reference).abs().max().item()
    assert effect > 1e-3 * max(dense.abs().max().item(), 1e-12), f"pruning barely changes the output ({effect:.3g})"
    for name, out in others.items():
        assert out.shape == reference.shape, f"{name}: shape {tuple(out.shape)} != {tuple(reference.shape)}"
        diff = (out - reference).abs().max().item()
        assert diff < rel * effect, f"{name} differs by {diff:.3g}, pruning effect {effect:.3g}"
    return effect


__all__ = ["TINY", "build_tiny", "build_llama_g3", "inputs", "output", "n_params", "head_mask", "channel_masks",
           "assert_same_pruned"]
