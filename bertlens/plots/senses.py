"""Drawers: a word's occurrences projected to 2-D, coloured by sense."""
