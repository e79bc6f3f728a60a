"""The paper notebooks: what each one sets up from its parameters (:func:`start`, a
:class:`Session`), and their execution: jupytext source -> papermill run with a profile -> clean
executed ``.ipynb`` (the pair people open in JupyterLab).

Each notebook lives as a jupytext percent file ``notebooks/NN_name.py`` (the source: readable,
linted, diffable) paired with ``notebooks/NN_name.ipynb`` (the executed copy with outputs).
:func:`execute` reads the ``.py``, checks the profile's keys against the notebook's declared
parameters (an unknown key is an error, not a silently ignored typo), runs it with papermill and
writes the ``.ipynb`` without widget state or progress-bar residue.
"""
from __future__ import annotations

import os
import re
import sys
import tempfile
import time
from pathlib import Path

from repro.assets.models import simulated_note
from repro.engines.base import Setup, check_keys
from repro.errors import ReproError, check_folder, check_interrupted
from repro.profiles import check_sections, check_types, load_profile
from repro.report import Table, csv_text, replace_block, save_figure, save_table, to_markdown
from repro.store import Store, atomic_write_text
from repro.words import short

_PROGRESS = re.compile(r"\r|\d+%\|")  # tqdm text bars: carriage returns, "42%|###"
WIDGET = "application/vnd.jupyter.widget-view+json"


class Session:
    """What every paper notebook builds from its parameters: the result store, the figures
    folder, the evaluation :class:`Setup` of each model, its experiments, and :meth:`show` (save a
    table as Markdown + CSV and display it). ``params``: the notebook's parameters (its globals
    after papermill injected the profile's values)."""

    def __init__(self, params: dict):
        import torch

        self.params = dict(params)  # a copy: later notebook variables never change the setup
        label = params.get("sample_label") or ""
        self.profile = params["profile"] + (f", {label}" if label else "") + simulated_note(
            [*params.get("models", []), *params.get("vision_models", []), *params.get("mlm_models", []),
             params.get("glue_encoder")])
        self.params["profile"] = self.profile  # the name every caption prints (a simulated hub says so)
        self.store = Store(params["results_dir"], recompute=params.get("recompute", False),
                           read_also=params.get("read_results"))
        self.figures = Path(params["figures_dir"])
        self.figures.mkdir(parents=True, exist_ok=True)
        self.model_settings = check_keys(dict(params.get("model_settings") or {}), params["models"],
                                         "model_settings model")
        torch.manual_seed(0)

    def setting(self, model: str, key: str):
        """``key`` for ``model``: its ``model_settings`` entry, else the notebook's parameter."""
        return self.model_settings.get(model, {}).get(key, self.params.get(key))

    def setup(self, model: str | None = None, extra=(), **changes) -> Setup:
        """The notebook's :class:`Setup` (its parameters named like Setup's fields), with ``changes``
        and then ``model``'s own settings applied (``extra``: other keys a model may set)."""
        own = dict(self.model_settings.get(model, {})) if model else {}
        check_keys(own, Setup.keys() | set(extra), f"{model} setting")
        setup = Setup(**{k: self.params[k] for k in Setup.keys() if k in self.params}).replace(**changes)
        return setup.replace(**{k: v for k, v in own.items() if k in Setup.keys()})

    def experiments(self, cls, models, shared: dict | None = None, changes: dict | None = None, **kwargs) -> dict:
        """``{model: cls(model, setup, store, ...)}``; a model's own settings that ``cls`` takes as
        arguments (``cls.settings``) override ``kwargs``; ``shared``: experiments whose loaded
        models to reuse (one copy of the weights under two setups)."""
        extra = getattr(cls, "settings", ())
        out = {}
        for m in models:
            own = {k: v for k, v in self.model_settings.get(m, {}).items() if k in extra and k in kwargs}
            loaded = {"loaded": shared[m]} if shared and m in shared else {}  # shared when either loads it
            out[m] = cls(m, self.setup(m, extra, **(changes or {})), self.store, **{**kwargs, **own, **loaded})
        return out

    def show(self, table, stem: str, caption: str = "", raw=None, index: bool | None = None, reading: str = "") -> None:
        """Save ``table`` as ``figures/<stem>.md`` (with its caption) and ``.csv`` (``raw`` numbers
        if given), and display it once, as Markdown (it returns nothing, so a cell that ends with it
        does not render the frame a second time), then ``reading``: what it shows, generated from its
        numbers (:func:`repro.report.column_reading`, :func:`repro.report.ranking_reading`). ``table``: a
        :class:`repro.report.Table` (what a paper's report returns: frame, caption, reading and raw numbers
        together), or a frame with the others given here."""
        import pandas as pd
        from IPython.display import Markdown, display

        summary = None
        if isinstance(table, Table):
            table, caption, reading, raw, summary = table.frame, caption or table.caption, reading or table.reading, (
                table.raw if raw is None else raw), table.summary
        if index is None:
            index = not isinstance(table.index, pd.RangeIndex)
        if caption and "profile `" not in caption.lower():  # every table says which profile produced it
            caption = f"{caption.rstrip()} Profile `{self.profile}`."
        save_table(table, self.figures / stem, caption, raw=raw, index=index)
        if summary is not None:  # a long table: its summary here, the whole of it in figures/
            caption = (f"{caption.rstrip()} *Summarised here: {summary.attrs.get('shows', 'a summary')}; all "
                       f"{len(table)} rows are in `figures/{self.figures.name}/{stem}.md`.*")
            table, index = summary, True
        display(Markdown(to_markdown(table, caption, index=index)))
        if reading:
            display(Markdown("**What it shows.**\n\n" + reading))

    def show_claims(self, claims, stem: str, caption: str = "") -> None:
        """Save a claims frame (:func:`repro.claims.claims_frame`; or a :class:`repro.report.Table` of one) as
        ``figures/<stem>.md``, split by kind of answer (:func:`repro.claims.claims_markdown`), and ``.csv``
        (every column), and display it once."""
        from IPython.display import Markdown, display

        from repro.claims import claims_markdown

        if isinstance(claims, Table):
            claims, caption = claims.frame, caption or claims.caption

        text = claims_markdown(claims, caption)
        atomic_write_text((self.figures / stem).with_suffix(".md"), text)
        atomic_write_text((self.figures / stem).with_suffix(".csv"), csv_text(claims))
        display(Markdown(text))

    def try_it(self, exercises, name: str, seconds: int, **kwargs):
        """A "Try it" exercise's answer (``exercises``: the grid's :class:`repro.papers.exercises.Exercises`; ``name``
        and ``kwargs``: the exercise and the values the cell gives it), shown with its reading and the seconds it took,
        and returned (a :class:`repro.report.Table`). A run with a record (the default values: the grid's
        ``exercises`` section computes them) is read from it, loading no model; other values compute live and are
        recorded. With the ``try_it`` parameter off (a render from the records alone) nothing is computed: where no
        record exists, one line says how to run it (about ``seconds`` here)."""
        from IPython.display import Markdown, display

        record = exercises.stored(name, kwargs)
        if record is None and not self.params.get("try_it", True):
            display(Markdown(f"*Not run in this render (`try_it = False`, a render from the records alone): these "
                             f"values have no record. Set `try_it = True` in the parameters cell, or open the notebook "
                             f"with `profile = \"lab\"`, and run this cell: about {seconds} s on 2 cores.*"))
            return None
        if record is None:
            record = exercises.run(name, kwargs)
        table = exercises.table(record)
        display(Markdown(to_markdown(table.frame, table.caption, index=False)))
        if table.reading:
            display(Markdown("**What it shows.**\n\n" + table.reading))
        print(f"answered in {record['result']['seconds']:.1f} s (when this run was computed; it is recorded)")
        return table

    def answer(self, text: str) -> None:
        """A "Try it" exercise's answer from the committed records (``text``, generated from them), collapsed until
        the reader opens it."""
        from IPython.display import Markdown, display

        display(Markdown("<details><summary><b>What the committed records show</b> (open it after you have "
                         f"predicted)</summary>\n\n{text}\n\n</details>"))

    def figure(self, fig, name: str):
        """Save ``fig`` as ``figures/<name>`` and show it inline."""
        import matplotlib.pyplot as plt

        save_figure(fig, self.figures / name)
        plt.show()

    def update_readme(self, blocks: dict[str, str]) -> None:
        """Replace the generated blocks (``update_readme`` parameter on) in the file that holds each:
        the README (a headline line per paper) or the results page (``results_page``,
        docs/results.md: the tables and claims). A block neither file holds is an error."""
        if not self.params.get("update_readme"):
            return
        files = [Path(p) for p in (self.params.get("readme"), self.params.get("results_page")) if p and Path(p).exists()]
        texts = {f: f.read_text() for f in files}
        for name, text in blocks.items():
            f = next((f for f in files if f"<!-- begin {name} -->" in texts[f]), None)
            if f is None:
                raise ReproError(f"no file among {', '.join(map(str, files)) or '(none)'} holds the block {name!r}")
            replace_block(f, name, text)
        print("generated blocks updated from", self.params["results_dir"], "in", ", ".join(map(str, files)))

    def this_run(self, provenance: str = "") -> None:
        """The run's provenance and parameters, once per notebook (the captions below name only their
        models, data, sample and dtype in one line): ``provenance`` (Markdown bullets: what each model
        is, where its weights come from, its evaluation and calibration samples), then one row per
        parameter whose value the profile changed, the default beside it (the parameters cell shows the
        notebook's defaults; papermill injects the profile's values below them)."""
        import pandas as pd
        from IPython.display import Markdown, display

        defaults = (self.params.get("_run") or {}).get("defaults", {})
        rows = [{"parameter": k, "this run": short(v, 90), "notebook default": short(defaults[k], 90)}
                for k, v in self.params.items() if k in defaults and defaults[k] != v]
        table = pd.DataFrame(rows, columns=["parameter", "this run", "notebook default"])
        head = self.opening() + f"**This run.** Profile `{self.profile}`."
        if provenance:
            head += " What each model is and the samples it was evaluated and calibrated on:\n\n" + provenance + "\n\n"
        display(Markdown(to_markdown(table, head + " The parameters that ran, where they differ from the parameters "
                                              "cell above:", index=False)))

    def opening(self) -> str:
        """What a profile with a ``sample_label`` says first (nothing for the reference run): that its numbers are a
        cut sample, what that does to the verdicts, and where the decided ones are."""
        label = self.params.get("sample_label")
        if not label:
            return ""
        return (f"**This run is a {label}**, not the reference run: profile `{self.profile}` cuts the reference "
                "profile's samples (the rows below say how), so its numbers move with the cut and, under the claims' "
                f"one rule, most verdicts come out inconclusive. The decided verdicts are those of the "
                f"`{DEFAULT_PROFILE}` profile's committed records (`results/`), shown in the committed notebook and in "
                "docs/results.md.\n\n")

    def cache(self, keys) -> str:
        return self.store.cache_summary(keys)


def start(params: dict, notebook: str | None = None) -> Session:
    """The :class:`Session` of a notebook from its parameters (pass ``globals()``, and the notebook's
    name, its file stem).

    Run by ``repro notebook`` / ``make reproduce`` (papermill with a profile), the parameters are what
    the run injected. Opened in JupyterLab, nothing was injected: the profile that the parameters cell
    names (``profile = "cpu"``) is applied from ``profiles/<profile>.yaml`` beside the notebook
    (:func:`apply_profile`), so an interactive run computes and reads what ``make reproduce`` does,
    never the notebook's paper-scale defaults into the committed results."""
    if notebook is not None and "_run" not in params:
        apply_profile(params, notebook)
    return Session(params)


def apply_profile(params: dict, notebook: str, folder: str | Path = ".") -> list[str]:
    """Set, in ``params`` (a notebook's globals), the values of the profile its ``profile`` parameter
    names (``folder/profiles/<profile>.yaml``, the notebook's section; checked as a run's are, by
    :func:`run_parameters`), for each parameter still at the notebook's default (one set by hand or by
    papermill stays); relative folders as papermill runs them, from the notebook's folder. Says in one
    line what it applied; returns the names set. Nothing to apply (no source beside the kernel, or no
    such profile) is said and changes nothing."""
    folder = Path(folder)
    source = folder / f"{notebook}.py"
    profile = folder / "profiles" / f"{params.get('profile', DEFAULT_PROFILE)}.yaml"
    if not source.is_file() or not profile.is_file():
        print(f"interactive run: {source if not source.is_file() else profile} not found, so the parameters cell's "
              "values run as they are")
        return []
    nb = read_source(source)
    defaults = default_parameters(nb)
    values = run_parameters(source, profile, None, nb)
    changed = [k for k, v in values.items() if k in defaults and params.get(k) == defaults[k] and v != defaults[k]]
    for k in changed:
        params[k] = values[k]
    params["_run"] = {"defaults": {k: defaults[k] for k in values if k in defaults}}
    print(f"interactive run: profile {profile} applied ({len(changed)} parameter(s) changed from the notebook's "
          "defaults, shown under 'This run'); set `profile` in the parameters cell to run another")
    return changed


def read_source(path: str | Path):
    """The notebook of a jupytext ``.py`` (or an ``.ipynb``) as an nbformat node."""
    import jupytext

    if not Path(path).is_file():
        raise ReproError(f"notebook source {path}: no such file")
    return jupytext.read(str(path))


def declared_parameters(nb) -> set[str]:
    """Names assigned in the cell tagged ``parameters``."""
    import ast

    for cell in nb.cells:
        if "parameters" in cell.get("metadata", {}).get("tags", []):
            tree = ast.parse(cell.source)
            return {t.id for node in tree.body if isinstance(node, (ast.Assign, ast.AnnAssign))
                    for t in (node.targets if isinstance(node, ast.Assign) else [node.target])
                    if isinstance(t, ast.Name)}
    raise ReproError("the notebook has no cell tagged 'parameters'")


def default_parameters(nb) -> dict:
    """The literal values the parameters cell assigns (the notebook's own defaults)."""
    import ast

    out = {}
    for cell in nb.cells:
        if "parameters" in cell.get("metadata", {}).get("tags", []):
            for node in ast.parse(cell.source).body:
                if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                    try:
                        out[node.targets[0].id] = ast.literal_eval(node.value)
                    except ValueError:
                        pass
    return out


DEFAULT_PROFILE = "cpu"  # the one profile whose runs write the committed results, figures and notebooks


def default_profile(source: str | Path) -> Path:
    """``profiles/cpu.yaml`` beside the notebook: what a run without ``--profile`` uses (never the
    notebook's own paper-scale defaults)."""
    return Path(source).resolve().parent / "profiles" / f"{DEFAULT_PROFILE}.yaml"


def writes_committed(source: str | Path, profile: str | Path | None, name: str) -> bool:
    """Whether a run writes the committed results, figures, notebooks and README blocks: only under the committed
    profile file itself (``profiles/cpu.yaml`` beside the notebook), never because another file says
    ``profile: cpu`` (without a profile file: the notebook's own folders, as its parameters cell says)."""
    if name != DEFAULT_PROFILE:
        return False
    return profile is None or Path(profile).resolve() == default_profile(source).resolve()


def profile_name(profile: str | Path | None, params: dict) -> str:
    return str(params.get("profile") or (Path(profile).stem if profile else DEFAULT_PROFILE))


def paper_module(source: str | Path, nb=None):
    """The package of the paper whose notebook is ``source`` (its metadata ``repro: module: ...``, the jupytext
    header): it builds the notebook's grid (``build(session)``, a :class:`repro.engines.plan.Sections` that
    :func:`repro.engines.plan.survey` walks) and types its parameters (``Params``, a :class:`repro.engines.params.NotebookParams`). The three papers are imported here by
    name; another module (a new paper's package, outside this repository) by the name the header gives."""
    import importlib

    from repro.papers import bandit, mpg, ogas

    name = ((read_source(source) if nb is None else nb).metadata.get("repro") or {}).get("module")
    if not name:
        raise ReproError(f"{source} names no paper module (notebook metadata 'repro: module: ...'): it cannot be planned")
    module = {m.__name__: m for m in (mpg, ogas, bandit)}.get(name) or importlib.import_module(name)
    if not hasattr(module, "build"):
        raise ReproError(f"{name} has no build(session)")
    return module


def run_parameters(source: str | Path, profile: str | Path | None = None, overrides: dict | None = None,
                   nb=None) -> dict:
    """The parameters a run of the notebook ``source`` sets (what papermill injects): its section of
    ``profile``, then ``overrides``. The one place that checks them against the notebook's declared
    parameters (a typo is an error naming it and the names the notebook declares). ``nb``: the
    notebook, if already read.

    Committed outputs are written only by the default profile: another profile that does not name its
    own ``results_dir`` / ``figures_dir`` writes under ``.cache/<profile>/``, and updates no README."""
    nb = read_source(source) if nb is None else nb
    params = load_profile(profile, Path(source).stem) if profile else {}
    name = profile_name(profile, params)
    declared = declared_parameters(nb)
    dtype = (overrides or {}).get("eval_dtype")
    if dtype is not None and dtype != params.get("eval_dtype", default_parameters(nb).get("eval_dtype")):
        # another precision than the profile's: a separate set of records and outputs under .cache/<profile>-<dtype>/,
        # reading the profile's records (those no dtype enters are shared); captions name the set
        defaults = default_parameters(nb)
        read = params.get("results_dir", defaults.get("results_dir"))
        base = params.get("profile") or (Path(profile).stem if profile else defaults.get("profile") or name)
        name = f"{base}-{dtype}"
        for k, v in (("profile", name), ("results_dir", f"../.cache/{name}/results"), ("read_results", read),
                     ("figures_dir", f"../.cache/{name}/figures/{Path(source).stem}"), ("update_readme", False)):
            if k in declared:
                params[k] = v
    if not writes_committed(source, profile, name):  # e.g. a copy of cpu.yaml that still says `profile: cpu`
        for k, v in (("results_dir", f"../.cache/{name}/results"),
                     ("figures_dir", f"../.cache/{name}/figures/{Path(source).stem}")):
            if k in declared:
                params.setdefault(k, v)
        if "update_readme" in declared:
            params["update_readme"] = False  # the README and docs blocks are the committed profile's alone
    params.update(overrides or {})
    where = f"{profile}: " if profile else ""
    unknown = sorted(set(params) - declared)
    if unknown:
        raise ReproError(f"{where}unknown parameter(s) {', '.join(unknown)} for {Path(source).stem} "
                         f"(it declares: {', '.join(sorted(declared))})")
    model = getattr(paper_module(source, nb), "Params", None) if (nb.metadata.get("repro") or {}).get("module") else None
    if model is not None:  # a paper's notebook: its parameters model types them
        model.of(params, where)
    else:
        check_types(params, default_parameters(nb), where)
    if profile:
        check_sections(profile, source)
    return params


def clean(nb):
    """Drop widget state and widget outputs, and tqdm text residue from stderr streams; join consecutive outputs of
    one stream (a cell's prints arrive as one output or several, depending on how fast the kernel sent them: the
    executed notebook must not depend on that)."""
    nb.metadata.pop("widgets", None)
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        kept = []
        for out in cell.get("outputs", []):
            if out.get("output_type") in ("display_data", "execute_result") and WIDGET in out.get("data", {}):
                continue
            if out.get("output_type") == "stream" and out.get("name") == "stderr":
                lines = [ln for ln in out["text"].splitlines(keepends=True) if not _PROGRESS.search(ln)]
                if not "".join(lines).strip():
                    continue
                out["text"] = "".join(lines)
            if kept and out.get("output_type") == "stream" and kept[-1].get("output_type") == "stream" \
                    and kept[-1].get("name") == out.get("name"):  # one stream however the kernel's messages were timed
                kept[-1]["text"] += out["text"]
                continue
            kept.append(out)
        cell["outputs"] = kept
    return nb


def check_output(source: str | Path, output: str | Path) -> None:
    """Refuse, before anything runs, an output the executed notebook could not be written to (a
    missing folder is not created), or one that would overwrite a jupytext source."""
    source, output = Path(source), Path(output)
    if output.is_dir():
        raise ReproError(f"output {output} is a folder; name the .ipynb file to write")
    if not output.parent.is_dir():
        raise ReproError(f"output {output}: folder {output.parent} does not exist")
    if not os.access(output.parent, os.W_OK | os.X_OK):
        raise ReproError(f"output {output}: folder {output.parent} is not writable")
    if source.suffix != ".ipynb" and output.exists() and source.exists() and output.samefile(source):
        raise ReproError(f"output {output} is the notebook's source itself")


def execute(source: str | Path, output: str | Path, profile: str | Path | None = None, cwd: str | Path | None = None,
            overrides: dict | None = None, log_output: bool = True) -> float:
    """Run the notebook ``source`` (.py) with ``profile`` (+ ``overrides``), write the cleaned
    executed notebook to ``output``; returns the wall-clock seconds."""
    nb = read_source(source)
    params = run_parameters(source, profile, overrides, nb)
    check_output(source, output)  # every check before anything runs
    from repro.assets.files import cache_root

    check_folder("the model cache (REPRO_CACHE, default ~/.cache/repro)", cache_root(), create=False)
    for name in ("figures_dir", "results_dir"):  # each folder the notebook writes into, before it runs
        value = params.get(name, default_parameters(nb).get(name))
        if isinstance(value, str):
            check_folder(name, Path(cwd or Path(source).parent) / value, create=name == "results_dir")
    output = Path(output)
    defaults = default_parameters(nb)  # for the notebook's "this run" table (Session.this_run)
    params["_run"] = {"defaults": {k: defaults[k] for k in params if k in defaults}}
    import nbformat
    import papermill as pm

    try:
        from papermill.exceptions import PapermillExecutionError
    except ImportError:  # a stand-in papermill (tests): nothing to catch
        PapermillExecutionError = ()  # noqa: N806

    os.environ["REPRO_PROGRESS"] = "text"
    if log_output:  # papermill logs each cell's output at INFO: show it while the notebook runs
        import logging

        logger = logging.getLogger("papermill")
        logger.setLevel(logging.INFO)
        if not logging.getLogger().handlers and not logger.handlers:
            logger.addHandler(logging.StreamHandler())
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        src, out = Path(tmp) / "in.ipynb", Path(tmp) / "out.ipynb"
        nbformat.write(nb, str(src))
        log = Path(tmp) / "kernel.log"
        try:
            pm.execute_notebook(str(src), str(out), parameters=params, cwd=str(cwd or Path(source).parent),
                                kernel_name="python3", log_output=log_output, progress_bar=False,
                                kernel_manager_class=_quiet_kernel_manager(log))
        except KeyboardInterrupt:  # what the kernel logged while it was stopped (a ZMQError) stays in its log,
            import logging  # and the cell's task that saw the kernel die is not reported as a traceback at exit

            logging.getLogger("asyncio").setLevel(logging.CRITICAL)
            raise
        except PapermillExecutionError as e:  # a cell raised: its cause in one line, not the kernel's traceback
            raise ReproError(cell_error(e)) from None
        except Exception:
            text = log.read_text(errors="replace").strip() if log.is_file() else ""
            if text:  # the kernel process's own complaints, where the notebook failed: they may say why
                print("kernel log (last lines):\n" + "\n".join(text.splitlines()[-20:]), file=sys.stderr)
            raise
        executed = clean(nbformat.read(str(out), as_version=4))
    check_interrupted()  # an interrupt Python swallowed while the notebook ran: no output is written
    atomic_write_text(output, nbformat.writes(executed) + "\n")
    return time.perf_counter() - t0


def cell_error(e) -> str:
    """A failed cell (papermill's ``PapermillExecutionError``) as one line: the cell's first line of code and the
    exception's own message (a :class:`ReproError` raised in the kernel is already one line for the user)."""
    value = " ".join(str(e.evalue).split()) or "(no message)"
    cause = value if e.ename in _REPRO_ERRORS else f"{e.ename}: {value}"
    code = [ln.strip() for ln in str(getattr(e, "source", "")).splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    first = code[0] if code and len(code[0]) <= 60 else code[0][:57] + "..." if code else ""
    where = f"the cell beginning `{first}`" if code else "a cell"
    return f"notebook: {where} failed: {cause}"


def _repro_errors() -> set[str]:
    import repro.errors as errors

    return {n for n, v in vars(errors).items() if isinstance(v, type) and issubclass(v, errors.ReproError)}


_REPRO_ERRORS = _repro_errors()


def _quiet_kernel_manager(log: Path):
    """A kernel manager whose kernel process writes its own stderr to ``log``, not the terminal: its logging
    only (a TCP warning at start; a ZMQError traceback when an interrupted run closes the sockets it was
    replying on); cell outputs come through the kernel's messages, unaffected."""
    from jupyter_client.manager import AsyncKernelManager

    class QuietKernelManager(AsyncKernelManager):
        async def _async_launch_kernel(self, kernel_cmd, **kw):
            with open(log, "a") as f:
                kw["stderr"] = f
                return await super()._async_launch_kernel(kernel_cmd, **kw)

    return QuietKernelManager


def cell_sources(nb) -> list[tuple[str, str]]:
    """(type, source) of every cell a person wrote (papermill's injected parameters excluded)."""
    return [(c.cell_type, c.source.strip()) for c in nb.cells
            if "injected-parameters" not in c.get("metadata", {}).get("tags", [])]


def tables_shown_twice(nb) -> list[int]:
    """The code cells of an executed notebook that render a table twice: a Markdown table displayed
    beside a pandas frame rendered as HTML (a cell whose last expression returns the frame)."""
    def html_frame(out) -> bool:
        return "dataframe" in "".join(out.get("data", {}).get("text/html", ""))

    def md_table(out) -> bool:
        return "|---" in "".join(out.get("data", {}).get("text/markdown", "")).replace(" ", "")

    return [i for i, c in enumerate(nb.cells) if c.cell_type == "code"
            and any(md_table(o) for o in c.get("outputs", [])) and any(html_frame(o) for o in c.get("outputs", []))]


def in_sync(py: str | Path, ipynb: str | Path) -> bool:
    """Whether the executed ``.ipynb`` holds exactly the cells of its jupytext source ``.py``."""
    import nbformat

    return cell_sources(read_source(py)) == cell_sources(nbformat.read(str(ipynb), as_version=4))
