"""The batched forward pass: windows of token ids sorted by length, padded into batches, each batch's hidden states
handed on as torch tensors so that the caller reduces them where they are (on the device, in one go per batch).

`forward_batches` runs the model's inference copy (`core/packing.py`: transformers' model with its linear layers
prepacked for oneDNN on the CPU where a probe finds oneDNN's products working) in the precision `RunOptions.dtype`
resolves to (`core/precision.py`). `hidden_states` (states.py) copies every layer of every token out; `word_states`
(word_states.py) pools words inside the batch and copies out only those.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..core.checks import whole_number
from ..core.errors import InputError
from ..core.model import Model
from ..core.options import BATCH_TOKENS, DEVICES, PRECISIONS, Precision
from ..core.precision import FLOAT16_OFF_CUDA, choose_precision, torch_device
from ..core.tokens import max_length

if TYPE_CHECKING:
    import torch
    from torch import nn

    from .device_step import FlatEncoder


@dataclass(frozen=True)
class RunOptions:
    """How texts are run through the model.

    >>> states = hidden_states(load_model(), "I like bread", options=RunOptions(dtype="float32", batch_tokens=1024))
    """

    batch_tokens: int = BATCH_TOKENS  # the most tokens in one forward pass (see core/options.py; padding included,
    # and a ragged batch's end rounded up to one of a dozen product sizes, core/packing.product_rows)
    overlap: int | None = None  # tokens shared by neighbouring windows of a long text (default: half a window)
    device: str = "cpu"  # "cpu", "cuda", or "auto" (CUDA when present)
    dtype: Precision = "float32"  # bfloat16 runs faster where the CPU has AVX512-BF16 or AMX; "auto" picks (see
    # core/precision.py: the fastest mode that keeps cosine >= 0.999 with float32 on this machine)

    def __post_init__(self) -> None:
        whole_number(self.batch_tokens, "batch_tokens", minimum=1)
        if self.overlap is not None:
            whole_number(self.overlap, "overlap", minimum=0)
        if self.device not in DEVICES:
            raise InputError(f"Unknown device {self.device!r}.", "Choose cpu, cuda or auto.")
        if self.dtype not in PRECISIONS:
            raise InputError(f"Unknown dtype {self.dtype!r}.", "Choose float32, bfloat16, float16 (CUDA) or auto.")
        if self.dtype == "float16" and self.device == "cpu":
            raise InputError(
                FLOAT16_OFF_CUDA,
                'Give device="cuda", or dtype="bfloat16" (native with AVX512-BF16 or AMX) or "auto" on the CPU.',
            )


@dataclass
class Job:
    """One window of one text, as the model receives it."""

    text: int  # which text
    start: int  # first content token of the window
    ids: list[int]  # the window's ids, special tokens included


@dataclass
class Batch:
    """One forward pass: which jobs, and the hidden states of the layers asked for, rows laid end to end.

    Row `r`'s tokens are `states[layer][starts[r] : starts[r] + lengths[r]]`. A padded batch's rows all take the
    longest row's room (`starts` steps by it); a ragged batch (the models `core.packing.SelfAttention` runs) has no
    padding between rows, only a few tokens after the last (to `core.packing.product_rows`)."""

    jobs: list[int]  # job indices, one per row
    lengths: list[int]  # each row's tokens
    starts: list[int]  # each row's first token on the flat token axis
    states: tuple[torch.Tensor, ...]  # per chosen layer (tokens, H), in the run's dtype, on its device


def special_frame(model: Model) -> tuple[list[int], list[int]]:
    """The special ids the tokenizer puts before and after a single text, e.g. ([101], [102]) for BERT."""
    tokenizer = model.vocabulary.tokenizer
    content = tokenizer.encode("a", add_special_tokens=False).ids
    full = tokenizer.encode("a").ids
    for start in range(len(full) - len(content) + 1):
        if full[start : start + len(content)] == content:
            return full[:start], full[start + len(content) :]
    return [], []


def window_plan(model: Model, options: RunOptions) -> tuple[int | None, int]:
    """The content tokens one window holds (None: no limit) and the overlap of neighbouring windows, checked."""
    prefix, suffix = special_frame(model)
    limit = max_length(model)
    size = None if limit is None else limit - len(prefix) - len(suffix)
    if size is not None and size < 1:
        raise InputError(
            f"The model's maximum length ({limit}) leaves no room for text.",
            "Check max_position_embeddings in the model's config.json: it must exceed the special tokens.",
        )
    overlap = options.overlap if options.overlap is not None else (size or 0) // 2
    if size is not None and not 0 <= overlap < size:
        raise InputError(
            f"overlap must be between 0 and {size - 1}, got {overlap}.",
            f"Give RunOptions(overlap=...) below {size}, or leave it unset (half a window).",
        )
    return size, overlap


def forward_batches(
    model: Model, jobs: Sequence[Job], options: RunOptions, layers: Sequence[int] | None = None
) -> Iterator[Batch]:
    """Run every job, batched by length (at most `options.batch_tokens` padded tokens a pass); yields each batch with
    the hidden states of `layers` (absolute numbers; None: every layer, 0 = the embedding output)."""
    passes = _passes(model, jobs, options, layers)
    for batch in _batches(jobs, options.batch_tokens, passes.unpadded):
        yield passes.run(batch)


def _passes(model: Model, jobs: Sequence[Job], options: RunOptions, layers: Sequence[int] | None) -> _Passes:
    """The run's passes: the model's inference copy on the run's device in its precision, and how it takes a batch."""
    from ..core.packing import inference_model, takes_ragged

    device = torch_device(options.device)
    dtype = choose_precision(model, options.dtype, device).dtype
    net = inference_model(model, device, dtype)
    flat = _flat_encoder(model, device, dtype)  # on CUDA: texts end to end, variable-length attention
    return _Passes(model, jobs, layers, device, net, flat, takes_ragged(net))


def _batches(jobs: Sequence[Job], batch_tokens: int, unpadded: bool) -> Iterator[list[int]]:
    """The jobs' indices sorted by length, in batches of at most `batch_tokens` tokens (`unpadded`: the rows' own
    tokens; else padded tokens, every row as long as the longest)."""
    batch: list[int] = []
    used = 0  # the batch's tokens (unpadded) or padded tokens
    for j in sorted(range(len(jobs)), key=lambda j: len(jobs[j].ids)):
        length = len(jobs[j].ids)
        grown = used + length if unpadded else length * (len(batch) + 1)  # sorted: the newest is the longest
        if batch and grown > batch_tokens:
            yield batch
            batch = []
            grown = length
        batch.append(j)
        used = grown
    if batch:
        yield batch


@dataclass(frozen=True)
class _Passes:
    """One run's forward passes over batches of jobs: padded, ragged (the packed model's `SelfAttention`: rows end to
    end, padding only at the end) or flat (on CUDA, `device_step.FlatEncoder`: no padding at all)."""

    model: Model
    jobs: Sequence[Job]
    layers: Sequence[int] | None  # absolute numbers; None: every layer, 0 = the embedding output
    device: str
    net: nn.Module  # the inference copy (core/packing.py)
    flat: FlatEncoder | None
    ragged: bool  # the net's self-attention takes ragged batches

    @property
    def unpadded(self) -> bool:
        """Whether a batch holds only its rows' own tokens (ragged or flat), not rows padded to the longest."""
        return self.ragged or self.flat is not None

    @property
    def pad(self) -> int:
        return self.model.config.pad_token_id or 0

    def run(self, batch: list[int]) -> Batch:
        """The batch's pass, the fastest way the model takes it."""
        if self.flat is not None:
            return self.run_flat(batch, self.flat)
        return self.run_ragged(batch) if self.ragged else self.run_padded(batch)

    def forward(self, ids: torch.Tensor, given: dict[str, torch.Tensor], **plain: object) -> tuple[torch.Tensor, ...]:
        """The asked layers of one pass over `ids` (rows, tokens) and the `given` id tensors beside them, each
        (rows x tokens, H): views, not stacked. `plain` goes to the model as it is (`ragged`)."""
        import torch

        kwargs = {name: tensor.to(self.device) for name, tensor in {"input_ids": ids, **given}.items()}
        if self.model.family.token_type_embeddings is not None and self.model.config.type_vocab_size > 0:
            kwargs["token_type_ids"] = torch.zeros_like(ids).to(self.device)
        with torch.inference_mode():
            every = self.net(**kwargs, **plain, output_hidden_states=True).hidden_states  # (layers + 1) x (rows, T, H)
        picked = every if self.layers is None else [every[layer] for layer in self.layers]
        return tuple(layer.reshape(-1, layer.shape[-1]) for layer in picked)

    def run_padded(self, batch: list[int]) -> Batch:
        """Rows padded to the longest, with an attention mask."""
        import torch

        lengths = [len(self.jobs[j].ids) for j in batch]
        width = max(lengths)
        ids = torch.full((len(batch), width), self.pad, dtype=torch.long)
        mask = torch.zeros((len(batch), width), dtype=torch.long)
        for row, j in enumerate(batch):
            ids[row, : lengths[row]] = torch.tensor(self.jobs[j].ids)
            mask[row, : lengths[row]] = 1
        starts = [row * width for row in range(len(batch))]
        return Batch(list(batch), lengths, starts, self.forward(ids, {"attention_mask": mask}))

    def run_ragged(self, batch: list[int]) -> Batch:
        """Rows end to end (sorted by length: rows of one length are neighbours), padding only at the end."""
        import torch

        from ..core.families import position_ids
        from ..core.packing import Ragged, product_rows

        scheme, pad_id, pad = self.model.family.position_scheme, self.model.config.pad_token_id, self.pad
        lengths = [len(self.jobs[j].ids) for j in batch]
        starts = [0, *itertools.accumulate(lengths)]
        groups, row = [], 0  # (first token, rows, tokens per row)
        for length, same in itertools.groupby(lengths):
            rows = len(list(same))
            groups.append((starts[row], rows, length))
            row += rows
        extra = product_rows(starts[-1]) - starts[-1]  # padding at the end: a dozen product sizes, not thousands
        ids = torch.tensor([token for j in batch for token in self.jobs[j].ids] + [pad] * extra)[None]  # (1, tokens)
        # every row's position ids from its own ids, as the family's embedding module derives them (a pad token
        # inside a RoBERTa text takes padding_idx); the padding at the end takes a pad token's
        each = [position_ids(ids[0, at : at + rows * n].view(rows, n), scheme, pad_id) for at, rows, n in groups]
        tail = position_ids(torch.tensor([pad]), scheme, pad_id).expand(extra)  # (extra,): one valid row for all
        positions = torch.cat([*(rows.reshape(-1) for rows in each), tail])[None]  # (1, tokens)
        states = self.forward(ids, {"position_ids": positions}, ragged=Ragged(tuple(groups)))
        return Batch(list(batch), lengths, starts[:-1], states)

    def run_flat(self, batch: list[int], flat: FlatEncoder) -> Batch:
        """Texts end to end with no padding at all (device_step.FlatEncoder)."""
        import torch

        from .device_step import flat_tensors
        from .pipeline import flat_positions

        lengths = [len(self.jobs[j].ids) for j in batch]
        offsets = np.array([0, *itertools.accumulate(lengths)], dtype=np.int64)
        ids = np.fromiter(itertools.chain.from_iterable(self.jobs[j].ids for j in batch), np.int64, int(offsets[-1]))
        positions = flat_positions(ids, offsets, self.model.family.position_scheme, self.model.config.pad_token_id)
        tensors, _ = flat_tensors(torch.device(self.device), ids, offsets, max(lengths), positions)
        every = list(range(self.model.config.num_hidden_layers + 1)) if self.layers is None else list(self.layers)
        with torch.inference_mode():
            states = flat(tensors, every)
        return Batch(list(batch), lengths, offsets[:-1].tolist(), states)


def _flat_encoder(model: Model, device: str, dtype: str) -> FlatEncoder | None:
    """The model's `device_step.FlatEncoder` on CUDA, where it runs flat (None on the CPU: the packed model is
    faster there)."""
    if device != "cuda":
        return None
    from .device_step import flat_encoder

    return flat_encoder(model, device, dtype)
