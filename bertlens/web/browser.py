"""Headless Chromium for the page's browser tests and benchmarks: Debian's Chromium, driven by Playwright.

Playwright is imported by the caller (this module does not import it), so importing this needs neither playwright nor
Chromium.
"""

from __future__ import annotations

from typing import Any

CHROMIUM = "/usr/bin/chromium"  # Debian's chromium package
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


def launch(playwright: Any, executable: str = CHROMIUM) -> Any:
    """A headless Chromium browser from Playwright's sync API (`playwright` as `sync_playwright()` yields it)."""
    return playwright.chromium.launch(executable_path=executable, args=list(HEADLESS_ARGS))
