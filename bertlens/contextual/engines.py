"""Where batches of work run: here (the local engine), or on Ray Data model actors (the Ray engine), in order.

The driver (the process that called `index_corpus`, `extract` or `distill`) reads the corpus in batches, exactly as
the local engine does, and hands them to Ray Data in windows: each window is a dataset of batches (one block each)
whose `map_batches` runs over a pool of model actors (`RayOptions.actors`, each with `cpus_per_actor` CPUs and
`gpus_per_actor` GPUs). An actor loads the model once from its source (the same folder, cached hub id or default
model) and checks that it holds the same numbers as the driver's model (`Model.content_hash`); then every batch goes
through the very function the local engine calls, and the results come back in the order given, so the driver writes
them exactly as local ones: resume, manifests and the store are the local engine's.

Connecting: `address=None` starts a local cluster for the run and shuts it down after (a cluster already started in
this process, e.g. by `ray.init()`, is used as it is); `"auto"` joins the cluster this machine belongs to; `host:port`
(or `ray://host:port`) a given head, checked to answer within `CONNECT_SECONDS` before Ray is asked (Ray itself would
wait far longer). Without Ray installed, or with an unreachable address, an `InputError` says what to do.

Order: a run that also writes LanceDB (the occurrence index) connects with `connect_ahead` before it loads LanceDB.
Ray starts a local cluster's processes with fork (its `subprocess` calls pass a `preexec_fn`), and LanceDB, once
loaded, resets its runtime in every forked child and warns that the child may deadlock; started first, no fork follows
LanceDB. The cluster `connect_ahead` connected is the run's: its `ray_map` shuts it down (a run refused in between
leaves it to the next Ray run of the process, or to Ray's own shutdown when the process ends). A process that loaded
LanceDB before a local cluster is started (an index opened, then one built with Ray) still forks after it: call
`ray.init()` before opening the index there.
"""

from __future__ import annotations

import logging
import pickle
import socket
import warnings
from collections.abc import Callable, Generator, Iterable, Iterator
from dataclasses import dataclass, replace
from functools import partial
from itertools import islice
from types import ModuleType
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from ..core.errors import NAME, BertlensError, InputError
from ..core.extras import require
from ..core.model import Model

if TYPE_CHECKING:
    from ray.data import Dataset  # Ray is read as untyped (pyproject.toml): Any to mypy

Engine = Literal["local", "ray"]
ENGINES: tuple[Engine, ...] = ("local", "ray")
CONNECT_SECONDS = 5.0  # how long a head address may take to answer before it is called unreachable
WINDOW_PER_ACTOR = 64  # batches per actor in one Ray Data window (its actors start once per window)
INSTALL = 'pip install "bertlens[ray]"'

Item = TypeVar("Item")
Out = TypeVar("Out")


@dataclass(frozen=True)
class RayOptions:
    """Where and how wide the Ray engine runs."""

    address: str | None = None  # None: a local cluster for this run; "auto": the running one; or "host:port"
    actors: int = 2  # model actors (each loads the model once)
    cpus_per_actor: float = 1.0  # torch in an actor uses this many threads (at least 1)
    gpus_per_actor: float = 0.0  # > 0: actors run on CUDA (RunOptions.device "cpu" becomes "cuda" in them)

    def __post_init__(self) -> None:
        if isinstance(self.actors, bool) or not isinstance(self.actors, int) or self.actors < 1:
            raise InputError(f"The Ray actors must be a whole number of at least 1, got {self.actors!r}.", "E.g. 2.")
        for name in ("cpus_per_actor", "gpus_per_actor"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
                raise InputError(f"{name} must be a number of at least 0, got {value!r}.", "E.g. 1 (or 0.5).")
        if self.cpus_per_actor == 0 and self.gpus_per_actor == 0:
            raise InputError("An actor needs some CPU or GPU (both per-actor amounts are 0).", "E.g. 1 CPU per actor.")
        if self.address is not None and (not isinstance(self.address, str) or not self.address.strip()):
            raise InputError(f"Unusable Ray address {self.address!r}.", "Give host:port, ray://host:port or auto.")


class _Ahead:
    """A cluster `connect_ahead` connected for its run; the run's `ray_map` takes it over (and shuts it down)."""

    connected = False


def check_engine(engine: str) -> Engine:
    """`engine` if it is one bertlens knows."""
    if engine not in ENGINES:
        raise InputError(f"Unknown engine {engine!r}.", "Choose local or ray (ray needs the [ray] extra).")
    return "ray" if engine == "ray" else "local"


def run_batches(
    model: Model,
    batches: Iterable[Item],
    work: Callable[[Model, Item], Out],
    engine: str = "local",
    ray: RayOptions | None = None,
) -> Generator[tuple[Item, Out], None, None]:
    """`(batch, work(model, batch))` for every batch, in order: here (local) or on Ray actors (ray).

    With Ray, the cluster is reached before this returns; close the generator if it is not run to its end.
    """
    if check_engine(engine) == "ray":
        return ray_map(model, batches, work, ray or RayOptions())
    return ((batch, work(model, batch)) for batch in batches)


def ray_map(
    model: Model, batches: Iterable[Item], work: Callable[[Model, Item], Out], ray: RayOptions
) -> Generator[tuple[Item, Out], None, None]:
    """`(batch, work(model, batch))` for every batch, in order, computed by Ray Data over model actors.

    Ray is connected (and the model's source checked) before the first batch is read; the cluster this started is
    shut down however the iteration ends.
    """
    module = ray_module()
    spec = _model_spec(model)
    started = connect(module, ray)
    try:
        _check_resources(module, ray)
    except BaseException:
        if started:
            module.shutdown()
        raise
    windows = _windows(module, model, spec, batches, work, ray, started)
    next(windows)  # runs up to its `try`: from here on, closing it (even unused) shuts a started cluster down
    return windows


def _windows(
    module: ModuleType,
    model: Model,
    spec: str,
    batches: Iterable[Item],
    work: Callable[[Model, Item], Out],
    ray: RayOptions,
    started: bool,
) -> Generator[tuple[Item, Out], None, None]:
    """The batches in windows of `ray.actors * WINDOW_PER_ACTOR`, each a Ray Data dataset (one block per batch)
    mapped over a pool of model actors, its results streamed back in order while the actors work."""
    data = module.data
    with warnings.catch_warnings():  # Ray's own deprecation notices (2.60), nothing a user can act on
        warnings.simplefilter("ignore")
        context = data.DataContext.get_current()
        context.execution_options.preserve_order = True  # results in the order of the batches
        context.enable_progress_bars = False
    logging.getLogger("ray.data").setLevel(logging.ERROR)
    arguments = {
        "spec": spec,
        "identity": model.content_hash,
        "work": work,
        "gpu": ray.gpus_per_actor > 0,
        "threads": threads(ray),
    }
    batches = iter(batches)
    try:
        yield None  # type: ignore[misc]  # the priming step (see ray_map); never seen by a caller
        while window := list(islice(batches, ray.actors * WINDOW_PER_ACTOR)):
            items = [{"i": i, "batch": pickle.dumps(b, protocol=5)} for i, b in enumerate(window)]
            with warnings.catch_warnings():  # Ray calls its own per-actor options "deprecated" (2.60)
                warnings.simplefilter("ignore")
                dataset = _mapped(data, items, arguments, ray)
            for expected, row in enumerate(_rows(dataset)):
                if int(row["i"]) != expected:  # cannot happen with preserve_order; never write out of order
                    raise RuntimeError(f"Ray returned batch {row['i']} where {expected} was due.")
                yield window[expected], pickle.loads(row["out"])
    finally:
        if started:
            module.shutdown()


def _mapped(data: ModuleType, items: list[dict[str, Any]], arguments: dict[str, Any], ray: RayOptions) -> Dataset:
    """A window's dataset: one block per batch, `map_batches` over a pool of model actors."""
    return data.from_items(items, override_num_blocks=len(items)).map_batches(
        _ModelActor,
        fn_constructor_kwargs=arguments,
        batch_size=1,
        batch_format="numpy",
        compute=data.ActorPoolStrategy(size=min(ray.actors, len(items))),
        num_cpus=ray.cpus_per_actor,
        num_gpus=ray.gpus_per_actor,
        max_restarts=0,  # a failed actor fails the run (its batch is not silently redone elsewhere)
    )


def _rows(dataset: Dataset) -> Iterator[dict[str, Any]]:
    """The dataset's rows; a bertlens error raised in an actor comes back as itself (not wrapped by Ray)."""
    try:
        rows = iter(dataset.iter_rows())
        while True:
            with warnings.catch_warnings():  # Ray's own deprecation notices while it runs
                warnings.simplefilter("ignore")
                row = next(rows, None)
            if row is None:
                return
            yield row
    except Exception as exc:
        cause = _bertlens_cause(exc)
        if cause is not None:
            raise cause from None
        raise


def _bertlens_cause(exc: BaseException | None) -> BertlensError | None:
    seen = 0
    while exc is not None and seen < 20:
        if isinstance(exc, BertlensError):
            return exc
        inner = getattr(exc, "cause", None)
        exc = inner if isinstance(inner, BaseException) else (exc.__cause__ or exc.__context__)
        seen += 1
    return None


class _ModelActor:
    """One Ray actor: the model loaded once, then `work(model, batch)` per batch (one pickled batch per call)."""

    def __init__(self, spec: str, identity: str, work: Callable[[Model, Any], Any], gpu: bool, threads: int) -> None:
        import torch

        from ..core.model import load_model

        torch.set_num_threads(threads)  # the actor's CPUs (Ray sets OMP_NUM_THREADS alike; torch may have read it)
        self.model = load_model(spec)
        found = self.model.content_hash
        if found != identity:
            raise InputError(
                f"The model a Ray worker loaded from {spec} is not the driver's (its weights differ).",
                "Put the same model files at the same path on every node (or use a cached hub id).",
            )
        self.work = _on_gpu(work) if gpu else work

    def __call__(self, batch: dict[str, Any]) -> dict[str, Any]:
        import numpy as np

        (index,), (payload,) = batch["i"], batch["batch"]
        out = self.work(self.model, pickle.loads(payload))
        return {"i": np.asarray([index]), "out": np.asarray([pickle.dumps(out, protocol=5)], dtype=object)}


def _on_gpu(work: Callable[[Model, Any], Any]) -> Callable[[Model, Any], Any]:
    """`work` with a CPU `run` option moved to CUDA (a GPU actor's own device)."""
    if isinstance(work, partial) and getattr(work.keywords.get("run"), "device", None) == "cpu":
        return partial(work.func, *work.args, **{**work.keywords, "run": replace(work.keywords["run"], device="cuda")})
    return work


def threads(ray: RayOptions) -> int:
    """Torch threads in an actor: its CPUs, at least 1. The local engine gives the actors' rows bit for bit when it
    runs with as many (a thread count can change how CPU kernels split a sum, hence the last bits)."""
    return max(1, int(ray.cpus_per_actor))


def ray_module() -> ModuleType:
    """The `ray` package with Ray Data, or an error saying how to install it."""
    require("ray", extra="ray")
    try:
        import ray
        import ray.data
    except ImportError as exc:  # Ray without Ray Data's own dependencies
        raise InputError(f"The Ray engine needs Ray Data, which could not be imported ({exc}).", INSTALL) from None
    module: ModuleType = ray  # Ray is read as untyped: the package, to mypy Any
    return module


def _model_spec(model: Model) -> str:
    """What an actor passes to `load_model`: the default model, a cached hub id, or the model's folder."""
    source = model.source
    if source.kind == "default":
        return "default"
    if source.kind == "hf-cache":
        return source.spec
    if source.path is None:
        raise InputError(
            "The Ray engine loads the model in every actor from its files; this model was given as an object.",
            "Save it (save_pretrained) and load it from that folder, or use the local engine.",
        )
    return str(source.path)


def check_ray(ray: RayOptions | None) -> None:
    """Before anything is written: Ray is installed and a given head address answers (errors say what to do)."""
    ray_module()
    if ray is not None and ray.address not in (None, "auto"):
        _reachable(str(ray.address))


def connect_ahead(ray: RayOptions | None) -> None:
    """Connect to the cluster (start a local one) now, for the run about to begin, before that run loads LanceDB (see
    the module's docstring); the run's `ray_map` takes the cluster over and shuts it down after."""
    if connect(ray_module(), ray or RayOptions()):
        _Ahead.connected = True


def connect(module: ModuleType, ray: RayOptions) -> bool:
    """Connect to (or start) the cluster; True when this call did, so the caller shuts it down after."""
    if ray.address not in (None, "auto"):
        _reachable(str(ray.address))
    if module.is_initialized():
        ahead, _Ahead.connected = _Ahead.connected, False
        return ahead  # the cluster `connect_ahead` connected for this run is the run's to shut down
    quiet = {"logging_level": logging.WARNING, "log_to_driver": False}
    noisy = logging.getLogger("ray")
    level, noisy.level = noisy.level, logging.ERROR  # Ray's start-up notices (token authentication, ...)
    try:
        if ray.address is None:
            module.init(include_dashboard=False, **quiet)
        else:
            module.init(address=ray.address, **quiet)
    except (ConnectionError, RuntimeError, ValueError, TimeoutError) as exc:
        where = "the running Ray cluster (auto)" if ray.address == "auto" else f"Ray at {ray.address}"
        raise InputError(
            f"Cannot connect to {where}: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}.",
            "Start one (`ray start --head`) or give its head's address ({address}), or leave address out for a local "
            "cluster.",
            arguments={"address": "host:6379"},
        ) from None
    finally:
        noisy.setLevel(level)
    return True


def _reachable(address: str) -> None:
    """The head at `address` accepts a connection within CONNECT_SECONDS, else an InputError naming it."""
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not host:
        host, port = port, "10001" if address.startswith("ray://") else "6379"
    try:
        number = int(port)
    except ValueError:
        raise InputError(f"Unusable Ray address {address!r}: the port is not a number.", "Give host:port.") from None
    try:
        socket.create_connection((host.strip("[]"), number), timeout=CONNECT_SECONDS).close()
    except OSError as exc:
        raise InputError(
            f"Cannot reach a Ray cluster at {address}: {exc.strerror or exc or 'no answer'} "
            f"(waited up to {CONNECT_SECONDS:g} s).",
            "Check the head's address and port (ray status on the head prints it), and that this machine may "
            "reach it; or leave {address} out for a local cluster.",
            arguments={"address": NAME},
        ) from None


def _check_resources(module: ModuleType, ray: RayOptions) -> None:
    """Refuse a pool the cluster cannot hold: Ray would otherwise wait for it for ever."""
    total = module.cluster_resources()
    for kind, each in (("CPU", ray.cpus_per_actor), ("GPU", ray.gpus_per_actor)):
        need, have = ray.actors * each, float(total.get(kind, 0.0))
        if need > have:
            raise InputError(
                f"{ray.actors} actors with {each:g} {kind} each need {need:g} {kind}s; the cluster has {have:g}.",
                "Ask for fewer {actors} or less per actor, or add nodes to the cluster.",
                arguments={"actors": NAME},
            )
