"""The Compare view in a real browser (headless Chromium through Playwright, as tests/web/test_browser.py): with two
tiny random models served, the tab shows; a comparison draws its summary, histogram, aligned plane and moved tokens;
clicking a moved token (in the table or on the plane) shows its nearest tokens in both spaces side by side; the layers'
CKA draws a heat map; at 420 px nothing is wider than the screen. A server of one model has no Compare tab.

Skipped, with the reason, where Chromium (tests/browser.py) or the playwright package is missing.
"""

from __future__ import annotations

import json

import pytest
from browser import MISSING, chromium, confine, watched_page
from tiny import make_tiny

pytestmark = pytest.mark.slow  # a real browser against a live server
TIMEOUT = 60_000  # ms

if chromium() is None:
    pytest.skip(MISSING, allow_module_level=True)
sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")

IDLE = """() => { const s = document.querySelector('#view-compare');
    return !s.hidden && !s.hasAttribute('aria-busy') && !!document.querySelector('#compare-result table'); }"""


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    from bertlens.core.model import load_model

    root = tmp_path_factory.mktemp("compare-page")
    return load_model(str(make_tiny("bert", root / "a"))), load_model(str(make_tiny("bert", root / "b", seed=7)))


def serving(models):
    from bertlens.web import ServerLimits, create_app
    from bertlens.web.server import LOOPBACK_HOSTS, start

    return start(create_app(list(models), ServerLimits(precompute=False), hosts=LOOPBACK_HOSTS))


@pytest.fixture(scope="module")
def server(models):
    running = serving(models)
    yield running
    running.stop()


@pytest.fixture(scope="module")
def page(server):
    """One page for the module; requests to anywhere but the test server fail the test, as do page errors."""
    with watched_page(server.url + "#compare", timeout=TIMEOUT) as opened:
        yield opened


def test_a_comparison_is_drawn(page, models):
    from bertlens.spaces import diff

    page.wait_for_function(IDLE)  # the view's first run: A and B the first two models, k 10
    assert page.locator("nav [data-view=compare]").is_visible()
    assert (page.input_value("#compare-form [name=model_a]"), page.input_value("#compare-form [name=model_b]")) == (
        "a",
        "b",
    )
    page.fill("#compare-form [name=k]", "5")
    page.click("#compare-form button[type=submit]")
    page.wait_for_function(IDLE)
    expected = json.loads(json.dumps(diff(*models, k=5).to_dict()))
    summary = page.inner_text("#compare-result table.summary")
    assert f"{expected['tokens']} (one vocabulary)" in summary and "Jaccard of the 5 nearest" in summary
    assert f"mean cosine {expected['fit']:#.4g}" in summary  # four significant digits, as toPrecision writes them
    assert "raw row-to-row cosine" in summary  # one width: the raw cosine, with its caveat
    assert page.inner_text("#compare-result .why").startswith("Why align: Two separately trained spaces")
    kinds = page.locator("#compare-result .two table tbody td:first-child").all_inner_texts()
    assert kinds == [g["label"] for g in expected["by_kind"]]
    bars = page.evaluate("() => document.querySelector('.overlap-histogram').data[0].y")
    assert bars == expected["histogram"]
    plane = page.evaluate(
        """() => { const div = document.querySelector('.aligned-plane');
            return {moved: Number(div.dataset.moved), arrows: div.layout.annotations.length,
                    labels: div.data[3].text, grey: div.data[0].x.length}; }"""
    )
    moved = [m["token"] for m in expected["moved"]]
    assert plane["moved"] == plane["arrows"] == len(moved) == 20 and plane["labels"] == moved
    assert plane["grey"] == len(expected["plane"]) - len(moved)
    rows = page.locator("#compare-result table.moved tbody tr td:nth-child(2)").all_inner_texts()
    assert rows == moved


def test_clicking_a_moved_token_shows_both_neighbourhoods(page, models):
    from bertlens.spaces import diff

    token = page.locator("#compare-result table.moved tbody button").nth(1)
    name = token.inner_text()
    token.click()
    page.wait_for_selector("#compare-token .two table")
    change = diff(*models, k=5).token(name)
    sides = page.locator("#compare-token .side")
    assert sides.count() == 2
    assert sides.nth(0).locator("h4").inner_text() == "Nearest in A (a)"
    assert sides.nth(1).locator("h4").inner_text() == "Nearest in B (b)"
    for side, neighbours in zip((0, 1), (change.neighbours_a, change.neighbours_b), strict=True):
        shown = sides.nth(side).locator("tbody td:nth-child(2)").all_inner_texts()
        assert shown == [n.token for n in neighbours]
    kept = page.locator("#compare-token .side").nth(0).locator(".kept").all_inner_texts()
    assert kept == list(change.shared)  # the neighbours kept in both, marked
    assert f"{len(change.shared)} of its 5 nearest tokens" in page.inner_text("#compare-token .note")
    # a point of the plane: its token's panel too
    other = page.evaluate("() => document.querySelector('.aligned-plane').data[3].customdata[0]")
    page.evaluate(
        """() => { const div = document.querySelector('.aligned-plane');
            div.emit('plotly_click', {points: [{customdata: div.data[3].customdata[0]}]}); }"""
    )
    page.wait_for_function(
        f"() => (document.querySelector('#compare-token h3') || {{}}).textContent?.startsWith('“{other}”')"
    )


def test_the_layers_draw_a_cka_heat_map(page, models):
    page.check("#compare-form [name=contextual]")
    page.click("#compare-form button[type=submit]")
    page.wait_for_selector("#compare-result .cka .js-plotly-plot")
    page.wait_for_function(IDLE)
    layers = models[0].config.num_hidden_layers + 1
    assert page.get_attribute("#compare-result .cka .js-plotly-plot", "data-layers") == f"{layers}x{layers}"
    page.uncheck("#compare-form [name=contextual]")


def test_the_view_fits_a_phone(page):
    """At 420 px, with a comparison and a token's neighbourhoods shown, nothing is wider than the screen (tables
    scroll in their own box)."""
    page.set_viewport_size({"width": 420, "height": 860})
    page.wait_for_timeout(300)  # plotly's resize
    page.locator("#compare-result table.moved tbody button").first.click()
    page.wait_for_selector("#compare-token .two table")
    assert page.evaluate("() => document.documentElement.scrollWidth") <= 420
    widest = page.evaluate(
        "() => Math.max(...[...document.querySelectorAll('#view-compare .controls > *, #view-compare .table-wrap,"
        " #view-compare .js-plotly-plot, #compare-token .side')].map(e => e.getBoundingClientRect().right))"
    )
    assert widest <= 420


def test_one_model_has_no_compare_tab(page, models):
    running = serving(models[:1])
    context = page.context.browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        outside = confine(context)
        opened = context.new_page()
        opened.set_default_timeout(TIMEOUT)
        opened.goto(running.url + "#compare")
        opened.wait_for_selector("body[data-ready]")
        assert not opened.locator("nav [data-view=compare]").is_visible()
        assert opened.locator("#view-tokens").is_visible() and opened.locator("#view-compare").is_hidden()
        assert outside == []
    finally:
        context.close()
        running.stop()
