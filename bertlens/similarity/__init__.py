"""Similar tokens: the neighbour index, nearest neighbours and pair similarity, analogies, word-similarity
benchmarks and their evaluation."""

from .nearest import (
    Expression,
    Neighbor,
    Neighbors,
    NeighborsBatch,
    PairSimilarity,
    neighbors,
    neighbors_many,
    similarity,
)

__all__ = [
    "Expression",
    "Neighbor",
    "Neighbors",
    "NeighborsBatch",
    "PairSimilarity",
    "neighbors",
    "neighbors_many",
    "similarity",
]
