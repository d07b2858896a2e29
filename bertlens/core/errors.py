"""Errors a user can meet. Each says what is wrong and what to do; the CLI prints them without a traceback.

An error speaks to whoever called: raised from Python it names Python arguments, and the command line shows the same
error with its own flags. So an error carries the arguments it names as data: `arguments` maps each name to the value
it speaks of (`NAME` for the bare name), and its message and hint hold a `{name}` placeholder where each is said.
Python fills them as Python spells them (`overwrite=True`, `seed`, `shard_texts=1000`); `BertlensError.spelled` fills
them another way (the CLI gives the running command's flags, `bertlens.cli.common.flag_spelling`), so that `bertlens
export` says `--overwrite` where `export_matrix` says `overwrite=True`. A whole command a user can run is quoted in
backticks as it is typed (`bertlens index CORPUS --out DIR`): it is the same advice from Python and from the shell.
Where one text names an argument with two values, a placeholder holds its value itself: `{max_minutes=None}`, with
`NAME` as its value in `arguments` (the CLI says `--no-time-limit`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TypeVar


class Named:
    """The value of an argument named without one: the error speaks of `seed`, not of `seed=3`."""

    def __repr__(self) -> str:
        return "NAME"


NAME = Named()

Spelling = Callable[[str, object], "str | None"]  # (name, value or NAME) -> another spelling, or None: Python's
E = TypeVar("E", bound="BertlensError")


def python_spelling(name: str, value: object) -> str:
    """An argument as a Python call writes it: `seed`, `overwrite=True`, `precision='float32'`."""
    return name if isinstance(value, Named) else f"{name}={value!r}"


def fill(text: str, arguments: Mapping[str, object], spell: Spelling | None = None) -> str:
    """`text` with each `{name}` of `arguments` spelled by `spell` (where it gives None, or without one: as Python)."""
    for name, value in arguments.items():
        spelled = spell(name, value) if spell is not None else None
        text = text.replace("{" + name + "}", spelled if spelled is not None else python_spelling(name, value))
    return text


class BertlensError(Exception):
    """Base class: `message` says what is wrong, `hint` what to do about it; `arguments` names the Python arguments
    they speak of, each said where its `{name}` placeholder stands (see the module docstring).

    >>> error = InputError("out.png exists.", "Pass {overwrite} to replace it.", arguments={"overwrite": True})
    >>> error.hint
    'Pass overwrite=True to replace it.'
    >>> error.argument
    'overwrite'
    >>> print(error.spelled(lambda name, value: "--" + name if name == "overwrite" else None))
    out.png exists.
      hint: Pass --overwrite to replace it.
    """

    def __init__(self, message: str, hint: str = "", *, arguments: Mapping[str, object] | None = None) -> None:
        self.arguments = dict(arguments or {})
        self.template = (message, hint)
        self.message = fill(message, self.arguments)
        self.hint = fill(hint, self.arguments)
        super().__init__(self.message)

    @property
    def argument(self) -> str | None:
        """The (first) Python argument the error is about, or None."""
        return next(iter(self.arguments), None)

    def spelled(self: E, spell: Spelling) -> E:
        """The same error (same type, same fields) with each argument it names written as `spell(name, value)`
        gives it; where `spell` gives None, as Python spells it."""
        message, hint = getattr(self, "template", (self.message, self.hint))
        arguments = getattr(self, "arguments", {})
        copied = type(self).__new__(type(self))
        copied.__dict__.update(self.__dict__)
        copied.message, copied.hint = fill(message, arguments, spell), fill(hint, arguments, spell)
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
