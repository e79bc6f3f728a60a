"""``stats="reference"`` of Wanda, RIA and SparseGPT: the reference codes' float32 running
accumulation, one window per forward; the default ``stats="exact"`` unchanged, masks and record
keys alike. Tiny random models only."""
import copy
import dataclasses
import json
import math

import numpy as np
import pytest
import torch

from repro.calib.blocks import Gram, InputSumSq, sequential
from repro.cli import main
from repro.engines.base import Setup
from repro.engines.prune import PruneExperiment
from repro.errors import ReproError
from repro.methods.unstructured import PRUNERS, SparseGPT, Wanda, get_pruner, lowest_n_of_m, prune_model
from repro.store import Store, config_key
from repro.structure.sparsity import prunable_linears, zeros_sha256

STATS_METHODS = ["wanda", "ria", "sparsegpt"]
Q0, GATE0 = "model.layers.0.self_attn.q_proj", "model.layers.0.mlp.gate_proj"


def calib(n=5, seqlen=16, seed=0):
    return torch.randint(4, 260, (n, seqlen), generator=torch.Generator().manual_seed(seed))


@pytest.fixture(scope="module")
def dense():
    from repro.assets.tiny import build_tiny

    return build_tiny("tiny-llama")


# ---- the parameter -------------------------------------------------------------------------------

@pytest.mark.parametrize("method", STATS_METHODS)
def test_stats_is_a_parameter_written_into_params_default_included(method):
    assert PRUNERS[method].defaults["stats"] == "exact"
    default = get_pruner(method)(0.5)
    assert default.params["stats"] == "exact" and not default.running
    assert get_pruner(method)(0.5, stats="exact").params == default.params
    ref = get_pruner(method)(0.5, stats="reference")
    assert ref.params == {**default.params, "stats": "reference"} and ref.running
    assert (ref.batch_size, ref.compress_threads) == (1, None)  # as the references: one window, torch's threads


@pytest.mark.parametrize("method, params", [("wanda", {"stats": "foo"}), ("sparsegpt", {"stats": 1}),
                                            ("ogas", {"stats": "reference"}), ("magnitude", {"stats": "exact"})])
def test_bad_or_foreign_stats_is_refused(method, params):
    with pytest.raises(ReproError, match="stats"):
        get_pruner(method)(0.5, **params)


def test_record_key_names_stats_and_changes_only_when_it_does(tmp_path):
    small = Setup(data="wiki-sample", seqlen=32, max_windows=2, calib_data="wiki-sample", calib_nsamples=2,
                  calib_seqlen=32)
    e = PruneExperiment("tiny-llama", small, Store(tmp_path), progress=False)
    for method in STATS_METHODS:
        cfg = e.prune_config(method, 0.5)
        assert cfg["params"]["stats"] == "exact"  # protocol 3: the default is written
        assert config_key(e.prune_config(method, 0.5, params={"stats": "exact"})) == config_key(cfg)
        ref = e.prune_config(method, 0.5, params={"stats": "reference"})
        assert ref == {**cfg, "params": {**cfg["params"], "stats": "reference"}}
        assert config_key(ref) != config_key(cfg)


@pytest.mark.parametrize("method", STATS_METHODS)
def test_cli_refuses_an_unknown_stats_value_with_one_line_and_exit_2(capsys, method):
    code = main(["prune", "--model", "tiny-llama", "--method", method, "--sparsity", "0.5", "--param", "stats=foo"])
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and err.count("\n") == 1 and err.startswith("error: ")
    assert "unknown stats rule 'foo'; known: exact, reference" in err


def test_cli_prunes_with_stats_reference(capsys, tmp_path):
    np.save(tmp_path / "ids.npy", np.random.default_rng(0).integers(4, 260, (3, 32)))
    args = ["prune", "--model", "tiny-llama", "--method", "sparsegpt", "--pattern", "2:4", "--calib-file",
            str(tmp_path / "ids.npy")]
    assert main(args + ["--param", "stats=reference", "--param", "count=reference"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["params"]["stats"] == "reference" and out["achieved_sparsity"] == pytest.approx(0.5)
    assert main(args) == 0
    assert json.loads(capsys.readouterr().out)["params"]["stats"] == "exact"


# ---- the default is what it was ------------------------------------------------------------------

@pytest.mark.parametrize("method", STATS_METHODS)
@pytest.mark.parametrize("pattern", ["unstructured", "2:4"])
def test_default_masks_and_weights_unchanged_by_passing_stats_exact(dense, method, pattern):
    a, b = copy.deepcopy(dense), copy.deepcopy(dense)
    s = 0.5 if pattern == "unstructured" else None
    prune_model(a, method, s, calib(), pattern=pattern, progress=False)
    prune_model(b, method, s, calib(), pattern=pattern, progress=False, stats="exact")
    assert zeros_sha256(a) == zeros_sha256(b)
    assert all(torch.equal(x, y) for x, y in zip(a.state_dict().values(), b.state_dict().values()))


# ---- stats="reference": float32 running means, one window per forward ------------------------------

class Spy:
    """Records each block-0 forward's batch size and each layer's observer at compress time."""

    def __init__(self, model):
        self.batches, self.obs, self.threads = [], {}, set()
        model.model.layers[0].register_forward_pre_hook(
            lambda m, args, kwargs: self.batches.append((args[0] if args else kwargs["hidden_states"]).shape[0]),
            with_kwargs=True)


def spied(cls):
    class Spied(cls):
        def compress(self, name, module, obs):
            self.spy.obs[name] = copy.deepcopy(obs[0])
            self.spy.threads.add(torch.get_num_threads())
            return super().compress(name, module, obs)
    return Spied


def block0_inputs(model, ids, names):
    """Each window's input to the linears ``names`` of block 0 of the dense ``model``, one window per forward."""
    mods, seen = dict(model.named_modules()), {n: [] for n in names}
    hooks = [mods[n].register_forward_pre_hook(lambda m, args, n=n: seen[n].append(args[0].clone())) for n in names]
    with torch.inference_mode():
        for w in ids:
            model(input_ids=w[None], use_cache=False)
    for h in hooks:
        h.remove()
    return seen


@pytest.mark.parametrize("cls, observer", [(Wanda, InputSumSq), (SparseGPT, Gram)])
def test_reference_stats_run_one_window_per_forward_in_float32(monkeypatch, dense, cls, observer):
    model, ids = copy.deepcopy(dense), calib()
    spy = Spy(model)
    monkeypatch.setattr(cls, "spy", spy, raising=False)
    monkeypatch.setitem(PRUNERS, cls.name, dataclasses.replace(PRUNERS[cls.name], impl=spied(cls)))
    prune_model(model, cls.name, 0.5, ids, batch_size=4, progress=False, stats="reference")
    assert spy.batches and set(spy.batches) == {1}  # capture, observe and propagate: window by window
    assert spy.threads == {torch.get_num_threads()}  # torch's own thread count in the compress step
    for name in prunable_linears(model):
        ob = spy.obs[name]
        assert isinstance(ob, observer) and ob.running and ob.n == len(ids)  # n counts windows
        stat = ob.sumsq if observer is InputSumSq else ob.gram
        assert stat.dtype == torch.float32


def test_wanda_reference_statistic_is_the_reference_running_mean_bit_for_bit(monkeypatch, dense):
    """locuslab/wanda ``WrappedGPT.add_batch``, written out by hand, on block 0's dense inputs."""
    model, ids = copy.deepcopy(dense), calib()
    inputs = block0_inputs(dense, ids, [Q0, GATE0])
    spy = Spy(model)
    monkeypatch.setattr(Wanda, "spy", spy, raising=False)
    pruner = spied(Wanda)(0.5, stats="reference")
    sequential(model, ids, pruner, batch_size=pruner.batch_size, progress=False)
    for name in (Q0, GATE0):
        row, n = torch.zeros(inputs[name][0].shape[-1]), 0
        for x in inputs[name]:
            inp = x.reshape(-1, x.shape[-1]).t()
            row *= n / (n + 1)
            n += 1
            row += torch.norm(inp.type(torch.float32), p=2, dim=1) ** 2 / n
        assert torch.equal(spy.obs[name].sumsq, row)
        assert torch.equal(spy.obs[name].norm, torch.sqrt(row))


def test_sparsegpt_reference_hessian_is_the_reference_running_h_bit_for_bit(monkeypatch, dense):
    """IST-DASLab/sparsegpt ``SparseGPT.add_batch``, written out by hand, on block 0's dense inputs."""
    model, ids = copy.deepcopy(dense), calib()
    inputs = block0_inputs(dense, ids, [Q0, GATE0])
    spy = Spy(model)
    monkeypatch.setattr(SparseGPT, "spy", spy, raising=False)
    pruner = spied(SparseGPT)(0.5, stats="reference")
    sequential(model, ids, pruner, batch_size=pruner.batch_size, progress=False)
    for name in (Q0, GATE0):
        cols = inputs[name][0].shape[-1]
        H, n = torch.zeros(cols, cols), 0
        for x in inputs[name]:
            inp = x.reshape(-1, x.shape[-1]).t()
            H *= n / (n + 1)
            n += 1
            inp = math.sqrt(2 / n) * inp.float()
            H += inp.matmul(inp.t())
        assert torch.equal(spy.obs[name].gram, H) and torch.equal(spy.obs[name].hessian, H)


def test_reference_stats_choose_tied_n_m_scores_as_torch_topk():
    """An exact tie met in SmolLM2 (SparseGPT 4:8, layer 27): the default takes the lower position,
    stats="reference" what ``torch.topk(largest=False)`` takes, as the reference codes do."""
    s = torch.tensor([[0.4096, 0.4178, 0.1001, 0.0898, 0.0898, 6e-5, 0.006, 0.002]])
    by_position = lowest_n_of_m(s, 4, 8)
    assert by_position[0].tolist() == [False, False, False, True, False, True, True, True]
    topk = torch.zeros_like(by_position).scatter_(1, torch.topk(s, 4, dim=1, largest=False)[1], True)
    assert torch.equal(lowest_n_of_m(s, 4, 8, topk=True), topk)
    ones = InputSumSq()
    ones.sumsq = torch.ones(8, dtype=torch.float64)
    assert torch.equal(Wanda(0.5, "4:8", stats="reference").mask(s, [ones]), topk)
    assert torch.equal(Wanda(0.5, "4:8").mask(s, [ones]), by_position)
