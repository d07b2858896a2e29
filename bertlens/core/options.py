"""Every option vocabulary shared by the library, the CLI and the web API, declared once.

Each vocabulary is a `Literal` type (for type hints and pydantic) and the tuple of its values (for argparse and for
the library's own checks), so a choice added here reaches every surface. Nothing here imports more than `typing`.
"""

from __future__ import annotations

from typing import Literal, get_args

from .errors import InputError

# Static vectors: how a word's pieces (rows of word_embeddings) pool into one vector.
Pool = Literal["mean", "first", "last", "sum"]
POOLS: tuple[str, ...] = get_args(Pool)

# Contextual vectors: how a word's pieces (hidden states) pool, how layers combine, how a text pools.
WordPool = Literal["mean", "first", "last", "first+last", "max"]
WORD_POOLS: tuple[str, ...] = get_args(WordPool)
Combine = Literal["mean", "sum", "concat"]
COMBINES: tuple[str, ...] = get_args(Combine)
SentencePool = Literal["cls", "mean", "max"]
SENTENCE_POOLS: tuple[str, ...] = get_args(SentencePool)
Device = Literal["cpu", "cuda", "auto"]
DEVICES: tuple[str, ...] = get_args(Device)
ShardFormat = Literal["npy", "parquet"]
SHARD_FORMATS: tuple[str, ...] = get_args(ShardFormat)

# Similarity in the input matrix.
Metric = Literal["cosine", "dot", "euclidean"]
METRICS: tuple[str, ...] = get_args(Metric)
AnalogyMethod = Literal["3cosadd", "3cosmul"]
ANALOGY_METHODS: tuple[str, ...] = get_args(AnalogyMethod)

# Projections (views) and plots.
ProjectionMethod = Literal["pca", "tsne", "umap"]
PROJECTION_METHODS: tuple[str, ...] = get_args(ProjectionMethod)
ProjectionMetric = Literal["cosine", "euclidean"]
PROJECTION_METRICS: tuple[str, ...] = get_args(ProjectionMetric)
Level = Literal["word", "token"]
LEVELS: tuple[str, ...] = get_args(Level)
Dims = Literal[2, 3]
DIMS: tuple[int, ...] = get_args(Dims)
PlotFormat = Literal["png", "svg", "html"]
PLOT_FORMATS: tuple[str, ...] = get_args(PlotFormat)

# Files written from the embedding matrix.
ExportFormat = Literal["npy", "safetensors", "word2vec", "tensorboard"]
EXPORT_FORMATS: tuple[str, ...] = get_args(ExportFormat)

# New words: how their first rows are made.
Strategy = Literal[
    "random", "mean", "mean-resizing", "pieces", "pieces-first", "pieces-last", "pieces-weighted", "neighbors", "rows"
]
STRATEGIES: tuple[str, ...] = get_args(Strategy)

# Training.
Precision = Literal["auto", "float32", "bfloat16"]
PRECISIONS: tuple[str, ...] = get_args(Precision)
EmbeddingMode = Literal["trainable", "frozen", "new-rows"]
EMBEDDING_MODES: tuple[str, ...] = get_args(EmbeddingMode)
Schedule = Literal["linear", "constant"]
SCHEDULES: tuple[str, ...] = get_args(Schedule)


def check_choice(value: object, choices: tuple[object, ...], what: str) -> None:
    """Refuse `value` unless it is one of `choices`, naming them (`what`: e.g. "pooling", "layer combination")."""
    if value not in choices:
        raise InputError(f"Unknown {what} {value!r}.", f"Choose one of: {', '.join(map(str, choices))}.")
