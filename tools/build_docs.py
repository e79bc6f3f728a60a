"""Build the documentation site: the docs/ pages and the executed notebooks, rendered from their committed outputs.

    .venv/bin/python tools/build_docs.py          # make docs: .cache/site/index.html
    .venv/bin/python tools/build_docs.py --strict # fail on any MkDocs warning (a broken link, a missing page)

The notebooks live in notebooks/ and the pages in docs/; MkDocs wants one folder, so each build lays out
.cache/site-src/ anew (git-ignored, like the site) from:
- docs/ (every file: the pages and whatever they embed), with links to ../notebooks/X.ipynb pointed at
  the notebook pages (the pages sit at the site's root, the notebooks under notebooks/);
- notebooks/0*.ipynb, shown by mkdocs-jupyter with execute: false (the figures are inline PNG outputs);
- tools/site/mathjax-config.js and MathJax 3 from the django-static-mathjax wheel (pinned in the docs
  extra), so equations render with no CDN: the site loads nothing from the internet.
The nav (written here, not in mkdocs.yml) is the home page, the results, the notebooks, then the other
pages in NAV order, then any page not named there, alphabetically.
"""
import argparse
import importlib.util
import re
import shutil
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / ".cache/site-src"
SITE = ROOT / ".cache/site"
NAV = ["index.md", "results.md", "usage.md", "jobs.md", "timings.md", "statistics.md", "zeroshot.md",
       "protocol.md", "assets.md", "requirements.md", "layout.md", "extending.md", "troubleshooting.md"]
# MathJax's es5 tree less the combined builds the site does not load (it loads tex-chtml.js only)
MATHJAX_UNUSED = re.compile(r"^(tex-svg.*|tex-mml.*|mml-.*|tex-chtml-full.*|node-main\.js|adaptors)$")


def notebooks() -> list[Path]:
    return sorted((ROOT / "notebooks").glob("0*.ipynb"))


def pages() -> list[str]:
    """The docs pages (paths relative to docs/), in nav order."""
    found = sorted(str(p.relative_to(ROOT / "docs")) for p in (ROOT / "docs").rglob("*.md"))
    return [p for p in NAV if p in found] + [p for p in found if p not in NAV]


def mathjax_es5() -> Path:
    spec = importlib.util.find_spec("mathjax")
    es5 = Path(spec.origin).parent / "static/mathjax/es5" if spec and spec.origin else None
    if es5 is None or not (es5 / "tex-chtml.js").is_file():
        sys.exit("MathJax not found: install the docs extra (pip install -e '.[docs]', or make setup)")
    return es5


def assemble() -> list:
    """Lay out SRC from docs/, the notebooks and MathJax; return the nav."""
    shutil.rmtree(SRC, ignore_errors=True)
    shutil.copytree(ROOT / "docs", SRC)
    for md in SRC.rglob("*.md"):  # a page's link to a notebook, as written for the repository
        text = md.read_text()
        depth = "../" * len(md.relative_to(SRC).parts[:-1])
        new = re.sub(r"\]\((\.\./)+notebooks/", lambda m: f"]({depth}notebooks/", text)
        if new != text:
            md.write_text(new)
    (SRC / "notebooks").mkdir(exist_ok=True)
    for nb in notebooks():
        shutil.copy2(nb, SRC / "notebooks" / nb.name)
    assets = SRC / "assets"
    assets.mkdir(exist_ok=True)
    shutil.copy2(ROOT / "tools/site/mathjax-config.js", assets / "mathjax-config.js")
    es5 = mathjax_es5()
    shutil.copytree(es5, assets / "mathjax", ignore=lambda d, names: [
        n for n in names if Path(d) == es5 and MATHJAX_UNUSED.match(n)])
    shutil.copy2(es5.parent / "LICENSE", assets / "mathjax/LICENSE")
    docs = pages()
    head = [p for p in docs if p in ("index.md", "results.md")]
    rest = [p for p in docs if p not in head]
    return head + [{"Notebooks": [f"notebooks/{nb.name}" for nb in notebooks()]}] + rest


def build(strict: bool = False) -> Path:
    """Assemble and build the site; return SITE (its index.html is the home page)."""
    from mkdocs.commands.build import build as mkdocs_build
    from mkdocs.config import load_config

    if not (ROOT / "docs/index.md").is_file():
        sys.exit("docs/index.md is missing: the site needs a home page")
    nav = assemble()
    config = load_config(str(ROOT / "mkdocs.yml"), nav=nav, strict=strict,
                         docs_dir=str(SRC), site_dir=str(SITE))
    mkdocs_build(config)
    return SITE


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--strict", action="store_true", help="fail on any MkDocs warning")
    args = parser.parse_args()
    import logging

    logging.basicConfig(level=logging.INFO, format="%(levelname)-7s - %(message)s")
    logging.getLogger("mkdocs.plugins.mkdocs_jupyter").setLevel(logging.WARNING)
    t0 = time.perf_counter()
    site = build(strict=args.strict)
    print(f"site built in {time.perf_counter() - t0:.1f} s: {site.relative_to(ROOT)}/index.html "
          f"(view it: .venv/bin/python -m http.server -d {site.relative_to(ROOT)} 8000)")


if __name__ == "__main__":
    main()
