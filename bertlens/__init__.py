"""bertlens: see inside the embeddings of BERT-family models.

Start with `Lens()` (the bundled default model) or `load_model(...)` and the functions below. The package's folders
are its capabilities (docs/architecture.md): `core` (models, tokens, outputs, options), `embeddings`, `similarity`,
`contextual`, `views`, `plots`, `extend`, `training`, and the thin `cli` and `web` over them.
"""

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
from .embeddings.layer import EmbeddingComparison, EmbeddingLayerExplanation, TokenEmbedding, compare_inputs, explain
from .embeddings.positions import PositionSimilarity, position_similarity
from .embeddings.static import StaticVector, StaticVectors, token_vector, vector, vectors, word_vector
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
from .similarity.benchmarks import Benchmarks, list_benchmarks
from .similarity.evaluate import AnalogyEvaluation, PairEvaluation, evaluate_analogies, evaluate_pairs
from .similarity.index import Adjustment, TokenFilter, open_index
from .views.groups import project_word_groups, word_groups
from .views.projection import Projection, ProjectionSettings, project
from .views.tokens import project_contextual, project_tokens
from .views.trajectory import Trajectory, trajectory

# Imported on first use, so that `import bertlens` stays light: name -> module (relative to this package).
_LAZY = {
    # corpus-scale contextual work (bertlens.contextual)
    "Contextuality": "contextual.contextuality",
    "measure_contextuality": "contextual.contextuality",
    "DistilledVectors": "contextual.distill",
    "distill": "contextual.distill",
    "ExtractOptions": "contextual.extract",
    "ExtractResult": "contextual.extract",
    "extract": "contextual.extract",
    # the occurrence index of a corpus (bertlens.occurrences)
    "IndexOptions": "occurrences.build",
    "IndexResult": "occurrences.build",
    "index_corpus": "occurrences.build",
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
    "watch_report",
    "word2vec_baseline",
    "word_groups",
    "word_senses",
    "word_vector",
    "word_vectors",
    "word_vectors_many",
]


def __getattr__(name: str) -> object:
    if name in _LAZY:
        from importlib import import_module

        return getattr(import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module 'bertlens' has no attribute {name!r}")
