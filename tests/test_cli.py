"""`python -m repro`: JSON output and exit status 2 with a one-line message on bad input."""
import json
import subprocess
import sys

import pytest

from repro.cli import main

from conftest import have_wikitext


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


def refused(capsys, *args) -> str:
    """Run in this process; assert exit status 2, nothing on stdout and exactly one stderr line
    ``error: ...``; return that line."""
    code, out, err = run_here(capsys, *args)
    lines = err.strip().splitlines()
    assert code == 2 and out == "", (code, out, err)
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    return lines[0]


class Work(Exception):
    """Raised by a tripwire: the command went on to load a model, prune or execute a notebook."""


@pytest.fixture
def tripwires(monkeypatch):
    """Loading a model, pruning and papermill's execution raise :class:`Work`, so a test that
    bad input is "refused before any work" fails if the command gets that far
    (test_tripwires_catch_good_input checks that each command does reach one)."""
    import types

    import repro.assets
    import repro.assets.models
    import repro.engines.base
    import repro.engines.prune
    import repro.methods.unstructured

    def trip(what):
        def tripped(*args, **kwargs):
            raise Work(what)
        return tripped

    for module, name in [(repro.assets, "load_model"), (repro.assets.models, "load_model"),
                         (repro.engines.base, "load_model"), (repro.methods.unstructured, "prune_model"),
                         (repro.engines.prune, "prune_model")]:
        monkeypatch.setattr(module, name, trip(f"{module.__name__}.{name}"))
    papermill = types.ModuleType("papermill")
    papermill.execute_notebook = trip("papermill.execute_notebook")
    monkeypatch.setitem(sys.modules, "papermill", papermill)


NOTEBOOK = '# %% tags=["parameters"]\nx = 1\n\n# %%\nprint(x)\n'


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
    (["heads", "--model", "tiny-gpt2", "--method", "wanda-head", "--calib-data", "wiki-sample", "--calib-seqlen",
      "100000"], "calib_seqlen (--calib-seqlen) 100000 exceeds tiny-gpt2's limit of"),
    (["prune", "--model", "tiny-llama", "--method", "wanda", "--sparsity", "0.5", "--calib-data", "wiki-sample",
      "--calib-seqlen", "100000"], "exceeds tiny-llama's limit of"),
    (["heads", "--model", "tiny-llama", "--sparsity", "1.5"], "argument --sparsity: expected a number in [0, 1)"),
    (["heads", "--model", "tiny-llama", "--method", "magic"], "--method: unknown head method 'magic'"),
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
    from repro.engines.base import Setup
    from repro.engines.heads import HeadExperiment
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

    args = ["prune", "--model", "tiny-llama", "--method", "wanda", "--sparsity", "0.5", "--calib-data", "wiki-sample",
            "--calib-nsamples", "2", "--calib-seqlen", "32"]
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
    (["--sparsity", "1.0"], "argument --sparsity: expected a number in [0, 1)"),
    (["--sparsity", "0.5", "--pattern", "5:4"], "5:4"),
    (["--sparsity", "0.5", "--pattern", "2:3.5"], "2:3.5"),
    (["--sparsity", "0.5", "--method", "nope"], "--method: unknown pruning method 'nope'"),  # the later --method wins
    (["--sparsity", "0.5", "--calib-file", "missing.npy"], "--calib-file: calibration file missing.npy not found"),
    (["--sparsity", "0.5", "--method", "ogas", "--param", "lam=2"], "OGAS lam must be in [0, 1]"),
])
def test_prune_bad_input_exits_2(capsys, tmp_path, tripwires, extra, message):
    base = ["prune", "--model", "tiny-llama", "--method", "wanda", "--calib-data", "wiki-sample", "--calib-nsamples",
            "2", "--calib-seqlen", "32", "--save", str(tmp_path / "out")]
    line = refused(capsys, *base, *extra)
    assert message in line
    assert not (tmp_path / "out").exists(), "bad input writes nothing"


BANDIT_BASE = ["bandit", "--model", "tiny-llama", "--calib-data", "wiki-sample", "--calib-nsamples", "4",
               "--calib-seqlen", "16", "--calib-batch-size", "2"]
BANDIT = BANDIT_BASE + ["--budget", "4", "--pool-size", "6"]


def test_bandit_json_with_paired_ppl_change(capsys):
    code, out, err = run_here(capsys, *BANDIT, "--units", "heads", "--ratio", "0.25", "--method", "ucb", "--seed",
                              "1", "--eval", "wiki-sample", "--seqlen", "32", "--max-windows", "20")
    assert code == 0, err
    out = json.loads(out)
    assert out["k"] == 3 and len(out["units"]) == 3 and out["paired_evaluations"] == 12
    assert sum(out["pulls"].values()) == 12 and out["kinds"] == ["head"] and out["seed"] == 1
    lo, hi = out["ppl_change_pct_ci95"]
    assert lo <= out["ppl_change_pct"] <= hi and out["windows"] == 20
    assert out["ppl_change_pct"] == pytest.approx(100 * (out["ppl"] / out["dense_ppl"] - 1), rel=1e-6)


def test_bandit_search_dtype_follows_the_evaluation_dtype(capsys):
    code, out, err = run_here(capsys, *BANDIT, "--units", "heads", "--ratio", "0.25", "--method", "thompson",
                              "--search-dtype", "eval", "--dtype", "bfloat16")
    assert code == 0, err
    assert json.loads(out)["search_dtype"] == "bfloat16"


@pytest.mark.parametrize("bad, message", [  # what only the loaded model can tell
    (["--units", "mlp", "--ratio", "0.25", "--method", "ucb", "--group-size", "500"], "group"),
    (["--units", "heads", "--ratio", "0.1", "--method", "ucb", "--budget", "2", "--pool-size", "8"],
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


# ---- bad input is refused before any work: exit 2, one line naming the argument, nothing written

PRUNE = ["prune", "--model", "tiny-llama", "--method", "wanda", "--sparsity", "0.5", "--calib-data", "wiki-sample",
         "--calib-nsamples", "2", "--calib-seqlen", "32"]
GOOD = {
    "ppl": ["ppl", "--model", "tiny-llama", "--data", "wiki-sample", "--seqlen", "32"],
    "heads": ["heads", "--model", "tiny-llama", "--calib-seed", "0", "--seed", "3", "--z", "1.5", "--eval", "wiki-sample"],
    "prune": PRUNE,
    "prune-ogas-params": ["prune", "--model", "tiny-llama", "--method", "ogas", "--sparsity", "0.5", "--param",
                          "gamma=0.2", "--param", "lam=1", "--param", "gamma_bounds=[0.1, 1]", "--param", "s_max=0.9",
                          "--param", "rounding=exact", "--param", "subset=4"],
    "prune-ria-params": ["prune", "--model", "tiny-llama", "--method", "ria", "--sparsity", "0.5", "--param",
                         "per_row=true", "--param", "a=1"],
    "bandit": BANDIT + ["--units", "heads,mlp", "--ratio", "0.25", "--method", "ucb", "--seed", "0"],
    "zeroshot": ["zeroshot", "--model", "tiny-llama", "--tasks", "sst2,rte"],
}


@pytest.mark.parametrize("name", [*GOOD, "prune-save", "notebook"])
def test_tripwires_catch_good_input(capsys, tmp_path, tripwires, name):
    """Good input goes on to real work, so the tripwires below can catch a check that comes too late."""
    args = GOOD.get(name)
    if name == "prune-save":
        args = PRUNE + ["--save", str(tmp_path / "new")]
    if name == "notebook":
        (tmp_path / "nb.py").write_text(NOTEBOOK)
        (tmp_path / "p.yaml").write_text("notebooks:\n  nb: {x: 2}\n")
        args = ["notebook", str(tmp_path / "nb.py"), "--profile", str(tmp_path / "p.yaml"), "--out",
                str(tmp_path / "nb.ipynb")]
    with pytest.raises(Work):
        main(args)
    assert not (tmp_path / "new").exists() and not (tmp_path / "nb.ipynb").exists()


@pytest.mark.parametrize("args, names", [
    (["ppl", "--data", ""], ["--data", "empty dataset spec"]),
    (["ppl", "--data", "wikitext2:"], ["--data", "empty split"]),
    (["ppl", "--data", "nope:test"], ["--data", "unknown text dataset 'nope'"]),
    (["heads", "--eval", ""], ["--eval", "empty dataset spec"]),
    (["heads", "--calib-data", "wiki-sample:"], ["--calib-data", "empty split"]),
    (["prune", "--method", "wanda", "--calib-data", ""], ["--calib-data", "empty dataset spec"]),
    (["bandit", "--ratio", "0.1", "--method", "ucb", "--calib-data", ":test"], ["--calib-data", "no name"]),
])
def test_bad_data_spec_refused_before_loading(capsys, tripwires, args, names):
    line = refused(capsys, args[0], "--model", "tiny-llama", *args[1:])
    assert all(n in line for n in names), line


def test_parse_spec_refuses_empty_parts():
    from repro.assets.data import load_text, parse_spec
    from repro.errors import ReproError

    assert parse_spec("wikitext2") == ("wikitext2", None) and parse_spec("c4-sample:calib") == ("c4-sample", "calib")
    for spec in ("", "wikitext2:", ":test", "  "):
        with pytest.raises(ReproError, match="dataset spec"):
            load_text(spec)


@pytest.mark.parametrize("args, option", [
    (["bandit", "--ratio", "0.1", "--method", "ucb", "--seed", "-1"], "--seed"),
    (["heads", "--calib-seed", "-1"], "--calib-seed"),
    (["prune", "--method", "wanda", "--calib-seed", "-1"], "--calib-seed"),
    (["heads", "--method", "random", "--seed", "-1"], "--seed"),
    (["heads", "--seed", "1.5"], "--seed"),
    (["heads", "--seed", str(2**64)], "--seed"),
])
def test_bad_seed_refused_before_loading(capsys, tripwires, args, option):
    line = refused(capsys, args[0], "--model", "tiny-llama", *args[1:])
    assert f"argument {option}: expected " in line and ("non-negative integer" in line or "below 2**63" in line)


@pytest.mark.parametrize("method, param, expected", [
    ("ogas", "lam=abc", "--param lam: expected a finite number (the default is 0.4), got \"abc\""),
    ("ogas", "lam=NaN", "--param lam: expected a finite number"),
    ("ogas", "subset=1.5", "--param subset: expected an integer"),
    ("ogas", "gamma_bounds=0.5", "--param gamma_bounds: expected a list like [0.05, 1.1]"),
    ("ogas", "gamma_bounds=[0.1, \"x\"]", "--param gamma_bounds: expected a list"),
    ("ogas", "rounding=[1]", "--param rounding: expected a string"),
    ("ria", "per_row=1", "--param per_row: expected true or false"),
    ("ria", "per_row=True", "--param per_row: expected true or false"),
    ("sparsegpt", "blocksize=true", "--param blocksize: expected an integer"),
    ("wanda", "lam=0.2", "--param lam: pruning method 'wanda' takes"),
    ("ogas", "s_max=abc", "--param: pruning method 'ogas' refuses"),
    ("ogas", "novalue", "--param takes KEY=VALUE"),
])
def test_prune_param_of_wrong_type_refused_before_loading(capsys, tripwires, method, param, expected):
    line = refused(capsys, *PRUNE, "--method", method, "--param", param)
    assert expected in line, line


@pytest.mark.parametrize("args, option", [
    (["heads", "--z", "nan"], "--z"),
    (["heads", "--z", "inf"], "--z"),
    (["heads", "--sparsity", "nan"], "--sparsity"),
    (["prune", "--method", "wanda", "--sparsity", "inf"], "--sparsity"),
    (["prune", "--method", "wanda", "--sparsity=-inf"], "--sparsity"),
    (["bandit", "--method", "ucb", "--ratio", "nan"], "--ratio"),
])
def test_non_finite_number_refused_before_loading(capsys, tripwires, args, option):
    line = refused(capsys, args[0], "--model", "tiny-llama", *args[1:])
    assert f"argument {option}: expected a finite number" in line, line


def _bad_model(tmp_path, case: str) -> tuple[str, str]:
    """(a --model value that is not a model, what the one-line error must say)."""
    if case == "folder-without-config":
        (tmp_path / "empty").mkdir()
        (tmp_path / "empty" / "model.safetensors").write_bytes(b"")
        return str(tmp_path / "empty"), "has no config.json"
    if case == "file":
        (tmp_path / "weights.bin").write_bytes(b"")
        return str(tmp_path / "weights.bin"), "is a file, not a model folder"
    if case == "missing-folder":
        return str(tmp_path / "no" / "such" / "folder"), "no model folder"
    if case == "empty":
        return "", "empty model name"
    if case == "too-long":
        return "m" * 5000, "model name too long"
    if case == "too-long-path":
        return "./" + "m" * 300 + "/x", "model name too long"
    raise AssertionError(case)


MODEL_CASES = ["folder-without-config", "file", "missing-folder", "empty", "too-long", "too-long-path"]


@pytest.mark.parametrize("case", MODEL_CASES)
@pytest.mark.parametrize("command", [["ppl"], ["prune", "--method", "wanda", "--sparsity", "0.5"],
                                     ["zeroshot", "--tasks", "sst2"]], ids=lambda c: c[0])
def test_bad_model_refused_before_loading(capsys, tmp_path, tripwires, case, command):
    name, message = _bad_model(tmp_path, case)
    line = refused(capsys, *command, "--model", name)
    assert line.startswith("error: --model: ") and message in line and len(line) < 400, line


@pytest.mark.parametrize("case", MODEL_CASES)
def test_load_model_refuses_bad_names_itself(tmp_path, case):
    """The loader says the same to callers other than the CLI (no OSError from a path probe or transformers)."""
    from repro.assets.models import load_model
    from repro.errors import ReproError

    name, message = _bad_model(tmp_path, case)
    with pytest.raises(ReproError, match=message):
        load_model(name)


def _notebook_case(tmp_path, case: str) -> tuple[list[str], list[str]]:
    """(arguments of ``notebook``, what the one-line error must say) for one bad input; the
    other inputs are good, so without the check the notebook would run."""
    src, profile, out = tmp_path / "nb.py", tmp_path / "p.yaml", tmp_path / "nb.ipynb"
    src.write_text(NOTEBOOK)
    profile.write_text("notebooks:\n  nb: {x: 2}\n")
    if case == "missing-source":
        return [str(tmp_path / "missing.py"), "--out", str(out)], ["notebook source", "missing.py: no such file"]
    if case == "missing-profile":
        return [str(src), "--profile", str(tmp_path / "nope.yaml"), "--out", str(out)], ["--profile", "nope.yaml"]
    if case == "profile-not-yaml":
        profile.write_text("x: 2\ny: [1, 2\nz: 3\n")
        return [str(src), "--profile", str(profile), "--out", str(out)], \
            ["--profile", "p.yaml", "not valid YAML at line 3, column 2"]
    if case == "out-folder-missing":
        return [str(src), "--profile", str(profile), "--out", str(tmp_path / "missing" / "nb.ipynb")], \
            ["--out", "missing does not exist"]
    if case == "out-is-a-folder":
        (tmp_path / "folder").mkdir()
        return [str(src), "--profile", str(profile), "--out", str(tmp_path / "folder")], ["--out", "is a folder"]
    if case == "out-is-the-source":
        return [str(src), "--profile", str(profile), "--out", str(src)], ["--out", "source itself"]
    if case == "profile-empty":  # it would run the notebook's paper-scale defaults into the committed results
        profile.write_text("# nothing here\n")
        return [str(src), "--profile", str(profile), "--out", str(out)], ["--profile", "p.yaml is empty"]
    if case == "out-exists":  # never overwritten silently
        (tmp_path / "old.ipynb").write_text("keep me")
        return [str(src), "--profile", str(profile), "--out", str(tmp_path / "old.ipynb")], \
            ["--out", "old.ipynb exists: pass --force"]
    if case == "out-path-too-long":
        return [str(src), "--profile", str(profile), "--out", str(tmp_path / ("x" * 5000 + ".ipynb"))], \
            ["--out", "path too long"]
    if case == "profile-path-too-long":
        return [str(src), "--profile", "/".join(["y" * 250] * 20), "--out", str(out)], ["--profile", "path too long"]
    if case == "no-profile-beside-it":  # no --profile and no profiles/cpu.yaml beside the notebook
        return [str(src), "--out", str(out)], ["--profile", "profiles/cpu.yaml", "(the default profile)"]
    raise AssertionError(case)


@pytest.mark.parametrize("case", ["missing-source", "missing-profile", "profile-not-yaml", "out-folder-missing",
                                  "out-is-a-folder", "out-is-the-source", "profile-empty", "out-exists",
                                  "no-profile-beside-it", "out-path-too-long", "profile-path-too-long"])
def test_notebook_bad_input_refused_before_executing(capsys, tmp_path, tripwires, case):
    args, names = _notebook_case(tmp_path, case)
    before = {p: p.read_bytes() if p.is_file() else None for p in tmp_path.rglob("*")}
    line = refused(capsys, "notebook", *args)
    assert all(n in line for n in names), line
    assert {p: p.read_bytes() if p.is_file() else None for p in tmp_path.rglob("*")} == before, "nothing written"


def test_notebook_bad_profile_is_one_line_from_a_real_process(tmp_path):
    """The real entry point (``python -m repro``): one line, not the YAML parser's traceback."""
    args, names = _notebook_case(tmp_path, "profile-not-yaml")
    code, out, err = run("notebook", *args)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, err
    assert err.startswith("error: --profile: ") and all(n in err for n in names), err


def test_load_profile_reports_yaml_errors_in_one_line(tmp_path):
    from repro.errors import ReproError
    from repro.notebooks import load_profile, read_source

    (tmp_path / "p.yaml").write_text("a: b: c\n")
    with pytest.raises(ReproError, match=r"p\.yaml: not valid YAML at line 1, column 5: mapping values") as e:
        load_profile(tmp_path / "p.yaml")
    assert "\n" not in str(e.value)
    with pytest.raises(ReproError, match="no such file"):
        load_profile(tmp_path / "missing.yaml")
    with pytest.raises(ReproError, match="no such file"):
        read_source(tmp_path / "missing.py")


@pytest.mark.parametrize("case", ["existing-folder", "existing-file", "missing-parent"])
def test_prune_save_refused_before_pruning(capsys, tmp_path, tripwires, case):
    target = {"existing-folder": tmp_path / "out", "existing-file": tmp_path / "out",
              "missing-parent": tmp_path / "missing" / "out"}[case]
    if case == "existing-folder":
        target.mkdir()
        (target / "keep.txt").write_text("mine")
    if case == "existing-file":
        target.write_text("mine")
    line = refused(capsys, *PRUNE, "--save", str(target))
    assert line.startswith("error: --save: ")
    assert ("exists" in line) if case != "missing-parent" else ("does not exist" in line)
    if case == "existing-folder":
        assert [p.name for p in target.iterdir()] == ["keep.txt"] and (target / "keep.txt").read_text() == "mine"
    elif case == "existing-file":
        assert target.read_text() == "mine"
    else:
        assert not target.parent.exists()


@pytest.mark.parametrize("bad, names", [
    (["--units", "neurons", "--ratio", "0.25", "--method", "ucb"], ["--units", "unknown unit kind 'neurons'"]),
    (["--units", ",", "--ratio", "0.25", "--method", "ucb"], ["--units", "unit kind"]),
    (["--units", "heads", "--ratio", "1.0", "--method", "ucb"], ["argument --ratio", "(0, 1)"]),
    (["--units", "heads", "--ratio", "0", "--method", "ucb"], ["argument --ratio", "(0, 1)"]),
    (["--units", "heads", "--ratio", "0.25", "--method", "bogus"], ["--method", "unknown unit selector 'bogus'"]),
    (["--units", "heads", "--ratio", "0.25", "--method", "random"], ["--budget", "'random' takes no parameters"]),
    (["--units", "heads", "--ratio", "0.25", "--method", "ucb", "--join", "mean"], ["--join", "'ucb' takes"]),
    (["--units", "heads", "--ratio", "0.25", "--method", "ucb", "--eval", "wiki-sample", "--max-windows", "8"],
     ["--max-windows 8", "at least 20 windows"]),
])
def test_bandit_bad_input_refused_before_loading(capsys, tripwires, bad, names):
    line = refused(capsys, *BANDIT, *bad)  # BANDIT sets --budget and --pool-size
    assert all(n in line for n in names), line


@pytest.mark.parametrize("command", ["ppl", "heads", "prune", "zeroshot", "bandit"])
@pytest.mark.parametrize("model", ["fashion-vit", "tiny-vit", "tiny-bert"])
def test_a_model_of_the_wrong_kind_is_refused_before_it_loads_or_trains(capsys, tripwires, command, model):
    """`ppl --model fashion-vit` used to start training the vision model (~15 min) before anything said that
    perplexity makes no sense for an image classifier."""
    extra = {"prune": ["--method", "magnitude"], "bandit": ["--ratio", "0.25", "--method", "random"],
             "zeroshot": ["--tasks", "sst2"]}.get(command, [])
    line = refused(capsys, command, "--model", model, *extra)
    assert "--model" in line and f"{model} is a" in line and "needs a causal-lm model" in line, line


@pytest.mark.parametrize("tasks, names", [("sst2,nope", ["--tasks", "unknown zero-shot task 'nope'"]),
                                          (",", ["--tasks", "no task names"])])
def test_zeroshot_unknown_task_refused_before_loading(capsys, tripwires, tasks, names):
    line = refused(capsys, "zeroshot", "--model", "tiny-llama", "--tasks", tasks)
    assert all(n in line for n in names), line


def test_heads_unknown_method_refused_before_loading(capsys, tripwires):
    assert "--method: unknown head method 'magic'" in refused(capsys, "heads", "--model", "tiny-llama", "--method",
                                                              "magic")


# ---- one name for one thing in every command


@pytest.mark.parametrize("args", [["bandit", "--ratio", "0.1", "--method", "ucb", "--policy", "ucb"],
                                  ["prune", "--method", "wanda", "--nsamples", "3"]])
def test_retired_option_spellings_are_refused(capsys, args):
    """One spelling per option: the retired --policy and --nsamples are errors, not silent aliases."""
    from repro.cli import parser

    with pytest.raises(SystemExit) as e:
        parser().parse_args(args + ["--model", "tiny-llama"])
    assert e.value.code == 2 and "unrecognized arguments" in capsys.readouterr().err


@pytest.mark.parametrize("command, registry", [("heads", "repro.methods.heads:HEAD_METHODS"),
                                               ("prune", "repro.methods.unstructured:PRUNERS"),
                                               ("bandit", "repro.methods.bandit:SELECTORS")])
def test_help_names_every_method_and_only_current_spellings(capsys, command, registry):
    import importlib
    import re

    from repro.cli import parser

    module, name = registry.split(":")
    with pytest.raises(SystemExit) as e:
        parser().parse_args([command, "--help"])
    assert e.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    options = text[text.index("options:"):]
    method_help = options[options.index("--method METHOD"):]
    method_help = method_help[:method_help.index(" --", 2)]  # up to the next option
    names = list(getattr(importlib.import_module(module), name))
    assert all(re.search(rf"[:,] {re.escape(n)}\b", method_help) for n in names), method_help[:300]
    for option in ("--method", "--calib-data", "--calib-nsamples", "--calib-seqlen"):
        assert option in text
    assert not re.search(r"--calib\b(?!-)|--nsamples|--policy", text)


def test_every_option_has_a_help_line_that_shows_its_default():
    import argparse

    from repro.cli import parser

    sub = next(a for a in parser()._actions if isinstance(a, argparse._SubParsersAction))
    missing, no_default = [], []
    for name, sp in sub.choices.items():
        formatter = sp._get_formatter()
        for a in sp._actions:
            if not a.option_strings or a.dest == "help":
                continue
            if not a.help:
                missing.append(f"{name} {a.option_strings[0]}")
            elif a.default not in (None, False) and "default" not in formatter._get_help_string(a):
                no_default.append(f"{name} {a.option_strings[0]}")
        assert "(default: " in sp.format_help() or name in ("notebook", "run", "migrate")
    assert not missing and not no_default, (missing, no_default)


def test_missing_wikitext_is_refused_before_loading(capsys, tripwires, monkeypatch):
    """Missing data is an error (exit 2, one line naming REPRO_DATA_DIR), never a silent substitute."""
    monkeypatch.setattr("repro.assets.data.wikitext_dir", lambda: None)
    monkeypatch.delenv("REPRO_DATA_FALLBACK", raising=False)
    line = refused(capsys, "ppl", "--model", "tiny-llama", "--data", "wikitext2:test")
    assert "--data" in line and "WikiText-2 not found: set REPRO_DATA_DIR" in line
    line = refused(capsys, "prune", "--model", "tiny-llama", "--method", "wanda", "--calib-data", "wikitext2-train")
    assert "--calib-data" in line and "REPRO_DATA_DIR" in line


def test_c4_offline_is_one_line(capsys, tripwires, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    line = refused(capsys, "ppl", "--model", "tiny-llama", "--data", "c4:validation", "--max-windows", "1")
    assert "c4 reads allenai/c4 from the hub" in line and "c4-sample" in line


def test_notebook_with_a_device_this_machine_lacks_is_one_line(capsys, tmp_path):
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    src, profile = tmp_path / "nb.py", tmp_path / "p.yaml"
    src.write_text(NOTEBOOK.replace("x = 1", "x = 1\ndevice = None"))
    profile.write_text("notebooks:\n  nb: {device: cuda}\n")
    line = refused(capsys, "notebook", str(src), "--profile", str(profile), "--out", str(tmp_path / "o.ipynb"))
    assert "--profile" in line and "no CUDA device is available" in line


def test_help_reads_method_names_from_the_cache_without_importing_torch(tmp_path, monkeypatch):
    """--help of heads / prune / bandit lists the registries' names; after the first, without importing
    torch (the names are cached by the sha256 of the registry's module); a cache of other source is not
    read."""
    import importlib
    import os

    from repro.cliargs import METHOD_REGISTRIES, method_names

    env = {**os.environ, "REPRO_CACHE": str(tmp_path)}
    probe = ("import sys; from repro.cli import main\n"
             "try: main([sys.argv[1], '--help'])\nexcept SystemExit: pass\n"
             "print('TORCH' if 'torch' in sys.modules else 'NO TORCH')")
    for command, (module, registry) in list(METHOD_REGISTRIES.items())[:1]:  # one is enough: the code is shared
        first = subprocess.run([sys.executable, "-c", probe, command], env=env, capture_output=True, text=True)
        again = subprocess.run([sys.executable, "-c", probe, command], env=env, capture_output=True, text=True)
        names = list(getattr(importlib.import_module(module), registry))
        last = [r.stdout.strip().splitlines()[-1] for r in (first, again)]
        assert last == ["TORCH", "NO TORCH"], last
        assert all(n in " ".join(again.stdout.split()) for n in names)
    stale = tmp_path / "help" / "repro.methods.heads.HEAD_METHODS.0000000000000000.json"
    stale.write_text('["not-a-method"]')
    monkeypatch.setenv("REPRO_CACHE", str(tmp_path))
    assert method_names("repro.methods.heads", "HEAD_METHODS") == list(importlib.import_module(
        "repro.methods.heads").HEAD_METHODS)
