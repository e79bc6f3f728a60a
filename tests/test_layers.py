"""The package's layering, read from the source: no import runs upward, no import circle (function-
local imports included), and the notebooks stay thin (they call experiments and readers, never the
floors below them, and never build a record key)."""
import ast
import re
from pathlib import Path

import pytest

from repro.notebooks import cell_sources, read_source

from conftest import ROOT

# each top-level part of repro and its floor; a module imports only from its own floor or below
LAYERS = {"errors": -1, "progress": -1, "words": -1, "processes": -1, "assets": 0, "arch": 1, "structure": 2, "calib": 3, "methods": 4,
          "evaluate": 5, "store": 6, "report": 6, "claims": 6, "survive": 6, "origin": 6, "family": 6, "migrate": 6, "engines": 7, "papers": 8, "notebooks": 9, "jobs": 9,
          "cli": 9, "cliargs": 9, "profiles": 9, "prose": 9, "__main__": 10}
PACKAGE = ROOT / "repro"
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9]*.py"))
# repro.methods functions a notebook may call because they teach the paper's equation
TEACHING = {"norms", "excess", "select_heads", "reward_summary"}
FORBIDDEN_IN_NOTEBOOKS = ("repro.assets", "repro.arch", "repro.calib", "repro.structure", "repro.evaluate",
                          "repro.store", "repro.report", "repro.engines")


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def resolve(name: str) -> str:
    """A dotted name -> the repro module that defines it (a package, a module, or a module's attribute)."""
    parts = name.split(".")
    while parts:
        p = ROOT.joinpath(*parts)
        if p.with_suffix(".py").exists() or (p / "__init__.py").exists():
            return ".".join(parts)
        parts = parts[:-1]
    raise AssertionError(f"cannot resolve {name}")


def imports(tree: ast.AST) -> set[str]:
    """Every repro module a source imports, at any depth (function-local imports too)."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {resolve(a.name) for a in node.names if a.name.split(".")[0] == "repro"}
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "repro":
            out |= {resolve(f"{node.module}.{a.name}") for a in node.names}
    return out


def graph() -> dict[str, set[str]]:
    return {module_name(p): imports(ast.parse(p.read_text())) for p in PACKAGE.rglob("*.py")}


def floor(module: str) -> int:
    return LAYERS[module.split(".")[1]] if module != "repro" else 11


def test_every_part_of_the_package_has_a_floor():
    parts = {p.relative_to(PACKAGE).parts[0].removesuffix(".py") for p in PACKAGE.iterdir()
             if p.suffix == ".py" or (p / "__init__.py").exists()} - {"__init__"}
    assert parts == set(LAYERS), parts ^ set(LAYERS)


# floors that are stacked in the list but independent: evaluation measures a model, whatever pruned it
INDEPENDENT = {("evaluate", "methods")}


def paper(module: str) -> str | None:
    """The paper a module belongs to (``repro.papers.<paper>...``), else None (a module of ``repro.papers`` itself,
    such as ``exercises``, is shared by the papers)."""
    parts = module.split(".")
    return parts[2] if len(parts) > 2 and parts[1] == "papers" and (PACKAGE / "papers" / parts[2]).is_dir() else None


def test_no_paper_imports_another():
    across = sorted(f"{a} -> {b}" for a, deps in graph().items() for b in deps
                    if paper(a) and paper(b) and paper(a) != paper(b))
    assert not across, across


def test_the_engines_know_no_paper():
    bad = sorted(f"{a} -> {b}" for a, deps in graph().items() for b in deps
                 if a.startswith("repro.engines") and b.startswith("repro.papers"))
    assert not bad, bad


def test_no_module_of_the_package_is_over_600_lines():
    long = {p.relative_to(ROOT).as_posix(): n for p in PACKAGE.rglob("*.py")
            if (n := len(p.read_text().splitlines())) > 600}
    assert not long, long


def test_no_import_runs_upward():
    upward = sorted(f"{a} -> {b}" for a, deps in graph().items() for b in deps
                    if a != "repro" and floor(b) > floor(a))
    assert not upward, upward
    across = sorted(f"{a} -> {b}" for a, deps in graph().items() for b in deps
                    if a != "repro" and (a.split(".")[1], b.split(".")[1]) in INDEPENDENT)
    assert not across, across


def cycles(g: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, out, n = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = n[0]
        n[0] += 1
        stack.append(v)
        on.add(v)
        for w in g.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(g):
        if v not in index:
            visit(v)
    return out


def test_no_import_circle():
    # a package's __init__ re-exporting its modules is not a circle unless a module imports the package back
    assert cycles(graph()) == []


def test_the_checks_can_fail():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert floor("repro.papers.mpg") > floor("repro.engines.heads") > floor("repro.evaluate.stats") > \
        floor("repro.methods.heads")
    assert paper("repro.papers.mpg.tables") == "mpg" and paper("repro.engines.heads") is None
    tree = ast.parse("def f():\n    from repro.engines.base import Setup\n")
    assert imports(tree) == {"repro.engines.base"}  # function-local imports count


def notebook_code(src: Path) -> list[str]:
    return [s for kind, s in cell_sources(read_source(src)) if kind == "code"]


@pytest.mark.parametrize("src", NOTEBOOKS, ids=[s.stem for s in NOTEBOOKS])
def test_notebooks_call_experiments_not_the_floors_below(src):
    tree = ast.parse("\n\n".join(notebook_code(src)))
    bad = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("repro"):
            if node.module.startswith(FORBIDDEN_IN_NOTEBOOKS):
                bad.append(node.module)
            if node.module.startswith("repro.methods"):
                bad += [f"{node.module}.{a.name}" for a in node.names if a.name not in TEACHING]
        elif isinstance(node, ast.Import):
            bad += [a.name for a in node.names if a.name.startswith(FORBIDDEN_IN_NOTEBOOKS)]
        elif isinstance(node, ast.Attribute) and node.attr in ("run", "base_config", "zeroshot_config", "select_config"):
            bad.append(f".{node.attr}")  # computing, keying or reading a record by hand
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute) and node.value.attr == "store":
            bad.append(f".store.{node.attr}")  # the store is handed to readers, never used in a notebook
    assert not bad, bad


@pytest.mark.parametrize("src", NOTEBOOKS, ids=[s.stem for s in NOTEBOOKS])
def test_notebook_setup_cell_is_short(src):
    nb = read_source(src)
    code = [c for c in nb.cells if c.cell_type == "code"]
    first = next(i for i, c in enumerate(code) if "parameters" in c.metadata.get("tags", []))
    setup = code[first + 1].source.strip().splitlines()
    assert len(setup) <= 15, f"setup cell has {len(setup)} lines"


def test_no_private_name_crosses_a_module_boundary():
    """A ``_name`` is its module's own: no repro module imports one from another, or reads one off another module
    (``module._name``), so a helper two modules need is public, named and documented once."""
    modules = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    crossing = []
    for name, path in modules.items():
        tree = ast.parse(path.read_text())
        aliases = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("repro"):
                for a in node.names:
                    if a.name.startswith("_") and not a.name.startswith("__"):
                        crossing.append(f"{name} imports {node.module}.{a.name}")
                    if f"{node.module}.{a.name}" in modules:
                        aliases[a.asname or a.name] = f"{node.module}.{a.name}"
            elif isinstance(node, ast.Import):
                aliases.update({a.asname or a.name: a.name for a in node.names if a.name.startswith("repro")})
        crossing += [f"{name} reads {aliases[n.value.id]}.{n.attr}" for n in ast.walk(tree)
                     if isinstance(n, ast.Attribute) and n.attr.startswith("_") and not n.attr.startswith("__")
                     and isinstance(n.value, ast.Name) and n.value.id in aliases]
    assert crossing == []


def test_notebooks_import_only_their_papers_public_api():
    """A notebook imports repro.notebooks (its session) and its own paper's package (and that package's modules);
    the package's ``__all__`` lists every name the notebook reads off it."""
    import importlib

    for nb in NOTEBOOKS:
        source = nb.read_text()
        paper = read_source(nb).metadata["repro"]["module"]
        tree = ast.parse("\n".join(line for line in source.splitlines() if not line.startswith("%")))
        imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module.startswith("repro")}
        assert imported <= {"repro.notebooks", paper, "repro.papers"}, (nb.name, imported)
        api = set(importlib.import_module(paper).__all__)
        used = set(re.findall(r"\bP\.([A-Za-z_]\w*)", source))
        assert used <= api, (nb.name, used - api)
