"""Errors a user can meet. Each says what is wrong and what to do; the CLI prints them without a traceback.

An error speaks to whoever called: raised from Python it names Python arguments, and the command line shows the same
error with its own flags. So where a message or hint names an argument, it marks it in backticks as Python spells it:
`overwrite=True`, `seed`, `shard_texts=1000`. Python shows it without the backticks ("pass overwrite=True");
`BertlensError.spelled` writes it another way (the CLI passes it the running command's flags,
`bertlens.cli.common.flag_spelling`), so that `bertlens export` says `--overwrite` where `export_matrix` says
`overwrite=True`. A whole command a user can run is quoted in backticks as it is typed (`bertlens index CORPUS --out
DIR`): it is the same advice from Python and from the shell, and stays as it is.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TypeVar

# a Python argument named in a message: `name` or `name=value` (the value without backticks)
ARGUMENT = re.compile(r"`([A-Za-z_][A-Za-z0-9_]*)(?:=([^`]+))?`")

Spelling = Callable[[str, "str | None"], "str | None"]  # (name, value or None) -> another spelling, or None: as it is
E = TypeVar("E", bound="BertlensError")


def as_python(text: str) -> str:
    """`text` with each marked argument as Python spells it, unmarked: "`overwrite=True`" -> "overwrite=True"."""
    return ARGUMENT.sub(lambda match: match[0][1:-1], text)


class BertlensError(Exception):
    """Base class: `message` says what is wrong, `hint` what to do about it; `marked` keeps both as written, with the
    arguments they name in backticks (see the module docstring).

    >>> error = InputError("out.png exists.", "Choose another name, or pass `overwrite=True`.")
    >>> error.hint
    'Choose another name, or pass overwrite=True.'
    >>> print(error.spelled(lambda name, value: "--" + name if name == "overwrite" else None))
    out.png exists.
      hint: Choose another name, or pass --overwrite.
    """

    def __init__(self, message: str, hint: str = "") -> None:
        super().__init__(as_python(message))
        self.marked = (message, hint)
        self.message = as_python(message)
        self.hint = as_python(hint)

    def spelled(self: E, spell: Spelling) -> E:
        """The same error (same type, same fields) with each argument its message and hint name written as
        `spell(name, value)` gives it (`value` None for a bare name); where `spell` gives None, as Python spells it."""

        def one(match: re.Match[str]) -> str:
            found = spell(match[1], match[2])
            return match[0][1:-1] if found is None else found

        message, hint = getattr(self, "marked", (self.message, self.hint))
        copied = type(self).__new__(type(self))
        copied.__dict__.update(self.__dict__)
        copied.message, copied.hint = ARGUMENT.sub(one, message), ARGUMENT.sub(one, hint)
        copied.marked = (copied.message, copied.hint)
        copied.args = (copied.message,)
        return copied

    def __str__(self) -> str:
        return f"{self.message}\n  hint: {self.hint}" if self.hint else self.message

    def to_dict(self) -> dict[str, str]:
        return {"error": type(self).__name__, "message": self.message, "hint": self.hint}


class ModelNotFoundError(BertlensError):
    """The model path or id does not exist locally (nor, for a hub id, on the hub).

    >>> try:
    ...     load_model("no/such/folder")
    ... except ModelNotFoundError as error:
    ...     print(error.hint.split(";")[0])
    Check the path
    """


class FetchError(ModelNotFoundError):
    """A hub model could not be fetched: no network, the connection lost, no access, or the disk full.

    >>> try:  # no network, and the model not yet in the Hugging Face cache
    ...     load_model("bert-base-uncased")
    ... except FetchError as error:
    ...     print(error.hint)  # doctest: +SKIP
    """


class MissingWeightsError(BertlensError):
    """The model directory has no weights file.

    >>> try:  # a folder with a config.json but no weights file
    ...     load_model("folder-without-weights/")
    ... except MissingWeightsError as error:
    ...     print(error.hint)  # doctest: +SKIP
    """


class MissingTokenizerError(BertlensError):
    """The model directory has no tokenizer bertlens can read.

    >>> try:  # a folder with config and weights but no tokenizer.json or vocab.txt
    ...     load_model("folder-without-tokenizer/")
    ... except MissingTokenizerError as error:
    ...     print(error.hint)  # doctest: +SKIP
    """


class CorruptModelError(BertlensError):
    """A weights, config or tokenizer file exists but cannot be read.

    >>> try:  # a truncated model.safetensors, say
    ...     load_model("damaged-model/")
    ... except CorruptModelError as error:
    ...     print(error.message)  # doctest: +SKIP
    """


class UnsupportedArchitectureError(BertlensError):
    """The model's family is not one bertlens knows how to decompose.

    >>> try:  # a GPT-2 folder, say: not a BERT-family encoder
    ...     load_model("gpt2-folder/")
    ... except UnsupportedArchitectureError as error:
    ...     print(error.hint)  # names the supported families  # doctest: +SKIP
    """


class VocabularyMismatchError(BertlensError):
    """Tokenizer and embedding matrix disagree in size.

    >>> try:  # a tokenizer with more pieces than the embedding matrix has rows
    ...     load_model("mismatched-model/")
    ... except VocabularyMismatchError as error:
    ...     print(error.message)  # doctest: +SKIP
    """


class InputError(BertlensError):
    """A text, token, id or option given by the user cannot be used.

    >>> try:
    ...     token_vector(load_model(), "qwzxv")
    ... except InputError as error:
    ...     print(error.hint)
    Use word_vector (`bertlens vector --word`) to split it into pieces and pool them.
    """


class InputTooLongError(InputError):
    """The input has more tokens than the model has positions.

    >>> try:
    ...     explain(load_model(), "word " * 600)
    ... except InputTooLongError as error:
    ...     print(type(error).__name__)
    InputTooLongError
    """


class DamagedError(InputError):
    """An output bertlens wrote (an occurrence index, an extract) is damaged: a file missing, cut short or changed.

    >>> try:  # an index with a byte of a data file changed
    ...     search_occurrences(load_model(), "damaged-index", "the river [bank]")
    ... except DamagedError as error:
    ...     print(error.hint)  # doctest: +SKIP
    """
