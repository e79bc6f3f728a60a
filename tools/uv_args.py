"""Print the `uv pip install` options that give uv the package sources pip is configured with here.

`make setup` installs with uv (the same versions as pip resolves, about twice as fast on 2 cores, the
bytecode compiled as pip does), but uv does not read pip's configuration. This reads it (`pip config list`:
pip.conf files and PIP_* variables) and prints the matching options: index-url, extra-index-url (several,
space-separated as pip writes them), find-links, constraint and cert. A source pip has that uv cannot take
makes the Makefile fall back to pip, as does any failure of uv.

Usage: python tools/uv_args.py   (from the interpreter whose pip is configured)
"""
from __future__ import annotations

import shlex
import subprocess
import sys

OPTIONS = {"index-url": "--index-url", "extra-index-url": "--extra-index-url", "find-links": "--find-links",
           "constraint": "--constraint"}


def pip_config() -> dict[str, list[str]]:
    """{pip option: values} from `pip config list` (later lines override earlier ones, as pip reads them)."""
    out = subprocess.run([sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True).stdout
    config: dict[str, list[str]] = {}
    for line in out.splitlines():
        key, _, value = line.partition("=")
        name = key.rsplit(".", 1)[-1]
        config[name] = shlex.split(value.strip().strip("'\""))
    return config


def uv_args(config: dict[str, list[str]]) -> list[str]:
    """The uv options for ``config``; ``--index-strategy unsafe-best-match`` because pip takes the best version
    over all its indexes, where uv's default stops at the first index that has the package."""
    args = ["--index-strategy", "unsafe-best-match"]
    for name, flag in OPTIONS.items():
        for value in config.get(name, []):
            args += [flag, value]
    return args


if __name__ == "__main__":
    print(shlex.join(uv_args(pip_config())))
