"""A server answers at once on a fresh cache: each model's similar-token table (the neighbour table) is built in the
background, held at a step by a hook here so that the server is looked at while it is still preparing. Meanwhile the
page, /api/info and neighbours (by a scan, as the library answers them) are answered and /api/status reports the
progress; once it is built the answers come from the table, the same. The page says so in the Similar-tokens view, and
`bertlens serve` says on the terminal what it prepares.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import urllib.request

import pytest
from api_answers import same
from browser import chromium, launch

from bertlens.web import ServerLimits, create_app
from bertlens.web.app import call

pytestmark = pytest.mark.slow  # servers, a browser, a subprocess
TIMEOUT = 120  # s: only a bound on a hang (a build of a tiny model's table takes well under a second)


class Gate:
    """A hook for `create_app(prepare_hook=…)` that holds the build at its first step until `release()`."""

    def __init__(self) -> None:
        self.reached = threading.Event()
        self.opened = threading.Event()
        self.steps: list[tuple[str, float]] = []

    def __call__(self, table) -> None:
        self.steps.append((table.state, table.fraction))
        if table.state == "preparing":
            self.reached.set()
            assert self.opened.wait(TIMEOUT), "the test never released the build"

    def release(self) -> None:
        self.opened.set()


def test_the_server_answers_while_the_table_is_built_then_fills_in(tiny_models, tmp_path):
    from bertlens import neighbors
    from bertlens.embeddings.info import info

    model = tiny_models["bert"]
    gate = Gate()
    app = create_app([model], ServerLimits(cache_dir=str(tmp_path / "cache")), prepare_hook=gate)
    registry = app.state.registry
    try:
        assert gate.reached.wait(TIMEOUT)  # the build has started and is held at its first step
        assert registry.models[0].index.table is None
        status, page = call(app, "GET", "/")
        assert status == 200 and "<html" in page
        assert call(app, "GET", "/api/info") == (200, same(info(model)))
        status, preparing = call(app, "GET", "/api/status")
        assert status == 200 and preparing["preparing"] is True
        table = preparing["models"][0]["neighbor_table"]
        assert (table["state"], table["progress"], table["what"]) == ("preparing", 0.0, "the similar-token table")
        status, models = call(app, "GET", "/api/models")
        assert models["models"][0]["neighbor_table"] is False
        assert models["models"][0]["preparation"]["state"] == "preparing"
        scanned = neighbors(model, "cat", 5, cache_dir=tmp_path / "scan")
        assert call(app, "POST", "/api/neighbors", {"queries": ["cat"], "k": 5})[1]["results"][0] == same(scanned)
    finally:
        gate.release()
    assert registry.preparation.wait(TIMEOUT)
    status, ready = call(app, "GET", "/api/status")
    assert ready["preparing"] is False and ready["models"][0]["neighbor_table"]["state"] == "ready"
    assert ready["models"][0]["neighbor_table"]["progress"] == 1.0
    assert call(app, "GET", "/api/models")[1]["models"][0]["neighbor_table"] is True
    assert registry.models[0].index.table is not None  # token queries are lookups now, with the same answer
    assert call(app, "POST", "/api/neighbors", {"queries": ["cat"], "k": 5})[1]["results"][0] == same(scanned)
    fractions = [fraction for state, fraction in gate.steps if state == "preparing"]
    assert fractions == sorted(fractions) and fractions[0] == 0.0 and gate.steps[-1] == ("ready", 1.0)

    again = create_app([model], ServerLimits(cache_dir=str(tmp_path / "cache")), prepare_hook=gate)
    assert again.state.registry.preparation.thread is None  # read from the cache: nothing to prepare
    assert call(again, "GET", "/api/status")[1]["models"][0]["neighbor_table"]["state"] == "ready"


def test_without_precompute_nothing_is_prepared(tiny_models, tmp_path):
    app = create_app([tiny_models["bert"]], ServerLimits(precompute=False, cache_dir=str(tmp_path)))
    assert app.state.registry.preparation.thread is None
    status, data = call(app, "GET", "/api/status")
    assert status == 200 and data["preparing"] is False and data["models"][0]["neighbor_table"]["state"] == "off"


def test_the_similar_view_shows_the_progress_then_that_the_table_is_ready(tiny_models, tmp_path):
    if chromium() is None:
        pytest.skip("no Chromium")
    sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")
    from bertlens.web.server import LOOPBACK_HOSTS, start

    gate = Gate()
    app = create_app(
        [tiny_models["bert"]], ServerLimits(cache_dir=str(tmp_path)), hosts=LOOPBACK_HOSTS, prepare_hook=gate
    )
    running = start(app)
    try:
        assert gate.reached.wait(TIMEOUT)
        with sync_api.sync_playwright() as playwright:
            browser = launch(playwright)
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.set_default_timeout(TIMEOUT * 1000)
            errors: list[str] = []
            page.on("pageerror", lambda error: errors.append(str(error)))
            page.goto(running.url + "#similar")
            page.wait_for_selector("#similar-preparing:not([hidden])")
            assert "Preparing the similar-token table… 0 %" in page.inner_text("#similar-preparing")
            page.wait_for_selector("#similar-result table")  # answered meanwhile, by a scan
            gate.release()
            page.wait_for_function(
                "() => document.querySelector('#similar-preparing').textContent"
                ".startsWith('The similar-token table is ready')"
            )
            page.click("nav [data-view=model]")
            page.wait_for_selector("#model-servers table")
            assert "ready" in page.inner_text("#model-servers table")
            browser.close()
        assert errors == []
    finally:
        gate.release()
        running.stop()


def test_serve_says_what_it_prepares_in_the_background(tiny_dirs, tmp_path):
    """`bertlens serve` on an empty cache: the page answers, and standard error says that the similar-token table is
    being prepared in the background, then that it is ready."""
    env = dict(os.environ, BERTLENS_CACHE=str(tmp_path / "cache"))
    command = [sys.executable, "-m", "bertlens", "serve", "--port", "0", "--model", str(tiny_dirs["bert"])]
    with subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as process:
        try:
            assert process.stdout is not None and process.stderr is not None
            served = process.stdout.readline()
            assert "serving" in served, served + process.stderr.read()
            url = served.split(" at ")[1].split()[0]
            with urllib.request.urlopen(url, timeout=TIMEOUT) as answer:
                assert answer.status == 200
            said = []
            while not any("is ready" in line for line in said):
                line = process.stderr.readline()
                assert line, "".join(said)
                said.append(line)
            text = "".join(said)
            assert "bertlens: preparing the similar-token table of" in text and "in the background" in text
            assert text.index("preparing the similar-token table") < text.index("is ready")
        finally:
            process.terminate()
            process.wait(timeout=30)
