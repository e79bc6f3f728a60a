"""The simulated hub (tools/simulated_hub.py): tiny random models under the papers' hub ids, in a Hugging Face
cache that ``HF_HUB_OFFLINE=1`` loads from: every id through the Auto classes, the env-var route in a fresh
process, byte-identical rewrites, and what ``repro.assets.models`` makes of them."""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from conftest import ROOT, load_tool

sim = load_tool("simulated_hub")
IDS = list(sim.MODELS)
BOS_STYLES = {name for name, t in sim.TOKENIZERS.items() if t["bos"]}
GQA = {"meta-llama/Meta-Llama-3-8B", "mistralai/Mistral-7B-v0.1", "meta-llama/Llama-3.1-8B-Instruct",
       "Qwen/Qwen2.5-0.5B", "HuggingFaceTB/SmolLM2-360M"}
# the real checkpoints' families, written out (not read from the table under test)
REAL = {"facebook/opt-6.7b": ("opt", "OPTForCausalLM"), "meta-llama/Meta-Llama-3-8B": ("llama", "LlamaForCausalLM"),
        "mistralai/Mistral-7B-v0.1": ("mistral", "MistralForCausalLM"),
        "meta-llama/Llama-3.1-8B-Instruct": ("llama", "LlamaForCausalLM"),
        "openai-community/gpt2": ("gpt2", "GPT2LMHeadModel"), "facebook/opt-125m": ("opt", "OPTForCausalLM"),
        "facebook/opt-350m": ("opt", "OPTForCausalLM"), "EleutherAI/pythia-160m": ("gpt_neox", "GPTNeoXForCausalLM"),
        "EleutherAI/pythia-410m": ("gpt_neox", "GPTNeoXForCausalLM"), "Qwen/Qwen2.5-0.5B": ("qwen2", "Qwen2ForCausalLM"),
        "HuggingFaceTB/SmolLM2-360M": ("llama", "LlamaForCausalLM"),
        "FacebookAI/roberta-base": ("roberta", "RobertaForMaskedLM"),
        "FacebookAI/roberta-large": ("roberta", "RobertaForMaskedLM"),
        "google/vit-base-patch16-224": ("vit", "ViTForImageClassification"),
        "facebook/deit-tiny-patch16-224": ("vit", "ViTForImageClassification"),
        "microsoft/swin-tiny-patch4-window7-224": ("swin", "SwinForImageClassification")}
HF_VARS = ("HF_HOME", "HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE",
           "TRANSFORMERS_CACHE", "XDG_CACHE_HOME")


def _files(snapshot: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(snapshot.iterdir())}


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    """The whole simulated hub, written once: HF_HOME is ``home``, its hub cache ``home/hub``."""
    home = tmp_path_factory.mktemp("hf-home")
    start = time.perf_counter()
    written = sim.write(home / "hub")
    return SimpleNamespace(home=home, cache=home / "hub", written=written, seconds=time.perf_counter() - start)


@pytest.fixture
def offline(hub, monkeypatch):
    """This process offline with its hub cache at the simulated hub. huggingface_hub reads HF_HUB_OFFLINE and
    HF_HUB_CACHE into ``constants`` at import (transformers consults those at call time), so both are set."""
    import huggingface_hub.constants as constants

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(hub.home))
    monkeypatch.setenv("HF_HUB_CACHE", str(hub.cache))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(hub.cache))
    return hub


def test_the_table_is_the_papers_models():
    assert set(IDS) == set(REAL)
    for hub_id, (model_type, cls) in REAL.items():
        assert (sim.MODELS[hub_id].model_type, sim.MODELS[hub_id].cls) == (model_type, cls), hub_id


def test_the_cache_layout_is_the_hubs(hub):
    from huggingface_hub import scan_cache_dir, try_to_load_from_cache

    assert set(hub.written) == set(IDS)
    info = scan_cache_dir(hub.cache)
    assert not info.warnings, info.warnings
    repos = {r.repo_id: r for r in info.repos}
    assert set(repos) == set(IDS) and {r.repo_type for r in repos.values()} == {"model"}
    for hub_id, snapshot in hub.written.items():
        folder = sim.repo_folder(hub.cache, hub_id)
        commit = (folder / "refs" / "main").read_text()
        assert snapshot == folder / "snapshots" / commit and len(commit) == 40
        assert [r.commit_hash for r in repos[hub_id].revisions] == [commit]
        assert Path(try_to_load_from_cache(hub_id, "config.json", cache_dir=hub.cache)) == snapshot / "config.json"
        assert (snapshot / "model.safetensors").is_symlink()  # into blobs/, as the hub cache keeps files
        marker = json.loads((snapshot / sim.MARKER).read_text())
        assert marker["simulated"] is True and marker["note"] == sim.NOTE and marker["id"] == hub_id
    total = sum(sim.folder_size(sim.repo_folder(hub.cache, i)) for i in IDS)
    assert total < 20e6, f"the simulated hub grew to {total / 1e6:.1f} MB"
    assert hub.seconds < 60, f"writing the simulated hub took {hub.seconds:.0f} s"


@pytest.mark.parametrize("hub_id", IDS)
def test_every_id_loads_offline_and_runs(offline, hub_id):
    from transformers import (
        AutoConfig,
        AutoImageProcessor,
        AutoModelForCausalLM,
        AutoModelForImageClassification,
        AutoModelForMaskedLM,
        AutoTokenizer,
    )

    from repro.arch import adapter

    spec, where = sim.MODELS[hub_id], {"cache_dir": offline.cache}
    model_type, cls = REAL[hub_id]
    config = AutoConfig.from_pretrained(hub_id, **where)
    assert config.model_type == model_type and config.architectures == [cls]
    auto = {"causal-lm": AutoModelForCausalLM, "masked-lm": AutoModelForMaskedLM,
            "image-classification": AutoModelForImageClassification}[spec.task]
    model = auto.from_pretrained(hub_id, **where).eval()
    assert type(model).__name__ == cls
    if hub_id in GQA:
        assert config.num_key_value_heads < config.num_attention_heads
    if spec.task == "image-classification":
        processor = AutoImageProcessor.from_pretrained(hub_id, **where)
        image = (np.random.default_rng(0).random((240, 300, 3)) * 255).astype(np.uint8)
        pixels = processor(images=image, return_tensors="pt")["pixel_values"]
        assert tuple(pixels.shape) == (1, 3, 224, 224)
        with torch.no_grad():
            logits = model(pixel_values=pixels).logits
        assert tuple(logits.shape) == (1, 1000) and config.num_labels == 1000
    else:
        tok = AutoTokenizer.from_pretrained(hub_id, **where)
        text = "Pruning removes 12.5% of the heads; perplexity rises."
        enc = tok(text, return_tensors="pt")
        ids = enc["input_ids"][0].tolist()
        assert tok.decode(ids, skip_special_tokens=True) == text
        assert len(tok) <= config.vocab_size
        specials = set(tok.all_special_ids)
        if spec.tokenizer == "roberta":
            assert (ids[0], ids[-1]) == (tok.cls_token_id, tok.sep_token_id) == (0, 2)
            assert tok.mask_token == "<mask>" and tok.pad_token_id == config.pad_token_id == 1
        elif spec.tokenizer in BOS_STYLES:
            assert ids[0] == tok.bos_token_id == config.bos_token_id and not specials & set(ids[1:])
            if model_type == "opt":
                assert tok.bos_token == "</s>" and ids[0] == 2  # OPT's tokenizer starts with </s>
        else:
            assert not specials & set(ids), f"{hub_id}'s tokenizer adds no special token"
        with torch.no_grad():
            logits = model(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"]).logits
        assert tuple(logits.shape) == (1, len(ids), config.vocab_size)
    assert torch.isfinite(logits).all()
    a = adapter(model)
    # Swin: the adapter's layers are the blocks of every stage (config.num_hidden_layers counts stages)
    assert a.n_layers == (sum(config.depths) if model_type == "swin" else config.num_hidden_layers)
    for i in range(a.n_layers):
        a.attention(i), a.mlp(i)
    if model_type == "swin":
        assert a.heads_per_layer() == [h for d, h in zip(config.depths, config.num_heads) for _ in range(d)]


def test_roberta_loads_with_a_sequence_classification_head(offline):
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    for hub_id in ("FacebookAI/roberta-base", "FacebookAI/roberta-large"):
        model = AutoModelForSequenceClassification.from_pretrained(hub_id, num_labels=2, cache_dir=offline.cache)
        assert type(model).__name__ == "RobertaForSequenceClassification"
        tok = AutoTokenizer.from_pretrained(hub_id, cache_dir=offline.cache)
        enc = tok(["a good film", "a dull one"], ["it was fine", "it was not"], padding=True, return_tensors="pt")
        with torch.no_grad():
            assert tuple(model(**enc).logits.shape) == (2, 2)


def test_writes_are_byte_identical_across_processes(hub, tmp_path):
    """The CLI in a fresh process writes the same files (weights, tokenizers) and so the same commits; writing
    over a simulated model is allowed, over anything else refused."""
    again = tmp_path / "again"
    r = subprocess.run([sys.executable, str(ROOT / "tools/simulated_hub.py"), "--cache", str(again)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert all(hub_id in r.stdout for hub_id in IDS) and "random weights" in r.stdout
    for hub_id, snapshot in hub.written.items():
        other = sim.repo_folder(again, hub_id) / "snapshots" / snapshot.name
        assert other.is_dir(), f"{hub_id}: another commit hash in a second write"
        assert _files(other) == _files(snapshot), hub_id
    rewritten = sim.write(again, ["facebook/opt-125m"])["facebook/opt-125m"]
    assert rewritten == sim.repo_folder(again, "facebook/opt-125m") / "snapshots" / hub.written["facebook/opt-125m"].name
    real = sim.repo_folder(tmp_path / "real", "facebook/opt-125m") / "snapshots" / ("0" * 40)
    real.mkdir(parents=True)
    (real / "config.json").write_text("{}")
    with pytest.raises(FileExistsError, match="did not write"):
        sim.write(tmp_path / "real", ["facebook/opt-125m"])
    assert (real / "config.json").read_text() == "{}"
    with pytest.raises(KeyError, match="not simulated"):
        sim.write(tmp_path / "none", ["facebook/opt-1.3b"])


LOADER = """
import json, sys
import huggingface_hub.constants as c
from huggingface_hub import try_to_load_from_cache
from transformers import AutoModelForCausalLM, AutoModelForImageClassification, AutoTokenizer
import torch
lm = AutoModelForCausalLM.from_pretrained("facebook/opt-125m")
tok = AutoTokenizer.from_pretrained("facebook/opt-125m")
with torch.no_grad():
    lm(**tok("hello", return_tensors="pt"))
vit = AutoModelForImageClassification.from_pretrained("microsoft/swin-tiny-patch4-window7-224")
try:
    AutoModelForCausalLM.from_pretrained("facebook/opt-1.3b")
    missing = "loaded"
except OSError as e:
    missing = type(e).__name__
print(json.dumps({"cache": c.HF_HUB_CACHE, "offline": c.HF_HUB_OFFLINE, "lm": lm.config.model_type,
                  "config": try_to_load_from_cache("facebook/opt-125m", "config.json"), "vision": vit.config.model_type, "missing": missing}))
"""


@pytest.mark.parametrize("route", ["HF_HUB_CACHE", "HF_HOME"])
def test_the_env_var_route_in_a_fresh_process(hub, tmp_path, route):
    """No cache_dir: huggingface_hub finds the simulated hub from HF_HUB_CACHE, or from HF_HOME (its hub/), with
    HF_HUB_OFFLINE=1; an id the simulated hub lacks fails at once instead of reaching for the network."""
    env = {k: v for k, v in os.environ.items() if k not in HF_VARS}
    env |= {"HF_HUB_OFFLINE": "1", "HF_HOME": str(hub.home) if route == "HF_HOME" else str(tmp_path / "elsewhere")}
    if route == "HF_HUB_CACHE":
        env["HF_HUB_CACHE"] = str(hub.cache)
    start = time.perf_counter()
    r = subprocess.run([sys.executable, "-c", LOADER], capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    got = json.loads(r.stdout.strip().splitlines()[-1])
    assert got == {"cache": str(hub.cache), "offline": True, "lm": "opt", "vision": "swin", "missing": "OSError",
                   "config": str(hub.written["facebook/opt-125m"] / "config.json")}
    assert time.perf_counter() - start < 120  # no network retries


# --- repro.assets.models ------------------------------------------------------------------------------------

def test_repro_loads_a_simulated_snapshot_folder(offline):
    """What works today: the snapshot folder as a local model folder (identity "local:...")."""
    from repro.assets.models import load_model

    snapshot = offline.written["facebook/opt-125m"]
    loaded = load_model(str(snapshot))
    assert loaded.identity["model_type"] == "opt" and loaded.identity["source"].startswith("local:")
    assert loaded.tokenizer("hi")["input_ids"][0] == 2
    assert loaded.identity["weights_sha256"] is not None  # of the weights the snapshot links to


def test_repro_loads_a_hub_id_from_the_cache_when_only_huggingface_hub_is_offline(offline, monkeypatch):
    """load_model's hub-id path reads the simulated cache also when the HF_HUB_OFFLINE variable is absent but
    huggingface_hub is offline."""
    from repro.assets.models import load_model

    monkeypatch.delenv("HF_HUB_OFFLINE")
    loaded = load_model("meta-llama/Meta-Llama-3-8B")
    assert loaded.identity["source"] == "hub" and loaded.identity["model_type"] == "llama"
    assert type(loaded.model).__name__ == "LlamaForCausalLM"
    assert loaded.tokenizer("hi")["input_ids"][0] == loaded.model.config.bos_token_id


def test_repro_loads_a_causal_hub_id_offline(offline):
    from repro.assets.models import load_model

    loaded = load_model("facebook/opt-125m")
    assert loaded.identity["model_type"] == "opt" and loaded.identity["name"] == "facebook/opt-125m"
    assert loaded.identity["source"] == "hub-cache" and len(loaded.identity["revision"]) == 40
    assert loaded.identity["simulated"] == "simulated hub: random weights" and len(loaded.identity["weights_sha256"]) == 64


@pytest.mark.parametrize("how", ["load_model", "load_classifier"])
def test_repro_loads_an_encoder_hub_id_offline(offline, how):
    from repro.assets.encoders import load_classifier
    from repro.assets.models import load_model

    if how == "load_model":  # the masked LM of the pseudo-perplexity rows
        loaded = load_model("FacebookAI/roberta-base")
        assert loaded.task == "masked-lm" and type(loaded.model).__name__ == "RobertaForMaskedLM"
    else:
        loaded = load_classifier("FacebookAI/roberta-base", 2)
        assert loaded.identity["simulated"] and loaded.identity["name"] == "FacebookAI/roberta-base"
        assert loaded.model.config.num_labels == 2 and loaded.tokenizer("hi")["input_ids"][0] == 0  # <s> first
    assert loaded.identity["model_type"] == "roberta"
