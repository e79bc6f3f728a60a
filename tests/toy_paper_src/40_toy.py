# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#   repro:
#     module: toy_paper
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Paper 4 (a toy): Wanda against magnitude

# %% tags=["parameters"]
profile = "toy"
sample_label = ""
try_it = True
recompute = False
results_dir = "results"
read_results = None
figures_dir = "figures"
readme = "../README.md"
results_page = "../docs/results.md"
update_readme = False
models = ["tiny-llama"]
model_settings = {}
data = "wiki-sample"
seqlen = 32
max_windows = 24
batch_size = 4
eval_dtype = "auto"
device = None
calib_data = "wiki-sample"
calib_nsamples = 4
calib_seqlen = 32
methods = ["magnitude", "wanda"]
sparsity = 0.5

# %%
import toy_paper as P

from repro.notebooks import start

nb = start(globals())
grid = P.build(nb)
R = P.Report(nb, grid)

# %% [markdown]
# ## 1. One table, one claim
# Wanda scores a weight by $|W_{ij}| \cdot \lVert X_j \rVert_2$, magnitude by $|W_{ij}|$ alone.

# %%
frame = grid.table()
table, caption, reading = R.table(frame)
nb.show(table, "table1", caption, reading=reading)
nb.show_claims(R.claims(frame), "claims", "**Claims checked (toy).**")
