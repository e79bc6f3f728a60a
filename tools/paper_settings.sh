#!/usr/bin/env bash
# Issue 63: the cells of each paper's headline comparisons at the paper's own settings, computed in the background
# across sessions (tens of core-hours on 2 cores), one stage after another, niced; each stage resumes from the records
# already written (`repro run` computes only what is missing). Commit results/ every 20-30 minutes.
#   nohup tools/paper_settings.sh > /tmp/paper_settings.log 2>&1 &
# or, so that editing the checkout never touches a running stage, from a worktree frozen at a commit:
#   git worktree add /tmp/bg HEAD && ln -s "$PWD/.venv" /tmp/bg/.venv
#   RESULTS="$PWD/results" nohup /tmp/bg/tools/paper_settings.sh > /tmp/paper_settings.log 2>&1 &
# Stage 1, notebook 1: Table I's calibrated scorers at 64 x 512 calibration tokens (Gradient-Head 32 x 512), 3 draws
#   (the cpu profile's paper_calib reads them: section 3e).
# Stage 2, notebook 2, high sparsity: Figure 4's 70-90% cells (and their S_max headrooms) on the 3 calibration draws
#   (about 64 cells, ~5 core-minutes each by the records' times: cheaper than stage 3 by ~x8, so it runs first).
# Then notebook 3's exploration ablation at c small enough that rewards, not pull counts, drive UCB's pulls (issue 67:
#   10 SmolLM2 searches, about 40 core-minutes by the ablation's records).
# Stage 3, notebook 2: Tables 1-2 at 50% with 128 x 2048 calibration tokens (the gamma search's 36-window subset),
#   first calibration draw, WikiText-2 and C4 (section 2b's paper_calib; the C4 sample's calibration half holds fewer
#   tokens than 128 x 2048: its windows overlap, and each record says by how much).
# Stage 4, notebook 3 (section 2b, `paper_search`): the language-model searches at 32 paired evaluations per step over a pool of 48, float32,
#   the 5 seeds: MAB-UCB, MAB-TS, budgeted greedy, greedy with memory; SmolLM2 heads 10% and MLP 5%, Gemma heads 10%.
set -u
cd "$(dirname "$0")/.."
export TOKENIZERS_PARALLELISM=false
export REPRO_DATA_DIR="${REPRO_DATA_DIR:-$(realpath ../shared/data 2>/dev/null)}"
# RESULTS: another results folder (e.g. the main checkout's, when this runs from a frozen worktree of it)
RUN="nice -n 10 .venv/bin/python -m repro run ${RESULTS:+--set results_dir=$RESULTS}"
JOBS="${JOBS:-2}"
# WAIT_PID: a run of an earlier copy of this script still computing; start once it has ended (stage 1 then computes only what that run left)
if [ -n "${WAIT_PID:-}" ]; then
  while kill -0 "$WAIT_PID" 2>/dev/null; do sleep 30; done
fi
stage() { echo "== $1 $(date -u +%FT%TZ)"; shift; "$@"; echo "== rc=$? $(date -u +%FT%TZ)"; }
stage "notebook 1, paper calibration" $RUN notebooks/01_mpg_head_pruning.py --jobs "$JOBS" \
  --set calib_nsamples=64 --set grad_nsamples=32 --set 'remedy_methods=[]'
stage "notebook 2, 70-90% on every draw" $RUN notebooks/02_ogas_unstructured.py --jobs "$JOBS" \
  --set 'curve_draws=[0.7, 0.8, 0.9]'
stage "notebook 3, exploration constants small enough for rewards to drive the pulls (issue 67)" \
  $RUN notebooks/03_bandit_pruning.py --jobs "$JOBS" \
  --set 'ucb_c_ablation={smollm2-135m: {head: [0.55, 0.2, 0.02], mlp: [0.4, 0.1, 0.01]}}'
stage "notebook 2, 128 x 2048 calibration" $RUN notebooks/02_ogas_unstructured.py --jobs "$JOBS" \
  --set 'paper_calib={calib_nsamples: 128, calib_seqlen: 2048, calib_seeds: [0]}'
stage "notebook 3, searches at 32 / 48 in float32 (section 2b's paper_search)" \
  $RUN notebooks/03_bandit_pruning.py --jobs "$JOBS" --set 'paper_search={budget: 32, pool_size: 48}'
