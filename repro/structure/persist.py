"""Save and load physically pruned models (per-layer head and channel counts differ from the
config, so a plain ``from_pretrained`` cannot rebuild them)."""
from __future__ import annotations

import json
from pathlib import Path

import torch
import transformers
from safetensors.torch import load_model, save_model

from repro.arch import adapter as get_adapter
from repro.structure.channels import keep_channels
from repro.structure.heads import apply_layer


def shape_of(model: torch.nn.Module) -> dict:
    ad = get_adapter(model)
    layers = []
    for i in range(ad.n_layers):
        a = ad.attention(i)
        layers.append({"n_heads": a.n_heads, "n_kv_heads": a.n_kv_heads, "n_channels": ad.mlp(i).n_channels})
    return {"class": type(model).__name__, "layers": layers}


def save_pruned(model: torch.nn.Module, folder: str | Path, identity: dict | None = None) -> Path:
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    model.config.save_pretrained(folder)
    save_model(model, str(folder / "model.safetensors"))
    (folder / "structure.json").write_text(json.dumps({**shape_of(model), "identity": identity}, indent=1))
    return folder


def load_pruned(folder: str | Path, dtype: torch.dtype = torch.float32) -> torch.nn.Module:
    folder = Path(folder)
    spec = json.loads((folder / "structure.json").read_text())
    config = transformers.AutoConfig.from_pretrained(folder)
    config._attn_implementation = "sdpa"
    model = getattr(transformers, spec["class"])(config)
    ad = get_adapter(model)
    for i, layer in enumerate(spec["layers"]):
        apply_layer(ad, i, list(range(layer["n_heads"])), list(range(layer["n_kv_heads"])))
        keep_channels(ad, i, list(range(layer["n_channels"])))
    load_model(model, str(folder / "model.safetensors"))
    return model.to(dtype).eval()
