"""Notebook 2's parameters (:class:`OgasParams`), each default declared here once: the notebook's parameters cell
says the same values (tested), a profile changes some of them, and :meth:`OgasParams.of` checks a run's values
before any model is loaded."""
from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from repro.engines.params import NotebookParams, Number
from repro.errors import ReproError, check_list, check_number


class PaperCalibration(BaseModel):
    """Section 2b: Tables 1-2 again at the paper's calibration, ``calib_nsamples`` windows of ``calib_seqlen`` tokens
    (the paper: 128 x 2048), on the draws ``calib_seeds``; the gamma search's subset is then the paper's 36."""
    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    calib_nsamples: int
    calib_seqlen: int
    calib_seeds: list[int] = [0]


class OgasParams(NotebookParams):
    """Notebook 2 (OGAS unstructured pruning): the session's parameters with notebook 2's defaults, then what
    chooses its cells, section by section."""
    figures_dir: str = "../figures/02_ogas"
    ogas_setting: dict[str, str] = {"smollm2-135m": "llama", "gemma3-270m": "mistral"}  # the paper's two settings
    data: str = "wikitext2:test"
    c4_data: str = "c4-sample:eval"
    c4_calib: str = "c4-sample:calib"
    seqlen: int = 1024
    max_windows: int | None = 16
    spread: bool = False  # True: the windows spread evenly over the whole split (and the dense number over all)
    reference_seqlen: int | None = None  # an earlier sample's shorter window length: the dense number also read with it
    calib_seeds: list[int | None] = [None]  # Tables 1-2: the calibration draws (None: the setup's own seed)
    control_draws: bool = False  # Table 5, the exact-rounding row and the gamma-rule rows on every draw too
    batch_size: int = 1
    calib_nsamples: int = 32
    calib_seqlen: int = 512
    sparsity: Number = 0.5
    methods: list[str] = ["magnitude", "wanda", "ria", "sparsegpt", "ogas"]  # compared in Tables 1-4, Figure 4
    nm_patterns: list[str] = ["2:4", "4:8"]
    nm_methods: list[str] = ["magnitude", "wanda", "ria", "sparsegpt"]
    nm_models: list[str] = ["smollm2-135m", "gemma3-270m"]
    c4_models: list[str] = ["smollm2-135m", "gemma3-270m"]
    ablation_models: list[str] = ["smollm2-135m"]
    curve_models: list[str] = ["smollm2-135m"]
    curve_sparsities: list[Number] = [0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9]  # Figure 4: 30-90% in steps of 10
    s_max_headrooms: list[Number] = [0.05, 0.2]  # alternative S_max rules above 60% (default headroom 0.1)
    curve_draws: list[Number] = []  # Figure 4's sparsities also run on every calibration draw (and S_max headroom)
    gamma_rule_models: list[str] = []  # OGAS also with the other setting's gamma rule, paired against it
    wide_gamma_bounds: list[Number] | None = [0.01, 4.0]  # beyond the paper: gamma searched on a wider interval
    exact_rounding_data: list[str] = ["wikitext2", "c4-sample"]  # where the exact-target OGAS row is run
    zeroshot_models: list[str] = ["smollm2-135m", "gemma3-270m"]
    zeroshot_tasks: list[str] = ["arc_challenge", "boolq", "hellaswag", "winogrande", "arc_easy", "piqa"]
    zeroshot_limit: int | None = 50
    # Figure 2's corners: every down projection ("all"), or those at these relative depths (0: the first block)
    figure2_depths: Literal["all"] | list[Number] = "all"
    figure_layer: str | None = None  # "model.layers.N.mlp.down_proj"; None: the middle layer's down projection
    paper_calib: PaperCalibration | None = None  # section 2b: Tables 1-2 again at the paper's calibration

    def check(self) -> None:
        """Every value in range and every name known, before any model is loaded."""
        from repro.methods.unstructured import OGAS_SETTINGS, PRUNERS

        for name in ("models", "c4_models", "nm_models", "ablation_models", "curve_models", "zeroshot_models",
                     "zeroshot_tasks", "nm_patterns", "exact_rounding_data", "gamma_rule_models"):
            check_list(name, getattr(self, name))
        for name in ("methods", "nm_methods"):
            check_list(name, getattr(self, name), known=list(PRUNERS))
        check_number("sparsity", self.sparsity, lo=0.0, hi=1.0)
        for name in ("curve_sparsities", "s_max_headrooms", "curve_draws"):
            check_list(name, getattr(self, name), "number", 0.0, 1.0)
        if self.figure2_depths != "all" and any(d > 1 for d in check_list("figure2_depths", self.figure2_depths,
                                                                          "number", 0.0)):
            raise ReproError(f"parameter figure2_depths must be relative depths in [0, 1], got {self.figure2_depths!r}")
        if set(self.curve_draws) - set(self.curve_sparsities):
            raise ReproError(f"parameter curve_draws must be among curve_sparsities {self.curve_sparsities!r}, got "
                             f"{self.curve_draws!r}")
        if self.paper_calib is not None:
            check_number("paper_calib.calib_nsamples", self.paper_calib.calib_nsamples, True, 1)
            check_number("paper_calib.calib_seqlen", self.paper_calib.calib_seqlen, True, 1)
            check_list("paper_calib.calib_seeds", self.paper_calib.calib_seeds, "integer", 0)
        check_number("zeroshot_limit", self.zeroshot_limit, True, 1, allow_none=True)
        self.check_among("c4_models", "nm_models", "ablation_models", "curve_models", "gamma_rule_models",
                         "zeroshot_models")
        from repro.assets.data import TEXT
        from repro.evaluate.zeroshot import KNOWN_TASKS

        check_list("zeroshot_tasks", self.zeroshot_tasks, known=KNOWN_TASKS)
        check_list("exact_rounding_data", self.exact_rounding_data, known=sorted(TEXT))  # a text's name
        if self.calib_seeds != [None]:
            check_list("calib_seeds", self.calib_seeds, "integer", 0)
        if self.wide_gamma_bounds:  # null or [] runs no wide search
            b = check_list("wide_gamma_bounds", self.wide_gamma_bounds, "number", 0.0)
            if len(b) != 2 or not 0 < b[0] < b[1]:
                raise ReproError(f"parameter wide_gamma_bounds must be [low, high] with 0 < low < high (or null: none), got "
                                 f"{self.wide_gamma_bounds!r}")
        missing = [m for m in self.models if m not in self.ogas_setting]
        if missing:
            raise ReproError(f"parameter ogas_setting names no setting for {', '.join(missing)} (one of "
                             f"{', '.join(OGAS_SETTINGS)} per model)")
