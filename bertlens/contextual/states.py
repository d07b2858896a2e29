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
from typing import TYPE_CHECKING, Any

import numpy as np

from ..core import notebook
from ..core.checks import layer_numbers
from ..core.errors import InputError
from ..core.model import Model
from ..core.options import COMBINES, Combine, check_choice
from ..core.results import Result, table, visible
from ..core.tokens import Token, check_text, tokenization_of
from .runner import Job, RunOptions, forward_batches, special_frame, window_plan

if TYPE_CHECKING:
    import torch


__all__ = ["HiddenStates", "RunOptions", "TokenStates", "check_layers", "hidden_states", "select_layers"]


@dataclass(frozen=True, repr=False)
class TokenStates(Result):
    """Every layer's vector for every token of one text: layer 0 is the embedding output, layer L the last.

    >>> one = hidden_states(load_model(), "I like eating bread").results[0]
    >>> [token.piece for token in one.tokens], one.states.shape
    (['[CLS]', 'i', 'like', 'eating', 'bread', '[SEP]'], (7, 6, 384))
    """

    model: str
    text: str
    tokens: Sequence[Token]  # a `Tokens`: reads like a tuple of `Token`
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

    def as_torch(self) -> torch.Tensor:
        """The states as a torch tensor, (layers + 1, tokens, H): `as_torch()[0]` is the embedding output."""
        return notebook.torch_tensor(self.states)


@dataclass(frozen=True, repr=False)
class HiddenStates(Result):
    """TokenStates of several texts, in order.

    >>> states = hidden_states(load_model(), "I like eating bread")
    >>> states.results[0].text
    'I like eating bread'
    """

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
    return layer_numbers(layers, model.config.num_hidden_layers + 1)  # (layers + 1) hidden states


def hidden_states(
    model: Model,
    texts: str | Sequence[str],
    *,
    options: RunOptions = RunOptions(),  # noqa: B008 - frozen dataclass
) -> HiddenStates:
    """The hidden states of every layer for every token of each text (one text or a list).

    >>> states = hidden_states(load_model(), ["I like bread", "a dog"])
    >>> [result.states.shape for result in states.results]  # layers 0..6 x tokens x hidden
    [(7, 5, 384), (7, 4, 384)]
    """
    texts = _texts(texts)
    if not isinstance(options, RunOptions):
        raise InputError(f"options must be RunOptions, got {type(options).__name__}.", "Pass RunOptions().")
    for i, text in enumerate(texts):
        check_text(text, f"text #{i}")
    prefix, suffix = special_frame(model)
    size, overlap = window_plan(model, options)

    tokenizations, contents, plans, jobs = [], [], [], []
    tokenizer = model.vocabulary.tokenizer
    encoded = zip(tokenizer.encode_batch(texts), tokenizer.encode_batch(texts, add_special_tokens=False), strict=True)
    for i, (text, (encoding, bare)) in enumerate(zip(texts, encoded, strict=True)):  # encoded as tokenize() does
        tokenization = tokenization_of(model, encoding, text)
        content = bare.ids
        starts = [0] if size is None else _windows(len(content), size, overlap)
        width = len(content) if size is None else min(size, len(content))
        tokenizations.append(tokenization)
        contents.append(content)
        plans.append((starts, width))
        jobs += [Job(i, s, prefix + content[s : s + width] + suffix) for s in starts]

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


def _run(model: Model, jobs: list[Job], options: RunOptions) -> list[np.ndarray]:
    """Run every window; returns each job's (layers + 1, tokens, H) float32 states."""
    import torch

    outputs: dict[int, np.ndarray] = {}  # job index -> its states
    for batch in forward_batches(model, jobs, options):
        states = torch.stack(batch.states).float().cpu().numpy()  # (layers + 1, tokens, H)
        for row, j in enumerate(batch.jobs):
            outputs[j] = states[:, batch.starts[row] : batch.starts[row] + batch.lengths[row]]
    return [outputs[j] for j in range(len(jobs))]


def select_layers(states: np.ndarray, layers: Sequence[int], combine: Combine) -> np.ndarray:
    """Combine layers of states (layers + 1, tokens, H) into (tokens, D): mean, sum or concatenation."""
    layers = layer_numbers(layers, states.shape[0])  # the same check as check_layers
    check_choice(combine, COMBINES, "layer combination")
    chosen = states[list(layers)]  # (n, tokens, H)
    if combine == "concat":
        return np.concatenate(list(chosen), axis=-1)
    combined: np.ndarray = chosen.sum(axis=0) if combine == "sum" else chosen.mean(axis=0)
    return combined
