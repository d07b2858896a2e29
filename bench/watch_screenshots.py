"""The watch report's pictures in docs/screenshots: the whole page, its top (what formed, the group words' rows,
purity and the plateau), and the group words' rows alone, from a run's report.html in headless Chromium (nothing
fetched).

    bertlens pretrain sample --preset demo --out demo-bert/ && bertlens watch demo-bert/ --word2vec sample
    python bench/watch_screenshots.py demo-bert/
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # tests/browser.py: the Chromium finder
from browser import MISSING, chromium, launch

SHOTS = Path(__file__).resolve().parents[1] / "docs" / "screenshots"
# the top of a heading (by the start of its text) in page coordinates
HEADING_TOP = """(start) => { const h = [...document.querySelectorAll('h2')].find(h => h.textContent.startsWith(start));
    return h.getBoundingClientRect().top + window.scrollY; }"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run", help="a pretrain run folder holding report.html")
    parser.add_argument("--chromium", help="the Chromium executable (default: the first on PATH, else Playwright's)")
    parser.add_argument("--out", default=str(SHOTS), help="where the PNGs go (default: docs/screenshots)")
    args = parser.parse_args()
    if args.chromium is None and chromium() is None:
        raise SystemExit(MISSING)
    from playwright.sync_api import sync_playwright

    page_file = (Path(args.run) / "report.html").resolve()
    out = Path(args.out)
    with sync_playwright() as playwright:
        browser = launch(playwright, args.chromium)
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        page.route("**/*", lambda route: route.abort() if route.request.url.startswith("http") else route.continue_())
        page.goto(page_file.as_uri(), wait_until="load")
        page.screenshot(path=str(out / "watch-report.png"), full_page=True)
        similarity = page.evaluate(HEADING_TOP, "Word similarity")
        top = dict(x=0, y=0, width=1280, height=similarity - 10)
        page.screenshot(path=str(out / "watch-report-top.png"), clip=top, full_page=True)
        groups = page.evaluate(HEADING_TOP, "The group words")
        purity = page.evaluate(HEADING_TOP, "Category purity")
        box = dict(x=100, y=groups - 6, width=1080, height=purity - groups)
        page.screenshot(path=str(out / "watch-groups.png"), clip=box, full_page=True)
        browser.close()
    for name in ("watch-report.png", "watch-report-top.png", "watch-groups.png"):
        print(out / name)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
