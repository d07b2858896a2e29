"""Commands that train: train-tokenizer, pretrain, watch."""

from __future__ import annotations

import argparse
import dataclasses
import math
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from ..core.options import (
    MAX_TEXTS_OPTION,
    OUT_OPTION,
    OVERWRITE_OPTION,
    PRESET_NAMES,
    RESUME_OPTION,
    SEED_OPTION,
    THREADS_OPTION,
    TRAIN_PRECISION_OPTION,
    VOCAB_SIZE_OPTION,
    Option,
)
from .common import Commands, FlagParser, add_option, add_progress, only_with, show_progress

if TYPE_CHECKING:
    from ..training.config import PretrainConfig
    from ..training.pretrain_results import PretrainResult
    from ..training.tokenizer_training import TokenizerResult
    from ..training.watch import WatchReport

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
    ("schedule", Option("schedule", "linear (decay to 0 at --max-steps) or constant")),
    ("weight_decay", Option("weight_decay", "AdamW weight decay (default 0.01)", kind=float)),
    ("hidden_dropout_prob", Option("dropout", "hidden dropout (default 0.1)", kind=float)),
    ("attention_probs_dropout_prob", Option("attention_dropout", "attention dropout (default 0.1)", kind=float)),
    ("mlm_probability", Option("mlm_probability", "share of tokens predicted (default 0.15)", kind=float)),
    (
        "vocab_size",
        VOCAB_SIZE_OPTION.but(
            help="without --tokenizer: pieces of the WordPiece vocabulary the run trains on its corpus (default 8000)",
            cli_unset=True,
        ),
    ),
    ("seed", SEED_OPTION.but(help="seed of weights, data order, masks and dropout (default 0)")),
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
    ("embeddings", Option("embeddings", "when continuing: word_embeddings trainable, frozen or new-rows")),
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


def register(commands: Commands, common: FlagParser) -> None:
    """Add the training commands."""
    _add_train_tokenizer(commands, common)
    _add_pretrain(commands, common)
    _add_watch(commands, common)


def _add_train_tokenizer(commands: Commands, common: FlagParser) -> None:
    """`train-tokenizer CORPUS --out DIR`: a WordPiece vocabulary."""
    cmd = commands.add_parser(
        "train-tokenizer", parents=[common], help="train a WordPiece vocabulary on a corpus (Hugging Face layout)"
    )
    cmd.add_argument("corpus", help="a text file or folder (plain text, or WikiExtractor <doc> files)")
    add_option(cmd, OUT_OPTION, required=True, help="the folder to write tokenizer.json, vocab.txt into")
    add_option(cmd, VOCAB_SIZE_OPTION)
    cmd.add_argument("--cased", action="store_true", help="keep case and accents (default: lower-case, as uncased)")
    cmd.add_argument(
        "--special-tokens", nargs="+", metavar="TOKEN", help="special tokens (default [PAD] [UNK] [CLS] [SEP] [MASK])"
    )
    cmd.add_argument("--min-frequency", type=int, default=2, help="occurrences a merge needs (default 2)")
    cmd.add_argument("--limit-alphabet", type=int, default=1000, help="characters kept (default 1000)")
    add_option(cmd, MAX_TEXTS_OPTION)
    add_option(cmd, OVERWRITE_OPTION, help="replace tokenizer files already in --out")
    cmd.set_defaults(run=_run_train_tokenizer)


def _add_pretrain(commands: Commands, common: FlagParser) -> None:
    """`pretrain CORPUS --out RUN`: a masked-LM run, its model's shape and recipe from a preset, a file or flags."""
    cmd = commands.add_parser(
        "pretrain", parents=[common], help="pre-train a BERT with masked-LM (from scratch or continued), watched"
    )
    cmd.add_argument(
        "corpus",
        nargs="?",
        help="a text file or folder (plain text, or WikiExtractor <doc> files); with --resume default: the run's own",
    )
    add_option(cmd, OUT_OPTION, required=True, help="the run folder (the model is written there)")
    cmd.add_argument(
        "--tokenizer",
        help="the folder train-tokenizer wrote (default: the run trains a --vocab-size vocabulary on the corpus; "
        "not used with --init-from)",
    )
    cmd.add_argument(
        "--preset",
        choices=PRESET_NAMES,
        help="model shape and recipe (default tiny; demo: a tiny BERT whose rows visibly form in minutes)",
    )
    cmd.add_argument("--config", help="a PretrainConfig JSON file to start from (options below override it)")
    cmd.add_argument(
        "--validation",
        help="held-out text whose perplexity is measured at every checkpoint (with --resume default: the run's own)",
    )
    cmd.add_argument("--next-sentence", action="store_true", default=None, help="add next-sentence prediction")
    cmd.add_argument(
        "--whole-word-masking",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="predict whole words (a word's ## pieces with it; the demo preset does, the others not)",
    )
    cmd.add_argument(
        "--untied", action="store_true", default=None, help="the MLM decoder gets its own rows (default: tied, as BERT)"
    )
    add_option(
        cmd,
        RESUME_OPTION,
        help="continue the run in --out from its newest checkpoint with every option of that run (corpus, "
        "validation, time limit, steps, ...); options given again replace the run's and are named on stderr",
    )
    cmd.add_argument("--no-time-limit", action="store_true", help="with --resume: drop the run's time limit")
    add_option(
        cmd,
        OVERWRITE_OPTION,
        help="start again from scratch a run an earlier pretrain left in --out (removing it); replace --save-config",
    )
    add_option(cmd, MAX_TEXTS_OPTION)
    cmd.add_argument("--probe", nargs="+", metavar="WORD", help="probe words the watcher follows")
    cmd.add_argument("--benchmarks", nargs="+", metavar="NAME", help="word-pair benchmarks the watcher scores")
    cmd.add_argument("--no-watch", action="store_true", help="do not record the embeddings at checkpoints")
    cmd.add_argument("--no-report", action="store_true", help="do not write report.html at the end")
    add_progress(cmd, help="no progress bar on standard error")
    cmd.add_argument("--save-config", metavar="FILE", help="also write the effective config to FILE")
    for _, option in _CONFIG_OPTIONS:
        add_option(cmd, option, unset=True)
    cmd.add_argument("--layers", dest="old_layers", nargs="*", help=argparse.SUPPRESS)  # refused: --num-layers
    cmd.set_defaults(run=_run_pretrain)


def _add_watch(commands: Commands, common: FlagParser) -> None:
    """`watch RUN`: a run's report (and a word2vec baseline beside it)."""
    cmd = commands.add_parser(
        "watch", parents=[common], help="the report of a pre-training run: embeddings over checkpoints, vs word2vec"
    )
    cmd.add_argument("run_dir", metavar="RUN", help="the folder of a pretrain run")
    add_option(cmd, OUT_OPTION, help="where report.html and report.json go (default: the run folder)")
    cmd.add_argument("--word2vec", metavar="CORPUS", help="also train word2vec on CORPUS for the same wall-clock time")
    cmd.add_argument(
        "--word2vec-minutes", type=float, help="with --word2vec: its budget (default: the run's training time)"
    )
    add_option(cmd, THREADS_OPTION, help="with --word2vec: its worker threads (default 1)")
    add_option(cmd, MAX_TEXTS_OPTION, when="with --word2vec")
    add_option(cmd, OVERWRITE_OPTION, help="replace report files already in --out")
    add_progress(cmd)  # word2vec's bar over its time budget
    cmd.set_defaults(run=_run_watch)


def _run_train_tokenizer(args: argparse.Namespace) -> TokenizerResult:
    from ..training.tokenizer_training import BERT_SPECIAL_TOKENS, TokenizerConfig, train_tokenizer

    config = TokenizerConfig(
        vocab_size=args.vocab_size,
        lowercase=not args.cased,
        special_tokens=tuple(args.special_tokens or BERT_SPECIAL_TOKENS),
        min_frequency=args.min_frequency,
        limit_alphabet=args.limit_alphabet,
        max_texts=args.max_texts,
    )
    return train_tokenizer(args.corpus, args.out, config, overwrite=args.overwrite)


def pretrain_config(args: argparse.Namespace) -> PretrainConfig:
    """The PretrainConfig of a `pretrain` command line: the run's own (on --resume), a file, or a preset; then flags."""

    from ..core.errors import InputError
    from ..core.outputs import output_path
    from ..training.checkpoints import CONFIG_FILE
    from ..training.config import PRESETS, FieldError, PretrainConfig
    from ..training.resume import resumed_config

    if args.old_layers is not None:
        given = " ".join(args.old_layers) or "N"
        raise InputError(
            "pretrain --layers is now --num-layers: the model's depth (how many transformer layers).",
            f"Give --num-layers {given} instead of --layers {given}.",
        )
    run = output_path(args.out, "run", run=True)
    if args.resume and (run / "training" / CONFIG_FILE).is_file():
        values = resumed_config(run, {}).to_dict()  # the run's own, without its pause (stop_at_step)
        if args.config is not None:
            values.update(PretrainConfig.load(args.config).to_dict())
    elif args.config is not None:
        values = PretrainConfig.load(args.config).to_dict()
    else:
        values = PretrainConfig.preset_config(args.preset or "tiny").to_dict()
    if args.preset is not None and (args.config is not None or args.resume):
        values.update(preset=args.preset, **PRESETS[args.preset])
    for field, option in _CONFIG_OPTIONS:
        given = getattr(args, option.name)
        if given is not None:
            values[field] = given
    if args.next_sentence:
        values["next_sentence"] = True
    if args.whole_word_masking is not None:
        values["whole_word_masking"] = args.whole_word_masking
    if args.untied:
        values["tie_word_embeddings"] = False
    if args.probe:
        values["probe_words"] = args.probe
    if args.benchmarks:
        values["watch_benchmarks"] = args.benchmarks
    if args.no_watch:
        values["watch"] = False
    if args.no_time_limit:
        if not args.resume or args.minutes is not None:
            raise InputError(
                "--no-time-limit drops a resumed run's time limit: it goes with --resume, without --minutes.",
                "Leave out --no-time-limit (a new run has no limit unless --minutes is given).",
            )
        values["max_minutes"] = None
    values["progress"] = show_progress(args)  # a terminal's standard error only, as every command
    if args.init_from is not None and Path(args.init_from).expanduser().exists():  # a folder: kept absolute, so the
        values["init_from"] = str(Path(args.init_from).expanduser().resolve())  # watch finds it from anywhere
    if values.get("init_from") is not None and args.tokenizer is not None:
        raise InputError("--tokenizer and --init-from cannot be used together.", "A continued model keeps its own.")
    try:
        return PretrainConfig.from_dict(values)
    except FieldError as exc:  # say it with the option the user typed
        typed = next((option for field, option in _CONFIG_OPTIONS if field == exc.field), None)
        if typed is None or getattr(args, typed.name) is None:
            raise
        raise InputError(f"{typed.flags[0]}: {exc.message}", exc.hint) from None


def _run_pretrain(args: argparse.Namespace) -> PretrainResult:
    from ..core.extras import require
    from ..training.pretrain import pretrain
    from ..training.watch import watch_report

    config = pretrain_config(args)
    if config.watch and not args.no_report:  # the report is drawn at the end: refused now, not after the training
        require("matplotlib", extra="train")
    if args.save_config is not None:
        _check_save_config(args.save_config, args.overwrite)
    if args.resume:
        _say_overrides(args, config)
    result = pretrain(
        config,
        args.corpus,
        args.out,
        tokenizer=args.tokenizer,
        validation=args.validation,
        resume=args.resume,
        overwrite=args.overwrite,
        max_texts=args.max_texts,
    )
    if args.save_config is not None:  # once the run has started well: a refused run leaves no file behind
        config.save(args.save_config, overwrite=args.overwrite)
    if config.watch and not args.no_report and result.processes == 1:
        result = dataclasses.replace(result, watch=watch_report(args.out).to_dict())
    if result.stopped_early is not None and args.json:  # the table says it itself; JSON's reader may not look
        print("pretrain: " + "\n".join(result.stopped_early.lines()), file=sys.stderr)
    return result


def _say_overrides(args: argparse.Namespace, config: PretrainConfig) -> None:
    """On --resume, one line on standard error for each option of the run that this command line changes."""
    from ..core.outputs import output_path
    from ..training.resume import resume_notes, resumed_inputs, saved_config

    run = output_path(args.out, "run", run=True)
    if saved_config(run) is None:
        return  # pretrain says what is wrong with the folder
    inputs = resumed_inputs(run, args.corpus, args.validation, args.tokenizer, args.max_texts)
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


def _run_watch(args: argparse.Namespace) -> WatchReport:
    from ..core.errors import InputError
    from ..core.outputs import output_path
    from ..training.baseline import save_word2vec_baseline, word2vec_baseline
    from ..training.checkpoints import load_config_from_run
    from ..training.watch import training_seconds, watch_report

    if args.word2vec is None:
        only_with(args, ["--word2vec-minutes", "--threads", "--max-texts"], "with --word2vec CORPUS")
    minutes = args.word2vec_minutes
    if minutes is not None and not (math.isfinite(minutes) and minutes > 0):
        raise InputError(
            f"--word2vec-minutes must be a positive number of minutes, got {minutes}.",
            "Example: --word2vec-minutes 5 (or leave it out to match the run's training time).",
        )
    if args.word2vec is not None:
        place = ("report", args.out) if args.out is not None else ("run", args.run_dir)
        output_path(place[1], place[0], run=True)  # a place bertlens never writes is refused before word2vec runs
        config = load_config_from_run(args.run_dir)
        seconds = 60 * minutes if minutes is not None else training_seconds(args.run_dir)
        if seconds <= 0:
            raise InputError(
                f"{args.run_dir} has no logged training time for word2vec to match.",
                "Give the budget yourself: --word2vec-minutes 5.",
            )
        baseline = word2vec_baseline(
            args.word2vec,
            seconds,
            benchmarks=config.watch_benchmarks,
            vector_size=config.hidden_size,
            threads=1 if args.threads is None else args.threads,
            max_texts=args.max_texts,
            seed=config.seed,
            progress=show_progress(args),
        )
        save_word2vec_baseline(baseline, args.run_dir)
    return watch_report(args.run_dir, args.out, overwrite=args.overwrite)
