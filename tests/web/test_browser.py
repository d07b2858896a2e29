"""The page in a real browser: Chromium, headless, driven by Playwright, against `bertlens serve`'s app on a
free loopback port. Every request leaving 127.0.0.1 is blocked and reported (there must be none).

Skipped, with the reason, where Chromium (tests/browser.py finds it) or the playwright package is missing (.ci/run
installs both).
"""

from __future__ import annotations

import re

import pytest
from browser import MISSING, chromium, confine, launch

pytestmark = pytest.mark.slow  # a real browser against a live server
VIEWS = ("tokens", "embedding", "similar", "context", "projection", "model")
TIMEOUT = 60_000  # ms: the first explain loads torch on a busy machine

if chromium() is None:
    pytest.skip(MISSING, allow_module_level=True)
sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")


@pytest.fixture(scope="module")
def server(default_model, tiny_models):
    from bertlens.web import ServerLimits, create_app
    from bertlens.web.server import LOOPBACK_HOSTS, start

    app = create_app([default_model, tiny_models["bert"]], ServerLimits(precompute=False), hosts=LOOPBACK_HOSTS)
    running = start(app)
    yield running
    running.stop()


@pytest.fixture(scope="module")
def browser():
    with sync_api.sync_playwright() as playwright:
        chromium = launch(playwright)
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser, server):
    """A fresh page; requests to anywhere but the test server are aborted and, with page errors and anything the
    server's Content-Security-Policy blocked, fail the test."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    outside = confine(context)
    errors: list[str] = []
    blocked: list[str] = []
    context.expose_binding("reportBlocked", lambda source, what: blocked.append(what))
    context.add_init_script(
        "document.addEventListener('securitypolicyviolation', e => "
        "reportBlocked(`${e.violatedDirective} blocked ${e.blockedURI} (${e.sourceFile}:${e.lineNumber})`))"
    )
    page = context.new_page()
    page.set_default_timeout(TIMEOUT)
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on("request", lambda r: None if r.url.startswith((server.url, "data:")) else outside.append(r.url))
    yield page
    context.close()
    assert outside == [], f"requests left the machine: {outside}"
    assert errors == [], f"errors in the page: {errors}"
    assert blocked == [], f"the Content-Security-Policy blocked: {blocked}"


def open_view(page, server, view: str) -> None:
    if not page.url.startswith(server.url):
        page.goto(server.url + f"#{view}")
        page.wait_for_selector("body[data-ready]")
    else:
        page.click(f"nav [data-view={view}]")
    page.wait_for_function(  # functions, not expressions: the server's CSP forbids eval, which expressions need
        f"""() => {{
            const section = document.querySelector('#view-{view}');
            const shown = [...section.querySelectorAll('.result, .error:not([hidden])')].some(e => e.childElementCount);
            return !section.hidden && !section.hasAttribute('aria-busy') && shown;
        }}"""
    )


def drawn(page, selector: str) -> bool:
    """Whether plotly drew into the plot(s) under `selector`: an SVG, or a WebGL canvas for scattergl."""
    return page.eval_on_selector_all(
        f"{selector} .js-plotly-plot",
        "plots => plots.length > 0 && plots.every(p => p.querySelector('svg.main-svg, canvas'))",
    )


def test_type_a_word_see_its_neighbours(page, server, default_model):
    from bertlens import neighbors

    open_view(page, server, "similar")
    assert page.inner_text("#similar-result tbody tr:first-child td:nth-child(3)") == "dogs"  # the default query
    page.fill("#similar-form [name=queries]", "bread")
    page.press("#similar-form [name=queries]", "Enter")
    page.wait_for_selector("#similar-result h3:has-text('bread')")
    expected = [n.token for n in neighbors(default_model, "bread", 10).neighbors]
    assert page.locator("#similar-result tbody tr td:nth-child(3)").all_inner_texts() == expected
    page.click(f"#similar-result button:has-text('{expected[0]}')")  # a token in the table looks it up
    page.wait_for_selector(f"#similar-result h3:has-text('{expected[0]}')")
    page.check("#similar-form [name=center]")
    page.click("#similar-form button[type=submit]")
    page.wait_for_selector("#similar-result th:has-text('raw')")
    assert "Adjusted space: centred" in page.inner_text("#similar-result")


def test_every_view_works_and_draws(page, server):
    open_view(page, server, "tokens")
    assert page.locator("#tokens-result .chip .piece").all_inner_texts() == ["[CLS]", "i", "am", "sin", "##an", "[SEP]"]
    headers = page.locator("#tokens-result th").all_inner_texts()  # the CLI table's columns, by the same names
    assert headers == ["#", "piece", "id", "chars", "word", "sequence", "segment", "special"]

    open_view(page, server, "embedding")
    page.wait_for_selector("#embedding-result .ok")
    summary = page.inner_text("#embedding-result .ok")  # the check in plain words, its number the table's
    assert (
        "exactly equal to the model's own output" in summary
        and "BertEmbeddings" in summary
        and "float32" not in summary
    )
    column = page.locator("#embedding-result table.layer-table tbody td:last-child").all_inner_texts()
    assert re.search(rf"(is|at most|up to) {re.escape(max(column, key=float))}\b", summary), (summary, column)
    detail = page.locator("#embedding-result details.detail")  # the float32 jargon folded, one click away
    assert "float32 steps" in detail.text_content() and not detail.get_by_text("float32 steps").is_visible()
    detail.locator("summary").click()
    assert detail.get_by_text("float32 steps").is_visible()
    assert drawn(page, "#embedding-result") and drawn(page, "#positions-result")
    assert page.locator("#positions-result tbody tr").count() == 2  # the two token-type rows

    open_view(page, server, "context")
    assert page.locator("#context-result .js-plotly-plot").count() == 2 and drawn(page, "#context-result")

    open_view(page, server, "projection")
    assert drawn(page, "#projection-result")
    assert "168 points" in page.inner_text("#projection-result .note")  # the word groups
    page.fill("#projection-search", "paris")
    assert "found" in page.inner_text("#projection-found")
    page.select_option("#projection-form [name=method]", "pca")  # fast in 3-D too
    page.select_option("#projection-form [name=dims]", "3")
    page.click("#projection-form button[type=submit]")
    page.wait_for_function(
        "() => document.querySelector('#projection-result .js-plotly-plot')?.data[0].type === 'scatter3d'"
    )
    page.wait_for_function("() => !document.querySelector('#view-projection').hasAttribute('aria-busy')")
    assert drawn(page, "#projection-result")

    open_view(page, server, "model")
    page.wait_for_selector("#model-result table")
    assert "30,522" in page.inner_text("#model-result")


def test_switching_model_reruns_the_view(page, server):
    open_view(page, server, "model")
    page.wait_for_selector("#model-result table")
    page.select_option("#model-select", "bert")
    page.wait_for_function("() => document.querySelector('#model-result').innerText.includes('tokenizer')")
    assert page.inner_text("#model-result tr:has(td:text-is('vocab size')) td:nth-child(2)") == "80"
    open_view(page, server, "tokens")
    page.wait_for_selector("#tokens-result .chip")
    page.fill("#tokens-form [name=text]", "the cat sat")
    page.click("#tokens-form button[type=submit]")
    pieces = "[...document.querySelectorAll('#tokens-result .chip .piece')].map(e => e.textContent).join(' ')"
    page.wait_for_function(f"() => {pieces} === '[CLS] the cat sat [SEP]'")  # the tiny model's pieces
    open_view(page, server, "projection")  # the tiny vocabulary spells six of the grouped words
    assert drawn(page, "#projection-result") and "6 words in 3 groups" in page.inner_text("#projection-result .note")


def test_bad_input_shows_a_clear_message(page, server):
    open_view(page, server, "tokens")
    page.fill("#tokens-form [name=text]", "")
    page.click("#tokens-form button[type=submit]")
    page.wait_for_selector("#view-tokens .error:not([hidden])")
    assert "The text is empty." in page.inner_text("#view-tokens .error")

    open_view(page, server, "embedding")
    page.fill("#embedding-form [name=text]", "x" * 25_000)
    page.click("#embedding-form button[type=submit]")
    page.wait_for_selector("#embedding-form + .error:not([hidden])")
    assert "at most 20,000" in page.inner_text("#embedding-form + .error")

    open_view(page, server, "similar")
    page.click("#similar-form summary")
    page.check("#similar-form [name=id]")
    page.fill("#similar-form [name=queries]", "99999999")
    page.click("#similar-form button[type=submit]")
    page.wait_for_selector("#view-similar .error:not([hidden])")
    assert "out of range" in page.inner_text("#view-similar .error")

    open_view(page, server, "context")
    page.fill("#context-form [name=word]", "cake")
    page.click("#context-form button[type=submit]")
    page.wait_for_selector("#view-context .error:not([hidden])")
    assert "does not occur" in page.inner_text("#view-context .error")


def test_projection_draws_50000_points(page, server):
    """The page's own renderer on 50,000 points from the API, every one drawn (WebGL)."""
    open_view(page, server, "model")
    timings = page.evaluate(
        """async () => {
            state.ran.add("projection");  // no default projection first
            location.hash = "projection";
            const ids = Array.from({ length: 50000 }, (_, i) => i % 30522);
            const t0 = performance.now();
            const data = await api("/api/projection", withModel({ tokens: ids }));
            const t1 = performance.now();
            state.projection = { data, seconds: (t1 - t0) / 1000 };
            await renderProjection();
            const div = document.querySelector("#projection-result .js-plotly-plot");
            return { points: div.dataset.points, api: t1 - t0, render: performance.now() - t1 };
        }"""
    )
    print(f"50,000 points: API {timings['api']:.0f} ms, drawing {timings['render']:.0f} ms")
    assert timings["points"] == "50000"
    assert drawn(page, "#projection-result")
    points = page.evaluate("document.querySelector('#projection-result .js-plotly-plot').data[0].x.length")
    assert points == 50_000


def test_no_injected_script_runs_and_no_other_page_frames_it(browser, server):
    """The Content-Security-Policy at work in the browser: a script injected into the page (as by a cross-site
    scripting bug) does not run, and another page cannot show the page in a frame (clickjacking)."""
    context = browser.new_context()
    try:
        page = context.new_page()
        page.set_default_timeout(TIMEOUT)
        page.goto(server.url)
        page.wait_for_selector("body[data-ready]")
        injected = """() => {
            const script = document.createElement('script');
            script.textContent = 'window.injected = true';
            document.head.append(script);  // an allowed inline script would have run by now
            return window.injected === true;
        }"""
        assert page.evaluate(injected) is False
        other = context.new_page()
        other.set_default_timeout(TIMEOUT)
        other.set_content(f'<iframe src="{server.url}"></iframe>')  # returns once the frame has loaded (or failed)
        frame = other.frames[1]
        assert frame.url.startswith("chrome-error://"), frame.url
    finally:
        context.close()
