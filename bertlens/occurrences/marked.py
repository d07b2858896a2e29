"""An example sentence with its target word: `[marked]` in the text, or named with --word."""
