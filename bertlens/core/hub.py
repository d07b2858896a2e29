"""Models on the Hugging Face Hub: a hub id read, looked up in the standard cache, and fetched into it once.

A hub id is `name` or `owner/name`, optionally with `@revision` (a branch, a tag or a commit). It is looked up in the
local Hugging Face cache first, without a request; only a model that is not there is fetched, once, by the real
`huggingface_hub` client (`snapshot_download`), and only the files bertlens reads: config.json, the tokenizer's files
and the safetensors weights (sharded or not). A PyTorch pickle is never fetched: a model whose only weights are
pickles is refused, with a way out. huggingface_hub writes each file under a temporary name and renames it when it
is complete, so a fetch that fails leaves no partial file under a real name (the files already complete stay, and the
next fetch only adds the rest). huggingface_hub resumes a file whose connection broke, and tries again as long as
each try brings some bytes; a hub that cuts every answer half-way and sends the file from its start on each try would
keep it starting over for ever, so a fetch stops once a file has started over `MAX_RESTARTS` times, and says so.

The environment is the one huggingface_hub and transformers read: HF_HUB_OFFLINE or TRANSFORMERS_OFFLINE (fetch
nothing), HF_HUB_CACHE or HF_HOME (where the cache is), HF_ENDPOINT (which hub) and HF_TOKEN (for private and gated
models). It is read from the mapping given (the process environment by default), never written. huggingface_hub is
imported only when something must be fetched.
"""

from __future__ import annotations

import errno
import fnmatch
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import BertlensError, FetchError, MissingTokenizerError, MissingWeightsError, ModelNotFoundError

DEFAULT_ENDPOINT = "https://huggingface.co"
OFFLINE_VARIABLES = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")

# The files bertlens reads, as `allow_patterns` (fnmatch, matched against the path in the repository).
HUB_FILES: tuple[str, ...] = (
    "config.json",
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "vocab.txt",  # WordPiece without tokenizer.json
    "vocab.json",  # byte-level BPE without tokenizer.json
    "merges.txt",
    "model.safetensors",
    "model.safetensors.index.json",
    "model-[0-9][0-9][0-9][0-9][0-9]-of-[0-9][0-9][0-9][0-9][0-9].safetensors",
)
_PICKLES = re.compile(r"^pytorch_model(-\d{5}-of-\d{5})?\.bin$")
_SENTENCEPIECE = re.compile(r"^[^/]*\.model$")
# `name` or `owner/name` as the hub allows them: word characters, '-', '.', starting and ending with a word character
_REPO_ID = re.compile(r"^(?:\w(?:[\w.-]{0,94}\w)?/)?\w(?:[\w.-]{0,94}\w)?$")
_REVISION = re.compile(r"^[\w.+-]+(?:/[\w.+-]+)*$")  # a branch, a tag (refs/pr/1, v1.0) or a commit
_COMMIT = re.compile(r"^[0-9a-f]{40}$")
MAX_RESTARTS = 3  # times a fetch lets the hub send a file from its start again, after a try cut off mid-file


class StartedOver(Exception):
    """The hub sent a file from its start again more than `MAX_RESTARTS` times (raised inside huggingface_hub's
    download, out of its progress bar, so that its own retries stop)."""


@dataclass(frozen=True)
class HubId:
    """A model on the hub: its repository and, when asked for, a revision (None: the default branch, main)."""

    repo_id: str
    revision: str | None = None

    def __str__(self) -> str:
        return self.repo_id if self.revision is None else f"{self.repo_id}@{self.revision}"


def parse_hub_id(spec: str) -> HubId | None:
    """`spec` as a hub id (`name`, `owner/name`, either with `@revision`), or None when it cannot be one."""
    repo_id, at, revision = spec.partition("@")
    if not _REPO_ID.match(repo_id) or "--" in repo_id or ".." in repo_id:
        return None
    if at and (not _REVISION.match(revision) or ".." in revision or len(revision) > 256):
        return None
    return HubId(repo_id, revision if at else None)


@dataclass(frozen=True)
class HubSettings:
    """Where models come from and go to, as the environment says (read once, passed to huggingface_hub as is)."""

    cache: Path  # HF_HUB_CACHE, else $HF_HOME/hub, else ~/.cache/huggingface/hub
    endpoint: str  # HF_ENDPOINT, else https://huggingface.co
    token: str | None  # HF_TOKEN; None lets huggingface_hub use a token saved by `hf auth login`, if any
    offline_by: str | None  # "HF_HUB_OFFLINE=1" when the environment forbids fetching, else None

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> HubSettings:
        offline = next((f"{name}={env[name]}" for name in OFFLINE_VARIABLES if _is_true(env.get(name))), None)
        endpoint = (env.get("HF_ENDPOINT") or "").strip().rstrip("/") or DEFAULT_ENDPOINT
        return cls(hf_cache_dir(env), endpoint, env.get("HF_TOKEN") or None, offline)


def _is_true(value: str | None) -> bool:
    """As huggingface_hub reads a switch: 1, ON, YES or TRUE in any case."""
    return value is not None and value.strip().upper() in {"1", "ON", "YES", "TRUE"}


def hf_cache_dir(env: Mapping[str, str]) -> Path:
    """The hub cache folder, as huggingface_hub computes it from the environment."""
    if env.get("HF_HUB_CACHE"):
        return Path(env["HF_HUB_CACHE"]).expanduser()
    if env.get("HUGGINGFACE_HUB_CACHE"):
        return Path(env["HUGGINGFACE_HUB_CACHE"]).expanduser()
    home = env.get("HF_HOME") or str(Path(env.get("XDG_CACHE_HOME") or "~/.cache") / "huggingface")
    return Path(home).expanduser() / "hub"


def repo_folder(hub: HubId, cache: Path) -> Path:
    """The model's folder in the cache (`models--owner--name`), whether or not it exists."""
    return cache / ("models--" + hub.repo_id.replace("/", "--"))


def cached_snapshot(hub: HubId, cache: Path) -> Path | None:
    """The cached snapshot folder of `hub`, found without a request: a commit's own folder, or the one its branch or
    tag names in `refs/`; for the default branch with no `refs/main`, the newest snapshot. None when there is none."""
    repo = repo_folder(hub, cache)
    snapshots = repo / "snapshots"
    if not snapshots.is_dir():
        return None
    revision = hub.revision or "main"
    if _COMMIT.match(revision):
        return snapshots / revision if (snapshots / revision).is_dir() else None
    ref = repo / "refs" / revision
    if ref.is_file():
        candidate = snapshots / ref.read_text(encoding="utf-8").strip()
        if candidate.is_dir():
            return candidate
    if hub.revision is not None:
        return None
    folders = sorted((p for p in snapshots.iterdir() if p.is_dir()), key=lambda p: p.stat().st_mtime)
    return folders[-1] if folders else None


def fetch(hub: HubId, settings: HubSettings, *, progress: bool = False) -> Path:
    """Fetch the files bertlens reads of `hub` into the cache (those already there are kept) and return the snapshot
    folder. Progress on standard error (huggingface_hub's own bars) when `progress` is true. Every failure is a
    bertlens error that names the model and what to do: not found, no access, revision missing, no network, the
    connection lost, the disk full."""
    from importlib.metadata import PackageNotFoundError, version

    from huggingface_hub import snapshot_download

    try:
        bertlens_version = version("bertlens")
    except PackageNotFoundError:
        bertlens_version = "unknown"
    bars: list[Any] = []
    try:
        folder = snapshot_download(  # its tries of each file bounded by `MAX_RESTARTS` (`_bars`)
            hub.repo_id,
            revision=hub.revision,
            cache_dir=settings.cache,
            endpoint=settings.endpoint,
            token=settings.token,
            allow_patterns=list(HUB_FILES),
            library_name="bertlens",
            library_version=bertlens_version,
            tqdm_class=_bars(bars, show=progress),
        )
    except Exception as exc:  # huggingface_hub, its HTTP client and the file system raise many types
        raise fetch_error(exc, hub, settings) from None
    finally:
        for bar in bars:  # huggingface_hub leaves some open: closed now, not over the command's output at exit
            bar.close()
    return Path(folder)


def _bars(made: list[Any], *, show: bool) -> Any:
    """huggingface_hub's own tqdm class (its HF_HUB_DISABLE_PROGRESS_BARS and terminal checks kept), or one that shows
    nothing when `show` is false; each bar made is added to `made`, to be closed when the fetch ends.

    huggingface_hub moves its bar back by the bytes it throws away when a file starts over (the hub sent it from its
    start again after a try was cut off): past `MAX_RESTARTS` of those, the bar raises `StartedOver`."""
    from huggingface_hub.utils import tqdm

    class Bar(tqdm):
        restarts = 0  # this bar's moves back (huggingface_hub moves its byte bars back together)

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            if not show:
                kwargs["disable"] = True
            super().__init__(*args, **kwargs)
            made.append(self)

        def update(self, n: float | None = 1) -> bool | None:
            if n is not None and n < 0:
                self.restarts += 1
                if self.restarts > MAX_RESTARTS:
                    raise StartedOver(self.restarts)
            return super().update(n)  # type: ignore[no-any-return]

    return Bar


def _chain(exc: BaseException) -> list[BaseException]:
    """`exc` and the exceptions it was raised from, outermost first."""
    found: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in found and len(found) < 20:
        found.append(current)
        current = current.__cause__ or current.__context__
    return found


def fetch_error(exc: BaseException, hub: HubId, settings: HubSettings) -> BertlensError:
    """The bertlens error for a failed fetch of `hub`, from what huggingface_hub (or the system) raised."""
    from huggingface_hub.utils import (
        GatedRepoError,
        HfHubHTTPError,
        HFValidationError,
        OfflineModeIsEnabled,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    chain = _chain(exc)
    where = f"the Hugging Face Hub ({settings.endpoint})"
    if any(isinstance(error, StartedOver) for error in chain):
        return started_over(hub, settings)
    token_hint = (
        "set HF_TOKEN to a token of an account that may read it (or log in once with `hf auth login`), after "
        "accepting the model's conditions on its page if it is gated."
    )
    for error in chain:
        if isinstance(error, OSError) and error.errno in (errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)):
            return FetchError(
                f"The disk is full: {hub} could not be written into the Hugging Face cache ({settings.cache}). "
                "Nothing incomplete was kept under a file's real name.",
                "Free some space there, or point HF_HUB_CACHE (or HF_HOME) at a disk with room, then run again: "
                "the files already fetched are kept.",
            )
        if isinstance(error, OSError) and error.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
            return FetchError(
                f"{hub} cannot be written into the Hugging Face cache ({settings.cache}): "
                f"{error.strerror or error} ({getattr(error, 'filename', None) or settings.cache}).",
                "Point HF_HUB_CACHE (or HF_HOME) at a folder this user may write, or make the cache writable.",
            )
        if isinstance(error, GatedRepoError):
            return FetchError(
                f"{hub} is a gated model on {where}: it needs an account that was granted access.",
                token_hint[0].upper() + token_hint[1:],
            )
        if isinstance(error, RevisionNotFoundError):
            return ModelNotFoundError(
                f"{hub.repo_id} has no revision {hub.revision or 'main'!r} on {where}.",
                "Check the branch, tag or commit after '@' (the model page's 'Files and versions' lists them), or "
                f"leave it out for the default branch: {hub.repo_id}.",
            )
        if isinstance(error, RepositoryNotFoundError):
            with_token = settings.token is not None
            return ModelNotFoundError(
                f"No model {hub.repo_id!r} on {where}"
                + (" that this token may read." if with_token else ", or it is private and needs a token."),
                "Check the spelling (the hub's ids look like bert-base-uncased or google-bert/bert-base-uncased). "
                + ("" if with_token else "For a private model: " + token_hint),
            )
        if isinstance(error, HfHubHTTPError) and _status(error) in (401, 403):
            return FetchError(
                f"{where} refused to give {hub} (HTTP {_status(error)}).", token_hint[0].upper() + token_hint[1:]
            )
        if isinstance(error, OfflineModeIsEnabled):
            return offline_error(hub, settings, "HF_HUB_OFFLINE=1 (read when huggingface_hub was imported)")
        if isinstance(error, HFValidationError):
            return ModelNotFoundError(f"{hub} is not a valid hub id: {error}", "Check the model name.")
    if any(_network(error) for error in chain):
        reason = next((f"{type(e).__name__}: {e}" for e in chain if _network(e)), "")
        broke = any(_broken(error) for error in chain)
        return FetchError(
            (
                f"The connection to {where} broke while fetching {hub}"
                if broke
                else f"Cannot reach {where} to fetch {hub}"
            )
            + f" ({_short(reason)})."
            + (f" Nothing incomplete was kept under a file's real name in {settings.cache}." if broke else ""),
            "Check the network connection (and HF_ENDPOINT or a proxy, if set), then run again: the files already "
            "fetched are kept. Without a network, use a model already in the cache with HF_HUB_OFFLINE=1 (or "
            "{offline}), or a local model folder.",
            arguments={"offline": True},
        )
    return FetchError(
        f"Fetching {hub} from {where} failed: {_short(f'{type(exc).__name__}: {exc}')}",
        "Run again; if it keeps failing, fetch it with `hf download "
        f"{hub.repo_id}` and check what that says, or pass a local model folder.",
    )


def started_over(hub: HubId, settings: HubSettings) -> FetchError:
    """The error of a fetch stopped after `MAX_RESTARTS` starts over: the files of `hub` it had not completed."""
    snapshot = cached_snapshot(hub, settings.cache)
    have = {p.name for p in snapshot.iterdir()} if snapshot is not None else set()
    names = files_in(hub, settings, snapshot.name) if snapshot is not None else []
    wanted = [n for n in names if n not in have and any(fnmatch.fnmatch(n, pattern) for pattern in HUB_FILES)]
    what = ", ".join(wanted[:3]) if wanted else "a file"
    return FetchError(
        f"The Hugging Face Hub ({settings.endpoint}) cut off {what} of {hub} mid-file {MAX_RESTARTS + 1} times, "
        f"sending it from its start on each try: bertlens stopped fetching. Nothing incomplete was kept under a "
        f"file's real name in {settings.cache}.",
        "Check the network connection (and HF_ENDPOINT, a proxy or a firewall that cuts long downloads), then run "
        "again later: the files already fetched are kept. Or use a copy already in the cache with HF_HUB_OFFLINE=1 "
        "({offline}), or a local model folder.",
        arguments={"offline": True},
    )


def _status(error: BaseException) -> int | None:
    response = getattr(error, "response", None)
    status = getattr(response, "status_code", None)
    return status if isinstance(status, int) else None


def _network(error: BaseException) -> bool:
    """A failure of the connection itself (refused, reset, timed out, closed early), whichever HTTP client raised it."""
    name = type(error).__name__
    if isinstance(error, (ConnectionError, TimeoutError)) or "Consistency check failed" in str(error):
        return True  # the last: huggingface_hub's word for a file that arrived shorter than announced
    words = ("Connect", "Timeout", "Protocol", "ReadError", "NetworkError", "ChunkedEncoding", "IncompleteRead")
    return any(word in name for word in words)


def _broken(error: BaseException) -> bool:
    """The connection was open and closed before a file was complete."""
    text = f"{type(error).__name__} {error}"
    words = ("Protocol", "ReadError", "ChunkedEncoding", "IncompleteRead", "incomplete", "Consistency check", "reset")
    return any(word in text for word in words)


def _short(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit] + "…"


def offline_error(
    hub: HubId,
    settings: HubSettings,
    why: str,
    incomplete: Path | None = None,
    arguments: Mapping[str, object] | None = None,
) -> ModelNotFoundError:
    """The error for a model that must come from the cache (`why`: what forbids fetching, with the `arguments` it
    names) and is not there whole."""
    there = (
        f"Its cached copy at {incomplete} is incomplete (an earlier fetch was interrupted)"
        if incomplete is not None
        else f"It is not in the local Hugging Face cache ({settings.cache})"
    )
    return ModelNotFoundError(
        f"{hub} must come from the cache, since fetching is off ({why}). {there}.",
        f"Fetch it once with a network (run without {why.split(' ')[0]}, or `hf download {hub.repo_id}`), point "
        "HF_HUB_CACHE or HF_HOME at a cache that holds it, or pass a local model folder.",
        arguments=arguments,
    )


def files_in(hub: HubId, settings: HubSettings, commit: str) -> list[str]:
    """The repository's file names at `commit` (one request), for saying why a fetched model cannot be used; [] when
    they cannot be listed."""
    from huggingface_hub import HfApi

    try:
        return list(
            HfApi(endpoint=settings.endpoint, token=settings.token).list_repo_files(hub.repo_id, revision=commit)
        )
    except Exception:  # the listing only improves a message
        return []


def unusable_error(hub: HubId, names: list[str]) -> BertlensError | None:
    """Why bertlens cannot use a fetched model, said from its repository's file names; None when they tell nothing."""
    pickles = [n for n in names if _PICKLES.match(n)]
    if pickles and not any(n.endswith(".safetensors") for n in names):
        return MissingWeightsError(
            f"{hub} cannot be used: its only weights are PyTorch pickles ({', '.join(pickles[:3])}), and bertlens "
            "fetches safetensors only (loading a downloaded pickle can run code).",
            "Many models have a safetensors copy on a pull-request branch made by the hub's conversion bot: look on "
            f"the model page under 'Community' and name it, e.g. {hub.repo_id}@refs/pr/1. Or convert a copy you "
            f"trust: `AutoModel.from_pretrained('{hub.repo_id}').save_pretrained(DIR)` in transformers writes "
            "model.safetensors; then use DIR.",
        )
    pieces = [n for n in names if _SENTENCEPIECE.match(n)]
    if pieces and not {"tokenizer.json", "vocab.txt", "vocab.json"} & set(names):
        return MissingTokenizerError(
            f"{hub} cannot be used: its tokenizer is only a SentencePiece file ({', '.join(pieces[:2])}), which "
            "bertlens does not read.",
            "Save the model and its tokenizer to a folder once with transformers "
            f"(`AutoTokenizer.from_pretrained('{hub.repo_id}').save_pretrained(DIR)` writes tokenizer.json, "
            f"`AutoModel.from_pretrained('{hub.repo_id}').save_pretrained(DIR)` the weights), then use DIR.",
        )
    return None
