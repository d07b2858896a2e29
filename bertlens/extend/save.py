"""Saving: the new model directory (layout carried over, tokenizer files, config), staged then moved in."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ..core.errors import BertlensError, InputError
from ..core.model import Model
from ..core.outputs import copy_file, copy_tree, folder_for, output_path, refuse_inside, staging, write_error
from .inputs import ExtendOptions, check_destination
from .plan import added_token, plan_extension
from .results import ExtendResult, Extension
from .safetensors_out import write_weights

_OTHER_WEIGHTS = (".h5", ".msgpack", ".onnx", ".ot", ".ckpt", ".tflite", ".mlmodel", ".gguf")


def extend_vocabulary(
    model: Model,
    words: Iterable[str],
    out: str | os.PathLike[str],
    options: ExtendOptions = ExtendOptions(),  # noqa: B008 - frozen dataclass
    *,
    rows: Mapping[str, Any] | str | os.PathLike[str] | None = None,
) -> ExtendResult:
    """Add `words` to `model`'s vocabulary with rows from `options.strategy` and save the new model into `out`.

    `out` must not exist. It is written completely (a Hugging Face directory that transformers' AutoModel and
    AutoTokenizer, sentence-transformers and bertlens load) or not at all. The source model is only read.

    >>> result = extend_vocabulary(load_model(), ["aspirinex"], "drugs-model/", ExtendOptions(strategy="pieces"))
    >>> result.old_rows, result.new_rows
    (30522, 30523)
    """
    destination = check_destination(output_path(out, "extended model"))
    if model.source.path is None:
        raise InputError(
            "This model was given as a Python object, so there are no files to extend.",
            "Load it from its directory (load_model(PATH)) or save it first with save_pretrained.",
        )
    extension = plan_extension(model, words, options, rows=rows)
    return save_extension(model, extension, destination)


def save_extension(model: Model, extension: Extension, out: str | os.PathLike[str]) -> ExtendResult:
    """Write `extension` of `model` as a new model directory `out` (staged beside it, then moved in).

    The source model's files are only read; `out` may not be the source nor lie inside it.
    """
    destination = check_destination(output_path(out, "extended model"))
    source = model.source
    if source.path is None:
        raise InputError("This model has no files to extend.", "Load it from its directory.")
    root, inner = _layout_root(source.path)
    refuse_inside(destination, root)
    try:
        with folder_for(destination.parent), staging(destination.parent, "extend") as folder:
            built = folder / "model"  # the marker stays behind in `folder` when `built` is moved in
            left_out = _copy_other_files(root, inner, built, {f.name for f in source.weights_files})
            target = built / inner if inner else built
            target.mkdir(mode=0o777, parents=True, exist_ok=True)
            files = write_weights(model, extension, target)
            config = dict(model.raw_config)
            config["vocab_size"] = extension.new_rows
            text = json.dumps(config, indent=2, ensure_ascii=False) + "\n"
            (target / "config.json").write_text(text, encoding="utf-8")
            files += ["config.json", *_write_tokenizer(model, extension, target)]
            _verify(target, extension)
            if destination.exists() or destination.is_symlink():
                raise InputError(f"{destination} appeared while the model was being written.", "Choose a new folder.")
            os.rename(built, destination)
    except OSError as exc:
        raise write_error(destination, exc, "the extended model") from None
    prefix = f"{inner}/" if inner else ""
    return ExtendResult(
        model=model.source.description,
        directory=str(destination),
        strategy=extension.strategy,
        old_rows=extension.old_rows,
        new_rows=extension.new_rows,
        added=extension.added,
        known=extension.known,
        head_tensors=tuple(sorted(extension.head)),
        files=tuple(prefix + f for f in files),
        left_out=tuple(left_out),
        sentence_transformers=(root / "modules.json").is_file(),
        notes=extension.notes,
        warnings=extension.warnings,
    )


def _layout_root(path: Path) -> tuple[Path, str]:
    """The folder to mirror, and the transformer's sub-folder in it ('' when the model sits at the root).

    A sentence-transformers model keeps its transformer at the root (path "") or in a sub-folder named in
    `modules.json`; either way the whole layout (modules.json, 1_Pooling/, …) is carried over.
    """
    parent = path.parent
    modules = parent / "modules.json"
    if not (path / "modules.json").is_file() and modules.is_file():
        try:
            entries = json.loads(modules.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            entries = []
        for entry in entries if isinstance(entries, list) else []:
            transformer = isinstance(entry, dict) and str(entry.get("type", "")).endswith("Transformer")
            if transformer and (parent / str(entry.get("path", ""))).resolve() == path.resolve():
                return parent, path.name
    return path, ""


def _module_folders(root: Path) -> set[str]:
    """Sub-folders that `modules.json` names (sentence-transformers modules such as 1_Pooling)."""
    try:
        entries = json.loads((root / "modules.json").read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return set()
    return (
        {str(e.get("path")) for e in entries if isinstance(e, dict) and e.get("path")}
        if isinstance(entries, list)
        else set()
    )


_REWRITTEN = {"config.json", "tokenizer.json", "tokenizer_config.json", "added_tokens.json"}
_INDEXES = ("model.safetensors.index.json", "pytorch_model.bin.index.json")


def _copy_other_files(root: Path, inner: str, staging: Path, weights: set[str]) -> list[str]:
    """Copy what the new model shares with the old (sentence-transformers modules, tokenizer vocab files, cards).

    Weights (rewritten, or in other frameworks' formats that would no longer match), config.json and the
    tokenizer files that change are not copied; other sub-folders than the sentence-transformers modules neither.
    Returns what was left out, each with the reason.
    """
    modules = _module_folders(root)
    left_out = []

    def copy_folder(folder: Path, into: Path, is_model: bool) -> None:
        into.mkdir(mode=0o777, parents=True, exist_ok=True)
        for item in sorted(folder.iterdir()):
            if item.name.startswith(".") and item.is_dir():
                continue
            relative = item.relative_to(root).as_posix()
            if item.is_dir():
                if folder == root and item.name in modules and item.name != inner:
                    copy_tree(item, into / item.name)
                elif not (folder == root and item.name == inner):
                    left_out.append(f"{relative}/ (not a sentence-transformers module)")
                continue
            if is_model and (item.name in _REWRITTEN or item.name in weights or item.name in _INDEXES):
                continue
            if item.name.endswith(_OTHER_WEIGHTS):
                left_out.append(f"{relative} (weights in another format, which would not match)")
                continue
            copy_file(item, into / item.name)

    copy_folder(root, staging, is_model=not inner)
    if inner:
        copy_folder(root / inner, staging / inner, is_model=True)
    return left_out


def _write_tokenizer(model: Model, extension: Extension, target: Path) -> list[str]:
    """tokenizer.json with the new added tokens (the source's own file when it has one, padding settings kept)."""
    import tokenizers

    first = model.source.tokenizer_files[0]
    writer = (
        tokenizers.Tokenizer.from_file(str(first))
        if first.name == "tokenizer.json"
        else tokenizers.Tokenizer.from_str(model.vocabulary.tokenizer.to_str())
    )
    if extension.added:
        writer.add_tokens([added_token(w.token, extension.token_flags) for w in extension.added])
    wrong = [w.word for w in extension.added if writer.token_to_id(w.token) != w.id]
    if wrong:
        raise BertlensError(f"The tokenizer file gave other ids to {', '.join(wrong[:5])}.", "Please report this.")
    writer.save(str(target / "tokenizer.json"))
    written = ["tokenizer.json"]
    assert model.source.path is not None
    config_file = model.source.path / "tokenizer_config.json"
    if config_file.is_file():
        config = model.source.read_json("tokenizer_config.json") or {}
        decoder = config.get("added_tokens_decoder")
        if isinstance(decoder, dict):  # transformers 4 lists added tokens here too: keep the two in step
            for w in extension.added:
                decoder[str(w.id)] = {
                    "content": w.token,
                    "lstrip": extension.token_flags["lstrip"],
                    "normalized": extension.token_flags["normalized"],
                    "rstrip": False,
                    "single_word": True,
                    "special": False,
                }
        text = json.dumps(config, indent=2, ensure_ascii=False) + "\n"
        (target / "tokenizer_config.json").write_text(text, encoding="utf-8")
        written.append("tokenizer_config.json")
    if (model.source.path / "added_tokens.json").is_file():  # transformers 4's slow tokenizers read this one
        table_ = model.source.read_json("added_tokens.json") or {}
        table_.update({w.token: w.id for w in extension.added})
        text = json.dumps(table_, indent=2, ensure_ascii=False) + "\n"
        (target / "added_tokens.json").write_text(text, encoding="utf-8")
        written.append("added_tokens.json")
    return written


def _verify(target: Path, extension: Extension) -> None:
    """Every new word must come out of the written tokenizer as exactly its one new token."""
    from ..core.vocab import load_vocabulary

    vocabulary = load_vocabulary((target / "tokenizer.json",), None)
    encodings = vocabulary.tokenizer.encode_batch([w.word for w in extension.added], add_special_tokens=False)
    wrong = [w.word for w, e in zip(extension.added, encodings, strict=True) if list(e.ids) != [w.id]]
    if wrong:
        raise InputError(
            f"The tokenizer does not keep {len(wrong)} new word(s) whole: {', '.join(map(repr, wrong[:5]))}.",
            "These words contain characters the tokenizer treats specially; leave them out.",
        )
