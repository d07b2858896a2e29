"""A word's senses in a corpus index: its occurrences clustered (k-means on unit vectors, `views.clusters`), each
sense with typical sentences and the words that co-occur with it."""

from .senses import SensesOptions, SensesResult, word_senses

__all__ = ["SensesOptions", "SensesResult", "word_senses"]
