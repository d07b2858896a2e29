"""WiC (word in context): pairs read from its files, per-layer cosines, accuracy with the published protocol."""
