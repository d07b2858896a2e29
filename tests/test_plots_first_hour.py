"""Pictures as a newcomer reads them: the context plot starts at 0 and shows the unrelated-words baseline
with lines told apart without colour and nothing clipped; categorical colours keep a legend; small HTML plots are a
picture in a responsive page, not 4.8 MB of plotly.js; t-SNE/UMAP show a clock when asked; and a projection's
nearest points are the original space's (numpy as the oracle).
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET

import numpy as np
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from bertlens.cli import main
from bertlens.contextual.context import compare_contexts
from bertlens.embeddings.layer import explain
from bertlens.plots import contextual, layer, projection
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
def test_small_html_plots_are_a_picture_in_a_responsive_page(context, default_model, tmp_path):
    four = project_tokens(default_model, ["king", "queen", "man", "woman"])
    for result in (context, four):
        drawn = render(result, "html")
        page = drawn.content.decode()
        assert drawn.size < 200_000 and "<script" not in page  # not 4.8 MB of plotly.js for four points
        svg = page[page.index("<svg") : page.index("</svg>") + 6]
        root = ET.fromstring(svg)
        assert "width" not in root.attrib and "height" not in root.attrib and "viewBox" in root.attrib
        assert "width:100%" in root.attrib["style"] and 'name="viewport"' in page
        assert "SVG in a page" in drawn.notes[-1]
    interactive = render(four, "html", PlotOptions(html="plotly"))
    page = interactive.content.decode()
    assert interactive.size > 4_000_000 and "Plotly.newPlot" in page
    assert re.search(r'id="bertlens-plot"[^>]*style="height:[^;"]+; ?width:100%;"', page)  # as wide as the window
    assert '"autosize":true' in page
    heatmaps = render(explain(default_model, "hello, world!"), "html").content.decode()
    assert "Plotly.newPlot" in heatmaps  # heat maps stay interactive: a value per cell on hover

    out = tmp_path / "context.html"
    assert main(["plot", "context", "bread", *SENTENCES, "--out", str(out), "--html", "plotly", "--json"]) == 0
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
