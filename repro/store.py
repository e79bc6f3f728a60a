"""Result store: one JSON record per experiment cell, keyed by a hash of its configuration.

A cell is anything that can be described by a JSON-serialisable config (model, method,
parameters, data, seed). Records are written atomically (temporary file + ``os.replace``), so
an interrupted run leaves either the whole record or nothing, and a rerun skips finished cells.
"""
from __future__ import annotations

import hashlib
import json
import os
import platform
import tempfile
import time
from pathlib import Path
from typing import Callable, Iterator

SCHEMA = 1


def config_key(config: dict) -> str:
    """Stable 16-hex-digit key of a JSON-serialisable config (key order does not matter)."""
    blob = json.dumps(config, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def _versions() -> dict:
    import torch
    import transformers

    return {"python": platform.python_version(), "torch": torch.__version__,
            "transformers": transformers.__version__}


def atomic_write_text(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class Store:
    """Records under ``root/<experiment>/<key>.json``."""

    def __init__(self, root: str | os.PathLike):
        self.root = Path(root)

    def path(self, experiment: str, config: dict) -> Path:
        return self.root / experiment / f"{config_key(config)}.json"

    def get(self, experiment: str, config: dict) -> dict | None:
        p = self.path(experiment, config)
        if not p.exists():
            return None
        record = json.loads(p.read_text())
        if record.get("config") != json.loads(json.dumps(config, default=str)):
            raise RuntimeError(f"record {p} does not match its config (hash collision?)")
        return record

    def put(self, experiment: str, config: dict, result: dict, seconds: float | None = None) -> dict:
        record = {"schema": SCHEMA, "experiment": experiment, "key": config_key(config),
                  "config": config, "result": result, "seconds": seconds,
                  "finished": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "versions": _versions()}
        text = json.dumps(record, indent=1, sort_keys=True, default=str)
        record = json.loads(text)
        atomic_write_text(self.path(experiment, config), text + "\n")
        return record

    def run(self, experiment: str, config: dict, compute: Callable[[], dict]) -> dict:
        """The record of ``config``: read if finished, else computed, stored and returned."""
        record = self.get(experiment, config)
        if record is None:
            t0 = time.perf_counter()
            result = compute()
            record = self.put(experiment, config, result, time.perf_counter() - t0)
        return record

    def records(self, experiment: str) -> Iterator[dict]:
        for p in sorted((self.root / experiment).glob("*.json")):
            yield json.loads(p.read_text())
