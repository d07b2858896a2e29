"""The strategies: new rows of word_embeddings and of the vocabulary-sized head tensors, from the old ones."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

import numpy as np

from ..core.errors import InputError
from ..core.families import base_prefix
from ..core.model import Model
from .inputs import MIXING, ExtendOptions

MEAN_RESIZING_EPSILON = 1e-9  # transformers' _init_added_embeddings_weights_with_mean scales the covariance by this
_MARKERS = ("##", "Ġ", "▁")  # word-start / continuation markers of WordPiece, byte-level BPE, SentencePiece
Mix = tuple[np.ndarray, np.ndarray]  # (ids (m,) int64, weights (m,) float64 summing to 1)


def _head_tensors(model: Model) -> dict[str, tuple[int, ...]]:
    """Vocabulary-sized tensors outside the base model: MLM decoder weights (V, E) and output biases (V,)."""
    reader = model.reader
    prefix = base_prefix(reader.names(), model.family)
    rows, width = model.matrix_rows, model.config.embedding_size
    found: dict[str, tuple[int, ...]] = {}
    if not prefix:
        return found  # a base model saved alone has no head
    for name in reader.names():
        shape = tuple(reader.shape(name))
        if name.startswith(prefix) or not shape or shape[0] != rows:
            continue
        if len(shape) == 1 or (len(shape) == 2 and shape[1] == width):
            found[name] = shape
    return found


def has_mlm_head(model: Model) -> bool:
    """Whether the checkpoint holds a masked-LM head (a vocabulary-sized output bias or decoder)."""
    return bool(_head_tensors(model))


def _tied(model: Model) -> bool:
    return bool(model.raw_config.get("tie_word_embeddings", True))


def mixes_for(model: Model, matrix: np.ndarray, pieces: list[list[int]], options: ExtendOptions) -> list[Mix] | None:
    """For strategies that mix old rows: each new word's old ids and weights; None for the others."""
    strategy = options.strategy
    if strategy not in MIXING:
        return None
    mixes: list[Mix] = []
    if strategy == "neighbors":
        return _neighbor_mixes(model, matrix, pieces, options)
    for ids in pieces:
        array = np.asarray(ids, dtype=np.int64)
        if strategy == "pieces-first":
            array = array[:1]
        elif strategy == "pieces-last":
            array = array[-1:]
        if strategy == "pieces-weighted":
            lengths = [max(1, len(_bare(model.vocabulary.id_to_token(int(i)) or ""))) for i in array]
            weights = np.asarray(lengths, dtype=np.float64)
        else:
            weights = np.ones(len(array), dtype=np.float64)
        mixes.append((array, weights / weights.sum()))
    return mixes


def _bare(piece: str) -> str:
    for marker in _MARKERS:
        if piece.startswith(marker):
            return piece[len(marker) :]
    return piece


def _neighbor_mixes(model: Model, matrix: np.ndarray, pieces: list[list[int]], options: ExtendOptions) -> list[Mix]:
    """The k allowed old tokens nearest (cosine) to each word's pieces' mean, weighted by softmax(cosine / T)."""
    from ..similarity.index import open_index
    from ..similarity.nearest import neighbors_many

    if not pieces:
        return []
    queries = [_piece_mean(matrix, ids) for ids in pieces]
    index = open_index(model, options.cache_dir)
    found = neighbors_many(model, queries, options.k, filters=options.filters, index=index)
    mixes = []
    for result in found:
        if not result.neighbors:
            raise InputError(
                "No old token is allowed as a neighbour (the filter leaves none).", "Loosen the neighbour filter."
            )
        ids = np.asarray([n.id for n in result.neighbors], dtype=np.int64)
        scores = np.asarray([n.score for n in result.neighbors], dtype=np.float64) / options.temperature
        weights = np.exp(scores - scores.max())
        mixes.append((ids, weights / weights.sum()))
    return mixes


def _piece_mean(matrix: np.ndarray, ids: Sequence[int]) -> np.ndarray:
    mean: np.ndarray = matrix[np.asarray(ids, dtype=np.int64)].mean(axis=0, dtype=np.float64).astype(np.float32)
    return mean


def _mixed(values: np.ndarray, mixes: list[Mix]) -> np.ndarray:
    """Each mix applied to `values` (rows (V, E) or biases (V,)): (n, E) or (n,), float32."""
    out = [np.tensordot(weights, values[ids].astype(np.float64), axes=1) for ids, weights in mixes]
    return np.asarray(out, dtype=np.float32).reshape(len(mixes), *values.shape[1:])


def mean_resizing_rows(old: np.ndarray, count: int, seed: int = 0) -> tuple[np.ndarray, bool]:
    """transformers' `mean_resizing`: `count` draws from N(mean, 1e-9 * covariance) of the old rows (V, E).

    As in transformers, the covariance is centred_rows.T @ centred_rows / V in float32, and the mean alone is used
    when 1e-9 times it is not positive definite (the second value says which happened). The draws come from
    numpy.random.default_rng(seed) (transformers draws from torch's global generator), so the rows match
    transformers' in distribution, not draw for draw.
    """
    rows64 = old.astype(np.float64)
    mean = rows64.mean(axis=0)  # (E,)
    centred = (old.astype(np.float32) - mean.astype(np.float32)).astype(np.float32)  # (V, E)
    covariance = (centred.T @ centred) / np.float32(len(old))  # (E, E) float32, as transformers computes it
    scaled = (MEAN_RESIZING_EPSILON * covariance).astype(np.float32)
    try:
        np.linalg.cholesky(scaled)  # the same positive-definiteness test as torch's constraints.positive_definite
    except np.linalg.LinAlgError:
        return np.repeat(mean.astype(np.float32)[None, :], count, axis=0), False
    factor = np.linalg.cholesky(scaled.astype(np.float64))  # (E, E) lower
    draws = np.random.default_rng(seed).standard_normal((count, old.shape[1]))  # (count, E)
    return (mean[None, :] + draws @ factor.T).astype(np.float32), True


def rows_for(
    matrix: np.ndarray,
    mixes: list[Mix] | None,
    count: int,
    options: ExtendOptions,
    model: Model,
    given: Mapping[str, np.ndarray] | None,
    words: Sequence[str],
) -> tuple[np.ndarray, list[str]]:
    """The new rows of `matrix` (V, E) for `count` words: (count, E) float32, and notes."""
    strategy, width = options.strategy, matrix.shape[1]
    if count == 0:
        return np.zeros((0, width), dtype=np.float32), []
    if mixes is not None:
        return _mixed(matrix, mixes), []
    if strategy == "mean":
        return np.repeat(matrix.mean(axis=0, dtype=np.float64).astype(np.float32)[None, :], count, axis=0), []
    if strategy == "random":
        std = float(model.raw_config.get("initializer_range", 0.02))
        return np.random.default_rng(options.seed).normal(0.0, std, (count, width)).astype(np.float32), []
    if strategy == "mean-resizing":
        rows, drawn = mean_resizing_rows(matrix, count, options.seed)
        note = [] if drawn else ["The old rows' covariance is not positive definite: every new row is the mean."]
        return rows, note
    assert given is not None  # strategy == "rows"
    return np.stack([given[w] for w in words]).astype(np.float32), []


def head_rows(
    model: Model, input_rows: np.ndarray, mixes: list[Mix] | None, count: int, options: ExtendOptions
) -> dict[str, np.ndarray]:
    """New values for each vocabulary-sized head tensor (decoder weight, output bias)."""
    head: dict[str, np.ndarray] = {}
    for name, shape in _head_tensors(model).items():
        old = model.reader.get(name)  # (V,) or (V, E) float32
        if len(shape) == 2:
            if _tied(model):
                head[name] = input_rows.copy()
            elif options.strategy in ("rows",):
                head[name] = np.repeat(old.mean(axis=0, dtype=np.float64).astype(np.float32)[None], count, axis=0)
            else:
                seeded = dataclasses.replace(options, seed=options.seed + 1)  # draws independent of the input rows
                head[name] = rows_for(old, mixes, count, seeded, model, None, [])[0]
            continue
        if mixes is not None:
            head[name] = _mixed(old, mixes)
        elif options.strategy == "random":
            head[name] = np.zeros(count, dtype=np.float32)
        elif options.strategy == "mean-resizing":  # transformers: normal(mean, 1e-9 * std) of the old biases
            rng = np.random.default_rng(options.seed + 2)
            std = float(old.astype(np.float64).std(ddof=1)) if len(old) > 1 else 0.0
            mean = float(old.mean(dtype=np.float64))
            head[name] = rng.normal(mean, MEAN_RESIZING_EPSILON * std, count).astype(np.float32)
        else:  # mean, rows
            head[name] = np.full(count, old.mean(dtype=np.float64), dtype=np.float32)
    return head
