"""The embedding layer laid bare: its computation checked, a token's static row, the matrix exported, model facts."""

from .comparison import compare_inputs
from .export import ExportResult, export_matrix
from .info import ModelInfo, info
from .layer import explain
from .layer_results import EmbeddingComparison, EmbeddingLayerExplanation, TokenEmbedding
from .positions import PositionSimilarity, position_similarity
from .static import StaticVector, StaticVectors, token_vector, vector, vectors, word_vector
from .token_classes import TokenFilter

__all__ = [
    "EmbeddingComparison",
    "EmbeddingLayerExplanation",
    "ExportResult",
    "ModelInfo",
    "PositionSimilarity",
    "StaticVector",
    "StaticVectors",
    "TokenEmbedding",
    "TokenFilter",
    "compare_inputs",
    "explain",
    "export_matrix",
    "info",
    "position_similarity",
    "token_vector",
    "vector",
    "vectors",
    "word_vector",
]
