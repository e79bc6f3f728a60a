"""Paper 2's engine: unstructured / N:M pruning cells. A cell prunes a copy of the model block by
block on calibration windows (``repro.methods.unstructured``), then evaluates it (perplexity on
the setup's data; optionally lm-eval zero-shot), one record per cell. Tables and claims from these
records: ``repro.papers.ogas``.

WikiText-2 rows are calibrated on WikiText-2 train and evaluated on WikiText-2 test; C4 rows are
calibrated on the calibration half of the C4 sample and evaluated on its held-out half: two
:class:`PruneExperiment` objects sharing one loaded model, each with its own :class:`Setup`.
:class:`OgasGrid` holds both per model and computes the cells of each section of Paper 2's notebook.
"""
from __future__ import annotations

import copy

import numpy as np

from repro.arch import down_projection_names
from repro.assets import parse_dtype
from repro.engines import plan
from repro.engines.base import Experiment
from repro.errors import UnknownNameError
from repro.methods.ogas_terms import GAMMA_GRID, OGASTrace
from repro.methods.unstructured import get_pruner, parse_pattern, prune_model
from repro.structure.sparsity import zeros_sha256

QUANTILES = np.linspace(0, 1, 21)  # per-layer summary of OGAS's channel sparsities
DOWN_PROJECTIONS = down_projection_names()  # the MLP's output linear, per family (from the adapters)


def plain(v):
    """numpy arrays and scalars (in dicts, lists, tuples) as JSON numbers, booleans and lists."""
    if isinstance(v, dict):
        return {k: plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [plain(x) for x in v]
    return v.tolist() if isinstance(v, (np.ndarray, np.generic)) else v


class PruneExperiment(Experiment):
    """Unstructured / N:M pruning cells of one model under one setup (calibration + evaluation)."""

    def owns(self, config: dict) -> bool:
        """A cell of this model and setup whose calibration, where it read one, has this setup's size (windows and
        their length): Tables 1-2 at two calibration sizes are two experiments sharing the uncalibrated cells."""
        if not super().owns(config):
            return False
        calib = config.get("calibration")
        return not isinstance(calib, dict) or "nsamples" not in calib or (
            calib["nsamples"], calib.get("seqlen")) == (self.setup.calib_nsamples, self.setup.calib_seqlen)

    def prune_config(self, method: str, sparsity: float | None, pattern: str = "unstructured",
                     params: dict | None = None, calib_seed: int | None = None) -> dict:
        """The key fields of a pruned cell: the method, its parameters and (if it reads data) its calibration
        windows, the draw of ``calib_seed`` (default the setup's)."""
        pruner = get_pruner(method)(sparsity, pattern, **(params or {}))  # validates everything up front
        cfg = {"method": method, "sparsity": pruner.sparsity, "pattern": str(pruner.pattern),
               "params": {k: (list(v) if isinstance(v, tuple) else v) for k, v in pruner.params.items()}}
        if pruner.calibrated:
            cfg["calibration"] = self.calibration_source(seed=calib_seed)  # without drawing the windows
        return cfg

    def prune(self, method: str, sparsity: float | None, pattern: str = "unstructured", params: dict | None = None,
              calib_seed: int | None = None):
        """A pruned float32 copy of the model and its :class:`PruneReport` (calibrated on the draw of
        ``calib_seed``, default the setup's)."""
        model = copy.deepcopy(self.model)
        calib = self.calibration(seed=calib_seed).windows if get_pruner(method).calibrated else None
        report = prune_model(model, method, sparsity, calib, pattern=parse_pattern(pattern), progress=self.progress,
                             **(params or {}))
        return model, report

    @plan.cell
    def dense(self) -> dict:
        return (yield plan.Ask("prune-ppl", {**self.base_config(), "method": "dense"}, lambda: self.ppl(self.eval_model())))

    @plan.cell
    def dense_zeroshot(self, tasks: list[str], limit: int | None) -> dict:
        """The dense model's zero-shot record (the reference row of Tables 3-4)."""
        return (yield plan.Ask("prune-zeroshot", {**self.zeroshot_config(tasks, limit), "method": "dense"},
                               lambda: self.zeroshot(self.eval_model(), tasks, limit)))

    def down_projections(self) -> list[str]:
        """The MLP down projections of the model's blocks, block 0 first (Figure 2's layer choice),
        from the model card."""
        return [n for n in self.structure["linears"] if n.endswith(DOWN_PROJECTIONS)]

    @plan.cell
    def worked_layer(self, layer: str, method: str = "ogas", sparsity: float = 0.5, params: dict | None = None,
                     gamma_grid=GAMMA_GRID) -> dict:
        """Notebook 2's worked example: ``method`` (an OGAS method) prunes a copy of the model on the setup's
        calibration windows as :meth:`cell` does, while :class:`repro.methods.ogas_terms.OGASTrace` records
        the terms of ``layer`` (``result["trace"]``: E, P, x, y, I, s at several gammas, L(gamma) on
        ``gamma_grid`` and along the search, f(alpha)), recorded so that the notebook renders without loading
        the model; ``zeros_sha256`` is the pruned model's (equal to :meth:`cell`'s: the trace prunes
        nothing differently). No evaluation."""
        if layer not in self.structure["linears"]:
            raise UnknownNameError("prunable linear", layer, self.structure["linears"])
        pruner = OGASTrace.of(method, sparsity, layer, gamma_grid, params)  # refuses a method that is not OGAS
        cfg = {**self.base_config(), **self.prune_config(method, sparsity, "unstructured", params),
               "layer": layer, "gamma_grid": [float(g) for g in gamma_grid]}

        def compute():
            model = copy.deepcopy(self.model)
            pruner.bind(model)
            report = prune_model(model, pruner, sparsity, self.calibration().windows, progress=self.progress)
            extras = report.extras[layer]
            return {"trace": plain(extras["trace"]), "zeros_sha256": zeros_sha256(model),
                    "extras": plain({k: v for k, v in extras.items() if not isinstance(v, np.ndarray) and k != "trace"}),
                    "achieved": report.layers[layer], "overall": report.overall}
        return (yield plan.Ask("prune-worked", cfg, compute))

    @plan.cell
    def worked_sparsegpt(self, layer: str, sparsity: float = 0.5, params: dict | None = None) -> dict:
        """Notebook 2's worked baseline: SparseGPT prunes a copy of the model as :meth:`cell` does while
        :class:`repro.methods.sparsegpt_terms.SparseGPTTrace` records ``layer``'s terms (``result["trace"]``: the
        Hessian's diagonal, the first column block's OBS errors and updates, the mask against Wanda's on the same
        inputs and the output errors). No evaluation."""
        from repro.methods.sparsegpt_terms import SparseGPTTrace

        return (yield from self._worked("sparsegpt", SparseGPTTrace, layer, sparsity, params))

    @plan.cell
    def worked_ria(self, layer: str, sparsity: float = 0.5, params: dict | None = None) -> dict:
        """Notebook 2's worked RIA: RIA prunes a copy of the model as :meth:`cell` does while
        :class:`repro.methods.ria_terms.RIATrace` records ``layer``'s terms (``result["trace"]``: the relative
        importances, RIA's mask against Wanda's on the same inputs, one row's disagreements). No evaluation."""
        from repro.methods.ria_terms import RIATrace

        return (yield from self._worked("ria", RIATrace, layer, sparsity, params))

    def _worked(self, method: str, trace, layer: str, sparsity: float, params: dict | None):
        """The ``prune-worked`` record of ``method`` pruning a copy of the model with ``trace`` (a tracing subclass of
        the method's pruner) recording ``layer``."""
        if layer not in self.structure["linears"]:
            raise UnknownNameError("prunable linear", layer, self.structure["linears"])
        pruner = trace(sparsity, trace_layer=layer, **{**get_pruner(method).defaults, **(params or {})})
        cfg = {**self.base_config(), **self.prune_config(method, sparsity, "unstructured", params),
               "layer": layer, "trace": method}

        def compute():
            model = copy.deepcopy(self.model)
            pruner.bind(model)
            report = prune_model(model, pruner, sparsity, self.calibration().windows, progress=self.progress)
            return {"trace": plain(report.extras[layer]["trace"]), "zeros_sha256": zeros_sha256(model),
                    "achieved": report.layers[layer], "overall": report.overall}
        return (yield plan.Ask("prune-worked", cfg, compute))

    @plan.cell
    def channels(self, method: str, sparsity: float, layers: tuple[str, ...], params: dict | None = None) -> dict:
        """The per-channel OGAS arrays (energy, peak ratio, channel sparsity) of ``layers``, from the same pruning
        as :meth:`cell`'s (the setup's calibration draw), without an evaluation: Figure 2's quantities on more
        layers than the one the main cell keeps."""
        missing = [n for n in layers if n not in self.structure["linears"]]
        if missing:
            raise UnknownNameError("prunable linear", missing[0], self.structure["linears"])
        cfg = {**self.base_config(), **self.prune_config(method, sparsity, "unstructured", params),
               "layers": list(layers)}

        def compute():
            model, report = self.prune(method, sparsity, "unstructured", params)
            return {"channels": {n: {k: np.asarray(e[k]).tolist() for k in ("energy", "peak_ratio", "channel_sparsity")
                                     if k in e} for n, e in report.extras.items() if n in layers},
                    "zeros_sha256": zeros_sha256(model), "overall": report.overall}
        return (yield plan.Ask("prune-channels", cfg, compute))

    @plan.cell
    def cell(self, method: str, sparsity: float | None, pattern: str = "unstructured", params: dict | None = None,
             zeroshot_tasks: list[str] | None = None, zeroshot_limit: int | None = None,
             keep_layers: tuple[str, ...] = (), calib_seed: int | None = None) -> dict:
        """Prune, evaluate perplexity (and zero-shot tasks if given). ``keep_layers``: layer names
        whose per-channel OGAS arrays (energy, peak ratio, sparsity) the record keeps for figures;
        ``calib_seed``: another calibration draw than the setup's."""
        cfg = {**self.base_config(), **self.prune_config(method, sparsity, pattern, params, calib_seed)}
        if zeroshot_tasks:
            cfg["zeroshot"] = {"tasks": list(zeroshot_tasks), "limit": zeroshot_limit}
        if keep_layers:
            cfg["keep_layers"] = list(keep_layers)

        def compute():
            model, report = self.prune(method, sparsity, pattern, params, calib_seed)
            out = {"report": report.to_dict(), "zeros_sha256": zeros_sha256(model)}
            if get_pruner(method).calibrated:  # how much text the windows drew on: they overlap where it is short
                out["calibration_tokens"] = self.calibration_coverage(calib_seed)
            out["channels"] = {n: {k: np.asarray(e[k]).tolist() for k in ("energy", "peak_ratio", "channel_sparsity")
                                   if k in e} for n, e in report.extras.items() if n in keep_layers}
            out["channel_quantiles"] = {n: np.quantile(e["channel_sparsity"], QUANTILES).tolist()
                                        for n, e in report.extras.items() if "channel_sparsity" in e}
            model = model.to(parse_dtype(self.setup.eval_dtype))
            out.update(self.ppl(model))
            if zeroshot_tasks:
                out["zeroshot"] = self.zeroshot(model, zeroshot_tasks, zeroshot_limit)
            return out
        return (yield plan.Ask("prune-ppl", cfg, compute))


