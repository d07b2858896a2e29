"""What a resumed run keeps: every option of the run it continues, unless the user gives it again (and then it says so).

A new run saves its config (`training/pretrain_config.json`) and its inputs (`training/run_inputs.json`: the corpus,
the validation text, the tokenizer folder, max_texts). A resumed run starts from both; what the user gives again
replaces them and is named in a note, `option: old -> new`, on standard error (CLI) and in the result. Two settings
belong to one invocation and never carry over: `stop_at_step` (a pause: a resume goes on to max_steps) and
`progress`. The time limit, `max_minutes`, is the run's training time over all its invocations: a resumed run gets
what is left of it (a new `max_minutes` sets a new limit for the whole run; the CLI's `--no-time-limit` drops it).
Each resume saves the effective config and inputs, so the next one continues from them.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, overload

from ..core.errors import NAME, InputError
from ..core.outputs import replace_text
from .checkpoints import CONFIG_FILE
from .config import PretrainConfig

RUN_INPUTS = "run_inputs.json"
ONE_INVOCATION = frozenset({"stop_at_step", "progress"})  # never carried over, never reported as overridden
INPUTS = {"corpus": NAME, "validation": NAME}  # the arguments that give a run's inputs again


@dataclass(frozen=True)
class RunInputs:
    """What a run reads besides its config: paths made absolute (a name such as a bundled corpus stays as given)."""

    corpus: str
    validation: str | None = None
    tokenizer: str | None = None
    max_texts: int | None = None

    @classmethod
    def of(
        cls,
        corpus: str | os.PathLike[str],
        validation: str | os.PathLike[str] | None,
        tokenizer: str | os.PathLike[str] | None,
        max_texts: int | None,
    ) -> RunInputs:
        return cls(_where(corpus), _where(validation), _where(tokenizer), max_texts)


@overload
def _where(path: None) -> None: ...
@overload
def _where(path: str | os.PathLike[str]) -> str: ...
def _where(path: str | os.PathLike[str] | None) -> str | None:
    """`path` made absolute where it exists (a name such as a bundled corpus stays as given)."""
    if path is None:
        return None
    given = Path(path).expanduser()
    return str(given.resolve()) if given.exists() else os.fspath(path)


def save_run(training_dir: Path, config: PretrainConfig, inputs: RunInputs) -> None:
    """Keep the effective config and inputs in the run's training/ folder (a new run's, or a resumed one's)."""
    config.write(training_dir / CONFIG_FILE)  # inside the run, whose folder pretrain checked
    replace_text(training_dir / RUN_INPUTS, json.dumps(asdict(inputs), indent=2) + "\n")


def saved_inputs(out: Path) -> RunInputs | None:
    """The inputs a run in `out` saved (None for a run made before they were kept)."""
    file = out / "training" / RUN_INPUTS
    if not file.is_file():
        return None
    hint = "Give the {corpus} (and {validation}) again: the run's training/run_inputs.json is damaged."
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
        inputs = RunInputs(**data)
    except (ValueError, TypeError, OSError) as exc:
        raise InputError(f"Cannot read {file}: {exc}.", hint, arguments=INPUTS) from None
    if not isinstance(inputs.corpus, str):
        raise InputError(f"{file} names no corpus.", hint, arguments=INPUTS)
    return inputs


def saved_config(out: Path) -> PretrainConfig | None:
    """The config a run in `out` saved last (None when there is none)."""
    file = out / "training" / CONFIG_FILE
    return PretrainConfig.load(file) if file.is_file() else None


def resumed_config(out: Path, given: dict[str, Any]) -> PretrainConfig:
    """The saved config of the run in `out` (without its stop_at_step) with the `given` fields replacing its own."""
    saved = saved_config(out)
    if saved is None:
        raise InputError(
            f"{out} holds no training/{CONFIG_FILE} to resume.",
            "Start the run without {resume}.",
            arguments={"resume": True},
        )
    return PretrainConfig.from_dict(saved.to_dict() | {"stop_at_step": None} | given)


def resumed_inputs(
    out: Path,
    corpus: str | os.PathLike[str] | None,
    validation: str | os.PathLike[str] | None,
    tokenizer: str | os.PathLike[str] | None,
    max_texts: int | None,
) -> RunInputs:
    """The inputs of a resumed run: the ones given, else the run's own."""
    saved = saved_inputs(out)
    if corpus is None and saved is None:
        raise InputError(
            f"The run in {out} did not keep the name of its corpus (it was made by an older bertlens).",
            "Give the {corpus} again (and {validation}, if the run had one).",
            arguments={"corpus": NAME, "validation": NAME},
        )
    if saved is None:
        assert corpus is not None
        return RunInputs.of(corpus, validation, tokenizer, max_texts)
    return RunInputs(
        corpus=saved.corpus if corpus is None else _where(corpus),
        validation=saved.validation if validation is None else _where(validation),
        tokenizer=saved.tokenizer if tokenizer is None else _where(tokenizer),
        max_texts=saved.max_texts if max_texts is None else max_texts,
    )


def resume_notes(out: Path, config: PretrainConfig, inputs: RunInputs) -> tuple[str, ...]:
    """`option: old -> new` for every option of the run in `out` that this invocation changes."""
    saved = saved_config(out)
    notes = []
    if saved is not None:
        before, now = saved.to_dict(), config.to_dict()
        notes += [
            f"{name}: {_shown(before[name])} -> {_shown(now[name])}"
            for name in now
            if name not in ONE_INVOCATION and before.get(name) != now[name]
        ]
    kept = saved_inputs(out)
    if kept is not None:
        before, now = asdict(kept), asdict(inputs)
        notes += [f"{name}: {_shown(before[name])} -> {_shown(now[name])}" for name in now if before[name] != now[name]]
    return tuple(notes)


def _shown(value: Any) -> str:
    return "none" if value is None else str(value) if isinstance(value, str) else json.dumps(value)


def check_time_left(config: PretrainConfig, seconds_before: float, step: int) -> None:
    """An InputError when a resumed run's time limit is already used up (it would stop before its first step)."""
    if config.max_minutes is None or seconds_before < 60 * config.max_minutes:
        return
    longer = 2 * config.max_minutes
    raise InputError(
        f"The run's time limit, {config.max_minutes:g} minutes of training, is used up: it trained "
        f"{seconds_before / 60:.1f} minutes to step {step}.",
        "Give a longer limit for the whole run, e.g. {max_minutes}, or drop it with {max_minutes=None}.",
        arguments={"max_minutes": int(longer) if float(longer).is_integer() else longer, "max_minutes=None": NAME},
    )
