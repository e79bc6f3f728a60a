"""tools/uv_args.py: make setup's uv gets the package sources pip is configured with."""
from types import SimpleNamespace

from conftest import load_tool

LISTED = """:env:.find-links='/opt/wheels'
global.constraint='/etc/xdg/pip/constraints.txt'
global.extra-index-url='file:///opt/pypi/simple file:///opt/pypi-more/simple'
global.find-links='/opt/wheels'
global.cert='/etc/ssl/certs/ca-certificates.crt'
"""


def test_every_index_find_links_and_constraint_of_pip_reaches_uv(monkeypatch):
    tool = load_tool("uv_args")
    monkeypatch.setattr(tool.subprocess, "run", lambda *a, **k: SimpleNamespace(stdout=LISTED))
    args = tool.uv_args(tool.pip_config())
    assert args == ["--index-strategy", "unsafe-best-match",
                    "--extra-index-url", "file:///opt/pypi/simple", "--extra-index-url", "file:///opt/pypi-more/simple",
                    "--find-links", "/opt/wheels", "--constraint", "/etc/xdg/pip/constraints.txt"]


def test_no_pip_configuration_leaves_uv_on_its_defaults(monkeypatch):
    tool = load_tool("uv_args")
    monkeypatch.setattr(tool.subprocess, "run", lambda *a, **k: SimpleNamespace(stdout=""))
    assert tool.uv_args(tool.pip_config()) == ["--index-strategy", "unsafe-best-match"]
