"""Data identity: the HF row protocol, sha256 checks, the fallback, calibration sampling."""

import pytest
import torch

from repro.assets.data import WIKITEXT2_SHA256, hf_rows, load_text, wikitext_dir
from repro.calib import sample_windows
from repro.errors import HashMismatchError, ReproError, UnknownNameError

from conftest import have_wikitext


def test_hf_rows(tmp_path):
    p = tmp_path / "x.raw"
    p.write_bytes(b" \n = A = \n \n text\r\n")
    assert hf_rows(p) == ["", " = A = \n", "", " text\r\n"]


@pytest.mark.skipif(not have_wikitext(), reason="WikiText-2 not found (REPRO_DATA_DIR)")
def test_wikitext2_identity():
    d = load_text("wikitext2:test")
    assert d.sha256 == WIKITEXT2_SHA256["test"]
    assert len(d.rows) == 4358 and d.rows[0] == "" and d.rows[1] == " = Robert Boulter = \n"
    assert load_text("wikitext2-train").note.startswith("v1 tokenized")


@pytest.mark.skipif(not have_wikitext(), reason="WikiText-2 not found (REPRO_DATA_DIR)")
def test_corrupt_file_fails_its_hash(tmp_path, monkeypatch):
    src = wikitext_dir()
    dst = tmp_path / "wikitext-2"
    dst.mkdir()
    text = (src / "wiki.test.raw").read_bytes()
    (dst / "wiki.test.raw").write_bytes(text.replace(b"Robert", b"Rupert", 1))
    monkeypatch.setenv("REPRO_DATA_DIR", str(tmp_path))
    with pytest.raises(HashMismatchError, match="sha256"):
        load_text("wikitext2:test")


def test_missing_wikitext_is_an_error_and_falls_back_only_when_asked(tmp_path, monkeypatch):
    monkeypatch.setenv("REPRO_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("REPRO_OFFLINE", "1")
    monkeypatch.delenv("REPRO_DATA_FALLBACK", raising=False)
    monkeypatch.setattr("repro.assets.data.wikitext_dir", lambda: None)
    with pytest.raises(ReproError, match="WikiText-2 not found: set REPRO_DATA_DIR"):
        load_text("wikitext2:test")  # never a silent substitute
    monkeypatch.setenv("REPRO_DATA_FALLBACK", "1")
    with pytest.warns(UserWarning, match="WikiText-2 not found"):
        d = load_text("wikitext2:test")
    assert d.name == "wiki-sample" and "FALLBACK" in d.label


def test_unknown_dataset_and_split():
    with pytest.raises(UnknownNameError, match="unknown text dataset 'wikitext3'"):
        load_text("wikitext3:test")
    with pytest.raises(ReproError, match="splits"):
        load_text("wikitext2:dev")


def test_calibration_sampler_is_seeded_and_checked():
    ids = torch.arange(1000)
    a, b = sample_windows(ids, 4, 16, seed=3), sample_windows(ids, 4, 16, seed=3)
    assert a.equal(b) and a.shape == (4, 16)
    assert all((w[1:] - w[:-1] == 1).all() for w in a), "contiguous windows"
    assert not a.equal(sample_windows(ids, 4, 16, seed=4))
    with pytest.raises(ReproError, match="empty"):
        sample_windows(ids, 0, 16)
    with pytest.raises(ReproError, match="not more than seqlen"):
        sample_windows(torch.arange(10), 2, 16)


def test_packaged_sets():
    assert len(load_text("c4-sample").rows) == 118
    assert len(load_text("wiki-sample").rows) == 2349
    from repro.assets import load_task

    assert len(load_task("arc-easy")) == 570


def test_c4_halves_never_overlap():
    whole, calib, ev = load_text("c4-sample"), load_text("c4-sample:calib"), load_text("c4-sample:eval")
    assert len(whole.rows) == 118 and len(calib.rows) + len(ev.rows) == len(set(whole.rows)) == 113
    assert not set(calib.rows) & set(ev.rows) and set(calib.rows + ev.rows) == set(whole.rows)
    assert "held-out half, 57 C4 documents" in ev.label
    with pytest.raises(ReproError, match="splits sample, calib, eval"):
        load_text("c4-sample:test")


def test_calibration_file(tmp_path):
    import numpy as np

    from repro.calib import load_windows

    ids = np.arange(24, dtype=np.int32).reshape(3, 8)
    np.save(tmp_path / "ok.npy", ids)
    w = load_windows(tmp_path / "ok.npy", vocab_size=100, max_positions=8)
    assert w.dtype == torch.int64 and w.tolist() == ids.tolist()
    np.save(tmp_path / "flat.npy", ids.ravel())
    np.save(tmp_path / "float.npy", ids.astype(np.float32))
    (tmp_path / "junk.npy").write_text("not an array")
    for name, message in (("flat", "shape"), ("float", "integer token ids"), ("junk", "not a readable")):
        with pytest.raises(ReproError, match=message):
            load_windows(tmp_path / f"{name}.npy")
    with pytest.raises(ReproError, match=r"must lie in \[0, 10\)"):
        load_windows(tmp_path / "ok.npy", vocab_size=10)
    with pytest.raises(ReproError, match="exceeds the model's limit of 4"):
        load_windows(tmp_path / "ok.npy", max_positions=4)
