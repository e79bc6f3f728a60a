"""The Swin adapter (``repro.arch.families.Swin``) on tiny random Swins: the flat block sequence over the stages,
per-block heads and head dims, prefix reuse across the patch mergings, masks, and physical head removal with the
relative position bias table sliced with the heads.

A freshly built Swin has all-zero relative position bias tables (``SwinPreTrainedModel._init_weights``), which
would hide a wrong slice of them: :func:`swin` fills them with random values first."""
import copy

import numpy as np
import pytest
import torch
import transformers as T

from repro.arch import adapter
from repro.arch.base import LayerCall
from repro.assets.tiny import TINY
from repro.evaluate.prefix import UnitEvaluator, image_batches
from repro.methods.bandit import Unit
from repro.structure import Masks, load_pruned, remove_heads, save_pruned, zero_heads
from repro.structure.masks import group_range

from conftest import one_thread_context
from helpers import assert_same_pruned, build_tiny, channel_masks, inputs, output

one_thread = pytest.fixture(autouse=True, scope="module")(one_thread_context)

TABLE = "attention.relative_position_bias.relative_position_bias_table"


def randomise_tables(model, seed: int = 1):
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("relative_position_bias_table"):
                p.copy_(torch.randn(p.shape, generator=g))
    return model


def swin(**changes) -> torch.nn.Module:
    """tiny-swin (or its config with ``changes``), bias tables random."""
    if not changes:
        return randomise_tables(build_tiny("tiny-swin"))
    config = TINY["tiny-swin"][0]()
    for k, v in changes.items():
        setattr(config, k, v)
    config._attn_implementation = "sdpa"
    with torch.random.fork_rng():
        torch.manual_seed(0)
        model = TINY["tiny-swin"][1](config)
    return randomise_tables(model.eval())


def blocks(model) -> list:
    return [b for stage in model.base_model.encoder.layers for b in stage.blocks]


def capture(model, ad, pixels):
    """Every block's input and call arguments in a full forward (as the prefix evaluator records them), and
    the output."""
    hidden, calls = [None] * ad.n_layers, [None] * ad.n_layers

    def hook_for(i):
        def hook(module, args, kwargs):
            hidden[i], calls[i] = args[0], LayerCall(tuple(args[1:]), dict(kwargs))
        return hook

    handles = [layer.register_forward_pre_hook(hook_for(i), with_kwargs=True) for i, layer in enumerate(ad.layers)]
    try:
        with torch.no_grad():
            out = model(pixel_values=pixels)
    finally:
        for h in handles:
            h.remove()
    return hidden, calls, out


def head_masks(ad, heads) -> list[torch.Tensor]:
    masks = [torch.ones(n) for n in ad.heads_per_layer()]
    for layer, h in heads:
        masks[layer][h] = 0
    return masks


# ---- the flat block sequence ----------------------------------------------------------------------

def test_blocks_are_the_stages_blocks_in_order():
    m = build_tiny("tiny-swin")
    keys = list(m.state_dict())
    ad = adapter(m)
    assert type(ad).__name__ == "Swin"
    assert m.config.num_hidden_layers == 2 and ad.n_layers == sum(m.config.depths) == 4
    assert all(a is b for a, b in zip(ad.layers, blocks(m), strict=True))  # the model's own blocks, not copies
    assert list(m.state_dict()) == keys  # nothing registered on the model
    assert ad.heads_per_layer() == [2, 2, 4, 4]
    assert [ad.attention(i).head_dim for i in range(4)] == [8] * 4 and ad.head_dim == 8
    assert [ad.mlp(i).n_channels for i in range(4)] == [32, 32, 64, 64]
    assert list(ad.merges) == [1] and ad.merges[1] is m.swin.encoder.layers[0].downsample
    assert list(ad.linears(2)) == ["attention.q_proj", "attention.k_proj", "attention.v_proj", "attention.o_proj",
                                   "mlp.fc1", "mlp.fc2"]
    assert ad.extra_head_params(3) == [(m.swin.encoder.layers[1].blocks[1].attention.relative_position_bias,
                                        "relative_position_bias_table", 1)]


def test_head_dims_are_read_per_block():
    """Stages whose head dims differ (8, then 16): every block has its own; one model-wide head dim is refused."""
    m = swin(num_heads=[2, 2])
    ad = adapter(m)
    assert ad.heads_per_layer() == [2, 2, 2, 2]
    assert [ad.attention(i).head_dim for i in range(4)] == [8, 8, 16, 16]
    assert [ad.attention(i).site("q").matrix("q").shape for i in range(4)] == [(16, 16)] * 2 + [(32, 32)] * 2
    with pytest.raises(ValueError, match="differ in head dim"):
        ad.head_dim
    heads = [(0, 1), (2, 0), (3, 1)]
    removed = copy.deepcopy(m)
    remove_heads(adapter(removed), heads)
    with Masks(ad) as mk:
        mk.heads = head_masks(ad, heads)
        masked = output(m, inputs("tiny-swin"))
    assert adapter(removed).heads_per_layer() == [1, 2, 1, 1]
    assert_same_pruned(output(m, inputs("tiny-swin")), masked, removed=output(removed, inputs("tiny-swin")))


# ---- running a suffix --------------------------------------------------------------------------

@pytest.mark.parametrize("bare", [False, True])
def test_run_from_every_block_is_the_full_forward(bare):
    """From the input of any block (before, at and after the patch merging), the rest of the blocks and the head
    give the model's output: classifier logits, or a bare SwinModel's pooled output."""
    m = swin()
    if bare:
        m = m.swin
    ad = adapter(m)
    pixels = inputs("tiny-swin")["pixel_values"]
    hidden, calls, out = capture(m, ad, pixels)
    full = out.pooler_output if bare else out.logits
    assert calls[1].args == ((7, 7),) and calls[2].args == ((4, 4),)  # the merging halves the (padded) grid
    assert hidden[1].shape == (2, 49, 16) and hidden[2].shape == (2, 16, 32)
    with torch.no_grad():
        for start in range(ad.n_layers):
            torch.testing.assert_close(ad.run_from(start, hidden[start], calls), full, rtol=0, atol=1e-6)
        torch.testing.assert_close(ad.run_layers(0, 2, hidden[0], calls), hidden[2], rtol=0, atol=1e-6)


def test_logits_of_other_swin_heads_are_refused():
    m = T.SwinForMaskedImageModeling(TINY["tiny-swin"][0]())
    with pytest.raises(NotImplementedError, match="SwinForMaskedImageModeling"):
        adapter(m).logits_from(torch.zeros(1, 16, 32))


def test_prefix_damage_equals_full_forward():
    """tests/test_bandit.py's check for Swin: damages of heads and MLP groups of every block with prefix reuse
    equal a full forward's and the model's own loss under masks built from scratch."""
    model, g0 = swin(), 16
    g = torch.Generator().manual_seed(7)
    batches = image_batches(torch.randn(6, 1, 28, 28, generator=g), torch.randint(0, 10, (6,), generator=g), 3)
    ad = adapter(model)
    L = ad.n_layers
    committed = [Unit("mlp", L - 1, 0), Unit("head", 0, 0)]
    probe = [Unit(k, i, j) for i in range(L) for k, j in (("head", 1), ("mlp", 1))]
    got = {}
    for prefix in (True, False):
        with UnitEvaluator(model, batches, group_size=g0, prefix=prefix) as ev:
            ev.add(committed[0])
            ev.loss(0)  # the cache under the first unit; the second makes it stale from block 0
            ev.add(committed[1])
            got[prefix] = [ev.damage(u, [0, 1]) for u in probe]
            before = ev.budget.layer_forwards
            ev.loss(1, Unit("head", L - 1, 0))
            assert ev.budget.layer_forwards - before == (1 if prefix else L)

    def loss(batch, units) -> float:
        off: dict = {}
        for u in units:
            if u.kind == "mlp":
                off.setdefault(u.layer, []).extend(group_range(ad.mlp(u.layer).n_channels, g0, u.index))
        with Masks(ad) as mk, torch.no_grad():
            mk.heads = head_masks(ad, [(u.layer, u.index) for u in units if u.kind == "head"])
            mk.channels = channel_masks([ad.mlp(i).n_channels for i in range(L)], off)
            return float(model(**batch).loss)

    base = [loss(b, committed) for b in batches]
    ref = [np.mean([loss(b, committed + [u]) - base[i] for i, b in enumerate(batches)]) for u in probe]
    np.testing.assert_allclose(got[True], got[False], rtol=0, atol=1e-5)
    np.testing.assert_allclose(got[True], ref, rtol=0, atol=1e-5)
    assert np.abs(ref).max() > 1e-4, "the probed units must change the loss"
    assert len(set(np.round(ref, 7))) == len(ref), "different units, different damages"


# ---- masks and removal -----------------------------------------------------------------------------

def test_masking_a_head_is_zeroing_its_output_columns():
    """A masked head changes the logits, exactly as zeroing its o_proj input columns by hand does, and as
    Algorithm 1's zeroing (its Q rows and O columns)."""
    m = swin()
    ad, kw = adapter(m), inputs("tiny-swin")
    dense = output(m, kw)
    by_hand = copy.deepcopy(m)
    with torch.no_grad():
        blocks(by_hand)[2].attention.o_proj.weight[:, 8:16] = 0  # block 2 = stage 1's first block; head 1, dim 8
    zeroed = copy.deepcopy(m)
    zero_heads(adapter(zeroed), [(2, 1)])
    with Masks(ad) as mk:
        mk.set_head(2, 1, False)
        masked = output(m, kw)
    assert (masked - dense).abs().max() > 1e-3
    torch.testing.assert_close(masked, output(by_hand, kw), rtol=0, atol=1e-6)
    torch.testing.assert_close(masked, output(zeroed, kw), rtol=0, atol=1e-6)
    assert blocks(zeroed)[2].attention.q_proj.weight[8:16].abs().sum() == 0


def test_removal_equals_masking_and_slices_the_bias_tables():
    m = swin()
    ad, kw = adapter(m), inputs("tiny-swin")
    heads = [(0, 1), (1, 0), (1, 1), (2, 0), (2, 3), (3, 2)]  # block 1 loses every head: one zero head stays
    tables = [blocks(m)[i].get_parameter(TABLE).detach().clone() for i in range(4)]
    removed = copy.deepcopy(m)
    report = remove_heads(adapter(removed), heads)
    with Masks(ad) as mk:
        mk.heads = head_masks(ad, heads)
        masked = output(m, kw)
    adr = adapter(removed)
    assert adr.heads_per_layer() == [1, 1, 2, 3] and report[1]["mode"] == "empty"
    attn = [b.attention for b in blocks(removed)]
    assert [a.num_attention_heads for a in attn] == [1, 1, 2, 3]
    assert [a.q_proj.out_features for a in attn] == [8, 8, 16, 24]
    kept = {0: [0], 2: [1, 2], 3: [0, 1, 3]}
    for i, cols in kept.items():
        assert torch.equal(blocks(removed)[i].get_parameter(TABLE), tables[i][:, cols])
    assert blocks(removed)[1].get_parameter(TABLE).shape == (49, 1)
    assert not blocks(removed)[1].get_parameter(TABLE).any()  # the zero head's column
    assert_same_pruned(output(m, kw), masked, removed=output(removed, kw))
    torch.testing.assert_close(output(removed, kw), masked, rtol=1e-5, atol=1e-6)


def test_removal_with_an_unsliced_table_would_not_run():
    """The slice is needed: a removed head's column left in the table no longer fits the block's heads."""
    m = swin()
    removed = copy.deepcopy(m)
    remove_heads(adapter(removed), [(2, 0)])
    table = blocks(removed)[2].attention.relative_position_bias
    table.relative_position_bias_table = torch.nn.Parameter(blocks(m)[2].get_parameter(TABLE).detach().clone())
    with pytest.raises(RuntimeError):
        output(removed, inputs("tiny-swin"))


def test_save_and_load_a_pruned_swin(tmp_path):
    m = swin()
    kw = inputs("tiny-swin")
    remove_heads(adapter(m), [(0, 0), (2, 1), (3, 0), (3, 3)])
    save_pruned(m, tmp_path / "p")
    back = load_pruned(tmp_path / "p")
    assert adapter(back).heads_per_layer() == [1, 2, 3, 2]
    assert torch.equal(blocks(back)[3].get_parameter(TABLE), blocks(m)[3].get_parameter(TABLE))
    torch.testing.assert_close(output(back, kw), output(m, kw), rtol=0, atol=0)
