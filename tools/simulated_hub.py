"""A simulated Hugging Face hub for offline tests: tiny random-initialised models under the papers' hub ids.

    .venv/bin/python tools/simulated_hub.py --cache DIR [--ids facebook/opt-125m ...]

writes, for each hub id of :data:`MODELS`, a tiny model of the real checkpoint's family (same
``model_type`` and class, e.g. ``LlamaForCausalLM`` with grouped-query attention for Meta-Llama-3-8B)
into ``DIR`` laid out as the hub cache is (``models--{org}--{name}/blobs``, ``refs/main``,
``snapshots/{commit}/...``), so that with ``HF_HUB_OFFLINE=1 HF_HUB_CACHE=DIR`` the usual
``from_pretrained("facebook/opt-125m")`` finds it. **The weights are random**: nothing here is a
pretrained model, and every snapshot holds ``simulated.json`` (``{"simulated": true, ...}``) to say so.

Each model is seeded from its id (two writes give byte-identical files; the fake commit hash is derived
from the files, so it changes exactly when they do) and saved with safetensors. Text models get a small
byte-level BPE tokenizer (trained here on :data:`CORPUS`, a few KB) saved as a ``PreTrainedTokenizerFast``
with the special tokens of the family's real tokenizer, in the real positions (first or last) and with
its BOS rule: Llama-3, Mistral and OPT (``</s>``) prepend one, GPT-2, GPT-NeoX, Qwen2 and SmolLM2 do not,
RoBERTa wraps ``<s> ... </s>``. Vision models get a ``preprocessor_config.json`` like the real one.
The whole hub is a few MB and writes in seconds. Used by tests only (``docs/assets.md``).

No import of ``repro``: the script only needs torch, transformers, tokenizers and safetensors.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

MARKER = "simulated.json"
NOTE = "simulated hub: random weights"
VERSION = 1  # bump when the table or the layout changes on purpose (it enters the seeds' salt)


@dataclass(frozen=True)
class Spec:
    """One simulated checkpoint: the real checkpoint's class and ``model_type``, tiny config values, and
    how to build its tokenizer (text) or image processor (vision)."""
    cls: str                       # the real checkpoint's config.architectures[0]
    model_type: str
    config: dict                   # tiny config values (vocab_size and the special ids come from the tokenizer)
    real: str                      # the real geometry, in words
    tokenizer: str | None = None   # a key of TOKENIZERS
    vocab_multiple: int = 1        # pad the embedding matrix to a multiple of this, as the real one is
    processor: tuple[str, dict] | None = None  # (image processor class, its kwargs) for vision models
    task: str = "causal-lm"


_MHA = dict(hidden_size=64, num_attention_heads=4)
_RELU_OPT = dict(ffn_dim=256, activation_function="relu", enable_bias=True, layer_norm_elementwise_affine=True)
_LLAMA3_ROPE = {"rope_type": "default", "rope_theta": 500000.0}
_LLAMA31_ROPE = {"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0, "low_freq_factor": 1.0,
                 "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}
_PYTHIA = dict(**_MHA, intermediate_size=256, max_position_embeddings=2048, use_parallel_residual=True,
               rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.25},
               tie_word_embeddings=False)
_IMAGENET_MEAN, _IMAGENET_STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
_VIT = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64, image_size=224,
            patch_size=16, num_channels=3, qkv_bias=True, num_labels=1000)

# hub id -> Spec. Tiny sizes: hidden 48-64 (vision 32), 2-3 layers, vocabulary ~400.
MODELS: dict[str, Spec] = {
    # Paper 1 (MP-G)
    "facebook/opt-6.7b": Spec(
        "OPTForCausalLM", "opt", dict(**_MHA, **_RELU_OPT, num_hidden_layers=2, max_position_embeddings=2048,
                                      word_embed_proj_dim=64, do_layer_norm_before=True),
        "32 layers x 32 heads, hidden 4096, FFN 16384, vocabulary 50272", "opt", 16),
    "meta-llama/Meta-Llama-3-8B": Spec(
        "LlamaForCausalLM", "llama", dict(hidden_size=64, num_attention_heads=8, num_key_value_heads=2,
                                          intermediate_size=224, num_hidden_layers=2, max_position_embeddings=8192,
                                          rms_norm_eps=1e-5, rope_parameters=_LLAMA3_ROPE, tie_word_embeddings=False),
        "32 layers x 32 heads (8 KV heads, GQA 4:1), hidden 4096, FFN 14336, vocabulary 128256", "llama3"),
    "mistralai/Mistral-7B-v0.1": Spec(
        "MistralForCausalLM", "mistral", dict(hidden_size=64, num_attention_heads=8, num_key_value_heads=2,
                                              intermediate_size=224, num_hidden_layers=2,
                                              max_position_embeddings=32768, sliding_window=4096, rms_norm_eps=1e-5,
                                              rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
                                              tie_word_embeddings=False),
        "32 layers x 32 heads (8 KV heads, GQA 4:1), hidden 4096, FFN 14336, sliding window 4096, vocabulary 32000",
        "mistral"),
    # Paper 2 (OGAS)
    "meta-llama/Llama-3.1-8B-Instruct": Spec(
        "LlamaForCausalLM", "llama", dict(hidden_size=64, num_attention_heads=8, num_key_value_heads=2,
                                          intermediate_size=224, num_hidden_layers=2, max_position_embeddings=131072,
                                          rms_norm_eps=1e-5, rope_parameters=_LLAMA31_ROPE, tie_word_embeddings=False),
        "32 layers x 32 heads (8 KV heads, GQA 4:1), hidden 4096, FFN 14336, llama3 RoPE scaling, vocabulary 128256",
        "llama31-instruct"),
    # Paper 3 (bandit pruning): small language models
    "openai-community/gpt2": Spec(
        "GPT2LMHeadModel", "gpt2", dict(n_embd=64, n_head=4, n_layer=2, n_positions=1024, n_inner=None,
                                        activation_function="gelu_new"),
        "12 layers x 12 heads, hidden 768, vocabulary 50257, tied embeddings", "gpt2"),
    "facebook/opt-125m": Spec(
        "OPTForCausalLM", "opt", dict(**_MHA, **_RELU_OPT, num_hidden_layers=2, max_position_embeddings=2048,
                                      word_embed_proj_dim=64, do_layer_norm_before=True),
        "12 layers x 12 heads, hidden 768, FFN 3072, vocabulary 50272", "opt", 16),
    "facebook/opt-350m": Spec(  # the one OPT with post-LN and a 512-wide embedding projected in and out
        "OPTForCausalLM", "opt", dict(**_MHA, **_RELU_OPT, num_hidden_layers=3, max_position_embeddings=2048,
                                      word_embed_proj_dim=32, do_layer_norm_before=False),
        "24 layers x 16 heads, hidden 1024, FFN 4096, word_embed_proj_dim 512 (project_in/out), post-LN, "
        "vocabulary 50272", "opt", 16),
    "EleutherAI/pythia-160m": Spec(
        "GPTNeoXForCausalLM", "gpt_neox", dict(**_PYTHIA, num_hidden_layers=2),
        "12 layers x 12 heads, hidden 768, FFN 3072, rotary on 25% of each head, parallel residual, "
        "vocabulary 50304", "neox", 128),
    "EleutherAI/pythia-410m": Spec(
        "GPTNeoXForCausalLM", "gpt_neox", dict(**_PYTHIA, num_hidden_layers=3),
        "24 layers x 16 heads, hidden 1024, FFN 4096, rotary on 25% of each head, parallel residual, "
        "vocabulary 50304", "neox", 128),
    "Qwen/Qwen2.5-0.5B": Spec(
        "Qwen2ForCausalLM", "qwen2", dict(hidden_size=56, num_attention_heads=7, num_key_value_heads=1,
                                          intermediate_size=192, num_hidden_layers=2, max_position_embeddings=32768,
                                          rms_norm_eps=1e-6, rope_parameters={"rope_type": "default",
                                                                              "rope_theta": 1000000.0},
                                          tie_word_embeddings=True, use_sliding_window=False),
        "24 layers x 14 heads (2 KV heads, GQA 7:1), hidden 896, FFN 4864, q/k/v bias, tied embeddings, "
        "vocabulary 151936", "qwen2", 128),
    "HuggingFaceTB/SmolLM2-360M": Spec(
        "LlamaForCausalLM", "llama", dict(hidden_size=48, num_attention_heads=6, num_key_value_heads=2,
                                          intermediate_size=128, num_hidden_layers=2, max_position_embeddings=8192,
                                          rms_norm_eps=1e-5, rope_parameters={"rope_type": "default",
                                                                              "rope_theta": 100000.0},
                                          tie_word_embeddings=True),
        "32 layers x 15 heads (5 KV heads, GQA 3:1), hidden 960, FFN 2560, tied embeddings, vocabulary 49152",
        "smollm2"),
    # Paper 1's encoders (masked LM; RobertaForSequenceClassification loads from the same folder with a new head)
    "FacebookAI/roberta-base": Spec(
        "RobertaForMaskedLM", "roberta", dict(**_MHA, intermediate_size=256, num_hidden_layers=2,
                                              max_position_embeddings=514, type_vocab_size=1, layer_norm_eps=1e-5),
        "12 layers x 12 heads, hidden 768, FFN 3072, vocabulary 50265", "roberta", task="masked-lm"),
    "FacebookAI/roberta-large": Spec(
        "RobertaForMaskedLM", "roberta", dict(**_MHA, intermediate_size=256, num_hidden_layers=3,
                                              max_position_embeddings=514, type_vocab_size=1, layer_norm_eps=1e-5),
        "24 layers x 16 heads, hidden 1024, FFN 4096, vocabulary 50265", "roberta", task="masked-lm"),
    # Paper 3's ImageNet classifiers (1000 labels, 224 x 224 inputs, the real patch sizes)
    "google/vit-base-patch16-224": Spec(
        "ViTForImageClassification", "vit", dict(_VIT),
        "12 layers x 12 heads, hidden 768, patch 16, 224 x 224, 1000 labels",
        processor=("ViTImageProcessor", dict(do_resize=True, size={"height": 224, "width": 224}, resample=2,
                                             do_normalize=True, image_mean=[0.5] * 3, image_std=[0.5] * 3)),
        task="image-classification"),
    # the non-distilled DeiT checkpoints are published as plain ViTs: config.architectures is
    # ViTForImageClassification, model_type "vit" (DeiTForImageClassificationWithTeacher is the distilled ones')
    "facebook/deit-tiny-patch16-224": Spec(
        "ViTForImageClassification", "vit", dict(_VIT, num_attention_heads=2),
        "12 layers x 3 heads, hidden 192, patch 16, 224 x 224, 1000 labels",
        processor=("DeiTImageProcessor", dict(do_resize=True, size={"height": 256, "width": 256}, resample=3,
                                              do_center_crop=True, crop_size={"height": 224, "width": 224},
                                              do_normalize=True, image_mean=_IMAGENET_MEAN,
                                              image_std=_IMAGENET_STD)),
        task="image-classification"),
    "microsoft/swin-tiny-patch4-window7-224": Spec(
        "SwinForImageClassification", "swin", dict(image_size=224, patch_size=4, num_channels=3, embed_dim=16,
                                                   depths=[2, 2], num_heads=[2, 4], window_size=7, mlp_ratio=2.0,
                                                   num_labels=1000),
        "4 stages of 2, 2, 6, 2 blocks (3, 6, 12, 24 heads), embed 96, patch 4, window 7, 224 x 224, 1000 labels",
        processor=("ViTImageProcessor", dict(do_resize=True, size={"height": 224, "width": 224}, resample=3,
                                             do_normalize=True, image_mean=_IMAGENET_MEAN, image_std=_IMAGENET_STD)),
        task="image-classification"),
}

# ---------------------------------------------------------------------------------------------------------
# Tokenizers: one byte-level BPE (trained on CORPUS), laid out per family with its real special tokens.

BPE_VOCAB = 384  # 256 byte symbols + 128 merges

CORPUS = """\
Pruning removes parts of a trained network that matter least, then checks what the smaller network lost.
A transformer layer has two parts: an attention block, whose heads read from other positions, and a
feed-forward block of two or three linear maps. Heads can be removed whole; so can the hidden channels of
the feed-forward block. Unstructured pruning instead zeroes single weights, chosen by their magnitude or by
the product of magnitude and the norm of the input feature that multiplies them.

The first paper scores each head by a gradient-weighted magnitude and removes the lowest-scoring ones,
layer by layer or across the whole model. The second asks which weights an outlier-aware score keeps at
fifty per cent sparsity, and compares two-of-four patterns with free ones. The third treats the choice of
units to remove as a bandit: each arm is a unit, each pull a forward pass on a few calibration windows,
and the reward is how little the loss rises when that unit is gone.

Perplexity is the exponential of the mean negative log-likelihood per token. On WikiText-2 a model of
seven billion parameters reaches about five; a model of a hundred million, about thirty. A pruned model is
judged by how far its perplexity moves from the dense one at the same sparsity: 12.5%, 25%, 50%, 70%.

Zero-shot tasks ask the model to pick an answer without training: which ending of a story is likely, is
a sentence positive or negative, do two sentences mean the same thing. Accuracy is counted over the whole
validation set, and a confidence interval is drawn from a bootstrap over its examples.

Images are cut into square patches of sixteen pixels; each patch becomes a token, a learned vector marks
its position, and a class token collects what the image shows. Shifted windows attend within seven by
seven patches and merge neighbours between stages, so that later stages see larger regions.

The quick brown fox jumps over the lazy dog. Pack my box with five dozen liquor jugs! How vexingly quick
daft zebras jump; sphinx of black quartz, judge my vow. 0 1 2 3 4 5 6 7 8 9 10 100 1000 2048 4096.
"Yes," she said, "the results are in the table (see row 3)." It's 3:45 pm - time for tea? Perhaps.
Numbers, dates (2024-05-17), e-mail-like strings (name@example.org) and paths (/tmp/a_b.txt) also occur.
Café, naïve, Zürich, São Paulo, Kraków: accented letters are bytes like any other here.
"""


# family -> before / after: its special tokens, in order, before and after the BPE symbols (ids as the real ones
# are laid out); roles: bos_token, eos_token...; bos: whether an encoding starts with bos_token; max_length:
# model_max_length; chat_template (optional)
_LLAMA3_SPECIALS = ["<|begin_of_text|>", "<|end_of_text|>", "<|reserved_special_token_0|>",
                    "<|reserved_special_token_1|>", "<|reserved_special_token_2|>", "<|reserved_special_token_3|>",
                    "<|start_header_id|>", "<|end_header_id|>", "<|reserved_special_token_4|>", "<|eot_id|>"]
_LLAMA31_SPECIALS = ["<|begin_of_text|>", "<|end_of_text|>", "<|reserved_special_token_0|>",
                     "<|reserved_special_token_1|>", "<|finetune_right_pad_id|>", "<|reserved_special_token_2|>",
                     "<|start_header_id|>", "<|end_header_id|>", "<|eom_id|>", "<|eot_id|>", "<|python_tag|>"]
_LLAMA3_CHAT = (
    "{{- bos_token }}{%- for message in messages %}{{- '<|start_header_id|>' + message['role'] + "
    "'<|end_header_id|>\\n\\n' + message['content'] | trim + '<|eot_id|>' }}{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{%- endif %}")

TOKENIZERS: dict[str, dict] = {
    # GPT-2: <|endoftext|> (last id) is bos, eos and unk; nothing is added to an encoding
    "gpt2": dict(before=[], after=["<|endoftext|>"], roles=dict(bos_token="<|endoftext|>",
                 eos_token="<|endoftext|>", unk_token="<|endoftext|>"), bos=False, max_length=1024),
    # OPT: RoBERTa's dictionary order (<s> <pad> </s> <unk> first); every encoding starts with </s> (id 2)
    "opt": dict(before=["<s>", "<pad>", "</s>", "<unk>"], after=[], roles=dict(bos_token="</s>", eos_token="</s>",
                unk_token="</s>", pad_token="<pad>"), bos=True, max_length=2048),
    # Pythia (GPT-NeoX): <|endoftext|> = 0, <|padding|> = 1; nothing added
    "neox": dict(before=["<|endoftext|>", "<|padding|>"], after=[], roles=dict(bos_token="<|endoftext|>",
                 eos_token="<|endoftext|>", unk_token="<|endoftext|>"), bos=False, max_length=2048),
    # Llama 3: the specials follow the BPE vocabulary; <|begin_of_text|> starts every encoding
    "llama3": dict(before=[], after=_LLAMA3_SPECIALS, roles=dict(bos_token="<|begin_of_text|>",
                   eos_token="<|end_of_text|>"), bos=True, max_length=8192),
    "llama31-instruct": dict(before=[], after=_LLAMA31_SPECIALS, roles=dict(bos_token="<|begin_of_text|>",
                             eos_token="<|eot_id|>"), bos=True, max_length=131072, chat_template=_LLAMA3_CHAT),
    # Mistral: <unk> <s> </s> first; <s> starts every encoding
    "mistral": dict(before=["<unk>", "<s>", "</s>"], after=[], roles=dict(bos_token="<s>", eos_token="</s>",
                    unk_token="<unk>"), bos=True, max_length=32768),
    # Qwen2.5: no BOS token at all; <|endoftext|> is eos and pad; the specials follow the BPE vocabulary
    "qwen2": dict(before=[], after=["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
                  roles=dict(eos_token="<|endoftext|>", pad_token="<|endoftext|>"), bos=False, max_length=131072),
    # SmolLM2: <|endoftext|> = 0 is bos, eos and unk, <|im_start|> <|im_end|> next; nothing added
    "smollm2": dict(before=["<|endoftext|>", "<|im_start|>", "<|im_end|>"], after=[],
                    roles=dict(bos_token="<|endoftext|>", eos_token="<|endoftext|>", unk_token="<|endoftext|>"),
                    bos=False, max_length=8192),
    # RoBERTa: <s> <pad> </s> <unk> first, <mask> last; encodings are <s> A </s> (pairs <s> A </s></s> B </s>)
    "roberta": dict(before=["<s>", "<pad>", "</s>", "<unk>"], after=["<mask>"],
                    roles=dict(bos_token="<s>", eos_token="</s>", unk_token="<unk>", sep_token="</s>",
                               cls_token="<s>", pad_token="<pad>", mask_token="<mask>"), bos=False, max_length=512),
}


def train_bpe() -> tuple[dict[str, int], list[tuple[str, str]]]:
    """(vocab, merges) of a byte-level BPE of :data:`BPE_VOCAB` symbols trained on :data:`CORPUS`."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    trainer = trainers.BpeTrainer(vocab_size=BPE_VOCAB, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  min_frequency=2, show_progress=False)
    tok.train_from_iterator(CORPUS.splitlines(), trainer)
    model = json.loads(tok.to_str())["model"]
    return model["vocab"], [tuple(m.split(" ")) if isinstance(m, str) else tuple(m) for m in model["merges"]]


def build_tokenizer(style: str, bpe: tuple[dict[str, int], list[tuple[str, str]]]):
    """A ``PreTrainedTokenizerFast`` for family ``style`` (:data:`TOKENIZERS`)."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    spec = TOKENIZERS[style]
    vocab, merges = bpe
    before, after = spec["before"], spec["after"]
    ids = {t: i for i, t in enumerate(before)}
    ids |= {t: i + len(before) for t, i in vocab.items()}
    ids |= {t: i + len(before) + len(vocab) for i, t in enumerate(after)}
    assert len(ids) == len(before) + len(vocab) + len(after)
    backend = Tokenizer(models.BPE(vocab=ids, merges=list(merges)))
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.decoder = decoders.ByteLevel()
    roles = spec["roles"]
    if style == "roberta":
        backend.post_processor = processors.RobertaProcessing(("</s>", ids["</s>"]), ("<s>", ids["<s>"]),
                                                              trim_offsets=True, add_prefix_space=False)
    elif spec["bos"]:
        bos = roles["bos_token"]
        backend.post_processor = processors.TemplateProcessing(single=f"{bos}:0 $A:0",
                                                               pair=f"{bos}:0 $A:0 {bos}:1 $B:1",
                                                               special_tokens=[(bos, ids[bos])])
    else:
        backend.post_processor = processors.ByteLevel(trim_offsets=False)
    backend.add_special_tokens([AddedToken(t, special=True, normalized=False, lstrip=(t == "<mask>"))
                                for t in before + after])
    kwargs = dict(roles)
    if style == "roberta":
        kwargs["mask_token"] = AddedToken("<mask>", lstrip=True, rstrip=False, special=True, normalized=False)
    if spec["bos"]:
        kwargs["add_bos_token"] = True  # the post-processor above adds it; transformers rebuilds the same one
    tok = PreTrainedTokenizerFast(tokenizer_object=backend, model_max_length=spec["max_length"],
                                  clean_up_tokenization_spaces=False, **kwargs)
    if spec.get("chat_template"):
        tok.chat_template = spec["chat_template"]
    return tok


# ---------------------------------------------------------------------------------------------------------
# Models


def seed_of(hub_id: str) -> int:
    return int.from_bytes(hashlib.sha256(f"simulated-hub/{VERSION}/{hub_id}".encode()).digest()[:4], "big")


def _round_up(n: int, multiple: int) -> int:
    return -(-n // multiple) * multiple


def build(hub_id: str, bpe=None):
    """(model, tokenizer or None, image processor or None) of ``hub_id``, random-initialised from its seed."""
    import torch
    import transformers

    spec = MODELS[hub_id]
    values = dict(spec.config)
    tok = processor = None
    if spec.tokenizer:
        tok = build_tokenizer(spec.tokenizer, bpe or train_bpe())
        values["vocab_size"] = _round_up(len(tok), spec.vocab_multiple)
        for role in ("bos", "eos", "pad"):
            if getattr(tok, f"{role}_token") is not None:
                values[f"{role}_token_id"] = getattr(tok, f"{role}_token_id")
        if spec.tokenizer == "llama31-instruct":  # the real generation stops at any of these three
            values["eos_token_id"] = [tok.convert_tokens_to_ids(t)
                                      for t in ("<|end_of_text|>", "<|eom_id|>", "<|eot_id|>")]
        if spec.model_type in ("llama", "mistral"):
            values.pop("pad_token_id", None)  # the real Llama/Mistral configs name none
    if spec.processor:
        name, kwargs = spec.processor
        processor = getattr(transformers, name)(**kwargs)
    config = transformers.AutoConfig.for_model(spec.model_type, **values)
    config.architectures = [spec.cls]
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed_of(hub_id))
        model = getattr(transformers, spec.cls)(config)
    assert model.config.model_type == spec.model_type, (hub_id, model.config.model_type)
    return model.eval(), tok, processor


# ---------------------------------------------------------------------------------------------------------
# The hub cache layout


def repo_folder(cache_dir: str | os.PathLike, hub_id: str) -> Path:
    """``<cache>/models--{org}--{name}``, as huggingface_hub names a model repository's cache folder."""
    return Path(cache_dir) / ("models--" + hub_id.replace("/", "--"))


def _git_blob_sha1(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def _etag(path: Path) -> str:
    """The blob name the hub cache uses: the sha256 of an LFS file (the weights), the git blob sha1 of others."""
    data = path.read_bytes()
    return hashlib.sha256(data).hexdigest() if path.suffix == ".safetensors" else _git_blob_sha1(data)


def is_simulated(folder: Path) -> bool:
    """Whether repository cache folder ``folder`` was written here (every snapshot holds the marker)."""
    snaps = [p for p in (folder / "snapshots").glob("*") if p.is_dir()]
    return bool(snaps) and all((s / MARKER).exists() for s in snaps)


def _save(hub_id: str, out: Path, bpe) -> None:
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # "Writing model shards" for each tiny file
    model, tok, processor = build(hub_id, bpe)
    model.save_pretrained(out, safe_serialization=True)
    if tok is not None:
        tok.save_pretrained(out)
    if processor is not None:
        processor.save_pretrained(out)
    spec = MODELS[hub_id]
    marker = {"simulated": True, "note": NOTE, "id": hub_id, "class": spec.cls, "model_type": spec.model_type,
              "task": spec.task, "seed": seed_of(hub_id), "parameters": sum(p.numel() for p in model.parameters()),
              "real": spec.real, "writer": "tools/simulated_hub.py", "version": VERSION}
    (out / MARKER).write_text(json.dumps(marker, indent=1, sort_keys=True) + "\n")


def write_one(cache_dir: str | os.PathLike, hub_id: str, bpe=None) -> Path:
    """Write ``hub_id`` into the hub cache ``cache_dir``; returns its snapshot folder. A folder there that this
    script did not write (a real download) is never replaced."""
    cache_dir = Path(cache_dir)
    cache_dir.mkdir(parents=True, exist_ok=True)
    final = repo_folder(cache_dir, hub_id)
    if final.exists() and not is_simulated(final):
        raise FileExistsError(f"{final} holds a model this script did not write (no {MARKER}): not replacing it")
    tmp = Path(tempfile.mkdtemp(dir=cache_dir, prefix=f".{final.name}.tmp"))
    try:
        files = tmp / "files"
        _save(hub_id, files, bpe)
        names = sorted(p.name for p in files.iterdir())
        etags = {name: _etag(files / name) for name in names}
        commit = hashlib.sha1(json.dumps([hub_id, sorted(etags.items())]).encode()).hexdigest()
        repo = tmp / "repo"
        (repo / "blobs").mkdir(parents=True)
        (repo / "refs").mkdir()
        (repo / "refs" / "main").write_text(commit)  # no newline, as huggingface_hub writes it
        snap = repo / "snapshots" / commit
        snap.mkdir(parents=True)
        for name in names:
            blob = repo / "blobs" / etags[name]
            os.replace(files / name, blob)
            blob.chmod(0o644)  # save_pretrained writes the weights 0600 (a temporary file renamed)
            try:
                os.symlink(os.path.join("..", "..", "blobs", etags[name]), snap / name)
            except OSError:  # no symlinks here: huggingface_hub copies then, and so does this
                shutil.copy2(blob, snap / name)
        if final.exists():
            shutil.rmtree(final)
        os.replace(repo, final)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return final / "snapshots" / commit


def write(cache_dir: Path, ids: list[str] | None = None) -> dict[str, Path]:
    """Write the simulated models ``ids`` (default: all of :data:`MODELS`) into the hub cache ``cache_dir``;
    returns hub id -> snapshot folder."""
    unknown = [i for i in ids or [] if i not in MODELS]
    if unknown:
        raise KeyError(f"not simulated: {', '.join(unknown)}; known: {', '.join(MODELS)}")
    bpe = train_bpe()
    return {hub_id: write_one(cache_dir, hub_id, bpe) for hub_id in (ids or list(MODELS))}


def folder_size(path: Path) -> int:
    return sum(p.stat().st_size for p in Path(path).rglob("*") if p.is_file() and not p.is_symlink())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cache", required=True, type=Path,
                        help="the hub cache folder to write into (what HF_HUB_CACHE then names)")
    parser.add_argument("--ids", nargs="+", metavar="ID", help=f"hub ids to write (default: all {len(MODELS)})")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    try:
        written = write(args.cache, args.ids)
    except (KeyError, FileExistsError) as e:
        print(f"simulated_hub: {e.args[0]}", file=sys.stderr)
        return 2
    for hub_id, snap in written.items():
        size = folder_size(repo_folder(args.cache, hub_id))
        print(f"{hub_id:40s} {MODELS[hub_id].cls:28s} {size / 1e6:6.2f} MB  {snap}")
    total = sum(folder_size(repo_folder(args.cache, i)) for i in written)
    print(f"{len(written)} simulated models (random weights) in {args.cache}: {total / 1e6:.1f} MB, "
          f"{time.perf_counter() - start:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
