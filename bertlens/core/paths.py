"""Paths a user gives, checked before they become a `Path`: a str or path object, not empty or blank (which `Path`
would read as the current folder), no NUL character. Outputs (`outputs.output_path`) and inputs (`corpus.corpus_path`)
share the check and word its errors each their own way (`OUTPUT`, `INPUT`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import InputError


@dataclass(frozen=True)
class PathWording:
    """What the check says for each fault, as (message, hint) templates.

    `{what}` is the path's role ("corpus", "export"), `{value!r}` what was given and `{kind}` its type's name.
    """

    not_a_path: tuple[str, str]
    empty: tuple[str, str]
    nul: tuple[str, str]


OUTPUT = PathWording(
    not_a_path=("The {what} path must be a file or folder name, got {value!r}.", "Example: out/"),
    empty=("The {what} path is empty.", "Give a folder name; '.' means the current folder and must be spelled out."),
    nul=("The {what} path contains a NUL character.", "Give a path without control characters."),
)
INPUT = PathWording(
    not_a_path=("The {what} must be a path, got {kind}.", "Pass a str or pathlib.Path."),
    empty=("No {what} was given (an empty path).", "Give the path of the {what}."),
    nul=("The path of the {what} contains a NUL character.", "Give a real path."),
)


def user_path(value: Any, what: str, wording: PathWording) -> Path:
    """`value` as a Path (`~` expanded), or an InputError worded by `wording`: not a str or path object, empty or
    blank, or holding a NUL character. A path object whose `__fspath__` gives bytes is decoded as the file system
    does."""

    def refuse(fault: tuple[str, str]) -> InputError:
        message, hint = fault
        fields = {"what": what, "value": value, "kind": type(value).__name__}
        return InputError(message.format(**fields), hint.format(**fields))

    if not isinstance(value, (str, os.PathLike)):
        raise refuse(wording.not_a_path)
    text = os.fspath(value)
    if isinstance(text, bytes):
        text = os.fsdecode(text)
    if not text.strip():
        raise refuse(wording.empty)
    if "\0" in text:
        raise refuse(wording.nul)
    return Path(text).expanduser()
