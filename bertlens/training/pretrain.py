"""The pre-training loop: masked-LM (and optionally next-sentence) training of a BERT, from scratch or continued.

Layout of the output folder `out` (a new or empty folder, or one an earlier `pretrain` made):

- `bertlens-run.json`: the mark of a run folder, written first; only a folder with it is resumed (`resume`) or
  started again (`overwrite`), so a model or other files that happen to be in a folder are never written over;
- the model itself, in Hugging Face layout (config.json, model.safetensors with the MLM head, tokenizer.json,
  vocab.txt, tokenizer_config.json), updated at every checkpoint: transformers' AutoModelForMaskedLM and every
  bertlens feature load it;
- `checkpoints/step-N/`: the model at step N plus `state.pt` (optimizer state, step, data position, RNG state,
  elapsed time), the newest `keep_checkpoints` of them;
- `training/pretrain_config.json` (the PretrainConfig), `training/log.jsonl` (loss, learning rate, tokens/s),
  `training/watch.jsonl` (what the watcher saw at each checkpoint), `training/data/` (the tokenized corpus).

Determinism: the initial weights follow from `seed`; the data of step s (which blocks, which masks) from
`(seed, sequence index)`; dropout from `(seed, step, rank)`, re-seeded at every step. So a run interrupted at any
checkpoint and resumed computes the same weights as one that never stopped (tests check this bit for bit).

Speed: sequences are packed (no padding, no attention mask), the MLM head's vocabulary projection runs only on the
chosen positions (about 15% of tokens, where `BertForMaskedLM.forward` projects every token), and on a CPU with
bfloat16 instructions (AVX512-BF16 or AMX) `precision="auto"` trains under bfloat16 autocast (measured faster here;
weights and optimizer state stay float32). Under `torchrun` the loop runs with DistributedDataParallel (gloo on CPU,
NCCL on CUDA); each process takes its slice of the global batch and the loss is normalised by the global number of
predicted tokens, so two processes with batch B compute what one process with batch 2B does.

`pretrain` reads top to bottom: config and run folder (`checkpoints`), tokenizer and model (`model`), the processes
(`distributed`), data (`data`), objective and precision (`objective`), optimizer and schedule (`optimizer`), then
the loop itself (`loop`: batch, forward, loss, backward, step, log, evaluate, checkpoint).
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..core.corpus import iter_texts
from ..core.errors import InputError
from ..core.outputs import make_folder, output_path, refuse_inside
from .checkpoints import (
    check_resumable,
    load_checkpoint,
    run_folder,
    run_folder_state,
    start_training_folder,
    truncate_jsonl,
)
from .config import PretrainConfig
from .data import PackedData, SpecialIds, TokenStream, cached_stream, continuation_pieces
from .distributed import barrier, data_parallel, join_world, leave_world, torch_threads
from .early_stop import early_stop
from .loop import Progress, Training, train_loop
from .model import continued_model, freeze_embeddings, input_rows, new_model, read_tokenizer, tokenizer_folder
from .objective import choose_precision, objective_module, validation_perplexity
from .optimizer import build_optimizer
from .pretrain_results import PretrainResult as PretrainResult
from .resume import RunInputs, check_time_left, resume_notes, resumed_inputs, save_run
from .tokenizer_training import TokenizerConfig, config_json, save_tokenizer, trained_tokenizer

if TYPE_CHECKING:
    import torch
    from tokenizers import Tokenizer

    from .distributed import World
    from .model import Bert
    from .watch import Watcher


def pretrain(
    config: PretrainConfig,
    corpus: str | os.PathLike[str] | None,
    out: str | os.PathLike[str],
    *,
    tokenizer: str | os.PathLike[str] | None = None,
    validation: str | os.PathLike[str] | None = None,
    resume: bool = False,
    overwrite: bool = False,
    max_texts: int | None = None,
) -> PretrainResult:
    """Pre-train (or continue pre-training) a BERT on `corpus` into the folder `out` (see the module docstring).

    `tokenizer` is the folder `train_tokenizer` wrote (not needed with `config.init_from`, nor on resume, when the
    run's own copy is used); `validation` a held-out text file or folder whose masked-LM perplexity is measured at
    every checkpoint; `resume` continues from the newest checkpoint in `out` (its config and number of processes
    must match; `corpus`, `validation` and `max_texts` left None are the run's own, and `result.notes` names every
    option that differs from the run's; `config.max_minutes` limits the whole run's training time, so a resumed run
    gets what is left of it; `training.resume.resumed_config` gives the run's own config); `overwrite` starts again
    a run that an earlier `pretrain` left in `out` (removing it); `max_texts` reads only the first texts of the corpus.
    `out` must be a new or empty folder otherwise, never the model or tokenizer it reads (nor inside them).
    A new run that fails before its first checkpoint leaves nothing behind.

    >>> config = PretrainConfig.preset_config("tiny", max_steps=40)
    >>> result = pretrain(config, "sample", "tiny-bert/", tokenizer="tok/")  # doctest: +SKIP
    >>> result.step, result.loss  # doctest: +SKIP
    """
    import torch

    if not isinstance(config, PretrainConfig):
        raise InputError(f"config must be a PretrainConfig, got {type(config).__name__}.", "PretrainConfig()")
    config.check()
    target = output_path(out, "run", run=True)  # a run folder itself may be resumed or started again
    found, inputs, notes = _run_inputs(config, target, corpus, validation, tokenizer, max_texts, resume, overwrite)
    model, backend, tokenizer_dir, tokenizer_config = _tokenizer_and_model(config, target, inputs, tokenizer, found)
    vocab_rows = input_rows(model) if model is not None else None
    special = SpecialIds.from_tokenizer(backend, vocab_rows or backend.get_vocab_size(with_added_tokens=True))
    if model is None:
        model = new_model(config, special)

    world = join_world()
    finished = False
    try:
        with (
            run_folder(target, found, bool(overwrite), world),
            torch_threads(config.threads),
            torch.random.fork_rng(devices=[]),
        ):
            run, progress = _training(
                config, world, target, model, backend, special, inputs, tokenizer_dir, tokenizer_config, found
            )
            train_loop(run, progress)  # steps, logs, evaluation and checkpoints, ending on a checkpoint
            result = _result(run, progress, notes)
        finished = True
        return result
    finally:
        leave_world(world, finished)


def _training(
    config: PretrainConfig,
    world: World,
    target: Path,
    model: Bert,
    backend: Tokenizer,
    special: SpecialIds,
    inputs: RunInputs,
    tokenizer_dir: Path,
    tokenizer_config: TokenizerConfig | None,
    found: list[tuple[int, Path]],
) -> tuple[Training, Progress]:
    """What the loop drives, and where it starts: the data, the model on its device with its objective and optimizer
    (a resumed run loads its newest checkpoint), the run's inputs saved, and the watcher."""
    training_dir = target / "training"
    streams = _shared_streams(config, world, backend, inputs, training_dir, tokenizer_dir, tokenizer_config, found)
    train, valid = _packed(config, special, continuation_pieces(backend, special.vocab_size), *streams)
    precision = choose_precision(config, world.device)

    freeze_embeddings(model, config)
    model.to(world.device).train()
    objective = objective_module(model, config.next_sentence)
    optimizer = build_optimizer(model, config)
    progress = _progress(config, found, model, optimizer, world, training_dir)
    if world.main:
        save_run(training_dir, config, inputs)  # what the next resume continues from
    runner = data_parallel(objective, world)

    watcher = None
    if config.watch and world.main:
        counts = np.bincount(streams[0].ids, minlength=special.vocab_size)  # (vocab,) training-text counts
        watcher = _watcher(config, backend, training_dir, counts, found, model, objective, valid, world, precision)
    run = Training(
        config=config,
        world=world,
        model=model,
        objective=objective,
        runner=runner,
        optimizer=optimizer,
        train=train,
        valid=valid,
        precision=precision,
        out=target,
        tokenizer_dir=tokenizer_dir,
        watcher=watcher,
    )
    return run, progress


def _watcher(
    config: PretrainConfig,
    backend: Tokenizer,
    training_dir: Path,
    counts: np.ndarray,
    found: list[tuple[int, Path]],
    model: Bert,
    objective: torch.nn.Module,
    valid: PackedData | None,
    world: World,
    precision: str,
) -> Watcher:
    """The watcher of the main process; a new run records the untrained matrix as step 0."""
    from .watch import Watcher

    watcher = Watcher(config, backend, training_dir / "watch.jsonl", counts)
    if not found:
        perplexity = validation_perplexity(valid, objective, config, world, precision)
        watcher.record(model, step=0, tokens=0, loss=None, perplexity=perplexity)
    return watcher


def _run_inputs(
    config: PretrainConfig,
    target: Path,
    corpus: str | os.PathLike[str] | None,
    validation: str | os.PathLike[str] | None,
    tokenizer: str | os.PathLike[str] | None,
    max_texts: int | None,
    resume: bool,
    overwrite: bool,
) -> tuple[list[tuple[int, Path]], RunInputs, tuple[str, ...]]:
    """The checkpoints to resume from, the run's inputs, what a resume changes: every refusal before any write."""
    if config.init_from is not None and Path(config.init_from).expanduser().exists():
        refuse_inside(target, Path(config.init_from).expanduser(), "the model it continues")  # before anything else
    found = run_folder_state(target, bool(resume), bool(overwrite))
    if found:
        check_resumable(target, config)
        inputs = resumed_inputs(target, corpus, validation, tokenizer, max_texts)
        notes = resume_notes(target, config, inputs)
    elif corpus is None:
        raise InputError("No corpus given.", "Give a text file or folder to train on.")
    else:
        inputs, notes = RunInputs.of(corpus, validation, tokenizer, max_texts), ()
    for text in (inputs.corpus, inputs.validation):
        if text is not None:
            next(iter_texts(text), None)
    return found, inputs, notes


def _tokenizer_and_model(
    config: PretrainConfig,
    target: Path,
    inputs: RunInputs,
    tokenizer: str | os.PathLike[str] | None,
    found: list[tuple[int, Path]],
) -> tuple[Bert | None, Tokenizer, Path, TokenizerConfig | None]:
    """The model continued (None for a new one; on resume its weights come from the checkpoint), the tokenizer, its
    folder, and the config of the tokenizer this run trains on its corpus (None when given or continued)."""
    if config.init_from is not None:
        model, backend, tokenizer_dir = continued_model(config)
        refuse_inside(target, tokenizer_dir, "the model it continues")
        return model, backend, tokenizer_dir, None
    if tokenizer is None and not found:  # a new run given no tokenizer trains its own on the corpus
        tokenizer_config = TokenizerConfig(vocab_size=config.vocab_size, max_texts=inputs.max_texts)
        backend, _ = trained_tokenizer(inputs.corpus, tokenizer_config)
        return None, backend, target / "training" / "tokenizer", tokenizer_config
    tokenizer_dir = tokenizer_folder(target if tokenizer is None and found else tokenizer)
    if not found:
        refuse_inside(target, tokenizer_dir, "the tokenizer folder")
    return None, read_tokenizer(tokenizer_dir), tokenizer_dir, None


def _progress(
    config: PretrainConfig,
    found: list[tuple[int, Path]],
    model: Bert,
    optimizer: torch.optim.Optimizer,
    world: World,
    training_dir: Path,
) -> Progress:
    """Where the run stands: at step 0, or at the newest checkpoint (loaded, its logs cut back to its step)."""
    progress = Progress(kept=[folder.name for _, folder in found])
    if found:
        progress.resumed_from, folder = found[-1]
        progress.step, progress.tokens, progress.seconds_before = load_checkpoint(folder, model, optimizer, world)
        check_time_left(config, progress.seconds_before, progress.step)
        if world.main:
            truncate_jsonl(training_dir / "log.jsonl", progress.step)
            truncate_jsonl(training_dir / "watch.jsonl", progress.step)
    progress.saved_at = progress.step
    return progress


def _shared_streams(
    config: PretrainConfig,
    world: World,
    backend: Tokenizer,
    inputs: RunInputs,
    training_dir: Path,
    tokenizer_dir: Path,
    tokenizer_config: TokenizerConfig | None,
    found: list[tuple[int, Path]],
) -> tuple[TokenStream, TokenStream | None]:
    """The training and validation tokens: the main process tokenizes (or finds the cache), then the others read it."""
    if world.main:
        make_folder(training_dir)
        if tokenizer_config is not None:  # the tokenizer this run trained, kept with it
            make_folder(tokenizer_dir)
            save_tokenizer(backend, tokenizer_dir, config_json(tokenizer_config))
        streams = _token_streams(backend, inputs, training_dir / "data")
        if not found:
            start_training_folder(training_dir, config)
    barrier(world)
    if not world.main:
        streams = _token_streams(backend, inputs, training_dir / "data")
    return streams


def _token_streams(backend: Tokenizer, inputs: RunInputs, cache: Path) -> tuple[TokenStream, TokenStream | None]:
    """The tokenized training corpus and validation text (read from, or written to, the run's data cache)."""
    train = cached_stream(backend, inputs.corpus, cache, max_texts=inputs.max_texts)
    valid = cached_stream(backend, inputs.validation, cache) if inputs.validation is not None else None
    return train, valid


def _packed(
    config: PretrainConfig,
    special: SpecialIds,
    continuation: np.ndarray,
    train: TokenStream,
    valid: TokenStream | None,
) -> tuple[PackedData, PackedData | None]:
    """The training sequences, and at most `validation_tokens` of validation sequences (in corpus order);
    `continuation` (vocab,) marks the pieces that continue a word (used with whole-word masking)."""

    def pack(stream: TokenStream, next_sentence: bool, shuffle: bool) -> PackedData:
        whole_words = continuation if config.whole_word_masking and shuffle else None
        return PackedData(
            stream,
            special,
            config.seq_length,
            next_sentence,
            config.seed,
            mlm_probability=config.mlm_probability,
            mask_ratio=config.mask_ratio,
            random_ratio=config.random_ratio,
            shuffle=shuffle,
            continuation=whole_words,
        )

    if valid is None:
        return pack(train, config.next_sentence, True), None
    held_out = pack(valid, False, False)
    held_out.blocks = max(1, min(held_out.blocks, config.validation_tokens // config.seq_length))
    return pack(train, config.next_sentence, True), held_out


def _result(run: Training, progress: Progress, notes: tuple[str, ...]) -> PretrainResult:
    seconds = time.perf_counter() - progress.started
    return PretrainResult(
        out=str(run.out),
        step=progress.step,
        max_steps=run.config.max_steps,
        stopped=progress.stopped,
        stopped_early=early_stop(run.out, progress.stopped, progress.step, run.config.max_steps, run.world.size),
        resumed_from=progress.resumed_from,
        max_minutes=run.config.max_minutes,
        seconds_before=progress.seconds_before,
        notes=notes,
        tokens=progress.tokens,
        tokens_per_second=progress.run_tokens / seconds if seconds > 0 else 0.0,
        train_seconds=seconds,
        loss=progress.last_loss,
        validation_perplexity=progress.perplexity,
        processes=run.world.size,
        precision=run.precision,
        checkpoints=tuple(progress.kept),
    )
