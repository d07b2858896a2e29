"""Which precision runs the model: float32, bfloat16, or "auto" (the fastest that keeps fidelity on this machine).

`choose_precision` resolves a `Precision` for a model and device into a `PrecisionChoice`: the dtype that runs and
why. (Stub: auto is float32 until the ISA rule and the fidelity probe land.)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from .options import PRECISIONS, check_choice
from .results import Result

if TYPE_CHECKING:
    from .model import Model


@dataclass(frozen=True, repr=False)
class PrecisionChoice(Result):
    """The dtype a run uses, the precision that was asked for, and why this one."""

    dtype: Literal["float32", "bfloat16"]
    asked: str
    reason: str

    def to_table(self) -> str:
        return f"precision: {self.dtype} ({self.reason})"


def choose_precision(model: Model | None, asked: str, device: str) -> PrecisionChoice:
    """The dtype for `asked` ("float32", "bfloat16" or "auto") on `device` ("cpu" or "cuda")."""
    check_choice(asked, PRECISIONS, "precision")
    if asked == "bfloat16":
        return PrecisionChoice("bfloat16", asked, "asked for")
    if asked == "float32":
        return PrecisionChoice("float32", asked, "asked for")
    return PrecisionChoice("float32", asked, "auto: float32")
