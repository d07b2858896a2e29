"""Exports of the whole input matrix: npy, safetensors, word2vec (gensim as the oracle), TensorBoard TSV."""

from __future__ import annotations

import numpy as np
import pytest

from bertlens import InputError, TokenFilter, export_matrix
from bertlens.core.model import load_model


@pytest.fixture(scope="module")
def matrix(default_model) -> np.ndarray:
    return default_model.embedding_weights.word_embeddings


@pytest.mark.slow  # writes and reads back the whole 30522-row matrix as word2vec text
def test_word2vec_loads_in_gensim_with_rows_equal_to_the_model(default_model, tmp_path):
    from gensim.models import KeyedVectors

    result = export_matrix(default_model, tmp_path / "w2v", "word2vec")
    vectors = KeyedVectors.load_word2vec_format(result.files[0], binary=False)
    oracle = default_model.torch_model().get_input_embeddings().weight.detach().numpy()
    assert len(vectors) == 30522 and vectors.vector_size == 384
    assert vectors.index_to_key[3899] == "dog"
    np.testing.assert_array_equal(vectors.vectors, oracle)
    assert result.renamed == ()


def test_npy_and_vocab(default_model, matrix, tmp_path):
    result = export_matrix(default_model, tmp_path / "npy", "npy")
    np.testing.assert_array_equal(np.load(tmp_path / "npy" / "word_embeddings.npy"), matrix)
    vocab = (tmp_path / "npy" / "vocab.txt").read_text(encoding="utf-8").splitlines()
    assert len(vocab) == 30522 and vocab[101] == "[CLS]" and vocab[3899] == "dog"
    assert result.rows == 30522 and result.dims == 384


def test_safetensors(default_model, matrix, tmp_path):
    from safetensors.numpy import load_file

    export_matrix(default_model, tmp_path / "st", "safetensors")
    loaded = load_file(str(tmp_path / "st" / "word_embeddings.safetensors"))
    np.testing.assert_array_equal(loaded["word_embeddings"], matrix)


def test_tensorboard_projector_pair(default_model, matrix, tmp_path):
    export_matrix(default_model, tmp_path / "tb", "tensorboard", filters=TokenFilter(special=True, unused=True))
    meta = (tmp_path / "tb" / "metadata.tsv").read_text(encoding="utf-8").splitlines()
    assert meta[0] == "token\tid\tkind" and meta[3900] == "dog\t3899\tword" and len(meta) == 30523
    with (tmp_path / "tb" / "vectors.tsv").open(encoding="utf-8") as handle:
        first = next(handle).rstrip("\n").split("\t")
    np.testing.assert_array_equal(np.array(first, dtype=np.float32), matrix[0])


def test_refuses_to_overwrite_and_leaves_files_alone(default_model, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "word_embeddings.w2v.txt").write_text("keep me")
    with pytest.raises(InputError, match="Would overwrite"):
        export_matrix(default_model, out, "word2vec")
    assert (out / "word_embeddings.w2v.txt").read_text() == "keep me"
    export_matrix(default_model, out, "word2vec", overwrite=True)
    assert (out / "word_embeddings.w2v.txt").read_text().startswith("30522 384\n")
    assert [p.name for p in tmp_path.iterdir()] == ["out"]  # no staging folder left behind


def test_bad_destination_and_format(default_model, tmp_path):
    file = tmp_path / "a-file"
    file.write_text("x")
    with pytest.raises(InputError, match="not a directory"):
        export_matrix(default_model, file, "npy")
    with pytest.raises(InputError, match="Unknown export format"):
        export_matrix(default_model, tmp_path / "x", "csv")  # type: ignore[arg-type]
    assert not (tmp_path / "x").exists()


def test_tokens_that_cannot_be_written_as_is_get_listed_stand_ins(tiny_copy, tmp_path):
    from gensim.models import KeyedVectors
    from tiny import BERT_SPECIALS, build_tokenizer

    path = tiny_copy("bert")
    tokenizer, _ = build_tokenizer(BERT_SPECIALS, size=78)
    tokenizer.add_tokens(["new york", "tab\there"])  # ids 78, 79: whitespace inside the token
    tokenizer.save(str(path / "tokenizer.json"))
    model = load_model(str(path))
    result = export_matrix(model, tmp_path / "w2v", "word2vec")
    assert [(r.id, r.token, r.written_as) for r in result.renamed] == [
        (78, "new york", "[row_78]"),
        (79, "tab\there", "[row_79]"),
    ]
    vectors = KeyedVectors.load_word2vec_format(result.files[0])
    assert len(vectors) == 80
    np.testing.assert_array_equal(vectors["[row_79]"], model.embedding_weights.word_embeddings[79])
    assert "stand-in" in result.to_table()
