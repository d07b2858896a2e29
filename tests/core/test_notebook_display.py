"""Results in a notebook: `_repr_html_` reads like `to_table()` (cell by cell, escaped), the specific renderings
(pieces over the text, the embedding layer's check, neighbours' bars, pictures inline), `to_pandas()` and
`as_torch()` against the results' own data and transformers, and neither pandas nor torch at `import bertlens`."""

from __future__ import annotations

import base64
import html
import re
import subprocess
import sys
from html.parser import HTMLParser

import numpy as np
import pytest
import torch
from nasty import NASTY

from bertlens import (
    InputError,
    Lens,
    compare_contexts,
    explain,
    hidden_states,
    neighbors,
    render,
    sentence_vectors,
    similarity,
    token_vector,
    tokenize,
    word_vectors,
)
from bertlens.core.results import cell
from bertlens.similarity import neighbors_many


class Tables(HTMLParser):
    """Every <table>'s header and body cells as text, and the text inside elements of a given class."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tables: list[list[list[str]]] = []
        self.row: list[str] | None = None
        self.cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "table":
            self.tables.append([])
        elif tag == "tr":
            self.row = []
        elif tag in ("td", "th"):
            self.cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self.row is not None and self.cell is not None:
            self.row.append("".join(self.cell))
            self.cell = None
        elif tag == "tr" and self.row is not None:
            self.tables[-1].append(self.row)
            self.row = None

    def handle_data(self, data: str) -> None:
        if self.cell is not None:
            self.cell.append(data)


def html_tables(markup: str) -> list[list[list[str]]]:
    parser = Tables()
    parser.feed(markup)
    return parser.tables


def text_tables(text: str) -> list[list[list[str]]]:
    """The tables of a `to_table()` text, cut by the columns its dashed rule line marks."""
    lines = text.split("\n")
    found = []
    for i, line in enumerate(lines):
        if i == 0 or not re.fullmatch(r"-+(  -+)*", line):
            continue
        spans = [m.span() for m in re.finditer(r"-+", line)]
        rows = [lines[i - 1]]
        for below in lines[i + 1 :]:
            if not below or any(below[a - 2 : a].strip() for a, _ in spans[1:] if a - 2 < len(below)):
                break
            rows.append(below)
        found.append(
            [[row[a : (b if k < len(spans) - 1 else None)].strip() for k, (a, b) in enumerate(spans)] for row in rows]
        )
    return found


@pytest.fixture(scope="module")
def lens(default_model):
    return Lens(default_model)


def test_generic_html_is_the_text_table_cell_by_cell(default_model):
    for result in (
        similarity(default_model, "bread", "loaf"),
        token_vector(default_model, "dog"),
        tokenize(default_model, "I am Sinan", "Banana bread"),
    ):
        from bertlens.core.results import Result

        markup = Result._repr_html_(result)  # the shared rendering, whatever the class adds
        assert html_tables(markup) == text_tables(result.to_table()), type(result).__name__
        assert "\x00" not in markup and "\x00" not in result.to_table()  # no marker leaks either way


def test_html_escapes_what_the_user_wrote(default_model):
    evil = '<script>alert("x")</script> & <b>bold</b>'
    for result in (tokenize(default_model, evil), similarity(default_model, "<b>", "&amp;")):
        markup = result._repr_html_()
        assert "<script" not in markup and "<b>bold" not in markup and "<b>&" not in markup
        assert "&lt;" in markup and "&amp;" in markup


@pytest.mark.parametrize("text", NASTY, ids=range(len(NASTY)))
def test_tokenization_html_shades_pieces_over_the_exact_text(default_model, text):
    result = tokenize(default_model, text, "a pair")
    markup = result._repr_html_()
    said = re.findall(r'<div class="bl-said">(.*?)</div>', markup, flags=re.S)
    assert [html.unescape(re.sub(r"<[^>]+>", "", s)) for s in said] == [text, "a pair"]
    chips = re.findall(r'<span class="bl-chip (bl-\w+)" style="background:([^"]+)"', markup)
    assert len(chips) == len(result.tokens)
    assert [kind == "bl-special" for kind, _ in chips] == [t.special for t in result.tokens]
    segment_colour = {t.segment: colour for t, (_, colour) in zip(result.tokens, chips, strict=True)}
    assert len(set(segment_colour.values())) == len(segment_colour) == 2  # each segment its own colour


def test_tokenization_html_marks_word_pieces_and_too_long(default_model):
    markup = tokenize(default_model, "I am Sinan")._repr_html_()
    assert re.search(r'bl-chip bl-word"[^>]*>sin<small>8254</small>.*?bl-chip bl-cont"[^>]*>##an<small>2319', markup)
    assert "TOO LONG" in tokenize(default_model, "word " * 600)._repr_html_()
    assert "TOO LONG" not in markup


def test_explanation_html_shows_formula_parts_and_check(default_model):
    x = explain(default_model, "hello, world!")
    markup = x._repr_html_()
    assert html.escape(x.formula) in markup
    assert "bl-check bl-ok" in markup and "matches the model" in markup
    # The plain words first, as the CLI's table says them; the technical detail folded away below them.
    summary, detail = html.escape(x.check_summary()), html.escape(x.check_detail())
    assert "exactly equal to the model" in summary and summary in markup
    assert markup.index(summary) < markup.index("<details>") < markup.index(detail)
    assert "float32 steps" not in markup[: markup.index("<details>")]
    assert html_tables(markup) == text_tables(x.to_table())[:1]  # each token's parts, as the CLI prints them
    unchecked = explain(default_model, "hello, world!", check=False)._repr_html_()
    assert "Not checked" in unchecked and "bl-check bl-ok" not in unchecked


def test_neighbors_html_has_a_bar_per_score(lens):
    result = lens.neighbors("dog", 5)
    markup = result._repr_html_()
    widths = [float(w) for w in re.findall(r'<b style="width:([\d.]+)%">', markup)]
    assert widths == pytest.approx([100 * n.score for n in result.neighbors], abs=0.051)
    assert re.search(rf'<s style="left:{100 * result.baseline:.1f}%"', markup)  # the baseline tick
    rows = html_tables(markup)[0]
    assert [r[:4] for r in rows] == text_tables(result.to_table())[0]
    distances = neighbors(lens.model, "dog", 3, metric="euclidean", index=lens.index)._repr_html_()
    assert len(re.findall(r'<b style="width:', distances)) == 3 and "<s style" not in distances
    batch = lens.neighbors_many(["dog", "cat"], 3)._repr_html_()
    assert batch.count('<div class="bl-kind">Neighbors</div>') == 2


@pytest.mark.parametrize("fmt", ["png", "svg", "html"])
def test_rendered_pictures_display_inline(default_model, fmt):
    picture = render(compare_contexts(default_model, "bread", ["I like bread", "banana bread"]), fmt)
    markup = picture._repr_html_()
    if fmt == "html":
        assert '<iframe sandbox="allow-scripts" srcdoc="' in markup and "<script" not in markup
        frame = re.search(r'srcdoc="([^"]*)"', markup)
        assert frame and html.unescape(frame.group(1)).encode() == picture.content
    else:
        data = re.search(r'src="data:image/(?:png|svg\+xml);base64,([^"]+)"', markup)
        assert data and base64.b64decode(data.group(1)) == picture.content
    assert (picture._repr_png_() == picture.content) is (fmt == "png")
    assert (picture._repr_svg_() == picture.content.decode()) is (fmt == "svg") if fmt != "png" else True
    assert picture._repr_png_() is None or picture._repr_png_().startswith(b"\x89PNG")


def test_to_pandas_holds_the_raw_values(lens):
    import pandas as pd

    tokens = tokenize(lens.model, "I am Sinan", "bread")
    frame = tokens.to_pandas()
    assert frame.index.tolist() == [t.index for t in tokens.tokens]
    assert frame["id"].tolist() == tokens.ids and frame["piece"].tolist() == tokens.pieces
    assert [None if pd.isna(v) else v for v in frame["word"]] == [t.word for t in tokens.tokens]
    near = lens.neighbors("dog", 4)
    table = near.to_pandas()
    assert table.columns.tolist() == ["rank", "id", "token", "cosine"]
    assert table["token"].tolist() == [n.token for n in near.neighbors]
    assert table["cosine"].tolist() == [n.score for n in near.neighbors]
    both = neighbors_many(lens.model, ["dog", "cat"], 2, index=lens.index).to_pandas()
    assert both["query"].tolist() == ["dog", "dog", "cat", "cat"] and both.shape == (4, 5)
    assert both.columns.tolist() == ["query", "rank", "id", "token", "cosine"]
    x = explain(lens.model, "bread", check=False).to_pandas()
    assert x["id"].tolist() == [101, 7852, 102]


def test_to_pandas_says_when_it_cannot(default_model, monkeypatch):
    contexts = compare_contexts(default_model, "bread", ["I like bread", "banana bread"])
    with pytest.raises(InputError, match="different columns"):
        contexts.to_pandas()
    with pytest.raises(InputError, match="no table"):
        render(contexts, "svg").to_pandas()
    monkeypatch.setitem(sys.modules, "pandas", None)  # as if pandas were not installed
    with pytest.raises(InputError, match="pip install pandas"):
        tokenize(default_model, "bread").to_pandas()


def test_as_torch_equals_the_arrays_and_transformers(default_model):
    text = "I like eating bread"
    ids = torch.tensor([tokenize(default_model, text).ids])
    model = default_model.torch_model()
    with torch.no_grad():
        layer0 = model.embeddings(input_ids=ids)[0]
        rows = model.get_input_embeddings()(ids)[0]
    x = explain(default_model, text)
    assert torch.equal(x.as_torch(), layer0)
    assert torch.equal(x.as_torch("word_row"), rows)
    assert torch.equal(token_vector(default_model, "bread").as_torch(), model.get_input_embeddings().weight[7852])
    states = hidden_states(default_model, [text, "bread"])
    tensors = states.as_torch()
    assert [tuple(t.shape) for t in tensors] == [r.states.shape for r in states]
    assert all(torch.equal(t, torch.from_numpy(r.states)) for t, r in zip(tensors, states, strict=True))
    assert torch.equal(tensors[0][0], layer0)
    words = word_vectors(default_model, text)
    assert torch.equal(words.as_torch(), torch.from_numpy(words.vectors))
    sentences = sentence_vectors(default_model, [text, "bread"])
    assert torch.equal(sentences.as_torch(), torch.from_numpy(sentences.vectors))
    tensors[0][0, 0, 0] = 1e6  # a copy: the result keeps its own numbers
    assert states[0].states[0, 0, 0] != 1e6


def test_import_bertlens_needs_neither_torch_nor_pandas():
    code = (
        "import sys, bertlens\n"
        "lens = bertlens.Lens()\n"
        "lens.tokens('I am Sinan')._repr_html_(); lens.neighbors('dog', 3)._repr_html_()\n"
        "lens.explain('bread', check=False)._repr_html_()\n"
        "print(sorted(m for m in ('torch', 'pandas', 'transformers') if m in sys.modules))"
    )
    found = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert found.stdout.strip() == "[]"


def test_cells_are_formatted_as_the_cli_formats_them():
    assert [cell(v) for v in (None, True, False, 0.5, np.float32(1e-5), 3)] == ["-", "yes", "", "0.5", "1.00e-05", "3"]
