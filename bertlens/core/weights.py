"""Read named tensors from a model's weights files as numpy arrays, without torch for safetensors."""

from __future__ import annotations

from collections.abc import Iterable
from math import prod
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .errors import CorruptModelError
from .sources import check_readable, unreadable

if TYPE_CHECKING:
    from torch import Tensor

_CORRUPT_HINT = "The file is damaged or incomplete: copy it again from the model's original source."


class WeightsReader:
    """Tensor names, shapes and values across all shards of one model (safetensors or PyTorch pickles)."""

    def __init__(self, files: Iterable[Path], fmt: str) -> None:
        self.files = tuple(files)
        self.format = fmt
        self._where: dict[str, Path] = {}
        self._shapes: dict[str, tuple[int, ...]] = {}
        self._pickled: dict[Path, dict[str, Any]] = {}
        for file in self.files:
            for name, shape in self._scan(file):
                self._where[name] = file
                self._shapes[name] = shape

    def _scan(self, file: Path) -> list[tuple[str, tuple[int, ...]]]:
        """Each tensor's name and shape: from the header alone for safetensors."""
        check_readable(file)  # safetensors reports any failure to open as "No such file or directory"
        if self.format == "safetensors":
            from safetensors import safe_open

            try:
                with safe_open(str(file), framework="numpy") as handle:
                    return [(k, tuple(handle.get_slice(k).get_shape())) for k in handle.keys()]  # noqa: SIM118
            except OSError as exc:
                raise unreadable(file, exc) from None
            except Exception as exc:  # safetensors raises its own SafetensorError for a damaged header
                raise CorruptModelError(
                    f"Cannot read the weights file {file}: it is not a complete safetensors file ({exc}).",
                    _CORRUPT_HINT,
                ) from None
        state = self.pickled_state(file)
        return [(k, tuple(v.shape)) for k, v in state.items() if hasattr(v, "shape")]

    def pickled_state(self, file: Path) -> dict[str, Any]:
        """The state dict in the PyTorch pickle `file` (one of `files`), loaded with torch once, weights only."""
        if file not in self._pickled:
            import torch

            try:
                state = torch.load(str(file), map_location="cpu", weights_only=True)
            except OSError as exc:
                raise unreadable(file, exc) from None
            except Exception as exc:  # torch raises many types for a bad pickle
                raise CorruptModelError(f"Cannot read the weights file {file}: {exc}", _CORRUPT_HINT) from None
            if not isinstance(state, dict):
                raise CorruptModelError(f"{file} does not hold a state dict.", _CORRUPT_HINT)
            self._pickled[file] = state
        return self._pickled[file]

    def names(self) -> list[str]:
        return list(self._shapes)

    def shape(self, name: str) -> tuple[int, ...]:
        return self._shapes[name]

    def __contains__(self, name: object) -> bool:
        return name in self._shapes

    def get(self, name: str) -> np.ndarray:
        """The tensor `name` as a float32 numpy array."""
        file = self._where[name]
        if self.format == "safetensors":
            from safetensors import safe_open

            try:
                with safe_open(str(file), framework="numpy") as handle:
                    dtype = handle.get_slice(name).get_dtype()
                    array = _bf16_tensor(file, name) if dtype == "BF16" else handle.get_tensor(name)
            except CorruptModelError:
                raise
            except Exception as exc:
                raise CorruptModelError(f"Cannot read tensor {name} from {file}: {exc}", _CORRUPT_HINT) from None
            return np.ascontiguousarray(array, dtype=np.float32)
        tensor = self.pickled_state(file)[name]
        copied: np.ndarray = tensor.detach().float().numpy().copy()
        return copied


def _bf16_tensor(file: Path, name: str) -> np.ndarray:
    """numpy has no bfloat16: read the tensor through torch, which safetensors can hand back."""
    from safetensors import safe_open

    with safe_open(str(file), framework="pt") as torch_handle:
        array: np.ndarray = torch_handle.get_tensor(name).float().numpy()
        return array


class StateDictReader:
    """The same interface as `WeightsReader` over an in-memory torch state dict (an already-loaded model)."""

    format = "object"

    def __init__(self, state: dict[str, Any]) -> None:
        self._state: dict[str, Tensor] = {k: v for k, v in state.items() if hasattr(v, "shape")}

    def names(self) -> list[str]:
        return list(self._state)

    def shape(self, name: str) -> tuple[int, ...]:
        return tuple(self._state[name].shape)

    def __contains__(self, name: object) -> bool:
        return name in self._state

    def get(self, name: str) -> np.ndarray:
        array: np.ndarray = self._state[name].detach().float().cpu().numpy().copy()
        return array


def parameter_count(reader: WeightsReader | StateDictReader) -> int:
    """Number of stored values, buffers of integer ids (such as `position_ids`) excluded."""
    return sum(prod(reader.shape(n)) for n in reader.names() if not n.endswith(("position_ids", "token_type_ids")))
