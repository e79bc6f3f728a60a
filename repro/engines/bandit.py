"""Paper 3's engine: unit-selection cells (attention heads and/or 32-channel MLP groups chosen by
one selector of :mod:`repro.methods.bandit` and one seed), their masked evaluation, and physical
removal of a selection.

A language-model cell selects ``k`` units, then evaluates the model with those units masked:
perplexity on the setup's windows (paired with the dense model's, window by window) and, when
asked, LAMBADA through lm-eval (perplexity of the last word and last-word accuracy, paired per
document). The seed draws the calibration windows and drives the selector's randomness, as the
paper's seeds do. Selections and evaluations are separate records, so a selection is searched
once and can be evaluated on more data later. :class:`VisionBanditExperiment` runs the same
search on an image classifier. Tables and claims from these records: ``repro.papers.bandit``.
"""
from __future__ import annotations

import copy
import tempfile
from contextlib import contextmanager
from pathlib import Path

import torch

from repro.arch import adapter as get_adapter
from repro.assets import parse_dtype
from repro.calib import sample_windows
from repro.engines import plan
from repro.engines.base import Experiment, Setup
from repro.engines.images import Images
from repro.errors import ReproError
from repro.evaluate.ppl import tokenize
from repro.evaluate.prefix import UnitEvaluator, image_batches, lm_batches
from repro.evaluate.speed import count_params, with_prefill, zeroed_and_removed
from repro.methods.bandit import SELECTORS, Unit, candidates, check_kinds, select_units
from repro.methods.replay import replay_joins
from repro.store import PROTOCOL, Store
from repro.structure import save_pruned
from repro.structure.masks import KINDS, Masks, group_range, n_groups

LAMBADA = "lambada_openai"


def _search_dtype(search_dtype: str, setup: Setup) -> str:
    """The dtype the searches' losses are computed in: "float32" (default), or "eval" for the
    setup's evaluation dtype (bfloat16 where it is fast: about 3x quicker searches on an
    AVX512-BF16 CPU, with damages that differ from float32's by about 0.005 nats on average;
    ``benchmarks/results/bandit_search_dtype_smollm2-135m.json``). Taylor and Fisher always
    take their gradients in float32."""
    if search_dtype == "eval":
        return setup.eval_dtype
    if search_dtype not in ("float32", "bfloat16", "float16"):
        raise ReproError(f"search_dtype must be float32, bfloat16, float16 or eval, got {search_dtype!r}")
    return search_dtype


def units_for(structure, kinds, ratio: float, group_size: int) -> tuple[int, int]:
    """(k, number of candidates): ``k = round(ratio * candidates)``, at least 1; the effective
    ratio is ``k / candidates`` (integer unit counts). ``structure``: an adapter, or a model card's
    ``structure`` (heads and MLP channels per layer: counted without the model)."""
    if not 0 < ratio < 1:
        raise ReproError(f"ratio must be in (0, 1), got {ratio!r}")
    if isinstance(structure, dict):
        kinds = check_kinds(kinds)
        n = sum(("head" in kinds) * h + ("mlp" in kinds) * n_groups(c, group_size)
                for h, c in zip(structure["heads_per_layer"], structure["mlp_channels_per_layer"]))
    else:
        n = len(candidates(structure, kinds, group_size))
    return max(1, int(round(ratio * n))), n


def search_params(method: str, search: dict | None) -> dict | None:
    """The search parameters a selector takes: ``search`` (per-step budget, pool) for a sequential
    selector, None for a one-shot scorer (which takes none)."""
    return search if SELECTORS[method].sequential else None


def removal_parts(unit_ratios: dict) -> list[tuple[list[str], float]]:
    """``(kinds, ratio)`` of each unit type's largest ratio in ``{kind: ratios}`` (kinds sorted):
    the selections a removal cell takes its units from."""
    return [([k], max(rs)) for k, rs in sorted(unit_ratios.items())]


class BanditExperiment(Experiment):
    """Unit selection cells of one language model under one :class:`Setup`.

    ``calib_batch_size``: calibration windows per mini-batch (a paired evaluation averages the
    damage over ``batches_per_eval`` of them); ``setup.calib_nsamples`` windows of
    ``setup.calib_seqlen`` tokens are drawn per seed."""

    def __init__(self, model: str, setup: Setup, store: Store, calib_batch_size: int = 8, group_size: int = 32,
                 progress: bool = True, loaded=None, search_dtype: str = "float32"):
        super().__init__(model, setup, store, progress, loaded)
        if calib_batch_size < 1 or calib_batch_size > setup.calib_nsamples:
            raise ReproError(f"calib_batch_size must be in [1, calib_nsamples={setup.calib_nsamples}], "
                             f"got {calib_batch_size}")
        self.calib_batch_size, self.group_size = calib_batch_size, group_size
        self.search_dtype = _search_dtype(search_dtype, setup)
        self._batches: dict[int, tuple[list[dict], dict]] = {}

    @property
    def address(self) -> str:
        """:attr:`Experiment.address` with what else decides how its cells compute: the searches' precision, the
        calibration mini-batch and the unit group size (one model may be searched in two precisions in one notebook:
        notebook 3's section 2b; a job must reach the experiment that planned it)."""
        return f"{super().address}:search={self.search_dtype}:batch={self.calib_batch_size}:group={self.group_size}"

    def calibration_batches(self, seed: int) -> tuple[list[dict], dict]:
        """The seed's calibration mini-batches and their source (for keys), drawn once per seed."""
        if seed not in self._batches:
            self._batches[seed] = self._draw(seed)
        return self._batches[seed]

    def batches_source(self, seed: int) -> dict:
        """What identifies the seed's calibration mini-batches in keys (known without drawing them)."""
        return self.calibration_key(self.setup.calib_nsamples, seed=seed, batch_size=self.calib_batch_size)

    def _draw(self, seed: int) -> tuple[list[dict], dict]:
        s = self.setup
        wins = sample_windows(tokenize(self.loaded.tokenizer, self.calib_text), s.calib_nsamples, s.calib_seqlen, seed,
                              self.bos)
        return lm_batches(wins, self.calib_batch_size), self.batches_source(seed)

    def k(self, kinds, ratio: float) -> int:
        return units_for(self.structure, kinds, ratio, self.group_size)[0]

    def select_config(self, method: str, kinds, ratio: float, seed: int, params: dict | None = None) -> dict:
        sel = SELECTORS[method]
        sel.check_params(params, "unit selector")
        kinds = sorted(kinds)
        k, n = units_for(self.structure, kinds, ratio, self.group_size)
        full = {**sel.defaults, **(params or {})}
        if sel.sequential and k * full["budget"] < min(full["pool_size"], n):
            raise ReproError(f"{method}: the whole budget, k x budget = {k} x {full['budget']}, is smaller than the "
                             f"pool ({min(full['pool_size'], n)} candidates): some would never be evaluated")
        source = None if sel.calibration_free else self.batches_source(seed)
        return {"protocol": PROTOCOL, "model": self.base_config()["model"], "method": method, "kinds": kinds,
                "ratio": ratio, "k": k, "candidates": n, "group_size": self.group_size, "seed": seed,
                "params": full, "calibration": source,
                "search_dtype": self.search_dtype_for(method)}

    def search_dtype_for(self, method: str) -> str | None:
        sel = SELECTORS[method]
        if sel.calibration_free:
            return None  # no loss is computed
        return "float32" if sel.needs_gradients else self.search_dtype  # gradients in float32 weights

    def search_model(self, method: str):
        """The model a selector computes its losses on (the evaluation copy when the search
        runs in the evaluation dtype)."""
        dtype = self.search_dtype_for(method)
        if dtype is None or parse_dtype(dtype) == torch.float32:
            return self.model
        if dtype == self.setup.eval_dtype:
            return self.eval_model()
        raise ReproError(f"search dtype {dtype} needs eval_dtype {dtype} (the evaluation copy), got "
                         f"{self.setup.eval_dtype}")

    @plan.cell
    def select(self, method: str, kinds=KINDS, ratio: float = 0.1, seed: int = 1, params: dict | None = None,
               ratios=()) -> dict:
        """The record of one selection (searched once, then read). ``ratios``: the other ratios
        of the same (method, kinds, seed, params) that will be asked for: one run to the largest
        k missing a record serves them all, each smaller selection being that run's prefix
        (:meth:`repro.methods.bandit.Selection.prefix`, identical to a run of its own)."""
        cfgs = {r: self.select_config(method, kinds, r, seed, params) for r in {ratio, *ratios}}
        missing = [c for c in cfgs.values() if self.store.recompute or self.store.get("bandit-select", c) is None]
        longest: list = []

        def prefix(cfg):
            def compute():
                if not longest:
                    k = max(c["k"] for c in missing)
                    batches, _ = self.calibration_batches(seed)
                    with UnitEvaluator(self.search_model(method), batches, self.group_size) as ev:
                        longest.append(select_units(method, ev, k, kinds=cfg["kinds"], seed=seed, **(params or {})))
                return longest[0].prefix(cfg["k"]).as_dict()
            return compute
        for c in sorted(missing, key=lambda c: -c["k"]):
            yield plan.Ask("bandit-select", c, prefix(c))
        return (yield plan.Ask("bandit-select", cfgs[ratio], prefix(cfgs[ratio])))

    @contextmanager
    def masked(self, units):
        """The evaluation copy with ``units`` switched off (restored on exit)."""
        model = self.eval_model()
        with Masks(get_adapter(model)) as m:
            for kind, layer, index in units:
                m.set_unit(kind, layer, index, False, group_size=self.group_size)
            yield model

    def _evaluate(self, units, lambada_limit: int | None) -> dict:
        with self.masked(units) as model:
            out = self.ppl(model)
            if lambada_limit is not None:
                out["lambada"] = self.zeroshot(model, [LAMBADA], lambada_limit)
        return out

    def eval_config(self, lambada_limit: int | None) -> dict:
        return {**self.base_config(), "lambada_limit": lambada_limit, "group_size": self.group_size}

    def owner_fields(self, config: dict) -> dict:
        return self.eval_config(config.get("lambada_limit"))

    @plan.cell
    def dense(self, lambada_limit: int | None = None) -> dict:
        return (yield plan.Ask("bandit-ppl", {**self.eval_config(lambada_limit), "method": "dense"},
                               lambda: self._evaluate([], lambada_limit)))

    @plan.cell
    def cell(self, method: str, kinds=KINDS, ratio: float = 0.1, seed: int = 1, params: dict | None = None,
             lambada_limit: int | None = None, ratios=()) -> dict:
        """Select (or read the selection; ``ratios`` as in :meth:`select`), then evaluate the
        masked model."""
        sel = yield self.select.ask(method, kinds, ratio, seed, params, ratios)
        cfg = {**self.eval_config(lambada_limit), "method": method, "selection": sel["key"]}
        return (yield plan.Ask("bandit-ppl", cfg, lambda: {**self._evaluate([Unit(*u) for u in sel["result"]["units"]],
                                                                            lambada_limit),
                                                           "selection": sel["config"]}))

    @plan.cells
    def grid(self, unit_ratios: dict, methods, seeds, search: dict | None = None,
             lambada_limit: int | None = None) -> list[dict]:
        """The dense cell and every (unit type, ratio, method, seed) cell of ``unit_ratios``
        (``{kind: ratios}``); ``search`` goes to the sequential selectors only
        (:func:`search_params`), and one search per (type, method, seed) serves all its ratios."""
        yield self.dense.ask(lambada_limit)
        out = []
        for kind, ratios in unit_ratios.items():
            for ratio in ratios:
                for m in methods:
                    for seed in seeds:
                        out.append((yield self.cell.ask(m, [kind], ratio, seed, search_params(m, search), lambada_limit,
                                                        ratios=ratios)))
        return out

    @plan.cell
    def replay(self, method: str, kinds=KINDS, ratio: float = 0.1, seed: int = 1, params: dict | None = None,
               dtype: str = "float32") -> dict:
        """The joins of the selection of (``method``, ``kinds``, ``ratio``, ``seed``, ``params``) replayed in
        ``dtype`` on the same pulls, mini-batches and masks (:func:`repro.methods.replay.replay_joins`): how many
        joins the search's precision decided."""
        sel = yield self.select.ask(method, kinds, ratio, seed, params)
        cfg = {"protocol": PROTOCOL, "model": self.base_config()["model"], "selection": sel["key"],
               "group_size": self.group_size, "dtype": dtype, "searched_in": sel["config"]["search_dtype"]}

        def compute():
            res = sel["result"]
            batches, _ = self.calibration_batches(seed)
            model = self.model if parse_dtype(dtype) == torch.float32 else copy.deepcopy(self.model).to(parse_dtype(dtype))
            with UnitEvaluator(model, batches, self.group_size) as ev:
                out = replay_joins(ev, [Unit.of(u) for u in res["units"]],
                                   [[Unit.of(u) for u in step] for step in res["pulled"]], method, seed,
                                   sel["config"]["params"])
            return {**out, "pulled": res["pulled"], "selection": sel["config"]}
        return (yield plan.Ask("bandit-replay", cfg, compute))

    @plan.cell(exclusive=True)
    def removal(self, method: str, unit_ratios: dict, seed: int, search: dict | None = None, batches=(1, 4),
                seqlen: int = 128, repeats: int = 5) -> dict:
        """:func:`removal_cell` of ``method`` and ``seed`` on each unit type's largest ratio
        (:func:`removal_parts`), with the search parameters ``method`` takes."""
        return (yield from removal_cell(self, method, removal_parts(unit_ratios), seed, search_params(method, search),
                                        batches, seqlen, repeats))


def structural_plan(adapter, units, group_size: int) -> tuple[list[tuple[int, int]], dict[int, list[int]]]:
    """Selected units as (layer, head) pairs and {layer: MLP channels} for repro.structure."""
    heads = [(u[1], u[2]) for u in units if u[0] == "head"]
    chans: dict[int, list[int]] = {}
    for kind, layer, index in units:
        if kind == "mlp":
            chans.setdefault(layer, []).extend(group_range(adapter.mlp(layer).n_channels, group_size, index))
    return heads, chans


def removal_cell(e: BanditExperiment, method: str, parts, seed: int, params: dict | None = None,
                 batches=(1, 4), seqlen: int = 128, repeats: int = 5) -> dict:
    """Beyond the paper (its future work): the units of one or more selections of ``method`` and
    ``seed`` (``parts``: ``(kinds, ratio)`` pairs, e.g. heads at 10% and MLP groups at 8%, each
    the notebook's own selection) zeroed vs physically removed (``repro.structure``) vs dense:
    parameters, checkpoint bytes, the largest logit difference between the removed and the zeroed
    model on one batch (0 up to float rounding: removal is exact), and prefill seconds timed
    round-robin. A cell's body (a generator of what it needs: :mod:`repro.engines.plan`)."""
    sels = []
    for kinds, ratio in parts:
        sels.append((yield e.select.ask(method, kinds, ratio, seed, params)))
    cfg = {"protocol": PROTOCOL, "model": e.base_config()["model"], "selections": [s["key"] for s in sels],
           "batches": list(batches),
           "seqlen": seqlen, "repeats": repeats, "dtype": e.setup.eval_dtype,
           "exactness_dtype": "float32", **e.feeding()}

    def compute():
        dtype = parse_dtype(e.setup.eval_dtype)
        units = list(dict.fromkeys(tuple(u) for s in sels for u in s["result"]["units"]))
        heads, chans = structural_plan(e.adapter, units, e.group_size)
        pruned = {mode: model.eval() for mode, model in zeroed_and_removed(e.model, heads, chans).items()}
        ids = torch.randint(4, e.model.get_input_embeddings().num_embeddings, (2, seqlen),
                            generator=torch.Generator().manual_seed(0))
        with torch.inference_mode():  # exactness in float32 (the timing dtype would add its own rounding)
            z, r = (pruned[m](input_ids=ids, use_cache=False).logits.float() for m in ("zeroed", "removed"))
        variants = {"dense": copy.deepcopy(e.model).to(dtype), **{m: v.to(dtype) for m, v in pruned.items()}}
        out = {"units": len(units), "heads": len(heads), "mlp_channels": sum(map(len, chans.values()))}
        for name, model in variants.items():
            with tempfile.TemporaryDirectory() as tmp:
                folder = save_pruned(model, Path(tmp) / name)
                size = sum(f.stat().st_size for f in Path(folder).rglob("*") if f.is_file())
            out[name] = {"params": count_params(model), "checkpoint_bytes": size}
        out["removed_vs_zeroed_max_abs_logit_diff"] = float((z - r).abs().max())  # float32
        return with_prefill(out, variants, batches, seqlen, repeats, e.bos, e.setup.eval_dtype)
    return (yield plan.Ask("bandit-removal", cfg, compute))



# ---- vision: the same search on an image classifier ------------------------------------------

class VisionBanditExperiment(BanditExperiment):
    """Unit selection cells of an image classifier on ``images`` (:mod:`repro.engines.images`: Fashion-MNIST,
    or Imagenette for an ImageNet classifier). The seed draws ``n_calib`` training images (mini-batches of
    ``calib_batch_size``); every cell is evaluated on ``n_eval`` evaluation images: top-1 accuracy and
    cross-entropy, kept per image so that methods compare paired on the same images."""

    def __init__(self, model: str, setup: Setup, store: Store, n_calib: int = 256, calib_batch_size: int = 32,
                 n_eval: int = 2000, group_size: int = 32, progress: bool = True, loaded=None,
                 search_dtype: str = "float32", images: str = "fashion-mnist"):
        if n_calib < calib_batch_size or calib_batch_size < 1 or n_eval < 1:
            raise ReproError(f"need 1 <= calib_batch_size <= n_calib and n_eval >= 1, got {calib_batch_size}, "
                             f"{n_calib}, {n_eval}")
        Experiment.__init__(self, model, setup, store, progress, loaded)
        self.images = Images(self, n_eval, images)
        self.n_calib, self.calib_batch_size, self.n_eval, self.group_size = n_calib, calib_batch_size, n_eval, group_size
        self.search_dtype = _search_dtype(search_dtype, setup)
        self._batches = {}

    def batches_source(self, seed: int) -> dict:
        return self.images.source(self.n_calib, seed, batch_size=self.calib_batch_size)

    def _draw(self, seed: int) -> tuple[list[dict], dict]:
        return image_batches(*self.images.draw(self.n_calib, seed), self.calib_batch_size), self.batches_source(seed)

    def base_config(self) -> dict:
        return self.images.eval_config()

    def eval_config(self, lambada_limit: int | None = None) -> dict:
        return {**self.base_config(), "group_size": self.group_size}

    def owner_fields(self, config: dict) -> dict:
        return self.eval_config()

    def _evaluate(self, units, lambada_limit: int | None = None) -> dict:
        with self.masked(units) as model:
            return self.images.measure(model)

    @plan.cell
    def dense(self, lambada_limit: int | None = None) -> dict:
        return (yield plan.Ask("bandit-vision", {**self.eval_config(), "method": "dense"}, lambda: self._evaluate([])))

    @plan.cell
    def cell(self, method: str, kinds=("head",), ratio: float = 0.1, seed: int = 1, params: dict | None = None,
             lambada_limit: int | None = None, ratios=()) -> dict:
        sel = yield self.select.ask(method, kinds, ratio, seed, params, ratios)
        cfg = {**self.eval_config(), "method": method, "selection": sel["key"]}
        return (yield plan.Ask("bandit-vision", cfg, lambda: {**self._evaluate([Unit(*u) for u in sel["result"]["units"]]),
                                                               "selection": sel["config"]}))
