"""The one place bertlens builds torch models from a model folder: the base model, or the model with its masked-LM
(or pre-training) head, always float32 and checked for NaN/inf; device and dtype copies are made from it, and a
checkpoint's weights are loaded into a model here too.

torch and transformers are imported inside these functions only, so importing this module costs nothing.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Literal, TypeVar

from .errors import CorruptModelError

if TYPE_CHECKING:
    from torch import nn
    from transformers import PreTrainedModel  # transformers is read as untyped (pyproject.toml): Any to mypy

Head = Literal["base", "masked-lm", "pretraining"]
Net = TypeVar("Net", bound="nn.Module")


def load_torch_model(
    path: str | os.PathLike[str], head: Head = "base", *, seed: int | None = None, base_class: str | None = None
) -> PreTrainedModel:
    """The transformers model stored in `path`, float32, in eval mode, with `head`:

    - "base": the encoder alone (`base_class`, e.g. "BertModel", taken from transformers by name where given: it
      imports that model's code alone, where `AutoModel` first reads its whole registry; else `AutoModel`; then its
      `base_model`);
    - "masked-lm": with the masked-LM head (`AutoModelForMaskedLM`);
    - "pretraining": with the masked-LM and next-sentence heads (`AutoModelForPreTraining`).

    A head the checkpoint lacks is initialised by transformers; with `seed` that draw is seeded (inside a forked RNG,
    so the caller's random state is untouched). Files are read locally only. `CorruptModelError` when transformers
    cannot read the folder or any parameter holds NaN or ±inf.
    """
    import torch
    from transformers import AutoModel, AutoModelForMaskedLM, AutoModelForPreTraining

    auto = {"base": AutoModel, "masked-lm": AutoModelForMaskedLM, "pretraining": AutoModelForPreTraining}[head]
    if head == "base" and base_class is not None:
        import transformers

        auto = getattr(transformers, base_class, auto)
    try:
        with torch.random.fork_rng(devices=[]), quiet_transformers():
            if seed is not None:
                torch.manual_seed(seed)
            model = auto.from_pretrained(str(path), local_files_only=True)
    except Exception as exc:  # transformers and safetensors raise many types for a bad checkpoint
        raise CorruptModelError(
            f"transformers could not load the model at {path}: {exc}",
            "Check that the weights file is complete and matches config.json.",
        ) from None
    model = model.to(torch.float32).eval()
    refuse_non_finite(model)
    return getattr(model, "base_model", model) if head == "base" else model


def load_weights_into(model: nn.Module, folder: str | os.PathLike[str]) -> tuple[list[str], list[str]]:
    """Load `folder`'s model.safetensors into the torch `model` in place (non-strict): the (missing, unexpected)
    parameter names, for the caller to judge (a tied decoder, for one, is legitimately missing)."""
    from safetensors.torch import load_file

    state = load_file(str(Path(folder) / "model.safetensors"))
    missing, unexpected = model.load_state_dict(state, strict=False)
    return list(missing), list(unexpected)


def copy_on(model: Net, device: str, dtype: str) -> Net:
    """A copy of the torch `model` on `device` in `dtype` ("float32", "bfloat16" or "float16"); `model` itself is
    untouched."""
    import copy

    import torch

    torch_dtype = {"bfloat16": torch.bfloat16, "float16": torch.float16}.get(dtype, torch.float32)
    return copy.deepcopy(model).to(device=device, dtype=torch_dtype)


def refuse_non_finite(model: nn.Module) -> None:
    """CorruptModelError naming the parameters that hold NaN or ±inf: every layer's outputs would be NaN too."""
    import torch

    damaged = [name for name, tensor in model.named_parameters() if not bool(torch.isfinite(tensor).all())]
    if damaged:
        raise non_finite_error(damaged)


def non_finite_error(damaged: list[str]) -> CorruptModelError:
    """The error for a model whose parameters `damaged` (their names) hold NaN or ±inf."""
    shown = ", ".join(damaged[:5]) + (f" and {len(damaged) - 5} more" if len(damaged) > 5 else "")
    return CorruptModelError(
        f"The weights hold NaN or infinite values in {len(damaged)} tensor{'s' if len(damaged) > 1 else ''} "
        f"({shown}): every layer's vectors from them would be NaN.",
        "The model is broken (a diverged training run, or a damaged file): use an earlier checkpoint or "
        "the model's original copy.",
    )


@contextmanager
def quiet_transformers() -> Iterator[None]:
    """Silence transformers' load report and progress bar for one load or save, then restore what was there."""
    from transformers.utils import logging as hf_logging

    logger = logging.getLogger("transformers")
    level, bars = logger.level, hf_logging.is_progress_bar_enabled()
    logger.setLevel(logging.ERROR)
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        logger.setLevel(level)
        if bars:
            hf_logging.enable_progress_bar()
