"""Search by example: occurrences of the same word (or of any word) used most like a given one."""
