"""Tiny random-initialised models of every supported family, built from configs (no downloads).

They exercise the same code paths as the real models in tests and in the ``smoke`` profile.
Each is seeded, so two builds give identical weights. A new model family adds its tiny model here
(one :data:`TINY` entry; see :mod:`repro.arch` for the rest).
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
    # 7 x 7 patches, windows of 4 (padded to 8 x 8, shifted in odd blocks), then 4 x 4 after the merging
    # (one window: no shift, as in swin-tiny's last stage); blocks of 2, 2, 4, 4 heads of dim 8
    "tiny-swin": (lambda: T.SwinConfig(image_size=_VIS["image_size"], num_channels=_VIS["num_channels"], patch_size=4,
                                       embed_dim=16, depths=[2, 2], num_heads=[2, 4], window_size=4, mlp_ratio=2.0,
                                       num_labels=10),
                  T.SwinForImageClassification, "image-classification"),
}
# tiny models whose byte tokenizer starts every encoding with <s>, as their family's real one does
# (Gemma's): exactly those whose adapter is ``bos_first`` (tests/test_new_family.py checks it). The
# <bos> rule itself is the adapter's; this only keeps load_model (layer 0) from needing repro.arch.
BOS_TOKENIZER = {"tiny-gemma3"}


def build_tiny(name: str, seed: int = 0) -> torch.nn.Module:
    make_config, cls, _ = TINY[name]
    config = make_config()
    config._attn_implementation = "sdpa"
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        model = cls(config)
    return model.eval()


SPECIALS = ["<pad>", "<s>", "</s>", "<mask>"]  # ids 0-3; byte b is id b + 4


def byte_tokenizer(add_bos: bool = False):
    """UTF-8 bytes as token ids (byte ``b`` -> ``b + 4``, after 4 specials), as a Hugging Face fast
    tokenizer, so tiny models also run through code that needs one (lm-eval's HFLM). Built in
    code: no file, no download. No BOS is added, like SmolLM2's tokenizer; ``add_bos``: ``<s>``
    (id 1) starts every encoding, like Gemma's."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    alphabet = pre_tokenizers.ByteLevel.alphabet()  # the 256 printable stand-ins for bytes
    byte_char = _bytes_to_unicode()
    vocab = {tok: i for i, tok in enumerate(SPECIALS)} | {byte_char[b]: b + 4 for b in range(256)}
    assert set(byte_char.values()) == set(alphabet)
    bpe = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    bpe.decoder = decoders.ByteLevel()
    if add_bos:
        bpe.post_processor = processors.TemplateProcessing(single="<s> $A", pair="<s> $A $B", special_tokens=[("<s>", 1)])
    tok = PreTrainedTokenizerFast(tokenizer_object=bpe, pad_token="<pad>", bos_token="<s>", eos_token="</s>",
                                  mask_token="<mask>", model_max_length=512)
    tok.name_or_path = "bytes"
    return tok


def _bytes_to_unicode() -> dict[int, str]:
    """GPT-2's reversible byte -> printable character map (what tokenizers' ByteLevel uses)."""
    keep = [*range(ord("!"), ord("~") + 1), *range(ord("\xa1"), ord("\xac") + 1), *range(ord("\xae"), ord("\xff") + 1)]
    chars, n = {}, 0
    for b in range(256):
        if b in keep:
            chars[b] = chr(b)
        else:
            chars[b] = chr(256 + n)
            n += 1
    return chars
