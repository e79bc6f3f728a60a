"""Errors that carry a one-line message meant for the user (the CLI prints it and exits 2)."""


class ReproError(Exception):
    """Base class: bad input or an unusable asset. Never a bug in repro itself."""


class UnknownNameError(ReproError, KeyError):
    """A model, dataset or method name that no registry knows."""

    def __init__(self, kind: str, name: str, known):
        self.kind, self.name = kind, name
        super().__init__(f"unknown {kind} {name!r}; known: {', '.join(sorted(known))}")

    def __str__(self) -> str:  # KeyError would otherwise quote the message
        return self.args[0]


class Interrupted(Exception):
    """The user interrupted a run (Ctrl-C, SIGTERM): ``cells`` records were written before it; every
    one is whole (written atomically), so a rerun resumes. The CLI says so in one line, exit 130."""

    def __init__(self, cells: int | None = None):
        self.cells = cells
        super().__init__("interrupted: " + (f"{cells} cell(s) written, " if cells is not None else "")
                         + "a rerun resumes from the records written")


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
