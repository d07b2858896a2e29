"""The pre-training objective: the summed masked-LM (and next-sentence) loss of one batch, and its validation score.

`objective_module` wraps the model in the torch module whose forward returns the losses (what DDP wraps). The MLM
head's vocabulary projection runs only on the chosen positions (about 15% of tokens, where
`BertForMaskedLM.forward` projects every token). `choose_precision` decides whether the forward runs under bfloat16
autocast (on a CUDA GPU that has it, or a CPU with AVX512-BF16 or AMX instructions); weights and optimizer state
stay float32 either way.
"""

from __future__ import annotations

import math
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING

from ..core.errors import InputError
from ..core.precision import NATIVE, cpu_isa
from .config import PretrainConfig
from .data import Batch, PackedData

if TYPE_CHECKING:
    import torch

    from .distributed import World
    from .model import Bert

    BatchTensors = tuple[torch.Tensor, torch.Tensor | None, torch.Tensor, torch.Tensor, torch.Tensor | None]


def objective_module(model: Bert, next_sentence: bool) -> torch.nn.Module:
    """The torch module whose forward(input_ids, token_type_ids, positions, labels, nsp) returns the batch's losses.

    It returns the summed MLM loss over the chosen positions and the summed NSP loss (zero without `nsp`).
    """
    import torch

    class MaskedLM(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(
            self,
            input_ids: torch.Tensor,
            token_type_ids: torch.Tensor | None,
            positions: torch.Tensor,
            labels: torch.Tensor,
            nsp: torch.Tensor | None,
        ) -> tuple[torch.Tensor, torch.Tensor]:
            """Summed MLM loss over the chosen positions (n,), and the summed NSP loss (or zero)."""
            import torch.nn.functional as F

            bert = self.model.bert
            out = bert(input_ids=input_ids, token_type_ids=token_type_ids)
            hidden = out.last_hidden_state  # (B, L, H)
            chosen = hidden.reshape(-1, hidden.shape[-1]).index_select(0, positions)  # (n, H)
            logits = self.model.cls.predictions(chosen)  # (n, V): the vocabulary projection, chosen rows only
            mlm = F.cross_entropy(logits.float(), labels, reduction="sum")
            if nsp is None:
                return mlm, mlm.new_zeros(())
            # with nsp the model is BertForPreTraining, whose heads have seq_relationship
            relation = self.model.cls.seq_relationship(out.pooler_output)  # (B, 2)
            return mlm, F.cross_entropy(relation.float(), nsp, reduction="sum")

    return MaskedLM()


def batch_tensors(batch: Batch, device: torch.device) -> BatchTensors:
    """The objective's inputs for `batch`, on `device`."""

    def move(t: torch.Tensor | None) -> torch.Tensor | None:
        return None if t is None else t.to(device, non_blocking=True)

    return (
        batch.input_ids.to(device, non_blocking=True),
        move(batch.token_type_ids),
        batch.positions.to(device, non_blocking=True),
        batch.labels.to(device, non_blocking=True),
        move(batch.next_sentence),
    )


def choose_precision(config: PretrainConfig, device: torch.device) -> str:
    """The precision the forward pass runs in: the config's, or for "auto" bfloat16 where the device has it."""
    import torch

    if config.precision != "auto":
        if config.precision == "bfloat16" and device.type == "cuda" and not torch.cuda.is_bf16_supported():
            raise InputError(
                "This GPU has no bfloat16 support.", "Use {precision}.", arguments={"precision": "float32"}
            )
        return config.precision
    if device.type == "cuda":
        return "bfloat16" if torch.cuda.is_bf16_supported() else "float32"
    return "bfloat16" if cpu_isa().usable >= NATIVE else "float32"  # the CPU's flags, as `--precision auto` reads them


def autocast(device: torch.device, precision: str) -> AbstractContextManager[object]:
    """bfloat16 autocast on `device` when `precision` says so (a no-op context otherwise)."""
    import torch

    return torch.autocast(device.type, dtype=torch.bfloat16, enabled=precision == "bfloat16")


def validation_loss(
    objective: torch.nn.Module, data: PackedData, batch_size: int, device: torch.device, precision: str
) -> float:
    """Mean masked-LM loss (nats per predicted token) over the validation sequences, fixed masks, eval mode."""
    import torch

    was_training = objective.training
    objective.eval()
    total, count = 0.0, 0
    try:
        with torch.no_grad(), autocast(device, precision):
            for first in range(0, data.blocks, batch_size):
                batch = data.batch(first, min(batch_size, data.blocks - first))
                mlm, _ = objective(*batch_tensors(batch, device))
                total += float(mlm)
                count += len(batch.labels)
    finally:
        objective.train(was_training)
    return total / max(count, 1)


def validation_perplexity(
    valid: PackedData | None, objective: torch.nn.Module, config: PretrainConfig, world: World, precision: str
) -> float | None:
    """exp(validation loss), measured by the main process only (None elsewhere, or without validation text)."""
    if valid is None or not world.main:
        return None
    loss = validation_loss(objective, valid, config.batch_size, world.device, precision)
    return math.exp(min(loss, 700.0))
