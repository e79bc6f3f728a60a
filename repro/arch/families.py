"""One adapter per model family: only module names and layouts, no pruning logic."""
from __future__ import annotations

from torch import nn

from repro.arch.base import MLP, Adapter, Attention, Site, features, role_major, unit_major

Q, K, V, O = role_major("q"), role_major("k"), role_major("v"), role_major("o")
C = role_major("c")


def _get(module: nn.Module, dotted: str) -> nn.Module:
    for part in dotted.split("."):
        module = getattr(module, part)
    return module


class Separate(Adapter):
    """Families with separate Q, K, V and O linears; MLP given by up-side and down-side names."""

    attn: str = "self_attn"
    q, k, v, o = "q_proj", "k_proj", "v_proj", "o_proj"
    up: tuple[str, ...] = ("mlp.gate_proj", "mlp.up_proj")
    down: str = "mlp.down_proj"

    def attention(self, i: int) -> Attention:
        block, hd = self.layers[i], self.head_dim
        attn = _get(block, self.attn)
        qm, km, vm = (_get(block, f"{self.attn}.{n}") for n in (self.q, self.k, self.v))
        om = self.o_module(block)
        h, hkv = features(qm, "out") // hd, features(km, "out") // hd
        n = {"q": h, "o": h, "k": hkv, "v": hkv}
        sites = [Site(qm, "out", hd, Q, n), Site(km, "out", hd, K, n), Site(vm, "out", hd, V, n),
                 Site(om, "in", hd, O, n)]
        return Attention(attn, sites, h, hkv, hd)

    def o_module(self, block: nn.Module) -> nn.Module:
        return _get(block, f"{self.attn}.{self.o}")

    def mlp(self, i: int) -> MLP:
        block = self.layers[i]
        down = _get(block, self.down)
        n = {"c": features(down, "in")}
        sites = [Site(_get(block, u), "out", 1, C, n) for u in self.up] + [Site(down, "in", 1, C, n)]
        return MLP(block, sites, n["c"])


class LlamaLike(Separate):
    model_types = ("llama", "mistral", "qwen2", "qwen3", "gemma3_text", "gemma2", "gemma")


class OPT(Separate):
    model_types = ("opt",)
    o = "out_proj"
    up, down = ("fc1",), "fc2"


class ViTLike(Separate):
    model_types = ("vit", "deit", "dinov2")
    attn = "attention"
    up, down = ("mlp.fc1",), "mlp.fc2"

    def mlp(self, i: int) -> MLP:
        if getattr(self.config, "use_swiglu_ffn", False):
            raise NotImplementedError("Dinov2 with SwiGLU FFN has no adapter yet")
        return super().mlp(i)


class BertLike(Separate):
    model_types = ("bert", "roberta")
    attn = "attention.self"
    q, k, v = "query", "key", "value"
    up, down = ("intermediate.dense",), "output.dense"

    def o_module(self, block: nn.Module) -> nn.Module:
        return block.attention.output.dense  # outside BertSelfAttention, in BertSelfOutput


class Fused(Adapter):
    """Families whose Q, K and V share one fused module (MHA only)."""

    attn: str
    qkv: str
    out: str
    qkv_layout = staticmethod(role_major("q", "k", "v"))
    up: tuple[str, ...]
    down: str

    def attention(self, i: int) -> Attention:
        attn, hd = _get(self.layers[i], self.attn), self.head_dim
        qkv = getattr(attn, self.qkv)
        h = features(qkv, "out") // (3 * hd)
        n = {"q": h, "k": h, "v": h, "o": h}
        sites = [Site(qkv, "out", hd, self.qkv_layout, n), Site(getattr(attn, self.out), "in", hd, O, n)]
        return Attention(attn, sites, h, h, hd)

    mlp = Separate.mlp


class GPT2(Fused):
    """Fused, transposed ``c_attn`` (Conv1D [d, 3d]) holding q.., k.., v.. in that order."""
    model_types = ("gpt2",)
    attn, qkv, out = "attn", "c_attn", "c_proj"
    up, down = ("mlp.c_fc",), "mlp.c_proj"

    def set_heads(self, attn: nn.Module, n_heads: int, n_kv_heads: int) -> None:
        super().set_heads(attn, n_heads, n_kv_heads)
        attn.split_size = n_heads * self.head_dim


class GPTNeoX(Fused):
    """Fused ``query_key_value`` laid out head-major: q0 k0 v0 q1 k1 v1 ..."""
    model_types = ("gpt_neox",)
    attn, qkv, out = "attention", "query_key_value", "dense"
    qkv_layout = staticmethod(unit_major("q", "k", "v"))
    up, down = ("mlp.dense_h_to_4h",), "mlp.dense_4h_to_h"
