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
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import stat
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.corpus import iter_texts
from ..core.errors import InputError
from ..core.outputs import (
    atomic_file,
    follow_umask,
    make_folder,
    output_path,
    refuse_inside,
    replace_text,
    staging,
    write_error,
)
from ..core.results import Result, table
from .config import PretrainConfig
from .data import Batch, PackedData, SpecialIds, cached_stream
from .tokenizer_training import TOKENIZER_FILES

STATE = "state.pt"
CONFIG_FILE = "pretrain_config.json"
RUN_MARKER = "bertlens-run.json"
_CHECKPOINT = re.compile(r"^step-(\d+)$")


@dataclass(frozen=True, repr=False)
class PretrainResult(Result):
    """What a pre-training run did and reached."""

    out: str
    step: int  # steps done in total (resumed steps included)
    max_steps: int
    stopped: str  # "finished", "time limit", "stop_at_step"
    resumed_from: int | None  # the checkpoint step this run continued from
    tokens: int  # text tokens trained on in total (no padding exists)
    tokens_per_second: float  # this invocation's training throughput (all processes together)
    train_seconds: float  # this invocation's wall-clock training time
    loss: float | None  # mean training loss over the last log interval
    validation_perplexity: float | None  # exp(masked-LM loss) on the validation text at the last checkpoint
    processes: int
    precision: str
    checkpoints: tuple[str, ...]

    def __repr__(self) -> str:
        return f"PretrainResult(step {self.step}/{self.max_steps}, {self.stopped}, at {self.out})"

    def to_table(self) -> str:
        rows = [
            ("out", self.out),
            ("steps", f"{self.step} of {self.max_steps} ({self.stopped})"),
            ("resumed from step", self.resumed_from),
            ("tokens trained", self.tokens),
            ("tokens/s", round(self.tokens_per_second, 1)),
            ("training time (s)", round(self.train_seconds, 1)),
            ("training loss", self.loss),
            ("validation perplexity", self.validation_perplexity),
            ("processes", self.processes),
            ("precision", self.precision),
            ("checkpoints kept", ", ".join(self.checkpoints)),
        ]
        return table(["", "value"], rows)


# --- distributed ----------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _World:
    rank: int
    size: int
    device: Any  # torch.device
    started_here: bool  # this call initialised the process group (and tears it down)

    @property
    def main(self) -> bool:
        return self.rank == 0


def _world() -> _World:
    """One process, or the torchrun process group (read from its environment variables, never written)."""
    import torch
    import torch.distributed as dist

    size = int(os.environ.get("WORLD_SIZE", "1"))
    cuda = torch.cuda.is_available()
    local = int(os.environ.get("LOCAL_RANK", "0"))
    device = torch.device(f"cuda:{local}" if cuda else "cpu")
    if size <= 1:
        return _World(0, 1, device, False)
    started = False
    if not dist.is_initialized():
        dist.init_process_group(backend="nccl" if cuda else "gloo")
        started = True
    if cuda:
        torch.cuda.set_device(device)
    return _World(dist.get_rank(), dist.get_world_size(), device, started)


def _barrier(world: _World) -> None:
    if world.size > 1:
        import torch.distributed as dist

        dist.barrier()


# --- model ----------------------------------------------------------------------------------------------------------


def _bert_config(config: PretrainConfig, special: SpecialIds) -> Any:
    from transformers import BertConfig

    return BertConfig(
        vocab_size=special.vocab_size,
        hidden_size=config.hidden_size,
        num_hidden_layers=config.num_hidden_layers,
        num_attention_heads=config.num_attention_heads,
        intermediate_size=config.intermediate_size,
        max_position_embeddings=config.max_position_embeddings,
        type_vocab_size=config.type_vocab_size,
        hidden_dropout_prob=config.hidden_dropout_prob,
        attention_probs_dropout_prob=config.attention_probs_dropout_prob,
        pad_token_id=special.pad,
        architectures=["BertForPreTraining" if config.next_sentence else "BertForMaskedLM"],
    )


def _new_model(config: PretrainConfig, special: SpecialIds) -> Any:
    """A freshly initialised BertForMaskedLM (BertForPreTraining with next-sentence), weights from `seed`."""
    import torch
    from transformers import BertForMaskedLM, BertForPreTraining

    bert_config = _bert_config(config, special)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(config.seed)
        try:
            return (BertForPreTraining if config.next_sentence else BertForMaskedLM)(bert_config)
        except (MemoryError, RuntimeError) as exc:  # torch says "can't allocate memory" with a RuntimeError
            if not isinstance(exc, MemoryError) and "memory" not in str(exc).lower():
                raise
            raise InputError(
                f"A model of this shape ({config.num_hidden_layers} layers x {config.hidden_size}, "
                f"{special.vocab_size} tokens) does not fit in memory.",
                "Choose a smaller preset or hidden size.",
            ) from None


def _continued_model(config: PretrainConfig) -> tuple[Any, Any, Path]:
    """The model to continue from `init_from`, with its MLM head (new, seeded, where the checkpoint has none)."""
    from ..core.loader import load_torch_model
    from ..core.model import load_model

    source = load_model(config.init_from)
    if source.family.model_type != "bert":
        raise InputError(
            f"Continuing pre-training supports BERT models; {config.init_from} is {source.family.label}.",
            "Give a BERT checkpoint (model_type bert).",
        )
    path = Path(str(source.source.path))
    positions = source.config.max_position_embeddings or 0
    if config.seq_length > positions:
        raise InputError(
            f"seq_length {config.seq_length} is longer than the model's position table ({positions} rows).",
            f"Use --seq-length {positions} or less.",
        )
    # any head the checkpoint lacks is initialised from the seed
    model = load_torch_model(path, "pretraining" if config.next_sentence else "masked-lm", seed=config.seed)
    return model, source.vocabulary.tokenizer, path


class _Objective:
    """Builds the torch module whose forward returns the loss of one batch (what DDP wraps)."""

    @staticmethod
    def module(model: Any, next_sentence: bool) -> Any:
        import torch

        class MaskedLM(torch.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.model = model

            def forward(self, input_ids: Any, token_type_ids: Any, positions: Any, labels: Any, nsp: Any) -> Any:
                """Summed MLM loss over the chosen positions (n,), and the summed NSP loss (or zero)."""
                import torch.nn.functional as F

                bert = self.model.bert
                out = bert(input_ids=input_ids, token_type_ids=token_type_ids)
                hidden = out.last_hidden_state  # (B, L, H)
                chosen = hidden.reshape(-1, hidden.shape[-1]).index_select(0, positions)  # (n, H)
                logits = self.model.cls.predictions(chosen)  # (n, V): the vocabulary projection, chosen rows only
                mlm = F.cross_entropy(logits.float(), labels, reduction="sum")
                if nsp is None:
                    return mlm, mlm.new_zeros(())
                relation = self.model.cls.seq_relationship(out.pooler_output)  # (B, 2)
                return mlm, F.cross_entropy(relation.float(), nsp, reduction="sum")

        return MaskedLM()


def _freeze(model: Any, config: PretrainConfig) -> None:
    """Apply the embeddings mode: all rows trainable, none, or only rows >= new_rows_from."""
    weight = model.bert.embeddings.word_embeddings.weight
    if config.embeddings == "frozen":
        weight.requires_grad_(False)
    elif config.embeddings == "new-rows":
        first = int(config.new_rows_from or 0)
        if first >= weight.shape[0]:
            raise InputError(
                f"new_rows_from {first} is past the last row of the embedding matrix ({weight.shape[0]} rows).",
                "Give the id of the first new row (the old vocabulary size).",
            )

        def keep_old_rows(grad: Any) -> Any:
            grad = grad.clone()
            grad[:first] = 0  # Adam moments of the old rows stay 0, so their update is exactly 0
            return grad

        weight.register_hook(keep_old_rows)


def _optimizer(model: Any, config: PretrainConfig) -> Any:
    import torch

    decay, no_decay = [], []
    for name, param in model.named_parameters():
        if not param.requires_grad:
            continue
        plain = param.ndim < 2 or "LayerNorm" in name
        if config.embeddings == "new-rows" and "word_embeddings" in name:
            plain = True  # decay would move the old rows
        (no_decay if plain else decay).append(param)
    groups = [
        {"params": decay, "weight_decay": config.weight_decay},
        {"params": no_decay, "weight_decay": 0.0},
    ]
    return torch.optim.AdamW(
        groups,
        lr=config.learning_rate,
        betas=(config.adam_beta1, config.adam_beta2),
        eps=config.adam_epsilon,
    )


def learning_rate(config: PretrainConfig, step: int) -> float:
    """The learning rate of step `step` (0-based): linear warm-up, then linear decay to 0 or constant."""
    if config.warmup_steps and step < config.warmup_steps:
        return config.learning_rate * (step + 1) / config.warmup_steps
    if config.schedule == "constant":
        return config.learning_rate
    remaining = max(config.max_steps - step, 0) / max(config.max_steps - config.warmup_steps, 1)
    return config.learning_rate * remaining


def _precision(config: PretrainConfig, device: Any) -> str:
    import torch

    if config.precision != "auto":
        if config.precision == "bfloat16" and device.type == "cuda" and not torch.cuda.is_bf16_supported():
            raise InputError("This GPU has no bfloat16 support.", "Use --precision float32.")
        return config.precision
    if device.type == "cuda":
        return "bfloat16" if torch.cuda.is_bf16_supported() else "float32"
    native = torch.cpu._is_avx512_bf16_supported() or torch.cpu._is_amx_tile_supported()
    return "bfloat16" if native else "float32"


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


def _save_model(model: Any, tokenizer_dir: Path, folder: Path) -> None:
    from ..core.loader import quiet_transformers

    with quiet_transformers():
        model.save_pretrained(str(folder), safe_serialization=True)
    follow_umask(*folder.iterdir())  # safetensors' save_file makes model.safetensors 0o600
    for name in TOKENIZER_FILES:
        if (tokenizer_dir / name).exists():
            shutil.copyfile(tokenizer_dir / name, folder / name)


def _write_checkpoint(out: Path, model: Any, tokenizer_dir: Path, state: dict[str, Any], keep: int) -> Path:
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


def _load_weights(model: Any, folder: Path) -> None:
    from safetensors.torch import load_file

    state = load_file(str(folder / "model.safetensors"))
    missing, unexpected = model.load_state_dict(state, strict=False)
    tied = {"cls.predictions.decoder.weight", "cls.predictions.decoder.bias"}
    if unexpected or set(missing) - tied:
        raise InputError(
            f"The checkpoint {folder} does not fit this model (missing {sorted(set(missing) - tied)[:3]}, "
            f"unexpected {sorted(unexpected)[:3]}).",
            "Resume with the config the run was started with.",
        )


# --- the run folder -------------------------------------------------------------------------------------------------


def _marked(folder: Path) -> bool:
    """A run folder that `pretrain` made (it holds the mark)."""
    return (folder / RUN_MARKER).is_file()


def _run_folder_state(target: Path, resume: bool, overwrite: bool) -> list[tuple[int, Path]]:
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
            raise InputError(f"{target} holds no checkpoint to resume.", "Start the run without --resume.")
        return found
    if found and not overwrite:
        raise InputError(
            f"{target} already holds a run (checkpoint step {found[-1][0]}).",
            "Continue it with --resume (resume=True), start it again from scratch with --overwrite (overwrite=True; "
            "the earlier run is removed), or choose another folder.",
        )
    if target.exists() and not marked and any(target.iterdir()):
        raise InputError(
            f"{target} is not empty and is not a run folder of bertlens pretrain: its files would be written over.",
            "Choose a new or empty folder for the run (--overwrite applies only to a folder an earlier run made).",
        )
    return []


def _open_run_folder(target: Path, overwrite: bool) -> list[Path]:
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


def _discard_new_run(target: Path, created: list[Path]) -> None:
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


def _check_resumable(out: Path, config: PretrainConfig) -> None:
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


# --- the loop -------------------------------------------------------------------------------------------------------


@contextmanager
def _threads(count: int | None) -> Iterator[None]:
    import torch

    before = torch.get_num_threads()
    if count is not None:
        torch.set_num_threads(count)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _tokenizer_source(config: PretrainConfig, tokenizer: str | os.PathLike[str] | None) -> Path:
    if tokenizer is None:
        raise InputError(
            "No tokenizer was given for a model trained from scratch.",
            "Train one first: bertlens train-tokenizer CORPUS --out TOKENIZER_DIR, then pass --tokenizer.",
        )
    folder = output_path(tokenizer, "tokenizer")
    try:
        if folder.is_file():
            folder = folder.parent
        found = (folder / "tokenizer.json").exists()
    except OSError as exc:  # e.g. a folder this user may not enter
        raise InputError(
            f"Cannot look into the tokenizer folder {folder}: {exc.strerror or exc}.",
            "Make the folder readable for this user (chmod a+rx), or give another tokenizer folder.",
        ) from None
    if not found:
        raise InputError(f"{folder} holds no tokenizer.json.", "Give the folder that train-tokenizer wrote.")
    return folder


def _read_tokenizer(folder: Path) -> Any:
    """The `tokenizers.Tokenizer` in `folder`/tokenizer.json, or an InputError that names the file and what to do."""
    from tokenizers import Tokenizer

    file = folder / "tokenizer.json"
    hint = "Give the folder that bertlens train-tokenizer wrote, or train one again: bertlens train-tokenizer CORPUS"
    try:
        if not stat.S_ISREG(file.stat().st_mode):
            raise InputError(f"The tokenizer {file} is not a regular file.", hint)
        return Tokenizer.from_file(str(file))
    except OSError as exc:
        raise InputError(f"Cannot read the tokenizer {file}: {exc.strerror or exc}.", hint + ".") from None
    except Exception as exc:  # tokenizers raises plain Exception for a malformed file
        raise InputError(
            f"The tokenizer file {file} is broken or not a tokenizers JSON file ({exc}).", hint + " --out DIR."
        ) from None


def _append_log(file: Path, record: dict[str, Any]) -> None:
    with file.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(record) + "\n")


def _truncate_jsonl(file: Path, step: int) -> None:
    """Drop records after `step` (written by a run that went past its last checkpoint before it stopped)."""
    if not file.exists():
        return
    kept = [line for line in file.read_text(encoding="utf-8").splitlines() if line and json.loads(line)["step"] <= step]
    replace_text(file, "".join(line + "\n" for line in kept))


def validation_loss(objective: Any, data: PackedData, batch_size: int, device: Any, precision: str) -> float:
    """Mean masked-LM loss (nats per predicted token) over the validation sequences, fixed masks, eval mode."""
    import torch

    was_training = objective.training
    objective.eval()
    total, count = 0.0, 0
    try:
        with torch.no_grad(), _autocast(device, precision):
            for first in range(0, data.blocks, batch_size):
                batch = data.batch(first, min(batch_size, data.blocks - first))
                mlm, _ = objective(*_tensors(batch, device))
                total += float(mlm)
                count += len(batch.labels)
    finally:
        objective.train(was_training)
    return total / max(count, 1)


def _autocast(device: Any, precision: str) -> Any:
    import torch

    return torch.autocast(device.type, dtype=torch.bfloat16, enabled=precision == "bfloat16")


def _tensors(batch: Batch, device: Any) -> tuple[Any, ...]:
    def move(t: Any) -> Any:
        return None if t is None else t.to(device, non_blocking=True)

    return (
        move(batch.input_ids),
        move(batch.token_type_ids),
        move(batch.positions),
        move(batch.labels),
        move(batch.next_sentence),
    )


def pretrain(
    config: PretrainConfig,
    corpus: str | os.PathLike[str],
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
    must match); `overwrite` starts again a run that an earlier `pretrain` left in `out` (removing it); `max_texts`
    reads only the first texts of the corpus. `out` must be a new or empty folder otherwise, never the model or
    tokenizer it reads (nor inside them). A new run that fails before its first checkpoint leaves nothing behind.
    """
    import torch

    if not isinstance(config, PretrainConfig):
        raise InputError(f"config must be a PretrainConfig, got {type(config).__name__}.", "PretrainConfig()")
    config.check()
    target = output_path(out, "run")
    if config.init_from is not None and Path(config.init_from).expanduser().exists():
        refuse_inside(target, Path(config.init_from).expanduser(), "the model it continues")  # before anything else
    found = _run_folder_state(target, bool(resume), bool(overwrite))
    if found:
        _check_resumable(target, config)
    for text in (corpus, validation):  # a missing, unreadable or empty corpus is refused before anything is written
        if text is not None:
            next(iter_texts(text), None)
    if config.init_from is not None:
        model, backend, tokenizer_dir = _continued_model(config)
        refuse_inside(target, tokenizer_dir, "the model it continues")
    else:
        tokenizer_dir = _tokenizer_source(config, target if tokenizer is None and found else tokenizer)
        if not found:
            refuse_inside(target, tokenizer_dir, "the tokenizer folder")
        backend = _read_tokenizer(tokenizer_dir)
        model = None
    vocab_rows = model.bert.embeddings.word_embeddings.weight.shape[0] if model is not None else None
    special = SpecialIds.from_tokenizer(backend, vocab_rows or backend.get_vocab_size(with_added_tokens=True))
    if model is None:
        model = _new_model(config, special)
    world = _world()
    created: list[Path] = []
    try:
        if world.main and not found:
            created = _open_run_folder(target, bool(overwrite))
        _barrier(world)
        with _threads(config.threads), torch.random.fork_rng(devices=[]):
            return _run(
                config, corpus, target, model, backend, tokenizer_dir, special, validation, found, world, max_texts
            )
    except BaseException as exc:
        if world.main and not found:
            _discard_new_run(target, created)
        if isinstance(exc, OSError):
            raise write_error(target, exc, "the run") from None
        raise
    finally:
        if world.started_here:
            import torch.distributed as dist

            dist.destroy_process_group()


def _run(
    config: PretrainConfig,
    corpus: str | os.PathLike[str],
    target: Path,
    model: Any,
    backend: Any,
    tokenizer_dir: Path,
    special: SpecialIds,
    validation: str | os.PathLike[str] | None,
    found: list[tuple[int, Path]],
    world: _World,
    max_texts: int | None,
) -> PretrainResult:
    import torch

    training_dir = target / "training"
    data_dir = training_dir / "data"
    if world.main:
        make_folder(training_dir)
        train_stream = cached_stream(backend, corpus, data_dir, max_texts=max_texts)
        valid_stream = cached_stream(backend, validation, data_dir) if validation is not None else None
        if not found:  # a fresh run: logs of an earlier start that never reached a checkpoint go
            config.save(training_dir / CONFIG_FILE)
            for name in ("log.jsonl", "watch.jsonl"):
                (training_dir / name).unlink(missing_ok=True)
    _barrier(world)
    if not world.main:
        train_stream = cached_stream(backend, corpus, data_dir, max_texts=max_texts)
        valid_stream = cached_stream(backend, validation, data_dir) if validation is not None else None
    masking = dict(
        mlm_probability=config.mlm_probability, mask_ratio=config.mask_ratio, random_ratio=config.random_ratio
    )
    train = PackedData(train_stream, special, config.seq_length, config.next_sentence, config.seed, **masking)
    valid = None
    if valid_stream is not None:
        valid = PackedData(valid_stream, special, config.seq_length, False, config.seed, shuffle=False, **masking)
        valid.blocks = max(1, min(valid.blocks, config.validation_tokens // config.seq_length))
    precision = _precision(config, world.device)

    _freeze(model, config)
    model.to(world.device).train()
    objective = _Objective.module(model, config.next_sentence)
    optimizer = _optimizer(model, config)
    step, tokens, resumed_from = 0, 0, None
    if found:
        resumed_from, folder = found[-1]
        state = torch.load(folder / STATE, map_location=world.device, weights_only=True)
        if int(state["world_size"]) != world.size:
            raise InputError(
                f"The checkpoint {folder.name} was written by {state['world_size']} process(es); this run has "
                f"{world.size}, which would change the global batch.",
                f"Resume with {state['world_size']} process(es).",
            )
        _load_weights(model, folder)
        optimizer.load_state_dict(state["optimizer"])
        step, tokens = int(state["step"]), int(state["tokens"])
        if world.main:
            _truncate_jsonl(training_dir / "log.jsonl", step)
            _truncate_jsonl(training_dir / "watch.jsonl", step)
    runner = objective
    if world.size > 1:
        from torch.nn.parallel import DistributedDataParallel

        runner = DistributedDataParallel(objective, device_ids=[world.device] if world.device.type == "cuda" else None)

    watcher = None
    if config.watch and world.main:
        from .watch import Watcher

        watcher = Watcher(config, backend, training_dir / "watch.jsonl")
        if not found:
            watcher.record(
                model, step=0, tokens=0, loss=None, perplexity=_perplexity(valid, objective, config, world, precision)
            )
    end = min(config.max_steps, config.stop_at_step or config.max_steps)
    bar = _bar(config, world, step, end)
    global_batch = config.batch_size * world.size
    started = time.perf_counter()
    deadline = None if config.max_minutes is None else started + 60 * config.max_minutes
    stopped = "finished"
    window: list[float] = []
    last_loss: float | None = None
    perplexity: float | None = None
    kept: list[str] = [p.name for _, p in found]
    run_tokens = 0

    saved_at = step

    def checkpoint() -> None:
        nonlocal perplexity, kept, saved_at
        saved_at = step
        perplexity = _perplexity(valid, objective, config, world, precision)
        if world.main:
            state = {
                "step": step,
                "tokens": tokens,
                "optimizer": optimizer.state_dict(),
                "sequences_done": step * global_batch,  # the data position: the next step starts here
                "world_size": world.size,
                "torch_rng": torch.get_rng_state(),
                "elapsed_seconds": time.perf_counter() - started,
                "config": config.outcome_fields(),
            }
            _write_checkpoint(target, model, tokenizer_dir, state, config.keep_checkpoints)
            if watcher is not None:
                watcher.record(model, step=step, tokens=tokens, loss=last_loss, perplexity=perplexity)
            kept = [p.name for _, p in checkpoints(target)]
        _barrier(world)

    try:
        while step < end:
            if deadline is not None and time.perf_counter() >= deadline:
                stopped = "time limit"
                break
            lr = learning_rate(config, step)
            for group in optimizer.param_groups:
                group["lr"] = lr
            torch.manual_seed(_step_seed(config.seed, step, world.rank))  # dropout of this step
            batch = train.batch(step * global_batch + world.rank * config.batch_size, config.batch_size)
            inputs = _tensors(batch, world.device)
            count = torch.tensor(float(len(batch.labels)), device=world.device)
            if world.size > 1:
                import torch.distributed as dist

                dist.all_reduce(count)  # predicted tokens in the global batch
            with _autocast(world.device, precision):
                mlm, nsp = runner(*inputs)
            loss = mlm / count * world.size + nsp / global_batch * world.size  # DDP averages over processes
            loss.backward()
            if config.max_grad_norm > 0:
                torch.nn.utils.clip_grad_norm_(model.parameters(), config.max_grad_norm)
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            step += 1
            tokens += batch.tokens * world.size
            run_tokens += batch.tokens * world.size
            window.append(float(mlm.detach()) / len(batch.labels) + float(nsp.detach()) / config.batch_size)
            elapsed = time.perf_counter() - started
            if step % config.log_every == 0 or step == end:
                last_loss = sum(window) / len(window)
                window = []
                if world.main:
                    record = {
                        "step": step,
                        "loss": last_loss,
                        "lr": lr,
                        "tokens": tokens,
                        "tokens_per_second": run_tokens / elapsed,
                        "elapsed": elapsed,
                    }
                    _append_log(training_dir / "log.jsonl", record)
            if bar is not None:
                bar.update(1)
                bar.set_postfix(loss=f"{window[-1] if window else last_loss:.3f}", tok_s=f"{run_tokens / elapsed:.0f}")
            if step % config.checkpoint_every == 0 or step == end:
                checkpoint()
        if step > saved_at:
            checkpoint()  # stopped by the time limit between two checkpoints
    except KeyboardInterrupt:
        if step > saved_at:
            checkpoint()  # the state between two steps is whole: save it, so that --resume continues from here
        raise
    finally:
        if bar is not None:
            bar.close()
    if stopped != "time limit":
        stopped = "finished" if step >= config.max_steps else "stop_at_step"
    seconds = time.perf_counter() - started
    return PretrainResult(
        out=str(target),
        step=step,
        max_steps=config.max_steps,
        stopped=stopped,
        resumed_from=resumed_from,
        tokens=tokens,
        tokens_per_second=run_tokens / seconds if seconds > 0 else 0.0,
        train_seconds=seconds,
        loss=last_loss,
        validation_perplexity=perplexity,
        processes=world.size,
        precision=precision,
        checkpoints=tuple(kept),
    )


def _step_seed(seed: int, step: int, rank: int) -> int:
    return ((seed * 1_000_003 + step) * 1_009 + rank) % (2**63)


def _perplexity(
    valid: PackedData | None, objective: Any, config: PretrainConfig, world: _World, precision: str
) -> float | None:
    if valid is None or not world.main:
        return None
    loss = validation_loss(objective, valid, config.batch_size, world.device, precision)
    return math.exp(min(loss, 700.0))


def _bar(config: PretrainConfig, world: _World, step: int, end: int) -> Any:
    if not config.progress or not world.main:
        return None
    from tqdm import tqdm

    return tqdm(total=end, initial=step, unit="step", desc="pretrain", dynamic_ncols=True)


def load_config_from_run(out: str | os.PathLike[str]) -> PretrainConfig:
    """The PretrainConfig a run in `out` was started with."""
    path = Path(out).expanduser() / "training" / CONFIG_FILE
    if not path.exists():
        raise InputError(f"{Path(out)} holds no pre-training run (no training/{CONFIG_FILE}).", "Check the folder.")
    return PretrainConfig.load(path)
