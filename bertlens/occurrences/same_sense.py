"""Same sense or not: a word's two uses compared per layer, with a calibrated probability."""
