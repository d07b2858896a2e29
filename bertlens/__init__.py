"""bertlens: see inside the embeddings of BERT-family models.

Start with `Lens()` (the bundled default model) or `load_model(...)` and the functions below.
"""

from .core.errors import (
    BertlensError,
    CorruptModelError,
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
from .embeddings.static import StaticVector, token_vector, vector, word_vector
from .lens import Lens
from .plots.render import PlotOptions, Rendered, render
from .similarity.index import Adjustment, TokenFilter, open_index
from .similarity.nearest import (
    Expression,
    Neighbor,
    Neighbors,
    NeighborsBatch,
    PairSimilarity,
    neighbors,
    neighbors_many,
    similarity,
)
from .views.projection import (
    PositionSimilarity,
    Projection,
    ProjectionSettings,
    Trajectory,
    position_similarity,
    project,
    project_contextual,
    project_tokens,
    trajectory,
)

__all__ = [
    "FAMILIES",
    "Adjustment",
    "BertlensError",
    "CorruptModelError",
    "EmbeddingComparison",
    "EmbeddingLayerExplanation",
    "ExportResult",
    "Expression",
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
    "PairSimilarity",
    "PlotOptions",
    "PositionSimilarity",
    "Projection",
    "ProjectionSettings",
    "Rendered",
    "StaticVector",
    "Token",
    "TokenEmbedding",
    "TokenFilter",
    "Tokenization",
    "Trajectory",
    "UnsupportedArchitectureError",
    "VocabularyMismatchError",
    "compare_inputs",
    "explain",
    "export_matrix",
    "info",
    "load_model",
    "neighbors",
    "neighbors_many",
    "open_index",
    "position_similarity",
    "project",
    "project_contextual",
    "project_tokens",
    "render",
    "similarity",
    "token_vector",
    "tokenize",
    "trajectory",
    "vector",
    "word_vector",
]

# Training (bertlens.training) is imported on first use: `import bertlens` stays as light as it was.
_TRAINING = (
    "PretrainConfig",
    "PretrainResult",
    "TokenizerConfig",
    "TokenizerResult",
    "WatchReport",
    "Word2VecBaseline",
    "pretrain",
    "train_tokenizer",
    "watch_report",
    "word2vec_baseline",
)
__all__ += _TRAINING

# Vocabulary extension (bertlens.extend, bertlens.extend.report), also imported on first use.
_EXTEND = {
    "ExtendOptions": "extend",
    "ExtendResult": "extend",
    "Extension": "extend",
    "extend_vocabulary": "extend",
    "plan_extension": "extend",
    "ExtensionReport": "extend.report",
    "ReportOptions": "extend.report",
    "compare_strategies": "extend.report",
    "report_extensions": "extend.report",
}
__all__ += list(_EXTEND)

# The web explorer (bertlens.web; FastAPI is imported only when an app is created), also on first use.
_WEB = {"ServerLimits": "web", "create_app": "web"}
__all__ += list(_WEB)


def __getattr__(name: str) -> object:
    if name in _TRAINING:
        from . import training

        return getattr(training, name)
    if name in _EXTEND or name in _WEB:
        from importlib import import_module

        return getattr(import_module(f".{_EXTEND.get(name) or _WEB[name]}", __name__), name)
    raise AttributeError(f"module 'bertlens' has no attribute {name!r}")
