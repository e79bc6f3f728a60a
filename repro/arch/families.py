"""One adapter per model family: only module names and layouts, no pruning logic. Defining a class
here with ``model_types`` registers it (see :mod:`repro.arch`)."""
from __future__ import annotations

import torch
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
    o_path: str | None = None  # the O projection's path in a block when it is not f"{attn}.{o}"
    up: tuple[str, ...] = ("mlp.gate_proj", "mlp.up_proj")
    down: str = "mlp.down_proj"

    @classmethod
    def linear_paths(cls) -> tuple[str, ...]:
        return (*(f"{cls.attn}.{n}" for n in (cls.q, cls.k, cls.v)), cls.o_path or f"{cls.attn}.{cls.o}", *cls.up,
                cls.down)

    def attention(self, i: int) -> Attention:
        block, hd = self.layers[i], self.block_head_dim(i)
        attn = _get(block, self.attn)
        qm, km, vm = (_get(block, f"{self.attn}.{n}") for n in (self.q, self.k, self.v))
        om = self.o_module(block)
        h, hkv = features(qm, "out") // hd, features(km, "out") // hd
        n = {"q": h, "o": h, "k": hkv, "v": hkv}
        sites = [Site(qm, "out", hd, Q, n), Site(km, "out", hd, K, n), Site(vm, "out", hd, V, n),
                 Site(om, "in", hd, O, n)]
        return Attention(attn, sites, h, hkv, hd)

    def block_head_dim(self, i: int) -> int:
        """Head dimension of block ``i`` (the model's :attr:`head_dim` unless a family's blocks differ)."""
        return self.head_dim

    def o_module(self, block: nn.Module) -> nn.Module:
        return _get(block, self.o_path or f"{self.attn}.{self.o}")

    def mlp(self, i: int) -> MLP:
        block = self.layers[i]
        down = _get(block, self.down)
        n = {"c": features(down, "in")}
        sites = [Site(_get(block, u), "out", 1, C, n) for u in self.up] + [Site(down, "in", 1, C, n)]
        return MLP(block, sites, n["c"])


def _present(*modules) -> list[nn.Module]:
    return [m for m in modules if m is not None]


def _lm_head(model: nn.Module) -> nn.Module | None:
    return model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None


class LlamaLike(Separate):
    model_types = ("llama", "mistral", "qwen2", "qwen3")

    def head_modules(self) -> list[nn.Module]:
        return _present(self.model.base_model.norm, _lm_head(self.model))


class Gemma(LlamaLike):
    """Llama's layout; trained with ``<bos>`` first; Gemma 2/3 soft-cap the final logits."""
    model_types = ("gemma3_text", "gemma2", "gemma")
    bos_first = True

    def post_sublayer_norms(self, i: int) -> dict[str, nn.Module]:
        """Gemma 2/3 normalise each sublayer's output before the residual add (``post_attention_layernorm``
        after attention, ``post_feedforward_layernorm`` after the MLP, the layer also having a
        ``pre_feedforward_layernorm``); Gemma 1's ``post_attention_layernorm`` is Llama's pre-MLP norm."""
        layer = self.layers[i]
        if not hasattr(layer, "pre_feedforward_layernorm"):
            return {}
        return {"head": layer.post_attention_layernorm, "mlp": layer.post_feedforward_layernorm}

    def logits_from(self, hidden: torch.Tensor) -> torch.Tensor:
        logits = super().logits_from(hidden)
        cap = getattr(self.config, "final_logit_softcapping", None)  # Gemma 2/3: cap * tanh(logits / cap)
        if cap is not None and _lm_head(self.model) is not None:
            logits = torch.tanh(logits / cap) * cap
        return logits


class OPT(Separate):
    model_types = ("opt",)
    o = "out_proj"
    up, down = ("fc1",), "fc2"

    def head_modules(self) -> list[nn.Module]:
        dec = self.model.base_model.decoder
        return _present(dec.final_layer_norm, dec.project_out, _lm_head(self.model))


class ViTLike(Separate):
    model_types = ("vit", "deit", "dinov2")
    attn = "attention"
    up, down = ("mlp.fc1",), "mlp.fc2"

    def mlp(self, i: int) -> MLP:
        if getattr(self.config, "use_swiglu_ffn", False):
            raise NotImplementedError("Dinov2 with SwiGLU FFN has no adapter yet")
        return super().mlp(i)

    def head_modules(self) -> list[nn.Module]:
        """Final layernorm, then the pooler (bare models with one) or the classifier (applied by
        :meth:`logits_from` to the [CLS] token, or for DINOv2 to concat([CLS], mean patch token),
        as each ``*ForImageClassification`` does)."""
        base = self.model.base_model
        return _present(base.layernorm, getattr(base, "pooler", None), getattr(self.model, "classifier", None))

    def logits_from(self, hidden: torch.Tensor) -> torch.Tensor:
        base = self.model.base_model
        hidden = base.layernorm(hidden)
        classifier = getattr(self.model, "classifier", None)
        if classifier is not None:
            if type(self.model).__name__.endswith("WithTeacher"):
                raise NotImplementedError("DeiT with a distillation head has no head adapter yet")
            if self.config.model_type == "dinov2":  # Dinov2ForImageClassification: [CLS] and mean patch token
                return classifier(torch.cat([hidden[:, 0], hidden[:, 1:].mean(dim=1)], dim=1))
            return classifier(hidden[:, 0, :])
        pooler = getattr(base, "pooler", None)
        return pooler(hidden) if pooler is not None else hidden


class BertLike(Separate):
    model_types = ("bert", "roberta")
    attn = "attention.self"
    q, k, v = "query", "key", "value"
    o_path = "attention.output.dense"  # outside BertSelfAttention, in BertSelfOutput
    up, down = ("intermediate.dense",), "output.dense"


class Swin(Separate):
    """Swin (``SwinForImageClassification``, ``SwinModel``): blocks nested in stages
    (``encoder.layers[s].blocks[j]``), every stage but the last ending with a patch merging
    (``downsample``) that halves the resolution and doubles the width. The adapter's layers are the
    blocks of all stages in order (``n_layers = sum(config.depths)``; ``config.num_hidden_layers``
    counts stages); heads per block follow ``config.num_heads[stage]``, and each block's head dim is
    its attention module's. :meth:`run_layers` applies a stage's patch merging after its last block,
    with the block's captured ``input_dimensions``; physical head removal also slices the per-head
    columns of the block's relative position bias table (:meth:`extra_head_params`)."""
    model_types = ("swin",)
    attn = "attention"
    up, down = ("mlp.fc1",), "mlp.fc2"
    bias = "attention.relative_position_bias"  # holds relative_position_bias_table [(2w-1)^2, heads]

    def _find_layers(self, model: nn.Module) -> nn.ModuleList:
        """The blocks of every stage, flat (the model's own modules, not copies); also notes which
        block ends a stage with a patch merging (``self.merges``: block index -> merging module)."""
        stages = model.base_model.encoder.layers
        depths = [len(stage.blocks) for stage in stages]
        if depths != list(self.config.depths):
            raise ValueError(f"Swin stages hold {depths} blocks, config.depths says {list(self.config.depths)}")
        blocks, self.merges = [], {}
        for stage in stages:
            blocks += list(stage.blocks)
            if stage.downsample is not None:
                self.merges[len(blocks) - 1] = stage.downsample
        return nn.ModuleList(blocks)

    def block_head_dim(self, i: int) -> int:
        return _get(self.layers[i], self.attn).head_dim

    @property
    def head_dim(self) -> int:
        dims = {self.block_head_dim(i) for i in range(self.n_layers)}
        if len(dims) != 1:
            raise ValueError(f"Swin blocks differ in head dim {sorted(dims)}: use attention(i).head_dim")
        return dims.pop()

    def set_heads(self, attn: nn.Module, n_heads: int, n_kv_heads: int) -> None:
        for name in ("num_heads", "num_attention_heads"):
            if hasattr(attn, name):
                setattr(attn, name, n_heads)
        if hasattr(attn, "all_head_size"):
            attn.all_head_size = n_heads * attn.head_dim

    def extra_head_params(self, i: int) -> list[tuple[nn.Module, str, int]]:
        return [(_get(self.layers[i], self.bias), "relative_position_bias_table", 1)]

    def run_layers(self, start: int, stop: int, hidden: torch.Tensor, calls) -> torch.Tensor:
        for i in range(start, stop):
            hidden = super().run_layers(i, i + 1, hidden, calls)
            if i in self.merges:  # SwinStage.forward: downsample(hidden, the stage's input_dimensions)
                call = calls[i]
                dims = call.kwargs["input_dimensions"] if "input_dimensions" in call.kwargs else call.args[0]
                hidden = self.merges[i](hidden, dims)
        return hidden

    def head_modules(self) -> list[nn.Module]:
        """Final layernorm, the pooler (average over tokens) and the classifier, applied by
        :meth:`logits_from` as ``SwinModel`` / ``SwinForImageClassification`` do."""
        base = self.model.base_model
        return _present(base.layernorm, base.pooler, getattr(self.model, "classifier", None))

    def logits_from(self, hidden: torch.Tensor) -> torch.Tensor:
        """Classifier logits; for a bare ``SwinModel`` its pooled output (without a pooler: the
        normalised tokens)."""
        if type(self.model).__name__ not in ("SwinModel", "SwinForImageClassification"):
            raise NotImplementedError(f"{type(self.model).__name__} has no head adapter yet")
        base = self.model.base_model
        hidden = base.layernorm(hidden)
        if base.pooler is None:
            return hidden
        pooled = torch.flatten(base.pooler(hidden.transpose(1, 2)), 1)
        classifier = getattr(self.model, "classifier", None)
        return pooled if classifier is None else classifier(pooled)


class Fused(Adapter):
    """Families whose Q, K and V share one fused module (MHA only)."""

    attn: str
    qkv: str
    out: str
    qkv_layout = staticmethod(role_major("q", "k", "v"))
    up: tuple[str, ...]
    down: str

    @classmethod
    def linear_paths(cls) -> tuple[str, ...]:
        return f"{cls.attn}.{cls.qkv}", f"{cls.attn}.{cls.out}", *cls.up, cls.down

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

    def head_modules(self) -> list[nn.Module]:
        return _present(self.model.base_model.ln_f, _lm_head(self.model))


class GPTNeoX(Fused):
    """Fused ``query_key_value`` laid out head-major: q0 k0 v0 q1 k1 v1 ..."""
    model_types = ("gpt_neox",)
    attn, qkv, out = "attention", "query_key_value", "dense"
    qkv_layout = staticmethod(unit_major("q", "k", "v"))
    up, down = ("mlp.dense_h_to_4h",), "mlp.dense_4h_to_h"

    def head_modules(self) -> list[nn.Module]:
        return _present(self.model.base_model.final_layer_norm, _lm_head(self.model))
