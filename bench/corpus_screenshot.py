"""A screenshot of the web explorer's Corpus view, for the documentation: docs/screenshots/corpus.png.

Indexes the bundled sample corpus with the default model (a few minutes on a laptop's CPU; or give --index DIR of
one built already: bertlens index sample --out DIR), serves both on a free loopback port, and drives headless
Chromium (the first Chromium on PATH, else Playwright's: tests/browser.py): a search by example for "record", then
the senses of "record". Saves the top of the page, at most 2,600 pixels high, 1,280 wide.

    python bench/corpus_screenshot.py --index sample-index
    python bench/corpus_screenshot.py --out shots
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # tests/browser.py: the Chromium finder
from browser import MISSING, chromium, launch

WIDTH, MOST_HEIGHT = 1280, 2600
EXAMPLE = "She set a new world [record] in the final."
WORD = "record"
IDLE = "() => { const s = document.querySelector('#view-corpus'); return !s.hidden && !s.hasAttribute('aria-busy'); }"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default=str(Path(__file__).resolve().parents[1] / "docs" / "screenshots"))
    parser.add_argument("--index", help="an index of the default model (default: build one of 'sample' here)")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    from bertlens import load_model
    from bertlens.web import ServerLimits, create_app
    from bertlens.web.server import start

    if chromium() is None:
        raise SystemExit(MISSING)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    model = load_model()
    with tempfile.TemporaryDirectory() as scratch:
        index = args.index
        if index is None:
            from bertlens.occurrences.build import index_corpus

            index = str(Path(scratch) / "sample-index")
            index_corpus(model, "sample", index, progress=True)
        running = start(create_app([model], ServerLimits(precompute=False), indexes=[index]))
        outside: list[str] = []
        try:
            with sync_playwright() as playwright:
                browser = launch(playwright)
                page = browser.new_page(viewport={"width": WIDTH, "height": 900})
                page.route(
                    "**/*",
                    lambda route: (
                        route.continue_()
                        if route.request.url.startswith((running.url, "data:"))
                        else (outside.append(route.request.url), route.abort())
                    ),
                )
                page.goto(running.url + "#corpus")
                page.wait_for_selector("body[data-ready]")
                page.wait_for_selector("#corpus-index option", state="attached", timeout=120_000)
                page.wait_for_function(IDLE, timeout=120_000)  # the view's first run
                page.fill("#search-form [name=example]", EXAMPLE)
                page.click("#search-form button[type=submit]")
                page.wait_for_selector("#search-result mark", timeout=120_000)
                page.wait_for_function(IDLE, timeout=120_000)
                page.fill("#senses-form [name=word]", WORD)
                page.click("#senses-form button[type=submit]")
                page.wait_for_selector("#senses-result .sense", timeout=120_000)
                page.wait_for_function(IDLE, timeout=120_000)
                page.wait_for_timeout(600)  # plotly's transitions
                height = min(MOST_HEIGHT, page.evaluate("document.documentElement.scrollHeight"))
                staged = Path(tempfile.mkstemp(dir=out, prefix=".tmp-", suffix=".png")[1])
                page.screenshot(
                    path=str(staged), full_page=True, clip={"x": 0, "y": 0, "width": WIDTH, "height": height}
                )
                staged.chmod(0o644)
                os.replace(staged, out / "corpus.png")
                browser.close()
        finally:
            running.stop()
    if outside:
        raise SystemExit(f"requests left the machine: {outside}")
    print(out / "corpus.png")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
