"""What a pre-training run is: a typed, commented dataclass, saved beside the run as JSON and read back on resume.

Presets follow Google's BERT miniatures (Turc et al., 2019): hidden size H, H/64 attention heads, a 4H feed-forward
layer. Every field can be overridden after choosing a preset (`PretrainConfig.preset_config("tiny", max_steps=2000)`).
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.errors import InputError
from ..core.options import EMBEDDING_MODES, SCHEDULES, TRAIN_PRECISIONS, EmbeddingMode, Schedule, TrainPrecision
from ..core.outputs import output_path, read_small_text, replace_text, write_error

PRESETS: dict[str, dict[str, Any]] = {
    # demo: the tiny shape with the recipe that forms meaningful rows in minutes on a laptop CPU (docs/training.md,
    # "What each lever does"): a vocabulary trained on the corpus, short sequences, half the tokens predicted as whole
    # words, no dropout, a high learning rate held long enough to leave the frequency plateau, 10 checkpoints; no time
    # limit: the rows form only over the whole schedule (`--minutes` stops it sooner, saying how to continue)
    "demo": dict(
        num_hidden_layers=2,
        hidden_size=128,
        num_attention_heads=2,
        intermediate_size=512,
        vocab_size=8000,
        seq_length=64,
        mlm_probability=0.5,
        whole_word_masking=True,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
        learning_rate=4e-3,
        warmup_steps=500,
        max_steps=3500,
        checkpoint_every=350,
    ),
    "tiny": dict(num_hidden_layers=2, hidden_size=128, num_attention_heads=2, intermediate_size=512),
    "mini": dict(num_hidden_layers=4, hidden_size=256, num_attention_heads=4, intermediate_size=1024),
    "small": dict(num_hidden_layers=4, hidden_size=512, num_attention_heads=8, intermediate_size=2048),
    "base": dict(num_hidden_layers=12, hidden_size=768, num_attention_heads=12, intermediate_size=3072),
}

# Fields that steer one invocation (how long, how many threads, what is shown) without changing what the run
# computes: they may differ between an interrupted run and its resumption.
AUTO_CHECKPOINTS = 10  # checkpoint_every None: about this many checkpoints per run …
AUTO_CHECKPOINT_MOST = 1000  # … and at least every this many steps
RUN_CONTROLS = frozenset({"threads", "max_minutes", "stop_at_step", "progress", "checkpoint_every", "keep_checkpoints"})


@dataclass
class PretrainConfig:
    """Everything that decides a pre-training run. Save with `save(path)`, read with `PretrainConfig.load(path)`.

    >>> config = PretrainConfig.preset_config("tiny", max_steps=40, seed=0)
    >>> config.num_hidden_layers, config.hidden_size
    (2, 128)
    """

    # --- model shape (ignored when continuing from `init_from`, whose own config is used) ---
    preset: str = "tiny"  # the preset the shape came from (demo, tiny, mini, small, base) or "custom"
    num_hidden_layers: int = 2  # transformer layers
    hidden_size: int = 128  # width of every token vector, and of the input embedding rows
    num_attention_heads: int = 2  # must divide hidden_size
    intermediate_size: int = 512  # feed-forward width inside each layer
    max_position_embeddings: int = 512  # rows of the position table: the longest sequence the model can read
    type_vocab_size: int = 2  # token-type (segment) rows: 2 so that next-sentence pairs can train both
    hidden_dropout_prob: float = 0.1  # dropout after embeddings, attention output and feed-forward
    attention_probs_dropout_prob: float = 0.1  # dropout on attention weights
    tie_word_embeddings: bool = True  # the MLM decoder shares the input rows (word_embeddings), as in BERT

    # --- continuing pre-training of an existing model ---
    init_from: str | None = None  # a model directory or id (bertlens.load_model resolves it); None: from scratch
    embeddings: EmbeddingMode = "trainable"  # word_embeddings trainable, frozen, or only rows >= new_rows_from
    new_rows_from: int | None = None  # first id of the rows that "new-rows" trains (e.g. the old vocabulary size)

    # --- data ---
    seq_length: int = 128  # tokens per packed sequence, [CLS] and [SEP] included; no padding is ever added
    mlm_probability: float = 0.15  # share of (non-special) tokens chosen for prediction
    mask_ratio: float = 0.8  # of the chosen: replaced by [MASK]
    random_ratio: float = 0.1  # of the chosen: replaced by a random token (the rest stay unchanged)
    next_sentence: bool = False  # add next-sentence prediction: sequences become [CLS] A [SEP] B [SEP] pairs
    whole_word_masking: bool = False  # choose whole words for prediction (a word's ## pieces with it)
    vocab_size: int = 8000  # pieces of the WordPiece vocabulary a new run trains on its corpus when given no tokenizer
    validation_tokens: int = 65536  # at most this many tokens of the validation text are scored (fixed masks)

    # --- optimisation ---
    batch_size: int = 32  # sequences per step and process (under torchrun the global batch is this x processes)
    max_steps: int = 10000  # steps of the learning-rate schedule (the run ends here unless stopped earlier)
    learning_rate: float = 5e-4  # peak learning rate of AdamW
    schedule: Schedule = "linear"  # linear warm-up then linear decay to 0 at max_steps, or warm-up then constant
    warmup_steps: int = 500  # linear warm-up from 0 to learning_rate
    weight_decay: float = 0.01  # AdamW decoupled weight decay (not on biases, LayerNorm weights, embedding tables)
    adam_beta1: float = 0.9
    adam_beta2: float = 0.98
    adam_epsilon: float = 1e-6
    max_grad_norm: float = 1.0  # gradient clipping; 0 disables it
    seed: int = 0  # initial weights, data order, masks and dropout all follow from it
    precision: TrainPrecision = "auto"  # auto: bfloat16 autocast on a CUDA GPU that has it, float32 on the CPU

    # --- checkpoints, evaluation, watching ---
    # steps between checkpoints (each also runs validation and the watcher). None (auto): about 10 per run, every
    # ceil(last step / 10) steps but at least every 1000 (the last step: stop_at_step or max_steps), and with a time
    # limit also whenever a tenth of max_minutes has passed since the last checkpoint; a run always ends on one.
    checkpoint_every: int | None = None
    keep_checkpoints: int = 2  # newest checkpoints kept with optimizer state (older ones are removed)
    log_every: int = 10  # steps between lines of training/log.jsonl
    watch: bool = True  # record neighbours, benchmark scores and norms of the input matrix at every checkpoint
    probe_words: tuple[str, ...] = (
        "king",
        "queen",
        "man",
        "woman",
        "city",
        "river",
        "music",
        "war",
        "france",
        "germany",
        "one",
        "two",
        "red",
        "blue",
        "good",
        "bad",
    )  # words whose neighbours and rows are followed
    watch_benchmarks: tuple[str, ...] = ("wordsim353", "men", "rg65", "mturk771", "simverb3500")  # word-pair sets

    # --- this invocation only (see RUN_CONTROLS: may change on resume) ---
    threads: int | None = None  # torch CPU threads for this run (restored afterwards); None leaves torch's choice
    # stop (with a checkpoint) when the run has trained this long, counted over all its invocations: a resumed run
    # gets what is left of it (a resume may set a new limit for the whole run, or none)
    max_minutes: float | None = None
    stop_at_step: int | None = None  # pause (with a checkpoint) at this step; a resume goes on to max_steps
    progress: bool = True  # a progress bar on standard error with loss and tokens/s

    extra: dict[str, Any] = field(default_factory=dict)  # free-form notes saved with the config

    @classmethod
    def preset_config(cls, name: str, **overrides: Any) -> PretrainConfig:
        """The preset's shape with any field overridden."""
        if name not in PRESETS:
            raise InputError(f"Unknown preset {name!r}.", f"Choose one of: {', '.join(PRESETS)}.")
        return cls(preset=name, **{**PRESETS[name], **overrides})

    def to_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["probe_words"] = list(self.probe_words)
        data["watch_benchmarks"] = list(self.watch_benchmarks)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PretrainConfig:
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise InputError(
                f"Unknown pre-training config field(s): {', '.join(unknown)}.",
                f"Known fields: {', '.join(sorted(known))}.",
            )
        values = dict(data)
        for name in ("probe_words", "watch_benchmarks"):
            if isinstance(values.get(name), list):  # JSON has lists; a string stays a string (and is refused)
                values[name] = tuple(values[name])
        return cls(**values)

    def save(self, path: str | os.PathLike[str], *, overwrite: bool = True) -> None:
        """Write as indented JSON (staged beside the target, then renamed); `overwrite=False` keeps an existing file."""
        target = output_path(path, "config")
        if target.is_dir():
            raise InputError(f"{target} is a folder.", "Give a file name, e.g. pretrain_config.json.")
        if not overwrite and (target.exists() or target.is_symlink()):
            raise InputError(
                f"{target} exists; it was left as it is.",
                "Choose another name, or pass {overwrite}.",
                arguments={"overwrite": True},
            )
        self.write(target)

    def write(self, target: Path) -> None:
        """Write as indented JSON into `target`, a place already checked (a run's own training/ folder, or `save`'s)."""
        try:
            replace_text(target, json.dumps(self.to_dict(), indent=2) + "\n")
        except OSError as exc:
            raise write_error(target, exc, "the config") from None

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> PretrainConfig:
        """Read a config saved with `save` (a JSON object of at most 1 MB)."""
        hint = "Give a JSON file written by PretrainConfig.save or `bertlens pretrain --save-config`."
        text = read_small_text(path, "pre-training config", hint=hint)
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise InputError(f"The pre-training config {path} is not valid JSON: {exc}.", hint) from None
        if not isinstance(data, dict):
            raise InputError(f"{path} does not hold a JSON object.", hint)
        return cls.from_dict(data)

    def outcome_fields(self) -> dict[str, Any]:
        """The fields that decide the numbers a run computes (all but RUN_CONTROLS): equal for a valid resume."""
        return {k: v for k, v in self.to_dict().items() if k not in RUN_CONTROLS}

    @property
    def last_step(self) -> int:
        """The step this invocation trains to: stop_at_step, or max_steps."""
        return min(self.max_steps, self.stop_at_step or self.max_steps)

    @property
    def checkpoint_interval(self) -> int:
        """Steps between checkpoints: checkpoint_every, or (auto) ceil(last_step / 10), at most AUTO_CHECKPOINT_MOST."""
        if self.checkpoint_every is not None:
            return self.checkpoint_every
        return max(1, min(AUTO_CHECKPOINT_MOST, math.ceil(self.last_step / AUTO_CHECKPOINTS)))

    @property
    def checkpoint_seconds(self) -> float | None:
        """With auto checkpoints and a time limit: a checkpoint at least every tenth of the limit (else None)."""
        if self.checkpoint_every is not None or self.max_minutes is None:
            return None
        return 60 * self.max_minutes / AUTO_CHECKPOINTS

    def __post_init__(self) -> None:
        self.check()

    def check(self) -> None:
        """Raise InputError for values no run can use (wrong types, out of range, NaN, inconsistent)."""
        _check_types(self)
        if self.hidden_size % self.num_attention_heads:
            raise InputError(
                f"hidden_size {self.hidden_size} is not a multiple of num_attention_heads {self.num_attention_heads}.",
                "Choose heads that divide the hidden size (the presets use hidden_size / 64).",
            )
        least = 5 if self.next_sentence else 3
        if self.seq_length < least:
            raise InputError(
                f"seq_length {self.seq_length} is too short: a sequence needs [CLS], [SEP] and some text.",
                f"Use at least {least} (128 is usual).",
            )
        if self.init_from is None and self.seq_length > self.max_position_embeddings:
            raise InputError(
                f"seq_length {self.seq_length} is longer than the position table "
                f"({self.max_position_embeddings} rows).",
                "Lower seq_length or raise max_position_embeddings.",
            )
        if self.next_sentence and self.type_vocab_size < 2:
            raise InputError("next_sentence needs type_vocab_size >= 2 (segments A and B).", "Set type_vocab_size 2.")
        if self.mask_ratio + self.random_ratio > 1:
            raise InputError(
                f"mask_ratio and random_ratio add up to {self.mask_ratio + self.random_ratio}, more than 1.",
                "BERT uses 0.8 and 0.1 (the remaining 0.1 of the chosen tokens stay unchanged).",
            )
        choices = {"schedule": SCHEDULES, "precision": TRAIN_PRECISIONS, "embeddings": EMBEDDING_MODES}
        for name, allowed in choices.items():
            if getattr(self, name) not in allowed:
                raise InputError(f"Unknown {name} {getattr(self, name)!r}.", f"Choose one of: {', '.join(allowed)}.")
        if self.embeddings == "new-rows" and self.new_rows_from is None:
            raise InputError(
                "embeddings 'new-rows' needs new_rows_from: the first id of the rows to train.",
                "For a vocabulary extended from 30522 tokens, new_rows_from=30522.",
            )
        if self.embeddings != "trainable" and self.init_from is None:
            raise InputError(
                f"embeddings {self.embeddings!r} only makes sense when continuing a model (init_from).",
                "From scratch, the embeddings must be trained: use embeddings 'trainable'.",
            )


_HUGE = 1 << 40
# Whole-number fields: (least, most, a usual value for the hint). The upper bounds only catch typos and overflows.
_WHOLE: dict[str, tuple[int, int, str]] = {
    "num_hidden_layers": (1, 1000, "2 to 12"),
    "hidden_size": (1, 1 << 16, "128 to 768"),
    "num_attention_heads": (1, 1 << 12, "hidden_size / 64"),
    "intermediate_size": (1, 1 << 18, "4 x hidden_size"),
    "max_position_embeddings": (1, 1 << 20, "512"),
    "type_vocab_size": (1, 1 << 10, "2"),
    "seq_length": (1, 1 << 20, "128"),
    "validation_tokens": (1, _HUGE, "65536"),
    "vocab_size": (8, 1 << 20, "8000 for a small corpus, 30522 for a large one"),
    "batch_size": (1, 1 << 20, "32"),
    "max_steps": (1, _HUGE, "10000"),
    "warmup_steps": (0, _HUGE, "500, or 0 for none"),
    "seed": (0, 2**63 - 1, "0"),
    "checkpoint_every": (1, _HUGE, "500, or leave it out for about 10 per run"),  # may be None
    "keep_checkpoints": (1, 1 << 20, "2"),
    "log_every": (1, _HUGE, "10"),
    "new_rows_from": (0, _HUGE, "the old vocabulary size"),  # may be None
    "threads": (1, 1 << 12, "the number of CPU cores"),  # may be None
    "stop_at_step": (1, _HUGE, "a step before max_steps"),  # may be None
}
# Real-number fields: (least, most, least included, most included, a usual value). NaN and infinities never pass.
_REAL: dict[str, tuple[float, float, bool, bool, str]] = {
    "hidden_dropout_prob": (0.0, 1.0, True, False, "0.1"),
    "attention_probs_dropout_prob": (0.0, 1.0, True, False, "0.1"),
    "mlm_probability": (0.0, 1.0, False, False, "0.15"),
    "mask_ratio": (0.0, 1.0, True, True, "0.8"),
    "random_ratio": (0.0, 1.0, True, True, "0.1"),
    "learning_rate": (0.0, math.inf, False, False, "5e-4"),
    "weight_decay": (0.0, math.inf, True, False, "0.01"),
    "adam_beta1": (0.0, 1.0, True, False, "0.9"),
    "adam_beta2": (0.0, 1.0, True, False, "0.98"),
    "adam_epsilon": (0.0, math.inf, False, False, "1e-6"),
    "max_grad_norm": (0.0, math.inf, True, False, "1.0, or 0 for no clipping"),
    "max_minutes": (0.0, math.inf, False, False, "60 (minutes)"),  # may be None
}
_OPTIONAL = frozenset({"new_rows_from", "threads", "stop_at_step", "max_minutes", "init_from", "checkpoint_every"})
_FLAGS = ("next_sentence", "watch", "progress", "tie_word_embeddings", "whole_word_masking")


class FieldError(InputError):
    """A config field's value is of the wrong type or out of range; `field` names it (the CLI adds its flag)."""

    def __init__(self, field: str, message: str, hint: str) -> None:
        super().__init__(message, hint)
        self.field = field


def _span(least: float, most: float, with_least: bool, with_most: bool) -> str:
    """A range in words: 'greater than 0', 'from 0 to 1', 'from 0 up to but not including 1', …"""
    if math.isinf(most):
        return f"{least:g} or more" if with_least else f"greater than {least:g}"
    if with_least and with_most:
        return f"from {least:g} to {most:g}"
    if with_least:
        return f"from {least:g} up to but not including {most:g}"
    return f"between {least:g} and {most:g}, both excluded"


def _check_types(config: PretrainConfig) -> None:
    """Every field has its type and lies in its range (bool is not taken for a number)."""
    for name, (least, most, usual) in _WHOLE.items():
        value = getattr(config, name)
        if value is None and name in _OPTIONAL:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or not least <= value <= most:
            message = f"{name} must be a whole number from {least} to {most:,}, got {value!r}."
            raise FieldError(name, message, f"Usual: {usual}.")
    for name, (low, high, with_low, with_high, usual) in _REAL.items():
        value = getattr(config, name)
        if value is None and name in _OPTIONAL:
            continue
        number = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
        above = number and (value >= low if with_low else value > low)
        below = number and (value <= high if with_high else value < high)
        if not (above and below):
            message = f"{name} must be a number {_span(low, high, with_low, with_high)}, got {value!r}."
            raise FieldError(name, message, f"Usual: {usual}.")
    for name in _FLAGS:
        if not isinstance(getattr(config, name), bool):
            raise InputError(f"{name} must be true or false, got {getattr(config, name)!r}.", "Example: false.")
    for name in ("preset", "schedule", "precision", "embeddings"):
        if not isinstance(getattr(config, name), str):
            raise InputError(f"{name} must be a name, got {getattr(config, name)!r}.", "See PretrainConfig's fields.")
    if config.init_from is not None and (not isinstance(config.init_from, str) or not config.init_from.strip()):
        raise InputError(f"init_from must be a model folder or id, got {config.init_from!r}.", "Example: bert-base.")
    for name in ("probe_words", "watch_benchmarks"):
        value = getattr(config, name)
        if not isinstance(value, tuple) or not all(isinstance(v, str) and v.strip() for v in value):
            raise InputError(f"{name} must be a list of words, got {value!r}.", 'Example: ["king", "queen"].')
    if not isinstance(config.extra, dict):
        raise InputError(f"extra must be a JSON object, got {config.extra!r}.", "Example: {}.")
