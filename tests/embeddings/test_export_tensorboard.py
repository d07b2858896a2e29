"""`export --format tensorboard`: a subset (neighbors' filters, --count), no special or [unused] rows
unless asked, and a projector_config.pbtxt that TensorBoard's own projector plugin reads: the folder is read back
through the plugin's HTTP routes (runs, info, tensor, metadata), as `tensorboard --logdir DIR` serves it."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from bertlens import InputError, Lens, TokenFilter, export_matrix, open_index
from bertlens.cli import main


def projector(logdir: Path):
    """GET one route of TensorBoard's projector plugin over `logdir`: (status, body bytes)."""
    from tensorboard.backend.event_processing import data_provider, plugin_event_multiplexer
    from tensorboard.plugins import base_plugin
    from tensorboard.plugins.projector.projector_plugin import ProjectorPlugin
    from werkzeug.test import Client
    from werkzeug.wrappers import Response

    multiplexer = plugin_event_multiplexer.EventMultiplexer()
    provider = data_provider.MultiplexerDataProvider(multiplexer, str(logdir))
    apps = ProjectorPlugin(base_plugin.TBContext(logdir=str(logdir), data_provider=provider)).get_plugin_apps()

    def get(route: str, **query: str) -> tuple[int, bytes]:
        answer = Client(apps[route], Response).get(route, query_string=query)
        return answer.status_code, answer.data

    return get


def read_metadata(folder: Path) -> tuple[list[str], list[list[str]]]:
    lines = (folder / "metadata.tsv").read_text(encoding="utf-8").splitlines()
    return lines[0].split("\t"), [line.split("\t") for line in lines[1:]]


def test_tensorboard_reads_a_subset_back(default_model, tmp_path):
    out = tmp_path / "tb"
    result = export_matrix(default_model, out, "tensorboard", filters=TokenFilter.words_only(), count=300)
    assert result.rows == 300 and result.matrix_rows == default_model.matrix_rows
    assert (out / "projector_config.pbtxt").is_file() and str(out / "projector_config.pbtxt") in result.files
    get = projector(out)
    status, runs = get("/runs")
    assert status == 200 and json.loads(runs) == ["."]  # the folder itself is the run: --logdir DIR opens it
    status, info = get("/info", run=".")
    (embedding,) = json.loads(info)["embeddings"]
    assert embedding["tensorShape"] == [300, 384] and embedding["tensorPath"] == "vectors.tsv"
    name = embedding["tensorName"]
    status, tensor = get("/tensor", run=".", name=name)
    assert status == 200
    status, metadata = get("/metadata", run=".", name=name)
    assert status == 200
    lines = metadata.decode("utf-8").splitlines()
    assert lines[0] == "token\tid\tkind" and len(lines) == 301
    ids = [int(line.split("\t")[1]) for line in lines[1:]]
    matrix = default_model.embedding_weights.word_embeddings
    np.testing.assert_array_equal(np.frombuffer(tensor, dtype=np.float32).reshape(300, 384), matrix[ids])
    vocabulary = default_model.vocabulary
    tokens = [line.split("\t")[0] for line in lines[1:]]
    assert tokens == [vocabulary.id_to_token(i) for i in ids] and ids == sorted(ids)
    assert not any(t.startswith(("##", "[")) for t in tokens)
    allowed = open_index(default_model, tmp_path / "cache").allowed(TokenFilter.words_only())  # neighbors' rows
    assert ids == np.flatnonzero(allowed)[:300].tolist()  # the first 300 that neighbors --words-only allows


def test_no_special_or_unused_rows_unless_asked(default_model, tmp_path):
    export_matrix(default_model, tmp_path / "tb", "tensorboard")
    head, rows = read_metadata(tmp_path / "tb")
    tokens = {row[0] for row in rows}
    assert head == ["token", "id", "kind"]
    assert "[unused0]" not in tokens and "[CLS]" not in tokens and "dog" in tokens and "##ing" in tokens
    kinds = {row[0]: row[2] for row in rows}
    assert (kinds["dog"], kinds["##ing"], kinds["1990"], kinds["!"]) == ("word", "piece", "number", "punctuation")
    unused = sum(1 for t in default_model.vocabulary.tokens_by_id(default_model.matrix_rows) if t.startswith("[unused"))
    assert len(rows) == default_model.matrix_rows - unused - len(default_model.vocabulary.special_ids)
    export_matrix(default_model, tmp_path / "all", "tensorboard", filters=TokenFilter(special=True, unused=True))
    _, rows = read_metadata(tmp_path / "all")
    assert len(rows) == default_model.matrix_rows and rows[1] == ["[unused0]", "1", "unused"]
    assert rows[101] == ["[CLS]", "101", "special"]


def test_word2vec_subset_reads_back_in_gensim(default_model, tmp_path):
    from gensim.models import KeyedVectors

    export_matrix(default_model, tmp_path / "w2v", "word2vec", count=50)
    vectors = KeyedVectors.load_word2vec_format(str(tmp_path / "w2v" / "word_embeddings.w2v.txt"))
    assert len(vectors) == 50 and vectors.index_to_key[0] == "!"  # the first row TokenFilter() keeps
    matrix = default_model.embedding_weights.word_embeddings
    np.testing.assert_array_equal(vectors["!"], matrix[999])


@pytest.mark.parametrize(
    ("fmt", "options", "message"),
    [
        ("npy", {"count": 10}, "npy exports hold the whole matrix"),
        ("safetensors", {"filters": TokenFilter.words_only()}, "safetensors exports hold the whole matrix"),
        ("tensorboard", {"count": 0}, "count must be a positive whole number"),
        ("tensorboard", {"count": True}, "count must be a positive whole number"),
        ("tensorboard", {"filters": "words"}, "filters must be a TokenFilter"),
    ],
)
def test_bad_subsets_are_input_errors(default_model, tmp_path, fmt, options, message):
    with pytest.raises(InputError, match=message):
        export_matrix(default_model, tmp_path / "x", fmt, **options)
    assert not (tmp_path / "x").exists()


def test_cli_export_subset(default_model, capsys, tmp_path):
    argv = ["export", "-f", "tensorboard", "-o", str(tmp_path / "cli"), "--words-only", "--count", "40"]
    assert main([*argv, "--no-progress", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    expected = Lens(default_model).export(tmp_path / "lib", "tensorboard", filters=TokenFilter.words_only(), count=40)
    kept = "whole words (no special tokens, no [unused] rows), the first 40 by id"
    assert data["rows"] == 40 and data["kept"] == expected.kept == kept
    assert (tmp_path / "cli" / "vectors.tsv").read_bytes() == (tmp_path / "lib" / "vectors.tsv").read_bytes()
    assert main(["export", "-f", "npy", "-o", str(tmp_path / "npy"), "--count", "3"]) == 2
    assert "hold the whole matrix" in capsys.readouterr().err
