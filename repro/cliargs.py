"""The command line's argument types and help: a usage error is one line and exit status 2, every
option's help shows its default, ``--method`` lists its registry's names (without importing torch after the
first time), and numbers are checked for type, finiteness and range where argparse reads them."""
from __future__ import annotations

import argparse
import importlib
import io
import json
import math
import os
import stat
import sys
from pathlib import Path

# where each command's --method names come from (read when --help is shown: the registries import torch)
METHOD_REGISTRIES = {"heads": ("repro.methods.heads", "HEAD_METHODS"),
                     "prune": ("repro.methods.unstructured", "PRUNERS"),
                     "bandit": ("repro.methods.bandit", "SELECTORS")}
MAX_SEED = 2**63 - 1  # torch and numpy generators take any seed in [0, 2**63)


class Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line ``error: ...`` on stderr and exit status 2."""

    def error(self, message: str):
        self.exit(2, f"error: {self.prog}: {' '.join(message.split())}\n")


class Formatter(argparse.RawDescriptionHelpFormatter):
    """Help that lists each ``--method``'s valid names from its registry (unbroken)."""

    def _split_lines(self, text, width):  # never split a name such as "wanda-head" at its hyphen
        import textwrap

        return textwrap.wrap(" ".join(text.split()), width, break_on_hyphens=False)

    def _get_help_string(self, action):
        text = super()._get_help_string(action) or ""
        if getattr(action, "registry", None):
            text += ": " + ", ".join(method_names(*action.registry))
        shown = action.default not in (None, False, argparse.SUPPRESS) and action.option_strings
        if shown and "default" not in text:
            text += f" (default: {action.default})"
        return text


def method_names(module: str, registry: str) -> list[str]:
    """The names in ``module``'s method ``registry``, for ``--help``. Importing a registry imports torch
    (seconds), so the names are kept under ``$REPRO_CACHE/help/``, keyed by the sha256 of the module's
    source (every entry of each registry is written in its own module): only the first ``--help`` after
    the module changes pays for the import."""
    import hashlib
    import os

    source = Path(__file__).parent.joinpath(*module.split(".")[1:]).with_suffix(".py")
    digest = hashlib.sha256(source.read_bytes()).hexdigest()[:16]
    root = Path(os.environ.get("REPRO_CACHE", Path.home() / ".cache" / "repro"))
    cached = root / "help" / f"{module}.{registry}.{digest}.json"
    try:
        return json.loads(cached.read_text())
    except (OSError, ValueError):
        pass
    names = list(getattr(importlib.import_module(module), registry))
    try:
        from repro.store import atomic_write_text

        cached.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(cached, json.dumps(names))
    except OSError:  # a read-only cache costs only the speed
        pass
    return names


def number(kind: type, lo: float, hi: float, what: str, lo_open: bool = False, hi_open: bool = False):
    """An argparse type: a finite ``kind`` in the interval from ``lo`` to ``hi``, else one line saying
    what was ``what`` (argparse names the option)."""
    def parse(text: str):
        try:
            v = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}") from None
        if not math.isfinite(v):
            raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
        if v < lo or v > hi or (lo_open and v == lo) or (hi_open and v == hi):
            raise argparse.ArgumentTypeError(f"expected {what}, got {v}")
        return v
    return parse


positive = number(int, 1, math.inf, "a positive integer")
positive_number = number(float, 0.0, math.inf, "a positive number", lo_open=True)  # e.g. a throughput
nonneg = number(int, 0, MAX_SEED, "a non-negative integer below 2**63")  # a seed
finite = number(float, -math.inf, math.inf, "a finite number")
fraction = number(float, 0.0, 1.0, "a number in [0, 1)", hi_open=True)  # a sparsity
open_fraction = number(float, 0.0, 1.0, "a number in (0, 1)", lo_open=True, hi_open=True)  # a share of units


def stdout_problem() -> str | None:
    """Why the result line could not be written to standard output (closed, or /dev/full), else None."""
    if sys.stdout is None:
        return "standard output is closed"
    try:
        st = os.fstat(sys.stdout.fileno())
    except (io.UnsupportedOperation, AttributeError, ValueError):
        return None  # not a file descriptor (a test's capture): writable as far as we can tell
    except OSError:
        return "standard output is closed"
    try:
        if stat.S_ISCHR(st.st_mode) and st.st_rdev == os.stat("/dev/full").st_rdev:
            return "standard output is /dev/full (every write fails)"
    except OSError:
        pass
    return None


def setting(text: str) -> tuple[str, object]:
    """``NAME=VALUE`` of ``--set``: the value read as YAML (``float32``, ``0.5``, ``[1, 2]``, ``{a: 1}``)."""
    import yaml

    name, sep, value = text.partition("=")
    if not sep or not name.strip():
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE, got {text!r}")
    try:
        return name.strip(), yaml.safe_load(value)
    except yaml.YAMLError as err:
        raise argparse.ArgumentTypeError(f"{name}: not a YAML value: {value!r} ({err.__class__.__name__})")


def set_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--set", dest="settings", type=setting, action="append", default=[], metavar="NAME=VALUE",
                   help="set one notebook parameter over the profile's (repeatable; the value is read as YAML, e.g. "
                        "--set search_dtype=float32); checked like the profile's values before anything is loaded")


def eval_dtype_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--eval-dtype", default=None, choices=["float32", "bfloat16", "float16"],
                   help="evaluate in this dtype instead of the profile's: a separate set of records and outputs "
                        "under .cache/<profile>-<dtype>/ (it reads the profile's records that no dtype enters)")
