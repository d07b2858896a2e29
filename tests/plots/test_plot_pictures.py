"""Pictures as a newcomer reads them: the context plot starts at 0 and shows the unrelated-words baseline with lines
told apart without colour and nothing clipped; categorical colours keep a legend; HTML is interactive, works offline
and fills the window; every label lies inside its picture; numbers on a heat map contrast with their cells; a
trajectory shows its direction; curves that coincide stay visible; every line is in a legend that covers none; senses
are named; t-SNE/UMAP show a clock when asked; and a projection's nearest points are the original space's (numpy as
the oracle).
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from typing import Any

import numpy as np
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from bertlens.cli import main
from bertlens.contextual.context import compare_contexts
from bertlens.embeddings.layer import explain
from bertlens.plots import contextual, layer, positions, projection, trajectory
from bertlens.plots.render import PlotOptions, render
from bertlens.views.projection import ProjectionSettings, nearest_points, project
from bertlens.views.tokens import project_tokens

SENTENCES = ["I like eating bread", "The banana bread was horrible", "She bought a loaf of bread"]


def draw(drawer, result, options=PlotOptions()) -> Figure:  # noqa: B008 - frozen dataclass
    """`drawer` on a private figure, laid out as render lays it out (constrained), and drawn."""
    figure = Figure(figsize=(options.width, options.height), layout="constrained")
    FigureCanvasAgg(figure)
    drawer(figure, result, options, [])
    figure.canvas.draw()
    return figure


def inside(figure: Figure, texts) -> None:
    """Every text lies within the figure: nothing clipped at its edges."""
    renderer = figure.canvas.get_renderer()
    box = figure.bbox
    for text in texts:
        if not text.get_visible() or not text.get_text():
            continue
        extent = text.get_window_extent(renderer)
        assert extent.x0 >= box.x0 - 1 and extent.x1 <= box.x1 + 1, text.get_text()
        assert extent.y0 >= box.y0 - 1 and extent.y1 <= box.y1 + 1, text.get_text()


@pytest.fixture(scope="module")
def context(default_model):
    return compare_contexts(default_model, "bread", SENTENCES)


@pytest.mark.slow  # a forward pass (torch's first load)
def test_context_plot_starts_at_zero_shows_the_baseline_and_clips_nothing(context):
    figure = draw(contextual.context_static, context)
    ax = figure.axes[0]
    assert ax.get_ylim()[0] <= 0 and ax.get_ylim()[1] >= 1  # the whole cosine scale: nothing cut
    lines = {line.get_label(): line for line in ax.get_lines() if not line.get_label().startswith("_")}
    assert list(lines) == ["mean cosine (this word)", "lowest cosine (this word)", "unrelated words (baseline)"]
    baseline = [s.baseline for s in context.layers]
    np.testing.assert_allclose(lines["unrelated words (baseline)"].get_ydata(), baseline)
    np.testing.assert_allclose(lines["mean cosine (this word)"].get_ydata(), [s.mean_cosine for s in context.layers])
    styles = {(line.get_linestyle(), line.get_marker()) for line in lines.values()}
    assert len(styles) == 3  # each line its own dash and marker: told apart where they overlap, and without colour
    assert lines["mean cosine (this word)"].get_linewidth() > lines["lowest cosine (this word)"].get_linewidth()
    legend = ax.get_legend()
    low, high = ax.get_ylim()
    shown = [t for t in ax.get_yticklabels() if low <= t.get_position()[1] <= high]  # ticks drawn, not spares
    inside(figure, [*ax.get_xticklabels(), *shown, ax.xaxis.label, ax.yaxis.label, *legend.get_texts()])
    assert [t.get_text() for t in ax.get_xticklabels()][:2] == ["input", "0"]

    page = contextual.context_html(context, PlotOptions(), [])
    names = [trace.name for trace in page.data]
    assert names[-1] == "unrelated words (baseline)" and len({trace.line.dash for trace in page.data}) == 3
    assert page.layout.yaxis.range[0] <= 0


def test_categorical_colours_keep_a_legend(default_model):
    vectors = np.random.default_rng(0).normal(size=(60, 8))
    sentences = tuple(i % 15 for i in range(60))  # 15 sentence numbers: categories, not a colour scale
    points = project(vectors, [str(i) for i in range(60)], metadata={"sentence": sentences, "word": range(60)})
    figure = draw(projection.projection_static, points, PlotOptions(color_by="sentence"))
    legend = figure.axes[0].get_legend()
    assert legend is not None and [t.get_text() for t in legend.get_texts()] == [str(i) for i in range(15)]
    assert len(figure.axes) == 1  # no colour bar
    inside(figure, legend.get_texts())  # beside the axes, inside the picture

    notes: list[str] = []
    figure = Figure(layout="constrained")
    FigureCanvasAgg(figure)
    projection.projection_static(figure, points, PlotOptions(color_by="word"), notes)  # 60 numbers named as words
    labels = [t.get_text() for t in figure.axes[0].get_legend().get_texts()]
    assert len(labels) == 21 and labels[-1] == "other (40 values)" and "20 most frequent" in notes[0]
    page = projection.projection_html(points, PlotOptions(color_by="word"), [])
    assert [trace.name for trace in page.data][-1] == "other (40 values)" and all(t.showlegend for t in page.data)
    assert page.data[-1].marker.color == "#b0b0b0"


@pytest.mark.slow
def test_html_is_interactive_by_default_and_a_picture_when_asked(context, default_model, tmp_path):
    four = project_tokens(default_model, ["king", "queen", "man", "woman"])
    for result in (context, four):
        drawn = render(result, "html")
        page = drawn.content.decode()
        assert drawn.size > 4_000_000 and "Plotly.newPlot" in page  # hover, zoom: what the tour promises
        assert re.search(r'id="bertlens-plot"[^>]*style="height:100(%|vh); ?width:100%;"', page)  # the whole window
        assert '"responsive": true' in page or '"responsive":true' in page
        picture = render(result, "html", PlotOptions(html="svg"))
        page = picture.content.decode()
        assert picture.size < 200_000 and "<script" not in page  # asked for: the static picture, small
        svg = page[page.index("<svg") : page.index("</svg>") + 6]
        root = ET.fromstring(svg)
        assert "width" not in root.attrib and "height" not in root.attrib and "viewBox" in root.attrib
        assert "width:100%" in root.attrib["style"] and 'name="viewport"' in page
        assert "SVG in a page" in picture.notes[-1]
    heatmaps = render(explain(default_model, "hello, world!"), "html").content.decode()
    assert "Plotly.newPlot" in heatmaps  # heat maps: a value per cell on hover

    out = tmp_path / "context.html"
    assert main(["plot", "context", "bread", *SENTENCES, "--out", str(out), "--json"]) == 0
    assert out.stat().st_size > 4_000_000
    assert main(["plot", "context", "bread", *SENTENCES, "--out", str(tmp_path / "c.png"), "--html", "svg"]) == 2


def test_the_embedding_layer_bands_share_colour_scales(default_model):
    explanation = explain(default_model, "hello, world!")
    figure = draw(layer.explain_static, explanation)
    images = [image for ax in figure.axes for image in ax.get_images()]
    limits = [image.get_clim() for image in images]
    assert len(images) == 5 and len(set(limits[:4])) == 1 and limits[4] != limits[0]  # rows + sum, then LayerNorm
    rows = np.concatenate([np.abs(explanation.matrix(name)).ravel() for name in ("word_row", "token_type_row")])
    rows = np.concatenate([rows, *(np.abs(explanation.matrix(n)).ravel() for n in ("position_row", "sum"))])
    assert limits[0] == pytest.approx((-np.percentile(rows, 99), np.percentile(rows, 99)))
    assert len(figure.axes) == 5 + 2  # five panels, two colour bars
    page = layer.explain_html(explanation, PlotOptions(), [])
    assert [trace.coloraxis for trace in page.data] == ["coloraxis"] * 4 + ["coloraxis2"]
    assert page.layout.coloraxis.colorbar.title.text == "rows and sum"


@pytest.mark.slow
def test_tsne_shows_a_clock_only_when_asked(capsys):
    vectors = np.random.default_rng(0).normal(size=(40, 6))
    quick = ProjectionSettings(max_iter=250)
    project(vectors, [str(i) for i in range(40)], "tsne", progress=True, settings=quick)
    assert "t-SNE of 40 points to 2 dims: done in" in capsys.readouterr().err
    project(vectors, [str(i) for i in range(40)], "tsne", settings=quick)
    assert capsys.readouterr().err == ""
    assert main(["plot", "tokens", "king", "queen", "man", "woman", "--method", "tsne", "--json"]) == 0
    captured = capsys.readouterr()  # --json: no clock (nor off a terminal, as here)
    assert captured.err == "" and json.loads(captured.out)["data"]["method"] == "tsne"


@pytest.mark.slow
def test_umap_shows_a_clock(capsys):
    pytest.importorskip("umap", reason="umap-learn is not installed")
    vectors = np.random.default_rng(0).normal(size=(40, 6))
    project(vectors, [str(i) for i in range(40)], "umap", progress=True)  # umap-learn reports no steps either
    assert "UMAP of 40 points to 2 dims: done in" in capsys.readouterr().err


def test_nearest_points_are_the_original_spaces(default_model):
    vectors = np.random.default_rng(1).normal(size=(300, 16))
    vectors[7] = 0.0  # a zero row: cosine 0 with everything, never an error
    index, cosine = nearest_points(vectors, 5, chunk=64)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    unit = vectors / np.where(norms > 0, norms, 1)
    scores = unit @ unit.T
    np.fill_diagonal(scores, -np.inf)
    for i in range(300):
        np.testing.assert_allclose(cosine[i], np.sort(scores[i])[::-1][:5], atol=1e-5)
        assert i not in index[i]
        np.testing.assert_allclose(scores[i, index[i]], cosine[i], atol=1e-5)
    projected = project_tokens(default_model, ["king", "queen", "man", "woman", "bread"], nearest=10)
    assert projected.nearest.shape == (5, 4)  # at most n - 1 others
    assert projected.to_dict()["nearest"][0][0] == 1  # king's nearest: queen
    assert project_tokens(default_model, ["king", "queen", "man"]).to_dict()["nearest"] is None
    with pytest.raises(Exception, match="nearest must be"):
        project(vectors, [str(i) for i in range(300)], nearest=-1)


# --- pictures that read right --------------------------------------------------------------------------------------


def random_projection(n: int = 12, dims: int = 2, **metadata) -> Any:
    vectors = np.random.default_rng(3).normal(size=(n, 8))
    return project(vectors, [f"word{i}" for i in range(n)], dims=dims, metadata=metadata or None)


def within(figure: Figure, texts, box) -> None:
    """Every visible text's extent lies inside `box` (display pixels, a pixel of slack)."""
    renderer = figure.canvas.get_renderer()
    for text in texts:
        if not text.get_visible() or not text.get_text():
            continue
        extent = text.get_window_extent(renderer)
        assert extent.x0 >= box.x0 - 1 and extent.x1 <= box.x1 + 1, text.get_text()
        assert extent.y0 >= box.y0 - 1 and extent.y1 <= box.y1 + 1, text.get_text()


def test_html_page_works_offline_and_follows_the_window():
    from browser import MISSING, chromium, launch

    page = render(random_projection(), "html").content.decode()
    assert "plotly.js v" in page[:3_000_000] and len(page) > 4_000_000  # the bundle itself, inlined
    assert not re.search(r"<script[^>]*\ssrc=", page) and not re.search(r"<link[^>]*https?:", page)
    if chromium() is None:
        pytest.skip(MISSING)
    sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")
    measure = "(() => { const r = document.querySelector('#bertlens-plot .main-svg').getBoundingClientRect();"
    measure += " return [r.left, r.width, r.height]; })()"
    with sync_api.sync_playwright() as playwright:
        browser = launch(playwright)
        try:
            tab = browser.new_page(viewport={"width": 700, "height": 560})
            tab.route(
                "**/*", lambda route: route.abort() if route.request.url.startswith("http") else route.continue_()
            )
            tab.set_content(page, wait_until="load")
            tab.wait_for_selector("#bertlens-plot .main-svg")
            left, width, height = tab.evaluate(measure)
            assert left == 0 and width == 700 and height == 560  # the whole window
            tab.set_viewport_size({"width": 1300, "height": 900})
            tab.wait_for_function(
                "document.querySelector('#bertlens-plot .main-svg').getBoundingClientRect().width > 1000"
            )
            left, width, height = tab.evaluate(measure)
            assert left == 0 and width == 1300 and height == 900  # and follows it
        finally:
            browser.close()


def test_labels_stay_inside_the_axes():
    points = random_projection(6)
    rightmost = int(np.argmax(points.points[:, 0]))
    labels = list(points.labels)
    labels[rightmost] = "a rather long label at the right"
    points = project(np.random.default_rng(3).normal(size=(6, 8)), labels)
    figure = draw(projection.projection_static, points)
    ax = figure.axes[0]
    texts = [t for t in ax.texts if t.get_text()]
    assert len(texts) == 6
    within(figure, texts, ax.get_window_extent(figure.canvas.get_renderer()))


def test_many_points_label_the_featured_ones(default_model):
    words = project_tokens(default_model, count=200)
    names = sorted(set(words.metadata["theme"]))
    assert len(names) == 8 and all(re.fullmatch(r"theme \d: \w+, \w+, \w+", name) for name in names)
    featured = {words.labels[i] for i in words.featured}
    assert len(words.featured) == 24 and featured == {w for name in names for w in name.split(": ")[1].split(", ")}
    figure = draw(projection.projection_static, words)
    ax = figure.axes[0]
    shown = [t for t in ax.texts if t.get_visible()]
    assert shown and {t.get_text() for t in ax.texts} == featured  # the theme words, not 200 labels
    renderer = figure.canvas.get_renderer()
    boxes = [t.get_window_extent(renderer) for t in shown]
    assert not any(a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1 :])  # none written over another
    within(figure, shown, ax.get_window_extent(renderer))
    assert [t.get_text() for t in ax.get_legend().get_texts()] == names  # coloured by theme, in order
    page = projection.projection_html(words, PlotOptions(), [])
    assert {t for trace in page.data for t in trace.text if t} == featured


def test_heat_map_numbers_contrast_with_their_cells(tiny_models):
    from bertlens.embeddings.positions import position_similarity
    from bertlens.plots.style import contrast, text_colour

    assert text_colour("#67001f") == "#ffffff" and text_colour("#f7f7f7") == "#000000"  # dark red, near white
    figure = draw(positions.positions_static, position_similarity(tiny_models["bert"]))
    types = figure.axes[-1]
    image = types.get_images()[0]
    texts = types.texts
    assert len(texts) == image.get_array().size
    for text in texts:
        column, row = (round(v) for v in text.get_position())
        cell = image.cmap(image.norm(image.get_array()[row, column]))
        assert contrast(text.get_color(), cell) >= 4.5, text.get_text()  # WCAG AA for normal text


def test_trajectory_numbers_are_readable_and_arrows_show_the_direction(tiny_models):
    from bertlens.views.trajectory import trajectory as follow

    path = follow(tiny_models["bert"], "cat", ["the cat sat on the mat", "a cat ran"])
    figure = draw(trajectory.trajectory_static, path)
    ax = figure.axes[0]
    arrows = [t for t in ax.texts if getattr(t, "arrow_patch", None) is not None]
    numbers = [t for t in ax.texts if t.get_text()]
    steps = len(path.layers) - 1
    assert len(arrows) == 2 * steps  # one per step of each sentence, pointing to the next layer
    for sentence in range(2):
        for j in range(steps):
            arrow = arrows[sentence * steps + j]
            np.testing.assert_allclose(arrow.xy, path.points[sentence, j + 1])  # the head: the next layer
            np.testing.assert_allclose(arrow.xyann, path.points[sentence, j])  # the tail: this one
    assert [t.get_text() for t in numbers] == [str(layer) for layer in path.layers] * 2
    assert all(t.get_fontsize() >= 10 for t in numbers)
    from bertlens.plots.style import contrast

    assert all(contrast(t.get_color(), "#ffffff") >= 4.5 for t in numbers)  # the series' hue, dark enough to read
    renderer = figure.canvas.get_renderer()
    within(figure, numbers, ax.get_window_extent(renderer))
    legend = ax.get_legend()
    assert legend.get_window_extent(renderer).y1 <= ax.get_window_extent(renderer).y0  # below the plot, over nothing
    assert [t.get_text() for t in legend.get_texts()] == [f"{i}: {s}" for i, s in enumerate(path.sentences)]


def test_coinciding_curves_stay_visible_and_are_all_in_the_legend(tiny_models):
    from bertlens.contextual.context import compare_contexts

    two = compare_contexts(tiny_models["bert"], "cat", ["the cat sat", "a cat ran"])
    figure = draw(contextual.context_static, two)
    ax = figure.axes[0]
    drawn = [line for line in ax.get_lines() if not line.get_label().startswith("_")]
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert legend == [line.get_label() for line in drawn]  # every line in the legend, and nothing else
    assert legend[0] == "cosine of its two vectors (this word)"  # one pair: mean and lowest are the same curve
    assert contextual.merged([("a", [1.0, 0.5]), ("b", [0.2, 0.1]), ("c", [1.0, 0.5])]) == [
        ("a = c", [1.0, 0.5]),
        ("b", [0.2, 0.1]),
    ]
    three = compare_contexts(tiny_models["bert"], "cat", ["the cat sat", "a cat ran", "the cat is red"])
    ax = draw(contextual.context_static, three).axes[0]
    xs = [line.get_xdata() for line in ax.get_lines() if not line.get_label().startswith("_")]
    assert len(xs) == 3 and all(not np.allclose(a, b) for i, a in enumerate(xs) for b in xs[i + 1 :])  # side by side


def watch_records(steps: int = 5, probes: tuple[str, ...] = ("king", "queen", "man", "woman")) -> list[dict]:
    """Watch records as pre-training writes them (training/watch.jsonl), with hand-made numbers."""
    rng = np.random.default_rng(0)
    return [
        {
            "step": 10 * i,
            "tokens": 1000 * i,
            "loss": 9.0 - i,
            "perplexity": float(np.exp(9.0 - i)),
            "baseline": 0.1 * i,
            "norms": {
                p: v + 0.01 * i for p, v in (("p5", 0.2), ("p25", 0.3), ("p50", 0.4), ("p75", 0.5), ("p95", 0.6))
            },
            "benchmarks": {
                name: {"spearman": s + 0.05 * i, "pairs_used": 10, "pairs_total": 20}
                for name, s in (("rg65", 0.1), ("wordsim353", -0.1), ("men", 0.3))
            },
            "neighbors": {p: [["a", 0.5]] for p in probes},
            "probes": {p: rng.normal(size=8).tolist() for p in probes},
        }
        for i in range(steps)
    ]


def test_watch_report_names_every_line_and_covers_none():
    from bertlens.training.watch import shared_projection
    from bertlens.training.watch_html import report_figures

    records = watch_records()
    log = [{"step": s, "loss": 9.0 - s / 10} for s in range(0, 41, 5)]
    word2vec = {"benchmarks": {"rg65": {"spearman": 0.4}, "wordsim353": {"spearman": 0.2}, "men": {"spearman": None}}}
    projection = shared_projection(records)
    figures = dict(report_figures(records, log, projection, word2vec))
    for heading, figure in figures.items():
        figure.canvas.draw()
        renderer = figure.canvas.get_renderer()
        for ax in figure.axes:
            legend = ax.get_legend()
            named = [line for line in ax.get_lines() if not line.get_label().startswith("_")]
            if legend is None:
                continue
            box = legend.get_window_extent(renderer)
            for other in figure.axes:  # no drawn point under the legend
                for line in other.get_lines():
                    xy = other.transData.transform(np.column_stack([line.get_xdata(), line.get_ydata()]))
                    xy = xy[np.isfinite(xy).all(axis=1)]
                    assert not any(box.contains(x, y) for x, y in xy), (heading, line.get_label())
            if heading.startswith("Word similarity"):
                entries = [t.get_text() for t in legend.get_texts()]
                assert entries == [line.get_label() for line in named]  # every line, the dashed ones too
                assert {"rg65 (word2vec)", "wordsim353 (word2vec)"} <= set(entries)
    probes = figures["The probe words' rows moving"]
    ax = probes.axes[0]
    words = [t for t in ax.texts if t.get_text()]
    assert sorted(t.get_text() for t in words) == ["king", "man", "queen", "woman"]
    from bertlens.plots.style import contrast

    assert all(contrast(t.get_color(), "#ffffff") >= 4.5 for t in words)
    within(probes, words, ax.get_window_extent(probes.canvas.get_renderer()))  # "king", never "ing"
    boxes = [t.get_window_extent(probes.canvas.get_renderer()) for t in words]
    assert not any(a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1 :])  # none written over another


def test_senses_are_named_by_their_words_or_a_typical_sentence(tiny_models):
    from bertlens.plots import senses
    from bertlens.senses.senses import SensesOptions, describe
    from bertlens.senses.senses_text import Snippet

    rng = np.random.default_rng(0)
    river = [f"the {w} bank by the river water near a boat" for w in ("north", "south", "east", "west", "steep")]
    river += [f"the river water reached the {w} bank and a boat" for w in ("low", "high", "far", "near", "old")]
    money = ["she paid the bank", "a bank raised rates", "his bank closed", "my bank called", "our bank lent"]
    texts = river + money
    vectors = np.vstack([rng.normal(size=(10, 16)) * 0.1 + 5, rng.normal(size=(5, 16)) * 0.1 - 5])
    vectors[:, 1] = np.r_[np.ones(10), -np.ones(5)] * 5  # two clearly separate senses
    snippets = [Snippet(t, t.index("bank"), t.index("bank") + 4, "corpus.txt", i + 1, -1) for i, t in enumerate(texts)]
    result = describe(tiny_models["bert"], "bank", "corpus.txt", 2, vectors, snippets, 15, SensesOptions(k=2), [])
    figure = draw(senses.senses_static, result)
    entries = [t.get_text() for t in figure.axes[0].get_legend().get_texts()]
    words, phrase = entries[0].split("\n")
    assert words == "sense 0 (10): " + ", ".join(w.word for w in result.senses[0].words[:3])  # as the table has them
    assert {"river", "water", "boat"} <= set(words.split(": ")[1].split(", "))
    assert phrase.startswith("“…") and phrase.endswith("…”") and "bank" in phrase  # its most typical sentence
    words, phrase = entries[1].split("\n")
    assert (
        words.startswith("sense 1 (5): ")
        and "bank" in phrase
        and phrase in f"“…{result.senses[1].typical[0].snippet}…”"
    )
    page = senses.senses_html(result, PlotOptions(), [])
    named = [trace.name for trace in page.data if trace.showlegend is not False]
    assert named == [entry.replace("\n", "<br>") for entry in entries]
