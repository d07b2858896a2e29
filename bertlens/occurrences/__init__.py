"""Word occurrences of a corpus: an index of their contextual vectors (LanceDB), search by example, a word's senses,
and whether two uses share a sense (WiC)."""

from .build import IndexOptions, IndexResult, index_corpus
from .folder import verify_index
from .same_sense import Calibration, SameSenseResult, fit_calibration, same_sense
from .search import SearchOptions, SearchResult, search_occurrences
from .senses import SensesOptions, SensesResult, word_senses
from .wic import WicResult, evaluate_wic, read_wic
from .wic_readout import WicRecipe

__all__ = [
    "Calibration",
    "IndexOptions",
    "IndexResult",
    "SameSenseResult",
    "SearchOptions",
    "SearchResult",
    "SensesOptions",
    "SensesResult",
    "WicRecipe",
    "WicResult",
    "evaluate_wic",
    "fit_calibration",
    "index_corpus",
    "read_wic",
    "same_sense",
    "search_occurrences",
    "verify_index",
    "word_senses",
]
