"""The ground every capability stands on: model sources and families, the one model loader, tokens, safe outputs,
result types, errors and the option vocabularies shared by the library, the CLI and the web API."""

import typing

if typing.TYPE_CHECKING:  # for type checkers; at run time each name is imported on first use (`_LAZY`)
    from .errors import (
        BertlensError,
        CorruptModelError,
        DamagedError,
        FetchError,
        InputError,
        InputTooLongError,
        MissingTokenizerError,
        MissingWeightsError,
        ModelNotFoundError,
        UnsupportedArchitectureError,
        VocabularyMismatchError,
    )
    from .families import FAMILIES
    from .integrity import IntegrityReport
    from .model import Model, load_model
    from .precision import PrecisionChoice, choose_precision
    from .tokens import Token, Tokenization, tokenize

# Imported on first use: every module of bertlens imports from `core`, so its package costs nothing until a name here
# is used. Name -> module (relative to this package).
_LAZY = {
    "BertlensError": "errors",
    "CorruptModelError": "errors",
    "DamagedError": "errors",
    "FetchError": "errors",
    "InputError": "errors",
    "InputTooLongError": "errors",
    "MissingTokenizerError": "errors",
    "MissingWeightsError": "errors",
    "ModelNotFoundError": "errors",
    "UnsupportedArchitectureError": "errors",
    "VocabularyMismatchError": "errors",
    "FAMILIES": "families",
    "IntegrityReport": "integrity",
    "Model": "model",
    "load_model": "model",
    "PrecisionChoice": "precision",
    "choose_precision": "precision",
    "Token": "tokens",
    "Tokenization": "tokens",
    "tokenize": "tokens",
}

__all__ = [
    "FAMILIES",
    "BertlensError",
    "CorruptModelError",
    "DamagedError",
    "FetchError",
    "InputError",
    "InputTooLongError",
    "IntegrityReport",
    "MissingTokenizerError",
    "MissingWeightsError",
    "Model",
    "ModelNotFoundError",
    "PrecisionChoice",
    "Token",
    "Tokenization",
    "UnsupportedArchitectureError",
    "VocabularyMismatchError",
    "choose_precision",
    "load_model",
    "tokenize",
]


def __getattr__(name: str) -> object:
    from importlib import import_module

    if name in _LAZY:
        return getattr(import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
