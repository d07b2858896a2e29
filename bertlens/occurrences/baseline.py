"""What a cosine means in an index: the mean cosine of random occurrences, and of random occurrences of one word."""
