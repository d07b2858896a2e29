"""A word's senses: its occurrences clustered (k automatic or given), typical sentences, co-occurring words."""
