"""`PretrainResult`: what a pre-training run did and reached, and its table."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..core.results import Result, table
from .early_stop import EarlyStop


@dataclass(frozen=True, repr=False)
class PretrainResult(Result):
    """What a pre-training run did and reached.

    >>> config = PretrainConfig.preset_config("tiny", max_steps=40)
    >>> result = pretrain(config, "sample", "tiny-bert/", tokenizer="tok/")  # doctest: +SKIP
    >>> result.tokens_per_second, result.checkpoints  # doctest: +SKIP
    """

    out: str
    step: int  # steps done in total (resumed steps included)
    max_steps: int
    stopped: str  # "finished", "time limit", "stop_at_step"
    stopped_early: EarlyStop | None  # before max_steps: why, where, and the command that continues the run
    resumed_from: int | None  # the checkpoint step this run continued from
    max_minutes: float | None  # the time limit of the whole run (all its invocations together)
    seconds_before: float  # training time of the run before this invocation
    notes: tuple[str, ...]  # on resume: each option this invocation changed, "option: old -> new"
    tokens: int  # text tokens trained on in total (no padding exists)
    tokens_per_second: float  # this invocation's training throughput (all processes together)
    train_seconds: float  # this invocation's wall-clock training time
    loss: float | None  # mean training loss over the last log interval
    validation_perplexity: float | None  # exp(masked-LM loss) on the validation text at the last checkpoint
    processes: int
    precision: str
    checkpoints: tuple[str, ...]
    watch: dict[str, Any] | None = None  # the watch report (`WatchReport.to_dict()`), where one was written

    def __repr__(self) -> str:
        return f"PretrainResult(step {self.step}/{self.max_steps}, {self.stopped}, at {self.out})"

    def to_table(self) -> str:
        rows = [
            ("out", self.out),
            ("steps", f"{self.step} of {self.max_steps} ({self.stopped})"),
            ("resumed from step", self.resumed_from),
            ("time limit", self._time_limit()),
            ("tokens trained", self.tokens),
            ("tokens/s", round(self.tokens_per_second, 1)),
            ("training time (s)", round(self.train_seconds, 1)),
            ("training loss", self.loss),
            ("validation perplexity", self.validation_perplexity),
            ("processes", self.processes),
            ("precision", self.precision),
            ("checkpoints kept", ", ".join(self.checkpoints)),
        ]
        lines = [table(["", "value"], rows)]
        if self.watch:
            lines += ["", *_watch_lines(self.watch)]
        if self.notes:
            lines += ["", "Changed on resume (the rest is the run's own):", *(f"  {note}" for note in self.notes)]
        if self.stopped_early is not None:  # last, where the eye lands when the command ends
            lines += ["", *self.stopped_early.lines()]
        return "\n".join(lines)

    def _time_limit(self) -> str:
        if self.max_minutes is None:
            return "none"
        before = f" ({self.seconds_before / 60:.1f} min of it used before this resume)" if self.seconds_before else ""
        return f"{self.max_minutes:g} min of training for the whole run{before}"


def _watch_lines(watch: dict[str, Any]) -> list[str]:
    """The watch in two lines: category purity from the first checkpoint to the last, and where the report is."""
    scored = [c for c in watch["checkpoints"] if c.get("category_purity") is not None]
    lines = []
    if scored:
        first, last = scored[0], scored[-1]
        lines.append(
            f"Category purity of the input rows: {first['category_purity']:.2f} at step {first['step']} "
            f"-> {last['category_purity']:.2f} at step {last['step']}"
            + (f" (chance {first['purity_chance']:.2f})" if first.get("purity_chance") is not None else "")
        )
    lines.append(f"Report: {watch['html']}")
    return lines
