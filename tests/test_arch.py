"""Adapters on tiny random models of every family: geometry, masks == hand zeroing,
removal == masking, parameter arithmetic, save/load of pruned models."""
import copy

import pytest
import torch

from repro.arch import adapter
from repro.arch.base import features
from repro.errors import UnsupportedArchitectureError
from repro.structure import Masks, load_pruned, remove_channels, remove_heads, save_pruned, zero_channels, zero_heads

from helpers import TINY, assert_same_pruned, build_tiny, channel_masks, inputs, n_params, output

FAMILIES = sorted(TINY)

# Independent of repro.arch: where each family's O projection and MLP down projection live,
# and whether weights are stored transposed (GPT-2's Conv1D).
HAND = {
    "llama": ("model.layers.{i}.self_attn.o_proj", "model.layers.{i}.mlp.down_proj", False),
    "gemma3_text": ("model.layers.{i}.self_attn.o_proj", "model.layers.{i}.mlp.down_proj", False),
    "gpt2": ("transformer.h.{i}.attn.c_proj", "transformer.h.{i}.mlp.c_proj", True),
    "opt": ("model.decoder.layers.{i}.self_attn.out_proj", "model.decoder.layers.{i}.fc2", False),
    "gpt_neox": ("gpt_neox.layers.{i}.attention.dense", "gpt_neox.layers.{i}.mlp.dense_4h_to_h", False),
    "bert": ("bert.encoder.layer.{i}.attention.output.dense", "bert.encoder.layer.{i}.output.dense", False),
    "roberta": ("roberta.encoder.layer.{i}.attention.output.dense", "roberta.encoder.layer.{i}.output.dense", False),
    "vit": ("vit.layers.{i}.attention.o_proj", "vit.layers.{i}.mlp.fc2", False),
    "deit": ("deit.layers.{i}.attention.o_proj", "deit.layers.{i}.mlp.fc2", False),
    "dinov2": ("encoder.layer.{i}.attention.o_proj", "encoder.layer.{i}.mlp.fc2", False),
    "qwen2": ("model.layers.{i}.self_attn.o_proj", "model.layers.{i}.mlp.down_proj", False),
    "mistral": ("model.layers.{i}.self_attn.o_proj", "model.layers.{i}.mlp.down_proj", False),
    # block j of stage s (block i of the flat sequence: hand_path)
    "swin": ("swin.encoder.layers.{s}.blocks.{j}.attention.o_proj", "swin.encoder.layers.{s}.blocks.{j}.mlp.fc2", False),
}


def hand_path(model, template: str, i: int) -> str:
    """``template`` for block ``i``: Swin's flat block i is block j of stage s (``config.depths``)."""
    if model.config.model_type != "swin":
        return template.format(i=i)
    depths = model.config.depths
    s = next(k for k in range(len(depths)) if i < sum(depths[:k + 1]))
    return template.format(s=s, j=i - sum(depths[:s]))


def expected_geometry(c) -> list[tuple[int, int, int]]:
    """(heads, KV heads, head dim) of every block, from the config alone (Swin: per stage)."""
    if c.model_type == "swin":
        return [(h, h, c.embed_dim * 2 ** s // h) for s, (d, h) in enumerate(zip(c.depths, c.num_heads)) for _ in range(d)]
    h = c.num_attention_heads
    return [(h, getattr(c, "num_key_value_heads", None) or h, getattr(c, "head_dim", None) or c.hidden_size // h)
            ] * c.num_hidden_layers


def head_masks(ad, heads) -> list[torch.Tensor]:
    """Per-layer 0/1 head masks (layers may differ in heads) with ``heads`` [(layer, head), ...] off."""
    masks = [torch.ones(ad.attention(i).n_heads) for i in range(ad.n_layers)]
    for layer, h in heads:
        masks[layer][h] = 0
    return masks


def zero_input_columns(model, path: str, cols, transposed: bool) -> None:
    w = model.get_submodule(path).weight
    with torch.no_grad():
        if transposed:
            w[cols, :] = 0
        else:
            w[:, cols] = 0


def heads_for(ad):
    """Heads of layers 0, 1 (and 2): every head of layer 0 or 1 where it has at most 4 (a layer left
    without heads keeps one zero head on removal)."""
    n_layers = ad.n_layers
    heads = [(l, h) for l, h in [(0, 0), (0, 1), (1, 3), (1, 2), (1, 1), (1, 0)] if l < n_layers] + \
            ([(2, 2)] if n_layers > 2 else [])
    return [(l, h) for l, h in heads if h < ad.attention(l).n_heads]


@pytest.mark.parametrize("name", FAMILIES)
def test_geometry_matches_config(name):
    m = build_tiny(name)
    ad = adapter(m)
    expected = expected_geometry(m.config)
    assert ad.n_layers == len(expected)
    assert ad.heads_per_layer() == [h for h, _, _ in expected]
    for i in range(ad.n_layers):
        a = ad.attention(i)
        assert (a.n_heads, a.n_kv_heads, a.head_dim) == expected[i]
        for role in "qkvo":
            assert a.site(role).matrix(role).shape[0] == a.site(role).counts[role] * a.head_dim


@pytest.mark.parametrize("name", FAMILIES)
def test_mask_equals_hand_zeroing(name):
    """A masked head's / channel's output equals zeroing its O columns / down columns by hand."""
    m = build_tiny(name)
    ad = adapter(m)
    kw = inputs(name)
    L = ad.n_layers
    heads = heads_for(ad)
    chans = {0: [1, 5, 7], L - 1: list(range(10))}
    o_path, down_path, transposed = HAND[m.config.model_type]
    by_hand = copy.deepcopy(m)
    for l, h in heads:
        hd = expected_geometry(m.config)[l][2]
        zero_input_columns(by_hand, hand_path(m, o_path, l), list(range(h * hd, (h + 1) * hd)), transposed)
    for l, cs in chans.items():
        zero_input_columns(by_hand, hand_path(m, down_path, l), cs, transposed)
    expected = output(by_hand, kw)
    dense = output(m, kw)
    with Masks(ad) as mk:
        mk.heads = head_masks(ad, heads)
        mk.channels = [torch.tensor([0.0 if c in chans.get(i, []) else 1.0 for c in range(ad.mlp(i).n_channels)])
                       for i in range(L)]
        masked = output(m, kw)
        mk.heads = mk.channels = None
        unmasked = output(m, kw)
    assert not torch.allclose(expected, dense, atol=1e-6), "pruning should change the output"
    torch.testing.assert_close(masked, expected, rtol=0, atol=1e-6)
    torch.testing.assert_close(unmasked, dense, rtol=0, atol=0)
    assert output(m, kw).equal(dense), "hooks must be gone after the context"


@pytest.mark.parametrize("name", FAMILIES)
def test_algorithm1_zeroing_equals_mask_and_removal(name):
    m = build_tiny(name)
    kw = inputs(name)
    heads = heads_for(adapter(m))
    chans = {0: [0, 3], 1: [2]}
    zeroed = copy.deepcopy(m)
    zero_heads(adapter(zeroed), heads)
    zero_channels(adapter(zeroed), chans)
    removed = copy.deepcopy(m)
    report = remove_heads(adapter(removed), heads)
    remove_channels(adapter(removed), chans)
    ad = adapter(m)
    with Masks(ad) as mk:
        mk.heads = head_masks(ad, heads)
        mk.channels = [torch.tensor([0.0 if c in chans.get(i, []) else 1.0 for c in range(ad.mlp(i).n_channels)])
                       for i in range(ad.n_layers)]
        masked = output(m, kw)
    torch.testing.assert_close(output(zeroed, kw), masked, rtol=0, atol=1e-5)
    torch.testing.assert_close(output(removed, kw), masked, rtol=1e-4, atol=1e-5)
    # parameter arithmetic: each removed query head takes hd rows of Q and hd columns of O (+ q bias;
    # Swin: + its column of the relative position bias table); each removed KV head 2*hd rows (+ biases);
    # each removed channel its up rows and down column. d, hd: the block's width and head dim.
    c = m.config
    ad0, adr = adapter(m), adapter(removed)
    per_head_table = (2 * c.window_size - 1) ** 2 if c.model_type == "swin" else 0
    expect = n_params(m)
    for i in range(ad0.n_layers):
        a0, a1 = ad0.attention(i), adr.attention(i)
        d, hd = features(a0.out_site.module, "out"), expected_geometry(c)[i][2]
        q_bias = int(a0.site("q").module.bias is not None)
        kv_bias = int(a0.site("k").module.bias is not None)
        expect -= (a0.n_heads - a1.n_heads) * (hd * (2 * d + q_bias) + per_head_table)
        expect -= (a0.n_kv_heads - a1.n_kv_heads) * hd * 2 * (d + kv_bias)
        m0, m1 = ad0.mlp(i), adr.mlp(i)
        per_channel = sum(d + int(s.module.bias is not None) for s in m0.sites if s.side == "out") + d
        expect -= (m0.n_channels - m1.n_channels) * per_channel
    assert n_params(removed) == expect
    if ad0.attention(0).group_size == 1:  # MHA: survivors = heads minus pruned (one zero head if none survive)
        for i in range(ad0.n_layers):
            gone = sum(1 for l, _ in heads if l == i)
            assert adr.attention(i).n_heads == max(ad0.attention(i).n_heads - gone, 1)
    assert n_params(removed) < n_params(m)
    assert report  # some layer changed


@pytest.mark.parametrize("kind", ["heads", "channels"])
@pytest.mark.parametrize("name", ["tiny-llama", "tiny-gpt2", "tiny-neox", "tiny-opt", "tiny-qwen2", "tiny-bert",
                                  "tiny-vit", "tiny-swin"])
def test_mask_zeroing_removal_agree_relative_to_pruning_effect(name, kind):
    """Masked, zeroed (Algorithm 1) and removed outputs agree to within 1e-3 of the pruning's own
    effect max|dense - zeroed|, which must be clearly non-zero: an absolute tolerance alone
    would pass for pruning that changes nothing, or for a small but real mismatch."""
    m = build_tiny(name)
    kw = inputs(name)
    ad = adapter(m)
    L = ad.n_layers
    heads = heads_for(ad) if kind == "heads" else []
    chans = {0: [0, 3, 17], L - 1: list(range(0, 40, 3))} if kind == "channels" else {}
    zeroed, removed = copy.deepcopy(m), copy.deepcopy(m)
    zero_heads(adapter(zeroed), heads)
    zero_channels(adapter(zeroed), chans)
    remove_heads(adapter(removed), heads)
    remove_channels(adapter(removed), chans)
    with Masks(ad) as mk:
        mk.heads = head_masks(ad, heads)
        mk.channels = channel_masks([ad.mlp(i).n_channels for i in range(L)], chans)
        masked = output(m, kw)
    if kind == "heads":
        assert adapter(removed).heads_per_layer() != ad.heads_per_layer()
    else:
        assert [adapter(removed).mlp(i).n_channels for i in range(L)] != [ad.mlp(i).n_channels for i in range(L)]
    assert_same_pruned(output(m, kw), output(zeroed, kw), removed=output(removed, kw), masked=masked)


@pytest.mark.parametrize("name", ["tiny-llama", "tiny-gpt2", "tiny-neox", "tiny-bert", "tiny-vit", "tiny-swin"])
def test_save_and_load_pruned(tmp_path, name):
    m = build_tiny(name)
    kw = inputs(name)
    remove_heads(adapter(m), heads_for(adapter(m)))
    remove_channels(adapter(m), {0: [1, 2, 3]})
    save_pruned(m, tmp_path / "p")
    back = load_pruned(tmp_path / "p")
    assert adapter(back).heads_per_layer() == adapter(m).heads_per_layer()
    torch.testing.assert_close(output(back, kw), output(m, kw), rtol=0, atol=0)


def test_unsupported_architecture_is_a_clear_error():
    import transformers as T

    m = T.T5ForConditionalGeneration(T.T5Config(vocab_size=32, d_model=16, d_kv=4, d_ff=16, num_layers=1, num_heads=4))
    with pytest.raises(UnsupportedArchitectureError, match="no adapter for model_type 't5'"):
        adapter(m)
