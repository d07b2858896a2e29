"""Commands that train: train-tokenizer, pretrain, watch."""

from __future__ import annotations

import dataclasses
import math
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from ..core.options import (
    EMBEDDING_MODES,
    MAX_TEXTS_OPTION,
    OUT_OPTION,
    OVERWRITE_OPTION,
    PRESET_NAMES,
    PRETRAIN_SEED_OPTION,
    PRETRAIN_VOCAB_SIZE_OPTION,
    RESUME_OPTION,
    SCHEDULES,
    THREADS_OPTION,
    TRAIN_PRECISION_OPTION,
    VOCAB_SIZE_OPTION,
    WORD2VEC_THREADS_OPTION,
    Option,
)
from .common import Call, command
from .params import Many, argument, option, progress_flag

if TYPE_CHECKING:
    from ..training.config import PretrainConfig
    from ..training.pretrain_results import PretrainResult
    from ..training.tokenizer_training import TokenizerResult
    from ..training.watch import WatchReport

F = TypeVar("F", bound=Callable[..., Any])

# pretrain options that map onto PretrainConfig fields one to one: (field, option); None unless given (the config's).
_CONFIG_OPTIONS: tuple[tuple[str, Option], ...] = (
    ("num_hidden_layers", Option("num_layers", "transformer layers (the model's depth)", kind=int)),
    ("hidden_size", Option("hidden_size", "hidden size (and embedding row width)", kind=int)),
    ("num_attention_heads", Option("heads", "attention heads", kind=int)),
    ("intermediate_size", Option("intermediate_size", "feed-forward width", kind=int)),
    ("max_position_embeddings", Option("max_positions", "rows of the position table", kind=int)),
    ("seq_length", Option("seq_length", "tokens per packed sequence (default 128)", kind=int)),
    ("batch_size", Option("batch_size", "sequences per step and process (default 32)", kind=int)),
    ("max_steps", Option("max_steps", "steps of the learning-rate schedule (default 10000)", kind=int)),
    ("learning_rate", Option("lr", "peak learning rate (default 5e-4)", kind=float)),
    ("warmup_steps", Option("warmup_steps", "linear warm-up steps (default 500)", kind=int)),
    ("schedule", Option("schedule", "linear: decay to 0 at --max-steps (default)", choices=SCHEDULES)),
    ("weight_decay", Option("weight_decay", "AdamW weight decay (default 0.01)", kind=float)),
    ("hidden_dropout_prob", Option("dropout", "hidden dropout (default 0.1)", kind=float)),
    ("attention_probs_dropout_prob", Option("attention_dropout", "attention dropout (default 0.1)", kind=float)),
    ("mlm_probability", Option("mlm_probability", "share of tokens predicted (default 0.15)", kind=float)),
    ("vocab_size", PRETRAIN_VOCAB_SIZE_OPTION),
    ("seed", PRETRAIN_SEED_OPTION),
    ("precision", TRAIN_PRECISION_OPTION),
    (
        "checkpoint_every",
        Option(
            "checkpoint_every",
            "steps between checkpoints (default: about 10 per run, every ceil(steps / 10) but at least every 1000, "
            "and with --minutes also every tenth of the time limit)",
            kind=int,
        ),
    ),
    ("keep_checkpoints", Option("keep_checkpoints", "checkpoints kept (default 2)", kind=int)),
    ("log_every", Option("log_every", "steps between log lines (default 10)", kind=int)),
    ("validation_tokens", Option("validation_tokens", "validation tokens scored (default 65536)", kind=int)),
    ("init_from", Option("init_from", "continue pre-training this model (directory or id) instead of a new one")),
    (
        "embeddings",
        Option(
            "embeddings",
            "when continuing: word_embeddings trained (default), frozen or new rows only",
            choices=EMBEDDING_MODES,
        ),
    ),
    ("new_rows_from", Option("new_rows_from", "with --embeddings new-rows: first id of the rows to train", kind=int)),
    ("threads", THREADS_OPTION),
    (
        "max_minutes",
        Option(
            "minutes",
            "stop (with a checkpoint) when the run has trained this long, over all its invocations: --resume gets "
            "what is left of the run's limit; --minutes on --resume sets a new limit for the whole run",
            kind=float,
        ),
    ),
    (
        "stop_at_step",
        Option("stop_at_step", "pause (with a checkpoint) at this step; --resume goes on to max-steps", kind=int),
    ),
)


def config_flags(function: F) -> F:
    """pretrain's options that set one PretrainConfig field each (`_CONFIG_OPTIONS`): None unless given."""
    for _, declared in reversed(_CONFIG_OPTIONS):
        function = option(declared)(function)
    return function


@command("train-tokenizer", "train a WordPiece vocabulary on a corpus (Hugging Face layout)")
@argument("corpus", "a text file or folder (plain text, or WikiExtractor <doc> files)")
@option(OUT_OPTION, required=True, metavar="DIR", help="the folder to write tokenizer.json, vocab.txt into")
@option(VOCAB_SIZE_OPTION)
@click.option("--cased", is_flag=True, help="keep case and accents (default: lower-case, as uncased)")
@click.option(
    "--special-tokens", cls=Many, metavar="TOKEN", help="special tokens (default [PAD] [UNK] [CLS] [SEP] [MASK])"
)
@click.option("--min-frequency", type=int, default=2, show_default=True, help="occurrences a merge needs")
@click.option("--limit-alphabet", type=int, default=1000, show_default=True, help="characters kept")
@option(MAX_TEXTS_OPTION)
@option(OVERWRITE_OPTION, help="replace tokenizer files already in --out")
def train_tokenizer(
    call: Call,
    corpus: str,
    out: str,
    vocab_size: int,
    cased: bool,
    special_tokens: tuple[str, ...],
    min_frequency: int,
    limit_alphabet: int,
    max_texts: int | None,
    overwrite: bool,
) -> TokenizerResult:
    from ..training.tokenizer_training import BERT_SPECIAL_TOKENS, TokenizerConfig, train_tokenizer

    config = TokenizerConfig(
        vocab_size=vocab_size,
        lowercase=not cased,
        special_tokens=special_tokens or BERT_SPECIAL_TOKENS,
        min_frequency=min_frequency,
        limit_alphabet=limit_alphabet,
        max_texts=max_texts,
    )
    return train_tokenizer(corpus, out, config, overwrite=overwrite)


@command("pretrain", "pre-train a BERT with masked-LM (from scratch or continued), watched")
@argument(
    "corpus",
    "a text file or folder (plain text, or WikiExtractor <doc> files); with --resume default: the run's own",
    required=False,
)
@option(OUT_OPTION, required=True, metavar="RUN", help="the run folder (the model is written there)")
@click.option(
    "--tokenizer",
    metavar="DIR",
    help="the folder train-tokenizer wrote (default: the run trains a --vocab-size vocabulary on the corpus; not used "
    "with --init-from)",
)
@click.option(
    "--preset",
    type=click.Choice(PRESET_NAMES),
    help="model shape and recipe (default tiny; demo: a tiny BERT whose rows visibly form in minutes)",
)
@click.option("--config", metavar="FILE", help="a PretrainConfig JSON file to start from (options below override it)")
@click.option(
    "--validation",
    metavar="PATH",
    help="held-out text whose perplexity is measured at every checkpoint (with --resume default: the run's own)",
)
@click.option("--next-sentence", is_flag=True, help="add next-sentence prediction")
@click.option(
    "--whole-word-masking/--no-whole-word-masking",
    default=None,
    help="predict whole words (a word's ## pieces with it; default: the demo preset does, the others not)",
)
@click.option("--untied", is_flag=True, help="the MLM decoder gets its own rows (default: tied, as BERT)")
@option(
    RESUME_OPTION,
    help="continue the run in --out from its newest checkpoint with every option of that run (corpus, validation, "
    "time limit, steps, ...); options given again replace the run's and are named on stderr",
)
@click.option("--no-time-limit", is_flag=True, help="with --resume: drop the run's time limit")
@option(
    OVERWRITE_OPTION,
    help="start again from scratch a run an earlier pretrain left in --out (removing it); replace --save-config",
)
@option(MAX_TEXTS_OPTION)
@click.option("--probe", cls=Many, metavar="WORD", help="probe words the watcher follows")
@click.option("--benchmarks", cls=Many, metavar="NAME", help="word-pair benchmarks the watcher scores")
@click.option("--no-watch", is_flag=True, help="do not record the embeddings at checkpoints")
@click.option("--no-report", is_flag=True, help="do not write report.html at the end")
@progress_flag(help="no progress bar on standard error")
@click.option("--save-config", metavar="FILE", help="also write the effective config to FILE")
@config_flags
@click.option("--layers", "old_layers", cls=Many, is_flag=False, flag_value="N", hidden=True)  # refused: --num-layers
def pretrain(
    call: Call,
    corpus: str | None,
    out: str,
    tokenizer: str | None,
    validation: str | None,
    resume: bool,
    overwrite: bool,
    max_texts: int | None,
    no_report: bool,
    save_config: str | None,
    **settings: Any,  # the config's: `pretrain_config` reads them from the command line
) -> PretrainResult:
    from ..core.extras import require
    from ..training.pretrain import pretrain
    from ..training.watch import watch_report

    config = pretrain_config(call)
    if config.watch and not no_report:  # the report is drawn at the end: refused now, not after training
        require("matplotlib", extra="train")
    if save_config is not None:
        _check_save_config(save_config, overwrite)
    if resume:
        _say_overrides(config, out, corpus, validation, tokenizer, max_texts)
    result = pretrain(
        config,
        corpus,
        out,
        tokenizer=tokenizer,
        validation=validation,
        resume=resume,
        overwrite=overwrite,
        max_texts=max_texts,
    )
    if save_config is not None:  # once the run has started well: a refused run leaves no file behind
        config.save(save_config, overwrite=overwrite)
    if config.watch and not no_report and result.processes == 1:
        result = dataclasses.replace(result, watch=watch_report(out).to_dict())
    if result.stopped_early is not None and call.json:  # the table says it itself; JSON's reader may not look
        print("pretrain: " + "\n".join(result.stopped_early.lines()), file=sys.stderr)
    return result


def pretrain_config(call: Call) -> PretrainConfig:
    """The PretrainConfig of a `pretrain` command line: the run's own (on --resume), a file, or a preset; then flags."""
    from ..core.errors import InputError
    from ..core.outputs import output_path
    from ..training.checkpoints import CONFIG_FILE
    from ..training.config import PRESETS, FieldError, PretrainConfig
    from ..training.resume import resumed_config

    params = call.ctx.params  # every option of the command line, as click parsed it
    if params["old_layers"]:
        given = " ".join(params["old_layers"])
        raise InputError(
            "pretrain --layers is now --num-layers: the model's depth (how many transformer layers).",
            f"Give --num-layers {given} instead of --layers {given}.",
        )
    run = output_path(params["out"], "run", run=True)
    if params["resume"] and (run / "training" / CONFIG_FILE).is_file():
        values = resumed_config(run, {}).to_dict()  # the run's own, without its pause (stop_at_step)
        if params["config"] is not None:
            values.update(PretrainConfig.load(params["config"]).to_dict())
    elif params["config"] is not None:
        values = PretrainConfig.load(params["config"]).to_dict()
    else:
        values = PretrainConfig.preset_config(params["preset"] or "tiny").to_dict()
    if params["preset"] is not None and (params["config"] is not None or params["resume"]):
        values.update(preset=params["preset"], **PRESETS[params["preset"]])
    for field, declared in _CONFIG_OPTIONS:
        given = params[declared.name]
        if given is not None:
            values[field] = given
    if params["next_sentence"]:
        values["next_sentence"] = True
    if params["whole_word_masking"] is not None:
        values["whole_word_masking"] = params["whole_word_masking"]
    if params["untied"]:
        values["tie_word_embeddings"] = False
    if params["probe"]:
        values["probe_words"] = list(params["probe"])
    if params["benchmarks"]:
        values["watch_benchmarks"] = list(params["benchmarks"])
    if params["no_watch"]:
        values["watch"] = False
    if params["no_time_limit"]:
        if not params["resume"] or params["minutes"] is not None:
            raise InputError(
                "--no-time-limit drops a resumed run's time limit: it goes with --resume, without --minutes.",
                "Leave out --no-time-limit (a new run has no limit unless --minutes is given).",
            )
        values["max_minutes"] = None
    values["progress"] = call.progress  # a terminal's standard error only, as every command
    init_from = params["init_from"]
    if init_from is not None and Path(init_from).expanduser().exists():  # a folder: kept absolute, so that the
        values["init_from"] = str(Path(init_from).expanduser().resolve())  # watch finds it from anywhere
    if values.get("init_from") is not None and params["tokenizer"] is not None:
        raise InputError("--tokenizer and --init-from cannot be used together.", "A continued model keeps its own.")
    try:
        return PretrainConfig.from_dict(values)
    except FieldError as exc:  # say it with the option the user typed
        typed = next((declared for field, declared in _CONFIG_OPTIONS if field == exc.field), None)
        if typed is None or params[typed.name] is None:
            raise
        raise InputError(f"{typed.flags[0]}: {exc.message}", exc.hint) from None


def _say_overrides(
    config: PretrainConfig,
    out: str,
    corpus: str | None,
    validation: str | None,
    tokenizer: str | None,
    max_texts: int | None,
) -> None:
    """On --resume, one line on standard error for each option of the run that this command line changes."""
    from ..core.outputs import output_path
    from ..training.resume import resume_notes, resumed_inputs, saved_config

    run = output_path(out, "run", run=True)
    if saved_config(run) is None:
        return  # pretrain says what is wrong with the folder
    inputs = resumed_inputs(run, corpus, validation, tokenizer, max_texts)
    for note in resume_notes(run, config, inputs):
        print(f"pretrain --resume: {note} (given on the command line)", file=sys.stderr)


def _check_save_config(path: str, overwrite: bool) -> None:
    """Refuse a --save-config target that cannot be written (a folder, or a file without --overwrite) up front."""
    from ..core.errors import InputError
    from ..core.outputs import output_path

    target = output_path(path, "--save-config")
    if target.is_dir():
        raise InputError(f"--save-config {target} is a folder.", "Give a file name, e.g. pretrain_config.json.")
    if (target.exists() or target.is_symlink()) and not overwrite:
        raise InputError(
            f"--save-config {target} exists; it was left as it is.", "Choose another name, or --overwrite."
        )


@command("watch", "the report of a pre-training run: embeddings over checkpoints, vs word2vec")
@argument("run_dir", "the folder of a pretrain run", metavar="RUN")
@option(OUT_OPTION, metavar="DIR", help="where report.html and report.json go (default: the run folder)")
@click.option("--word2vec", metavar="CORPUS", help="also train word2vec on CORPUS for the same wall-clock time")
@click.option("--word2vec-minutes", type=float, help="with --word2vec: its budget (default: the run's training time)")
@option(WORD2VEC_THREADS_OPTION)
@option(MAX_TEXTS_OPTION, help=f"with --word2vec: {MAX_TEXTS_OPTION.help}")
@option(OVERWRITE_OPTION, help="replace report files already in --out")
@progress_flag()  # word2vec's bar over its time budget
def watch(
    call: Call,
    run_dir: str,
    out: str | None,
    word2vec: str | None,
    word2vec_minutes: float | None,
    threads: int,
    max_texts: int | None,
    overwrite: bool,
    no_progress: bool,
) -> WatchReport:
    from ..core.errors import InputError
    from ..core.outputs import output_path
    from ..training.baseline import save_word2vec_baseline, word2vec_baseline
    from ..training.checkpoints import load_config_from_run
    from ..training.watch import training_seconds, watch_report

    if word2vec is None:
        call.applies_only(["--word2vec-minutes", "--threads", "--max-texts"], "with --word2vec CORPUS")
    minutes = word2vec_minutes
    if minutes is not None and not (math.isfinite(minutes) and minutes > 0):
        raise InputError(
            f"--word2vec-minutes must be a positive number of minutes, got {minutes}.",
            "Example: --word2vec-minutes 5 (or leave it out to match the run's training time).",
        )
    if word2vec is not None:
        place = ("report", out) if out is not None else ("run", run_dir)
        output_path(place[1], place[0], run=True)  # a place bertlens never writes is refused before word2vec runs
        config = load_config_from_run(run_dir)
        seconds = 60 * minutes if minutes is not None else training_seconds(run_dir)
        if seconds <= 0:
            raise InputError(
                f"{run_dir} has no logged training time for word2vec to match.",
                "Give the budget yourself: --word2vec-minutes 5.",
            )
        baseline = word2vec_baseline(
            word2vec,
            seconds,
            benchmarks=config.watch_benchmarks,
            vector_size=config.hidden_size,
            threads=threads,
            max_texts=max_texts,
            seed=config.seed,
            progress=call.progress,
        )
        save_word2vec_baseline(baseline, run_dir)
    return watch_report(run_dir, out, overwrite=overwrite)
