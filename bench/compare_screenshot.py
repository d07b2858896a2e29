"""Screenshots of the web explorer's Compare view, for the documentation: docs/screenshots/compare-1280.png and
compare-420.png.

Serves the default model and another (a folder: e.g. the default model continued on Genesis, as docs/web.md shows)
on a free loopback port and drives headless Chromium (the first Chromium on PATH, else Playwright's: tests/browser.py):
the comparison of the two with the view's defaults, then a click on the token that moved most. Saves at most 2,600
pixels high: the top of the page at 1,280 pixels wide, and from the form down at a phone's 420.

    bertlens pretrain genesis --init-from default --max-steps 60 --warmup-steps 6 --lr 2e-4 --batch-size 8 \
        --seq-length 128 --out genesis-run/
    python bench/compare_screenshot.py genesis-run/
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # tests/browser.py: the Chromium finder
from browser import MISSING, chromium, launch

WIDTHS = {1280: "compare-1280.png", 420: "compare-420.png"}
MOST_HEIGHT = 2600
IDLE = """() => { const s = document.querySelector('#view-compare');
    return !s.hidden && !s.hasAttribute('aria-busy') && !!document.querySelector('#compare-result table'); }"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("other", help="model B (a folder, or a hub id in the local cache); A is the default model")
    parser.add_argument("--out", default=str(Path(__file__).resolve().parents[1] / "docs" / "screenshots"))
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    from bertlens import load_model
    from bertlens.web import ServerLimits, create_app
    from bertlens.web.server import start

    if chromium() is None:
        raise SystemExit(MISSING)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    running = start(create_app([load_model(), load_model(args.other)], ServerLimits(precompute=False)))
    outside: list[str] = []
    try:
        with sync_playwright() as playwright:
            browser = launch(playwright)
            for width, name in WIDTHS.items():
                page = browser.new_page(viewport={"width": width, "height": 900})
                page.route(
                    "**/*",
                    lambda route: (
                        route.continue_()
                        if route.request.url.startswith((running.url, "data:"))
                        else (outside.append(route.request.url), route.abort())
                    ),
                )
                page.goto(running.url + "#compare")
                page.wait_for_selector("body[data-ready]")
                page.wait_for_function(IDLE, timeout=300_000)  # the view's first run (read from the server's cache
                # for the second width)
                page.locator("#compare-result table.moved tbody button").first.click()
                page.wait_for_selector("#compare-token .two table", timeout=60_000)
                page.wait_for_timeout(800)  # plotly's transitions
                page.evaluate("() => window.scrollTo(0, 0)")
                # at 1,280 the top of the page; on a phone from the form down (the plane and the token's two sides)
                top = 0 if width > 640 else page.evaluate("document.querySelector('#compare-form').offsetTop - 8")
                height = min(MOST_HEIGHT, page.evaluate("document.documentElement.scrollHeight") - top)
                staged = Path(tempfile.mkstemp(dir=out, prefix=".tmp-", suffix=".png")[1])
                clip = {"x": 0, "y": top, "width": width, "height": height}
                page.screenshot(path=str(staged), full_page=True, clip=clip)
                staged.chmod(0o644)
                os.replace(staged, out / name)
                print(out / name)
                page.close()
            browser.close()
    finally:
        running.stop()
    if outside:
        raise SystemExit(f"requests left the machine: {outside}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
