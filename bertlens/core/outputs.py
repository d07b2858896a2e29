"""Writing outputs safely: checked paths, staging folders that a crash cannot leave for good, atomic files.

Every folder of files bertlens writes (an export, an extended model, a tokenizer, a checkpoint, an extract's shard)
is first written into a staging folder beside its destination and moved in only when complete. A staging folder is
named `.bertlens-KIND-PID-RANDOM` and holds a marker file (`bertlens-staging.json`: process id, host name, kind), so a
later run can prove that one left behind belongs to a bertlens process of this host that no longer runs, and remove
it (`sweep_stale`). Folders in use, of another host, or without a readable marker are never touched.

Files and folders are created with modes 0o666 and 0o777, so they get the user's umask like any other program's
output (`tempfile.mkstemp` and `mkdtemp` would make them 0o600 and 0o700).

Where nothing is written: every output a user names goes through `output_path`, which refuses a target that is, or
lies inside, a model folder (one holding config.json and weights, or a sentence-transformers model's modules.json) or
an installed package (anything under a site-packages or dist-packages folder, Python's purelib and platlib, or
bertlens itself), the path resolved through symbolic links (`check_place`). A pretrain run folder (it holds
`bertlens-run.json`) is a model folder too; only the commands that own it (pretrain, watch) may name it itself.
"""

from __future__ import annotations

import errno
import functools
import json
import os
import re
import secrets
import shutil
import socket
import stat
import sysconfig
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from .errors import InputError
from .paths import OUTPUT, user_path

STAGING_MARKER = "bertlens-staging.json"
_STAGING_NAME = re.compile(r"^\.bertlens-([a-z][a-z-]*)-(\d+)-([0-9a-f]{8})$")
SMALL_FILE_LIMIT = 1 << 20  # bytes: configs, manifests and word lists are far smaller


RUN_MARKER = "bertlens-run.json"  # the mark of a pretrain run folder (training/checkpoints.py writes it first)
MODEL_CONFIG = "config.json"
MODEL_WEIGHTS = (
    "model.safetensors",
    "model.safetensors.index.json",
    "pytorch_model.bin",
    "pytorch_model.bin.index.json",
    "tf_model.h5",
    "flax_model.msgpack",
)
SENTENCE_TRANSFORMERS_MODULES = "modules.json"  # a sentence-transformers model's root (its BERT may lie below)
PACKAGE_FOLDERS = ("site-packages", "dist-packages")


def output_path(value: Any, what: str = "output", *, run: bool = False) -> Path:
    """`value` as a path to write to, or an InputError: not None, not empty or blank, no NUL character, and not in a
    place bertlens never writes (`check_place`: a model folder, an installed package). `run=True` lets the target be a
    pretrain run folder itself (pretrain resumes it, watch writes its report into it)."""
    return check_place(user_path(value, what, OUTPUT), what, run=run)


def is_model_folder(folder: Path) -> bool:
    """Whether `folder` holds a model: config.json and a weights file, or a sentence-transformers modules.json."""
    try:
        if (folder / SENTENCE_TRANSFORMERS_MODULES).is_file():
            return True
        return (folder / MODEL_CONFIG).is_file() and any((folder / name).is_file() for name in MODEL_WEIGHTS)
    except OSError:  # a folder this user may not look into is not one bertlens could have been given to write
        return False


@functools.cache
def package_roots() -> tuple[Path, ...]:
    """The folders installed packages live in (resolved): Python's purelib and platlib, the site folders, and the
    bertlens package itself (for an install from a source tree)."""
    import site

    found = [sysconfig.get_paths().get(key) for key in ("purelib", "platlib")]
    if hasattr(site, "getsitepackages"):  # absent from an embedded interpreter's reduced site module
        found += [*site.getsitepackages(), site.getusersitepackages()]
    found.append(str(Path(__file__).resolve().parents[1]))
    roots = {Path(os.path.realpath(path)) for path in found if path}
    return tuple(sorted(roots))


def check_place(
    target: Path, what: str = "output", *, run: bool = False, arguments: Mapping[str, object] | None = None
) -> Path:
    """`target`, or an InputError when it is or lies inside a model folder or an installed package (`arguments`: those
    `what` names).

    The path is resolved first (symbolic links followed, also dangling ones), so no spelling or link leads around the
    rule. `run=True` allows a target that is a pretrain run folder (holding `RUN_MARKER`) itself, never one inside it.
    """
    resolved = Path(os.path.realpath(target))
    for folder in (resolved, *resolved.parents):
        if not is_model_folder(folder):
            continue
        if run and folder == resolved and (folder / RUN_MARKER).is_file():
            continue  # the run folder itself, named by the command that owns it
        raise InputError(
            f"The {what} {target} {_where(resolved, folder)} a model's folder ({folder}), which bertlens never writes.",
            f"Write it outside the model's folder, e.g. {_elsewhere(target)}.",
            arguments=arguments,
        )
    package = _installed_package(resolved)
    if package is not None:
        raise InputError(
            f"The {what} {target} {_where(resolved, package)} the folder of installed Python packages ({package}), "
            "which bertlens never writes.",
            f"Write it outside Python's packages, e.g. {_elsewhere(target)}.",
            arguments=arguments,
        )
    return target


def _where(resolved: Path, folder: Path) -> str:
    return "is" if resolved == folder else "lies inside"


def _installed_package(resolved: Path) -> Path | None:
    """The package folder (site-packages, ...) that `resolved` is or lies inside, or None."""
    for index, part in enumerate(resolved.parts):
        if part in PACKAGE_FOLDERS:
            return Path(*resolved.parts[: index + 1])
    for root in package_roots():
        if resolved == root or root in resolved.parents:
            return root
    return None


def _elsewhere(target: Path) -> str:
    """A place to write instead, with the target's name: the current folder, else the home folder."""
    name = target.name or "out"
    for base, shown in ((Path.cwd(), f"./{name}"), (Path.home(), f"~/{name}")):
        resolved = Path(os.path.realpath(base))
        if _installed_package(resolved) is None and not any(is_model_folder(f) for f in (resolved, *resolved.parents)):
            return shown
    return f"a folder of your own, e.g. ~/{name}"


def refuse_inside(target: Path, source: Path, what: str = "the source model") -> None:
    """InputError if `target` is `source` or lies inside it (paths resolved): a source is only ever read."""
    resolved, origin = target.resolve(), source.resolve()
    if resolved == origin or origin in resolved.parents:
        where = "is" if resolved == origin else "lies inside"
        raise InputError(
            f"{target} {where} {what} ({source}), which bertlens never writes.",
            "Choose an output folder outside it.",
        )


def make_folder(path: Path) -> list[Path]:
    """Create `path` and missing parents with the umask's permissions; return the folders created, outermost first."""
    missing = [p for p in (path, *path.parents) if not p.exists()][::-1]
    path.mkdir(mode=0o777, parents=True, exist_ok=True)
    return missing


@contextmanager
def folder_for(path: Path) -> Iterator[None]:
    """Create the folder `path` (and parents) for an output; if the output fails, remove those left empty."""
    created = make_folder(path)
    try:
        yield
    except BaseException:
        for folder in reversed(created):
            try:
                folder.rmdir()
            except OSError:
                break
        raise


def write_error(target: Path, exc: OSError, what: str = "the output") -> InputError:
    """An OSError met while writing, said plainly (with a hint that fits a full disk or a read-only place)."""
    reason = exc.strerror or str(exc)
    where = exc.filename if isinstance(exc.filename, str) and exc.filename != str(target) else None
    detail = f" ({where})" if where else ""
    return InputError(
        f"Cannot write {what} into {target}: {reason}{detail}.",
        "Choose a folder you can write to, with enough free space.",
    )


def current_umask() -> int:
    """The process's umask, read without changing it where Linux tells it (/proc/self/status)."""
    try:
        for line in Path("/proc/self/status").read_text(encoding="ascii").splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)  # elsewhere the only way to read it is to set it, and set it back at once
    os.umask(mask)
    return mask


def follow_umask(*paths: Path) -> None:
    """Give files written by libraries that create them 0o600 (safetensors' save_file) the umask's permissions."""
    mask = current_umask()
    for path in paths:
        path.chmod((0o777 if path.is_dir() else 0o666) & ~mask)


# --- staging folders ------------------------------------------------------------------------------------------------


def process_alive(pid: int) -> bool:
    """Whether process `pid` runs on this host (when in doubt: yes)."""
    if pid == os.getpid():
        return True
    if os.name != "posix" or pid <= 0:
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # PermissionError: it exists, under another user
        return True
    return True


def _stale(folder: Path) -> bool:
    """A staging folder of a bertlens process of this host that is gone (proved by its name and marker)."""
    match = _STAGING_NAME.match(folder.name)
    if match is None or folder.is_symlink() or not folder.is_dir():
        return False
    pid = int(match.group(2))
    marker = folder / STAGING_MARKER
    try:
        about = json.loads(read_small_text(marker, "staging marker", limit=4096))
    except InputError:
        # Killed between creating the folder and writing its marker: only an empty one can be told apart.
        return not marker.exists() and not any(folder.iterdir()) and not process_alive(pid)
    if not isinstance(about, dict) or about.get("pid") != pid or about.get("host") != socket.gethostname():
        return False
    return not process_alive(pid)


def sweep_stale(parent: Path) -> list[Path]:
    """Remove staging folders in `parent` left by bertlens processes of this host that no longer run."""
    removed: list[Path] = []
    try:
        entries = [p for p in parent.iterdir() if p.name.startswith(".bertlens-")]
    except OSError:
        return removed
    for folder in entries:
        try:
            if _stale(folder):
                shutil.rmtree(folder)
                removed.append(folder)
        except OSError:  # another user's, or gone meanwhile: leave it
            continue
    return removed


def new_staging(parent: Path, kind: str) -> Path:
    """A new marked staging folder in `parent` (created if missing), after sweeping stale ones there."""
    make_folder(parent)
    sweep_stale(parent)
    while True:
        folder = parent / f".bertlens-{kind}-{os.getpid()}-{secrets.token_hex(4)}"
        try:
            folder.mkdir(mode=0o777)
            break
        except FileExistsError:
            continue
    about = {"pid": os.getpid(), "host": socket.gethostname(), "kind": kind}
    (folder / STAGING_MARKER).write_text(json.dumps(about) + "\n", encoding="utf-8")
    return folder


@contextmanager
def staging(parent: Path, kind: str) -> Iterator[Path]:
    """A marked staging folder in `parent`, removed on leaving (what was moved out of it stays where it went)."""
    folder = new_staging(parent, kind)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def move_in(built: Path, out: Path, names: Iterable[str]) -> None:
    """Move the complete files `names` of folder `built` (in a staging folder beside `out`) to the folder `out`.

    A new `out` is the whole folder renamed in one step, so a process killed meanwhile leaves all of it or none; into
    an existing folder the files move one by one, each replaced whole.
    """
    if not os.path.lexists(out):
        try:
            os.rename(built, out)
            return
        except OSError:  # `out` appeared meanwhile: file by file, as into any existing folder
            pass
    for name in names:
        os.replace(built / name, out / name)


def copy_file(source: Path, target: Path) -> None:
    """Copy the contents only: the new file gets the umask's permissions, not the source's (e.g. read-only)."""
    shutil.copyfile(source, target)


def copy_tree(source: Path, target: Path) -> None:
    """Copy a folder's files and sub-folders, contents only (permissions from the umask, links followed)."""
    target.mkdir(mode=0o777)
    for item in sorted(source.iterdir()):
        if item.is_dir():
            copy_tree(item, target / item.name)
        else:
            copy_file(item, target / item.name)


# --- single files ---------------------------------------------------------------------------------------------------


@contextmanager
def atomic_file(path: Path, *, overwrite: bool = True) -> Iterator[IO[bytes]]:
    """A binary handle on a uniquely named partial file beside `path`, which becomes `path` only when complete.

    With `overwrite=False` a file at `path` is never replaced, even one that appeared while writing: FileExistsError.
    """
    staged = path.parent / f".{path.name}.{secrets.token_hex(4)}.partial"
    descriptor = os.open(staged, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(descriptor, "wb") as out:
            yield out
        if overwrite:
            os.replace(staged, path)
        else:
            _place_new(staged, path)
    finally:
        if os.path.lexists(staged):
            os.unlink(staged)


def _place_new(staged: Path, path: Path) -> None:
    """Give `staged` the name `path` only if nothing has it: a hard link fails on an existing name (atomically)."""
    try:
        os.link(staged, path)
    except FileExistsError:
        raise
    except OSError:  # no hard links on this file system: check, then rename
        if os.path.lexists(path):
            raise FileExistsError(errno.EEXIST, "File exists", str(path)) from None
        os.replace(staged, path)


def replace_text(path: Path, text: str) -> None:
    """Write `text` (UTF-8) to `path` atomically: readers see the old file or the new one, never a part."""
    with atomic_file(path) as out:
        out.write(text.encode("utf-8"))


# --- small inputs ---------------------------------------------------------------------------------------------------


def read_small_text(
    path: str | os.PathLike[str], what: str = "file", *, limit: int = SMALL_FILE_LIMIT, hint: str = ""
) -> str:
    """The UTF-8 text of a regular file of at most `limit` bytes (devices, FIFOs and folders are refused unopened)."""
    file = Path(path).expanduser()
    hint = hint or f"Give a readable UTF-8 text file of at most {limit:,} bytes."
    try:
        info = file.stat()
        if not stat.S_ISREG(info.st_mode):
            kind = "a folder" if stat.S_ISDIR(info.st_mode) else "not a regular file"
            raise InputError(f"The {what} {file} is {kind}.", hint)
        if info.st_size > limit:
            raise InputError(f"The {what} {file} is larger than {limit:,} bytes ({info.st_size:,}).", hint)
        with file.open("rb") as handle:
            data = handle.read(limit + 1)
    except FileNotFoundError:
        raise InputError(f"No such {what}: {file}", hint) from None
    except OSError as exc:
        raise InputError(f"Cannot read the {what} {file}: {exc.strerror or exc}.", hint) from None
    if len(data) > limit:
        raise InputError(f"The {what} {file} is larger than {limit:,} bytes.", hint)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"The {what} {file} is not valid UTF-8 (byte {exc.start}).", hint) from None
