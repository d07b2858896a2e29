"""A run that stopped before the end of its schedule: why, at which step, and the command that continues it.

The loop ends a run early at its time limit (`max_minutes`), at `stop_at_step`, or on SIGINT (Ctrl-C) or SIGTERM,
always on a checkpoint. It keeps how each invocation ended in `training/stop.json` (a finished one too), so the
result (`PretrainResult.stopped_early`, the terminal, `--json`) and the watch report (a banner at the top of
report.html) say the same thing: the schedule is not finished, the rows are not yet what it would make of them, and
`bertlens pretrain --out RUN --resume` (with `--no-time-limit` after a time limit, whose time is used up) continues
from the last checkpoint, with the same weights at the end as a run that never stopped.
"""

from __future__ import annotations

import json
import shlex
import textwrap
from dataclasses import dataclass
from pathlib import Path

from ..core.errors import BertlensError
from ..core.outputs import replace_text
from .resume import saved_config

STOP_FILE = "stop.json"
# why a run stopped, in words: the loop's `Progress.stopped`, or "unknown" (a run killed, or one still training)
WHY = {
    "time limit": "its time limit (--minutes) ran out",
    "stop_at_step": "it paused at --stop-at-step",
    "SIGINT": "it was interrupted (Ctrl-C)",
    "SIGTERM": "it was stopped by SIGTERM",
    "unknown": "it was stopped or is still training",
}


@dataclass(frozen=True)
class EarlyStop:
    """Where and why a run stopped before `max_steps`, and the command line that continues it."""

    reason: str  # "time limit", "stop_at_step", "SIGINT", "SIGTERM" or "unknown" (see WHY)
    step: int  # the step of the last checkpoint, where a resume starts
    max_steps: int  # the end of the run's schedule
    command: str  # continues the run from its last checkpoint to max_steps

    @property
    def text(self) -> str:
        """The stop in one sentence, without the command."""
        return (
            f"Stopped early at step {self.step:,} of {self.max_steps:,}: {WHY.get(self.reason, self.reason)}. The "
            "rows have not had their whole schedule."
        )

    def lines(self, width: int = 116) -> list[str]:
        """The stop for a terminal: the sentence wrapped, then the command on a line of its own (to copy whole)."""
        return [*textwrap.wrap(self.text, width), "Continue the run with:", f"  {self.command}"]


def continue_command(out: str | Path, reason: str, processes: int = 1) -> str:
    """The command line that continues the run in `out` (a time limit, used up, is dropped)."""
    start = f"torchrun --nproc-per-node {processes} -m bertlens" if processes > 1 else "bertlens"
    flags = " --no-time-limit" if reason == "time limit" else ""
    return f"{start} pretrain --out {shlex.quote(str(out))} --resume{flags}"


def early_stop(out: str | Path, reason: str, step: int, max_steps: int, processes: int = 1) -> EarlyStop | None:
    """The early stop of a run in `out` that ended at `step` (None when it reached `max_steps`)."""
    if step >= max_steps or reason == "finished":
        return None
    return EarlyStop(reason, step, max_steps, continue_command(out, reason, processes))


def write_stop(training_dir: Path, reason: str, step: int, max_steps: int, processes: int) -> None:
    """Keep how this invocation ended in the run's training/ folder (read by `read_stop`)."""
    record = {"stopped": reason, "step": step, "max_steps": max_steps, "processes": processes}
    replace_text(training_dir / STOP_FILE, json.dumps(record) + "\n")


def read_stop(run: Path, last_step: int) -> EarlyStop | None:
    """The early stop of the run in folder `run` whose last checkpoint is `last_step` (None when it finished its
    schedule, or has no saved config); the reason is "unknown" when training/stop.json does not name that step."""
    try:
        config = saved_config(run)
    except BertlensError:  # a damaged config: the report says nothing of a stop rather than fail
        return None
    if config is None or last_step >= config.max_steps:
        return None
    reason, processes = "unknown", 1
    try:
        saved = json.loads((run / "training" / STOP_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        saved = None
    if isinstance(saved, dict) and saved.get("step") == last_step and saved.get("stopped") in WHY:
        reason = saved["stopped"]
        processes = saved["processes"] if isinstance(saved.get("processes"), int) else 1
    return early_stop(run, reason, last_step, config.max_steps, processes)
