"""The page as a newcomer meets it: an error clears the answer it replaces, the page fits a phone's width, heat maps
carry their colour scales and read red for positive (colours read from the rendered page), scores sit beside their
bars, the default projection shows word groups with labels that do not collide and a click lists the nearest points
in the original space, the trajectory shows its direction, and the Similar-tokens text agrees with the baseline it
shows. Real Chromium (Debian's), the real server and the default model; numbers are checked against the library.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

import numpy as np
import pytest
from browser import MISSING, chromium, launch

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
    if chromium() is None:
        pytest.skip(MISSING)
    sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")
    with sync_api.sync_playwright() as playwright:
        launched = launch(playwright)
        yield launched
        launched.close()


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
        page.select_option("#projection-form [name=source]", "tokens")
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


# --- the pictures as drawn: one page, opened once, for the tests below ---------------------------------------------


@pytest.fixture(scope="module")
def shown(browser, server):
    """One page for the module's picture tests (each opens the view it needs on it); page errors fail the last."""
    context, page, errors = new_page(browser, server, width=1280, height=800)
    yield page
    context.close()
    assert errors == []


def pixel(page, x: float, y: float) -> tuple[int, int, int]:
    """The colour the page shows at (x, y) in page coordinates, read from a screenshot of the whole page."""
    from io import BytesIO

    from PIL import Image

    image = Image.open(BytesIO(page.screenshot(full_page=True))).convert("RGB")
    return image.getpixel((round(x), round(y)))


def reddish(colour: tuple[int, int, int]) -> bool:
    red, _, blue = colour
    return red > blue + 60


def bluish(colour: tuple[int, int, int]) -> bool:
    red, _, blue = colour
    return blue > red + 60


# Where plotly drew a heat map's strongest positive and negative cells (each with neighbours of its sign, so the
# sampled pixel is inside one colour) and its colour bar's two ends, in page coordinates; with the numbers behind.
HEATMAP_GEOMETRY = """([selector, colourbar]) => {
    const div = document.querySelector(selector);
    const layout = div._fullLayout;
    const box = div.getBoundingClientRect();
    const left = box.left + window.scrollX;
    const top = box.top + window.scrollY;
    const trace = div.data[0];
    let positive = null;
    let negative = null;
    trace.z.forEach((row, t) => row.forEach((_, d) => {
        if (d === 0 || d === row.length - 1) return;
        const low = Math.min(row[d - 1], row[d], row[d + 1]);
        const high = Math.max(row[d - 1], row[d], row[d + 1]);
        if (!positive || low > positive.value) positive = { t, d, value: low };
        if (!negative || high < negative.value) negative = { t, d, value: high };
    }));
    const at = (cell) => [left + layout.xaxis._offset + layout.xaxis.l2p(cell.d),
                          top + layout.yaxis._offset + layout.yaxis.l2p(cell.t)];
    const bar = div.querySelector(`${colourbar} .cbfill`).getBoundingClientRect();
    const ticks = [...div.querySelectorAll(`${colourbar} text`)]
        .map((t) => [Number(t.textContent.replace('\u2212', '-')), t.getBoundingClientRect().top])
        .filter(([value]) => Number.isFinite(value));
    return {
        positive: [...at(positive), positive.value], negative: [...at(negative), negative.value],
        top: [bar.left + window.scrollX + bar.width / 2, bar.top + window.scrollY + 2],
        bottom: [bar.left + window.scrollX + bar.width / 2, bar.bottom + window.scrollY - 2],
        ticks,
    };
}"""


def test_heatmaps_draw_positive_red_and_negative_blue_as_their_colour_bars_say(shown, server):
    """The embedding layer's rows and the position cosines, as rendered: the strongest positive cell is red, the
    strongest negative one blue, and each colour bar is red at its positive end, blue at its negative end."""
    go(shown, server, "embedding")
    shown.wait_for_selector("#positions-result .js-plotly-plot")
    shown.wait_for_timeout(300)  # plotly's resize after the view is shown
    intro = shown.inner_text("#view-embedding .intro")
    assert "red positive, blue negative" in intro
    plots = (("#embedding-result .js-plotly-plot", ".cbcoloraxis"), ("#positions-result .js-plotly-plot", ".colorbar"))
    for selector, colourbar in plots:
        found = shown.evaluate(HEATMAP_GEOMETRY, [selector, colourbar])
        assert found["positive"][2] > 0 > found["negative"][2], found
        cells = {name: pixel(shown, *found[name][:2]) for name in ("positive", "negative")}
        ends = {name: pixel(shown, *found[name]) for name in ("top", "bottom")}
        assert reddish(cells["positive"]) and bluish(cells["negative"]), (selector, cells)
        assert reddish(ends["top"]) and bluish(ends["bottom"]), (selector, ends)
        ticks = sorted(found["ticks"], key=lambda tick: tick[1])  # top to bottom
        assert ticks and ticks[0][0] > 0 > ticks[-1][0], (selector, ticks)  # the red end is the positive one


BAR_GEOMETRY = """() => [...document.querySelectorAll('#similar-result .bar')].map((bar) => {
    const box = (e) => { const r = e.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; };
    return { value: box(bar.querySelector('.value')), track: box(bar.querySelector('.track')),
             fill: box(bar.querySelector('.fill')), cell: box(bar.closest('td')), text: bar.innerText.trim() };
})"""


def intersect(a: list[float], b: list[float]) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def inside(a: list[float], b: list[float]) -> bool:
    return b[0] <= a[0] and a[2] <= b[2] and b[1] <= a[1] and a[3] <= b[3]


def test_similar_scores_sit_beside_their_bars_at_both_widths(shown, server):
    go(shown, server, "similar")
    try:
        for width in (1280, 420):
            shown.set_viewport_size({"width": width, "height": 800})
            shown.wait_for_timeout(200)
            bars = shown.evaluate(BAR_GEOMETRY)
            assert len(bars) == 10
            for bar in bars:
                assert not intersect(bar["value"], bar["track"]), (width, bar)  # the number is not on its bar
                assert inside(bar["fill"], bar["track"]) and bar["fill"][2] > bar["fill"][0], (width, bar)
                assert inside(bar["value"], bar["cell"]) and inside(bar["track"], bar["cell"]), (width, bar)
            assert float(bars[0]["text"]) > float(bars[-1]["text"]) > 0
    finally:
        shown.set_viewport_size({"width": 1280, "height": 800})


LABEL_BOXES = """() => {
    const div = document.querySelector('#projection-result .js-plotly-plot');
    const area = div.querySelector('.nsewdrag').getBoundingClientRect();
    const box = (e) => { const r = e.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; };
    const labels = [...div.querySelectorAll('.scatterlayer .trace')]
        .filter((group) => group.__data__[0].trace.name === 'labels')
        .flatMap((group) => [...group.querySelectorAll('.textpoint text')])
        .map((text) => [text.textContent, box(text)]);
    return { area: [area.left, area.top, area.right, area.bottom], labels };
}"""


def test_the_default_projection_shows_word_groups_labelled_without_collisions(shown, server, default_model):
    from bertlens.views import word_groups

    go(shown, server, "projection")
    groups = word_groups()
    note = shown.inner_text("#projection-result .note")
    assert "168 words in 12 groups" in note and "t-SNE to 2 dimensions" in note and "Click a point" in note
    legend = shown.evaluate(
        """() => document.querySelector('#projection-result .js-plotly-plot').data
            .filter(t => t.showlegend !== false && t.name !== 'labels')
            .map(t => [t.name, t.marker.color, t.x.length])"""
    )
    assert [name for name, _, _ in legend] == list(groups)  # coloured by group, each in the legend
    assert len({colour for _, colour, _ in legend}) == 12  # twelve colours, none shared
    assert [count for _, _, count in legend] == [len(words) for words in groups.values()]

    drawn = shown.evaluate(LABEL_BOXES)
    labels = drawn["labels"]
    assert len(labels) >= 168 // 2  # most words are written
    assert f"{len(labels)} of the 168 points are labelled" in note
    for i, (word, box) in enumerate(labels):
        assert inside(box, drawn["area"]), f"{word!r} is drawn outside the plot"
        for other, second in labels[i + 1 :]:
            assert not intersect(box, second), f"the labels {word!r} and {other!r} overlap"

    index = shown.evaluate("() => state.projection.data.labels.indexOf('paris')")
    shown.evaluate(f"() => showNearest({index})")  # what a click on the point calls
    shown.wait_for_selector("#projection-nearest table")
    listed = shown.locator("#projection-nearest tbody tr td:nth-child(2)").all_inner_texts()
    words = [w for members in groups.values() for w in members]
    rows = default_model.embedding_weights.word_embeddings[[default_model.vocabulary.token_to_id(w) for w in words]]
    unit = rows / np.linalg.norm(rows, axis=1, keepdims=True)
    scores = unit @ unit[words.index("paris")]
    scores[words.index("paris")] = -np.inf
    assert listed == [words[j] for j in np.argsort(-scores)[:10]]  # the true neighbours among the points shown
    after = shown.evaluate(LABEL_BOXES)["labels"]  # labelled first now: the clicked word and its neighbours
    written = [word for word, _ in after]
    assert "paris" in written and len(set(written) & set(listed)) >= 6, written
    for i, (word, box) in enumerate(after):
        assert not any(intersect(box, second) for _, second in after[i + 1 :]), f"{word!r} overlaps a label"

    shown.fill("#projection-search", "tokyo")  # a word found is zoomed to, ringed and labelled
    shown.wait_for_function(
        "() => document.querySelector('#projection-result .js-plotly-plot').data"
        ".some(t => t.name === 'labels' && t.text.includes('tokyo'))"
    )
    assert "1 point found" in shown.inner_text("#projection-found")
    shown.fill("#projection-search", "")


def test_more_words_are_coloured_by_theme_with_a_few_labels(shown, server):
    """Asking for the most frequent words: PCA is chosen for them, the themes colour them, at most 40 are labelled."""
    go(shown, server, "projection")
    shown.select_option("#projection-form [name=source]", "tokens")
    assert shown.input_value("#projection-form [name=method]") == "pca"
    assert shown.input_value("#projection-form [name=count]") == "1000"
    shown.click("#projection-form button[type=submit]")
    shown.wait_for_function(
        "() => document.querySelector('#projection-result .js-plotly-plot')?.dataset.points === '1000'"
    )
    assert shown.input_value("#projection-colour") == "theme"
    names = shown.evaluate(
        """() => document.querySelector('#projection-result .js-plotly-plot').data
            .filter(t => t.showlegend !== false && t.name !== 'labels').map(t => t.name)"""
    )
    assert len(names) > 1 and all(name.startswith("theme ") for name in names)
    assert 0 < len(shown.evaluate(LABEL_BOXES)["labels"]) <= 40


def test_the_trajectory_points_from_each_layer_to_the_next(shown, server):
    go(shown, server, "context")
    paths = shown.evaluate(
        """() => document.querySelectorAll('#context-result .js-plotly-plot')[1].data
            .map(t => ({ name: t.name, symbols: t.marker?.symbol, angle: t.marker?.angleref,
                         dash: t.line?.dash, text: t.text || null }))"""
    )
    sentences, numbers = paths[:-1], paths[-1]
    assert len(sentences) == 4 and len({s["dash"] for s in sentences}) == 4  # told apart without colour
    for path in sentences:
        assert path["symbols"][0] == "circle" and set(path["symbols"][1:]) == {"arrow"}
        assert path["angle"] == "previous"  # each arrowhead points along the step into its layer
    assert numbers["text"] == [f"<b>{layer}</b>" for layer in range(7)]  # each layer's number written once
