"""Hidden states: every layer's vector for every token, for texts of any length, run in batches.

A text longer than the model's maximum length is cut into overlapping windows; each window is run as its own input
(with the model's special tokens around it) and every token takes its vectors from the window where it has the most
context on both sides. Inputs are batched by length with an attention mask, so a text's vectors do not depend on what
else is in its batch (up to float32 rounding, ~1e-6). `check_layers` and `select_layers` choose and combine layers;
pooling into words and texts is in `pooling` and `vectors`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..core import notebook
from ..core.checks import whole_number
from ..core.errors import InputError
from ..core.model import Model
from ..core.options import COMBINES, DEVICES, PRECISIONS, Combine, Precision, check_choice
from ..core.precision import choose_precision
from ..core.results import Result, table, visible
from ..core.tokens import Token, check_text, max_length, tokenize


@dataclass(frozen=True)
class RunOptions:
    """How texts are run through the model."""

    batch_tokens: int = 4096  # the most (padded) tokens in one forward pass: bounds memory (4096 ran fastest here)
    overlap: int | None = None  # tokens shared by neighbouring windows of a long text (default: half a window)
    device: str = "cpu"  # "cpu", "cuda", or "auto" (CUDA when present)
    dtype: Precision = "float32"  # bfloat16 runs faster where the CPU has AVX512-BF16 or AMX; "auto" picks (see
    # core/precision.py: the fastest mode that keeps cosine >= 0.999 with float32 on this machine)

    def __post_init__(self) -> None:
        whole_number(self.batch_tokens, "batch_tokens (--batch-tokens)", minimum=1)
        if self.overlap is not None:
            whole_number(self.overlap, "overlap", minimum=0)
        if self.device not in DEVICES:
            raise InputError(f"Unknown device {self.device!r}.", "Choose cpu, cuda or auto.")
        if self.dtype not in PRECISIONS:
            raise InputError(f"Unknown dtype {self.dtype!r}.", "Choose float32, bfloat16 or auto.")


@dataclass(frozen=True, repr=False)
class TokenStates(Result):
    """Every layer's vector for every token of one text: layer 0 is the embedding output, layer L the last."""

    model: str
    text: str
    tokens: tuple[Token, ...]
    states: np.ndarray  # (layers + 1, tokens, H) float32
    windows: int  # how many windows the text needed (1 when it fits)

    def __repr__(self) -> str:
        layers, tokens, hidden = self.states.shape
        return f"TokenStates({tokens} tokens x {layers} layers x {hidden}, windows={self.windows})"

    def to_table(self) -> str:
        norms = np.linalg.norm(self.states, axis=-1)  # (layers + 1, tokens)
        head = ["#", "piece", *[f"|L{i}|" for i in range(self.states.shape[0])]]
        rows = [(t.index, visible(t.piece), *norms[:, t.index].tolist()) for t in self.tokens]
        note = f"{self.states.shape[0]} layers (0 = embedding output) x {self.states.shape[2]} dims; vector norms shown"
        return f"{table(head, rows)}\n{note}; windows: {self.windows}."

    def as_torch(self) -> Any:
        """The states as a torch tensor, (layers + 1, tokens, H): `as_torch()[0]` is the embedding output."""
        return notebook.torch_tensor(self.states)


@dataclass(frozen=True, repr=False)
class HiddenStates(Result):
    """TokenStates of several texts, in order."""

    results: tuple[TokenStates, ...]

    def __len__(self) -> int:
        return len(self.results)

    def __getitem__(self, i: int) -> TokenStates:
        return self.results[i]

    def __iter__(self) -> Iterator[TokenStates]:
        return iter(self.results)

    def __repr__(self) -> str:
        return f"HiddenStates({len(self.results)} texts)"

    def as_torch(self) -> tuple[Any, ...]:
        """Each text's states as a torch tensor (layers + 1, tokens, H), in order (texts differ in length)."""
        return tuple(r.as_torch() for r in self.results)

    def to_table(self) -> str:
        return "\n\n".join(r.to_table() for r in self.results)


def _special_frame(model: Model) -> tuple[list[int], list[int]]:
    """The special ids the tokenizer puts before and after a single text, e.g. ([101], [102]) for BERT."""
    tokenizer = model.vocabulary.tokenizer
    content = tokenizer.encode("a", add_special_tokens=False).ids
    full = tokenizer.encode("a").ids
    for start in range(len(full) - len(content) + 1):
        if full[start : start + len(content)] == content:
            return full[:start], full[start + len(content) :]
    return [], []


def _windows(length: int, size: int, overlap: int) -> list[int]:
    """Start offsets of windows of `size` content tokens covering `length`, neighbours sharing `overlap`."""
    if length <= size:
        return [0]
    step = max(1, size - overlap)
    starts = list(range(0, length - size, step))
    return [*starts, length - size]


def _best_window(position: int, starts: list[int], size: int) -> int:
    """The window in which `position` has the most context on its shorter side (the earlier one on ties)."""
    context = [min(position - s, s + size - 1 - position) for s in starts]
    return int(np.argmax(context))


def _texts(texts: object) -> list[str]:
    """One text or a list of texts, as a non-empty list (each checked later)."""
    if isinstance(texts, str):
        return [texts]
    if not isinstance(texts, (Sequence, Iterator)) or isinstance(texts, (bytes, bytearray)):
        raise InputError(
            f"texts must be a string or a list of strings, got {type(texts).__name__}.", "Pass e.g. 'I like bread'."
        )
    found = list(texts)
    if not found:
        raise InputError("No texts were given.", "Give at least one text.")
    return found


def check_layers(model: Model, layers: Sequence[int]) -> tuple[int, ...]:
    """Layer numbers that exist in `model` (0 = embedding output, -1 = the last), checked before any forward pass."""
    count = model.config.num_hidden_layers + 1  # (layers + 1) hidden states
    if isinstance(layers, (int, np.integer)) and not isinstance(layers, bool):
        layers = [int(layers)]
    if isinstance(layers, (str, bytes)) or not isinstance(layers, Sequence) or not layers:
        raise InputError(
            f"No layers were chosen: layers must be a non-empty list of layer numbers, got {layers!r}.",
            f"Give layer numbers from 0 to {count - 1}, or -1 for the last (e.g. layers=[-1]).",
        )
    for layer in layers:
        if isinstance(layer, bool) or not isinstance(layer, (int, np.integer)) or not -count <= layer < count:
            raise InputError(
                f"Layer {layer!r} does not exist: this model has layers 0 (embedding output) to {count - 1}.",
                f"Use 0..{count - 1}, or negative numbers counting from the last (-1).",
            )
    return tuple(int(layer) for layer in layers)


@dataclass
class _Job:
    text: int  # which text
    start: int  # first content token of the window
    ids: list[int]  # the window's ids, special tokens included


def hidden_states(
    model: Model,
    texts: str | Sequence[str],
    *,
    options: RunOptions = RunOptions(),
) -> HiddenStates:
    """The hidden states of every layer for every token of each text (one text or a list)."""
    texts = _texts(texts)
    if not isinstance(options, RunOptions):
        raise InputError(f"options must be RunOptions, got {type(options).__name__}.", "Pass RunOptions().")
    for i, text in enumerate(texts):
        check_text(text, f"text #{i}")
    prefix, suffix = _special_frame(model)
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

    tokenizations, contents, plans, jobs = [], [], [], []
    for i, text in enumerate(texts):
        tokenization = tokenize(model, text)
        content = model.vocabulary.tokenizer.encode(text, add_special_tokens=False).ids
        starts = [0] if size is None else _windows(len(content), size, overlap)
        width = len(content) if size is None else min(size, len(content))
        tokenizations.append(tokenization)
        contents.append(content)
        plans.append((starts, width))
        jobs += [_Job(i, s, prefix + content[s : s + width] + suffix) for s in starts]

    outputs = _run(model, jobs, options)  # job index -> (layers + 1, window tokens, H)
    results, job = [], 0
    for i, tokenization in enumerate(tokenizations):
        starts, width = plans[i]
        window_states = outputs[job : job + len(starts)]
        job += len(starts)
        results.append(
            TokenStates(
                model=model.source.description,
                text=texts[i],
                tokens=tokenization.tokens,
                states=_assemble(window_states, starts, width, len(contents[i]), len(prefix), len(suffix)),
                windows=len(starts),
            )
        )
    return HiddenStates(tuple(results))


def _assemble(
    windows: list[np.ndarray], starts: list[int], width: int, length: int, before: int, after: int
) -> np.ndarray:
    """One (layers + 1, tokens, H) array from the windows' states, each token from its best window."""
    if len(windows) == 1:
        return windows[0]  # the text fitted: its window is its states
    layers, _, hidden = windows[0].shape
    out = np.empty((layers, before + length + after, hidden), dtype=np.float32)
    out[:, :before] = windows[0][:, :before]  # leading specials from the first window
    if after:
        out[:, before + length :] = windows[-1][:, -after:]  # trailing specials from the last window
    for position in range(length):
        w = _best_window(position, starts, width) if len(starts) > 1 else 0
        out[:, before + position] = windows[w][:, before + position - starts[w]]
    return out


def _run(model: Model, jobs: list[_Job], options: RunOptions) -> list[np.ndarray]:
    """Run every window, batched by length; returns each job's (layers + 1, tokens, H) float32 states."""
    import torch

    device = _device(options.device)
    net = model.torch_model_on(device, choose_precision(model, options.dtype, device).dtype)
    pad = model.config.pad_token_id or 0
    types = model.family.token_type_embeddings is not None and model.config.type_vocab_size > 0
    order = sorted(range(len(jobs)), key=lambda j: len(jobs[j].ids))
    outputs: dict[int, np.ndarray] = {}  # job index -> its states
    batch: list[int] = []

    def flush() -> None:
        longest = max(len(jobs[j].ids) for j in batch)
        ids = torch.full((len(batch), longest), pad, dtype=torch.long)
        mask = torch.zeros((len(batch), longest), dtype=torch.long)
        for row, j in enumerate(batch):
            ids[row, : len(jobs[j].ids)] = torch.tensor(jobs[j].ids)
            mask[row, : len(jobs[j].ids)] = 1
        kwargs = {"input_ids": ids.to(device), "attention_mask": mask.to(device)}
        if types:
            kwargs["token_type_ids"] = torch.zeros_like(ids).to(device)
        with torch.inference_mode():
            stacked = torch.stack(net(**kwargs, output_hidden_states=True).hidden_states)  # (layers+1, B, T, H)
        states = stacked.float().cpu().numpy()
        for row, j in enumerate(batch):
            outputs[j] = states[:, row, : len(jobs[j].ids)]
        batch.clear()

    for j in order:
        longest = max([len(jobs[j].ids)] + [len(jobs[b].ids) for b in batch])
        if batch and longest * (len(batch) + 1) > options.batch_tokens:
            flush()
        batch.append(j)
    if batch:
        flush()
    return [outputs[j] for j in range(len(jobs))]


def _device(name: str) -> str:
    """The torch device for a RunOptions.device: "auto" picks CUDA when present; "cuda" without CUDA is refused."""
    import torch

    if name == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if name not in ("cpu", "cuda"):
        raise InputError(f"Unknown device {name!r}.", "Choose cpu, cuda or auto.")
    if name == "cuda" and not torch.cuda.is_available():
        raise InputError("CUDA was asked for but no CUDA device is available.", "Use --device cpu (the default).")
    return name


def select_layers(states: np.ndarray, layers: Sequence[int], combine: Combine) -> np.ndarray:
    """Combine layers of states (layers + 1, tokens, H) into (tokens, D): mean, sum or concatenation."""
    count = states.shape[0]
    if not layers:
        raise InputError("No layers were chosen.", f"Give layer numbers from 0 to {count - 1} (or -1 for the last).")
    for layer in layers:
        if isinstance(layer, bool) or not isinstance(layer, (int, np.integer)) or not -count <= layer < count:
            raise InputError(
                f"Layer {layer} does not exist: this model has layers 0 (embedding output) to {count - 1}.",
                f"Use 0..{count - 1}, or negative numbers counting from the last (-1).",
            )
    check_choice(combine, COMBINES, "layer combination")
    chosen = states[list(layers)]  # (n, tokens, H)
    if combine == "concat":
        return np.concatenate(list(chosen), axis=-1)
    return chosen.sum(axis=0) if combine == "sum" else chosen.mean(axis=0)
