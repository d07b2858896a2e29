"""Screenshots of every view of the web explorer, at the sizes people see it: docs/screenshots/<view>.png on a laptop
(1,280 x 800 window) and docs/screenshots/<view>-phone.png on a phone (420 x 860).

Serves the default model on a free loopback port, drives headless Chromium (the first Chromium on PATH, else
Playwright's: tests/browser.py) through each view with an example, and saves one PNG per view and size: the top of the
page, at most 1,500 pixels high on a laptop and 2,600 on a phone. The Corpus view needs an
index: bench/corpus_screenshot.py takes it.

    python bench/screenshots.py              # writes docs/screenshots/*.png
    python bench/screenshots.py --out shots
    python bench/screenshots.py --only projection similar --sizes laptop
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # tests/browser.py: the Chromium finder
from browser import MISSING, chromium, launch

SIZES = {"laptop": (1280, 800, 1500, ""), "phone": (420, 860, 2600, "-phone")}  # width, height, most, file suffix
VIEWS = ("tokens", "embedding", "similar", "context", "projection", "model")


def wait_idle(page: Any, view: str) -> None:
    page.wait_for_function(
        f"""() => {{
            const section = document.querySelector('#view-{view}');
            return !section.hidden && !section.hasAttribute('aria-busy')
                && [...section.querySelectorAll('.result')].some(e => e.childElementCount);
        }}""",
        timeout=180_000,
    )
    page.wait_for_timeout(500)  # plotly's transitions and resizes


def submit(page: Any, form: str) -> None:
    page.click(f"{form} button[type=submit]")


def show(page: Any, view: str) -> None:
    """Open `view` and leave it showing its example."""
    page.click(f"nav [data-view={view}]")
    wait_idle(page, view)
    if view == "tokens":
        page.fill("#tokens-form [name=text]", "Tokenizers split embeddings into pieces.")
        page.fill("#tokens-form [name=pair]", "Do they?")
        submit(page, "#tokens-form")
        page.wait_for_selector("#tokens-result .chip.segment1")
    elif view == "embedding":
        page.wait_for_selector("#positions-result .js-plotly-plot")
    elif view == "similar":
        page.fill("#similar-form [name=queries]", "bread")
        page.check("#similar-form [name=words_only]")
        page.check("#similar-form [name=center]")
        submit(page, "#similar-form")
        page.wait_for_selector("#similar-result h3:has-text('bread')")
    elif view == "projection":  # the default: the word groups; then a click on 'paris' lists its nearest words
        page.evaluate("() => showNearest(state.projection.data.labels.indexOf('paris'))")
        page.wait_for_selector("#projection-nearest table")
    elif view == "model":
        page.wait_for_selector("#model-result table")
    wait_idle(page, view)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default=str(Path(__file__).resolve().parents[1] / "docs" / "screenshots"))
    parser.add_argument("--only", nargs="+", choices=VIEWS, default=list(VIEWS), help="these views only")
    parser.add_argument("--sizes", nargs="+", choices=list(SIZES), default=list(SIZES), help="these sizes only")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    from bertlens.web import ServerLimits, create_app
    from bertlens.web.server import start

    if chromium() is None:
        raise SystemExit(MISSING)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    running = start(create_app(["default"], ServerLimits()))
    outside: list[str] = []
    try:
        with sync_playwright() as playwright:
            browser = launch(playwright)
            for size in args.sizes:
                width, height, most, suffix = SIZES[size]
                page = browser.new_page(viewport={"width": width, "height": height})
                page.route(  # requests anywhere but the server are refused and reported
                    "**/*",
                    lambda route: (
                        route.continue_()
                        if route.request.url.startswith((running.url, "data:"))
                        else (outside.append(route.request.url), route.abort())
                    ),
                )
                page.goto(running.url + "#model")  # a view without a form: the others run when first shown
                page.wait_for_selector("body[data-ready]")
                for view in args.only:
                    show(page, view)
                    page.evaluate("() => window.scrollTo(0, 0)")
                    tall = min(most, page.evaluate("document.documentElement.scrollHeight"))
                    staged = Path(tempfile.mkstemp(dir=out, prefix=".tmp-", suffix=".png")[1])
                    clip = {"x": 0, "y": 0, "width": width, "height": tall}
                    page.screenshot(path=str(staged), full_page=True, clip=clip)
                    staged.chmod(0o644)
                    os.replace(staged, out / f"{view}{suffix}.png")
                    print(out / f"{view}{suffix}.png")
                page.close()
            browser.close()
    finally:
        running.stop()
    if outside:
        raise SystemExit(f"the page asked for outside resources: {outside}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
