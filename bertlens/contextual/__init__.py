"""Contextual vectors: hidden states of every layer (windows, batching), word and sentence pooling, a word across
contexts, how contextual each layer is, static vectors distilled from contexts, and corpus-scale extraction."""

from .states import HiddenStates, RunOptions, TokenStates, hidden_states
from .vectors import SentenceVectors, Word, WordVectors, sentence_vectors, word_vectors, word_vectors_many

__all__ = [
    "HiddenStates",
    "RunOptions",
    "SentenceVectors",
    "TokenStates",
    "Word",
    "WordVectors",
    "hidden_states",
    "sentence_vectors",
    "word_vectors",
    "word_vectors_many",
]
