"""The optimizer and the learning-rate schedule of pre-training.

AdamW with decoupled weight decay on the weight matrices only (not on biases, LayerNorm weights, nor, when only new
rows train, the embedding matrix, whose decay would move the old rows); the learning rate warms up linearly, then
decays linearly to 0 at `max_steps` or stays constant.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .config import PretrainConfig

if TYPE_CHECKING:
    import torch

    from .model import Bert


def build_optimizer(model: Bert, config: PretrainConfig) -> torch.optim.Optimizer:
    """AdamW over the trainable parameters, with weight decay on the weight matrices only."""
    import torch

    decay: list[torch.nn.Parameter] = []
    no_decay: list[torch.nn.Parameter] = []
    for name, param in model.named_parameters():
        if not param.requires_grad:
            continue
        plain = param.ndim < 2 or "LayerNorm" in name
        if config.embeddings == "new-rows" and "word_embeddings" in name:
            plain = True  # decay would move the old rows
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
