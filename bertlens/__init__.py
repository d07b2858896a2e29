"""bertlens: see inside the embeddings of BERT-family models.

Start with `Lens()` (the bundled default model) or `load_model(...)` and the functions below.
"""

from .embedding_layer import (
    EmbeddingComparison,
    EmbeddingLayerExplanation,
    TokenEmbedding,
    compare_inputs,
    explain,
)
from .errors import (
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
from .export import ExportResult, export_matrix
from .families import FAMILIES
from .index import Adjustment, TokenFilter, open_index
from .info import ModelInfo, info
from .lens import Lens
from .model import Model, load_model
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
from .static import StaticVector, token_vector, vector, word_vector
from .tokens import Token, Tokenization, tokenize

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
    "StaticVector",
    "Token",
    "TokenEmbedding",
    "TokenFilter",
    "Tokenization",
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
    "similarity",
    "token_vector",
    "tokenize",
    "vector",
    "word_vector",
]
