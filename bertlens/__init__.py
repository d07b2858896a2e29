"""bertlens: see inside the embeddings of BERT-family models.

Start with `Lens()` (the bundled default model) or `load_model(...)` and the functions below. The package's folders
are its capabilities (docs/architecture.md): `core` (models, tokens, outputs, options), `embeddings`, `similarity`,
`contextual`, `views`, `plots`, `extend`, `training`, and the thin `cli` and `web` over them.
"""

import sys
import types
import typing

if typing.TYPE_CHECKING:  # for type checkers and editors; at run time each name is imported on first use (`_LAZY`)
    from .contextual import (
        HiddenStates,
        RunOptions,
        SentenceVectors,
        TokenStates,
        WordVectors,
        hidden_states,
        sentence_vectors,
        word_vectors,
        word_vectors_many,
    )
    from .contextual.context import ContextComparison, compare_contexts
    from .core.errors import (
        BertlensError,
        CorruptModelError,
        FetchError,
        InputError,
        InputTooLongError,
        MissingTokenizerError,
        MissingWeightsError,
        ModelNotFoundError,
        UnsupportedArchitectureError,
        VocabularyMismatchError,
    )
    from .core.families import FAMILIES
    from .core.model import Model, load_model
    from .core.tokens import Token, Tokenization, tokenize
    from .embeddings.export import ExportResult, export_matrix
    from .embeddings.info import ModelInfo, info
    from .embeddings.layer import (
        EmbeddingComparison,
        EmbeddingLayerExplanation,
        TokenEmbedding,
        compare_inputs,
        explain,
    )
    from .embeddings.positions import PositionSimilarity, position_similarity
    from .embeddings.static import StaticVector, StaticVectors, token_vector, vector, vectors, word_vector
    from .embeddings.token_classes import TokenFilter
    from .lens import Lens
    from .plots.render import PlotOptions, Rendered, render
    from .similarity import (
        Expression,
        Neighbor,
        Neighbors,
        NeighborsBatch,
        PairSimilarity,
        neighbors,
        neighbors_many,
        similarity,
    )
    from .similarity.analogy import AnalogyResult, analogy
    from .similarity.analogy_evaluation import AnalogyEvaluation, evaluate_analogies
    from .similarity.benchmarks import Benchmarks, list_benchmarks
    from .similarity.evaluate import PairEvaluation, evaluate_pairs
    from .similarity.index import Adjustment, open_index
    from .views.groups import project_word_groups, word_groups
    from .views.projection import Projection, ProjectionSettings, project
    from .views.tokens import project_contextual, project_tokens
    from .views.trajectory import Trajectory, trajectory

# Imported on first use, so that `import bertlens` (and every command line, which imports it) stays light: a command
# pays only for the modules it uses. Name -> module (relative to this package).
_LAZY = {
    # models, tokens, the embedding layer, static vectors, similarity, contextual vectors, views, plots
    "HiddenStates": "contextual",
    "RunOptions": "contextual",
    "SentenceVectors": "contextual",
    "TokenStates": "contextual",
    "WordVectors": "contextual",
    "hidden_states": "contextual",
    "sentence_vectors": "contextual",
    "word_vectors": "contextual",
    "word_vectors_many": "contextual",
    "ContextComparison": "contextual.context",
    "compare_contexts": "contextual.context",
    "BertlensError": "core.errors",
    "CorruptModelError": "core.errors",
    "FetchError": "core.errors",
    "InputError": "core.errors",
    "InputTooLongError": "core.errors",
    "MissingTokenizerError": "core.errors",
    "MissingWeightsError": "core.errors",
    "ModelNotFoundError": "core.errors",
    "UnsupportedArchitectureError": "core.errors",
    "VocabularyMismatchError": "core.errors",
    "FAMILIES": "core.families",
    "Model": "core.model",
    "load_model": "core.model",
    "Token": "core.tokens",
    "Tokenization": "core.tokens",
    "tokenize": "core.tokens",
    "ExportResult": "embeddings.export",
    "export_matrix": "embeddings.export",
    "ModelInfo": "embeddings.info",
    "info": "embeddings.info",
    "EmbeddingComparison": "embeddings.layer",
    "EmbeddingLayerExplanation": "embeddings.layer",
    "TokenEmbedding": "embeddings.layer",
    "compare_inputs": "embeddings.layer",
    "explain": "embeddings.layer",
    "PositionSimilarity": "embeddings.positions",
    "position_similarity": "embeddings.positions",
    "StaticVector": "embeddings.static",
    "StaticVectors": "embeddings.static",
    "token_vector": "embeddings.static",
    "vector": "embeddings.static",
    "vectors": "embeddings.static",
    "word_vector": "embeddings.static",
    "Lens": "lens",
    "PlotOptions": "plots.render",
    "Rendered": "plots.render",
    "render": "plots.render",
    "Expression": "similarity",
    "Neighbor": "similarity",
    "Neighbors": "similarity",
    "NeighborsBatch": "similarity",
    "PairSimilarity": "similarity",
    "neighbors": "similarity",
    "neighbors_many": "similarity",
    "similarity": "similarity",
    "AnalogyResult": "similarity.analogy",
    "analogy": "similarity.analogy",
    "Benchmarks": "similarity.benchmarks",
    "list_benchmarks": "similarity.benchmarks",
    "AnalogyEvaluation": "similarity.analogy_evaluation",
    "PairEvaluation": "similarity.evaluate",
    "evaluate_analogies": "similarity.analogy_evaluation",
    "evaluate_pairs": "similarity.evaluate",
    "Adjustment": "similarity.index",
    "TokenFilter": "embeddings.token_classes",
    "open_index": "similarity.index",
    "project_word_groups": "views.groups",
    "word_groups": "views.groups",
    "Projection": "views.projection",
    "ProjectionSettings": "views.projection",
    "project": "views.projection",
    "project_contextual": "views.tokens",
    "project_tokens": "views.tokens",
    "Trajectory": "views.trajectory",
    "trajectory": "views.trajectory",
    # corpus-scale contextual work (bertlens.contextual)
    "Contextuality": "contextual.contextuality",
    "measure_contextuality": "contextual.contextuality",
    "DistilledVectors": "contextual.distill",
    "distill": "contextual.distill",
    "ExtractOptions": "contextual.extract",
    "ExtractResult": "contextual.extract",
    "extract": "contextual.extract",
    "verify_extract": "contextual.shards",
    # the occurrence index of a corpus (bertlens.occurrences)
    "IndexOptions": "occurrences.build",
    "IndexResult": "occurrences.build",
    "index_corpus": "occurrences.build",
    "verify_index": "occurrences.folder",
    "IntegrityReport": "core.integrity",
    # new words (bertlens.extend)
    "ExtendOptions": "extend",
    "ExtendResult": "extend",
    "Extension": "extend",
    "extend_vocabulary": "extend",
    "plan_extension": "extend",
    "ExtensionReport": "extend.report",
    "ReportOptions": "extend.report",
    "compare_strategies": "extend.report",
    "report_extensions": "extend.report",
    # training (bertlens.training)
    "PretrainConfig": "training",
    "PretrainResult": "training",
    "TokenizerConfig": "training",
    "TokenizerResult": "training",
    "WatchReport": "training",
    "Word2VecBaseline": "training",
    "pretrain": "training",
    "train_tokenizer": "training",
    "watch_report": "training",
    "word2vec_baseline": "training",
    # same sense or not, WiC (bertlens.occurrences)
    "Calibration": "occurrences.same_sense",
    "SameSenseResult": "occurrences.same_sense",
    "fit_calibration": "occurrences.same_sense",
    "same_sense": "occurrences.same_sense",
    "WicResult": "occurrences.wic",
    "evaluate_wic": "occurrences.wic",
    "read_wic": "occurrences.wic",
    "WicRecipe": "occurrences.wic_readout",
    # search by example (bertlens.occurrences)
    "SearchOptions": "occurrences.search",
    "SearchResult": "occurrences.search",
    "search_occurrences": "occurrences.search",
    # a word's senses (bertlens.occurrences)
    "SensesOptions": "occurrences.senses",
    "SensesResult": "occurrences.senses",
    "word_senses": "occurrences.senses",
    # the web explorer (bertlens.web; FastAPI is imported only when an app is created)
    "ServerLimits": "web",
    "create_app": "web",
}

__all__ = [  # sorted as ruff sorts it (RUF022); tests/test_architecture.py checks it is the whole public API
    "FAMILIES",
    "Adjustment",
    "AnalogyEvaluation",
    "AnalogyResult",
    "Benchmarks",
    "BertlensError",
    "Calibration",
    "ContextComparison",
    "Contextuality",
    "CorruptModelError",
    "DistilledVectors",
    "EmbeddingComparison",
    "EmbeddingLayerExplanation",
    "ExportResult",
    "Expression",
    "ExtendOptions",
    "ExtendResult",
    "Extension",
    "ExtensionReport",
    "ExtractOptions",
    "ExtractResult",
    "FetchError",
    "HiddenStates",
    "IndexOptions",
    "IndexResult",
    "InputError",
    "InputTooLongError",
    "IntegrityReport",
    "Lens",
    "MissingTokenizerError",
    "MissingWeightsError",
    "Model",
    "ModelInfo",
    "ModelNotFoundError",
    "Neighbor",
    "Neighbors",
    "NeighborsBatch",
    "PairEvaluation",
    "PairSimilarity",
    "PlotOptions",
    "PositionSimilarity",
    "PretrainConfig",
    "PretrainResult",
    "Projection",
    "ProjectionSettings",
    "Rendered",
    "ReportOptions",
    "RunOptions",
    "SameSenseResult",
    "SearchOptions",
    "SearchResult",
    "SensesOptions",
    "SensesResult",
    "SentenceVectors",
    "ServerLimits",
    "StaticVector",
    "StaticVectors",
    "Token",
    "TokenEmbedding",
    "TokenFilter",
    "TokenStates",
    "Tokenization",
    "TokenizerConfig",
    "TokenizerResult",
    "Trajectory",
    "UnsupportedArchitectureError",
    "VocabularyMismatchError",
    "WatchReport",
    "WicRecipe",
    "WicResult",
    "Word2VecBaseline",
    "WordVectors",
    "analogy",
    "compare_contexts",
    "compare_inputs",
    "compare_strategies",
    "create_app",
    "distill",
    "evaluate_analogies",
    "evaluate_pairs",
    "evaluate_wic",
    "explain",
    "export_matrix",
    "extend_vocabulary",
    "extract",
    "fit_calibration",
    "hidden_states",
    "index_corpus",
    "info",
    "list_benchmarks",
    "load_model",
    "measure_contextuality",
    "neighbors",
    "neighbors_many",
    "open_index",
    "plan_extension",
    "position_similarity",
    "pretrain",
    "project",
    "project_contextual",
    "project_tokens",
    "project_word_groups",
    "read_wic",
    "render",
    "report_extensions",
    "same_sense",
    "search_occurrences",
    "sentence_vectors",
    "similarity",
    "token_vector",
    "tokenize",
    "train_tokenizer",
    "trajectory",
    "vector",
    "vectors",
    "verify_extract",
    "verify_index",
    "watch_report",
    "word2vec_baseline",
    "word_groups",
    "word_senses",
    "word_vector",
    "word_vectors",
    "word_vectors_many",
]


_SUBPACKAGES = {"cli", "contextual", "core", "embeddings", "extend", "lens", "occurrences", "plots", "similarity"}
_SUBPACKAGES |= {"training", "views", "web"}


class _Package(types.ModuleType):
    """This package's module type: importing the subpackage `similarity` leaves `bertlens.similarity` the function
    of that name (what `from bertlens import similarity` gives), as it was when every name was imported at once."""

    def __setattr__(self, name: str, value: object) -> None:
        if name == "similarity" and isinstance(value, types.ModuleType):
            return  # the import system binds a loaded subpackage to its parent's attribute: not this one
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package


def __getattr__(name: str) -> object:
    from importlib import import_module

    if name in _LAZY:
        return getattr(import_module(f".{_LAZY[name]}", __name__), name)
    if name in _SUBPACKAGES:  # `bertlens.core` and the like, reachable as attributes as before
        return import_module(f".{name}", __name__)
    raise AttributeError(f"module 'bertlens' has no attribute {name!r}")
