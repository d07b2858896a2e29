"""Word occurrences of a corpus: an index of their contextual vectors (LanceDB), search by example, a word's senses,
and whether two uses share a sense (WiC)."""
