"""The documentation site (`make docs`), opened page by page in a real headless Chromium.

The site is built by tools/build_docs.py, as `make docs` builds it, and served from 127.0.0.1. Each page
(every docs/*.md page and every notebook) must load with status 200, request nothing outside the site
(no CDN: the machine is offline), answer every request it makes, show every image (naturalWidth > 0),
typeset its equations with the local MathJax (no TeX error), and log no console error or uncaught
exception. A screenshot of the top of each notebook page goes to docs/screenshots/<notebook stem>.png.
"""
import functools
import http.server
import json
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from conftest import ROOT

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
SCREENSHOTS = ROOT / "docs/screenshots"
VIEWPORT = {"width": 1280, "height": 900}
NOTEBOOKS = sorted(ROOT.glob("notebooks/0*.ipynb"))
DOCS_PAGES = sorted(p.relative_to(ROOT / "docs").as_posix() for p in (ROOT / "docs").rglob("*.md"))

needs_chromium = pytest.mark.skipif(not CHROMIUM.exists(),
                                    reason="needs Debian's chromium at /usr/bin/chromium (make setup installs it)")


def page_url(md: str) -> str:
    """The site path of a docs/ page (use_directory_urls): index.md -> /, a/b.md -> /a/b/."""
    stem = md.removesuffix(".md")
    return "/" if stem == "index" else "/" + stem.removesuffix("/index") + "/"


def notebook_figures_and_equations(nb: Path) -> tuple[int, int]:
    """The PNG outputs and the display equations ($$...$$) in a notebook's markdown cells."""
    cells = json.loads(nb.read_text())["cells"]
    pngs = sum("image/png" in o.get("data", {}) for c in cells for o in c.get("outputs", []))
    display = sum(len(re.findall(r"\$\$.+?\$\$", "".join(c["source"]), re.S))
                  for c in cells if c["cell_type"] == "markdown")
    return pngs, display


PAGES = ([pytest.param(page_url(p), None, id=p) for p in DOCS_PAGES]
         + [pytest.param(f"/notebooks/{nb.stem}/", nb, id=nb.name) for nb in NOTEBOOKS])


@pytest.fixture(scope="module")
def site():
    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, str(ROOT / "tools/build_docs.py")], cwd=ROOT,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, f"tools/build_docs.py failed:\n{r.stdout}\n{r.stderr}"
    print(f"site built in {time.perf_counter() - t0:.1f} s")
    return ROOT / ".cache/site"


@pytest.fixture(scope="module")
def server(site):
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(site)))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright  # the docs extra (make setup installs it)

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
        yield b
        b.close()


def test_the_site_has_a_home_page_and_the_notebooks():
    assert "index.md" in DOCS_PAGES, "docs/index.md is the site's home page"
    assert len(NOTEBOOKS) == 3, [nb.name for nb in NOTEBOOKS]


@needs_chromium
@pytest.mark.parametrize("path, notebook", PAGES)
def test_page_renders_offline(server, browser, path, notebook):
    context = browser.new_context(viewport=VIEWPORT, service_workers="block")
    page = context.new_page()
    page.set_default_timeout(30_000)
    errors, outside, failed = [], [], []
    page.on("console", lambda m: errors.append(f"console: {m.text} ({m.location.get('url')})")
            if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(f"uncaught: {e}"))
    page.on("requestfailed", lambda r: failed.append(f"{r.url}: {r.failure}"))
    page.on("response", lambda r: failed.append(f"{r.url}: HTTP {r.status}") if r.status >= 400 else None)

    def local_only(route):  # anything outside the site is refused at once (and reported), not waited on
        url = route.request.url
        if url.startswith(server + "/") or url.startswith(("data:", "blob:")):
            route.continue_()
        else:
            outside.append(url)
            route.abort()

    page.route("**/*", local_only)
    try:
        response = page.goto(server + path, wait_until="load")
        assert response is not None and response.status == 200, f"{path}: {response and response.status}"
        page.wait_for_function("() => window.MathJax && MathJax.startup && MathJax.startup.promise")
        math = page.evaluate("""async () => {
            await MathJax.startup.promise;
            return {all: document.querySelectorAll("mjx-container").length,
                    display: document.querySelectorAll('mjx-container[display="true"]').length,
                    errors: [...document.querySelectorAll("mjx-merror")].map(e => e.textContent)};
        }""")
        images = page.evaluate("""async () => {
            const imgs = [...document.images];
            await Promise.all(imgs.map(i => i.complete ? null : new Promise(r => { i.onload = i.onerror = r; })));
            return imgs.map(i => ({src: i.currentSrc.slice(0, 80), width: i.naturalWidth}));
        }""")
        page.wait_for_load_state("networkidle")
        if notebook is not None:
            SCREENSHOTS.mkdir(parents=True, exist_ok=True)
            page.evaluate("window.scrollTo(0, 0)")
            page.screenshot(path=str(SCREENSHOTS / f"{notebook.stem}.png"))
    finally:
        context.close()

    broken = [i["src"] for i in images if i["width"] == 0]
    assert not broken, f"{path}: images that did not load: {broken}"
    assert not math["errors"], f"{path}: TeX errors: {math['errors']}"
    if notebook is not None:
        pngs, display = notebook_figures_and_equations(notebook)
        assert len(images) >= pngs, f"{path}: {len(images)} images shown, the notebook has {pngs} figures"
        assert math["all"] > 0, f"{path}: no equation typeset (no mjx-container)"
        assert math["display"] >= display, f"{path}: {math['display']} display equations typeset of {display}"
    assert not outside, f"{path}: requests outside the site: {outside}"
    assert not failed, f"{path}: failed requests: {failed}"
    assert not errors, f"{path}: " + "\n".join(errors)
