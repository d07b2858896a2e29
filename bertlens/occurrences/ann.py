"""The index's search structures: a scalar index on the word, an ANN index per layer with exact re-ranking."""
