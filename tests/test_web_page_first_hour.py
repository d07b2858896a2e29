"""The page as a newcomer meets it: an error clears the answer it replaces, the page fits a phone's width,
heat maps carry their colour scales, the default projection is labelled and a click lists the nearest points in the
original space, and the Similar-tokens text agrees with the baseline it shows. Real Chromium (Debian's), the real
server and the default model; numbers are checked against the library.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

import numpy as np
import pytest

from bertlens.web.browser import CHROMIUM, launch

TIMEOUT = 60_000  # ms: the first forward pass loads torch on a busy machine

pytestmark = pytest.mark.slow  # a browser, a server or forward passes: seconds to tens of seconds


def test_serve_open_says_when_no_browser_opened_and_prints_the_url(tmp_path):
    """`serve --open` where no browser can be opened (BROWSER names a command that fails, as on a headless
    machine): the URL is printed and standard error says to open it by hand."""
    env = dict(os.environ, BROWSER="false", DISPLAY="", WAYLAND_DISPLAY="")
    command = [sys.executable, "-m", "bertlens", "serve", "--open", "--port", "0", "--no-precompute"]
    with subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as process:
        try:
            assert process.stderr is not None and process.stdout is not None
            os.set_blocking(process.stderr.fileno(), False)
            deadline = time.monotonic() + 120
            said = None
            while time.monotonic() < deadline and said is None:
                line = process.stderr.readline()
                if not line:
                    assert process.poll() is None, process.stderr.read()
                    time.sleep(0.2)
                elif "no web browser could be opened" in line:
                    said = line
            assert said is not None, "serve --open said nothing about the browser"
            served = process.stdout.readline()  # printed before the browser is tried
            assert "serving" in served and "http://127.0.0.1:" in served
            url = served.split(" at ")[1].split()[0]
            assert f"open {url} yourself" in said
        finally:
            process.terminate()
            process.wait(timeout=30)


@pytest.fixture(scope="module")
def server(default_model):
    from bertlens.web import ServerLimits, create_app
    from bertlens.web.server import LOOPBACK_HOSTS, start

    app = create_app([default_model], ServerLimits(precompute=False), hosts=LOOPBACK_HOSTS)
    running = start(app)
    yield running
    running.stop()


@pytest.fixture(scope="module")
def browser():
    if not os.path.exists(CHROMIUM):
        pytest.skip(f"{CHROMIUM} is missing (apt-get install chromium)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")
    with sync_api.sync_playwright() as playwright:
        chromium = launch(playwright)
        yield chromium
        chromium.close()


def new_page(browser, server, width: int = 1280, height: int = 900):
    context = browser.new_context(viewport={"width": width, "height": height})
    errors: list[str] = []
    context.route(
        "**/*", lambda route: route.continue_() if route.request.url.startswith(server.url) else route.abort()
    )
    page = context.new_page()
    page.set_default_timeout(TIMEOUT)
    page.on("pageerror", lambda error: errors.append(str(error)))
    return context, page, errors


def settled(page, view: str) -> None:
    page.wait_for_function(
        f"""() => {{
            const section = document.querySelector('#view-{view}');
            const shown = [...section.querySelectorAll('.result, .error:not([hidden])')].some(e => e.childElementCount);
            return !section.hidden && !section.hasAttribute('aria-busy') && shown;
        }}"""
    )


def go(page, server, view: str) -> None:
    if not page.url.startswith(server.url):
        page.goto(server.url + f"#{view}")
        page.wait_for_selector("body[data-ready]")
    else:
        page.click(f"nav [data-view={view}]")
    settled(page, view)


def test_an_error_clears_the_answer_it_replaces(browser, server):
    context, page, errors = new_page(browser, server)
    try:
        go(page, server, "similar")
        assert page.locator("#similar-result table").count() == 1
        page.click("#similar-form summary")
        page.check("#similar-form [name=id]")
        page.fill("#similar-form [name=queries]", "99999999")
        page.click("#similar-form button[type=submit]")
        page.wait_for_selector("#view-similar .error:not([hidden])")
        assert page.locator("#similar-result > *").count() == 0  # the answer to "dog" is gone

        go(page, server, "projection")
        assert page.locator("#projection-result .js-plotly-plot").count() == 1
        page.fill("#projection-form [name=tokens]", "dog")  # one point: too few to project
        page.click("#projection-form button[type=submit]")
        page.wait_for_selector("#view-projection .error:not([hidden])")
        assert page.locator("#projection-result > *").count() == 0
        assert page.is_hidden("#projection-toolbar")
    finally:
        context.close()
    assert errors == []


def test_every_view_fits_a_phone(browser, server):
    """At 420 px nothing is wider than the screen (tables scroll inside their own box) and the controls wrap."""
    context, page, errors = new_page(browser, server, width=420, height=860)
    try:
        for view in ("tokens", "embedding", "similar", "context", "projection", "model"):
            go(page, server, view)
            if view == "model":
                page.wait_for_selector("#model-result table")
            page.wait_for_timeout(300)  # plotly's resize after the view is shown
            width = page.evaluate("() => document.documentElement.scrollWidth")
            assert width <= 420, f"{view}: the page is {width} px wide at a 420 px screen"
            widest = page.evaluate(
                f"""() => Math.max(...[...document.querySelectorAll('#view-{view} form.controls > *')]
                    .map(e => e.getBoundingClientRect().right))"""
            )
            assert widest <= 420, f"{view}: a control reaches {widest} px"
    finally:
        context.close()
    assert errors == []


def test_heatmaps_have_colour_scales_and_compared_bands_share_one(browser, server):
    context, page, errors = new_page(browser, server)
    try:
        go(page, server, "embedding")
        page.wait_for_selector("#positions-result .js-plotly-plot")
        bands = page.evaluate(
            """() => {
                const div = document.querySelector('#embedding-result .js-plotly-plot');
                const layout = div._fullLayout;
                return {
                    axes: div.data.map(t => t.coloraxis),
                    scales: ['coloraxis', 'coloraxis2'].filter(a => layout[a] && layout[a].showscale)
                        .map(a => [layout[a].cmin, layout[a].cmax]),
                    bars: div.querySelectorAll('.colorbar').length,
                };
            }"""
        )
        # word, position and token-type rows and their sum on one scale; LayerNorm's output on another
        assert bands["axes"] == ["coloraxis"] * 4 + ["coloraxis2"]
        assert len(bands["scales"]) == 2 and bands["bars"] == 2
        for low, high in bands["scales"]:
            assert low == -high and high > 0
        positions_bar = page.evaluate(
            "() => document.querySelectorAll('#positions-result .js-plotly-plot .colorbar').length"
        )
        assert positions_bar == 1
    finally:
        context.close()
    assert errors == []


def test_the_default_projection_is_labelled_and_a_click_lists_true_neighbours(browser, server, default_model):
    from bertlens.views.tokens import whole_word_ids

    context, page, errors = new_page(browser, server)
    try:
        go(page, server, "projection")
        note = page.inner_text("#projection-result .note")
        assert "most frequent words are labelled" in note and "Click a point" in note
        labels = page.evaluate(
            """() => document.querySelector('#projection-result .js-plotly-plot').data
                .filter(t => t.mode === 'text').flatMap(t => t.text)"""
        )
        ids = whole_word_ids(default_model)
        frequent = [default_model.vocabulary.id_to_token(int(i)) for i in ids[:400]]  # the vocabulary's order
        assert 10 <= len(labels) <= 40 and labels[0] == frequent[0] == "the"
        assert labels == sorted(labels, key=frequent.index)  # the most frequent first, the crowded ones skipped

        word = "king"
        index = page.evaluate(f"() => state.projection.data.labels.indexOf('{word}')")
        assert index >= 0
        page.evaluate(f"() => showNearest({index})")  # what a click on the point calls
        page.wait_for_selector("#projection-nearest table")
        shown = page.locator("#projection-nearest tbody tr td:nth-child(2)").all_inner_texts()
        cosines = [float(c) for c in page.locator("#projection-nearest tbody tr td:nth-child(3)").all_inner_texts()]

        rows = default_model.embedding_weights.word_embeddings[ids[:5000]].astype(np.float64)  # the points shown
        unit = rows / np.linalg.norm(rows, axis=1, keepdims=True)
        scores = unit @ unit[index]
        scores[index] = -np.inf
        order = np.argsort(-scores)[:10]
        expected = [default_model.vocabulary.id_to_token(int(ids[j])) for j in order]
        assert shown == expected
        assert np.allclose(cosines, scores[order], atol=1e-3)  # the page prints 4 significant digits

        page.click(f"#projection-nearest button:has-text('{expected[0]}')")  # follow a neighbour
        page.wait_for_selector(f"#projection-nearest h3:has-text('{expected[0]}')")
        ringed = page.evaluate(
            "() => document.querySelector('#projection-result .js-plotly-plot').data.filter(t => t.name === 'nearest')"
            ".map(t => t.text.length)"
        )
        assert ringed == [11]  # the point and its 10 neighbours
    finally:
        context.close()
    assert errors == []


def test_similar_tokens_text_agrees_with_its_baseline(browser, server, default_model):
    from bertlens import neighbors

    context, page, errors = new_page(browser, server)
    try:
        go(page, server, "similar")
        intro = page.inner_text("#view-similar .intro")
        assert "well above 0" not in intro and "read a score against it" in intro
        baseline = neighbors(default_model, "dog", 10).baseline
        note = page.inner_text("#similar-result .note:has-text('Baseline')")
        assert f"{baseline:.3g}" in note and "unrelated token scores here" in note

        page.fill("#similar-form [name=queries]", "blorptastic")  # not a token: pooled from its pieces, and said so
        page.press("#similar-form [name=queries]", "Enter")
        page.wait_for_selector("#similar-result h3:has-text('blorptastic')")
        expected = neighbors(default_model, "blorptastic", 10)
        if expected.notes:  # the library's note; the page shows every note it is given
            assert page.inner_text("#similar-result .note.pooled") == expected.notes[0]
        assert "pieces: b ##lor ##pta ##stic" in page.inner_text("#similar-result h3")
    finally:
        context.close()
    assert errors == []


def test_the_context_chart_shows_the_unrelated_words_baseline(browser, server, default_model):
    from bertlens.contextual.context import compare_contexts

    sentences = [
        "I like eating bread",
        "The banana bread was horrible",
        "She bought a loaf of bread at the bakery",
        "Bread prices rose again this year",
    ]
    expected = compare_contexts(default_model, "bread", sentences).to_dict()
    if "baseline" not in expected["layers"][0]:
        pytest.skip("the context result has no per-layer baseline")
    context, page, errors = new_page(browser, server)
    try:
        go(page, server, "context")
        curves = page.evaluate(
            """() => document.querySelector('#context-result .js-plotly-plot').data
                .map(t => [t.name, t.y, t.line.dash])"""
        )
        names = [name for name, _, _ in curves]
        assert names == ["mean cosine (this word)", "lowest cosine (this word)", "unrelated words (baseline)"]
        assert len({dash for _, _, dash in curves}) == 3  # told apart without colour
        assert curves[2][1] == pytest.approx([layer["baseline"] for layer in expected["layers"]], abs=1e-6)
        low = page.evaluate(
            "() => document.querySelector('#context-result .js-plotly-plot')._fullLayout.yaxis.range[0]"
        )
        assert low <= 0  # the axis starts at 0 (or below)
    finally:
        context.close()
    assert errors == []
