"""`python -m repro`: JSON output and exit status 2 with a one-line message on bad input."""
import json
import subprocess
import sys

import pytest

from conftest import have_wikitext
from repro.cli import main


def run(*args):
    """A real process: exit status, stdout, stderr."""
    p = subprocess.run([sys.executable, "-m", "repro", *args], capture_output=True, text=True, timeout=300)
    return p.returncode, p.stdout, p.stderr


def run_here(capsys, *args):
    """The same entry point in this process (no interpreter start-up): status, stdout, stderr."""
    try:
        code = main(list(args))
    except SystemExit as e:  # argparse usage errors
        code = e.code
    out = capsys.readouterr()
    return code, out.out, out.err


def test_ppl_json(capsys):
    assert main(["ppl", "--model", "tiny-llama", "--data", "wiki-sample", "--seqlen", "64", "--max-windows", "3"]) == 0
    out = json.loads(capsys.readouterr().out)
    for key in ("model", "data", "data_sha256", "seqlen", "n_windows", "n_tokens", "dtype", "ppl", "window_nll"):
        assert key in out
    from repro.assets import resolve_dtype

    assert out["n_windows"] == 3 and out["n_tokens"] == 192 and out["dtype"] == resolve_dtype("auto")
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
      "--calib-nsamples", "0"], "expected a positive integer, got 0"),
    (["ppl", "--model", "tiny-llama", "--batch-size", "0"], "--batch-size: expected a positive integer, got 0"),
    (["ppl", "--model", "tiny-llama", "--dtype", "float8"], "unknown dtype 'float8'"),
    (["ppl", "--model", "tiny-llama", "--device", "cuda:7"], "device 'cuda:7' requested"),
    (["ppl", "--model", "tiny-llama", "--device", "gpu"], "unknown device 'gpu'"),
    (["heads", "--model", "tiny-llama", "--sparsity", "0.2", "--unknown-flag"], "unrecognized arguments"),
])
def test_bad_input_exits_2(capsys, args, message):
    code, out, err = run_here(capsys, *args)
    assert code == 2 and out == ""
    lines = err.strip().splitlines()
    assert lines[-1].startswith("error: ") and message in lines[-1]


@pytest.mark.skipif(not have_wikitext(), reason="WikiText-2 not found")
def test_hash_mismatch_exits_2(tmp_path):
    from repro.assets.data import wikitext_dir

    d = tmp_path / "wikitext-2"
    d.mkdir()
    (d / "wiki.test.raw").write_bytes((wikitext_dir() / "wiki.test.raw").read_bytes()[:-10])
    p = subprocess.run([sys.executable, "-m", "repro", "ppl", "--model", "tiny-llama", "--data", "wikitext2:test",
                        "--seqlen", "256"], capture_output=True, text=True,
                       env={**__import__("os").environ, "REPRO_DATA_DIR": str(tmp_path)}, timeout=300)
    assert p.returncode == 2 and "sha256" in p.stderr.strip().splitlines()[-1]


def test_heads_dtype_is_honoured(capsys):
    """--dtype float16 evaluates in float16 (it used to fall back to float32 silently)."""
    args = ["heads", "--model", "tiny-llama", "--sparsity", "0.25", "--eval", "wiki-sample", "--seqlen", "64",
            "--max-windows", "1"]
    assert main(args + ["--dtype", "float16"]) == 0
    assert json.loads(capsys.readouterr().out)["dtype"] == "float16"
    assert main(args + ["--dtype", "float32"]) == 0
    assert json.loads(capsys.readouterr().out)["dtype"] == "float32"


def test_non_causal_folder_exits_2(tmp_path, capsys):
    import transformers as T

    T.BertForMaskedLM(T.BertConfig(vocab_size=32, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                                   intermediate_size=16)).save_pretrained(tmp_path / "bert")
    code, out, err = run_here(capsys, "ppl", "--model", str(tmp_path / "bert"), "--data", "wiki-sample")
    last = err.strip().splitlines()[-1]
    assert code == 2 and out == "" and last.startswith("error: ") and "not a causal language model" in last


def test_heads_uses_the_notebook_pipeline(capsys):
    """The CLI draws calibration windows and scores exactly as HeadExperiment does (same source record)."""
    from repro.experiments.base import Setup
    from repro.experiments.heads import HeadExperiment
    from repro.store import Store

    assert main(["heads", "--model", "tiny-llama", "--method", "wanda-head", "--sparsity", "0.25",
                 "--calib-data", "wiki-sample", "--calib-nsamples", "3", "--calib-seqlen", "32"]) == 0
    out = json.loads(capsys.readouterr().out)
    e = HeadExperiment("tiny-llama", Setup(calib_data="wiki-sample", calib_nsamples=3, calib_seqlen=32), Store(None))
    scores, _ = e.scores("wanda-head")
    assert out["calibration"] == e.method_config("wanda-head")["calibration"]
    assert out["calibration"]["seed"] == 0 and out["calibration"]["sha256"]
    assert out["scores"] == scores.tolist()


def test_zeroshot_json(capsys):
    """One JSON object with lm-eval's metrics, offline, on a tiny model (byte-level HF tokenizer)."""
    assert main(["zeroshot", "--model", "tiny-llama", "--tasks", "sst2,rte", "--limit", "3", "--dtype", "float32"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out["tasks"]) == {"sst2", "rte"} and out["limit"] == 3
    for t in out["tasks"].values():
        assert t["n"] == 3 and set(t["metrics"]) == {"acc"} and t["metrics"]["acc"]["value"] in (0, 1 / 3, 2 / 3, 1)
    code, _, err = run_here(capsys, "zeroshot", "--model", "tiny-llama", "--tasks", "sst2,nope")
    assert code == 2 and "unknown zero-shot task 'nope'" in err


def test_prune_json_and_calibration_file(capsys, tmp_path):
    import numpy as np

    args = ["prune", "--model", "tiny-llama", "--method", "wanda", "--sparsity", "0.5", "--calib", "wiki-sample",
            "--nsamples", "2", "--calib-seqlen", "32"]
    assert main(args + ["--eval", "wiki-sample", "--seqlen", "32", "--max-windows", "2"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["achieved_sparsity"] == pytest.approx(0.5) and len(out["zeros_sha256"]) == 64 and out["n_windows"] == 2
    np.save(tmp_path / "ids.npy", np.random.default_rng(0).integers(4, 260, (2, 32)))
    assert main(args + ["--calib-file", str(tmp_path / "ids.npy")]) == 0
    from_file = json.loads(capsys.readouterr().out)
    assert from_file["calibration"]["file"].endswith("ids.npy") and from_file["zeros_sha256"] != out["zeros_sha256"]
    assert main(args + ["--calib-file", str(tmp_path / "ids.npy")]) == 0
    assert json.loads(capsys.readouterr().out)["zeros_sha256"] == from_file["zeros_sha256"]  # deterministic


@pytest.mark.parametrize("extra, message", [
    (["--sparsity", "1.0"], "sparsity must be in [0, 1)"),
    (["--sparsity", "0.5", "--pattern", "5:4"], "5:4"),
    (["--sparsity", "0.5", "--pattern", "2:3.5"], "2:3.5"),
    (["--sparsity", "0.5", "--method", "nope"], "unknown pruning method 'nope'"),
    (["--sparsity", "0.5", "--calib-file", "missing.npy"], "calibration file"),
])
def test_prune_bad_input_exits_2(capsys, tmp_path, extra, message):
    base = ["prune", "--model", "tiny-llama", "--method", "wanda", "--calib", "wiki-sample", "--nsamples", "2",
            "--calib-seqlen", "32", "--save", str(tmp_path / "out")]
    args = base + extra
    if "--method" in extra:  # the later --method wins
        pass
    code, out, err = run_here(capsys, *args)
    assert code == 2 and out == "" and message in err.strip().splitlines()[-1]
    assert not (tmp_path / "out").exists(), "bad input writes nothing"


BANDIT_BASE = ["bandit", "--model", "tiny-llama", "--calib", "wiki-sample", "--nsamples", "4", "--calib-seqlen", "16",
               "--calib-batch-size", "2"]
BANDIT = BANDIT_BASE + ["--budget", "4", "--pool-size", "6"]


def test_bandit_json_with_paired_ppl_change(capsys):
    code, out, err = run_here(capsys, *BANDIT, "--units", "heads", "--ratio", "0.25", "--policy", "ucb", "--seed",
                              "1", "--eval", "wiki-sample", "--seqlen", "32", "--max-windows", "3")
    assert code == 0, err
    out = json.loads(out)
    assert out["k"] == 3 and len(out["units"]) == 3 and out["paired_evaluations"] == 12
    assert sum(out["pulls"].values()) == 12 and out["kinds"] == ["head"] and out["seed"] == 1
    lo, hi = out["ppl_change_pct_ci95"]
    assert lo <= out["ppl_change_pct"] <= hi and out["windows"] == 3
    assert out["ppl_change_pct"] == pytest.approx(100 * (out["ppl"] / out["dense_ppl"] - 1), rel=1e-6)


def test_bandit_search_dtype_follows_the_evaluation_dtype(capsys):
    code, out, err = run_here(capsys, *BANDIT, "--units", "heads", "--ratio", "0.25", "--policy", "thompson",
                              "--search-dtype", "eval", "--dtype", "bfloat16")
    assert code == 0, err
    assert json.loads(out)["search_dtype"] == "bfloat16"


@pytest.mark.parametrize("bad, message", [
    (["--units", "heads", "--ratio", "1.0", "--policy", "ucb"], "ratio must be in"),
    (["--units", "heads", "--ratio", "0", "--policy", "ucb"], "ratio must be in"),
    (["--units", "heads", "--ratio", "0.25", "--policy", "bogus"], "unit selector"),
    (["--units", "neurons", "--ratio", "0.25", "--policy", "ucb"], "unit kind"),
    (["--units", "mlp", "--ratio", "0.25", "--policy", "ucb", "--group-size", "500"], "group"),
    (["--units", "heads", "--ratio", "0.1", "--policy", "ucb", "--budget", "2", "--pool-size", "8"],
     "smaller than the pool"),
])
def test_bandit_bad_input_exits_2_with_one_line(capsys, bad, message):
    code, out, err = run_here(capsys, *(BANDIT_BASE if "--budget" in bad else BANDIT), *bad)
    assert code == 2 and out == "" and message in err and len(err.strip().splitlines()) == 1, err


@pytest.mark.parametrize("method", ["magnitude", "wanda", "ria", "sparsegpt", "ogas"])
@pytest.mark.parametrize("pattern", ["unstructured", "2:4", "4:8"])
def test_prune_every_method_and_pattern_from_a_calibration_file(capsys, tmp_path, method, pattern):
    import numpy as np

    np.save(tmp_path / "ids.npy", np.random.default_rng(0).integers(4, 260, (3, 32)))
    args = ["prune", "--model", "tiny-llama", "--method", method, "--pattern", pattern, "--calib-file",
            str(tmp_path / "ids.npy"), "--eval", "wiki-sample", "--seqlen", "32", "--max-windows", "2"]
    args += ["--sparsity", "0.5"] if pattern == "unstructured" else []
    code, out, err = run_here(capsys, *args)
    if method == "ogas" and pattern != "unstructured":  # per-row sparsity does not define N:M
        assert code == 2 and out == "" and "N:M" in err and len(err.strip().splitlines()) == 1, err
        return
    assert code == 0, err
    out = json.loads(out)
    assert out["pattern"] == pattern and out["n_windows"] == 2
    assert out["calibration"]["nsamples"] == 3 if method != "magnitude" else "calibration" not in out  # uses none
    assert out["achieved_sparsity"] == pytest.approx(0.5, abs=0.01) and np.isfinite(out["ppl"])
