"""Screenshots of every view of the web explorer, for the README: docs/screenshots/<view>.png.

Serves the default model on a free loopback port, drives headless Chromium (Debian's /usr/bin/chromium) through each
view with an example, and saves one PNG per view (the top of the page, at most 1,500 pixels high), and the Context
view once more at a phone's width (context-phone.png, 420 pixels).

    python bench/screenshots.py              # writes docs/screenshots/*.png
    python bench/screenshots.py --out /tmp/shots
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path

from bertlens.web.browser import CHROMIUM, launch

WIDTH, MOST_HEIGHT = 1280, 1500
PHONE = 420  # the phone-width shot of the Context view


def wait_idle(page, view: str) -> None:
    page.wait_for_function(
        f"""(() => {{
            const section = document.querySelector('#view-{view}');
            return !section.hidden && !section.hasAttribute('aria-busy')
                && [...section.querySelectorAll('.result')].some(e => e.childElementCount);
        }})()""",
        timeout=120_000,
    )
    page.wait_for_timeout(400)  # plotly's transitions


def submit(page, form: str) -> None:
    page.click(f"{form} button[type=submit]")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default=str(Path(__file__).resolve().parents[1] / "docs" / "screenshots"))
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    from bertlens.web import ServerLimits, create_app
    from bertlens.web.server import start

    if not os.path.exists(CHROMIUM):
        raise SystemExit(f"{CHROMIUM} is missing (apt-get install chromium)")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    running = start(create_app(["default"], ServerLimits()))
    outside: list[str] = []
    try:
        with sync_playwright() as playwright:
            browser = launch(playwright)

            def new_page(width: int):  # requests anywhere but the server are refused and reported
                opened = browser.new_page(viewport={"width": width, "height": 900})
                opened.route(
                    "**/*",
                    lambda route: (
                        route.continue_()
                        if route.request.url.startswith((running.url, "data:"))
                        else (outside.append(route.request.url), route.abort())
                    ),
                )
                return opened

            page = new_page(WIDTH)

            def shoot(view: str, width: int = WIDTH, most: int = MOST_HEIGHT) -> None:
                height = min(most, page.evaluate("document.documentElement.scrollHeight"))
                staged = Path(tempfile.mkstemp(dir=out, prefix=".tmp-", suffix=".png")[1])
                page.screenshot(
                    path=str(staged), full_page=True, clip={"x": 0, "y": 0, "width": width, "height": height}
                )
                staged.chmod(0o644)
                os.replace(staged, out / f"{view}.png")
                print(out / f"{view}.png")

            page.goto(running.url + "#tokens")
            wait_idle(page, "tokens")
            page.fill("#tokens-form [name=text]", "Tokenizers split embeddings into pieces.")
            page.fill("#tokens-form [name=pair]", "Do they?")
            submit(page, "#tokens-form")
            page.wait_for_selector("#tokens-result .chip.segment1")
            wait_idle(page, "tokens")
            shoot("tokens")

            page.click("nav [data-view=embedding]")
            wait_idle(page, "embedding")
            page.wait_for_selector("#positions-result .js-plotly-plot")
            shoot("embedding")

            page.click("nav [data-view=similar]")
            wait_idle(page, "similar")
            page.fill("#similar-form [name=queries]", "bread")
            page.check("#similar-form [name=words_only]")
            page.check("#similar-form [name=center]")
            submit(page, "#similar-form")
            page.wait_for_selector("#similar-result h3:has-text('bread')")
            wait_idle(page, "similar")
            shoot("similar")

            page.click("nav [data-view=context]")
            wait_idle(page, "context")
            shoot("context")

            page.click("nav [data-view=projection]")
            wait_idle(page, "projection")  # the default: the most frequent whole words, the first ones labelled
            page.evaluate("() => showNearest(state.projection.data.labels.indexOf('king'))")  # as a click on 'king'
            page.wait_for_selector("#projection-nearest table")
            page.wait_for_timeout(400)
            shoot("projection")

            page.click("nav [data-view=model]")
            page.wait_for_selector("#model-result table")
            shoot("model")

            page.close()
            page = new_page(PHONE)  # a phone: the Context view at 420 px, loaded at that width
            page.goto(running.url + "#context")
            wait_idle(page, "context")
            shoot("context-phone", PHONE, 2600)
            browser.close()
    finally:
        running.stop()
    if outside:
        raise SystemExit(f"the page asked for outside resources: {outside}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
