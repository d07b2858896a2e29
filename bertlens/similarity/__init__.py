"""Similar tokens: the neighbour index, nearest neighbours and pair similarity, analogies, word-similarity
benchmarks and their evaluation.

Modules: `space` (raw and anisotropy-adjusted spaces), `index` (the index, its cache and neighbour table), `kernel`
(scan and exact top k), `query` (queries, expressions, their parsing), `nearest` (neighbours, pair similarity, the
table-path decision), `neighbor_results` (their result types), `analogy`, `benchmarks` (catalogue, files, parsers),
`statistics`, `evaluate` (word pairs), `analogy_evaluation` (analogy benchmarks).
"""

from ..embeddings.token_classes import TokenFilter
from .analogy import AnalogyResult, analogy
from .analogy_evaluation import AnalogyEvaluation, evaluate_analogies
from .benchmarks import Benchmarks, list_benchmarks
from .evaluate import PairEvaluation, evaluate_pairs
from .index import VectorIndex, open_index
from .nearest import (
    Expression,
    Neighbor,
    Neighbors,
    NeighborsBatch,
    PairSimilarity,
    answered_from_table,
    neighbors,
    neighbors_many,
    similarity,
)
from .query import parse_queries
from .space import Adjustment

__all__ = [
    "Adjustment",
    "AnalogyEvaluation",
    "AnalogyResult",
    "Benchmarks",
    "Expression",
    "Neighbor",
    "Neighbors",
    "NeighborsBatch",
    "PairEvaluation",
    "PairSimilarity",
    "TokenFilter",
    "VectorIndex",
    "analogy",
    "answered_from_table",
    "evaluate_analogies",
    "evaluate_pairs",
    "list_benchmarks",
    "neighbors",
    "neighbors_many",
    "open_index",
    "parse_queries",
    "similarity",
]
