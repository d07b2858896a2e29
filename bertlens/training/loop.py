"""The training loop: batch, forward, loss, backward, step, log, evaluate and checkpoint, until the run stops.

`Training` holds the pieces the loop drives (fixed for the run), `Progress` where it stands (what a checkpoint saves
and the result reports). Each step sets the scheduled learning rate, re-seeds dropout from `(seed, step, rank)`,
takes this process's slice of the global batch, and normalises the loss by the global number of predicted tokens, so
two processes with batch B compute what one process with batch 2B does. The run stops at `max_steps`, at
`stop_at_step`, at the time limit (what is left of the run's `max_minutes`), or on SIGINT (Ctrl-C) or SIGTERM, which
only ask it to stop after the current step: it always ends on a checkpoint, so `resume` continues from there with no
step lost; how it ended is kept in training/stop.json (`early_stop.py`). Checkpoints come every
`config.checkpoint_interval` steps (and, auto with a time limit, every tenth of it). The progress bar's time left comes
from the average step rate since the start, the checkpoints' pauses included.
"""

from __future__ import annotations

import json
import signal
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING

from ..core.progress import Bar, progress_bar
from .checkpoints import checkpoints, write_checkpoint
from .config import PretrainConfig
from .data import PackedData
from .distributed import World, barrier, sum_over_processes
from .early_stop import continue_command, write_stop
from .objective import autocast, batch_tensors, validation_perplexity
from .optimizer import set_learning_rate

if TYPE_CHECKING:
    import torch

    from .model import Bert
    from .watch import Watcher


@dataclass(frozen=True)
class Training:
    """What the loop drives: fixed for the whole run."""

    config: PretrainConfig
    world: World
    model: Bert
    objective: torch.nn.Module  # forward(batch tensors) -> (summed MLM loss, summed NSP loss)
    runner: torch.nn.Module  # the objective, in DistributedDataParallel under torchrun
    optimizer: torch.optim.Optimizer
    train: PackedData
    valid: PackedData | None  # held-out text scored at every checkpoint
    precision: str  # "float32" or "bfloat16" (autocast)
    out: Path  # the run folder
    tokenizer_dir: Path  # its files are copied beside every saved model
    watcher: Watcher | None  # main process only

    @property
    def global_batch(self) -> int:
        """Sequences per step over all processes."""
        return self.config.batch_size * self.world.size

    @property
    def log_file(self) -> Path:
        return self.out / "training" / "log.jsonl"


@dataclass
class Progress:
    """Where the loop stands: what a checkpoint saves and the result reports."""

    step: int = 0  # steps done in total (resumed ones included)
    tokens: int = 0  # text tokens trained on in total
    resumed_from: int | None = None  # the checkpoint step this invocation continued from
    saved_at: int = 0  # the step of the newest checkpoint
    kept: list[str] = field(default_factory=list)  # names of the checkpoints kept
    run_tokens: int = 0  # text tokens this invocation trained on
    started: float = 0.0  # time.perf_counter() when this invocation's loop started
    seconds_before: float = 0.0  # training time of the run before this invocation (at the checkpoint resumed)
    window: list[float] = field(default_factory=list)  # per-step losses since the last log line
    last_loss: float | None = None  # mean training loss over the last log interval
    perplexity: float | None = None  # validation perplexity at the newest checkpoint
    stopped: str = "finished"  # "finished", "time limit", "stop_at_step" (or a signal's name while stopping)


def train_loop(run: Training, progress: Progress) -> None:
    """Train from `progress.step` until the run stops (see the module docstring); `progress` follows along."""
    import torch

    config, world, p = run.config, run.world, progress
    end = config.last_step
    every, every_seconds = config.checkpoint_interval, config.checkpoint_seconds
    bar = _bar(config, world, p.step, end)
    p.started = time.perf_counter()
    last_saved = p.started
    deadline = None if config.max_minutes is None else p.started + 60 * config.max_minutes - p.seconds_before
    start_step = p.step  # the time limit stops a run only after a step (a run is refused when none of its time is left)
    with stop_signals() as caught:
        try:
            while p.step < end:
                late = deadline is not None and p.step > start_step and time.perf_counter() >= deadline
                signalled, late = _agreed(world, caught.name is not None, late)  # every process stops at one step
                if signalled or late:
                    p.stopped = (caught.name or "SIGTERM") if signalled else "time limit"
                    break
                lr = set_learning_rate(run.optimizer, config, p.step)
                torch.manual_seed(_step_seed(config.seed, p.step, world.rank))  # dropout of this step

                # batch: this process's slice of the step's global batch
                first = p.step * run.global_batch + world.rank * config.batch_size
                batch = run.train.batch(first, config.batch_size)
                inputs = batch_tensors(batch, world.device)
                count = torch.tensor(float(len(batch.labels)), device=world.device)
                sum_over_processes(count, world)  # predicted tokens in the global batch

                # forward, loss, backward, step
                with autocast(world.device, run.precision):
                    mlm, nsp = run.runner(*inputs)
                loss = mlm / count * world.size + nsp / run.global_batch * world.size  # DDP averages over processes
                loss.backward()
                if config.max_grad_norm > 0:
                    torch.nn.utils.clip_grad_norm_(run.model.parameters(), config.max_grad_norm)
                run.optimizer.step()
                run.optimizer.zero_grad(set_to_none=True)
                p.step += 1
                p.tokens += batch.tokens * world.size
                p.run_tokens += batch.tokens * world.size
                p.window.append(float(mlm.detach()) / len(batch.labels) + float(nsp.detach()) / config.batch_size)

                # log
                now = time.perf_counter()
                elapsed = now - p.started
                if p.step % config.log_every == 0 or p.step == end:
                    _log(run, p, lr, elapsed)
                if bar is not None:
                    bar.update(1)
                    shown = p.window[-1] if p.window else p.last_loss
                    bar.set_postfix_str(f"loss={shown:.3f}, tok_s={p.run_tokens / elapsed:.0f}")

                # evaluate and checkpoint: every `every` steps, at the end, and (auto, with a time limit) in time
                due = every_seconds is not None and _agreed(world, now - last_saved >= every_seconds)[0]
                if p.step % every == 0 or p.step == end or due:
                    checkpoint(run, p)
                    last_saved = time.perf_counter()
            if p.step > p.saved_at:
                checkpoint(run, p)  # stopped by the time limit or a signal between two checkpoints
        finally:
            if bar is not None:
                bar.close()
    if p.stopped not in (*SIGNALS, "time limit"):
        p.stopped = "finished" if p.step >= config.max_steps else "stop_at_step"
    if world.main:
        write_stop(run.log_file.parent, p.stopped, p.step, config.max_steps, world.size)  # what the report says
    if p.stopped in SIGNALS:
        if world.main:
            print(
                f"pretrain: {p.stopped} at step {p.step}: checkpoint step-{p.saved_at:08d} written ({config.max_steps} "
                f"steps in all); continue with: {continue_command(run.out, p.stopped, world.size)}",
                file=sys.stderr,
            )
        raise KeyboardInterrupt  # the state was saved between two steps: --resume continues from there


SIGNALS = ("SIGINT", "SIGTERM")


@dataclass
class Caught:
    """The name of the first stop signal received (None until one comes)."""

    name: str | None = None


@contextmanager
def stop_signals() -> Iterator[Caught]:
    """Inside the block SIGINT and SIGTERM only ask the loop to stop after the current step (which then writes a
    checkpoint); a second one stops at once. The previous handlers are restored when the block ends. Outside the main
    thread (where Python cannot install handlers) nothing changes."""
    caught = Caught()
    if threading.current_thread() is not threading.main_thread():
        yield caught
        return
    numbers = [getattr(signal, name) for name in SIGNALS]
    previous = {number: signal.getsignal(number) for number in numbers}

    def handler(number: int, frame: FrameType | None) -> None:
        if caught.name is not None:  # the second: stop now, without a checkpoint
            raise KeyboardInterrupt
        caught.name = signal.Signals(number).name

    for number in numbers:
        signal.signal(number, handler)
    try:
        yield caught
    finally:
        for number, before in previous.items():
            signal.signal(number, before)


def _agreed(world: World, *flags: bool) -> tuple[bool, ...]:
    """Each flag, true when it is true in any process (one all-reduce under torchrun; none in a single process)."""
    if world.size == 1:
        return flags
    import torch

    values = torch.tensor([float(flag) for flag in flags], device=world.device)
    sum_over_processes(values, world)
    return tuple(bool(v > 0) for v in values.tolist())


def checkpoint(run: Training, progress: Progress) -> None:
    """Score the validation text, save the step (main process), let the watcher look; every process waits for it."""
    import torch

    p = progress
    p.saved_at = p.step
    p.perplexity = validation_perplexity(run.valid, run.objective, run.config, run.world, run.precision)
    if run.world.main:
        state = {
            "step": p.step,
            "tokens": p.tokens,
            "optimizer": run.optimizer.state_dict(),
            "sequences_done": p.step * run.global_batch,  # the data position: the next step starts here
            "world_size": run.world.size,
            "torch_rng": torch.get_rng_state(),
            "elapsed_seconds": time.perf_counter() - p.started,
            "trained_seconds": p.seconds_before + time.perf_counter() - p.started,  # over all invocations
            "config": run.config.outcome_fields(),
        }
        write_checkpoint(run.out, run.model, run.tokenizer_dir, state, run.config.keep_checkpoints)
        if run.watcher is not None:
            run.watcher.record(run.model, step=p.step, tokens=p.tokens, loss=p.last_loss, perplexity=p.perplexity)
        p.kept = [folder.name for _, folder in checkpoints(run.out)]
    barrier(run.world)


def _log(run: Training, p: Progress, lr: float, elapsed: float) -> None:
    """Close the log interval: its mean loss, and (main process) a line of training/log.jsonl."""
    p.last_loss = sum(p.window) / len(p.window)
    p.window = []
    if run.world.main:
        record = {
            "step": p.step,
            "loss": p.last_loss,
            "lr": lr,
            "tokens": p.tokens,
            "tokens_per_second": p.run_tokens / elapsed,
            "elapsed": elapsed,
        }
        with run.log_file.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(record) + "\n")


def _step_seed(seed: int, step: int, rank: int) -> int:
    return ((seed * 1_000_003 + step) * 1_009 + rank) % (2**63)


def _bar(config: PretrainConfig, world: World, step: int, end: int) -> Bar | None:
    """A progress bar on standard error (main process, with `progress` on), else None."""
    if not config.progress or not world.main:
        return None
    # smoothing 0: the time left from the average step rate since the start, the checkpoints' pauses included
    return progress_bar(end, initial=step, desc="pretrain", unit="step", show=True, smoothing=0)
