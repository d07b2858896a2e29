"""The run folder and its checkpoints: which folders a run may use, and how steps are saved and resumed.

A run folder holds `bertlens-run.json` (the mark, written first: only a marked folder is resumed or started again,
so files that happen to be in a folder are never written over), the model in Hugging Face layout (refreshed at every
checkpoint), `checkpoints/step-N/` (the model at step N plus `state.pt`: optimizer state, step, data position, RNG
state, elapsed time; the newest `keep_checkpoints` of them) and `training/` (the config, the logs, the data cache).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.errors import InputError
from ..core.outputs import RUN_MARKER, atomic_file, follow_umask, make_folder, replace_text, staging, write_error
from .config import PretrainConfig
from .distributed import barrier
from .tokenizer_training import TOKENIZER_FILES

if TYPE_CHECKING:
    import torch

    from .distributed import World
    from .model import Bert

STATE = "state.pt"
CONFIG_FILE = "pretrain_config.json"
_CHECKPOINT = re.compile(r"^step-(\d+)$")


# --- checkpoints ----------------------------------------------------------------------------------------------------


def checkpoints(out: Path) -> list[tuple[int, Path]]:
    """Complete checkpoints (with a state file) under out/checkpoints, oldest first."""
    folder = out / "checkpoints"
    if not folder.is_dir():
        return []
    found = []
    for child in folder.iterdir():
        match = _CHECKPOINT.match(child.name)
        if match and (child / STATE).exists():
            found.append((int(match.group(1)), child))
    return sorted(found)


def _save_model(model: Bert, tokenizer_dir: Path, folder: Path) -> None:
    from ..core.loader import quiet_transformers

    with quiet_transformers():
        model.save_pretrained(str(folder), safe_serialization=True)
    follow_umask(*folder.iterdir())  # safetensors' save_file makes model.safetensors 0o600
    for name in TOKENIZER_FILES:
        if (tokenizer_dir / name).exists():
            shutil.copyfile(tokenizer_dir / name, folder / name)


def write_checkpoint(out: Path, model: Bert, tokenizer_dir: Path, state: dict[str, Any], keep: int) -> Path:
    """Stage the checkpoint beside its final name, rename it, refresh the model in `out`, drop old checkpoints."""
    import torch

    step = int(state["step"])
    folder = out / "checkpoints"
    final = folder / f"step-{step:08d}"
    with staging(folder, "checkpoint") as stage:  # a killed run's staging is swept by the next checkpoint
        built = stage / "step"
        _save_model(model, tokenizer_dir, built)
        torch.save(state, built / STATE)
        if final.exists():
            shutil.rmtree(final)
        os.replace(built, final)
    for name in [p.name for p in final.iterdir() if p.name != STATE]:  # the model in `out` itself, file by file
        with atomic_file(out / name) as handle, (final / name).open("rb") as source:
            shutil.copyfileobj(source, handle)
    for _, old in checkpoints(out)[:-keep]:
        shutil.rmtree(old, ignore_errors=True)
    return final


def _load_weights(model: Bert, folder: Path) -> None:
    from ..core.loader import load_weights_into

    missing, unexpected = load_weights_into(model, folder)
    tied = {"cls.predictions.decoder.weight", "cls.predictions.decoder.bias"}
    if unexpected or set(missing) - tied:
        raise InputError(
            f"The checkpoint {folder} does not fit this model (missing {sorted(set(missing) - tied)[:3]}, "
            f"unexpected {sorted(unexpected)[:3]}).",
            "Resume with the config the run was started with.",
        )


def load_checkpoint(
    folder: Path, model: Bert, optimizer: torch.optim.Optimizer, world: World
) -> tuple[int, int, float]:
    """Load the weights and optimizer state of checkpoint `folder`; (steps, tokens, training seconds) done at it.

    The checkpoint must come from as many processes as this run has (else the global batch would change).
    """
    import torch

    state = torch.load(folder / STATE, map_location=world.device, weights_only=True)
    if int(state["world_size"]) != world.size:
        raise InputError(
            f"The checkpoint {folder.name} was written by {state['world_size']} process(es); this run has "
            f"{world.size}, which would change the global batch.",
            f"Resume with {state['world_size']} process(es).",
        )
    _load_weights(model, folder)
    optimizer.load_state_dict(state["optimizer"])
    seconds = float(state.get("trained_seconds", state.get("elapsed_seconds", 0.0)))  # over all invocations
    return int(state["step"]), int(state["tokens"]), seconds


def truncate_jsonl(file: Path, step: int) -> None:
    """Drop records after `step` (written by a run that went past its last checkpoint before it stopped)."""
    if not file.exists():
        return
    kept = [line for line in file.read_text(encoding="utf-8").splitlines() if line and json.loads(line)["step"] <= step]
    replace_text(file, "".join(line + "\n" for line in kept))


# --- the run folder -------------------------------------------------------------------------------------------------


def _marked(folder: Path) -> bool:
    """A run folder that `pretrain` made (it holds the mark)."""
    return (folder / RUN_MARKER).is_file()


def run_folder_state(target: Path, resume: bool, overwrite: bool) -> list[tuple[int, Path]]:
    """The checkpoints to resume from ([] for a new run), or an InputError when `target` may not be used. Reads only.

    A new run needs a new or empty folder, or one that a run marked (without checkpoints: an earlier start that
    stopped before its first; with them: only with `overwrite`, which starts it again). `resume` needs a marked
    folder with checkpoints. A folder with other files is never written into.
    """
    if target.exists() and not target.is_dir():
        raise InputError(f"{target} exists and is not a folder.", "Give a folder for the run (it is created).")
    marked = _marked(target)
    found = checkpoints(target) if marked else []
    if resume and overwrite:
        raise InputError("resume and overwrite cannot be used together.", "Resume the run, or start it again.")
    if resume:
        if target.exists() and not marked and any(target.iterdir()):
            raise InputError(
                f"{target} is not a run folder of bertlens pretrain (it has no {RUN_MARKER}).",
                "Only a run that bertlens pretrain started can be resumed; start a new run in a new or empty folder.",
            )
        if not found:
            raise InputError(
                f"{target} holds no checkpoint to resume.",
                "Start the run without {resume}.",
                arguments={"resume": True},
            )
        return found
    if found and not overwrite:
        raise InputError(
            f"{target} already holds a run (checkpoint step {found[-1][0]}).",
            "Continue it with {resume}, start it again from scratch with {overwrite} ("
            "the earlier run is removed), or choose another folder.",
            arguments={"resume": True, "overwrite": True},
        )
    if target.exists() and not marked and any(target.iterdir()):
        raise InputError(
            f"{target} is not empty and is not a run folder of bertlens pretrain: its files would be written over.",
            "Choose a new or empty folder for the run ({overwrite} applies only to a folder an earlier run made).",
            arguments={"overwrite": True},
        )
    return []


def check_resumable(out: Path, config: PretrainConfig) -> None:
    """An InputError unless the run in `out` was started with a config that computes what `config` does."""
    saved_file = out / "training" / CONFIG_FILE
    if not saved_file.exists():
        raise InputError(f"{out} holds checkpoints but no training/{CONFIG_FILE}.", "Start a new run in a new folder.")
    saved = PretrainConfig.load(saved_file).outcome_fields()  # (size-capped, validated)
    current = config.outcome_fields()
    differ = sorted(k for k in set(saved) | set(current) if saved.get(k) != current.get(k))
    if differ:
        shown = ", ".join(f"{k}: {saved.get(k)!r} there, {current.get(k)!r} now" for k in differ[:6])
        raise InputError(
            f"The checkpoint in {out} comes from another config ({shown}).",
            "Resume with the same settings (only threads, time limits and checkpoint spacing may change), "
            "or start a new run in another folder.",
        )


def open_run_folder(target: Path, overwrite: bool) -> list[Path]:
    """Make `target` a run folder for a new run (mark first); the folders this call created, outermost first."""
    if overwrite and _marked(target):
        for item in list(target.iterdir()):  # the earlier run, marked as ours: removed, the mark last
            if item.name != RUN_MARKER:
                shutil.rmtree(item) if item.is_dir() and not item.is_symlink() else item.unlink()
    created = make_folder(target)
    if not _marked(target):
        about = {"tool": "bertlens", "command": "pretrain", "created": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
        replace_text(target / RUN_MARKER, json.dumps(about, indent=2) + "\n")
    return created


@contextmanager
def run_folder(target: Path, found: list[tuple[int, Path]], overwrite: bool, world: World) -> Iterator[None]:
    """Inside the block, `target` is this run's folder: a new run's is opened (main process) before every process goes
    on, and on any failure before its first checkpoint what it wrote is removed; an OSError becomes a write error."""
    created: list[Path] = []
    try:
        if world.main and not found:
            created = open_run_folder(target, overwrite)
        barrier(world)
        yield
    except BaseException as exc:
        if world.main and not found:
            discard_new_run(target, created)
        if isinstance(exc, OSError):
            raise write_error(target, exc, "the run") from None
        raise


def start_training_folder(training_dir: Path, config: PretrainConfig) -> None:
    """A new run's training/ folder: its config saved; logs of an earlier start that never reached a checkpoint go."""
    config.write(training_dir / CONFIG_FILE)  # inside the run, whose folder pretrain checked
    for name in ("log.jsonl", "watch.jsonl"):
        (training_dir / name).unlink(missing_ok=True)


def discard_new_run(target: Path, created: list[Path]) -> None:
    """Remove what a new run wrote before it reached its first checkpoint (the folders, if this run made them)."""
    if checkpoints(target):
        return
    if created:
        shutil.rmtree(created[0], ignore_errors=True)
        return
    for item in list(target.iterdir()) if target.is_dir() else []:
        if item.is_dir() and not item.is_symlink():
            shutil.rmtree(item, ignore_errors=True)
        else:
            item.unlink(missing_ok=True)


def load_config_from_run(out: str | os.PathLike[str]) -> PretrainConfig:
    """The PretrainConfig a run in `out` was started with."""
    path = Path(out).expanduser() / "training" / CONFIG_FILE
    if not path.exists():
        raise InputError(f"{Path(out)} holds no pre-training run (no training/{CONFIG_FILE}).", "Check the folder.")
    return PretrainConfig.load(path)
