"""Records -> tables (Markdown + CSV) and figures (PNG). Nothing here is typed by hand: every
number comes from a result record."""
from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

import numpy as np
import pandas as pd

from repro.evaluate.stats import Paired, paired_ratio, paired_ratio_draws, pooled_ppl
from repro.store import atomic_write_text
from repro.words import num, ordinal


class Table(NamedTuple):
    """What a report's table method returns, and what :meth:`repro.notebooks.Notebook.show` displays: the
    ``frame`` as shown, its ``caption`` (model, data and sample, profile), the ``reading`` generated from its
    numbers ("" when the table needs none), ``raw``: the numbers behind a formatted frame (its CSV) or None, and
    ``summary``: what a notebook shows of a table longer than :data:`LONG` rows (:func:`summarised`; the full table
    goes to ``figures/``)."""
    frame: pd.DataFrame
    caption: str
    reading: str = ""
    raw: pd.DataFrame | None = None
    summary: pd.DataFrame | None = None


LONG = 30  # a table longer than this is shown summarised in a notebook, in full in figures/


def summarised(table: Table, rows: str | list[str] | None, columns: str | list[str] | None, value: str,
               source: pd.DataFrame | None = None, fill: str = "–") -> Table:
    """``table`` with a ``summary``: the ``value`` column of ``source`` (default: the table's frame) pivoted to
    ``rows`` x ``columns`` (e.g. method x (model, units)), each cell as ``source`` writes it, in the order it first
    lists them; with ``rows`` None, ``source`` itself (rows a reader needs, ``value`` saying which). The table itself
    when it is short enough to show whole."""
    f = table.frame if source is None else source
    if len(table.frame) <= LONG:
        return table
    if rows is None:
        wide = f.set_index(f.columns[0])
        wide.attrs["shows"] = value
        return table._replace(summary=wide)
    rows, columns = [rows] if isinstance(rows, str) else rows, [columns] if isinstance(columns, str) else columns
    if f.duplicated(rows + columns).any():  # a cell of the summary would stand for two rows of the table
        raise ValueError(f"summarised: {rows + columns} do not identify the rows of {table.caption[:60]!r}")
    keys = f[columns].astype(str).agg(", ".join, axis=1)
    wide = f.assign(_col=keys).pivot_table(index=rows, columns="_col", values=value, aggfunc="first", sort=False)
    wide = wide.reindex(columns=list(dict.fromkeys(keys))).fillna(fill)
    wide.columns.name = None
    if len(rows) > 1:  # one column of row labels, not a tuple per row
        wide.index = pd.Index([", ".join(map(str, k)) for k in wide.index], name=", ".join(rows))
    wide.attrs["shows"] = f"{value}, by {' and '.join(rows)} (rows) and {', '.join(columns)} (columns)"
    return table._replace(summary=wide)


def fmt_ci(value: float, ci, digits: int = 2) -> str:
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return "–"
    s = f"{value:.{digits}f}"
    if ci:
        s += f" [{ci[0]:.{digits}f}, {ci[1]:.{digits}f}]"
    return s


def rank_marks(values: pd.Series, lower_is_better: bool = True) -> dict:
    """{index: "best"|"second"} of a column of numbers (NaN ignored; ties share the mark)."""
    v = values.dropna()
    if v.empty:
        return {}
    uniq = sorted(v.unique(), reverse=not lower_is_better)
    marks = {i: "best" for i in v.index[v == uniq[0]]}
    if len(uniq) > 1:
        marks.update({i: "second" for i in v.index[v == uniq[1]]})
    return marks


def marked_table(values: pd.DataFrame, cis: pd.DataFrame | None = None, lower_is_better: bool = True,
                 digits: int = 2, skip_rows=()) -> pd.DataFrame:
    """Text table: each cell 'value [lo, hi]', best per column in **bold**, second <u>underlined</u>.
    Rows in ``skip_rows`` (e.g. the dense reference) are shown but not ranked."""
    out = pd.DataFrame(index=values.index, columns=values.columns, dtype=object)
    for col in values.columns:
        ranked = values[col].drop(index=[r for r in skip_rows if r in values.index])
        marks = rank_marks(ranked, lower_is_better)
        for idx in values.index:
            ci = cis.at[idx, col] if cis is not None else None
            text = fmt_ci(values.at[idx, col], ci if isinstance(ci, (list, tuple)) else None, digits)
            mark = marks.get(idx)
            out.at[idx, col] = f"**{text}**" if mark == "best" else f"<u>{text}</u>" if mark == "second" else text
    return out


EMPTY = {"", "nan", "None", "–", "—"}  # how an empty cell reads once formatted


def merged_columns(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` as a reader should see it: a column empty in every row left out, and columns equal in every row (of at
    least three) shown once, under their headers joined by " = " (which says that they are equal here). The CSV
    keeps every column."""
    if len(df) < 3 or isinstance(df.columns, pd.MultiIndex) or not df.columns.is_unique:
        return df
    text = {c: tuple(df[c].astype(str)) for c in df.columns}
    keep, heads = [], {}
    for c in df.columns:
        if set(text[c]) <= EMPTY:
            continue
        first = next((k for k in keep if text[k] == text[c]), None)
        if first is None:
            keep.append(c)
            heads[c] = str(c)
        else:
            heads[first] += f" = {c}"
    return df[keep].set_axis([heads[c] for c in keep], axis=1)


def to_markdown(df: pd.DataFrame, caption: str = "", index: bool = True) -> str:
    body = merged_columns(df).to_markdown(index=index)
    return (caption.strip() + "\n\n" if caption else "") + body + "\n"


CSV_DIGITS = 10  # significant digits of a float in a CSV: the same text on every CPU (BLAS kernels differ in the last bits)


def _significant(v):
    if isinstance(v, float):
        return float(f"{v:.{CSV_DIGITS}g}")
    if isinstance(v, (tuple, list)):
        return type(v)(_significant(x) for x in v)
    return v


def csv_text(df: pd.DataFrame) -> str:
    """``df`` as CSV with every float (in a float column, or inside a tuple or list of an object column) to
    :data:`CSV_DIGITS` significant digits, so a table re-rendered on another machine is the same file."""
    df = df.copy()
    for c in [c for c in df.columns if df[c].dtype.kind == "O"]:
        df[c] = df[c].map(_significant)
    return df.to_csv(float_format=f"%.{CSV_DIGITS}g")


def save_table(df: pd.DataFrame, stem: str | Path, caption: str = "", raw: pd.DataFrame | None = None,
               index: bool | None = None) -> Path:
    """Write ``stem.md`` (with caption) and ``stem.csv`` (``raw`` numbers if given). The index is
    written unless it is a plain RangeIndex (or ``index`` says otherwise)."""
    stem = Path(stem)
    if index is None:
        index = not isinstance(df.index, pd.RangeIndex)
    atomic_write_text(stem.with_suffix(".md"), to_markdown(df, caption, index=index))
    atomic_write_text(stem.with_suffix(".csv"), csv_text(raw if raw is not None else df))
    return stem.with_suffix(".md")


def committed_csv(folder: str | Path, name: str, **read) -> pd.DataFrame | None:
    """A committed table's numbers (``folder/name``, as :func:`save_table` wrote them: the first column the index),
    or None where it is absent (a checkout without the committed figures)."""
    path = Path(folder) / name
    return pd.read_csv(path, index_col=0, **read) if path.is_file() else None


def fit_titles(fig) -> None:
    """Wrap each axes' title that is wider than its axes (so that neighbouring subplots' titles never overlap),
    keeping the lines the title already has."""
    import textwrap

    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    for ax in fig.axes:
        title = ax.title
        text = title.get_text()
        if not text:
            continue
        wide, room = title.get_window_extent(renderer).width, ax.get_window_extent(renderer).width
        if wide <= room:
            continue
        longest = max(len(line) for line in text.splitlines())
        chars = max(12, int(longest * room / wide) - 1)
        title.set_text("\n".join(w for line in text.splitlines() for w in textwrap.wrap(line, chars) or [""]))


def save_figure(fig, path: str | Path) -> Path:
    fit_titles(fig)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp.png")
    fig.savefig(tmp, dpi=120, bbox_inches="tight")
    tmp.replace(path)
    return path


def replace_block(path: str | Path, name: str, text: str) -> None:
    """Replace the text between ``<!-- begin NAME -->`` and ``<!-- end NAME -->`` in a file."""
    path = Path(path)
    src = path.read_text()
    begin, end = f"<!-- begin {name} -->", f"<!-- end {name} -->"
    if begin not in src or end not in src:
        raise ValueError(f"{path} has no {begin} ... {end} block")
    head, rest = src.split(begin, 1)
    _, tail = rest.split(end, 1)
    atomic_write_text(path, f"{head}{begin}\n{text.strip()}\n{end}{tail}")


def differences_table(rows: list[tuple[str, str, str]], profile: str) -> tuple[pd.DataFrame, str]:
    """A notebook's opening table, "what differs from the paper": ``rows`` of (aspect, the paper's
    setting, ours), ours generated from the parameters that ran (never typed in a markdown cell)."""
    frame = pd.DataFrame(rows, columns=["", "paper", f"here (`{profile}` profile)"])
    return frame, (f"**What differs from the paper** in this run (profile `{profile}`; each caption below names its "
                   "models, data, sample and dtype in one line, *This run* above says the rest).")


def model_line(e) -> str:
    """'smollm2-135m (SmolLM2-135M-Instruct (HuggingFaceTB), Q4_1 GGUF dequantized to fp32)': a model
    and what it really is, from its identity (the model card's without loading it)."""
    what = e.identity.get("upstream") or e.identity.get("source") or ""
    return f"{e.name} ({what})" if what else e.name


# ---- captions: one line of setting per table, the full provenance once per notebook ----------------

def caption(title: str, setting: str, profile: str, cache: str = "") -> str:
    """A table's caption, at most two lines: its bold ``title``, then one line naming what produced it
    (``setting``: models, data and sample size, dtype), the profile and how many of its cells were read
    from records (``cache``). What each model really is, its calibration and every parameter that ran
    are the notebook's *This run* block (:meth:`repro.notebooks.Session.this_run`), shown once."""
    return f"**{title.strip()}** {setting}; profile `{profile}`" + (f"; {cache}" if cache else "") + "."


def lm_setting(experiments: dict, data: str | None = None) -> str:
    """'smollm2-135m, gemma3-270m (<bos> + text windows); wikitext2:validation, 32 x 256 tokens; bfloat16':
    the models of ``experiments`` (``{name: Experiment}``) with their evaluation sample and dtype, each
    said once where every model shares it."""
    def once(values: list[str]) -> str:
        return values[0] if len(set(values)) == 1 else " / ".join(values)

    es = list(experiments.values())
    names = ", ".join(f"{n} (<bos> first)" if e.feeding_note else n for n, e in experiments.items())
    sample = once([f"{'all' if e.setup.max_windows is None else e.setup.max_windows} x {e.setup.seqlen} tokens"
                   for e in es])
    return f"{names}; {data or once([e.data.label for e in es])}, {sample}; {once([e.setup.eval_dtype for e in es])}"


def provenance(lines: list[str]) -> str:
    """The *This run* block's provenance: one bullet per model (what it is, where its weights come
    from, its evaluation and calibration samples)."""
    return "\n".join(f"- {line}" for line in lines)


# ---- what a table shows: one or two generated sentences after it -----------------------------------

def group_lines(frame: pd.DataFrame, by: list[str], say) -> str:
    """One bullet per group of ``frame`` by ``by`` (in the frame's order): ``- **a, b**: `` then ``say(group)``."""
    return "\n".join(f"- **{', '.join(map(str, key))}**: {say(g)}" for key, g in frame.groupby(by, sort=False))


def column_reading(vals: pd.DataFrame, focus: str | None = None, reference: str | None = "Dense",
                   lower_is_better: bool = True, what: str = "perplexity") -> str:
    """What a table of values shows, per column: the best row (and its value against ``reference``'s, where
    the table has that row) and where ``focus`` ranks; generated from the numbers, one bullet per column
    group of the first column level (a model)."""
    ref = vals.loc[reference].astype(float) if reference in vals.index else pd.Series(dtype=float)
    ranked = vals.drop(index=reference, errors="ignore")
    lines = []
    for g in dict.fromkeys(c[0] if isinstance(c, tuple) else c for c in vals.columns):
        cols = [c for c in vals.columns if (c[0] if isinstance(c, tuple) else c) == g]
        parts = []
        for c in cols:
            col = ranked[c].dropna().astype(float)
            if col.empty:
                continue
            ties = [r for r, mark in rank_marks(col, lower_is_better).items() if mark == "best"]
            where = f"at {c[1]} " if isinstance(c, tuple) and len(c) > 1 else ""
            text = f"{where}{' and '.join(ties)} {num(col[ties[0]])}"
            if lower_is_better and ref.get(c):
                text += f" (x{col[ties[0]] / ref[c]:.2g} {reference.lower()})"
            if focus in col.index and focus not in ties:
                rank = int(col.rank(ascending=lower_is_better, method="min")[focus])
                text += f", {focus} {num(col[focus])} ({ordinal(rank)} of {len(col)})"
            parts.append(text)
        if parts:
            head = f"**{g}**" + (f" ({reference.lower()} {num(ref[cols[0]])})" if pd.notna(ref.get(cols[0])) else "")
            lines.append(f"- {head}: {'lowest' if lower_is_better else 'highest'} {what} " + "; ".join(parts) + ".")
    return "\n".join(lines)


def ranking_reading(table: pd.DataFrame, by: list[str], value: str, focus: list[str], versus: str | None = None,
                    unit: str = "", lower_is_better: bool = True, method: str = "method") -> str:
    """What a long table of (group..., method, value) rows shows, one bullet per group (``by``): the best
    method and its value, then each ``focus`` method's value and rank, and ``versus``'s value."""
    lines = []
    for key, g in table.groupby(by, sort=False):
        key = key if isinstance(key, tuple) else (key,)
        s = g.set_index(method)[value].astype(float).dropna()
        if s.empty:
            continue
        rank = s.rank(ascending=lower_is_better, method="min")
        best = s.idxmin() if lower_is_better else s.idxmax()
        said = [f"{m} {s[m]:+.3g}{unit} ({ordinal(int(rank[m]))} of {len(s)})"
                for m in [*focus, *([versus] if versus else [])] if m in s.index and m != best]
        name = ", ".join(f"{v:.0%}" if isinstance(v, float) and v < 1 else str(v) for v in key)
        lines.append(f"- **{name}**: least damage {best} {s[best]:+.3g}{unit}" + ("; " + ", ".join(said) if said else "")
                     + ".")
    return "\n".join(lines)


def pool_draws(frame: pd.DataFrame, cell: list[str]) -> pd.DataFrame:
    """One row per cell (the columns ``cell`` name it) of a frame with one row per draw (``draw``: Random's
    seed, a calibration draw...): a cell drawn D times gets ``ppl`` the geometric mean over its draws and
    ``ci95`` its interval (:func:`repro.evaluate.stats.pooled_ppl`), ``window_nll`` the per-window mean over
    draws, ``draw_nll`` the [D, W] NLLs (what paired comparisons read:
    :func:`repro.evaluate.stats.paired_ratio_draws`), ``draws_ppl`` each draw's perplexity, ``n_draws`` and
    ``keys`` every draw's record, ``draws`` each draw's ``(source, id)`` where the frame's ``drawn`` column names the
    source its method draws from ("calibration", "seed"; None: the method draws nothing) and None otherwise; the
    other columns are the first draw's. A cell drawn once keeps its values."""
    if frame.empty:
        return frame.assign(draw_nll=[], draws_ppl=[], n_draws=[], keys=[], draws=[])
    rows = []
    for _, g in frame.sort_values("draw", kind="stable").groupby(cell, dropna=False, sort=False):
        row = g.iloc[0].copy()
        nll = [list(v) for v in g.window_nll]
        row["draw_nll"], row["draws_ppl"], row["n_draws"], row["keys"] = nll, list(g.ppl), len(g), list(g.key)
        source = row.get("drawn")
        row["draws"] = [(source, int(d)) for d in g.draw] if isinstance(source, str) else None
        if len(g) > 1:
            row["ppl"], row["ci95"] = pooled_ppl(nll)
            row["window_nll"] = list(np.mean(nll, axis=0))
        rows.append(row)
    return pd.DataFrame(rows).reset_index(drop=True)


def one_draw(cell: pd.Series, draw: int) -> pd.Series | None:
    """A cell of a :func:`pool_draws` frame as it was on calibration draw (or seed) ``draw`` alone: that draw's
    window NLLs and perplexity, compared window by window (:func:`paired_cells`); the cell itself where its method
    draws nothing (its ``draws`` is None); None where it never ran on that draw."""
    if not isinstance(cell.get("draws"), list):
        return cell
    ids = [d for _, d in cell.draws]
    if draw not in ids:
        return None
    i = ids.index(draw)
    out = cell.drop(["draw_nll", "draws"])
    out["window_nll"], out["ppl"], out["n_draws"], out["draw"] = list(cell.draw_nll[i]), cell.draws_ppl[i], 1, draw
    return out


def paired_cells(a: pd.Series, b: pd.Series) -> Paired:
    """``ppl(a) / ppl(b)`` of two cells of a :func:`pool_draws` frame on their shared windows: draws both sides
    share paired draw by draw, independent draws widening the interval, unmatched ones refused
    (:func:`repro.evaluate.stats.paired_ratio_draws`); two cells of one draw, window by window."""
    if "draw_nll" in a and "draw_nll" in b:
        return paired_ratio_draws(a.draw_nll, b.draw_nll, a.get("draws"), b.get("draws"))
    return paired_ratio(a.window_nll, b.window_nll)
