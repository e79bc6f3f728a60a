"""The record migration (repro.migrate): each protocol-2 rule, references between records, idempotence,
and, on the committed results, that the migration was lossless: the records of the last protocol-2
commit, migrated again here, are exactly the committed files, every result unchanged. (That the current
code asks for exactly these keys is tests/test_committed.py: every notebook plans no missing cell and
re-renders its committed tables from them.)"""
import json
import subprocess
import tarfile
from io import BytesIO

import pytest

from repro.migrate import config_2_to_3, migrate_folder, migrate_records
from repro.store import PROTOCOL, config_key

from conftest import ROOT

LAST_PROTOCOL_2 = "768c1f6"  # main before the records were migrated to protocol 3
MODEL = {"name": "m", "source": "s"}


def record(experiment: str, config: dict, result: dict | None = None) -> dict:
    return {"schema": 1, "experiment": experiment, "key": config_key(config), "config": config,
            "result": result or {"ppl": 1.5}, "seconds": 2.0, "finished": "t", "versions": {}}


def test_each_protocol_2_rule():
    text = config_2_to_3("heads-ppl", {"protocol": 2, "model": MODEL, "seqlen": 8, "method": "wanda-head",
                                       "calibration": {"data": "w", "seqlen": 4, "nsamples": 2}})
    assert text["protocol"] == 3 and text["windows"] == "plain" and text["calibration"]["windows"] == "plain"
    bos = config_2_to_3("heads-ppl", {"protocol": 2, "seqlen": 8, "windows": "bos+text"})
    assert bos["windows"] == "bos+text"  # a rule that was written stays as it was
    vision = config_2_to_3("heads-vision", {"protocol": 2, "data": "fashion-mnist:test",
                                            "calibration": {"data": "fashion-mnist:train", "n": 4}})
    assert "windows" not in vision and "windows" not in vision["calibration"]  # images have no windows
    ucb = config_2_to_3("bandit-select", {"protocol": 2, "method": "ucb", "params": {"budget": 4}})
    step = config_2_to_3("bandit-select", {"protocol": 2, "method": "ucb", "params": {"memory": "step"}})
    greedy = config_2_to_3("bandit-select", {"protocol": 2, "method": "greedy", "params": {"budget": 4}})
    assert ucb["params"]["memory"] == "carry" and step["params"]["memory"] == "step"
    assert "memory" not in greedy["params"]
    wanda = config_2_to_3("prune-ppl", {"protocol": 2, "method": "wanda", "params": {}})
    ogas = config_2_to_3("prune-ppl", {"protocol": 2, "method": "ogas", "params": {"lam": 0.4}})
    assert wanda["params"] == {"stats": "exact"} and "stats" not in ogas["params"]
    with pytest.raises(ValueError, match="protocol-2"):
        config_2_to_3("heads-ppl", {"protocol": 3})


def test_references_follow_their_records_and_a_second_run_changes_nothing(tmp_path):
    sel_cfg = {"protocol": 2, "model": MODEL, "method": "ucb", "params": {"budget": 4}}
    sel = record("bandit-select", sel_cfg, {"units": [["head", 0, 1]]})
    cell = record("bandit-ppl", {"protocol": 2, "model": MODEL, "seqlen": 8, "selection": sel["key"]},
                  {"ppl": 3.0, "selection": sel_cfg})
    removal = record("bandit-removal", {"protocol": 2, "model": MODEL, "seqlen": 8, "selections": [sel["key"]]})
    dense = record("bandit-ppl", {"protocol": 2, "model": MODEL, "seqlen": 8, "method": "dense"})
    out, keys = migrate_records([cell, removal, sel, dense])  # a referencing record first: order must not matter
    new_sel = keys[("bandit-select", sel["key"])]
    assert out[0]["config"]["selection"] == new_sel != sel["key"]
    assert out[1]["config"]["selections"] == [new_sel]
    assert out[0]["result"]["selection"] == out[2]["config"]  # the embedded config is the selection's own
    assert out[0]["result"]["ppl"] == 3.0 and out[2]["result"] == sel["result"]
    assert all(r["key"] == config_key(r["config"]) and r["config"]["protocol"] == PROTOCOL for r in out)
    assert out[2]["migrated_from"] == {"protocol": 2, "key": sel["key"]}
    for r in (cell, removal, sel, dense):
        (tmp_path / r["experiment"]).mkdir(exist_ok=True)
        (tmp_path / r["experiment"] / f"{r['key']}.json").write_text(json.dumps(r))
    assert migrate_folder(tmp_path) == 4
    files = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*.json"))
    assert files == sorted(f"{r['experiment']}/{r['key']}.json" for r in out)
    assert migrate_folder(tmp_path) == 0  # idempotent


def test_two_records_onto_one_key_is_refused():
    a = record("prune-ppl", {"protocol": 2, "model": MODEL, "seqlen": 8, "method": "wanda", "params": {}})
    b = record("prune-ppl", {"protocol": 2, "model": MODEL, "seqlen": 8, "method": "wanda",
                             "params": {"stats": "exact"}})
    with pytest.raises(ValueError, match="one key"):
        migrate_records([a, b])


def _records_at(commit: str) -> list[dict]:
    blob = subprocess.run(["git", "-C", str(ROOT), "archive", commit, "results"], capture_output=True, check=True)
    with tarfile.open(fileobj=BytesIO(blob.stdout)) as tar:
        return [json.load(tar.extractfile(m)) for m in tar.getmembers()
                if m.isfile() and m.name.endswith(".json") and "/models/" not in m.name]


def test_the_committed_migration_was_lossless():
    try:
        old = _records_at(LAST_PROTOCOL_2)
    except (subprocess.CalledProcessError, FileNotFoundError):
        pytest.skip(f"commit {LAST_PROTOCOL_2} is not in this clone's history")
    migrated, keys = migrate_records(old)
    committed = {(p.parent.name, p.stem): json.loads(p.read_text()) for p in (ROOT / "results").glob("*/*.json")
                 if p.parent.name != "models"}
    assert len(migrated) == len(old) <= len(committed)  # records computed since then are only added
    migrated_keys = {(r["experiment"], r["key"]) for r in migrated}
    assert all(r.get("migrated_from", {}).get("protocol") != 2 for k, r in committed.items() if k not in migrated_keys)
    for before, after in zip(old, migrated):
        assert committed[(after["experiment"], after["key"])] == after  # the committed file is this record
        assert after["config"]["protocol"] == PROTOCOL and after["key"] == config_key(after["config"])
        unchanged = {k: v for k, v in before["result"].items() if k != "selection"}
        assert {k: v for k, v in after["result"].items() if k not in ("selection", "machine")} == unchanged  # no number changed
        if "threads" in before["config"]:  # a timing: its machine left the key for the result
            assert after["result"]["machine"]["threads"] == before["config"]["threads"]
        assert (after["seconds"], after["finished"], after["versions"]) == \
            (before["seconds"], before["finished"], before["versions"])


def test_a_protocol_3_thompson_record_gets_the_join_rule_it_ran_under_and_its_cells_follow():
    """Thompson's ``join`` became a parameter within protocol 3: a record without it ran the posterior
    rule, so it gains ``join: posterior``, moves to that key, and the cells naming it follow; a record
    that has it, and other methods, stay as they are; a second run changes nothing."""
    ts_cfg = {"protocol": PROTOCOL, "model": MODEL, "method": "thompson", "params": {"memory": "persist"}}
    ts = record("bandit-select", ts_cfg, {"units": [["head", 0, 1]]})
    ucb = record("bandit-select", {"protocol": PROTOCOL, "model": MODEL, "method": "ucb", "params": {}})
    mean = record("bandit-select", {**ts_cfg, "params": {"memory": "persist", "join": "mean"}})
    cell = record("bandit-ppl", {"protocol": PROTOCOL, "model": MODEL, "seqlen": 8, "selection": ts["key"]},
                  {"ppl": 3.0, "selection": ts_cfg})
    out, keys = migrate_records([cell, ts, ucb, mean])
    assert out[1]["config"]["params"] == {"memory": "persist", "join": "posterior"}
    assert out[1]["migrated_from"] == {"protocol": PROTOCOL, "key": ts["key"]}
    assert out[0]["config"]["selection"] == out[1]["key"] != ts["key"] and out[0]["result"]["ppl"] == 3.0
    assert out[0]["result"]["selection"] == out[1]["config"]
    assert out[2] == ucb and out[3] == mean
    assert migrate_records(out)[0] == out


def test_a_timing_record_keeps_its_machine_as_data_not_key():
    """A timing cell's ``threads`` leave its key for ``result["machine"]`` (a machine with another core count
    reads it); the timings, seconds and other folders' records stay; a second run changes nothing."""
    cfg = {"protocol": PROTOCOL, "model": MODEL, "method": "mpg", "dtype": "bfloat16", "threads": 2,
           "windows": "plain"}
    timing = record("heads-efficiency", cfg, {"dense": {"prefill_b1": {"median_s": 0.1}}})
    ppl = record("heads-ppl", {**cfg, "threads": 2}, {"ppl": 3.0})  # not a timing folder: untouched
    out, _ = migrate_records([timing, ppl])
    assert "threads" not in out[0]["config"] and out[0]["key"] == config_key(out[0]["config"]) != timing["key"]
    assert out[0]["result"]["dense"] == timing["result"]["dense"]
    machine = out[0]["result"]["machine"]
    assert machine["threads"] == 2 and machine["dtype"] == "bfloat16" and machine["cpu"] is None
    assert "AVX512-BF16" in machine["note"] and machine["fast_bf16"] is True
    assert out[0]["migrated_from"]["key"] == timing["key"]
    assert out[1] == ppl
    assert migrate_records(out)[0] == out
