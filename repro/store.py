"""Result store: one JSON record per experiment cell, keyed by a hash of its configuration.

A cell is anything that can be described by a JSON-serialisable config (model, method,
parameters, data, seed). Records are written atomically (temporary file + ``os.replace``), so
an interrupted run leaves either the whole record or nothing, and a rerun skips finished cells.

:data:`PROTOCOL` is part of every experiment config (see ``repro.engines.base``): raise it
whenever code changes what a cell would compute, so old records get new keys and tables, which
read only the current protocol, never mix the two.
"""
from __future__ import annotations

import fcntl
import hashlib
import json
import os
import platform
import re
import tempfile
import time
import warnings
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator

from repro.errors import RecordWriteError

SCHEMA = 1
PROTOCOL = 3  # 2: batch size, weights hash and protocol in every key; 3: every default written (repro.migrate)


TIMING_FOLDERS = frozenset({"heads-efficiency", "bandit-removal"})  # cells that time the machine they run on
QUARANTINE = ".quarantine"  # under the results folder: records that could not be read, moved aside


def config_key(config: dict) -> str:
    """Stable 16-hex-digit key of a JSON-serialisable config (key order does not matter)."""
    blob = json.dumps(config, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def _versions() -> dict:
    import torch
    import transformers

    return {"python": platform.python_version(), "torch": torch.__version__,
            "transformers": transformers.__version__}


def _machine() -> dict:
    """Where a record was computed (data beside its result, never part of its key)."""
    from repro.assets.machine import describe

    return {k: v for k, v in describe().items() if k not in ("dtype", "torch")}


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def atomic_write_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` whole or not at all (a temporary file, then ``os.replace``), with the
    permissions of a plainly created file (``0666`` less the umask: 0644 by default; ``mkstemp``'s own
    are 0600, which other users of a shared results folder could not read)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
            f.flush()
            os.fchmod(f.fileno(), 0o666 & ~_umask())
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class Store:
    """Records under ``root/<experiment>/<key>.json`` (``root=None``: kept in memory only, for
    headless one-off runs).

    ``recompute=True`` computes every cell again (overwriting its record) instead of reading it.
    ``status[(experiment, key)]`` says, for each cell asked for in this session, whether it was
    ``"cached"`` (read from a record) or ``"computed"``; :meth:`cache_summary` counts them for
    table captions.

    :meth:`lookup` is :meth:`run`'s read half (what a survey, :mod:`repro.engines.plan`, asks). Several
    processes may share one ``root``: a cell
    is computed under an exclusive lock on ``.locks/<experiment>/<key>.lock`` (released by the
    kernel if its process dies), and a process that gets the lock after another wrote the record reads it.

    ``dry``: while set (a :class:`repro.engines.dry.DryRun`), experiments load no model and no data they cannot
    read here: a model without a card gets a stand-in card, never saved (``repro run --dry-run``)."""

    def __init__(self, root: str | os.PathLike | None, recompute: bool = False, retime: bool = False,
                 read_also: str | os.PathLike | None = None):
        self.root = Path(root) if root is not None else None
        # a second results folder read (never written) where ``root`` lacks a record: e.g. a float32 set under
        # .cache/ reads the committed records that no dtype enters (scores, fine-tunes, model cards)
        self.read_also = Path(read_also) if read_also not in (None, "") else None
        self.recompute = recompute
        self.retime = retime  # time the timing cells (TIMING_FOLDERS) again on this machine, once each
        self.status: dict[tuple[str, str], str] = {}
        self.dry = None
        self._memory: dict[tuple[str, str], dict] = {}
        # parsed record files by (path, mtime, size): a notebook's sections read the same folders again and again
        # (notebook 3's bandit-select: 18 MB of JSON per pass); a rewritten file has another mtime and is read anew.
        # Like the in-memory records, what it hands out is shared: readers never modify a record.
        self._parsed: dict[tuple[Path, int, int], dict] = {}

    # -- model cards: what the last load of a model said about it (repro.engines.base.Experiment) --
    def _card_path(self, name: str) -> Path:
        safe = re.sub(r"[^\w.-]", "_", name)
        return self.root / "models" / f"{safe if len(safe) < 120 and safe == name else config_key({'name': name})}.json"

    def model_card(self, name: str) -> dict | None:
        """The card of model ``name`` (its identity, window rule, layer and head counts), or None."""
        if self.root is None:
            return self._memory.get(("models", name))
        p = self._card_path(name)
        if not p.exists() and self.read_also is not None:
            p = self.read_also / p.relative_to(self.root)
        if not p.exists():
            return None
        try:
            return json.loads(p.read_text())
        except (json.JSONDecodeError, UnicodeDecodeError):
            self.quarantine(p, "the model card is not valid JSON")
            return None

    def save_model_card(self, name: str, card: dict) -> None:
        card = json.loads(json.dumps(card, default=str))
        if self.model_card(name) == card:
            return
        if self.root is None:
            self._memory[("models", name)] = card
        else:
            atomic_write_text(self._card_path(name), json.dumps(card, indent=1, sort_keys=True) + "\n")

    def path(self, experiment: str, config: dict) -> Path:
        return self.root / experiment / f"{config_key(config)}.json"

    def get(self, experiment: str, config: dict) -> dict | None:
        """The record of ``config``, or None (no record; or one that cannot be read or is not this
        config's, which is moved aside by :meth:`quarantine` so the cell is computed again)."""
        if self.root is None:
            return self._memory.get((experiment, config_key(config)))
        p = self.path(experiment, config)
        if not p.exists():
            return self._read_also(experiment, config)
        record = self._read(p)
        if record is not None and record.get("config") != json.loads(json.dumps(config, default=str)):
            self.quarantine(p, "it holds another configuration")
            return None
        return record

    def _read_also(self, experiment: str, config: dict) -> dict | None:
        """The record of ``config`` in :attr:`read_also` (read only: one that is not whole is passed over)."""
        if self.read_also is None:
            return None
        p = self.read_also / experiment / f"{config_key(config)}.json"
        try:
            record = json.loads(p.read_text())
        except (OSError, ValueError):
            return None
        ok = isinstance(record, dict) and record.get("config") == json.loads(json.dumps(config, default=str))
        return record if ok else None

    def _read(self, p: Path) -> dict | None:
        """A record file's content, or None after moving aside one that is not a whole record."""
        try:
            st = p.stat()
        except OSError:
            return None
        seen = self._parsed.get((p, st.st_mtime_ns, st.st_size))
        if seen is not None:
            return seen
        try:
            record = json.loads(p.read_text())
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            self.quarantine(p, f"it is not valid JSON ({e.__class__.__name__})")
            return None
        if not isinstance(record, dict) or not {"config", "result", "key"} <= set(record):
            self.quarantine(p, "it is not a record (no config, result and key)")
            return None
        if record["key"] != p.stem:  # edited by hand, or copied under another name: its tables could not find it
            self.quarantine(p, f"its key {record['key']!r} is not its file name's")
            return None
        self._parsed[(p, st.st_mtime_ns, st.st_size)] = record
        return record

    def quarantine(self, p: Path, why: str) -> Path:
        """Move an unreadable record aside to ``<root>/.quarantine/<experiment>/`` with one warning line
        naming it; its cell is then computed again (nothing is deleted). A dry run moves nothing."""
        if self.dry is not None:
            warnings.warn(f"record {p} is not read: {why}; its cell counts as to compute", stacklevel=3)
            return p
        target = self.root / QUARANTINE / p.parent.name / p.name
        target.parent.mkdir(parents=True, exist_ok=True)
        n = 1
        while target.exists():
            target, n = target.with_name(f"{p.stem}.{n}{p.suffix}"), n + 1
        os.replace(p, target)
        warnings.warn(f"record {p} moved to {target}: {why}; its cell is computed again", stacklevel=3)
        return target

    def put(self, experiment: str, config: dict, result: dict, seconds: float | None = None,
            bf16_products: bool = False) -> dict:
        """Write ``result`` as the record of ``config``; ``bf16_products``: its bfloat16 matrix products were
        computed through float32 (:mod:`repro.assets.precision`), which its machine field then says."""
        machine = _machine()
        if bf16_products:
            from repro.assets.precision import METHOD

            machine["bf16_products"] = METHOD
        record = {"schema": SCHEMA, "experiment": experiment, "key": config_key(config),
                  "config": config, "result": result, "seconds": seconds,
                  "finished": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "versions": _versions(), "machine": machine}
        text = json.dumps(record, indent=1, sort_keys=True, default=str)
        record = json.loads(text)
        if self.root is None:
            self._memory[(experiment, record["key"])] = record
        else:
            try:
                atomic_write_text(self.path(experiment, config), text + "\n")
            except OSError as e:
                raise RecordWriteError(f"cannot write record {self.path(experiment, config)}: "
                                       f"{e.strerror or e}") from None
        return record

    def _fresh(self, key: tuple[str, str]) -> bool:
        """The cell is computed again whatever exists (``recompute``, or ``retime`` of a timing cell), once."""
        return (self.recompute or (self.retime and key[0] in TIMING_FOLDERS)) and self.status.get(key) != "computed"

    def lookup(self, experiment: str, config: dict) -> dict | None:
        """The record :meth:`run` would read, or None where it would compute (nothing is computed here)."""
        key = (experiment, config_key(config))
        record = None if self._fresh(key) else self.get(experiment, config)
        if record is not None:
            self.status.setdefault(key, "cached")
        return record

    def run(self, experiment: str, config: dict, compute: Callable[[], dict]) -> dict:
        """The record of ``config``: read if finished (unless ``recompute``), else computed,
        stored and returned."""
        key = (experiment, config_key(config))
        record = self.lookup(experiment, config)
        if record is None:
            fresh = self._fresh(key)
            with self._claim(experiment, config):
                record = None if fresh else self.get(experiment, config)  # another process may have written it
                if record is None:
                    from repro.assets.precision import bf16_products

                    t0 = time.perf_counter()
                    with bf16_products(enable=experiment not in TIMING_FOLDERS) as products:  # timings: own kernels
                        result = compute()
                    record = self.put(experiment, config, result, time.perf_counter() - t0,
                                      bf16_products=bool(products is not None and products.calls))
                    self.status[key] = "computed"
            self.status.setdefault(key, "cached")
        return record

    @contextmanager
    def _claim(self, experiment: str, config: dict):
        """Hold the cell's lock file while it is computed (nothing for an in-memory store)."""
        if self.root is None:
            yield
            return
        lock = self._lock_path(experiment, config_key(config))
        lock.parent.mkdir(parents=True, exist_ok=True)
        with open(lock, "a") as f:
            fcntl.flock(f, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(f, fcntl.LOCK_UN)

    def _lock_path(self, experiment: str, key: str) -> Path:
        return self.root / ".locks" / experiment / f"{key}.lock"

    def sweep_partial_writes(self) -> list[Path]:
        """Delete what a writer killed by a signal left: the temporary file of a record it was
        writing (a process ended by SIGTERM or SIGKILL runs no cleanup, and a broken worker pool
        terminates every worker). A temporary file is deleted only while this process holds its
        cell's lock, so the write of a live process, which holds that lock, is never touched.
        Returns the paths deleted."""
        if self.root is None:
            return []
        swept = []
        for tmp in sorted(self.root.glob("*/.*.json.*.tmp")):
            key = tmp.name[1:].split(".json.", 1)[0]
            lock = self._lock_path(tmp.parent.name, key)
            if not lock.exists():  # not written under a cell's lock: not ours to judge
                continue
            with open(lock, "a") as f:
                try:
                    fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:  # a live process holds the cell: its write is in progress
                    continue
                try:
                    tmp.unlink(missing_ok=True)
                    swept.append(tmp)
                finally:
                    fcntl.flock(f, fcntl.LOCK_UN)
        return swept

    def cache_summary(self, keys) -> str:
        """'k of n cells read from cached records' for the (experiment, key) pairs ``keys``."""
        keys = list(keys)
        cached = sum(self.status.get(k, "cached") == "cached" for k in keys)
        return f"{cached} of {len(keys)} cells read from cached records" + (" (recompute on)" if self.recompute else "")

    def current(self, experiment: str, session: bool = True) -> Iterator[dict]:
        """Records of the current :data:`PROTOCOL`; ``session``: only those asked for in this
        session (:attr:`status`), so records of an earlier run with other settings never slip
        into a table."""
        for r in self.records(experiment):
            if r["config"].get("protocol") == PROTOCOL and (not session or (experiment, r["key"]) in self.status):
                yield r

    def records(self, experiment: str) -> Iterator[dict]:
        if self.root is None:
            yield from (r for (e, _), r in sorted(self._memory.items()) if e == experiment)
            return
        own = sorted((self.root / experiment).glob("*.json"))
        for p in own:
            record = self._read(p)
            if record is not None:
                yield record
        if self.read_also is not None:
            names = {p.name for p in own}
            for p in sorted((self.read_also / experiment).glob("*.json")):
                if p.name not in names:
                    try:
                        record = json.loads(p.read_text())
                    except (OSError, ValueError):
                        continue
                    if isinstance(record, dict) and {"config", "result", "key"} <= set(record):
                        yield record
