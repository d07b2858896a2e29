"""Tiny pre-training runs for the tests: generated sentences, a 2-layer x 32 config, a run's weights."""

from __future__ import annotations

import random
from pathlib import Path
from typing import TYPE_CHECKING

from bertlens.training import PretrainConfig

if TYPE_CHECKING:
    import torch

NOUNS = ["cat", "dog", "king", "queen", "man", "woman", "city", "river", "house", "car", "tree", "bread", "music"]
VERBS = ["sat", "ran", "walked", "saw", "liked", "found", "played", "ate"]
ADJECTIVES = ["big", "small", "red", "blue", "good", "bad", "old", "new"]


# The model shape of the tiny runs as pretrain's flags (hidden 32, 2 heads, feed-forward 64, 64 positions).
TINY_SHAPE = ("--hidden-size", "32", "--heads", "2", "--intermediate-size", "64", "--max-positions", "64")


def sentence(rng: random.Random) -> str:
    return (
        f"The {rng.choice(ADJECTIVES)} {rng.choice(NOUNS)} {rng.choice(VERBS)} "
        f"the {rng.choice(ADJECTIVES)} {rng.choice(NOUNS)} in {rng.randint(1, 99)}."
    )


def tiny(**overrides: object) -> PretrainConfig:
    """The tiny preset made smaller still (a few steps of a 32-wide model on the CPU, one thread), with `overrides`."""
    values: dict[str, object] = dict(
        hidden_size=32,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=64,
        seq_length=32,
        batch_size=4,
        max_steps=8,
        warmup_steps=2,
        checkpoint_every=100,
        precision="float32",
        threads=1,
        progress=False,
        probe_words=("king", "queen", "cat"),
        watch_benchmarks=("rg65",),
        validation_tokens=256,
    )
    values.update(overrides)
    return PretrainConfig.preset_config("tiny", **values)


def weights(folder: Path) -> dict[str, torch.Tensor]:
    """The tensors of a run's (or checkpoint's) model.safetensors."""
    from safetensors.torch import load_file

    return load_file(str(folder / "model.safetensors"))
