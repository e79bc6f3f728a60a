"""Write environment.yml from pyproject.toml's exact pins (the single source of versions).

    .venv/bin/python tools/environment.py        # rewrite environment.yml
    .venv/bin/python tools/environment.py --check  # exit 1 if it is out of date (also a test)
"""
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def render() -> str:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    pins = project["dependencies"] + extras["dev"] + extras.get("docs", [])  # the groups with exact pins
    lines = ["# Generated from pyproject.toml by tools/environment.py (do not edit; `make setup` is the reference).",
             "name: prune-repro", "channels: [conda-forge]", "dependencies:",
             f"  - python={project['requires-python'].removeprefix('>=')}", "  - pip", "  - pip:"]
    lines += [f"      - {p}" for p in pins] + ["      - -e ."]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    target = ROOT / "environment.yml"
    if "--check" in sys.argv:
        sys.exit(0 if target.read_text() == render() else 1)
    target.write_text(render())
