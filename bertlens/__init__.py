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
from .info import ModelInfo, info
from .lens import Lens
from .model import Model, load_model
from .static import StaticVector, token_vector, vector, word_vector
from .tokens import Token, Tokenization, tokenize

__all__ = [
    "FAMILIES",
    "BertlensError",
    "CorruptModelError",
    "EmbeddingComparison",
    "EmbeddingLayerExplanation",
    "ExportResult",
    "InputError",
    "InputTooLongError",
    "Lens",
    "MissingTokenizerError",
    "MissingWeightsError",
    "Model",
    "ModelInfo",
    "ModelNotFoundError",
    "StaticVector",
    "Token",
    "TokenEmbedding",
    "Tokenization",
    "UnsupportedArchitectureError",
    "VocabularyMismatchError",
    "compare_inputs",
    "explain",
    "export_matrix",
    "info",
    "load_model",
    "token_vector",
    "tokenize",
    "vector",
    "word_vector",
]
