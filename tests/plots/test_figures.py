"""Pictures: every drawable result in PNG, SVG and HTML (valid files, nothing fetched), atomic writes, bad targets,
no global matplotlib state; and `bertlens plot`, whose --json is the library's to_dict()."""

from __future__ import annotations

import json
import sys
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest

from bertlens import InputError, explain
from bertlens.cli import main
from bertlens.contextual.context import compare_contexts
from bertlens.contextual.contextuality import measure_contextuality
from bertlens.embeddings.positions import position_similarity
from bertlens.plots.render import PlotOptions, Rendered, render
from bertlens.views.projection import project
from bertlens.views.tokens import project_tokens
from bertlens.views.trajectory import trajectory

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
SENTENCES = ["I like eating bread", "The banana bread was horrible", "bread is good"]
TEXTS = ["the cat sat on the mat", "the dog sat on the log", "a cat and a dog", "the mat was red", "a dog ran"]


class ResourceLinks(HTMLParser):
    """Every URL the page itself would load: script src, link href, img/iframe/source src, CSS url(...)."""

    def __init__(self) -> None:
        super().__init__()
        self.loads: list[str] = []
        self.tags: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.add(tag)
        for name, value in attrs:
            if (tag, name) in {("script", "src"), ("link", "href"), ("img", "src"), ("iframe", "src")}:
                self.loads.append(value or "")
            if tag == "source" and name == "src":
                self.loads.append(value or "")


def check_file(content: bytes, fmt: str) -> None:
    if fmt == "png":
        assert content.startswith(PNG_SIGNATURE) and content[12:16] == b"IHDR"
    elif fmt == "svg":
        root = ET.fromstring(content)
        assert root.tag == "{http://www.w3.org/2000/svg}svg"
        links = [v for e in root.iter() for k, v in e.attrib.items() if k.endswith("href")]
        assert all(v.startswith(("#", "data:image/png;base64,")) for v in links)  # heatmaps are embedded, not linked
        assert b"@import" not in content
    else:
        page = content.decode("utf-8")
        parser = ResourceLinks()
        parser.feed(page)
        assert {"html", "body", "div"} <= parser.tags and "bertlens-plot" in page
        assert parser.loads == []  # plotly.js is inlined: the page loads nothing at all, from anywhere
        assert ("script" in parser.tags and "Plotly.newPlot" in page) or "svg" in parser.tags  # plotly, or a picture


@pytest.fixture(scope="module")
def results(default_model):
    """One result of every drawable kind (small, so the module stays fast)."""
    return {
        "projection": project_tokens(default_model, ["king", "queen", "man", "woman", "Sinan", "bread"]),
        "projection-3d": project_tokens(default_model, count=50, dims=3),
        "trajectory": trajectory(default_model, "bread", SENTENCES),
        "positions": position_similarity(default_model, limit=32),
        "embedding-layer": explain(default_model, "hello, world!"),
        "context": compare_contexts(default_model, "bread", SENTENCES),
        "contextuality": measure_contextuality(default_model, TEXTS, pairs=200),
    }


@pytest.mark.parametrize("fmt", ["png", "svg", "html"])
def test_every_kind_draws_a_valid_file(results, tmp_path, fmt):
    for name, result in results.items():
        path = tmp_path / f"{name}.{fmt}"
        drawn = render(result, path)
        assert isinstance(drawn, Rendered) and drawn.path == str(path) and drawn.format == fmt
        content = path.read_bytes()
        assert content == drawn.content and drawn.size == len(content) > 1000, name
        check_file(content, fmt)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(f"{n}.{fmt}" for n in results)  # no leftovers


def test_format_name_returns_bytes_and_writes_nothing(results, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    drawn = render(results["projection"], "svg")
    assert drawn.path is None and drawn.to_dict()["path"] is None and "content" not in drawn.to_dict()
    check_file(drawn.content, "svg")
    assert list(tmp_path.iterdir()) == []


def test_labels_and_colours_by_metadata(results):
    svg = render(results["projection"], "svg", PlotOptions(label_by="piece")).content
    assert b"<!-- sin ##an -->" in svg and b"<!-- Sinan -->" not in svg  # matplotlib names each text in a comment
    assert b"<!-- Sinan -->" in render(results["projection"], "svg").content  # by default: the labels
    page = render(results["projection"], "html", PlotOptions(label_by="piece", color_by="kind", html="plotly"))
    page = page.content.decode()
    assert '"sin ##an"' in page and '"name":"word"' in page and '"name":"token"' in page  # one legend entry per kind
    continuous = project(
        np.random.default_rng(0).normal(size=(40, 5)),
        [str(i) for i in range(40)],
        metadata={"position": tuple(range(40))},
    )
    page = render(continuous, "html", PlotOptions(color_by="position", html="plotly")).content.decode()
    assert '"colorscale"' in page and '"title":{"text":"position"}' in page
    many = project(
        np.random.default_rng(0).normal(size=(30, 5)),
        [str(i) for i in range(30)],
        metadata={"word": tuple(f"w{i}" for i in range(30))},
    )
    assert "the 20 most frequent are named" in render(many, "png", PlotOptions(color_by="word")).notes[0]
    with pytest.raises(InputError, match="No metadata column 'colour'") as info:
        render(results["projection"], "png", PlotOptions(color_by="colour"))
    assert "piece" in info.value.hint


def test_large_static_pictures_label_only_featured_points(results):
    drawn = render(results["projection-3d"], "png", PlotOptions(max_labels=10))
    assert "15 featured points labelled where they fit" in drawn.notes[0]  # three words naming each of 5 themes
    assert render(results["projection-3d"], "png", PlotOptions(max_labels=0)).notes == ()  # no labels, as asked


def test_embedding_layer_picture_shows_every_part(results, tiny_models):
    page = render(results["embedding-layer"], "html").content.decode()
    for part in (
        "word_embeddings[id]",
        "token_type_embeddings[segment]",
        "position_embeddings[position]",
        "sum of the rows",
        "LayerNorm output",
        "matches the model",
    ):
        assert part in page, part
    albert = explain(tiny_models["albert"], "the cat sat")  # projection after LayerNorm: one more panel
    assert "output (projected after LayerNorm)" in render(albert, "html").content.decode()
    modern = render(explain(tiny_models["modernbert"], "the cat sat"), "html")  # no position or type rows
    assert "position_embeddings[position]" not in modern.content.decode()
    assert any("absent: position_embeddings" in n for n in modern.notes)


def test_existing_file_is_refused_and_kept(results, tmp_path):
    path = tmp_path / "plot.png"
    path.write_bytes(b"mine")
    with pytest.raises(InputError, match="exists"):
        render(results["projection"], path)
    assert path.read_bytes() == b"mine"
    render(results["projection"], path, PlotOptions(overwrite=True))
    assert path.read_bytes().startswith(PNG_SIGNATURE)
    assert [p.name for p in tmp_path.iterdir()] == ["plot.png"]


@pytest.mark.parametrize(
    ("target", "message"),
    [("plot.pdf", "'.pdf' is not a picture format"), ("plot", "no suffix"), ("", "Expected a file path")],
)
def test_bad_targets(results, tmp_path, target, message):
    with pytest.raises(InputError, match=message):
        render(results["projection"], str(tmp_path / target) if target else target)
    assert list(tmp_path.iterdir()) == []


def test_directory_and_unwritable_targets(results, tmp_path):
    with pytest.raises(InputError, match="is a directory"):
        render(results["projection"], tmp_path)
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(InputError, match="Cannot write"):
        render(results["projection"], blocker / "plot.png")  # its parent is a file
    assert blocker.read_text() == "x"


def test_what_cannot_be_drawn(default_model):
    with pytest.raises(InputError, match="cannot draw a Model"):
        render(default_model, "png")


def test_no_global_matplotlib_state(results):
    import matplotlib

    backend, rc = matplotlib.get_backend(), dict(matplotlib.rcParams)
    had_pyplot = "matplotlib.pyplot" in sys.modules
    render(results["trajectory"], "svg")
    render(results["projection-3d"], "png")
    assert matplotlib.get_backend() == backend and dict(matplotlib.rcParams) == rc
    assert had_pyplot or "matplotlib.pyplot" not in sys.modules


def test_svg_is_reproducible(results):
    assert render(results["positions"], "svg").content == render(results["positions"], "svg").content


# --- the command line ----------------------------------------------------------------------------------------------


def run_json(capsys, *argv: str) -> dict:
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_cli_plot_tokens_writes_and_prints_the_data(capsys, default_model, tmp_path):
    out = tmp_path / "words.html"
    data = run_json(capsys, "plot", "tokens", "king", "queen", "man", "woman", "--out", str(out), "--color-by", "kind")
    expected = project_tokens(default_model, ["king", "queen", "man", "woman"]).to_dict()
    assert data["kind"] == "tokens" and data["data"] == expected
    assert data["file"]["path"] == str(out) and data["file"]["format"] == "html"
    check_file(out.read_bytes(), "html")


def test_cli_plot_kinds(capsys, default_model, tmp_path):
    data = run_json(capsys, "plot", "trajectory", "bread", *SENTENCES, "--out", str(tmp_path / "t.svg"))
    assert np.array(data["data"]["points"]).shape == (3, 7, 2)
    check_file((tmp_path / "t.svg").read_bytes(), "svg")
    data = run_json(capsys, "plot", "positions", "--limit", "16", "--out", str(tmp_path / "p.png"))
    # The same float64 computation on the same rows, and JSON keeps every float64 digit: equal, bit for bit.
    np.testing.assert_array_equal(data["data"]["cosine"], position_similarity(default_model, 16).cosine)
    data = run_json(capsys, "plot", "embedding-layer", "hello, world!", "--no-check")
    assert data["file"] is None and data["data"]["tokens"][1]["piece"] == "hello"
    data = run_json(capsys, "plot", "contextual", *TEXTS[:2], "--level", "token", "--layer", "0", "--dims", "3")
    assert data["data"]["dims"] == 3 and set(data["data"]["metadata"]["layer"]) == {0}
    data = run_json(capsys, "plot", "context", "bread", *SENTENCES[:2], "--out", str(tmp_path / "c.png"))
    assert data["data"]["layers"][0]["layer"] == "input matrix"
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(TEXTS), encoding="utf-8")
    data = run_json(capsys, "plot", "contextuality", str(corpus), "--out", str(tmp_path / "x.html"))
    assert len(data["data"]["layers"]) == 7
    assert main(["plot", "tokens", "dog", "cat", "bird"]) == 0
    assert "Nothing drawn: add --out" in capsys.readouterr().out
    data = run_json(capsys, "plot", "tokens", "--out", str(tmp_path / "words.png"))  # no tokens: the word groups
    groups = data["data"]["metadata"]["group"]
    assert len(groups) == 168 and len(set(groups)) == 12 and data["data"]["featured"] == list(range(168))


def test_cli_plot_errors(capsys, tiny_dirs, tmp_path):
    existing = tmp_path / "taken.png"
    existing.write_bytes(b"keep")
    assert main(["plot", "tokens", "dog", "cat", "bird", "--out", str(existing)]) == 2
    assert existing.read_bytes() == b"keep" and "exists" in capsys.readouterr().err
    assert main(["plot", "positions", "--model", str(tiny_dirs["modernbert"]), "--json"]) == 2
    assert json.loads(capsys.readouterr().out)["error"] == "InputError"
    assert main(["plot", "tokens", "dog", "cat", "--method", "tsne"]) == 2  # two points
    assert "at least 3" in capsys.readouterr().err
    assert main(["plot", "tokens", "--label", "mine"]) == 2  # the word groups are labelled by their group
    assert "--label" in capsys.readouterr().err
    assert main(["plot", "tokens", "dog", "cat", "bird", "--out", str(tmp_path / "x.html"), "--height", "4"]) == 2
    assert "an interactive page fills the window" in capsys.readouterr().err  # refused, not ignored
    assert main(["plot", "tokens", "dog", "cat", "bird", "--out", "png"]) == 2  # a file name without a suffix
    assert "no suffix" in capsys.readouterr().err
    assert main(["plot", "trajectory", "bread", "I like cake", "--out", str(tmp_path / "t.png")]) == 2
    assert "does not occur" in capsys.readouterr().err
    assert not (tmp_path / "t.png").exists()
    assert main(["plot", "tokens", "dog", "--dims", "4"]) == 2  # not a choice: a usage error
    assert "'4' is not one of '2', '3'" in capsys.readouterr().err
    assert [p.name for p in Path(tmp_path).iterdir()] == ["taken.png"]
