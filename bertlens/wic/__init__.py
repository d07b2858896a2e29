"""Word in context: whether two uses of a word share a sense. WiC pairs read and evaluated, the per-layer read-out,
calibrations fitted on labelled pairs (or shipped for the default model), and `same_sense`'s verdict."""

from .same_sense import Calibration, SameSenseResult, fit_calibration, same_sense
from .wic import WicResult, evaluate_wic, read_wic
from .wic_readout import WicRecipe

__all__ = [
    "Calibration",
    "SameSenseResult",
    "WicRecipe",
    "WicResult",
    "evaluate_wic",
    "fit_calibration",
    "read_wic",
    "same_sense",
]
