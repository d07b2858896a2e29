"""The page's tables on a phone, in a real browser (headless Chromium through Playwright, as tests/web/test_browser.py):
at 420 px the Tokens, Context, Corpus-search and Compare tables are wider than the screen, so each scrolls sideways in
its own box, says so (a shadow on the edge with columns past it, and "scroll →" above it), its last column can be
scrolled into view, and its first column (the Tokens and Compare tables: the first two, a row number and the token)
stays in view while it scrolls. Two tiny random models and a tiny index;
nothing leaves 127.0.0.1.

Skipped, with the reason, where Chromium (tests/browser.py) or the playwright package is missing.
"""

from __future__ import annotations

import pytest
from browser import MISSING, chromium, watched_page
from tiny import make_tiny

pytestmark = pytest.mark.slow  # a real browser against a live server
TIMEOUT = 60_000  # ms
CORPUS = [
    "the cat sat on the mat in the house by the river",
    "the dog ran in the house and sat by the old tree",
    "a small cat sat in the big house at night",
    "the bread was bad but the day was good for the cat",
]
SENTENCES = "the cat sat on the mat in the house\na small cat ran to the old tree by the river"

if chromium() is None:
    pytest.skip(MISSING, allow_module_level=True)
sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")

# Where a table's box stands: its scroller's widths and scroll place, the cue classes and the hint's words, and where
# the first and last column's headings are against the scroller's visible box (the first checked as what the browser
# shows at its centre, so that a cell drawn over it would count as hiding it).
GEOMETRY = """(box) => {
    const wrap = box.querySelector('.table-wrap');
    const row = box.querySelector('tr');
    const view = wrap.getBoundingClientRect();
    const rect = (e) => { const r = e.getBoundingClientRect(); return [r.left, r.right]; };
    const seen = (e) => {
        const [l, r] = rect(e);
        return e.contains(document.elementFromPoint((l + r) / 2, e.getBoundingClientRect().top + 3));
    };
    const [first, second] = row.children;
    return {
        scrollWidth: wrap.scrollWidth, clientWidth: wrap.clientWidth, scrollLeft: wrap.scrollLeft,
        view: [view.left, view.right], first: rect(first), second: rect(second), last: rect(row.lastElementChild),
        firstShown: seen(first), secondShown: seen(second), classes: [...box.classList],
        hint: getComputedStyle(box.querySelector('.scroll-hint'), '::after').content,
        hintShown: box.querySelector('.scroll-hint').getBoundingClientRect().height > 0,
    };
}"""


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    from bertlens.core.model import load_model

    root = tmp_path_factory.mktemp("narrow-page")
    return load_model(str(make_tiny("bert", root / "a"))), load_model(str(make_tiny("bert", root / "b", seed=7)))


@pytest.fixture(scope="module")
def server(tmp_path_factory, models):
    from bertlens.occurrences.build import IndexOptions, index_corpus
    from bertlens.web import ServerLimits, create_app
    from bertlens.web.server import LOOPBACK_HOSTS, start

    root = tmp_path_factory.mktemp("narrow-index")
    (root / "corpus.txt").write_text("\n".join(CORPUS) + "\n", encoding="utf-8")
    index_corpus(models[0], root / "corpus.txt", root / "index", options=IndexOptions(layers=(1, 2)))
    app = create_app(list(models), ServerLimits(precompute=False), hosts=LOOPBACK_HOSTS, indexes=[root / "index"])
    running = start(app)
    yield running
    running.stop()


@pytest.fixture(scope="module")
def page(server):
    """One phone-sized page for the module; requests to anywhere but the test server fail the test, as do page
    errors."""
    with watched_page(server.url + "#tokens", width=420, height=860, timeout=TIMEOUT) as opened:
        yield opened


def idle(page, view: str, table: str) -> None:
    page.wait_for_function(
        f"""() => {{ const s = document.querySelector('#view-{view}');
            return !s.hidden && !s.hasAttribute('aria-busy') && !!document.querySelector('{table}'); }}"""
    )


def shows(page, view: str) -> None:
    page.click(f"nav [data-view={view}]")


def scrolls_with_its_first_column_kept(page, table: str, keep: int = 1) -> None:
    """The table `table` (a CSS selector) scrolls sideways at 420 px with its cue, its last column can be scrolled
    into view, and its first column (`keep` 2: its first two columns) stays in view throughout."""
    box = page.locator(table).locator("xpath=ancestor::div[contains(@class, 'table-box')][1]")
    box.scroll_into_view_if_needed()
    page.wait_for_function("(box) => box.classList.contains('more-right')", arg=box.element_handle())
    start = box.evaluate(GEOMETRY)
    assert start["scrollWidth"] > start["clientWidth"], (table, start)  # wider than its box: it scrolls
    assert start["view"][1] <= 420, (table, start)  # and the box itself fits the screen
    assert "more-right" in start["classes"] and "more-left" not in start["classes"], (table, start)
    assert start["hint"] == '"scroll →"' and start["hintShown"], (table, start)
    assert start["last"][1] > start["view"][1], (table, start)  # the last column lies past the right edge
    assert start["firstShown"] and start["view"][0] <= start["first"][0], (table, start)

    box.evaluate("(box) => { const w = box.querySelector('.table-wrap'); w.scrollLeft = w.scrollWidth; }")
    page.wait_for_function("(box) => !box.classList.contains('more-right')", arg=box.element_handle())
    end = box.evaluate(GEOMETRY)
    assert end["scrollLeft"] > 0 and "more-left" in end["classes"], (table, end)
    assert end["hint"] == '"← scroll"', (table, end)
    assert end["view"][0] <= end["last"][0] and end["last"][1] <= end["view"][1] + 1, (table, end)  # last in view
    assert abs(end["first"][0] - end["view"][0]) <= 1 and end["firstShown"], (table, end)  # first kept at the edge
    if keep == 2:  # the second beside it, both shown
        assert start["secondShown"] and end["secondShown"], (table, start, end)
        assert abs(end["second"][0] - end["first"][1]) <= 1, (table, end)
    else:  # the second has scrolled away under the first
        assert end["second"][0] < end["first"][1], (table, end)


def test_the_tokens_table_scrolls_with_its_first_column_kept(page):
    shows(page, "tokens")
    page.fill("#tokens-form [name=text]", "the cat sat on the mat")
    page.fill("#tokens-form [name=pair]", "the dog ran in the house")
    page.click("#tokens-form button[type=submit]")
    idle(page, "tokens", "#tokens-result table")
    scrolls_with_its_first_column_kept(page, "#tokens-result table", keep=2)  # the row number and the piece


def test_the_context_table_scrolls_with_its_first_column_kept(page):
    shows(page, "context")
    idle(page, "context", "#context-result table")
    page.fill("#context-form [name=word]", "cat")
    page.fill("#context-form [name=sentences]", SENTENCES)
    page.click("#context-form button[type=submit]")
    page.wait_for_function("() => document.querySelector('#context-result h3')?.textContent.includes('cat')")
    idle(page, "context", "#context-result table")
    scrolls_with_its_first_column_kept(page, "#context-result table")


def test_the_corpus_hits_scroll_with_their_first_column_kept(page):
    shows(page, "corpus")
    page.wait_for_function("() => document.querySelector('#corpus-index')?.options.length > 0")
    page.fill("#search-form [name=example]", "the [cat] sat on the mat")
    page.click("#search-form button[type=submit]")
    idle(page, "corpus", "#search-result table.hits")
    scrolls_with_its_first_column_kept(page, "#search-result table.hits")


def test_the_compare_tables_scroll_with_their_first_column_kept(page):
    shows(page, "compare")
    idle(page, "compare", "#compare-result table.moved")
    scrolls_with_its_first_column_kept(page, "#compare-result table.moved", keep=2)  # the row number and the token


def test_a_table_that_fits_shows_no_cue(page):
    """At 1,280 px the Tokens table fits its box: no shadow, no hint; back at 420 px the cue returns."""
    shows(page, "tokens")
    idle(page, "tokens", "#tokens-result table")
    box = page.locator("#tokens-result .table-box")
    try:
        page.set_viewport_size({"width": 1280, "height": 860})
        page.wait_for_function("(box) => !box.classList.contains('scrolls')", arg=box.element_handle())
        wide = box.evaluate(GEOMETRY)
        assert wide["scrollWidth"] <= wide["clientWidth"] and not wide["hintShown"], wide
        assert "more-right" not in wide["classes"] and "more-left" not in wide["classes"], wide
    finally:
        page.set_viewport_size({"width": 420, "height": 860})
    page.wait_for_function("(box) => box.classList.contains('scrolls')", arg=box.element_handle())
