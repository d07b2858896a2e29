"""Optional capabilities and the packages they need: each is an extra of the bertlens package (pyproject.toml).

The core install (`pip install bertlens`) answers tokens, vectors, explain, neighbours, layers and exports with numpy,
torch, tokenizers, safetensors, transformers and huggingface_hub. The rest comes with an extra, and where a capability
starts, `require` checks that its package is there, so that a missing one is named with the install line that brings
it (`pip install "bertlens[index]"`) before any work is done, never met later as an ImportError.

>>> require("numpy", extra="plots")  # present: nothing happens, nothing is imported
>>> try:
...     require("no_such_package", extra="index", what="The occurrence index")
... except MissingExtraError as error:
...     print(error)
The occurrence index needs no_such_package, which is not installed.
  hint: pip install "bertlens[index]"
"""

from __future__ import annotations

import importlib.util
import sys

from .errors import InputError

# extra -> the capability it brings, as a message names it ("... needs lancedb"). pyproject.toml's
# optional-dependencies hold the same extras (tests/core/test_extras.py checks that each installs what is required
# under it here and at every `require` in bertlens/).
EXTRAS = {
    "web": "The web explorer",  # fastapi, uvicorn; plotly.js for its pictures
    "index": "The occurrence index",  # lancedb, pyarrow; scikit-learn for senses and same-sense calibrations
    "plots": "Drawing a picture",  # matplotlib (PNG, SVG, colours), plotly (HTML); scikit-learn for t-SNE
    "train": "A pre-training run's report",  # matplotlib; gensim for the word2vec baseline
    "parquet": "Parquet output",  # pyarrow
    "ray": "The Ray engine",  # ray[data]
    "umap": "UMAP",  # umap-learn
    "diff": "Comparing two spaces",  # scipy: the orthogonal Procrustes alignment
}

# module -> the distribution that installs it, where the names differ
DISTRIBUTIONS = {"sklearn": "scikit-learn", "umap": "umap-learn", "ray": "ray[data]"}


class MissingExtraError(InputError):
    """A capability's package is not installed: the hint names the extra of bertlens that installs it.

    >>> try:
    ...     render(project_tokens(load_model(), ["king", "queen"]), "png")  # without matplotlib
    ... except MissingExtraError as error:
    ...     print(error.extra, error.hint)  # doctest: +SKIP
    plots pip install "bertlens[plots]"
    """

    def __init__(self, message: str, hint: str = "", *, module: str = "", extra: str = "") -> None:
        super().__init__(message, hint)
        self.module = module  # the module that was looked for: "lancedb", "sklearn"
        self.extra = extra  # the extra that installs it: "index"


def installed(module: str) -> bool:
    """Whether `module` can be imported, found without importing it (a dotted name imports its parents)."""
    parts = module.split(".")
    for prefix in (".".join(parts[: i + 1]) for i in range(len(parts))):
        if prefix in sys.modules and sys.modules[prefix] is None:  # its import was blocked, or failed before
            return False
    if module in sys.modules:
        return True
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a parent package missing, or a module without a spec
        return False


def require(module: str, *, extra: str, what: str = "", otherwise: str = "") -> None:
    """Refuse now, with the install line, unless `module` is installed; `what` names the capability that needs it
    (default: the extra's), `otherwise` a way to do without it ("use format npy"). Nothing is imported: the caller
    imports the module right after, as usual."""
    if extra not in EXTRAS:
        raise ValueError(f"unknown extra {extra!r}: one of {', '.join(EXTRAS)}")
    if installed(module):
        return
    package = DISTRIBUTIONS.get(module.split(".")[0], module.split(".")[0])
    needs = what or EXTRAS[extra]
    raise MissingExtraError(
        f"{needs} needs {package}, which is not installed.",
        f'pip install "bertlens[{extra}]"' + (f", or {otherwise}" if otherwise else ""),
        module=module,
        extra=extra,
    )
