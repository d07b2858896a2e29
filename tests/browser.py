"""Headless Chromium for the page's browser tests and the screenshot benchmarks, driven by Playwright.

The browser is the first Chromium on PATH (`chromium`, `chromium-browser`, `google-chrome`, `google-chrome-stable`:
Debian's and Ubuntu's packages, Google's), else the one Playwright installs (`python -m playwright install chromium`).
Playwright is imported by the caller (only `chromium()` imports it, to ask for its own browser), so importing this
needs neither playwright nor Chromium.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlsplit

NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")  # looked for on PATH, in order
MISSING = (
    "no Chromium found: neither chromium, chromium-browser nor google-chrome on PATH, nor Playwright's own "
    "(apt-get install chromium, or python -m playwright install chromium)"
)
HEADLESS_ARGS: tuple[str, ...] = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)


def on_path() -> str | None:
    """The first Chromium on PATH (NAMES, in order), or None."""
    for name in NAMES:
        found = shutil.which(name)
        if found:
            return found
    return None


def chromium() -> str | None:
    """The Chromium the tests drive: the first on PATH, else Playwright's own where it is installed, else None (the
    tests skip, saying MISSING). Call it before starting Playwright: it may start Playwright to ask for its browser."""
    found = on_path()
    if found is not None:
        return found
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        return None
    with sync_playwright() as playwright:
        bundled = str(playwright.chromium.executable_path)
    return bundled if os.path.isfile(bundled) else None


def launch(playwright: Any, executable: str | None = None) -> Any:
    """A headless Chromium browser from Playwright's sync API (`playwright` as `sync_playwright()` yields it):
    `executable`, else the first Chromium on PATH, else Playwright's own."""
    executable = executable or on_path()
    if executable is None:
        return playwright.chromium.launch(args=list(HEADLESS_ARGS))
    return playwright.chromium.launch(executable_path=executable, args=list(HEADLESS_ARGS))


def confine(context: Any) -> list[str]:
    """Keep a Playwright browser context on this machine: every request to anywhere but 127.0.0.1 (or a data: URL) is
    aborted and noted in the list returned, which a test asserts empty at its end."""
    outside: list[str] = []

    def guard(route: Any) -> None:
        url = route.request.url
        if urlsplit(url).hostname == "127.0.0.1" or url.startswith("data:"):
            route.continue_()
        else:
            outside.append(url)
            route.abort()

    context.route("**/*", guard)
    return outside


@contextmanager
def watched_page(url: str, *, width: int = 1280, height: int = 900, timeout: int = 60_000) -> Iterator[Any]:
    """A page of headless Chromium opened at `url` and waited for until the app is ready, its context kept on this
    machine (`confine`). On leaving, a request that left the machine or an error the page raised fails the test."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = launch(playwright)
        context = browser.new_context(viewport={"width": width, "height": height})
        outside = confine(context)
        errors: list[str] = []
        opened = context.new_page()
        opened.set_default_timeout(timeout)
        opened.on("pageerror", lambda error: errors.append(str(error)))
        opened.goto(url)
        opened.wait_for_selector("body[data-ready]")
        yield opened
        context.close()
        browser.close()
        assert outside == [], f"requests left the machine: {outside}"
        assert errors == [], f"errors in the page: {errors}"
