"""repro.evaluate.rescale: what masking units does to the rest of a sublayer whose output is normalised
before the residual add (Gemma 2/3), checked against the model itself."""
import torch

from repro.arch import adapter
from repro.assets.tiny import build_tiny
from repro.evaluate.rescale import layer_scales, out_inputs, remaining_rms, single_units
from repro.structure.masks import Masks


def _o_proj_output_rms(ad, ids, layer, units=()):
    """rms over hidden of the attention's o_proj output per token, with ``units`` (heads) masked."""
    got = []
    h = ad.attention(layer).out_site.module.register_forward_hook(lambda m, a, out: got.append(out.float()))
    with Masks(ad) as m, torch.no_grad():
        for u in units:
            m.set_unit("head", layer, u, False)
        ad.model(ids)
    h.remove()
    return got[0].pow(2).mean(-1).sqrt().flatten()


def test_remaining_rms_equals_the_masked_sublayer_output_and_the_post_norm_is_named_only_for_gemma():
    """Masking heads of the last layer (so its input is the dense one) changes its o_proj output's RMS by
    exactly the measured factor; Gemma 3 names a post-sublayer norm for both kinds, Llama none."""
    gemma = build_tiny("tiny-gemma3").eval()
    ad = adapter(gemma)
    ids = torch.randint(3, 200, (2, 16))
    last = ad.n_layers - 1
    z = out_inputs(ad, ids)
    dense = _o_proj_output_rms(ad, ids, last)
    for units in ([0], [0, 1]):
        masked = _o_proj_output_rms(ad, ids, last, units)
        want = float((masked / dense).mean())
        assert abs(remaining_rms(ad, z[("head", last)], "head", last, units) - want) < 1e-4
    assert remaining_rms(ad, z[("head", last)], "head", last, []) == 1.0
    n_heads = ad.attention(last).n_heads
    assert remaining_rms(ad, z[("head", last)], "head", last, range(n_heads)) < 1e-4  # all heads gone: nothing left
    assert set(ad.post_sublayer_norms(0)) == {"head", "mlp"}
    rows = single_units(ad, z, group_size=32)
    assert {r["kind"] for r in rows} == {"head", "mlp"} and all(r["post_norm"] for r in rows)
    assert all(0 < r["remaining"] for r in rows)
    llama = adapter(build_tiny("tiny-llama").eval())
    assert llama.post_sublayer_norms(0) == {}



def test_layer_scales_read_the_post_norm_gain_and_the_stream_from_the_model():
    """Gemma: the gain is rms(post-norm output) / rms(sublayer output), read from the model's own post-MLP
    norm (a bigger norm weight, a bigger gain); the stream is the hidden state entering the layer; Llama:
    gain 1 and the share is the sublayer output over the stream."""
    gemma = build_tiny("tiny-gemma3").eval()
    ad = adapter(gemma)
    ids = torch.randint(3, 200, (2, 16))
    last = ad.n_layers - 1
    got = {}
    norm = ad.post_sublayer_norms(last)["mlp"]
    hooks = [ad.mlp(last).out_site.module.register_forward_hook(lambda m, a, out: got.update(o=out)),
             norm.register_forward_hook(lambda m, a, out: got.update(r=out)),
             ad.layers[last].register_forward_pre_hook(lambda m, a, kw: got.update(s=a[0] if a else kw["hidden_states"]),
                                                       with_kwargs=True)]
    with torch.no_grad():
        gemma(ids)
    for h in hooks:
        h.remove()
    rms = {k: v.float().pow(2).mean(-1).sqrt() for k, v in got.items()}
    rows = {(r["kind"], r["layer"]): r for r in layer_scales(ad, ids)}
    row = rows[("mlp", last)]
    assert abs(row["gain"] - float((rms["r"] / rms["o"]).mean())) < 1e-4 and row["post_norm"]
    assert abs(row["share"] - float((rms["r"] / rms["s"]).mean())) < 1e-4
    assert abs(row["stream_rms"] - float(rms["s"].mean())) < 1e-4
    with torch.no_grad():
        norm.weight.add_(3.0)  # Gemma's norm multiplies by (1 + w): a larger weight, a larger gain
    after = {(r["kind"], r["layer"]): r["gain"] for r in layer_scales(ad, ids)}
    assert after[("mlp", last)] > row["gain"] * 1.5 and after[("head", last)] == rows[("head", last)]["gain"]
    llama = adapter(build_tiny("tiny-llama").eval())
    rows = layer_scales(llama, ids)
    assert all(r["gain"] == 1.0 and not r["post_norm"] for r in rows)
    assert all(r["residual_rms"] == r["sublayer_rms"] and r["stream_rms"] > 0 for r in rows)
