"""Screenshots of the web explorer's tables on a phone (420 px wide), for the documentation:
docs/screenshots/table-<view>-420.png, each the table as it first shows (its shadow on the right edge and "scroll →"
above it) beside the same table scrolled to its last column (the first column kept in view).

Serves the default model on a free loopback port (with --index DIR, an occurrence index it built, for the Corpus view:
bertlens index FILE --out DIR) and drives headless Chromium (the first Chromium on PATH, else Playwright's:
tests/browser.py) through each view's own example.

    python bench/narrow_tables_screenshot.py --index record-index
    python bench/narrow_tables_screenshot.py --out shots
"""

from __future__ import annotations

import argparse
import io
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # tests/browser.py: the Chromium finder
from browser import MISSING, chromium, launch

WIDTH, HEIGHT = 420, 860
TABLES = {  # view -> the table shown
    "tokens": "#tokens-result table",
    "context": "#context-result table",
    "corpus": "#search-result table.hits",
}
EXAMPLE = "She set a new world [record] in the final."


def shot(page: Any, selector: str) -> bytes:
    """The table's box and a little around it (at most 600 pixels high), as PNG."""
    box = page.locator(selector).locator("xpath=ancestor::div[contains(@class, 'table-box')][1]")
    box.scroll_into_view_if_needed()
    page.evaluate("() => window.scrollBy(0, -40)")  # the heading above it in view too
    page.wait_for_timeout(300)
    area = box.bounding_box()
    top = max(0, area["y"] - 12)
    return bytes(page.screenshot(clip={"x": 0, "y": top, "width": WIDTH, "height": min(area["height"] + 24, 600)}))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default=str(Path(__file__).resolve().parents[1] / "docs" / "screenshots"))
    parser.add_argument("--index", help="an occurrence index of the default model, for the Corpus view")
    args = parser.parse_args()
    if chromium() is None:
        print(MISSING, file=sys.stderr)
        return 1
    from PIL import Image
    from playwright.sync_api import sync_playwright

    from bertlens.core.model import load_model
    from bertlens.web import ServerLimits, create_app
    from bertlens.web.server import start

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    indexes = [args.index] if args.index else []
    running = start(create_app([load_model()], ServerLimits(precompute=False), indexes=indexes))
    try:
        with sync_playwright() as playwright:
            browser = launch(playwright)
            page = browser.new_page(viewport={"width": WIDTH, "height": HEIGHT})
            page.goto(running.url + "#tokens")
            page.wait_for_selector("body[data-ready]")
            for view, selector in TABLES.items():
                if view == "corpus" and not indexes:
                    continue
                page.click(f"nav [data-view={view}]")
                if view == "corpus":
                    page.wait_for_function("() => document.querySelector('#corpus-index')?.options.length > 0")
                    page.fill("#search-form [name=example]", EXAMPLE)
                    page.click("#search-form button[type=submit]")
                page.wait_for_selector(selector, timeout=180_000)
                page.wait_for_timeout(500)
                first = shot(page, selector)
                page.locator(selector).evaluate(
                    "(t) => { const w = t.closest('.table-wrap'); w.scrollLeft = w.scrollWidth; }"
                )
                last = shot(page, selector)
                left, right = Image.open(io.BytesIO(first)), Image.open(io.BytesIO(last))
                both = Image.new("RGB", (left.width + right.width + 16, max(left.height, right.height)), "#d9dee7")
                both.paste(left, (0, 0))
                both.paste(right, (left.width + 16, 0))
                target = out / f"table-{view}-420.png"
                both.save(target)
                print(target)
            browser.close()
    finally:
        running.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
