"""The pictures of docs/plots.md, drawn by the commands the page shows: docs/screenshots/plot-*.png.

Runs each `bertlens plot …` (and `bertlens senses … --plot`) on the default model at the default size (9 x 6.5
inches, 150 dpi), and photographs two HTML pages in headless Chromium (the first Chromium on PATH, else
Playwright's: tests/browser.py) at 1280 x 800: an interactive plot (plot-html.png) and, given a pre-training run, its
watch report (watch-report.png).

    python bench/plot_pictures.py                       # writes docs/screenshots/plot-*.png
    python bench/plot_pictures.py --run tiny-bert/      # and watch-report.png from that run's report.html
    python bench/plot_pictures.py --out pictures
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import sys
import tempfile
from pathlib import Path

from bertlens.cli import main as bertlens

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # tests/browser.py: the Chromium finder
from browser import MISSING, chromium, launch

BREAD = ["bread", "I like eating bread", "The banana bread was horrible"]
COMMANDS: dict[str, list[str]] = {  # picture -> the command that draws it (its --out is added)
    "plot-words": ["plot", "tokens"],
    "plot-royals": ["plot", "tokens", "king", "queen", "man", "woman", "prince", "princess"],
    "plot-vocab": ["plot", "tokens", "--count", "5000", "--dims", "3"],
    "plot-trajectory": ["plot", "trajectory", *BREAD],
    "plot-positions": ["plot", "positions", "--limit", "128"],
    "plot-layer": ["plot", "embedding-layer", "hello, world!"],
    "plot-context": ["plot", "context", *BREAD],
    "plot-senses": ["senses", "--corpus", "sample", "record", "--max-occurrences", "300"],
}
WIDTH, HEIGHT = 1280, 800
TALLEST = 2600  # pixels of a long page (the watch report) that its picture keeps


def photograph(page_file: Path, picture: Path, full: bool = False, hover: int | None = None) -> None:
    """`page_file` (a local HTML page) in headless Chromium at WIDTH x HEIGHT, saved as `picture`; nothing fetched.
    `hover`: the plot's point of that number under the mouse, its hover text showing."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = launch(playwright)
        try:
            page = browser.new_page(viewport={"width": WIDTH, "height": HEIGHT})
            page.route(
                "**/*", lambda route: route.abort() if route.request.url.startswith("http") else route.continue_()
            )
            page.goto(page_file.resolve().as_uri(), wait_until="load")
            page.wait_for_timeout(800)  # plotly's first draw
            if hover is not None:
                box = page.locator(".scatterlayer .point").nth(hover).bounding_box()
                if box is not None:
                    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
                    page.wait_for_timeout(400)
            if full:  # the page from its top, at most TALLEST pixels of it
                tall = min(int(page.evaluate("document.documentElement.scrollHeight")), TALLEST)
                page.screenshot(path=str(picture), full_page=True, clip=dict(x=0, y=0, width=WIDTH, height=tall))
            else:
                page.screenshot(path=str(picture))
        finally:
            browser.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent.parent / "docs" / "screenshots")
    parser.add_argument("--run", type=Path, help="a pre-training run whose report.html is photographed")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    for name, command in COMMANDS.items():
        target = args.out / f"{name}.png"
        flag = "--plot" if command[0] == "senses" else "--out"
        with contextlib.redirect_stdout(io.StringIO()):  # the data each command prints: not needed here
            code = bertlens([*command, flag, str(target), "--overwrite", "--json"])
        print(f"{target}: exit {code}")
    if chromium() is not None:
        with tempfile.TemporaryDirectory() as scratch:
            page = Path(scratch) / "words.html"
            with contextlib.redirect_stdout(io.StringIO()):
                bertlens(["plot", "tokens", "king", "queen", "man", "woman", "--out", str(page), "--json"])
            photograph(page, args.out / "plot-html.png", hover=1)  # queen, its metadata on hover
        print(f"{args.out / 'plot-html.png'}")
        if args.run is not None:
            photograph(args.run / "report.html", args.out / "watch-report.png", full=True)
            print(f"{args.out / 'watch-report.png'}")
    else:
        print(f"{MISSING}: the HTML pictures were not taken")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
