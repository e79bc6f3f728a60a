# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # OGAS: output-guided adaptive sparsity for unstructured pruning
#
# Reproduction of the OGAS paper (unstructured post-training pruning in which every output channel of
# every linear layer gets its own sparsity, from the energy and the peak-to-average ratio of its output
# activations) against magnitude, Wanda, RIA and SparseGPT, on the models this machine can run. Every
# number comes from a record in `results/` (`repro.experiments.ogas`), keyed by its full configuration;
# rerunning resumes, `recompute = True` computes every cell again. Tables go to `figures/02_ogas/` and
# the README.
#
# **What differs from the paper** (captions repeat what applies):
#
# | | paper | here (`cpu` profile) |
# |---|---|---|
# | models / settings | LLaMA-3.1-8B-Instruct (lambda 0.4, gamma searched), Mistral-7B-v0.1 (lambda 0.2, gamma 0.2) | SmolLM2-135M-Instruct with the LLaMA setting, Gemma-3-270m with the Mistral setting; both **4-bit GGUF** dequantized to fp32 |
# | calibration | 128 x 2048 tokens (WikiText-2 train for WikiText rows, C4 for C4 rows) | fewer, shorter windows (profile below); WikiText-2 **v1 tokenized** train; C4 = the calibration half of the 113 distinct documents of the only offline C4 sample |
# | evaluation | WikiText-2 test, C4 validation | WikiText-2 test (first windows); C4 = the **held-out half** of that sample (never seen in calibration) |
# | zero-shot | full task sets | first `zeroshot_limit` documents per task (lm-eval's own YAMLs) |
# | precision | fp16 GPU | pruning in fp32; evaluation `auto`: bf16 where the CPU runs it fast, else fp32 (captions say which) |

# %% tags=["parameters"]
profile = "cpu"
models = ["smollm2-135m", "gemma3-270m"]
ogas_setting = {"smollm2-135m": "llama", "gemma3-270m": "mistral"}  # the paper's two settings
model_settings = {}  # per model: any Setup field (max_windows, calib_nsamples, ...)
data = "wikitext2:test"
calib_data = "wikitext2-train"
c4_data = "c4-sample:eval"
c4_calib = "c4-sample:calib"
seqlen = 1024
max_windows = 16
batch_size = 1
eval_dtype = "auto"  # bfloat16 where this machine runs it fast (GPU, AVX512-BF16/AMX), else float32
device = None
calib_nsamples = 32
calib_seqlen = 512
sparsity = 0.5
methods = ["magnitude", "wanda", "ria", "sparsegpt", "ogas"]
nm_patterns = ["2:4", "4:8"]
nm_methods = ["magnitude", "wanda", "ria", "sparsegpt"]
nm_models = ["smollm2-135m", "gemma3-270m"]
c4_models = ["smollm2-135m", "gemma3-270m"]
ablation_models = ["smollm2-135m"]
curve_models = ["smollm2-135m"]
curve_sparsities = [0.3, 0.5, 0.7, 0.9]
s_max_headrooms = [0.05, 0.2]  # alternative S_max rules above 60% (default headroom 0.1)
exact_rounding_data = ["wikitext2", "c4-sample"]  # where the exact-target OGAS row is run
zeroshot_models = ["smollm2-135m", "gemma3-270m"]
zeroshot_tasks = ["arc_challenge", "boolq", "hellaswag", "winogrande", "arc_easy", "piqa"]
zeroshot_limit = 50
figure_layer = None  # "model.layers.N.mlp.down_proj"; None: the middle layer's down projection
recompute = False
results_dir = "../results"
figures_dir = "../figures/02_ogas"
readme = "../README.md"
update_readme = True

# %%
import json
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
import torch
from IPython.display import Markdown, display

from repro.assets.data import parse_spec
from repro.claims import claims_frame
from repro.experiments import ogas as O
from repro.experiments.base import Setup, check_keys
from repro.methods.unstructured import auto_s_max
from repro.methods.unstructured import ogas_setting as setting_params
from repro.structure.sparsity import prunable_linears
from repro.report import marked_table, replace_block, save_figure, save_table, to_markdown
from repro.store import Store

torch.manual_seed(0)
store = Store(results_dir, recompute=recompute)
figs = Path(figures_dir)
figs.mkdir(parents=True, exist_ok=True)
check_keys(model_settings, models, "model_settings model")


def experiments(name):
    s = check_keys(dict(model_settings.get(name, {})), Setup.keys(), f"{name} setting")
    base = Setup(data=data, seqlen=seqlen, max_windows=max_windows, batch_size=batch_size, eval_dtype=eval_dtype,
                 device=device, calib_data=calib_data, calib_nsamples=calib_nsamples,
                 calib_seqlen=calib_seqlen).replace(**s)
    wt = O.PruneExperiment(name, base, store)
    c4 = O.PruneExperiment(name, base.replace(data=c4_data, calib_data=c4_calib), store, loaded=wt.loaded)
    return {parse_spec(data)[0]: wt, parse_spec(c4_data)[0]: c4}


WT, C4 = parse_spec(data)[0], parse_spec(c4_data)[0]  # the frame's data names ("wikitext2", "c4-sample")
exact_data = [d for d in (WT, C4) if d in exact_rounding_data]
exps = {name: experiments(name) for name in models}
OGAS = {name: setting_params(ogas_setting[name]) for name in models}
for name, ex in exps.items():
    e = ex[WT]
    print(f"{name}: {e.loaded.identity.get('upstream')}; OGAS setting {ogas_setting[name]} {OGAS[name]}; "
          f"eval {e.data.label} / {ex['c4-sample'].data.label}, first {e.setup.max_windows} x {seqlen} tokens; "
          f"calibration {e.setup.calib_nsamples} x {calib_seqlen}")


def params_for(name, method, **extra):
    return {**(OGAS[name] if method == "ogas" else {}), **extra}


def down_projections(name):
    e = exps[name][WT]
    return [n for n in prunable_linears(e.model) if n.endswith(("down_proj", "fc2", "mlp.c_proj", "dense_4h_to_h"))]


# Figure 2's layer: the down projection of the middle block of the first model (or `figure_layer`)
fig_model = models[0]
fig_layer = figure_layer or down_projections(fig_model)[len(down_projections(fig_model)) // 2]


def main_cell(name, data_name, method, **params):
    """A cell at the main sparsity: WikiText-2 cells of the zero-shot models carry their zero-shot
    scores, and the first model's OGAS cell keeps Figure 2's per-channel arrays, so each pruned model
    is built once and every section reads the same record."""
    e = exps[name][data_name]
    extra = {}
    if data_name == WT and name in zeroshot_models and not params:
        extra.update(zeroshot_tasks=zeroshot_tasks, zeroshot_limit=zeroshot_limit)
    if data_name == WT and name == fig_model and method == "ogas" and not params:
        extra["keep_layers"] = (fig_layer,)
    return e.cell(method, sparsity, params=params_for(name, method, **params), **extra)


def caption(title, frame=None):
    parts = []
    for name, ex in exps.items():
        e = ex[WT]
        parts.append(f"{name} ({e.loaded.identity.get('quantisation')}, OGAS {ogas_setting[name]} setting)")
    cache = f" {store.cache_summary(frame.key)}." if frame is not None and len(frame) else ""
    e0 = next(iter(exps.values()))[WT]
    return (f"**{title}** Profile `{profile}`. Models: " + "; ".join(parts) + f". Calibration {e0.setup.calib_nsamples} "
            f"x {calib_seqlen} tokens ({calib_data} for WikiText-2 rows, {c4_calib} for C4 rows); perplexity on the "
            f"first {e0.setup.max_windows} x {seqlen} tokens of {data} / {c4_data}, {e0.setup.eval_dtype}.{cache}")

# %% [markdown]
# ## 1. The methods
#
# Every method prunes the linear layers inside the transformer blocks (Q, K, V, O, gate, up, down), one
# block at a time: the block's calibration inputs are those produced by the already-pruned blocks before
# it (`repro.calib.blocks`), as the reference implementations do. With $W \in \mathbb{R}^{C_{out} \times C_{in}}$
# and $X$ the layer's calibration inputs:
#
# - **Magnitude**: score $|W_{ij}|$, one threshold for the whole layer.
# - **Wanda**: $|W_{ij}|\,\lVert X_j\rVert_2$, the lowest $\lfloor s\,C_{in} \rfloor$ of each *row* removed.
# - **RIA**: $\bigl(\tfrac{|W_{ij}|}{\sum_i |W_{ij}|} + \tfrac{|W_{ij}|}{\sum_j |W_{ij}|}\bigr)\lVert X_j\rVert_2^{0.5}$, one threshold per layer (its reference default).
# - **SparseGPT**: optimal-brain-surgeon pruning with $H = \tfrac{2}{n}X^\top X$ (1% dampening), columns in blocks
#   of 128, mask by $w^2 / [H^{-1}]_{jj}^2$ from the inverse-Hessian Cholesky factor, remaining weights updated.
# - **OGAS**: from the layer's dense *outputs* $y$ over the $N \times T$ calibration tokens, channel energy
#   $E_i = \mathrm{RMS}_t(y_{\cdot i})$ and peak-to-average ratio $P_i = \frac{1}{N}\sum_k \max_t |y_{kti}| / (E_{ki} + 10^{-9})$;
#   importance $I_i = (1-\lambda)\,\widehat{\log(1+E)}_i + \lambda\,\widehat{\log(1+P)}_i$ (hats: min-max normalised);
#   channel sparsity
#   $$s_i = \mathrm{clamp}\bigl(S_{min} + \alpha (1 - I_i)^{\gamma},\ S_{min},\ S_{max}\bigr),$$
#   $\alpha$ by bisection so that $\overline{s} = s$ (`scipy.optimize.brentq`), $\gamma$ per layer by bounded
#   golden-section search on $(0.05, 1.1)$, tolerance 0.05 (`scipy.optimize.minimize_scalar(method="bounded")`:
#   golden-section steps with parabolic ones where they help) minimising
#   $\lVert Y - Y_{pruned}\rVert_F / \lVert Y \rVert_F$ on the first 36 calibration windows (all of them when
#   there are fewer; evaluated exactly through the Gram matrix $X^\top X$ of that subset) in the LLaMA setting,
#   or fixed at 0.2 in the Mistral setting; inside row $i$ the
#   $k_i = \lfloor C_{in} s_i \rfloor$ lowest Wanda scores go. $S_{min} = 0.01$, $S_{max} = 0.6$ at 50%.
#
# **Choices where the paper is silent.** (1) $S_{max}$ above a 60% target: we use
# $S_{max} = \max(0.6, \min(0.95, s + 0.1))$, the paper's own headroom at 50%; section 6 shows how the
# 70-90% points move with headroom 0.05 and 0.2. (2) The per-row floor leaves each layer slightly *under*
# the target, which flatters OGAS against methods at exactly 50%: the "OGAS (exact target)" row
# distributes the removed weights by largest remainder so the layer hits the target exactly. (3) OGAS's
# per-row sparsity does not define an N:M pattern, so OGAS has no 2:4 / 4:8 row.

# %% [markdown]
# ## 2. Tables 1-2: perplexity at 50%
#
# Each cell prunes a fresh copy of the model and evaluates it on the same windows as the dense row;
# brackets: 95% bootstrap intervals over windows. The last columns compare each method with Wanda
# *paired* on the same windows (ratio below 1: better than Wanda).

# %%
for name, ex in exps.items():
    for key, e in ex.items():
        if key == C4 and name not in c4_models:
            continue
        e.dense()
        for m in methods:
            main_cell(name, key, m)
        if key in exact_data:
            main_cell(name, key, "ogas", rounding="exact")
frame = O.prune_frame(store, [e for ex in exps.values() for e in ex.values()])
ROWS = ["dense", *methods, "ogas-exact"]


def ppl_table(frame, names, datas, patterns=("unstructured",), rows=ROWS, sp=sparsity):
    vals, cis, paired = {}, {}, {}
    for name in names:
        for d in datas:
            for pat in patterns:
                col = f"{name} {d}" + ("" if pat == "unstructured" else f" {pat}")
                for r in rows:
                    c = O.select(frame, name, d, r, sp, pat)
                    vals.setdefault(col, {})[O.LABELS[r]] = None if c is None else c.ppl
                    cis.setdefault(col, {})[O.LABELS[r]] = None if c is None else c.ci95
                    p = O.paired_to(frame, name, d, r, "wanda", sp, pat) if r not in ("dense", "wanda") else None
                    paired.setdefault(f"{col}: / Wanda", {})[O.LABELS[r]] = (
                        "—" if p is None else f"x{p.estimate:.3f} [{p.ci[0]:.3f}, {p.ci[1]:.3f}]")
    vals, cis, paired = pd.DataFrame(vals), pd.DataFrame(cis), pd.DataFrame(paired)
    ran = [c for c in vals if vals[c].notna().any()]  # e.g. C4 only for `c4_models`
    return vals[ran], cis[ran], paired[[f"{c}: / Wanda" for c in ran]]


vals, cis, paired = ppl_table(frame, models, [WT, C4])
table12 = marked_table(vals.astype(float), cis, skip_rows=["Dense"]).join(paired)
cap12 = caption(f"Tables 1-2. WikiText-2 test and C4 (held-out half) perplexity at {sparsity:.0%} unstructured "
                "sparsity, and each method's paired ratio to Wanda.", frame)
save_table(table12, figs / "table12_ppl", cap12, raw=vals)
display(Markdown(to_markdown(table12, cap12)))

# %% [markdown]
# ### Achieved sparsity and what the rounding is worth
#
# OGAS's paper rounding ($k_i = \lfloor C_{in} s_i\rfloor$ per row) removes slightly fewer weights than the
# target; the exact variant hits it. The ratio of the two, paired over windows, is what the rounding buys.

# %%
rows, worth = [], []
for name in models:
    for d in (WT, C4):
        for r in ROWS[1:]:
            c = O.select(frame, name, d, r)
            if c is not None:
                rows.append({"model": name, "data": d, "method": O.LABELS[r], "target": sparsity,
                             "achieved": round(c.achieved, 5), "prune seconds": round(c.prune_seconds, 1)})
        p = O.paired_to(frame, name, d, "ogas", "ogas-exact")
        if p is not None:
            worth.append({"model": name, "data": d, "OGAS paper rounding / exact target (ppl, paired)":
                          f"x{p.estimate:.4f} [{p.ci[0]:.4f}, {p.ci[1]:.4f}]", "windows better": f"{p.n_better}/{p.n}"})
achieved = pd.DataFrame(rows)
cap_a = caption("Achieved sparsity over all pruned linears and pruning time on this machine.", frame)
save_table(achieved, figs / "achieved_sparsity", cap_a)
display(Markdown(to_markdown(achieved, cap_a, index=False)))
worth = pd.DataFrame(worth)
cap_w = caption("What the paper's rounding is worth: OGAS as published (floor per row) over OGAS at the exact "
                "target; below 1 means the rounding flatters OGAS.", frame)
save_table(worth, figs / "rounding_worth", cap_w)
display(Markdown(to_markdown(worth, cap_w, index=False)))

# %% [markdown]
# ### N:M sparsity (2:4 and 4:8)
#
# In every group of $M$ consecutive input weights of a row, the $N$ lowest-scoring are removed (SparseGPT
# chooses them inside each 128-column block as it goes). OGAS is not defined for N:M (see section 1).

# %%
for name in nm_models:
    e = exps[name][WT]
    for pat in nm_patterns:
        for m in nm_methods:
            e.cell(m, None, pattern=pat)
frame = O.prune_frame(store, [e for ex in exps.values() for e in ex.values()])
nm_rows = ["dense", *nm_methods]
nm_vals, nm_cis, nm_paired = ppl_table(frame, nm_models, [WT], nm_patterns, nm_rows, sp=0.5)
table_nm = marked_table(nm_vals.astype(float), nm_cis, skip_rows=["Dense"])
cap_nm = caption("N:M sparsity: WikiText-2 test perplexity at 2:4 and 4:8 (50%).", frame)
save_table(table_nm, figs / "table_nm", cap_nm, raw=nm_vals)
display(Markdown(to_markdown(table_nm, cap_nm)))

# %% [markdown]
# ## 3. Tables 3-4: zero-shot accuracy at 50%
#
# lm-eval's own task YAMLs on the in-memory pruned model (`repro.evaluate.zeroshot`), zero-shot, first
# `zeroshot_limit` documents of each task; ARC from the test splits, the others from validation. The
# "vs Wanda" column is the mean accuracy difference, paired over the same documents.

# %%
zs_rows = []
for name in zeroshot_models:
    e = exps[name][WT]
    for r in ["dense", *methods]:
        if r == "dense":
            rec = e.run("prune-zeroshot", {**e.zeroshot_config(zeroshot_tasks, zeroshot_limit), "method": "dense"},
                        lambda: e.zeroshot(e.eval_model(), zeroshot_tasks, zeroshot_limit))
            res = rec["result"]
        else:
            res = main_cell(name, WT, r)["result"]["zeroshot"]
        zs_rows.append({"model": name, "method": r, "result": res})
zs = pd.DataFrame(zs_rows)
frame = O.prune_frame(store, [e for ex in exps.values() for e in ex.values()])
tables34 = []
for name in zeroshot_models:
    t = {}
    z = zs[zs.model == name].set_index("method")
    for r in z.index:
        tasks = z.at[r, "result"]["tasks"]
        row = {task: tasks[task]["metrics"]["acc"]["value"] for task in zeroshot_tasks}
        row["mean"] = round(float(np.mean(list(row.values()))), 3)
        if r not in ("dense", "wanda"):
            a = pd.Series({"zeroshot": z.at[r, "result"]})
            b = pd.Series({"zeroshot": z.at["wanda", "result"]})
            p = O.zeroshot_paired(a, b, zeroshot_tasks)
            row["vs Wanda (paired)"] = f"{p.estimate:+.3f} [{p.ci[0]:+.3f}, {p.ci[1]:+.3f}]"
        else:
            row["vs Wanda (paired)"] = "—"
        t[O.LABELS[r]] = row
    t = pd.DataFrame(t).T
    cap = (f"**Table {3 + zeroshot_models.index(name)}. Zero-shot accuracy, {name}, {sparsity:.0%} unstructured.** "
           f"lm-eval task YAMLs, first {zeroshot_limit} documents per task, {exps[name][WT].setup.eval_dtype}, profile `{profile}`; "
           "BoolQ passages lack the standard title prefix (local copy).")
    save_table(t, figs / f"table{3 + zeroshot_models.index(name)}_zeroshot_{name}", cap)
    display(Markdown(to_markdown(t.round(3), cap)))
    tables34.append((name, t, cap))

# %% [markdown]
# ## 4. Table 5: ablation
#
# Uniform per-row sparsity with Wanda scores (Wanda) against OGAS with energy only ($\lambda = 0$), peak
# ratio only ($\lambda = 1$), and both (the model's setting), all else equal.

# %%
rows = []
for name in ablation_models:
    e = exps[name][WT]
    for r in ("wanda", "ogas-energy", "ogas-papr", "ogas"):
        rec = main_cell(name, WT, r) if r in ("wanda", "ogas") else \
            e.cell(r, sparsity, params={"gamma": OGAS[name]["gamma"]})
        rows.append({"model": name, "variant": O.LABELS[r], "lambda": rec["config"]["params"].get("lam", "-"),
                     "ppl": rec["result"]["ppl"], "key": ("prune-ppl", rec["key"]), "nll": rec["result"]["window_nll"]})
ablation = pd.DataFrame(rows)
if len(ablation):
    from repro.evaluate.stats import paired_ratio

    w = ablation[ablation.variant == "Wanda"].set_index("model").nll
    ablation["vs Wanda (paired)"] = [f"x{(p := paired_ratio(n, w[m])).estimate:.3f} [{p.ci[0]:.3f}, {p.ci[1]:.3f}]"
                                     for m, n in zip(ablation.model, ablation.nll)]
    cap5 = caption(f"Table 5. Ablation at {sparsity:.0%} on WikiText-2 test (paper: LLaMA-3.1-8B 8.85 Wanda -> "
                   "8.16 energy-only / similar PAPR-only -> 7.99 OGAS).", ablation)
    shown5 = ablation.drop(columns=["key", "nll"]).round(3)
    save_table(shown5, figs / "table5_ablation", cap5)
    display(Markdown(to_markdown(shown5, cap5, index=False)))

# %% [markdown]
# ## 5. Figure 2: energy, peak ratio and the sparsity OGAS assigns
#
# One layer (the down projection of a middle layer): each point a channel, coloured by its sparsity.

# %%
for name, layer in [(fig_model, fig_layer)]:
    ch = main_cell(name, WT, "ogas")["result"]["channels"][layer]
    fig, ax = plt.subplots(figsize=(6, 4.5))
    sc = ax.scatter(ch["energy"], ch["peak_ratio"], c=ch["channel_sparsity"], cmap="viridis", s=8)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("output energy E_i (RMS)")
    ax.set_ylabel("peak-to-average ratio P_i")
    fig.colorbar(sc, label="channel sparsity s_i")
    ax.set_title(f"{name} {layer}: OGAS {ogas_setting[name]} setting, {sparsity:.0%} ({profile})", fontsize=9)
    save_figure(fig, figs / "fig2_energy_papr.png")
    plt.show()

# %% [markdown]
# ### The gamma each layer chose, and the spread of channel sparsity per layer type
#
# Red crosses: the golden-section search ended within its tolerance of a bound of $(0.05, 1.1)$.

# %%
frame = O.prune_frame(store, [e for ex in exps.values() for e in ex.values()])
for name in models:
    c = O.select(frame, name, WT, "ogas")
    if c is None or not any("gamma_evals" in v for v in c.extras.values()):
        continue  # a fixed-gamma setting (Mistral): nothing was searched
    ex = pd.DataFrame([{"layer": n, "gamma": v.get("gamma"), "at_bound": v.get("gamma_at_bound", False),
                        "type": n.rsplit(".", 1)[-1]} for n, v in c.extras.items()])
    q = pd.DataFrame([{"type": n.rsplit(".", 1)[-1], "quantile": k, "s": v}
                      for n, qs in c.channel_quantiles.items() for k, v in zip(O.QUANTILES, qs)])
    fig, axes = plt.subplots(1, 2, figsize=(13, 3.8))
    for t, g in ex.groupby("type"):
        axes[0].plot(range(len(g)), g.gamma, marker=".", label=t)
        b = g[g.at_bound]
        axes[0].scatter([list(g.index).index(i) for i in b.index], b.gamma, marker="x", color="red", zorder=3)
    axes[0].set_xlabel("block")
    axes[0].set_ylabel("gamma")
    axes[0].legend(fontsize=7, ncol=2)
    axes[0].set_title(f"{name}: gamma per layer ({ogas_setting[name]} setting)", fontsize=9)
    sns.boxplot(data=q[q["quantile"].between(0.05, 0.95)], x="type", y="s", ax=axes[1])
    axes[1].set_ylabel("channel sparsity (5-95% quantiles of each layer)")
    axes[1].tick_params(axis="x", rotation=30)
    axes[1].set_title(f"{name}: per-channel sparsity by layer type", fontsize=9)
    save_figure(fig, figs / f"gamma_and_channel_sparsity_{name}.png")
    plt.show()
    print(f"{name}: {int(ex.at_bound.sum())} of {len(ex)} layers ended the gamma search at a bound")

# %% [markdown]
# ## 6. Figure 4: perplexity from 30% to 90%
#
# All methods on WikiText-2 test. Above 60% the paper does not give $S_{max}$: dotted lines repeat OGAS
# with other headrooms $h$ in $S_{max} = \max(0.6, \min(0.95, s + h))$ (default $h = 0.1$) to show how much the
# high-sparsity points depend on that rule. Where another $h$ gives the same $S_{max}$ (at 90% every
# $h \geq 0.05$ hits the 0.95 cap) the pruning is identical, so that point is the default OGAS cell.

# %%
for name in curve_models:
    e = exps[name][WT]
    for sp in curve_sparsities:
        for m in methods:
            main_cell(name, WT, m) if sp == sparsity else e.cell(m, sp, params=params_for(name, m))
        for h in s_max_headrooms:
            if sp > 0.6 and auto_s_max(sp, h) != auto_s_max(sp):  # else identical to the default cell
                e.cell("ogas", sp, params=params_for(name, "ogas", s_max_headroom=h))
frame = O.prune_frame(store, [e for ex in exps.values() for e in ex.values()])
fig, axes = plt.subplots(1, len(curve_models), figsize=(6.5 * len(curve_models), 4.2), squeeze=False)
curve_rows = []
for ax, name in zip(axes[0], curve_models):
    dense = O.select(frame, name, WT, "dense").ppl
    for m in methods:
        ys = [c.ppl if (c := O.select(frame, name, WT, m, sp)) is not None else np.nan for sp in curve_sparsities]
        ax.plot(curve_sparsities, ys, marker="o", label=O.LABELS[m], lw=2.5 if m == "ogas" else 1.2)
        curve_rows += [{"model": name, "method": O.LABELS[m], "sparsity": sp, "ppl": y} for sp, y in
                       zip(curve_sparsities, ys)]
    for h in s_max_headrooms:
        hs = [sp for sp in curve_sparsities if sp > 0.6]
        ys = [c.ppl if (c := O.select(frame, name, WT, f"ogas-h{h:g}" if auto_s_max(sp, h) != auto_s_max(sp) else
                                      "ogas", sp)) is not None else np.nan for sp in hs]
        ax.plot(hs, ys, ls=":", marker=".", color="k", alpha=0.6, label=f"OGAS, S_max headroom {h}")
        curve_rows += [{"model": name, "method": f"OGAS headroom {h}", "sparsity": sp, "ppl": y} for sp, y in zip(hs, ys)]
    ax.axhline(dense, color="grey", lw=0.8, ls="--", label="dense")
    ax.set_yscale("log")
    ax.set_xlabel("sparsity")
    ax.set_ylabel("WikiText-2 test perplexity (log)")
    ax.set_title(f"{name} ({profile}, first {exps[name][WT].setup.max_windows} x {seqlen} tokens)",
                 fontsize=9)
    ax.legend(fontsize=7)
save_figure(fig, figs / "fig4_ppl_vs_sparsity.png")
plt.show()
curve = pd.DataFrame(curve_rows)
_ = save_table(curve.pivot_table(index="method", columns="sparsity", values="ppl"), figs / "fig4_ppl_vs_sparsity",
               caption("Figure 4 data: WikiText-2 test perplexity vs sparsity.", frame))

# %% [markdown]
# ## 7. Claims checked
#
# One rule for every verdict (`repro.claims.verdict`, as in notebook 1): *holds* when the whole 95% interval
# of the effect lies on the claimed side of the threshold, *does not hold* when it lies on the other side,
# *inconclusive* otherwise. Perplexity effects are ratios paired over the shared windows; the zero-shot effect
# is the mean accuracy difference paired over the shared documents; "flattest from 70% to 90%" compares
# $\log \mathrm{ppl}_{90} - \log \mathrm{ppl}_{70}$ of OGAS with each other method, paired over windows.

# %%
frame = O.prune_frame(store, [e for ex in exps.values() for e in ex.values()])
claims = O.ogas_claims(frame, models, sparsity, zeroshot_tasks if zeroshot_models else [], curve_models,
                       ablation_models, wt=WT)
claims = claims_frame(claims)
cap_claims = (f"**Claims checked (Paper 2).** Profile `{profile}`; models {', '.join(models)}; verdicts by one rule "
              "from paired 95% intervals.")
shown = claims[["claim", "setting", "measured", "verdict"]]
save_table(shown, figs / "claims", cap_claims, raw=claims)
display(Markdown(to_markdown(shown, cap_claims, index=False)))

# %% [markdown]
# ## 8. What the results say
#
# Generated from the records (no number typed by hand).

# %%
def n_verdicts(prefix):
    c = claims[claims.claim.str.startswith(prefix)]
    return ", ".join(f"{v}: {k}" for v, k in c.verdict.value_counts().items()) or "not run"


lines = [f"- **OGAS vs Wanda** at {sparsity:.0%}: {n_verdicts('OGAS below Wanda')}; **vs RIA**: {n_verdicts('OGAS below RIA')}; "
         f"**vs SparseGPT**: {n_verdicts('OGAS at or below SparseGPT')}.",
         f"- **Single signals between Wanda and OGAS**: {n_verdicts('Each single signal')}.",
         f"- **Zero-shot mean above Wanda**: {n_verdicts('OGAS zero-shot mean')}.",
         f"- **Flattest from 70% to 90%**: {n_verdicts('OGAS degrades least')}.",
         "- These are 135M/270M models from 4-bit weights with a few calibration windows; OGAS's signals come from "
         "output statistics of small layers, and its gain over Wanda in the paper (8.85 -> 7.99 on an 8B model) is "
         "a few percent, comparable to the window-to-window spread here, which is why paired intervals matter."]
display(Markdown("\n".join(lines)))

# %%
if update_readme and Path(readme).exists():
    replace_block(readme, "ogas-tables", to_markdown(table12, cap12))
    replace_block(readme, "ogas-claims", to_markdown(shown, cap_claims, index=False))
    print("README tables updated from", results_dir)
metrics = {"dense_ppl": {n: float(O.select(frame, n, WT, "dense").ppl) for n in models},
           "n_cells": int(len(frame)), "n_claims": int(len(claims)),
           "verdicts": claims.verdict.value_counts().to_dict()}
print(json.dumps(metrics))
