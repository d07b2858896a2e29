"""Where a picture goes: the target (a file whose suffix picks the format, or a bare format name) checked before
drawing, and the bytes written atomically (a staged file beside the target, renamed into place).
"""

from __future__ import annotations

import os
from pathlib import Path

from ..core.errors import InputError
from ..core.options import PLOT_FORMATS
from ..core.outputs import atomic_file, check_place, folder_for

SUFFIXES = {".png": "png", ".svg": "svg", ".html": "html", ".htm": "html"}


def check_target(target: str | os.PathLike[str], overwrite: bool) -> tuple[str, Path | None]:
    """The format and file a target means (None for a bare format name); refuses an existing file unless overwrite."""
    if isinstance(target, str) and target.lower().lstrip(".") in PLOT_FORMATS and not os.path.splitext(target)[1]:
        return target.lower().lstrip("."), None
    if not isinstance(target, (str, os.PathLike)) or not str(target).strip():
        raise InputError(f"Expected a file path or a format name, got {target!r}.", "Example: tokens.png")
    path = check_place(Path(target).expanduser(), "picture")
    if path.is_dir():
        raise InputError(f"{path} is a directory.", "Give a file name, e.g. plot.png.")
    fmt = SUFFIXES.get(path.suffix.lower())
    if fmt is None:
        what = f"the suffix {path.suffix!r}" if path.suffix else "no suffix"
        raise InputError(
            f"Cannot draw to {path}: {what} is not a picture format bertlens writes.",
            "End the file name in .png, .svg or .html (interactive, self-contained).",
        )
    if path.exists() and not overwrite:
        raise InputError(
            f"{path} exists; it was left as it is.",
            "Choose another name, or pass {overwrite}.",
            arguments={"overwrite": True},
        )
    return fmt, path


def write(content: bytes, path: Path, overwrite: bool) -> None:
    """Write `content` into a staged file beside `path`, moved in when complete (replacing only if `overwrite`);
    folders made for it are removed again if the write fails."""
    try:
        with folder_for(path.parent):
            try:
                with atomic_file(path, overwrite=overwrite) as out:
                    out.write(content)
            except FileExistsError:
                raise InputError(
                    f"{path} appeared while drawing; it was left as it is.",
                    "Pass {overwrite}.",
                    arguments={"overwrite": True},
                ) from None
    except OSError as exc:
        raise InputError(
            f"Cannot write {path}: {exc.strerror or exc}.", "Choose a folder you can write to, with free space."
        ) from None
