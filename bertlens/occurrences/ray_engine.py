"""The Ray engine: a corpus read and run through model actors with Ray Data, rows identical to the local engine's."""
