"""Versions that change numbers are pinned exactly in one place; environment.yml follows them."""
import subprocess
import sys
import tomllib

from conftest import ROOT


def test_environment_yml_is_generated_from_the_pins():
    r = subprocess.run([sys.executable, str(ROOT / "tools/environment.py"), "--check"])
    assert r.returncode == 0, "environment.yml is out of date: run tools/environment.py"


def test_every_dependency_is_pinned_exactly():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    pins = project["dependencies"] + project["optional-dependencies"]["dev"]
    loose = [p for p in pins if "==" not in p]
    assert not loose, f"not pinned exactly: {loose}"
    names = {p.split("==")[0] for p in pins}
    assert {"torch", "transformers", "tokenizers", "lm-eval", "numpy", "scipy"} <= names
