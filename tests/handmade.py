"""A tiny BERT whose input matrix is written by hand, so that analogy answers and cosines can be checked on paper.

Every row is zero in dimensions 0-7 (random elsewhere) except five, so their cosines with each other are exact:
he = e0 + e2, she = e1 + e2, day = e0 + e3, night = e1 + e3 (= she - he + day), dog = e1.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np

E = np.eye(32, dtype=np.float32)
GEOMETRY = {
    "he": E[0] + E[2],
    "she": E[1] + E[2],
    "day": E[0] + E[3],
    "night": E[1] + E[3],
    "dog": E[1],
}


def make_handmade(tiny_bert: Path, target: Path) -> Path:
    """Copy the tiny BERT directory `tiny_bert` to `target` and rewrite its word_embeddings rows as above."""
    from safetensors.numpy import load_file, save_file

    from bertlens import load_model

    shutil.copytree(tiny_bert, target)
    weights = load_file(str(target / "model.safetensors"))
    name = "embeddings.word_embeddings.weight"
    rows = np.random.default_rng(0).standard_normal(weights[name].shape).astype(np.float32)  # (80, 32)
    rows[:, :8] = 0
    vocabulary = load_model(str(target)).vocabulary
    for word, vec in GEOMETRY.items():
        rows[vocabulary.token_to_id(word)] = vec
    weights[name] = rows
    save_file(weights, str(target / "model.safetensors"), metadata={"format": "pt"})
    return target
