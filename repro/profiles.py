"""Profiles: YAML files of notebook parameters (``notebooks/profiles/*.yaml``), read strictly (a key given twice is
refused, each notebook named by a section of its own) and their values typed against the notebook's defaults where a
notebook has no parameters model (a paper's notebook is typed by its ``Params``: :mod:`repro.engines.params`)."""
from __future__ import annotations

from pathlib import Path

import yaml

from repro.errors import ReproError
from repro.words import short


class _StrictLoader(yaml.SafeLoader):
    """YAML's safe loader, refusing a key given twice in one mapping (YAML would keep the last silently) and any
    alias (``*name``): a profile has no use for them, and nested aliases expand exponentially (an "alias bomb" took
    minutes to refuse)."""

    def compose_node(self, parent, index):
        if self.check_event(yaml.events.AliasEvent):
            event = self.peek_event()
            raise yaml.composer.ComposerError(None, None, f"alias *{event.anchor} (YAML anchors and aliases are not "
                                              "allowed in a profile: write the value out)", event.start_mark)
        return super().compose_node(parent, index)


def _no_duplicates(loader, node, deep=False):
    seen = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise yaml.constructor.ConstructorError(None, None, f"key {key!r} given twice", key_node.start_mark)
        seen.add(key)
    return loader.construct_mapping(node, deep=deep)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _no_duplicates)


def _read_yaml(path: str | Path):
    """A profile file's YAML; a missing file, a key given twice or a parser error is one line naming the
    file and, for YAML, the line and column the parser stopped at."""
    if not Path(path).is_file():
        raise ReproError(f"profile {path}: no such file")
    try:
        return yaml.load(Path(path).read_text(encoding="utf-8"), Loader=_StrictLoader)  # noqa: S506 - a SafeLoader
    except UnicodeDecodeError as e:
        raise ReproError(f"profile {path}: not UTF-8 text ({e.reason} at byte {e.start})") from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None) or getattr(e, "context_mark", None)
        if isinstance(e, yaml.composer.ComposerError) and "alias" in str(e.problem):
            raise ReproError(f"profile {path}: {e.problem} (line {mark.line + 1})") from None
        if isinstance(e, yaml.constructor.ConstructorError) and "given twice" in str(e.problem):
            raise ReproError(f"profile {path}: {e.problem} (line {mark.line + 1}): the last would win silently; "
                             "keep one") from None
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = " ".join(str(getattr(e, "problem", None) or e).split())
        raise ReproError(f"profile {path}: not valid YAML{where}: {problem}") from None


def load_profile(path: str | Path, name: str | None = None) -> dict:
    """A profile's parameters for the notebook ``name`` (its file stem, e.g. ``02_ogas_unstructured``).

    A profile holds the keys every notebook shares at the top level and one section per notebook
    under ``notebooks:``; the notebook gets the shared keys updated with its own section. Whether
    each key is one of the notebook's parameters is :func:`run_parameters`' check."""
    raw = _read_yaml(path)
    if raw is None or raw == {}:
        raise ReproError(f"profile {path} is empty: name the parameters it sets (an empty profile would run the "
                         "notebook's paper-scale defaults into the committed results)")
    if not isinstance(raw, dict):
        raise ReproError(f"{path}: a profile is a mapping of parameter names to values")
    sections = raw.pop("notebooks", None) or {}
    if not isinstance(sections, dict) or not all(isinstance(v, dict) for v in sections.values()):
        raise ReproError(f"{path}: 'notebooks' maps each notebook name to a mapping of parameters")
    params = dict(raw)
    if name is not None:
        if not sections:
            raise ReproError(f"profile {path} names no notebook section under 'notebooks' (it would run the "
                             f"notebook's paper-scale defaults): add one for {name!r}")
        if name not in sections:
            raise ReproError(f"{path}: no section for notebook {name!r} under 'notebooks' "
                             f"(it has: {', '.join(sorted(sections))})")
        params.update(sections.get(name, {}))
    return params


def check_sections(path: str | Path, source: str | Path) -> None:
    """Every notebook section of the profile ``path`` names a notebook beside ``source`` (a misspelt section
    would otherwise never run)."""
    raw = _read_yaml(path)
    known = sorted(p.stem for p in Path(source).resolve().parent.glob("[0-9]*.py"))
    sections = (raw or {}).get("notebooks") or {} if isinstance(raw, dict) else {}
    unknown = sorted(set(sections) - set(known)) if known and isinstance(sections, dict) else []
    if unknown:
        raise ReproError(f"profile {path}: section(s) {', '.join(map(repr, unknown))} under 'notebooks' name no "
                         f"notebook (there are: {', '.join(known)})")


def check_types(params: dict, defaults: dict, where: str) -> None:
    """Each value of the type of the notebook's default for that parameter, in one line naming the key: booleans
    are booleans (YAML's ``"false"`` is a string, and a string is true), lists are lists (a bare string would be
    split into characters), numbers numbers; null stands for a number or a string ("none", "all") only. Parameters
    whose default is None take any value."""
    kinds = ((bool, "true or false"), (int, "a whole number"), (float, "a number"), (str, "a string"),
             ((list, tuple), "a list"), (dict, "a mapping"))
    for k, v in params.items():
        d = defaults.get(k)
        if d is None:
            continue
        kind, what = next((t, w) for t, w in kinds if isinstance(d, t))
        if v is None and kind in (int, float, str):
            continue
        ok = (isinstance(v, bool) if kind is bool else
              isinstance(v, (int, float)) and not isinstance(v, bool) if kind is float else
              isinstance(v, int) and not isinstance(v, bool) if kind is int else
              isinstance(v, list) if kind == (list, tuple) else isinstance(v, kind))
        if not ok:
            raise ReproError(f"{where}parameter {k} must be {what} (the notebook's default is {short(d, 90)}), got {v!r}")
    for k in ("results_dir", "figures_dir"):
        if k in params and k in defaults and (not isinstance(params[k], str) or not params[k].strip()):
            raise ReproError(f"{where}parameter {k} must name a folder, got {params[k]!r}")
