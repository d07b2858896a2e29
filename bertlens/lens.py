"""`Lens`: one model and every question about it, as methods. It only delegates to the module functions."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .core.model import Model, load_model
from .core.tokens import Tokenization, tokenize
from .embeddings.export import ExportFormat, ExportResult, export_matrix
from .embeddings.info import ModelInfo, info
from .embeddings.layer import EmbeddingComparison, EmbeddingLayerExplanation, compare_inputs, explain
from .embeddings.static import Pool, StaticVector, token_vector, vector, word_vector
from .similarity.index import Adjustment, TokenFilter, VectorIndex, open_index
from .similarity.nearest import (
    Metric,
    Neighbors,
    NeighborsBatch,
    PairSimilarity,
    Query,
    neighbors,
    neighbors_many,
    similarity,
)

if TYPE_CHECKING:  # imported on first use, so that opening a Lens stays light
    from .extend import ExtendOptions, ExtendResult
    from .extend.report import ExtensionReport, ReportOptions


class Lens:
    """A model opened for inspection: `Lens()` is the default model, `Lens("path/or/cached-id")` another.

    >>> lens = Lens()
    >>> lens.tokens("hello, world!").ids
    [101, 7592, 1010, 2088, 999, 102]
    """

    def __init__(
        self,
        model: str | os.PathLike[str] | Model | Any | None = None,
        *,
        tokenizer: Any = None,
        cache_dir: str | os.PathLike[str] | None = None,
    ) -> None:
        self.model = model if isinstance(model, Model) else load_model(model, tokenizer=tokenizer)
        self.cache_dir = cache_dir
        self._index: VectorIndex | None = None

    @property
    def index(self) -> VectorIndex:
        """The similarity index (opened on first use, then kept)."""
        if self._index is None:
            self._index = open_index(self.model, self.cache_dir)
        return self._index

    def precompute_neighbors(self) -> None:
        """Build (once, then cached on disk) the neighbour table: token queries become lookups."""
        self.index.precompute()

    def __repr__(self) -> str:
        return f"Lens({self.model!r})"

    def info(self) -> ModelInfo:
        return info(self.model)

    def tokens(self, text: str, pair: str | None = None, *, add_special_tokens: bool = True) -> Tokenization:
        return tokenize(self.model, text, pair, add_special_tokens=add_special_tokens)

    def explain(self, text: str, pair: str | None = None, *, check: bool = True) -> EmbeddingLayerExplanation:
        return explain(self.model, text, pair, check=check)

    def compare(self, text_a: str, text_b: str, *, check: bool = True) -> EmbeddingComparison:
        return compare_inputs(self.model, text_a, text_b, check=check)

    def vector(self, query: str, pool: Pool = "mean") -> StaticVector:
        return vector(self.model, query, pool)

    def token_vector(self, token: str | int) -> StaticVector:
        return token_vector(self.model, token)

    def word_vector(self, word: str, pool: Pool = "mean") -> StaticVector:
        return word_vector(self.model, word, pool)

    def export(
        self, directory: str | os.PathLike[str], fmt: ExportFormat = "word2vec", *, overwrite: bool = False
    ) -> ExportResult:
        return export_matrix(self.model, directory, fmt, overwrite=overwrite)

    def neighbors(
        self,
        query: Query,
        k: int = 10,
        *,
        metric: Metric = "cosine",
        filters: TokenFilter = TokenFilter(),  # noqa: B008 - frozen dataclass
        adjustment: Adjustment = Adjustment(),  # noqa: B008
        pool: Pool = "mean",
    ) -> Neighbors:
        return neighbors(
            self.model, query, k, metric=metric, filters=filters, adjustment=adjustment, pool=pool, index=self.index
        )

    def neighbors_many(
        self,
        queries: list[Query],
        k: int = 10,
        *,
        metric: Metric = "cosine",
        filters: TokenFilter = TokenFilter(),  # noqa: B008
        adjustment: Adjustment = Adjustment(),  # noqa: B008
        pool: Pool = "mean",
    ) -> NeighborsBatch:
        return neighbors_many(
            self.model, queries, k, metric=metric, filters=filters, adjustment=adjustment, pool=pool, index=self.index
        )

    def similarity(
        self,
        a: str | int,
        b: str | int,
        *,
        metric: Metric = "cosine",
        adjustment: Adjustment = Adjustment(),  # noqa: B008
        pool: Pool = "mean",
    ) -> PairSimilarity:
        return similarity(self.model, a, b, metric=metric, adjustment=adjustment, pool=pool, index=self.index)

    def extend(
        self,
        words: Iterable[str],
        out: str | os.PathLike[str],
        options: ExtendOptions | None = None,
        *,
        rows: Mapping[str, Any] | str | os.PathLike[str] | None = None,
    ) -> ExtendResult:
        """Save a copy of the model with `words` added as new tokens into `out` (see `bertlens.extend`)."""
        from .extend import ExtendOptions, extend_vocabulary

        return extend_vocabulary(self.model, words, out, options or ExtendOptions(), rows=rows)

    def extend_report(
        self,
        words: Iterable[str],
        strategies: Sequence[str] = ("random", "mean", "mean-resizing", "pieces", "neighbors"),
        *,
        extend: ExtendOptions | None = None,
        options: ReportOptions | None = None,
        rows: Mapping[str, Any] | str | os.PathLike[str] | None = None,
    ) -> ExtensionReport:
        """What new rows for `words` would do under each strategy, side by side (see `bertlens.extend.report`)."""
        from .extend import ExtendOptions
        from .extend.report import ReportOptions, compare_strategies

        return compare_strategies(
            self.model,
            words,
            strategies,
            extend=extend or ExtendOptions(),
            options=options or ReportOptions(cache_dir=None if self.cache_dir is None else str(self.cache_dir)),
            rows=rows,
        )
