"""Contextual vectors: hidden states of every layer (windows, batching), word and sentence pooling, a word across
contexts, how contextual each layer is, static vectors distilled from contexts, and corpus-scale extraction."""

from .context import ContextComparison, compare_contexts
from .contextuality import Contextuality, measure_contextuality
from .distill import DistilledVectors, distill
from .extract import ExtractOptions, ExtractResult, extract
from .shards import verify_extract
from .states import HiddenStates, RunOptions, TokenStates, hidden_states
from .vectors import SentenceVectors, Word, WordVectors, sentence_vectors, word_vectors, word_vectors_many

__all__ = [
    "ContextComparison",
    "Contextuality",
    "DistilledVectors",
    "ExtractOptions",
    "ExtractResult",
    "HiddenStates",
    "RunOptions",
    "SentenceVectors",
    "TokenStates",
    "Word",
    "WordVectors",
    "compare_contexts",
    "distill",
    "extract",
    "hidden_states",
    "measure_contextuality",
    "sentence_vectors",
    "verify_extract",
    "word_vectors",
    "word_vectors_many",
]
