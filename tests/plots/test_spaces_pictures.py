"""The picture of two spaces side by side (`render` of a `SpaceDiff`): PNG, SVG and HTML each hold the aligned plane
with the moved tokens labelled, the overlap histogram with its counts, and (layers compared) the CKA heat map with
every value written in its cell; and `bertlens diff --plot` writes it."""

from __future__ import annotations

import json
import re
import struct
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from tiny import make_tiny

from bertlens import load_model
from bertlens.cli import main
from bertlens.plots.render import PlotOptions, render
from bertlens.spaces import SpaceDiff, diff


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Two tiny BERTs of one vocabulary and width, initialised from different seeds."""
    root = tmp_path_factory.mktemp("two-spaces")
    return make_tiny("bert", root / "a", seed=0), make_tiny("bert", root / "b", seed=1)


@pytest.fixture(scope="module")
def flat(pair: tuple[Path, Path]) -> SpaceDiff:
    return diff(load_model(str(pair[0])), load_model(str(pair[1])), top=6)


@pytest.fixture(scope="module")
def layered(pair: tuple[Path, Path], generated_corpus: Path) -> SpaceDiff:
    a, b = (load_model(str(p)) for p in pair)
    return diff(a, b, top=6, corpus=generated_corpus, contextual=True, occurrences=200)


def svg_texts(content: bytes) -> list[str]:
    """Every text matplotlib drew: it names each one in a comment before its glyphs (the glyphs are paths)."""
    return [t.strip() for t in re.findall(r"<!-- (.*?) -->", content.decode("utf-8"), flags=re.S)]


def cka_cells(result: SpaceDiff) -> list[str]:
    assert result.contextual is not None
    return [f"{v:.2f}" for row in result.contextual.cka.tolist() for v in row]


def test_png_is_drawn_at_the_asked_size(flat: SpaceDiff, layered: SpaceDiff) -> None:
    for result in (flat, layered):
        drawn = render(result, "png", PlotOptions(width=8, height=5, dpi=100))
        assert drawn.kind == "diff" and drawn.content.startswith(b"\x89PNG\r\n\x1a\n")
        width, height = struct.unpack(">II", drawn.content[16:24])  # the IHDR chunk
        assert (width, height) == (800, 500)


def test_svg_holds_the_moved_tokens_the_counts_and_no_heat_map_without_layers(flat: SpaceDiff) -> None:
    content = render(flat, "svg").content
    assert ET.fromstring(content).tag == "{http://www.w3.org/2000/svg}svg"
    texts = svg_texts(content)
    moved = [p.token for p in flat.plane if p.moved]
    assert moved == [m.token for m in flat.moved] and len(moved) == 6
    assert all(token in texts for token in moved)
    assert all(f"{count:,}" in texts for count in flat.histogram)  # each bar's count above it
    assert not any("CKA" in t for t in texts)


def test_svg_with_layers_writes_every_cka_value_in_its_cell(layered: SpaceDiff) -> None:
    texts = svg_texts(render(layered, "svg").content)
    assert layered.contextual is not None and layered.contextual.cka.shape == (3, 3)  # 2 layers + the input
    cells = cka_cells(layered)
    drawn = [t for t in texts if re.fullmatch(r"-?\d\.\d\d", t)]
    assert sorted(drawn) == sorted(cells)  # each value once, in its cell
    assert any("linear CKA" in t for t in texts) and "layer of A" in texts


def test_html_holds_the_moved_tokens_their_neighbours_and_the_cka_values(layered: SpaceDiff, flat: SpaceDiff) -> None:
    page = render(layered, "html").content.decode("utf-8")
    assert "Plotly.newPlot" in page and not re.search(r"<script[^>]*\ssrc=", page)
    for change in layered.moved:
        assert json.dumps(change.token) in page  # its label beside its point
        assert change.neighbours_b[0].token in page  # its nearest tokens in the hover text
    assert all(json.dumps(cell) in page for cell in cka_cells(layered))
    assert '"zmin":0.0' in page and '"zmax":1.0' in page
    without = render(flat, "html").content.decode("utf-8")  # plotly's template names every trace type once
    assert page.count('"type":"heatmap"') == without.count('"type":"heatmap"') + 1


def test_svg_in_a_page(flat: SpaceDiff) -> None:
    page = render(flat, "html", PlotOptions(html="svg")).content.decode("utf-8")
    assert "<svg" in page and f"<!-- {flat.moved[0].token} -->" in page


def test_arrows_go_where_tokens_moved_and_none_where_they_stayed(pair: tuple[Path, Path], flat: SpaceDiff) -> None:
    model = load_model(str(pair[0]))
    same = diff(model, model, top=4)
    page = render(same, "html").content.decode("utf-8")
    assert all(json.dumps(m.token) in page for m in same.moved)  # labelled all the same
    assert page.count('"showarrow":true') == 0  # a token that stayed gets no arrow (a head without a shaft)
    moved = [p for p in flat.plane if p.moved]
    apart = [p for p in moved if p.a != p.b]
    assert len(apart) == len(moved) == 6
    assert render(flat, "html").content.decode("utf-8").count('"showarrow":true') == len(apart)


def test_cli_plot_writes_each_format_and_refuses_to_replace(capsys, pair: tuple[Path, Path], tmp_path: Path) -> None:
    a, b = (str(p) for p in pair)
    for suffix in ("png", "svg", "html"):
        target = tmp_path / f"two.{suffix}"
        assert main(["diff", a, b, "--top", "3", "--plot", str(target), "--json"]) == 0
        data = json.loads(capsys.readouterr().out)
        assert data["kind"] == "diff" and data["file"]["path"] == str(target) and data["file"]["format"] == suffix
        assert data["data"]["tokens"] > 0 and target.stat().st_size == data["file"]["size"]
    before = (tmp_path / "two.svg").read_bytes()
    assert main(["diff", a, b, "--plot", str(tmp_path / "two.svg")]) == 2
    assert "exists" in capsys.readouterr().err and (tmp_path / "two.svg").read_bytes() == before
    assert main(["diff", a, b, "--top", "2", "--plot", str(tmp_path / "two.svg"), "--overwrite"]) == 0
    assert "Wrote" in capsys.readouterr().out
