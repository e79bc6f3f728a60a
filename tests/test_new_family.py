"""Adding a model family the documented way (``repro.arch``'s docstring): one adapter class and one
tiny config. GPT-J, an architecture repro has no adapter for, is added by defining its adapter and
a ``tiny-gptj`` entry; the registry, the <bos> rule, the down-projection names and the structure
layer follow, and the family is gone again after its tests. Also pins what the built-in families
derive to (the adapters picked, the <bos> families, the down-projection names), as they were
before the families registered themselves."""
import copy
from contextlib import contextmanager

import pytest
import torch
import transformers as T

import repro.arch as arch
from repro.arch import REGISTRY, Separate, adapter, bos_families, down_projection_names, needs_bos
from repro.assets import load_model, tiny
from repro.errors import UnsupportedArchitectureError
from repro.structure import Masks, remove_channels, remove_heads
from repro.structure.sparsity import prunable_linears

from helpers import assert_same_pruned, channel_masks, head_mask, inputs, output

NAME = "tiny-gptj"


def gptj_config():
    return T.GPTJConfig(vocab_size=tiny.VOCAB, n_embd=64, n_layer=3, n_head=4, n_positions=512, rotary_dim=8,
                        bos_token_id=1, eos_token_id=2)


@contextmanager
def new_family():
    """The two additions of the documented way, undone on exit: the adapter (defining the class
    registers it) and the tiny model (a TINY entry; its name in BOS_TOKENIZER as it is bos_first)."""
    assert "gptj" not in REGISTRY and NAME not in tiny.TINY  # nothing left from another test

    class GPTJ(Separate):
        model_types = ("gptj",)
        bos_first = True  # not GPT-J's protocol: a family that needs <bos>, to see the rule follow the adapter
        attn, o = "attn", "out_proj"
        up, down = ("mlp.fc_in",), "mlp.fc_out"

        def head_modules(self):
            return [self.model.base_model.ln_f, self.model.lm_head]

    tiny.TINY[NAME] = (gptj_config, T.GPTJForCausalLM, "causal-lm")
    tiny.BOS_TOKENIZER.add(NAME)
    try:
        yield GPTJ
    finally:
        arch.unregister(GPTJ)
        del tiny.TINY[NAME]
        tiny.BOS_TOKENIZER.discard(NAME)


@pytest.fixture
def gptj():
    with new_family() as cls:
        yield cls


def test_adapter_finds_the_new_family(gptj):
    m = tiny.build_tiny(NAME)
    ad = adapter(m)
    assert type(ad) is gptj and REGISTRY["gptj"] is gptj
    assert (ad.n_layers, ad.attention(0).n_heads, ad.head_dim, ad.mlp(0).n_channels) == (3, 4, 16, 256)
    assert list(ad.linears(1)) == ["attn.k_proj", "attn.v_proj", "attn.q_proj", "attn.out_proj", "mlp.fc_in",
                                   "mlp.fc_out"]
    assert set(ad.linears(1)) == set(gptj.linear_paths())
    torch.testing.assert_close(ad.logits_from(torch.ones(1, 2, 64)), m.lm_head(m.transformer.ln_f(torch.ones(1, 2, 64))))


def test_bos_rule_and_down_names_derive_from_it(gptj):
    loaded = load_model(NAME)
    assert needs_bos(loaded.model.config) and "gptj" in bos_families()
    assert arch.bos_token(loaded.model.config, loaded.tokenizer) == 1
    assert loaded.tokenizer("ab")["input_ids"][0] == 1  # its tiny tokenizer adds <s> like the family's rule
    assert down_projection_names()[-1] == "mlp.fc_out"
    downs = [n for n in prunable_linears(loaded.model) if n.endswith(down_projection_names())]
    assert downs == [f"transformer.h.{i}.mlp.fc_out" for i in range(3)]


def test_structure_layer_works_on_it(gptj):
    """Masking equals zeroing the O columns / down columns by hand; removal equals masking."""
    m = tiny.build_tiny(NAME)
    ad, kw = adapter(m), inputs(NAME)
    heads, chans = [(0, 1), (1, 0), (1, 3), (2, 2)], {0: [1, 5, 7], 2: list(range(0, 60, 3))}
    by_hand = copy.deepcopy(m)
    with torch.no_grad():
        for l, h in heads:
            by_hand.transformer.h[l].attn.out_proj.weight[:, h * 16:(h + 1) * 16] = 0
        for l, cs in chans.items():
            by_hand.transformer.h[l].mlp.fc_out.weight[:, cs] = 0
    removed = copy.deepcopy(m)
    remove_heads(adapter(removed), heads)
    remove_channels(adapter(removed), chans)
    with Masks(ad) as mk:
        mk.heads = head_mask(3, 4, heads)
        mk.channels = channel_masks([ad.mlp(i).n_channels for i in range(3)], chans)
        masked = output(m, kw)
    assert adapter(removed).heads_per_layer() == [3, 2, 3]
    assert [adapter(removed).mlp(i).n_channels for i in range(3)] == [253, 256, 236]
    assert_same_pruned(output(m, kw), masked, by_hand=output(by_hand, kw), removed=output(removed, kw))


def test_a_model_type_taken_by_another_family_is_refused():
    with pytest.raises(ValueError, match="already adapted.*'llama': 'LlamaLike'"):
        class Again(Separate):
            model_types = ("llama", "not-a-type")
    assert REGISTRY["llama"].__name__ == "LlamaLike" and "not-a-type" not in REGISTRY


def test_the_family_is_gone_after_its_tests():
    m = T.GPTJForCausalLM(gptj_config())
    with new_family() as cls:
        assert type(adapter(m)) is cls and needs_bos(m.config) and "mlp.fc_out" in down_projection_names()
    assert "gptj" not in REGISTRY and "gptj" not in bos_families() and not needs_bos(m.config)
    assert "mlp.fc_out" not in down_projection_names()
    assert NAME not in tiny.TINY and NAME not in tiny.BOS_TOKENIZER
    with pytest.raises(UnsupportedArchitectureError, match="no adapter for model_type 'gptj'"):
        adapter(m)


# ---- the built-in families derive to what the hand-kept lists said ---------------------------

ADAPTERS = {"LlamaLike": ("llama", "mistral", "qwen2", "qwen3"), "Gemma": ("gemma3_text", "gemma2", "gemma"),
            "OPT": ("opt",), "ViTLike": ("vit", "deit", "dinov2"), "BertLike": ("bert", "roberta"),
            "GPT2": ("gpt2",), "GPTNeoX": ("gpt_neox",), "Swin": ("swin",)}
OLD_DOWN_PROJECTIONS = ("down_proj", "fc2", "mlp.c_proj", "dense_4h_to_h")  # repro.engines.prune's


def test_builtin_families_derive_as_before():
    assert {t: cls.__name__ for t, cls in REGISTRY.items()} == {t: a for a, ts in ADAPTERS.items() for t in ts}
    assert bos_families() == {"gemma", "gemma2", "gemma3_text"}  # the old BOS_FAMILIES ("gemma3" resolves to gemma3_text)
    assert needs_bos(T.Gemma3Config()) and not needs_bos(T.LlamaConfig()) and not needs_bos(T.T5Config())
    assert down_projection_names() == ("mlp.down_proj", "fc2", "mlp.fc2", "mlp.c_proj", "mlp.dense_4h_to_h")


@pytest.mark.parametrize("name", sorted(tiny.TINY))
def test_each_tiny_model_derives_as_before(name):
    m = tiny.build_tiny(name)
    ad, names = adapter(m), list(prunable_linears(m))
    assert set(ad.linears(0)) == set(type(ad).linear_paths())  # what down_projection_names() reads
    downs = [n for n in names if n.endswith(down_projection_names())]
    assert downs == [n for n in names if n.endswith(OLD_DOWN_PROJECTIONS)]
    qualified = {id(mod): n for n, mod in m.named_modules()}
    if downs:  # exactly the MLP output linears (BERT-likes: none, as before)
        assert downs == [qualified[id(ad.mlp(i).out_site.module)] for i in range(ad.n_layers)]
    assert (name in tiny.BOS_TOKENIZER) == type(ad).bos_first == needs_bos(m.config) == (name == "tiny-gemma3")
