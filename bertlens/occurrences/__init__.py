"""Word occurrences of a corpus: an index of their contextual vectors (LanceDB), its record and checks, and search
by example. A word's senses (`bertlens.senses`) and whether two uses share one (`bertlens.wic`) read it."""

from .build import IndexOptions, index_corpus
from .build_results import IndexResult
from .folder import verify_index
from .search import SearchOptions, SearchResult, search_occurrences

__all__ = [
    "IndexOptions",
    "IndexResult",
    "SearchOptions",
    "SearchResult",
    "index_corpus",
    "search_occurrences",
    "verify_index",
]
