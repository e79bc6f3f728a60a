"""Notebook 1's parameters (:class:`MpgParams`), each default declared here once: the notebook's parameters cell
says the same values (tested), a profile changes some of them, and :meth:`MpgParams.of` checks a run's values
before any model is loaded."""
from __future__ import annotations

import math
from dataclasses import fields, replace
from typing import Any

from pydantic import BaseModel, ConfigDict

from repro.assets.encoders import known_encoders
from repro.assets.glue import GLUE, PAPER_RECIPES, Recipe
from repro.assets.models import is_hub_id
from repro.engines.params import NotebookParams, Number
from repro.errors import ReproError, UnknownNameError, check_list, check_number


class PaperCalibration(BaseModel):
    """Section 3e: Table I's calibration-based scorers again at ``calib_nsamples`` windows (the paper: 64 of 512
    tokens) and Gradient-Head at ``grad_nsamples`` (the paper: 32)."""
    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    calib_nsamples: int
    grad_nsamples: int


class MpgParams(NotebookParams):
    """Notebook 1 (MP-G head pruning): the session's parameters with notebook 1's defaults, then what chooses
    its cells, section by section."""
    figures_dir: str = "../figures/01_mpg"
    data: str = "wikitext2:validation"
    seqlen: int = 1024
    max_windows: int | None = 32
    spread: bool = True  # the windows spread evenly over the whole split (and its dense number over every window)
    batch_size: int = 1
    calib_nsamples: int = 64
    grad_nsamples: int = 32
    calib_seqlen: int = 512
    # section 3e: Table I's calibration-based scorers again at the paper's calibration sizes (the claims read those
    # cells), where the profile shrank them; None: none
    paper_calib: PaperCalibration | None = None
    methods: list[str] = ["mpg", "mp", "wanda-head", "sparsegpt-head", "gradient-head", "hybrid", "magnitude-head",
                          "random"]
    sparsities: list[Number] = [0.125, 0.25, 0.5]
    z_values: list[Number] = [1.5, 2.0, 2.5]
    z_sparsities: list[Number] = [0.25, 0.5]
    tie_seeds: list[int] = [0, 1, 2]
    random_seeds: list[int] = [0, 1, 2, 3, 4]  # Table I: Random's draws
    calib_seeds: list[int | None] = [0, 1, 2]  # Table I: the calibration draws of every calibration-based scorer
    anatomy: bool = True  # section 3c: why collapsed cells collapse (sublayer RMS, single-head restores)
    anatomy_sample: list[int] = [8, 256]  # section 3c's diagnosis: windows, tokens each (spread over the split)
    remedy_methods: list[str] = ["wanda-head", "sparsegpt-head", "gradient-head", "mpg"]  # section 3d
    zeroshot_models: list[str] = ["smollm2-135m"]
    zeroshot_tasks: list[str] = ["sst2", "mrpc", "rte"]
    zeroshot_sparsities: list[Number] = [0.125, 0.25]
    zeroshot_limit: int | None = 100
    efficiency_models: list[str] = ["smollm2-135m"]
    efficiency_sparsities: list[Number] = [0.25, 0.5]
    efficiency_batches: list[int] = [1, 8]
    efficiency_seqlen: int = 512
    efficiency_repeats: int = 5
    vision_models: list[str] = []  # MHA image classifiers (section 9): fashion-vit, fashion-dinov2
    vision_n_calib: int = 256  # Fashion-MNIST *training* images for the calibration-based scorers
    vision_grad_nsamples: int = 256  # of them, the first n for Gradient-Head
    vision_n_eval: int = 2000  # the first n Fashion-MNIST test images (those notebook 3 evaluates on)
    vision_data: str = "fashion-mnist"  # or "imagenette[:/path]"
    mlm_models: list[str] = []  # section 9: masked LMs by pseudo-perplexity (the paper's RoBERTa rows; hub ids)
    mlm_seqlen: int = 128  # tokens per pseudo-perplexity window (between <s> and </s>)
    glue_encoder: str = "minilm-l6"  # section 6: the MHA text encoder fine-tuned, then pruned
    glue_tasks: list[str] = []  # sst2, mrpc, rte
    glue_k: int = 5  # folds over each validation set (no GLUE training split offline)
    glue_seeds: list[int] = [0]  # fine-tuning seeds
    glue_ablations: list[str] = []  # our controls run beside `methods` on every fold (mpg-norm: MP-G's ties by norm)
    glue_recipe: dict[str, Any] = {}  # changes to the paper's recipe (repro.assets.glue.Recipe fields)
    glue_n_calib: int = 64  # training-fold examples for the calibrated scorers
    glue_grad_nsamples: int = 16  # of them, the first n for Gradient-Head
    glue_random_seeds: list[int] = [0, 1, 2, 3, 4]  # Random's draws per fold

    def check(self) -> None:
        """Every value in range and every name known, before any model is loaded."""
        from repro.methods.heads import HEAD_METHODS

        for name in ("models", "zeroshot_models", "zeroshot_tasks", "efficiency_models", "vision_models", "mlm_models"):
            check_list(name, getattr(self, name))
        check_list("methods", self.methods, known=list(HEAD_METHODS))
        check_list("remedy_methods", self.remedy_methods, known=list(HEAD_METHODS))
        check_list("glue_ablations", self.glue_ablations, known=HEAD_METHODS.names(ablation=True))
        for name in ("sparsities", "z_sparsities", "zeroshot_sparsities", "efficiency_sparsities"):
            check_list(name, getattr(self, name), "number", 0.0, 1.0)
        check_list("z_values", self.z_values, "number")
        check_list("efficiency_batches", self.efficiency_batches, "integer", 1)
        if len(check_list("anatomy_sample", self.anatomy_sample, "integer", 1)) != 2:
            raise ReproError(f"parameter anatomy_sample must be [windows, tokens per window], got {self.anatomy_sample!r}")
        for name in ("zeroshot_limit", "efficiency_seqlen", "efficiency_repeats"):
            check_number(name, getattr(self, name), True, 1, allow_none=True)
        check_number("mlm_seqlen", self.mlm_seqlen, True, 2)
        check_list("glue_tasks", self.glue_tasks, known=list(GLUE))
        for name in ("glue_seeds", "random_seeds", "glue_random_seeds", "tie_seeds"):
            check_list(name, getattr(self, name), "integer", 0)
        if self.calib_seeds != [None]:
            check_list("calib_seeds", self.calib_seeds, "integer", 0)
        check_number("glue_k", self.glue_k, True, 2)
        for name in ("glue_n_calib", "glue_grad_nsamples"):
            check_number(name, getattr(self, name), True, 1)
        if self.glue_tasks and self.glue_encoder not in known_encoders() and not is_hub_id(self.glue_encoder):
            raise UnknownNameError("glue_encoder (a known encoder or a hub id)", self.glue_encoder, known_encoders())
        unknown = set(self.glue_recipe) - {f.name for f in fields(Recipe)}
        if unknown:
            raise UnknownNameError("glue_recipe key", sorted(unknown)[0], [f.name for f in fields(Recipe)])
        for f in fields(Recipe):  # each given value of the recipe's type and positive (weight decay may be 0)
            if f.name in self.glue_recipe:
                v, integer, zero = self.glue_recipe[f.name], f.type in (int, "int"), f.name == "weight_decay"
                ok = isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and \
                    (not integer or v == int(v)) and (v >= 0 if zero else v > 0)
                if not ok:
                    raise ReproError(f"parameter glue_recipe[{f.name!r}] must be a {'whole ' if integer else ''}"
                                     f"number {'>= 0' if zero else '> 0'}, got {v!r}")
        self.check_among("zeroshot_models", "efficiency_models")
        if self.paper_calib is not None:
            for k, v in self.paper_calib.model_dump().items():
                check_number(f"paper_calib[{k!r}]", v, True, 1)
        from repro.evaluate.zeroshot import KNOWN_TASKS

        check_list("zeroshot_tasks", self.zeroshot_tasks, known=KNOWN_TASKS)
        check_number("calib_seqlen", self.calib_seqlen, True, 1)

    def mlm_changes(self) -> dict:
        """The masked LMs' setup: windows of ``mlm_seqlen`` text tokens, calibration windows no longer than them
        (the notebook's ``calib_seqlen`` of 512 would not fit RoBERTa's 512 positions with <s> and </s>), FP32; no
        shorter reference windows (``reference_seqlen``: the causal Table I's reconciliation)."""
        return {"seqlen": self.mlm_seqlen, "calib_seqlen": min(self.calib_seqlen, self.mlm_seqlen),
                "eval_dtype": "float32", "reference_seqlen": None}

    @property
    def glue_methods(self) -> list[str]:
        """What every Table III fold scores: the notebook's methods, then our controls."""
        return self.methods + [m for m in self.glue_ablations if m not in self.methods]

    def recipe(self, task: str) -> Recipe:
        """The paper's recipe for ``task`` with the profile's changes (``glue_recipe``)."""
        return replace(PAPER_RECIPES[task], **self.glue_recipe)
