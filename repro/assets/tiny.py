"""Tiny random-initialised models of every supported family, built from configs (no downloads).

They exercise the same code paths as the real models in tests and in the ``smoke`` profile.
Each is seeded, so two builds give identical weights.
"""
from __future__ import annotations

import torch
import transformers as T

VOCAB = 260  # ByteTokenizer: 256 bytes + 4 specials

_LM = dict(vocab_size=VOCAB, hidden_size=64, num_hidden_layers=3, num_attention_heads=4)
_VIS = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, image_size=28, patch_size=7,
            num_channels=1)

# name -> (config factory, model class, task)
TINY = {
    "tiny-llama": (lambda: T.LlamaConfig(**_LM, intermediate_size=96, num_key_value_heads=2,
                                         max_position_embeddings=512, tie_word_embeddings=True),
                   T.LlamaForCausalLM, "causal-lm"),
    "tiny-qwen2": (lambda: T.Qwen2Config(**_LM, intermediate_size=96, num_key_value_heads=2,
                                         max_position_embeddings=512),
                   T.Qwen2ForCausalLM, "causal-lm"),
    "tiny-mistral": (lambda: T.MistralConfig(**_LM, intermediate_size=96, num_key_value_heads=1,
                                             max_position_embeddings=512),
                     T.MistralForCausalLM, "causal-lm"),
    "tiny-gemma3": (lambda: T.Gemma3TextConfig(**_LM, intermediate_size=96, num_key_value_heads=1,
                                               head_dim=32, max_position_embeddings=512,
                                               sliding_window=16),
                    T.Gemma3ForCausalLM, "causal-lm"),
    "tiny-gpt2": (lambda: T.GPT2Config(vocab_size=VOCAB, n_embd=64, n_layer=3, n_head=4, n_positions=512,
                                       bos_token_id=1, eos_token_id=2),
                  T.GPT2LMHeadModel, "causal-lm"),
    "tiny-opt": (lambda: T.OPTConfig(**_LM, ffn_dim=96, max_position_embeddings=512,
                                     word_embed_proj_dim=64, bos_token_id=1, eos_token_id=2, pad_token_id=0),
                 T.OPTForCausalLM, "causal-lm"),
    "tiny-neox": (lambda: T.GPTNeoXConfig(**_LM, intermediate_size=96, max_position_embeddings=512,
                                          bos_token_id=1, eos_token_id=2),
                  T.GPTNeoXForCausalLM, "causal-lm"),
    "tiny-bert": (lambda: T.BertConfig(**_LM, intermediate_size=96, max_position_embeddings=512),
                  T.BertForMaskedLM, "masked-lm"),
    "tiny-roberta": (lambda: T.RobertaConfig(**_LM, intermediate_size=96, max_position_embeddings=514,
                                             pad_token_id=0, bos_token_id=1, eos_token_id=2),
                     T.RobertaForMaskedLM, "masked-lm"),
    "tiny-vit": (lambda: T.ViTConfig(**_VIS, intermediate_size=48, num_labels=10),
                 T.ViTForImageClassification, "image-classification"),
    "tiny-deit": (lambda: T.DeiTConfig(**_VIS, intermediate_size=48, num_labels=10),
                  T.DeiTForImageClassification, "image-classification"),
    "tiny-dinov2": (lambda: T.Dinov2Config(**_VIS, mlp_ratio=2),
                    T.Dinov2Model, "image-features"),
}


def build_tiny(name: str, seed: int = 0) -> torch.nn.Module:
    make_config, cls, _ = TINY[name]
    config = make_config()
    config._attn_implementation = "sdpa"
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        model = cls(config)
    return model.eval()


class ByteTokenizer:
    """UTF-8 bytes as token ids (offset by 4 specials). Enough for perplexity on tiny models."""

    pad_token_id, bos_token_id, eos_token_id, mask_token_id = 0, 1, 2, 3
    vocab_size = VOCAB
    name_or_path = "bytes"

    def encode(self, text: str) -> list[int]:
        return [b + 4 for b in text.encode("utf-8")]

    def __call__(self, text: str, return_tensors: str | None = None, **_):
        ids = self.encode(text)
        return {"input_ids": torch.tensor([ids]) if return_tensors == "pt" else ids}
