"""A notebook's parameters as one typed model: each default is declared once, in a paper's subclass of
:class:`NotebookParams` (``repro.papers.<paper>.params``); the notebook's parameters cell and every profile are
checked against it (``tests/test_params.py``), and :meth:`NotebookParams.of` validates a run's values once, before
any model is loaded: booleans are booleans, lists are lists, numbers in range, names known; one line naming the
parameter otherwise.

The fields here are the session's, shared by every notebook (where its results, figures and generated blocks go,
the evaluation and calibration :class:`repro.engines.base.Setup`); a paper adds the parameters that choose its cells.
"""
from __future__ import annotations

from types import UnionType
from typing import Any, ClassVar, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict, ValidationError

from repro.errors import ReproError
from repro.words import short

Number = Union[int, float]  # kept as written (1 stays 1, 0.5 stays 0.5): a record key never changes by validation


class NotebookParams(BaseModel):
    """What every paper notebook is run with (``profile`` names the profile; results, figures and the README /
    docs blocks are written under the paths given, relative to the notebook's folder)."""
    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    profile: str = "cpu"
    sample_label: str = ""  # what a profile's cut is (e.g. "lab sample"): every caption and the notebook's top say it
    try_it: bool = True  # the "Try it" exercises compute live (float32, seconds); false: they say how to run them
    recompute: bool = False
    results_dir: str = "../results"
    read_results: str | None = None  # a results folder also read, never written
    figures_dir: str
    readme: str = "../README.md"
    results_page: str = "../docs/results.md"
    update_readme: bool = True
    models: list[str] = ["smollm2-135m", "gemma3-270m"]
    model_settings: dict[str, dict[str, Any]] = {}  # per model: any Setup field (and what the paper's engine takes)
    data: str
    seqlen: int
    max_windows: int | None
    batch_size: int
    eval_dtype: str = "auto"
    device: str | None = None
    calib_data: str = "wikitext2-train"
    calib_nsamples: int
    calib_seqlen: int
    methods: list[str]

    folders: ClassVar[tuple[str, ...]] = ("results_dir", "figures_dir")  # each must name a folder

    def model_post_init(self, context) -> None:
        for k in self.folders:
            if not getattr(self, k).strip():
                raise ReproError(f"parameter {k} must name a folder, got {getattr(self, k)!r}")
        self.check_positions()  # the shared fields' ranges are repro.engines.base.Setup's
        self.check()

    def at_default(self, name: str) -> bool:
        """Whether parameter ``name`` is left at its declared default (the paper's models, where it names them)."""
        return getattr(self, name) == type(self).model_fields[name].get_default(call_default_factory=True)

    def check_positions(self) -> None:
        """Every window within each model's positions, where they are known before a load
        (:func:`repro.assets.models.known_positions`): a seqlen of 100000 is refused here, not after the grid."""
        from repro.assets.models import known_positions

        for model in self.models:
            limit = known_positions(model)
            if limit is None:
                continue
            own = self.model_settings.get(model, {})
            for name in ("seqlen", "calib_seqlen"):
                value = own.get(name, getattr(self, name))
                if isinstance(value, int) and value > limit:
                    raise ReproError(f"parameter {name} {value} exceeds {model}'s {limit} positions")

    def check_among(self, *names: str, within: str = "models") -> None:
        """Each list parameter of ``names`` that a run set names only entries of the parameter ``within`` (a
        per-model list naming a model the notebook does not run would otherwise drop its table without a word).
        A list left at its declared default (the paper's models) applies to those of its models the run has."""
        known = list(getattr(self, within))
        for name in names:
            if self.at_default(name):
                continue
            for v in getattr(self, name):
                if v not in known:
                    raise ReproError(f"parameter {name} names {v!r}, which is not in {within} "
                                     f"({', '.join(map(str, known)) or 'empty'})")

    def check(self) -> None:
        """A paper's checks beyond the types (names known, numbers in range): one line naming the parameter."""

    @classmethod
    def of(cls, values: dict, where: str = ""):
        """The parameters among ``values`` (a notebook's globals, a profile merged onto the defaults; other names
        are ignored), validated: a :class:`ReproError` of one line naming the first bad parameter."""
        given = {k: values[k] for k in cls.model_fields if k in values}
        try:
            return cls(**given)
        except ValidationError as e:
            loc = e.errors()[0]["loc"]
            name = str(loc[0])
            if e.errors()[0]["type"] == "missing":
                inner = "".join(f"[{k!r}]" for k in loc[1:])  # a field of a typed setting (paper_calib's, ...)
                raise ReproError(f"{where}parameter {name}{inner} is missing") from None
            if name in cls.folders:
                raise ReproError(f"{where}parameter {name} must name a folder, got {given[name]!r}") from None
            raise ReproError(f"{where}parameter {name} must be {kind(cls.model_fields[name].annotation)} (the "
                             f"notebook's default is {short(cls.model_fields[name].default, 90)}), got {given[name]!r}") from None

    @classmethod
    def defaults(cls) -> dict:
        """Every parameter's declared default (what a notebook's parameters cell must say)."""
        return {k: f.get_default(call_default_factory=True) for k, f in cls.model_fields.items() if not f.is_required()}


def kind(annotation) -> str:
    """What a parameter's type asks for, in words: ``list[str]`` -> 'a list of names', ``int | None`` -> 'a whole
    number or null'."""
    args = [a for a in get_args(annotation) if a is not type(None)]
    origin = get_origin(annotation)
    if origin is Union or origin is UnionType:
        if {int, float} <= set(args):
            text = "a number"
        else:
            text = " or ".join(kind(a) for a in args)
        return text + (" or null" if type(None) in get_args(annotation) else "")
    if origin is list:
        item = kind(args[0]) if args else "value"
        plural = {"a name": "names", "a string": "names", "a whole number": "whole numbers", "a number": "numbers",
                  "a mapping": "mappings", "true or false": "booleans"}
        null = item.endswith(" or null")
        item = item.removesuffix(" or null")
        text = plural.get(item, item.removeprefix("a ") + "s" if item.startswith("a ") else item)
        return f"a list of {text}" + (" (or null)" if null else "")
    if origin is dict or annotation is dict:
        return "a mapping"
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):  # a typed setting: name its fields
        return f"a mapping of {', '.join(annotation.model_fields)}"
    return {bool: "true or false", int: "a whole number", float: "a number", str: "a string"}.get(annotation,
                                                                                                  "a value")


