"""The weights of the new model, copied tensor by tensor (dtype kept), the vocabulary-sized ones grown."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from ..core.errors import CorruptModelError, InputError
from ..core.families import base_prefix
from ..core.model import Model
from .results import Extension

_CHUNK = 1 << 24  # bytes copied at a time between weights files
_NUMPY = {"F32": "<f4", "F16": "<f2", "F64": "<f8"}


def _as_dtype(values: np.ndarray, dtype: str) -> bytes:
    """float32 values as the bytes of a safetensors dtype (bfloat16 rounded to nearest even)."""
    values = np.ascontiguousarray(values, dtype=np.float32)
    if dtype in _NUMPY:
        return values.astype(_NUMPY[dtype]).tobytes()
    if dtype == "BF16":
        bits = values.view(np.uint32).astype(np.uint64)
        return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype("<u2").tobytes()
    raise InputError(
        f"The embedding matrix is stored as {dtype}, which bertlens cannot extend.",
        "Extend a float32, float16 or bfloat16 copy of the model.",
    )


@dataclass
class _Tensor:
    """One tensor of an output safetensors file: its header entry and where its bytes come from."""

    name: str
    dtype: str
    shape: list[int]
    parts: list[bytes | tuple[Path, int, int]]  # literal bytes, or (file, start, end) to copy

    @property
    def nbytes(self) -> int:
        return sum(len(p) if isinstance(p, bytes) else p[2] - p[1] for p in self.parts)


def _read_header(file: Path) -> tuple[dict[str, Any], int]:
    try:
        with file.open("rb") as handle:
            size = int.from_bytes(handle.read(8), "little")
            header = json.loads(handle.read(size))
    except (OSError, ValueError) as exc:
        raise CorruptModelError(f"Cannot read the safetensors header of {file}: {exc}", "Restore the file.") from None
    return header, 8 + size


def _write_file(path: Path, tensors: list[_Tensor], metadata: dict[str, str] | None) -> None:
    header: dict[str, Any] = {"__metadata__": metadata} if metadata else {}
    offset = 0
    for tensor in tensors:
        header[tensor.name] = {
            "dtype": tensor.dtype,
            "shape": tensor.shape,
            "data_offsets": [offset, offset + tensor.nbytes],
        }
        offset += tensor.nbytes
    raw = json.dumps(header, separators=(",", ":")).encode("utf-8")
    raw += b" " * (-len(raw) % 8)  # data starts 8-byte aligned
    with path.open("wb") as out:
        out.write(len(raw).to_bytes(8, "little"))
        out.write(raw)
        for tensor in tensors:
            for part in tensor.parts:
                if isinstance(part, bytes):
                    out.write(part)
                else:
                    _copy_range(part, out)


def _copy_range(part: tuple[Path, int, int], out: BinaryIO) -> None:
    file, start, end = part
    with file.open("rb") as handle:
        handle.seek(start)
        left = end - start
        while left > 0:
            chunk = handle.read(min(_CHUNK, left))
            if not chunk:
                raise CorruptModelError(f"{file} ends early.", "Restore the file from the model's original copy.")
            out.write(chunk)
            left -= len(chunk)


def _new_values(model: Model, extension: Extension) -> dict[str, np.ndarray]:
    """Tensor name -> the new words' values (added, ...) float32, for every tensor that grows."""
    name = base_prefix(model.reader.names(), model.family) + model.family.word_embeddings + ".weight"
    return {name: extension.rows, **extension.head}


def _grown(
    old: tuple[int, ...], dtype: str, parts: list[Any], values: np.ndarray, ids: list[int], new_rows: int
) -> _Tensor:
    """The parts of a vocabulary-sized tensor grown to `new_rows`, new values at `ids` (beyond or inside old)."""
    old_rows = old[0]
    row_bytes = len(_as_dtype(np.zeros(old[1:], dtype=np.float32), dtype))
    inside = [n for n, i in enumerate(ids) if i < old_rows]
    if inside:  # rare: the tokenizer was smaller than the matrix; patch the token-less rows in place
        data = bytearray().join(p if isinstance(p, bytes) else _read_range(p) for p in parts)
        for n in inside:
            data[ids[n] * row_bytes : (ids[n] + 1) * row_bytes] = _as_dtype(values[n], dtype)
        parts = [bytes(data)]
    tail = np.zeros((new_rows - old_rows, *old[1:]), dtype=np.float32)
    for n, i in enumerate(ids):
        if i >= old_rows:
            tail[i - old_rows] = values[n]
    return _Tensor("", dtype, [new_rows, *old[1:]], [*parts, _as_dtype(tail, dtype)])


def _read_range(part: tuple[Path, int, int]) -> bytes:
    file, start, end = part
    with file.open("rb") as handle:
        handle.seek(start)
        return handle.read(end - start)


def write_weights(model: Model, extension: Extension, target: Path) -> list[str]:
    """Write the weights with the grown tensors: safetensors shard by shard, or one file from PyTorch pickles."""
    growing = _new_values(model, extension)
    ids = extension.ids
    if model.source.weights_format != "safetensors":
        return _write_from_pickles(model, extension, target, growing)
    written = []
    sizes: dict[str, int] = {}
    for file in model.source.weights_files:
        header, start = _read_header(file)
        metadata = header.pop("__metadata__", None)
        tensors = []
        for name, entry in sorted(header.items(), key=lambda item: item[1]["data_offsets"][0]):
            begin, end = entry["data_offsets"]
            parts: list[Any] = [(file, start + begin, start + end)]
            if name in growing:
                grown = _grown(tuple(entry["shape"]), entry["dtype"], parts, growing[name], ids, extension.new_rows)
                grown.name = name
                tensors.append(grown)
            else:
                tensors.append(_Tensor(name, entry["dtype"], list(entry["shape"]), parts))
        _write_file(target / file.name, tensors, metadata)
        sizes[file.name] = sum(t.nbytes for t in tensors)
        written.append(file.name)
    assert model.source.path is not None
    index = model.source.path / "model.safetensors.index.json"
    if len(model.source.weights_files) > 1 or index.is_file():
        data = json.loads(index.read_text(encoding="utf-8"))
        data.setdefault("metadata", {})["total_size"] = sum(sizes.values())
        (target / index.name).write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
        written.append(index.name)
    return written


_TORCH_DTYPES = {
    "float32": "F32",
    "float16": "F16",
    "bfloat16": "BF16",
    "float64": "F64",
    "int64": "I64",
    "int32": "I32",
    "int16": "I16",
    "int8": "I8",
    "uint8": "U8",
    "bool": "BOOL",
}


def _write_from_pickles(model: Model, extension: Extension, target: Path, growing: dict[str, np.ndarray]) -> list[str]:
    """PyTorch pickles (read with torch, weights only) become one model.safetensors."""
    import torch

    reader = model.reader
    tensors = []
    for file in model.source.weights_files:
        state = reader.pickled_state(file)  # type: ignore[union-attr]
        for name, value in state.items():
            if not hasattr(value, "shape"):
                continue
            dtype = _TORCH_DTYPES.get(str(value.dtype).replace("torch.", ""))
            if dtype is None:
                raise InputError(
                    f"Tensor {name} has dtype {value.dtype}, which bertlens cannot copy.",
                    "Save the model with safetensors in a common dtype (float32, float16, bfloat16) and extend that.",
                )
            data = value.detach().cpu().contiguous().reshape(-1).view(torch.uint8).numpy().tobytes()
            if name in growing:
                grown = _grown(tuple(value.shape), dtype, [data], growing[name], extension.ids, extension.new_rows)
                grown.name = name
                tensors.append(grown)
            else:
                tensors.append(_Tensor(name, dtype, list(value.shape), [data]))
    _write_file(target / "model.safetensors", tensors, {"format": "pt"})
    return ["model.safetensors"]
