"""The Corpus view in a real browser (headless Chromium through Playwright, as tests/web/test_browser.py): a search
shows its hits with the word highlighted, any-word shows other words, and a word's senses draw a coloured map with a
card per sense. A tiny random model and a tiny index; nothing leaves 127.0.0.1.

Skipped, with the reason, where Chromium (tests/browser.py) or the playwright package is missing.
"""

from __future__ import annotations

import pytest
from browser import MISSING, chromium, watched_page

pytestmark = pytest.mark.slow  # a real browser against a live server
TIMEOUT = 60_000  # ms
CORPUS = [
    "the cat sat on the mat",
    "the dog ran in the house",
    "the cat ran to the tree",
    "she sat on the old mat",
    "a small cat sat in the big house",
    "the bread was bad",
    "the dog sat at night",
    "it was a good day for the cat",
]

if chromium() is None:
    pytest.skip(MISSING, allow_module_level=True)
sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")


@pytest.fixture(scope="module")
def index(tmp_path_factory, tiny_models):
    from bertlens.occurrences.build import IndexOptions, index_corpus

    root = tmp_path_factory.mktemp("corpus-page")
    (root / "corpus.txt").write_text("\n".join(CORPUS) + "\n", encoding="utf-8")
    index_corpus(tiny_models["bert"], root / "corpus.txt", root / "index", options=IndexOptions(layers=(1, 2)))
    return root / "index"


@pytest.fixture(scope="module")
def server(index, tiny_models):
    from bertlens.web import ServerLimits, create_app
    from bertlens.web.server import LOOPBACK_HOSTS, start

    app = create_app([tiny_models["bert"]], ServerLimits(precompute=False), hosts=LOOPBACK_HOSTS, indexes=[index])
    running = start(app)
    yield running
    running.stop()


@pytest.fixture(scope="module")
def page(server):
    """One page for the module; requests to anywhere but the test server fail the test, as do page errors."""
    with watched_page(server.url + "#corpus", timeout=TIMEOUT) as opened:
        yield opened


def idle(page) -> None:
    page.wait_for_function(
        "() => { const s = document.querySelector('#view-corpus'); return !s.hidden && !s.hasAttribute('aria-busy'); }"
    )


def test_search_highlights_the_word(page, index, tiny_models):
    from bertlens.occurrences.search import SearchOptions, search_occurrences

    page.wait_for_selector("#corpus-index option", state="attached")
    assert page.input_value("#search-form [name=layer]") == "2"  # the index's last layer
    idle(page)  # the first search (the form's example: a word the tiny index lacks) has answered, with an error
    page.fill("#search-form [name=example]", "the [cat] sat on a mat")
    page.click("#search-form button[type=submit]")
    page.wait_for_selector("#search-result mark")
    idle(page)
    marks = page.locator("#search-result tbody mark").all_inner_texts()
    assert marks == ["cat"] * 4  # every occurrence of "cat", highlighted in its sentence
    # each score read against the word's own random pairs, in the words of `bertlens search`'s table
    assert "pairs below" in page.locator("#search-result th").all_inner_texts()
    readings = page.locator("#search-result .baseline p").all_inner_texts()
    cli = search_occurrences(tiny_models["bert"], index, "the [cat] sat on a mat", options=SearchOptions(layer=2))
    assert readings[0].startswith("top hit: ") and all(line in cli.to_table().splitlines() for line in readings)
    top_share = page.inner_text("#search-result tbody tr:first-child .share")  # the number the reading states
    assert f"above {top_share} of random pairs" in readings[0]
    assert "same-word mean" not in page.inner_text("#search-result")
    overlapping = page.evaluate(  # each cosine sits beside its bar, not on it
        """() => [...document.querySelectorAll('#search-result .bar')].filter((bar) => {
            const a = bar.querySelector('.value').getBoundingClientRect();
            const b = bar.querySelector('.track').getBoundingClientRect();
            return a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;
        }).length"""
    )
    assert page.locator("#search-result .bar").count() == 4 and overlapping == 0
    page.check("#search-form [name=any_word]")
    page.click("#search-form button[type=submit]")
    page.wait_for_selector("#search-result h3:has-text('other words')")
    others = page.locator("#search-result tbody mark").all_inner_texts()
    assert len(others) == len(CORPUS) and "cat" not in others  # k is 10, and a text gives one hit at most
    reading = page.inner_text("#search-result .baseline p")  # other words: read against the layer's random pairs
    cli = search_occurrences(tiny_models["bert"], index, "the [cat] sat on a mat", options=SearchOptions(any_word=True))
    assert reading.startswith("baseline: ") and reading in cli.to_table().splitlines()


def test_all_occurrences_per_text_when_ticked(page):
    page.uncheck("#search-form [name=any_word]")
    page.fill("#search-form [name=example]", "[the] cat sat on the mat")  # "the" is twice in some texts
    sources = "#search-result tbody .source"
    for every, rows in ((True, 10), (False, len(CORPUS))):  # k = 10 of its 11 occurrences, or one per text
        page.set_checked("#search-form [name=all_per_text]", every)
        page.click("#search-form button[type=submit]")
        page.wait_for_function(f"() => document.querySelectorAll('{sources}').length === {rows}")
        idle(page)
        shown = page.locator(sources).all_inner_texts()
        assert len(shown) == rows and (len(set(shown)) < rows if every else len(set(shown)) == rows)
    notes = page.inner_text("#search-result")  # the occurrences left out, and how to see them, in the page's words
    assert "more occurrences in texts already shown left out" in notes and "tick “all occurrences per text”" in notes
    assert "one_per_text=False" not in notes


def test_senses_draw_a_map_and_cards(page):
    page.fill("#senses-form [name=word]", "the")
    page.fill("#senses-form [name=k]", "2")
    page.click("#senses-form button[type=submit]")
    page.wait_for_selector("#senses-result .sense")
    idle(page)
    assert page.locator("#senses-result .sense").count() == 2
    drawn = page.eval_on_selector_all(
        "#senses-result .js-plotly-plot",
        "plots => plots.length === 1 && !!plots[0].querySelector('canvas, svg.main-svg')",
    )
    assert drawn
    points = int(page.get_attribute("#senses-result .js-plotly-plot", "data-points"))
    assert points == sum(line.split().count("the") for line in CORPUS)
    assert page.locator("#senses-result .sense mark").first.inner_text().lower() == "the"
    legend = page.evaluate("() => document.querySelector('#senses-result .js-plotly-plot').data.map(t => t.name)")
    seen = page.locator("#senses-result .sense").first.locator(".chip.word").all_inner_texts()
    if seen:  # a sense is named by the words that tell it apart, in the legend and on its card
        assert legend[0].startswith(f"sense 0: {', '.join(seen[:3])} (")
        assert page.inner_text("#senses-result .sense h4").startswith(f"Sense 0: {', '.join(seen[:3])}")


def test_the_view_fits_a_phone(page):
    """At 420 px, with hits and senses shown, nothing is wider than the screen (tables scroll in their own box)."""
    page.set_viewport_size({"width": 420, "height": 860})
    page.wait_for_timeout(300)  # plotly's resize
    assert page.evaluate("() => document.documentElement.scrollWidth") <= 420
    widest = page.evaluate(
        "() => Math.max(...[...document.querySelectorAll('#view-corpus .controls > *, .sense')]"
        ".map(e => e.getBoundingClientRect().right))"
    )
    assert widest <= 420
