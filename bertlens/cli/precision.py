"""Commands about how the model runs: precision (what `--precision auto` picks on this machine, and why)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..core.options import DEVICE_OPTION, Device
from .common import Call, command
from .params import option

if TYPE_CHECKING:
    from ..core.precision import PrecisionChoice


@command(
    "precision", "what --precision auto picks here and why: the CPU, its bfloat16 ISA, bfloat16's cosine per layer"
)
@option(DEVICE_OPTION, help="where the model would run")
def precision(call: Call, device: Device) -> PrecisionChoice:
    from ..core.precision import choose_precision

    return choose_precision(call.model(), "auto", device)
