"""Notebook 2's "Try it" exercises: OGAS and its baselines on one real layer, live in float32, each answering in
seconds on 2 CPU cores. The layer's outputs come from the *dense* model on a few calibration windows (OGAS proper
reads the inputs that the already-pruned blocks before it produce: in the middle layer that moves the terms a
little, not the lesson). Each returns a :class:`repro.report.Table` with a reading generated from its numbers."""
from __future__ import annotations

import numpy as np
import pandas as pd
import torch

from repro.calib.blocks import OutputStats
from repro.methods.ogas_terms import normalised_terms, reallocation
from repro.methods.unstructured import auto_s_max, channel_sparsity, get_pruner
from repro.papers.ogas.params import OgasParams
from repro.report import Table, committed_csv
from repro.structure.sparsity import prunable_linear

COMMITTED = OgasParams.model_fields["figures_dir"].default  # the cpu profile's tables, relative to notebooks/


def layer_io(exp, layer: str, nsamples: int = 4) -> tuple[torch.Tensor, torch.Tensor]:
    """The inputs ``X [windows, T, C_in]`` and outputs ``Y [windows, T, C_out]`` of the linear ``layer`` of
    ``exp``'s dense model (float32) on the first ``nsamples`` windows of its calibration draw."""
    model, module = exp.model, prunable_linear(exp.model, layer)
    windows = exp.calibration().windows[:nsamples]
    seen = []
    hook = module.register_forward_hook(lambda m, i, o: seen.append((i[0].detach().float(), o.detach().float())))
    try:
        with torch.no_grad():
            for w in windows:
                model(w.unsqueeze(0))
    finally:
        hook.remove()
    return torch.cat([x for x, _ in seen]), torch.cat([y for _, y in seen])


def energy_and_peak(y: torch.Tensor) -> tuple[np.ndarray, np.ndarray]:
    """OGAS's terms per output channel from its outputs ``y [windows, T, C_out]``: the energy ``E_i`` (RMS over
    every token) and the peak ratio ``P_i`` (mean over windows of ``max_t |y| / RMS`` within the window), as
    the method's own observer (:class:`repro.calib.blocks.OutputStats`) computes them."""
    stats = OutputStats()
    stats.add(stats.measure(None, y, 0))
    return stats.rms.numpy(), stats.peak_ratio.numpy()


def gamma_spread(exp, layer: str, lam: float = 0.4, gammas=(0.05, 0.2, 0.5, 1.1, 2.0), target: float = 0.5,
                 nsamples: int = 4) -> Table:
    """OGAS's per-output-channel sparsities on ``layer`` at each gamma (importance ``I = (1 - lam) x + lam y``
    from the dense outputs; alpha solved so that the mean is ``target``): their spread, and the share of channels
    at ``S_min`` or ``S_max``. ``.raw``: every channel's sparsity per gamma (for a plot)."""
    _, y = layer_io(exp, layer, nsamples)
    x_term, y_term = normalised_terms(*energy_and_peak(y))
    importance = (1 - lam) * x_term + lam * y_term
    s_min, s_max = 0.01, auto_s_max(target)
    rows, raw = [], {}
    for g in gammas:
        s, _, _ = channel_sparsity(importance, g, target, s_min, s_max)
        raw[g] = np.sort(s)
        r = reallocation(s, target)
        rows.append({"gamma": g, "mean": r["mean"], "min": r["min"], "5%": r["q05"], "95%": r["q95"], "max": r["max"],
                     "sd": r["std"], "at S_min": float(np.mean(s <= s_min + 1e-9)),
                     "at S_max": float(np.mean(s >= s_max - 1e-9))})
    t = pd.DataFrame(rows).round(3)
    lo, hi = t.iloc[0], t.iloc[-1]
    wider = "widens" if hi["95%"] - hi["5%"] > lo["95%"] - lo["5%"] else "narrows"
    reading = (f"At lambda = {lam:g}, the channels' sparsities (mean {target:.0%} by construction) run from "
               f"{lo['5%']:.2f} to {lo['95%']:.2f} (5% to 95%) at gamma = {lo.gamma:g} and from {hi['5%']:.2f} to "
               f"{hi['95%']:.2f} at gamma = {hi.gamma:g}: a larger gamma {wider} the spread. (1 - I)^gamma with a "
               "large gamma pushes every channel but the least important towards 0, so alpha must grow and the few "
               f"least important channels hit S_max = {s_max:g} ({hi['at S_max']:.0%} of channels at gamma = "
               f"{hi.gamma:g}).")
    return Table(t, f"**Try it: OGAS's channel sparsities against gamma.** {exp.name}, `{layer}`, lambda = {lam:g}, "
                    f"target {target:.0%}; terms from the dense model's outputs on {nsamples} calibration windows of "
                    f"{exp.setup.calib_seqlen} tokens.", reading, raw=raw)


def plot_spread(table: Table):
    """Each gamma's channel sparsities, sorted: the curve a larger gamma bends."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.5, 3.2))
    for g, s in table.raw.items():
        ax.plot(np.linspace(0, 1, len(s)), s, label=f"gamma = {g:g}")
    ax.set(xlabel="output channels, sorted by sparsity (share)", ylabel="channel sparsity s_i")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def mask_overlap(exp, layer: str, sparsity: float = 0.5, methods=("magnitude", "wanda", "ria"),
                 nsamples: int = 4) -> Table:
    """The pruning masks of ``methods`` on the one ``layer`` at ``sparsity`` (the inputs' norms from the dense
    model's calibration windows): each pair's share of pruned weights in common (1: the same mask)."""
    x, y = layer_io(exp, layer, nsamples)
    w = prunable_linear(exp.model, layer).weight.detach().float()
    masks = {}
    for m in methods:
        pruner = get_pruner(m)(sparsity)
        obs = pruner.observers(layer, None)
        for o in obs:  # the observers a block pass would feed, fed the layer's inputs and outputs at once
            o.add(o.measure(x, y if o.needs_output else None, 0))
        masks[m] = pruner.mask(w, obs)
    rows = [{"pair": f"{a} / {b}", "share of pruned weights in common":
             float((masks[a] & masks[b]).sum() / max(int(masks[a].sum()), 1))}
            for i, a in enumerate(methods) for b in methods[i + 1:]]
    t = pd.DataFrame(rows).round(3)
    low = t.sort_values("share of pruned weights in common").iloc[0]
    reading = (f"At {sparsity:.0%} on `{layer}`, the least alike pair is {low.pair}: "
               f"{low['share of pruned weights in common']:.0%} of the weights one prunes the other prunes too. What "
               "the activation-aware scores change is which columns lose weights: an input channel with large norms "
               "keeps its small weights.")
    return Table(t, f"**Try it: how alike are the masks?** {exp.name}, `{layer}`, {sparsity:.0%} per output row; input "
                    f"norms from {nsamples} calibration windows.", reading)


def committed_gamma_spread(figures: str = COMMITTED) -> str:
    """Section 1a's reallocation table as committed: the 5-95% range of channel sparsity and the share within 0.01
    of the target at each gamma the worked layer records, and under the 1-99% clipped normalisation."""
    t = committed_csv(figures, "worked_reallocation.csv")
    if t is None:
        return f"(no committed tables under {figures})"
    plain = t[t.normalisation == "min-max"]
    rows = "; ".join(f"gamma = {r.gamma:g} ({r.role}): {r.q05:.3f}-{r.q95:.3f}, {r.within:.1%} within {0.01:g}"
                     for _, r in plain.iterrows())
    clipped = t[t.normalisation != "min-max"]
    tail = "" if clipped.empty else (
        f" With the 1-99% clipped normalisation instead of min-max the chosen gamma spreads them to "
        f"{clipped.q05.iloc[0]:.3f}-{clipped.q95.iloc[0]:.3f}: a few outlier channels set min-max's scale.")
    return ("Section 1a (profile `cpu`, `worked_reallocation.csv`; OGAS's own inputs on all the calibration windows): "
            f"the 5-95% range of the channel sparsities and the share of channels near the target, {rows}.{tail}")


def committed_overlap(figures: str = COMMITTED) -> str:
    """Section 1b's SparseGPT-against-Wanda table as committed (no committed table compares magnitude's mask)."""
    t = committed_csv(figures, "sparsegpt_vs_wanda.csv")
    if t is None:
        return f"(no committed tables under {figures})"
    v = dict(zip(t.quantity, t.value))
    wanda, sgpt = v["output error, Wanda's mask (no update)"], v["output error, SparseGPT (mask and updates)"]
    mask_only = v["output error, SparseGPT's mask without its updates"]
    return ("No committed table compares magnitude's mask with Wanda's; section 1b compares SparseGPT's with Wanda's "
            f"on this layer (profile `cpu`, `sparsegpt_vs_wanda.csv`): of the weights SparseGPT prunes, Wanda prunes "
            f"{v['weights SparseGPT prunes that Wanda prunes too']} too, yet the output error of Wanda's mask is "
            f"{wanda} against SparseGPT's {sgpt} ({mask_only} "
            "for SparseGPT's mask without its weight updates): masks that agree on most weights can differ in what "
            "they cost, since the weights they disagree on are those the input norms make large.")


def exercises(exp, layer: str):
    """Notebook 2's exercises on ``exp`` (Figure 2's model) and its ``layer``, their default runs the values section
    1d's cells start with (:class:`repro.papers.exercises.Exercises`)."""
    from repro.papers.exercises import Exercises

    return Exercises(exp, {"gamma_spread": gamma_spread, "mask_overlap": mask_overlap},
                     [("gamma_spread", {"layer": layer, "lam": 0.4, "gammas": [0.05, 0.2, 0.5, 1.1, 2.0]}),
                      ("mask_overlap", {"layer": layer, "sparsity": 0.5})])
