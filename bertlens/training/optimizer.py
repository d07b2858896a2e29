"""The optimizer and the learning-rate schedule of pre-training.

AdamW with decoupled weight decay on the weight matrices only: not on biases, LayerNorm weights, nor the embedding
tables (word, position and token-type rows), whose decay would move every row, its token in the batch or not; the
learning rate warms up linearly, then decays linearly to 0 at `max_steps` or stays constant.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .config import PretrainConfig

EMBEDDING_TABLES = frozenset({"word_embeddings", "position_embeddings", "token_type_embeddings"})  # never decayed

if TYPE_CHECKING:
    import torch

    from .model import Bert


def build_optimizer(model: Bert, config: PretrainConfig) -> torch.optim.Optimizer:
    """AdamW over the trainable parameters, with weight decay on the weight matrices only.

    Biases and LayerNorm weights are left out, as in BERT. So are the embedding tables (word_embeddings,
    position_embeddings, token_type_embeddings): a table's row gets a gradient only at steps whose batch holds its
    token (or position, or segment), but decoupled decay would shrink every row at every step. Without it, a row whose
    token never occurs in the text (untied decoder, no random replacements) keeps a gradient of exactly zero, Adam's
    moments stay zero, and the row stays as it was, bit for bit; with `embeddings="new-rows"` the old rows likewise.
    """
    import torch

    decay: list[torch.nn.Parameter] = []
    no_decay: list[torch.nn.Parameter] = []
    for name, param in model.named_parameters():
        if not param.requires_grad:
            continue
        plain = param.ndim < 2 or "LayerNorm" in name or not EMBEDDING_TABLES.isdisjoint(name.split("."))
        (no_decay if plain else decay).append(param)
    groups = [
        {"params": decay, "weight_decay": config.weight_decay},
        {"params": no_decay, "weight_decay": 0.0},
    ]
    return torch.optim.AdamW(
        groups,
        lr=config.learning_rate,
        betas=(config.adam_beta1, config.adam_beta2),
        eps=config.adam_epsilon,
    )


def learning_rate(config: PretrainConfig, step: int) -> float:
    """The learning rate of step `step` (0-based): linear warm-up, then linear decay to 0 or constant."""
    if config.warmup_steps and step < config.warmup_steps:
        return config.learning_rate * (step + 1) / config.warmup_steps
    if config.schedule == "constant":
        return config.learning_rate
    remaining = max(config.max_steps - step, 0) / max(config.max_steps - config.warmup_steps, 1)
    return config.learning_rate * remaining


def set_learning_rate(optimizer: torch.optim.Optimizer, config: PretrainConfig, step: int) -> float:
    """Set every parameter group's learning rate to the schedule's value at `step`; that value."""
    lr = learning_rate(config, step)
    for group in optimizer.param_groups:
        group["lr"] = lr
    return lr
