"""Record migration: rewrite the keys of a results folder made under an older :data:`repro.store.PROTOCOL`,
never recomputing a number.

A protocol bump changes what a cell's *key* holds, not what its result is: each step below is a pure
function of an old config that gives the config the current code builds for the same cell, and the
record is moved to that config's key with its result, times and versions untouched. References between
records (a bandit cell names its selection's key; its result holds the selection's config) are rewritten
through the same map, so a migrated folder is exactly what the current code would have written.

Protocol 2 -> 3 (every default written into keys, no implicit spellings):

* text windows always say their rule: ``"windows": "plain"`` where protocol 2 left it out for families
  without ``<bos>`` (top-level configs of the text record folders and every text calibration source);
* a bandit selection's ``memory`` is always written: protocol 2 left out ``"carry"``;
* Wanda, RIA and SparseGPT always write ``stats``: protocol 2 left out the default ``"exact"``.

Amendments within protocol 3 (a parameter added to a method later, written with the value the older
records were made under, so their numbers keep their meaning):

* Thompson's ``join`` rule: ``"posterior"`` (the only rule before it became a parameter).
* A timing cell's machine is data, not key (:data:`TIMING_FOLDERS`): its ``threads`` leave the config for
  ``result["machine"]`` (with the dtype timed and what is known of the CPU: a bfloat16 timing that ``"auto"``
  resolved ran on a CPU with AVX512-BF16 or AMX), so a machine with another core count reads the record.

``python -m repro migrate RESULTS`` applies it in place (idempotent; a record already current is left
alone); :func:`migrate_records` is the pure core the tests check.
"""
from __future__ import annotations

import copy
import json
from pathlib import Path

from repro.errors import ReproError, check_folder
from repro.store import PROTOCOL, SCHEMA, TIMING_FOLDERS, atomic_write_text, config_key

# record folders whose configs are evaluations or timings on token windows (protocol 2: feeding() at top level)
TEXT_FOLDERS = frozenset({"heads-ppl", "heads-efficiency", "prune-ppl", "bandit-ppl", "bandit-removal"})
MEMORY_SELECTORS = frozenset({"ucb", "thompson"})  # the selectors that take ``memory``
STATS_PRUNERS = frozenset({"wanda", "ria", "sparsegpt"})  # the pruners that take ``stats``


def _windows(d: dict) -> None:
    d.setdefault("windows", "plain")


def _text_calibration(d: dict) -> None:
    """Every text calibration source (it has ``seqlen``; image sources do not) says its window rule."""
    for k, v in d.items():
        if isinstance(v, dict):
            if k == "calibration" and "seqlen" in v:
                _windows(v)
            _text_calibration(v)


def config_2_to_3(experiment: str, config: dict) -> dict:
    """The protocol-3 config of a protocol-2 cell of record folder ``experiment``."""
    c = copy.deepcopy(config)
    if c.get("protocol") != 2:
        raise ValueError(f"not a protocol-2 config: protocol {c.get('protocol')!r}")
    c["protocol"] = 3
    if experiment in TEXT_FOLDERS:
        _windows(c)
    _text_calibration(c)
    if experiment == "bandit-select" and c.get("method") in MEMORY_SELECTORS:
        c["params"].setdefault("memory", "carry")
    if experiment.startswith("prune-") and c.get("method") in STATS_PRUNERS:
        c.setdefault("params", {}).setdefault("stats", "exact")
    return c


def amend_3(experiment: str, config: dict) -> dict:
    """A protocol-3 config with the parameters added since, at the value its record was made under
    (``config`` itself when nothing is missing)."""
    if experiment == REFERENCED and config.get("method") == "thompson" and "join" not in config.get("params", {}):
        c = copy.deepcopy(config)
        c["params"]["join"] = "posterior"
        return c
    return config


UNRECORDED = "recorded before timings named their machine"
FAST_BF16 = "; bfloat16 was resolved from 'auto' there, so the CPU had fast bfloat16 (AVX512-BF16 or AMX)"


def machine_as_data(experiment: str, config: dict, result):
    """A timing cell's (config, result) with the machine moved from the key into the result (unchanged when
    it is not a timing cell or its config names no machine)."""
    if experiment not in TIMING_FOLDERS or "threads" not in config:
        return config, result
    threads = config["threads"]
    config = {k: v for k, v in config.items() if k != "threads"}
    dtype = config.get("dtype")
    note = UNRECORDED + (FAST_BF16 if dtype == "bfloat16" else "")
    machine = {"cpu": None, "note": note, "cores": None, "threads": threads, "dtype": dtype,
               "fast_bf16": True if dtype == "bfloat16" else None}
    return config, {**result, "machine": machine} if isinstance(result, dict) else result


STEPS = {2: config_2_to_3}  # from protocol -> its step; PROTOCOL is where they end
AMENDMENTS = (amend_3,)  # applied to every config of the current protocol
REFERENCING = {"bandit-ppl": "selection", "bandit-vision": "selection", "bandit-removal": "selections",
               "bandit-replay": "selection"}
REFERENCED = "bandit-select"  # the folder whose keys other records name (it names none itself)


def current_config(experiment: str, config: dict) -> dict:
    """``config`` brought to :data:`PROTOCOL` through every step (unchanged if it already is)."""
    while config.get("protocol") != PROTOCOL:
        step = STEPS.get(config.get("protocol"))
        if step is None:
            raise ValueError(f"no migration from protocol {config.get('protocol')!r} to {PROTOCOL}")
        config = step(experiment, config)
    for amend in AMENDMENTS:
        config = amend(experiment, config)
    return config


def migrate_records(records: list[dict]) -> tuple[list[dict], dict[tuple[str, str], str]]:
    """Migrated copies of ``records`` (each ``{"experiment", "key", "config", "result", ...}``) and the map
    ``(experiment, old key) -> new key``. Results are copied as they are, except a bandit cell's embedded
    selection config, which is migrated like the selection's own record."""
    keys: dict[tuple[str, str], str] = {}
    out: list[dict | None] = [None] * len(records)
    order = sorted(range(len(records)), key=lambda i: records[i]["experiment"] != REFERENCED)  # selections first
    for i in order:
        r = records[i]
        exp = r["experiment"]
        cfg = current_config(exp, r["config"])
        cfg, result = machine_as_data(exp, cfg, r.get("result"))
        field = REFERENCING.get(exp)
        if cfg.get(field) is not None:  # a dense cell names no selection
            old = cfg[field]
            ref = ([keys.get((REFERENCED, k), k) for k in old] if isinstance(old, list)
                   else keys.get((REFERENCED, old), old))
            if ref != old:
                cfg = {**cfg, field: ref}
        new = {**r, "config": cfg, "result": result, "key": config_key(cfg), "schema": SCHEMA}
        if isinstance(r.get("result"), dict) and isinstance(r["result"].get("selection"), dict):
            new["result"] = {**new["result"], "selection": current_config(REFERENCED, r["result"]["selection"])}
        if new["key"] != r["key"] and "migrated_from" not in r:  # the first key it had is kept
            new["migrated_from"] = {"protocol": r["config"].get("protocol"), "key": r["key"]}
        if (exp, r["key"]) in keys:
            raise ValueError(f"two records {exp}/{r['key']}")
        keys[(exp, r["key"])] = new["key"]
        out[i] = new
    targets = [(r["experiment"], r["key"]) for r in out]
    if len(set(targets)) != len(targets):
        raise ValueError("two records migrate to one key")
    return out, keys


def migrate_folder(root: str | Path) -> int:
    """Migrate every record under ``root`` in place (new file first, then the old one removed); the
    number of records moved. Model cards (``models/``) and lock files are not records."""
    root = Path(root)
    paths = [p for p in sorted(root.glob("*/*.json")) if p.parent.name != "models"]
    records = []
    for p in paths:  # every record read before any is moved: a bad one stops the migration with nothing touched
        try:
            record = json.loads(p.read_text())
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
            raise ReproError(f"record {p} cannot be read ({getattr(e, 'msg', None) or e}); move it aside (its cell "
                             "is then computed again) and migrate again: nothing was migrated") from None
        if not isinstance(record, dict) or not {"experiment", "config", "result", "key"} <= set(record):
            raise ReproError(f"record {p} is not a record (no experiment, config, result and key); move it aside "
                             "and migrate again: nothing was migrated")
        records.append(record)
    try:
        migrated, _ = migrate_records(records)
    except ValueError as e:
        raise ReproError(f"results folder {root}: {e}; nothing was migrated") from None
    changed = [(src, new) for src, old, new in zip(paths, records, migrated) if new != old]
    for folder in sorted({root / new["experiment"] for _, new in changed} | {src.parent for src, _ in changed}):
        check_folder("results folder", folder, min_free_mb=1)  # a read-only folder: refused before any record moves
    moved = 0
    for src, new in changed:
        target = root / new["experiment"] / f"{new['key']}.json"
        try:
            atomic_write_text(target, json.dumps(new, indent=1, sort_keys=True, default=str) + "\n")
            if src != target:
                src.unlink()
        except OSError as e:
            raise ReproError(f"record {src} could not be migrated ({e.strerror or e}); {moved} of {len(changed)} "
                             "were, each whole: migrate again once the folder can be written") from None
        moved += 1
    return moved
