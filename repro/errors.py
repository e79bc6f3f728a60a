"""Errors that carry a one-line message meant for the user (the CLI prints it and exits 2)."""
import threading

# Set by the CLI's SIGINT / SIGTERM handler before it raises KeyboardInterrupt: Python drops an exception raised
# inside a ``__del__`` or a callback ("Exception ignored in ..."), so long loops and output writes check this too
# and an interrupt is never swallowed.
INTERRUPTED = threading.Event()


def check_interrupted() -> None:
    """Raise KeyboardInterrupt if an interrupt arrived, even one that Python swallowed."""
    if INTERRUPTED.is_set():
        raise KeyboardInterrupt


class ReproError(Exception):
    """Base class: bad input or an unusable asset. Never a bug in repro itself."""


class UnknownNameError(ReproError, KeyError):
    """A model, dataset or method name that no registry knows."""

    def __init__(self, kind: str, name: str, known):
        self.kind, self.name, self.known = kind, name, sorted(known)
        super().__init__(f"unknown {kind} {name!r}; known: {', '.join(self.known)}")

    def __reduce__(self):  # rebuilt from its own arguments in the process that reads a worker's error
        return type(self), (self.kind, self.name, self.known)

    def __str__(self) -> str:  # KeyError would otherwise quote the message
        return self.args[0]


class Interrupted(Exception):
    """The user interrupted a run (Ctrl-C, SIGTERM): ``cells`` records were written before it; every
    one is whole (written atomically), so a rerun resumes. The CLI says so in one line, exit 130."""

    def __init__(self, cells: int | None = None):
        self.cells = cells
        super().__init__("interrupted: " + (f"{cells} cell(s) written, " if cells is not None else "")
                         + "a rerun resumes from the records written")

    def __reduce__(self):
        return type(self), (self.cells,)


class RecordWriteError(ReproError):
    """A record could not be written (a full disk, a folder made read-only mid-run): a run stops at the first."""


class HashMismatchError(ReproError):
    """A data or model file whose sha256 is not the expected one."""


class UnsupportedArchitectureError(ReproError):
    """A model family without an adapter in repro.arch."""


def check_fraction(name: str, value: float) -> float:
    """Validate a sparsity-like number: finite and in [0, 1)."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ReproError(f"{name} must be a number in [0, 1), got {value!r}") from None
    if not (0.0 <= v < 1.0):  # NaN fails both comparisons
        raise ReproError(f"{name} must be in [0, 1), got {value!r}")
    return v


def _is_number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def check_list(name: str, value, item: str = "name", lo: float | None = None, hi: float | None = None,
               known=None, allow_none: bool = False) -> list:
    """A parameter that must be a list: of names (``item="name"``, each among ``known`` if given), of
    integers or of numbers (each in ``[lo, hi)`` where given). One line naming the parameter and what is
    wrong, before any work: a string is not split into letters, a number out of range is refused."""
    if value is None and allow_none:
        return value
    if not isinstance(value, (list, tuple)):
        raise ReproError(f"parameter {name} must be a list of {item}s, got {value!r}")
    for v in value:
        if item == "name":
            if not isinstance(v, str) or not v:
                raise ReproError(f"parameter {name} must be a list of names, got {v!r} in it")
            if known is not None and v not in known:
                raise UnknownNameError(f"{name} entry", v, known)
            continue
        ok = _is_number(v) and (item != "integer" or float(v) == int(v)) and v == v and abs(v) != float("inf")
        if not ok or (lo is not None and v < lo) or (hi is not None and v >= hi):
            span = f" in [{lo:g}, {hi:g})" if lo is not None and hi is not None else (f" >= {lo:g}" if lo is not None else "")
            raise ReproError(f"parameter {name} must be a list of {item}s{span}, got {v!r} in it")
    return list(value)


def check_number(name: str, value, integer: bool = False, lo: float | None = None, hi: float | None = None,
                 allow_none: bool = False):
    """A parameter that must be one number (an integer where ``integer``) in ``[lo, hi)``."""
    if value is None and allow_none:
        return value
    try:
        check_list(name, [value], "integer" if integer else "number", lo, hi)
    except ReproError:
        span = f" in [{lo:g}, {hi:g})" if lo is not None and hi is not None else (f" >= {lo:g}" if lo is not None else "")
        what = "a whole number" if integer else "a number"
        raise ReproError(f"parameter {name} must be {what}{span}{' (or null)' if allow_none else ''}, "
                         f"got {value!r}") from None
    return value


def check_path(what: str, path, writable: bool = False):
    """A path a command reads or writes, checked before any work: no component longer than the file
    system allows (255 bytes) and not 4096 bytes in all (the kernel's ENAMETOOLONG would otherwise come
    after the work); with ``writable``, its folder exists and can be written."""
    import os
    from pathlib import Path

    p = Path(path)
    if len(os.fsencode(str(p))) >= 4096 or any(len(os.fsencode(part)) > 255 for part in p.parts):
        raise ReproError(f"{what}: path too long ({len(str(p))} characters; at most 255 per name)")
    if writable:
        folder = p.parent if str(p.parent) else Path(".")
        if not folder.is_dir():
            raise ReproError(f"{what}: folder {folder} does not exist")
        if not os.access(folder, os.W_OK | os.X_OK):
            raise ReproError(f"{what}: folder {folder} is not writable")
    return p


def check_results_dir(path, min_free_mb: int = 50):
    """A results folder, before the first cell (:func:`check_folder`)."""
    return check_folder("results_dir", path, min_free_mb)


def check_folder(name: str, path, min_free_mb: int = 50, create: bool = True):
    """A folder a run writes into (results, figures, the model cache), before any work: it exists or can be
    created, is a folder, can be written (a file is created and removed in it) and has ``min_free_mb`` MB free.
    ``create=False`` (a dry run, which writes nothing): the folder, or its nearest existing parent, is a
    writable folder. One line naming the parameter, the folder and the reason."""
    import os
    import shutil
    import tempfile

    if not isinstance(path, (str, os.PathLike)) or not str(path).strip():
        raise ReproError(f"{name} must name a folder, got {path!r}")
    p = check_path(name, path)
    if p.exists() and not p.is_dir():
        raise ReproError(f"{name} {p} is a file, not a folder")
    if not create:
        parent = p
        while not parent.exists() and parent != parent.parent:
            parent = parent.parent
        if not parent.is_dir():
            raise ReproError(f"{name} {p} cannot be written: {parent} is a file, not a folder")
        if not os.access(parent, os.W_OK | os.X_OK):
            raise ReproError(f"{name} {p} cannot be written: {parent} is not writable")
        return p
    try:
        p.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=p, prefix=".write-check-"):
            pass
    except OSError as e:
        raise ReproError(f"{name} {p} cannot be written: {e.strerror or e}") from None
    free = shutil.disk_usage(p).free / 1e6
    if free < min_free_mb:
        raise ReproError(f"{name} {p}: only {free:.0f} MB free (at least {min_free_mb} MB needed)")
    return p
