"""Errors a user can meet. Each says what is wrong and what to do; the CLI prints them without a traceback."""

from __future__ import annotations


class BertlensError(Exception):
    """Base class: `message` says what is wrong, `hint` what to do about it."""

    def __init__(self, message: str, hint: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return f"{self.message}\n  hint: {self.hint}" if self.hint else self.message

    def to_dict(self) -> dict[str, str]:
        return {"error": type(self).__name__, "message": self.message, "hint": self.hint}


class ModelNotFoundError(BertlensError):
    """The model path or id does not exist locally (nor, for a hub id, on the hub)."""


class FetchError(ModelNotFoundError):
    """A hub model could not be fetched: no network, the connection lost, no access, or the disk full."""


class MissingWeightsError(BertlensError):
    """The model directory has no weights file."""


class MissingTokenizerError(BertlensError):
    """The model directory has no tokenizer bertlens can read."""


class CorruptModelError(BertlensError):
    """A weights, config or tokenizer file exists but cannot be read."""


class UnsupportedArchitectureError(BertlensError):
    """The model's family is not one bertlens knows how to decompose."""


class VocabularyMismatchError(BertlensError):
    """Tokenizer and embedding matrix disagree in size."""


class InputError(BertlensError):
    """A text, token, id or option given by the user cannot be used."""


class InputTooLongError(InputError):
    """The input has more tokens than the model has positions."""
