"""`python -m repro`: JSON output and exit status 2 with a one-line message on bad input."""
import json
import subprocess
import sys

import pytest

from conftest import have_wikitext
from repro.cli import main


def run(*args):
    p = subprocess.run([sys.executable, "-m", "repro", *args], capture_output=True, text=True, timeout=300)
    return p.returncode, p.stdout, p.stderr


def test_ppl_json(capsys):
    assert main(["ppl", "--model", "tiny-llama", "--data", "wiki-sample", "--seqlen", "64", "--max-windows", "3"]) == 0
    out = json.loads(capsys.readouterr().out)
    for key in ("model", "data", "data_sha256", "seqlen", "n_windows", "n_tokens", "dtype", "ppl", "window_nll"):
        assert key in out
    assert out["n_windows"] == 3 and out["n_tokens"] == 192 and out["dtype"] == "bfloat16"
    assert len(out["window_nll"]) == 3 and out["ppl"] > 1


@pytest.mark.parametrize("remove", [False, True])
def test_heads_json(capsys, remove):
    args = ["heads", "--model", "tiny-llama", "--method", "mpg", "--z", "2.0", "--sparsity", "0.25",
            "--eval", "wiki-sample", "--seqlen", "64", "--max-windows", "2"] + (["--remove"] if remove else [])
    assert main(args) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["n_pruned"] == 3 == len(out["pruned"])  # floor(0.25 * 3 * 4)
    assert len(out["scores"]) == 3 and len(out["scores"][0]) == 4
    assert out["removed"] is remove and out["ppl"] > 1


def test_zeroed_and_removed_agree(capsys):
    common = ["heads", "--model", "tiny-llama", "--sparsity", "0.5", "--eval", "wiki-sample", "--seqlen", "64",
              "--max-windows", "2", "--dtype", "float32"]
    main(common)
    zeroed = json.loads(capsys.readouterr().out)
    main(common + ["--remove"])
    removed = json.loads(capsys.readouterr().out)
    assert removed["params"] < zeroed["params"]
    assert removed["ppl"] == pytest.approx(zeroed["ppl"], rel=1e-4)


@pytest.mark.parametrize("args, message", [
    (["ppl", "--model", "no-such-model"], "unknown model 'no-such-model'"),
    (["ppl", "--model", "tiny-llama", "--data", "nope:test"], "unknown text dataset 'nope'"),
    (["ppl", "--model", "tiny-gpt2", "--data", "wiki-sample", "--seqlen", "4096"], "exceeds the model's limit"),
    (["heads", "--model", "tiny-llama", "--sparsity", "1.5"], "sparsity must be in [0, 1)"),
    (["heads", "--model", "tiny-llama", "--sparsity", "nan"], "sparsity must be in [0, 1)"),
    (["heads", "--model", "tiny-llama", "--method", "magic"], "unknown head method 'magic'"),
    (["heads", "--model", "tiny-llama", "--method", "wanda-head", "--calib-data", "wiki-sample",
      "--calib-nsamples", "0"], "calibration set is empty"),
])
def test_bad_input_exits_2(args, message):
    code, out, err = run(*args)
    assert code == 2 and out == ""
    lines = err.strip().splitlines()
    assert lines[-1].startswith("error: ") and message in lines[-1]


@pytest.mark.skipif(not have_wikitext(), reason="WikiText-2 not found")
def test_hash_mismatch_exits_2(tmp_path):
    from repro.assets.data import wikitext_dir

    d = tmp_path / "wikitext-2"
    d.mkdir()
    (d / "wiki.test.raw").write_bytes((wikitext_dir() / "wiki.test.raw").read_bytes()[:-10])
    p = subprocess.run([sys.executable, "-m", "repro", "ppl", "--model", "tiny-llama"], capture_output=True, text=True,
                       env={**__import__("os").environ, "REPRO_DATA_DIR": str(tmp_path)}, timeout=300)
    assert p.returncode == 2 and "sha256" in p.stderr.strip().splitlines()[-1]
