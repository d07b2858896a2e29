"""bertlens: see inside the embeddings of BERT-family models.

Start with `Lens()` (the bundled default model) or `load_model(...)` and the functions below: the names most sessions
need. Every other public name is exported by the package of its capability. The package's folders are its
capabilities (docs/architecture.md): `core` (models, tokens, outputs, options), `embeddings`, `similarity`,
`contextual`, `occurrences` (a corpus's index), `senses`, `wic` (same sense or not), `views`, `spaces` (two spaces
side by side), `plots`, `extend`, `training`, and the thin `cli` and `web` over them.
"""

import sys
import types
import typing

if typing.TYPE_CHECKING:  # for type checkers and editors; at run time each name is imported on first use (`_LAZY`)
    from .contextual import RunOptions, compare_contexts, hidden_states, sentence_vectors, word_vectors
    from .core.errors import (
        BertlensError,
        CorruptModelError,
        FetchError,
        InputError,
        InputTooLongError,
        MissingTokenizerError,
        MissingWeightsError,
        ModelNotFoundError,
        UnsupportedArchitectureError,
        VocabularyMismatchError,
    )
    from .core.model import Model, load_model
    from .core.tokens import tokenize
    from .embeddings import explain, export_matrix, info, token_vector, vector, word_vector
    from .extend import ExtendOptions
    from .lens import Lens
    from .occurrences import SearchOptions
    from .plots import PlotOptions, render
    from .similarity import (
        Adjustment,
        Expression,
        TokenFilter,
        analogy,
        evaluate_pairs,
        neighbors,
        open_index,
        similarity,
    )
    from .spaces import diff
    from .views import project_tokens, trajectory

# The names most sessions need, imported on first use, so that `import bertlens` (and every command line, which imports
# it) stays light: a command pays only for the modules it uses. Name -> module (relative to this package). Everything
# else is exported by its package: `bertlens.embeddings`, `bertlens.similarity`, `bertlens.contextual`,
# `bertlens.occurrences`, `bertlens.senses`, `bertlens.wic`, `bertlens.views`, `bertlens.spaces`, `bertlens.plots`,
# `bertlens.extend`, `bertlens.training`, `bertlens.web` and `bertlens.core` (docs/api.md).
_LAZY = {
    "RunOptions": "contextual",
    "compare_contexts": "contextual",
    "hidden_states": "contextual",
    "sentence_vectors": "contextual",
    "word_vectors": "contextual",
    "BertlensError": "core.errors",
    "CorruptModelError": "core.errors",
    "FetchError": "core.errors",
    "InputError": "core.errors",
    "InputTooLongError": "core.errors",
    "MissingTokenizerError": "core.errors",
    "MissingWeightsError": "core.errors",
    "ModelNotFoundError": "core.errors",
    "UnsupportedArchitectureError": "core.errors",
    "VocabularyMismatchError": "core.errors",
    "Model": "core.model",
    "load_model": "core.model",
    "tokenize": "core.tokens",
    "explain": "embeddings",
    "export_matrix": "embeddings",
    "info": "embeddings",
    "token_vector": "embeddings",
    "vector": "embeddings",
    "word_vector": "embeddings",
    "ExtendOptions": "extend",
    "Lens": "lens",
    "SearchOptions": "occurrences",
    "PlotOptions": "plots",
    "render": "plots",
    "Adjustment": "similarity",
    "Expression": "similarity",
    "TokenFilter": "similarity",
    "analogy": "similarity",
    "evaluate_pairs": "similarity",
    "neighbors": "similarity",
    "open_index": "similarity",
    "similarity": "similarity",
    "diff": "spaces",
    "project_tokens": "views",
    "trajectory": "views",
}

__all__ = [  # sorted as ruff sorts it (RUF022); tests/test_architecture.py checks it is the whole public API
    "Adjustment",
    "BertlensError",
    "CorruptModelError",
    "Expression",
    "ExtendOptions",
    "FetchError",
    "InputError",
    "InputTooLongError",
    "Lens",
    "MissingTokenizerError",
    "MissingWeightsError",
    "Model",
    "ModelNotFoundError",
    "PlotOptions",
    "RunOptions",
    "SearchOptions",
    "TokenFilter",
    "UnsupportedArchitectureError",
    "VocabularyMismatchError",
    "analogy",
    "compare_contexts",
    "diff",
    "evaluate_pairs",
    "explain",
    "export_matrix",
    "hidden_states",
    "info",
    "load_model",
    "neighbors",
    "open_index",
    "project_tokens",
    "render",
    "sentence_vectors",
    "similarity",
    "token_vector",
    "tokenize",
    "trajectory",
    "vector",
    "word_vector",
    "word_vectors",
]


_SUBPACKAGES = {"cli", "contextual", "core", "embeddings", "extend", "lens", "occurrences", "plots", "senses"}
_SUBPACKAGES |= {"similarity", "spaces", "training", "views", "web", "wic"}


class _Package(types.ModuleType):
    """This package's module type: importing the subpackage `similarity` leaves `bertlens.similarity` the function
    of that name (what `from bertlens import similarity` gives), as it was when every name was imported at once."""

    def __setattr__(self, name: str, value: object) -> None:
        if name == "similarity" and isinstance(value, types.ModuleType):
            return  # the import system binds a loaded subpackage to its parent's attribute: not this one
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package


def __getattr__(name: str) -> object:
    from importlib import import_module

    if name in _LAZY:
        return getattr(import_module(f".{_LAZY[name]}", __name__), name)
    if name in _SUBPACKAGES:  # `bertlens.core` and the like, reachable as attributes as before
        return import_module(f".{name}", __name__)
    raise AttributeError(f"module 'bertlens' has no attribute {name!r}")
