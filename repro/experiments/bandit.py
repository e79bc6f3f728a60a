"""Paper 3 (damage-aware bandit pruning) cells on a language model.

A cell selects ``k`` units (attention heads and/or 32-channel MLP groups) with one selector of
:mod:`repro.methods.bandit` and one seed, then evaluates the model with those units masked:
perplexity on the setup's windows (paired with the dense model's, window by window) and, when
asked, LAMBADA through lm-eval (perplexity of the last word and last-word accuracy, paired per
document). The seed draws the calibration windows and drives the selector's randomness, as the
paper's seeds do. Selections and evaluations are separate records, so a selection is searched
once and can be evaluated on more data later.
"""
from __future__ import annotations

from contextlib import contextmanager

import numpy as np
import pandas as pd

from repro.arch import adapter as get_adapter
from repro.calib import sample_windows
from repro.errors import ReproError
from repro.evaluate.ppl import tokenize
from repro.evaluate.prefix import UnitEvaluator, lm_batches
from repro.experiments.base import Experiment, Setup
from repro.methods.bandit import Unit, candidates, get_selector, select_units
from repro.store import PROTOCOL, Store
from repro.structure.masks import KINDS, Masks

LAMBADA = "lambada_openai"
CALIBRATION_FREE = {"random", "magnitude"}  # selectors that never read the calibration batches


GRADIENT_SELECTORS = {"taylor", "fisher"}  # need float32 weights with gradients


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


def units_for(adapter, kinds, ratio: float, group_size: int) -> tuple[int, int]:
    """(k, number of candidates): ``k = round(ratio * candidates)``, at least 1; the effective
    ratio is ``k / candidates`` (integer unit counts)."""
    if not 0 < ratio < 1:
        raise ReproError(f"ratio must be in (0, 1), got {ratio!r}")
    n = len(candidates(adapter, kinds, group_size))
    return max(1, int(round(ratio * n))), n


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

    def calibration_batches(self, seed: int) -> tuple[list[dict], dict]:
        """The seed's calibration mini-batches and their source (for keys), drawn once per seed."""
        if seed not in self._batches:
            self._batches[seed] = self._draw(seed)
        return self._batches[seed]

    def _draw(self, seed: int) -> tuple[list[dict], dict]:
        from repro.assets import load_text

        s = self.setup
        text = load_text(s.calib_data)
        wins = sample_windows(tokenize(self.loaded.tokenizer, text), s.calib_nsamples, s.calib_seqlen, seed)
        source = {"data": text.label, "sha256": text.sha256, "nsamples": s.calib_nsamples, "seqlen": s.calib_seqlen,
                  "seed": seed, "batch_size": self.calib_batch_size}
        return lm_batches(wins, self.calib_batch_size), source

    def k(self, kinds, ratio: float) -> int:
        return units_for(self.adapter, kinds, ratio, self.group_size)[0]

    def select_config(self, method: str, kinds, ratio: float, seed: int, params: dict | None = None) -> dict:
        sel = get_selector(method)
        unknown = sorted(set(params or {}) - set(sel.defaults))
        if unknown:
            raise ReproError(f"unit selector {method!r} takes {', '.join(sel.defaults) or 'no parameters'}; "
                             f"got {', '.join(unknown)}")
        kinds = sorted(kinds)
        k, n = units_for(self.adapter, kinds, ratio, self.group_size)
        full = {**sel.defaults, **(params or {})}
        if sel.sequential and k * full["budget"] < min(full["pool_size"], n):
            raise ReproError(f"{method}: the whole budget, k x budget = {k} x {full['budget']}, is smaller than the "
                             f"pool ({min(full['pool_size'], n)} candidates): some would never be evaluated")
        source = None if method in CALIBRATION_FREE else self.calibration_batches(seed)[1]
        return {"protocol": PROTOCOL, "model": self.base_config()["model"], "method": method, "kinds": kinds,
                "ratio": ratio, "k": k, "candidates": n, "group_size": self.group_size, "seed": seed,
                "params": {**sel.defaults, **(params or {})}, "calibration": source,
                "search_dtype": self._dtype_for(method)}

    def _dtype_for(self, method: str) -> str | None:
        if method in CALIBRATION_FREE:
            return None  # no loss is computed
        return "float32" if method in GRADIENT_SELECTORS else self.search_dtype

    def search_model(self, method: str):
        """The model a selector computes its losses on (the evaluation copy when the search
        runs in the evaluation dtype)."""
        import torch

        from repro.assets import parse_dtype

        dtype = self._dtype_for(method)
        if dtype is None or parse_dtype(dtype) == torch.float32:
            return self.model
        if dtype == self.setup.eval_dtype:
            return self.eval_model()
        raise ReproError(f"search dtype {dtype} needs eval_dtype {dtype} (the evaluation copy), got "
                         f"{self.setup.eval_dtype}")

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
            self.run("bandit-select", c, prefix(c))
        return self.run("bandit-select", cfgs[ratio], prefix(cfgs[ratio]))

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

    def dense(self, lambada_limit: int | None = None) -> dict:
        return self.run("bandit-ppl", {**self.eval_config(lambada_limit), "method": "dense"},
                        lambda: self._evaluate([], lambada_limit))

    def cell(self, method: str, kinds=KINDS, ratio: float = 0.1, seed: int = 1, params: dict | None = None,
             lambada_limit: int | None = None, ratios=()) -> dict:
        """Select (or read the selection; ``ratios`` as in :meth:`select`), then evaluate the
        masked model."""
        sel = self.select(method, kinds, ratio, seed, params, ratios)
        cfg = {**self.eval_config(lambada_limit), "method": method, "selection": sel["key"]}
        return self.run("bandit-ppl", cfg, lambda: {**self._evaluate([Unit(*u) for u in sel["result"]["units"]],
                                                                     lambada_limit),
                                                    "selection": sel["config"]})


def structural_plan(adapter, units, group_size: int) -> tuple[list[tuple[int, int]], dict[int, list[int]]]:
    """Selected units as (layer, head) pairs and {layer: MLP channels} for repro.structure."""
    from repro.structure.masks import group_range

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
    round-robin."""
    import copy
    import tempfile
    from pathlib import Path

    import torch

    from repro.assets import parse_dtype
    from repro.evaluate.speed import count_params, prefill_seconds
    from repro.structure import remove_channels, remove_heads, save_pruned, zero_channels, zero_heads

    sels = [e.select(method, kinds, ratio, seed, params) for kinds, ratio in parts]
    cfg = {"protocol": PROTOCOL, "model": e.base_config()["model"], "selections": [s["key"] for s in sels],
           "batches": list(batches),
           "seqlen": seqlen, "repeats": repeats, "dtype": e.setup.eval_dtype, "threads": torch.get_num_threads(),
           "exactness_dtype": "float32"}

    def compute():
        dtype = parse_dtype(e.setup.eval_dtype)
        units = list(dict.fromkeys(tuple(u) for s in sels for u in s["result"]["units"]))
        heads, chans = structural_plan(e.adapter, units, e.group_size)
        pruned = {}
        for mode, (on_heads, on_chans) in {"zeroed": (zero_heads, zero_channels),
                                           "removed": (remove_heads, remove_channels)}.items():
            model = copy.deepcopy(e.model)
            ad = get_adapter(model)
            on_heads(ad, heads)
            on_chans(ad, chans)
            pruned[mode] = model.eval()
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
        for b in batches:
            for name, t in prefill_seconds(variants, b, seqlen, repeats).items():
                out[name][f"prefill_b{b}"] = t
        return out
    return e.run("bandit-removal", cfg, compute)


def removal_table(result: dict, batches) -> pd.DataFrame:
    """Rows dense / zeroed / removed of a :func:`removal_cell` result: parameters, checkpoint MB,
    median prefill ms per batch size, and the prefill speed-up against dense with its 95% CI
    paired by round-robin round (:func:`repro.evaluate.stats.speed_ratio`)."""
    from repro.evaluate.stats import speed_ratio

    rows = []
    for v in ("dense", "zeroed", "removed"):
        r = result[v]
        row = {"model": v, "params": r["params"], "checkpoint MB": r["checkpoint_bytes"] / 1e6}
        for b in batches:
            t, base = r[f"prefill_b{b}"]["times_s"], result["dense"][f"prefill_b{b}"]["times_s"]
            sp = speed_ratio(base, t)
            row[f"prefill b{b} (ms)"] = 1000 * r[f"prefill_b{b}"]["median_s"]
            row[f"speed-up b{b} [95% CI]"] = ("1" if v == "dense" else
                                              f"x{sp.estimate:.3f} [{sp.ci[0]:.3f}, {sp.ci[1]:.3f}]")
        rows.append(row)
    return pd.DataFrame(rows)


def bandit_frame(store: Store, experiments: list[BanditExperiment], session: bool = True) -> pd.DataFrame:
    """One row per evaluated cell (dense included) of ``experiments``; ``session``: only the cells
    asked for in this session."""
    selections = {r["key"]: r for r in store.records("bandit-select")}
    rows = []
    for r in store.current("bandit-ppl", session):
        c, res = r["config"], r["result"]
        e = next((e for e in experiments if c["model"]["name"] == e.name
                  and all(c.get(k) == v for k, v in e.eval_config(c.get("lambada_limit")).items())), None)
        if e is None:
            continue
        lam = (res.get("lambada") or {}).get("tasks", {}).get(LAMBADA)
        rows.append({"key": ("bandit-ppl", r["key"]), "model": e.name, "method": c["method"],
                     **_selection_fields(selections.get(c.get("selection"), {})),
                     "ppl": res["ppl"], "window_nll": res["window_nll"],
                     "lambada_ppl": None if lam is None else lam["metrics"]["perplexity"]["value"],
                     "lambada_acc": None if lam is None else lam["metrics"]["acc"]["value"],
                     "lambada_per_doc": None if lam is None else lam["per_doc"],
                     "finite": bool(np.isfinite(res["ppl"]))})
    return pd.DataFrame(rows)


def _selection_fields(sel: dict) -> dict:
    """The frame columns a cell takes from its selection record (empty record: the dense cell)."""
    sc, sr = sel.get("config", {}), sel.get("result", {})
    return {"kinds": "+".join(sc.get("kinds", [])) or "dense", "ratio": sc.get("ratio", 0.0), "k": sc.get("k", 0),
            "candidates": sc.get("candidates"), "seed": sc.get("seed"), "units": sr.get("units"),
            "budget": sr.get("budget"), "pulls": sr.get("pulls"), "rewards": sr.get("rewards"),
            "damages": sr.get("damages")}


def reward_table(frame: pd.DataFrame) -> pd.DataFrame:
    """The distribution of rewards the sequential searches produced, per (model, units, method),
    pooled over seeds: pulls, mean reward and the shares of harmful / neutral / beneficial pulls
    (:func:`repro.methods.bandit.reward_summary`). Only each setting's largest ratio counts (a
    smaller ratio's steps are its first steps, so they would count twice)."""
    from repro.methods.bandit import reward_summary

    seq = frame[frame.rewards.map(lambda r: bool(r))] if len(frame) and "rewards" in frame else frame.iloc[:0]
    rows = []
    for (model, kinds, method), f in seq.groupby(["model", "kinds", "method"]):
        top = f[f.ratio == f.ratio.max()]
        s = reward_summary([r for rs in top.rewards for r in rs])
        rows.append({"model": model, "units": f"{kinds} {top.ratio.iloc[0]:.0%}", "method": method,
                     "seeds": top.seed.nunique(), "pulls": s["n"], "mean reward": s["mean"],
                     "harmful": s["harmful"], "neutral": s["neutral"], "beneficial": s["beneficial"]})
    return pd.DataFrame(rows)


def layer_profile(frame: pd.DataFrame, n_layers: dict[str, int]) -> pd.DataFrame:
    """Where each method's units sit, per (model, units, method), seeds pooled: the mean layer and
    the share of units in the first tenth of the layers (``early layers``: at least one).
    ``n_layers``: layers per model."""
    rows = []
    sel = frame[frame.units.map(lambda u: bool(u))] if len(frame) and "units" in frame else frame.iloc[:0]
    for (model, kinds, ratio, method), f in sel.groupby(["model", "kinds", "ratio", "method"]):
        layers = np.array([u[1] for units in f.units for u in units])
        early = max(1, int(np.ceil(n_layers[model] / 10)))
        rows.append({"model": model, "units": f"{kinds} {ratio:.0%}", "method": method, "seeds": f.seed.nunique(),
                     "mean layer": float(layers.mean()), "early layers": early,
                     "share in early layers": float((layers < early).mean())})
    return pd.DataFrame(rows)


# ---- statistics: per (method, seed) vs dense, MAB vs greedy across seeds, BH over the family ----

def vs_dense(frame: pd.DataFrame) -> pd.DataFrame:
    """Each evaluated selection against the dense model on the same windows: perplexity change
    (%) with a paired bootstrap 95% CI over windows, and a Wilcoxon p-value of the per-window NLL
    differences. Non-finite perplexities stay as failures (no CI, no p-value)."""
    from repro.evaluate.stats import paired_ratio, paired_test

    rows = []
    for model, f in frame.groupby("model"):
        dense = f[f.method == "dense"]
        if dense.empty:
            continue
        d = np.asarray(dense.iloc[0].window_nll)
        for _, r in f[f.method != "dense"].iterrows():
            row = {"model": model, "kinds": r.kinds, "ratio": r.ratio, "k": r.k, "method": r.method, "seed": r.seed,
                   "ppl": r.ppl, "finite": r.finite}
            nll = np.asarray(r.window_nll, dtype=float)
            if r.finite and np.isfinite(nll).all():
                p = paired_ratio(nll, d)
                row.update(change_pct=100 * (p.estimate - 1), ci_lo=100 * (p.ci[0] - 1), ci_hi=100 * (p.ci[1] - 1),
                           p=paired_test(nll, d) if len(d) >= 2 else np.nan)
            else:
                row.update(change_pct=np.inf, ci_lo=np.nan, ci_hi=np.nan, p=np.nan)
            rows.append(row)
    return pd.DataFrame(rows)


def across_seeds(table: pd.DataFrame, a: str, b: str, value: str = "change_pct", test: str = "auto") -> pd.DataFrame:
    """``a`` against ``b`` per (model, kinds, ratio), paired over the seeds both ran: mean of each,
    mean difference, and the paired test's p-value across seeds (NaN with fewer than 2 seeds).
    ``auto``: Wilcoxon signed-rank from 6 seeds on, the paired t-test with fewer
    (:func:`repro.evaluate.stats.paired_test_name`); the ``test`` column says which ran."""
    from repro.evaluate.stats import paired_test, paired_test_name

    rows = []
    for (model, kinds, ratio), f in table.groupby(["model", "kinds", "ratio"]):
        x = f[f.method == a].set_index("seed")[value]
        y = f[f.method == b].set_index("seed")[value]
        seeds = sorted(set(x.index) & set(y.index))
        if not seeds:
            continue
        xs, ys = x.loc[seeds].to_numpy(float), y.loc[seeds].to_numpy(float)
        ok = np.isfinite(xs) & np.isfinite(ys)
        p = paired_test(xs[ok], ys[ok], test) if ok.sum() >= 2 else np.nan
        rows.append({"model": model, "kinds": kinds, "ratio": ratio, "value": value, "a": a, "b": b, "seeds": len(seeds),
                     "mean_a": xs.mean(), "mean_b": ys.mean(), "mean_diff": float(np.mean(xs - ys)),
                     "a_better_seeds": int((xs < ys).sum()), "p": p, "test": paired_test_name(int(ok.sum()), test)})
    return pd.DataFrame(rows)


def family_summary(per_seed: pd.DataFrame, tests: pd.DataFrame, alpha: float = 0.05) -> tuple:
    """Benjamini-Hochberg q over the declared family (every per-seed comparison with dense and
    every across-seed test), and a summary like the paper's Table B2: of how many comparisons the
    CI excludes zero, p < alpha, q < alpha."""
    from repro.evaluate.stats import bh

    per_seed, tests = per_seed.copy(), tests.copy()
    p = np.concatenate([per_seed.get("p", pd.Series(dtype=float)).to_numpy(float),
                        tests.get("p", pd.Series(dtype=float)).to_numpy(float)])
    q = bh(p)
    per_seed["q"], tests["q"] = q[:len(per_seed)], q[len(per_seed):]
    excl = (per_seed.ci_lo > 0) | (per_seed.ci_hi < 0) if len(per_seed) else pd.Series(dtype=bool)
    summary = pd.DataFrame([
        {"family": "each (method, seed) vs dense", "comparisons": len(per_seed),
         "CI excludes 0": int(excl.sum()), f"p < {alpha}": int((per_seed.p < alpha).sum()),
         f"q < {alpha}": int((per_seed.q < alpha).sum()), "failures (non-finite)": int((~per_seed.finite).sum())},
        {"family": "across seeds (paired test)", "comparisons": len(tests), "CI excludes 0": None,
         f"p < {alpha}": int((tests.p < alpha).sum()) if len(tests) else 0,
         f"q < {alpha}": int((tests.q < alpha).sum()) if len(tests) else 0, "failures (non-finite)": None},
    ])
    return per_seed, tests, summary


# ---- vision: the same search on an image classifier ------------------------------------------

class VisionBanditExperiment(BanditExperiment):
    """Unit selection cells of an image classifier (Fashion-MNIST). The seed draws ``n_calib``
    training images (mini-batches of ``calib_batch_size``); every cell is evaluated on the first
    ``n_eval`` test images: top-1 accuracy and cross-entropy, kept per image so that methods
    compare paired on the same images."""

    def __init__(self, model: str, setup: Setup, store: Store, n_calib: int = 256, calib_batch_size: int = 32,
                 n_eval: int = 2000, group_size: int = 32, progress: bool = True, loaded=None,
                 search_dtype: str = "float32"):
        if n_calib < calib_batch_size or calib_batch_size < 1 or n_eval < 1:
            raise ReproError(f"need 1 <= calib_batch_size <= n_calib and n_eval >= 1, got {calib_batch_size}, "
                             f"{n_calib}, {n_eval}")
        Experiment.__init__(self, model, setup, store, progress, loaded)
        if self.loaded.task != "image-classification":
            raise ReproError(f"{model} is not an image classifier ({self.loaded.task})")
        self.n_calib, self.calib_batch_size, self.n_eval, self.group_size = n_calib, calib_batch_size, n_eval, group_size
        self.search_dtype = _search_dtype(search_dtype, setup)
        self._batches = {}

    def pixels(self, images):
        """uint8 Fashion-MNIST images -> this model's pixel values (its resolution, channels, normalisation)."""
        from repro.assets.vision import pixels_for

        return pixels_for(self.loaded.identity, images)

    def _draw(self, seed: int) -> tuple[list[dict], dict]:
        import torch

        from repro.assets.data import fashion_mnist
        from repro.evaluate.prefix import image_batches

        images, labels = fashion_mnist("train")
        idx = torch.randperm(len(labels), generator=torch.Generator().manual_seed(seed))[:self.n_calib]
        source = {"data": "fashion-mnist:train", "n": self.n_calib, "seed": seed, "batch_size": self.calib_batch_size}
        return image_batches(self.pixels(images[idx]), labels[idx], self.calib_batch_size), source

    def base_config(self) -> dict:
        from repro.experiments.base import model_key

        return {"protocol": PROTOCOL, "model": model_key(self.loaded.identity), "data": "fashion-mnist:test",
                "n_eval": self.n_eval, "dtype": self.setup.eval_dtype}

    def eval_config(self, lambada_limit: int | None = None) -> dict:
        return {**self.base_config(), "group_size": self.group_size}

    def _evaluate(self, units, lambada_limit: int | None = None) -> dict:
        import torch
        import torch.nn.functional as F

        from repro.assets.data import fashion_mnist

        images, labels = fashion_mnist("test")
        x, y = self.pixels(images[:self.n_eval]), labels[:self.n_eval]
        ce, right = [], []
        with self.masked(units) as model, torch.no_grad():
            for s in range(0, len(y), 500):
                logits = model(pixel_values=x[s:s + 500].to(model.dtype)).logits.float()
                ce.append(F.cross_entropy(logits, y[s:s + 500], reduction="none"))
                right.append(logits.argmax(-1) == y[s:s + 500])
        ce, right = torch.cat(ce), torch.cat(right)
        return {"top1": float(right.float().mean()), "ce": float(ce.mean()), "per_image_ce": ce.tolist(),
                "per_image_correct": right.int().tolist(), "n_eval": len(y)}

    def dense(self, lambada_limit: int | None = None) -> dict:
        return self.run("bandit-vision", {**self.eval_config(), "method": "dense"}, lambda: self._evaluate([]))

    def cell(self, method: str, kinds=("head",), ratio: float = 0.1, seed: int = 1, params: dict | None = None,
             lambada_limit: int | None = None, ratios=()) -> dict:
        sel = self.select(method, kinds, ratio, seed, params, ratios)
        cfg = {**self.eval_config(), "method": method, "selection": sel["key"]}
        return self.run("bandit-vision", cfg, lambda: {**self._evaluate([Unit(*u) for u in sel["result"]["units"]]),
                                                        "selection": sel["config"]})


def vision_frame(store: Store, experiments: list[VisionBanditExperiment], session: bool = True) -> pd.DataFrame:
    """One row per evaluated vision cell (dense included)."""
    selections = {r["key"]: r for r in store.records("bandit-select")}
    rows = []
    for r in store.current("bandit-vision", session):
        c, res = r["config"], r["result"]
        e = next((e for e in experiments if c["model"] == e.base_config()["model"]
                  and all(c.get(k) == v for k, v in e.eval_config().items())), None)
        if e is None:
            continue
        rows.append({"key": ("bandit-vision", r["key"]), "model": e.name, "method": c["method"],
                     **_selection_fields(selections.get(c.get("selection"), {})),
                     "top1": res["top1"], "ce": res["ce"], "per_image_ce": res["per_image_ce"],
                     "per_image_correct": res["per_image_correct"]})
    return pd.DataFrame(rows)


# ---- claims ---------------------------------------------------------------------------------

MAB = ("ucb", "thompson")
LABELS = {"random": "Random", "magnitude": "Magnitude", "wanda": "Wanda-style", "taylor": "Taylor",
          "fisher": "Fisher", "greedy": "Budgeted greedy", "ucb": "MAB-UCB", "thompson": "MAB-TS", "dense": "Dense"}


def _per_seed(table: pd.DataFrame, method: str, value: str) -> pd.Series:
    return table[table.method == method].set_index("seed")[value].astype(float)


def _seed_diff(table, a: str, b: str, value: str):
    """mean over shared seeds of a - b with a paired bootstrap CI over seeds (None if < 1 seed)."""
    from repro.evaluate.stats import paired_difference

    x, y = _per_seed(table, a, value), _per_seed(table, b, value)
    seeds = [s for s in sorted(set(x.index) & set(y.index)) if np.isfinite(x[s]) and np.isfinite(y[s])]
    return None if not seeds else paired_difference(x.loc[seeds].to_numpy(), y.loc[seeds].to_numpy())


def lm_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Per-seed rows of each selection vs dense: perplexity change (%) with its paired CI over
    windows (:func:`vs_dense`), LAMBADA perplexity change (%) and last-word accuracy change."""
    per = vs_dense(frame)
    if per.empty:
        return per
    lam = []
    for _, r in per.iterrows():
        f = frame[(frame.model == r.model)]
        d = f[f.method == "dense"].iloc[0]
        c = f[(f.method == r.method) & (f.seed == r.seed) & (f.kinds == r.kinds) & (f.ratio == r.ratio)].iloc[0]
        ok = c.lambada_ppl is not None and d.lambada_ppl is not None
        lam.append({"lambada_change_pct": 100 * (c.lambada_ppl / d.lambada_ppl - 1) if ok else np.nan,
                    "lambada_acc_change": c.lambada_acc - d.lambada_acc if ok else np.nan})
    return pd.concat([per.reset_index(drop=True), pd.DataFrame(lam)], axis=1)


def bandit_claims(lm: pd.DataFrame, vision: pd.DataFrame | None = None) -> list:
    """Paper 3's claims, each judged by :func:`repro.claims.verdict` on an interval paired over seeds."""
    from repro.claims import Claim

    out = []

    def diff_claim(claim, setting, what, p, side="below", unit="pp"):
        if p is None:
            return Claim(claim, setting, "not run", "inconclusive")
        f = "+.4f" if unit == "nats" else "+.2f"  # cross-entropy differences are small
        return Claim.check(claim, setting, f"{what} {p.estimate:{f}} [{p.ci[0]:{f}}, {p.ci[1]:{f}}] {unit} over "
                                           f"{p.n} seeds", p.estimate, p.ci, 0.0, side)

    for (model, kinds, ratio), t in (lm.groupby(["model", "kinds", "ratio"]) if len(lm) else []):
        setting = f"{model}, {kinds} {ratio:.0%}"
        for m in MAB:
            out.append(diff_claim("MAB degrades perplexity less than budgeted greedy", f"{setting}, {LABELS[m]}",
                                  f"change {LABELS[m]} - greedy", _seed_diff(t, m, "greedy", "change_pct")))
        if t.lambada_change_pct.notna().any():
            means = t.groupby("method").lambada_change_pct.mean()
            best_mab = min((m for m in MAB if m in means), key=lambda m: means[m], default=None)
            others = means.drop(list(MAB), errors="ignore")
            if best_mab is not None and len(others):
                rival = others.idxmin()
                out.append(diff_claim("MAB has the lowest LAMBADA degradation", f"{setting}, {LABELS[best_mab]} vs "
                                      f"best other ({LABELS.get(rival, rival)})", "LAMBADA ppl change difference",
                                      _seed_diff(t, best_mab, rival, "lambada_change_pct")))
    if vision is not None and len(vision):
        for (model, kinds, ratio), t in vision.groupby(["model", "kinds", "ratio"]):
            setting = f"{model}, {kinds} {ratio:.0%} (k={int(t.k.iloc[0])})"
            out.append(diff_claim("MAB-TS loses less top-1 than budgeted greedy at a matched budget", setting,
                                  "top-1 TS - greedy", _seed_diff(t, "thompson", "greedy", "top1_pp"), side="above"))
            out.append(diff_claim("MAB-TS raises cross-entropy less than budgeted greedy at a matched budget",
                                  setting, "cross-entropy TS - greedy", _seed_diff(t, "thompson", "greedy", "ce"),
                                  unit="nats"))
    return out


def vision_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Per-seed vision rows: top-1 (percentage points) and its drop vs dense with a paired bootstrap
    CI over the test images (also as ``ci_lo`` / ``ci_hi``, so the rows join the per-seed family of
    :func:`family_summary`), cross-entropy, its increase and the Wilcoxon p-value of the per-image
    cross-entropy differences."""
    from repro.evaluate.stats import paired_difference, paired_test

    rows = []
    for model, f in frame.groupby("model"):
        dense = f[f.method == "dense"]
        if dense.empty:
            continue
        d = dense.iloc[0]
        for _, r in f[f.method != "dense"].iterrows():
            drop = paired_difference(np.asarray(d.per_image_correct, float) * 100, np.asarray(r.per_image_correct,
                                                                                                 float) * 100)
            rows.append({"model": model, "kinds": r.kinds, "ratio": r.ratio, "k": r.k, "method": r.method,
                         "seed": r.seed, "top1_pp": 100 * r.top1, "top1_drop_pp": drop.estimate,
                         "drop_ci_lo": drop.ci[0], "drop_ci_hi": drop.ci[1], "ce": r.ce, "ce_increase": r.ce - d.ce,
                         "paired_evaluations": (r.budget or {}).get("paired_evaluations"),
                         "ci_lo": drop.ci[0], "ci_hi": drop.ci[1], "finite": bool(np.isfinite(r.ce)),
                         "p": paired_test(r.per_image_ce, d.per_image_ce)})
    return pd.DataFrame(rows)
