"""What new rows do: diagnostics of a vocabulary extension, side by side across strategies.

For every new word: its nearest old tokens, its norm against the old rows' norms, its cosine with its old pieces' mean.
For a model with a masked-LM head: on texts without the new words, how far the predictions at masked positions move
(KL divergence of the old distribution from the new one; the old one gives the new words probability 0) and how often
a new word wrongly becomes the top prediction (Hewitt 2021: rows far from the others can take over). For every model:
texts that contain a new word, run through the old model (the word as its old pieces) and the new one (the word as
one token), compared layer by layer: the new token's vector against its old pieces' mean, and the other tokens' vectors
against themselves (how much the new token disturbs its context).

Everything is computed in memory: the extended model is the source model resized once (transformers'
`resize_token_embeddings`, under a forked random generator so the caller's is untouched) with each strategy's rows
written in, exactly as `extend_vocabulary` would save them.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..contextual.states import RunOptions, hidden_states
from ..core.checks import real_number, seed, whole_number
from ..core.errors import InputError
from ..core.model import Model
from ..core.results import Result, table, visible
from ..core.tokens import max_length
from ..similarity.index import TokenFilter, open_index
from ..similarity.nearest import neighbors_many
from . import STRATEGIES, ExtendOptions, Extension, KnownWord, has_mlm_head, plan_extension

MASKED_SAMPLE = (
    "The weather was cold and wet for most of the week.",
    "She opened the window and looked out at the garden.",
    "The committee will publish its report next month.",
    "He bought bread, milk and eggs at the market.",
    "Most of the students passed the final exam.",
    "The river flows through the centre of the old town.",
    "They played football in the park after school.",
    "The new library has more than a million books.",
    "Prices rose sharply during the second half of the year.",
    "The doctor told him to rest for a few days.",
    "Our train was delayed by almost an hour.",
    "The museum is closed on Mondays and public holidays.",
    "A small dog was sleeping under the kitchen table.",
    "The company was founded in a garage in 1976.",
    "We could hear music coming from the house next door.",
    "The film won three awards at the festival.",
)
CONTEXT_TEMPLATES = (
    "I read about {word} yesterday.",
    "The {word} was mentioned twice in the report.",
    "What do you know about {word}?",
    "They said {word} would change everything.",
)


@dataclass(frozen=True)
class ReportOptions:
    """What the report looks at."""

    k: int = 5  # nearest old tokens listed per new word
    texts: tuple[str, ...] = ()  # texts without a new word feed the masked-LM check, texts with one the contextual
    # comparison; MASKED_SAMPLE and CONTEXT_TEMPLATES stand in for whichever kind is missing
    mask_rate: float = 0.15  # share of each text's tokens masked at once in the masked-LM check (at least one)
    seed: int = 0  # which positions are masked: numpy.random.default_rng(seed)
    context_words: int = 20  # new words put into CONTEXT_TEMPLATES when no given text holds them (the first N)
    run: RunOptions = RunOptions()  # noqa: RUF009 - frozen; how texts are run through the model
    cache_dir: str | None = None  # where the similarity index is cached


@dataclass(frozen=True)
class Nearest:
    token: str
    id: int
    cosine: float


@dataclass(frozen=True)
class WordReport:
    """One new word under one strategy."""

    word: str
    token: str
    id: int
    norm: float
    norm_percentile: float  # % of the old rows (specials and [unused] left out) with a smaller norm
    norm_z: float  # (norm - mean) / std of those old rows' norms
    cosine_pieces: float  # cosine of the new row with the mean of the old pieces' rows
    nearest: tuple[Nearest, ...]  # the old tokens nearest to the new row (cosine)
    layer_cosines: tuple[float, ...] | None  # per layer (0 = embedding output): new token vs old pieces' mean
    contexts: int  # texts the layer cosines are averaged over (0: not compared)


@dataclass(frozen=True)
class MaskedShift:
    """How the masked-LM predictions moved at masked positions of texts without new words."""

    positions: int  # masked positions scored
    kl_mean: float  # mean KL(old || new) in nats
    kl_median: float
    kl_max: float
    new_top1: int  # positions whose top prediction is now a new word (always wrong here)
    new_top1_rate: float  # new_top1 / positions
    top1_changed_rate: float  # share of positions whose top prediction changed at all
    new_mass: float  # mean probability the new words take together


@dataclass(frozen=True)
class StrategyReport:
    strategy: str
    words: tuple[WordReport, ...]
    masked: MaskedShift | None  # None without a masked-LM head
    layer_cosines: tuple[float, ...] | None  # per layer, mean over the compared words
    context_cosines: tuple[float, ...] | None  # per layer, the texts' other tokens: old model vs new model

    @property
    def mean_norm_percentile(self) -> float:
        return float(np.mean([w.norm_percentile for w in self.words]))

    @property
    def mean_cosine_pieces(self) -> float:
        return float(np.mean([w.cosine_pieces for w in self.words]))


@dataclass(frozen=True)
class NormStats:
    """The old rows' norms (special and [unused] rows left out)."""

    mean: float
    std: float
    p5: float
    p50: float
    p95: float


@dataclass(frozen=True)
class MaskedSample:
    text: str
    positions: tuple[int, ...]  # token indices masked, in the tokenization with special tokens


@dataclass(frozen=True, repr=False)
class ExtensionReport(Result):
    """Diagnostics of one or more extensions of one model with the same words."""

    model: str
    words: tuple[str, ...]  # the new words
    known: tuple[KnownWord, ...]  # words already in the vocabulary (left out)
    norms: NormStats
    strategies: tuple[StrategyReport, ...]
    masked_samples: tuple[MaskedSample, ...]  # the masked-LM check's inputs (empty without a head)
    context_texts: tuple[str, ...]  # texts with new words, compared layer by layer
    notes: tuple[str, ...] = field(default=())

    def __repr__(self) -> str:
        names = ", ".join(s.strategy for s in self.strategies)
        return f"ExtensionReport({len(self.words)} words; {names})"

    def strategy(self, name: str) -> StrategyReport:
        for report in self.strategies:
            if report.strategy == name:
                return report
        raise KeyError(name)

    def to_table(self) -> str:
        layers = next((len(s.layer_cosines) for s in self.strategies if s.layer_cosines), 0)
        head = ["strategy", "norm pct", "cos(pieces)", "nearest (1st word)"]
        if self.masked_samples:
            head += ["KL mean", "KL max", "new top-1", "new mass"]
        if layers:
            head += ["word cos L0", f"word cos L{layers - 1}", f"context cos L{layers - 1}"]
        rows = []
        for s in self.strategies:
            first = s.words[0].nearest[0].token if s.words and s.words[0].nearest else None
            row: list[Any] = [s.strategy, s.mean_norm_percentile, s.mean_cosine_pieces, visible(first or "-")]
            if self.masked_samples:
                m = s.masked
                row += [None, None, None, None] if m is None else [m.kl_mean, m.kl_max, m.new_top1_rate, m.new_mass]
            if layers:
                words, context = s.layer_cosines, s.context_cosines
                row += [words[0], words[-1]] if words else [None, None]
                row += [context[-1]] if context else [None]
            rows.append(row)
        n = self.norms
        lines = [
            f"{len(self.words)} new words in {self.model}",
            f"Old rows' norms: mean {n.mean:.4g}, std {n.std:.4g}, 5% {n.p5:.4g}, median {n.p50:.4g}, 95% {n.p95:.4g}",
            "",
            table(head, rows),
            "",
            "norm pct: share of old rows with a smaller norm (mean over words); cos(pieces): cosine with the old "
            "pieces' mean.",
        ]
        if self.masked_samples:
            positions = self.strategies[0].masked.positions if self.strategies[0].masked else 0
            lines.append(
                f"Masked-LM check: {positions} masked positions in {len(self.masked_samples)} texts without new words;"
                " KL(old || new) in nats; new top-1: share where a new word became the top prediction."
            )
        if layers:
            lines.append(
                f"Contextual check: {len(self.context_texts)} texts with new words; word cos: the new token's vector "
                "against its old pieces' mean; context cos: the other tokens, old model against new."
            )
        if self.known:
            known = ", ".join(f"{visible(k.word)} ({k.id})" for k in self.known)
            lines.append(f"Already in the vocabulary, left out: {known}.")
        for s in self.strategies:
            lines += ["", f"{s.strategy}:", _word_table(s.words)]
        lines += [f"note: {note}" for note in self.notes]
        return "\n".join(lines)


def _word_table(words: Sequence[WordReport], shown: int = 20) -> str:
    rows = [
        (
            visible(w.word),
            w.id,
            w.norm,
            w.norm_percentile,
            w.cosine_pieces,
            ", ".join(f"{visible(n.token)} {n.cosine:.2f}" for n in w.nearest[:3]),
            None if w.layer_cosines is None else w.layer_cosines[-1],
        )
        for w in words[:shown]
    ]
    text = table(["word", "id", "norm", "norm pct", "cos(pieces)", "nearest", "cos last layer"], rows)
    if len(words) > shown:
        text += f"\n… and {len(words) - shown} more words (all of them in --json / to_dict())."
    return text


def compare_strategies(
    model: Model,
    words: Iterable[str],
    strategies: Sequence[str] = ("random", "mean", "mean-resizing", "pieces", "neighbors"),
    *,
    extend: ExtendOptions = ExtendOptions(),  # noqa: B008 - frozen; its strategy is replaced by each of `strategies`
    options: ReportOptions = ReportOptions(),
    rows: Mapping[str, Any] | str | os.PathLike[str] | None = None,
) -> ExtensionReport:
    """Plan the extension of `model` with `words` under each strategy (nothing written) and report on all of them."""
    import dataclasses

    _check_options(options)
    if isinstance(strategies, str):
        strategies = [strategies]
    strategies = list(dict.fromkeys(strategies))
    if not strategies:
        raise InputError("No strategy was given.", f"Choose from: {', '.join(STRATEGIES)}.")
    words = list(words)
    extensions = [
        plan_extension(
            model,
            words,
            dataclasses.replace(extend, strategy=name),  # type: ignore[arg-type]
            rows=rows if name == "rows" else None,
        )
        for name in strategies
    ]
    return report_extensions(model, extensions, options)


def report_extensions(
    model: Model,
    extensions: Sequence[Extension],
    options: ReportOptions = ReportOptions(),
) -> ExtensionReport:
    """Diagnostics of extensions of `model` that add the same words (e.g. one per strategy)."""
    if not extensions:
        raise InputError("No extension was given.", "Plan one with plan_extension.")
    first = extensions[0]
    if any([w.token for w in e.added] != [w.token for w in first.added] for e in extensions):
        raise InputError("The extensions add different words.", "Compare extensions of the same words.")
    _check_options(options)
    index = open_index(model, options.cache_dir)
    matrix = model.embedding_weights.word_embeddings  # (V, E)
    allowed = index.allowed(TokenFilter())
    norms = np.sort(np.linalg.norm(matrix[allowed].astype(np.float64), axis=1))
    stats = NormStats(
        mean=float(norms.mean()),
        std=float(norms.std()),
        p5=float(np.percentile(norms, 5)),
        p50=float(np.percentile(norms, 50)),
        p95=float(np.percentile(norms, 95)),
    )
    notes: list[str] = []
    masked_texts, context_texts = _split_texts(first, options, notes)
    runner = _Runner(model, first, options, masked_texts, context_texts, notes)
    reports = []
    for extension in extensions:
        static = _static_words(model, extension, index, norms, options)
        masked, per_word, layer_means, context_means = runner.run(extension)
        words = tuple(WordReport(**s, **_layers_of(per_word, s["id"])) for s in static)
        reports.append(StrategyReport(extension.strategy, words, masked, layer_means, context_means))
    return ExtensionReport(
        model=model.source.description,
        words=tuple(w.word for w in first.added),
        known=first.known,
        norms=stats,
        strategies=tuple(reports),
        masked_samples=runner.samples,
        context_texts=tuple(context_texts),
        notes=tuple(notes),
    )


def _check_options(options: ReportOptions) -> None:
    if not isinstance(options, ReportOptions):
        raise InputError(f"options must be ReportOptions, got {type(options).__name__}.", "Pass ReportOptions(k=5).")
    whole_number(options.k, "k", minimum=1)
    whole_number(options.context_words, "context_words", minimum=1)
    seed(options.seed, "seed (--seed)")
    if not 0 < real_number(options.mask_rate, "mask_rate") <= 1:
        raise InputError(f"mask_rate must be in (0, 1], got {options.mask_rate!r}.", "Example: mask_rate=0.15.")
    if not isinstance(options.texts, (tuple, list)) or not all(isinstance(t, str) for t in options.texts):
        raise InputError("texts must be a tuple of strings.", "Pass texts=('one text', 'another text').")
    if not isinstance(options.run, RunOptions):
        raise InputError(f"run must be RunOptions, got {type(options.run).__name__}.", "Pass RunOptions().")


def _layers_of(per_word: dict[int, tuple[tuple[float, ...], int]], token_id: int) -> dict[str, Any]:
    cosines, count = per_word.get(token_id, (None, 0))
    return {"layer_cosines": cosines, "contexts": count}


def _static_words(
    model: Model, extension: Extension, index: Any, norms: np.ndarray, options: ReportOptions
) -> list[dict[str, Any]]:
    """Per word: norm against the old norms, cosine with the pieces' mean, nearest old tokens."""
    matrix = model.embedding_weights.word_embeddings
    found = neighbors_many(model, list(extension.rows), options.k, index=index)
    out = []
    for n, word in enumerate(extension.added):
        row = extension.rows[n].astype(np.float64)
        pieces = matrix[list(word.piece_ids)].astype(np.float64).mean(axis=0)
        denominator = np.linalg.norm(row) * np.linalg.norm(pieces)
        norm = float(np.linalg.norm(row))
        out.append(
            dict(
                word=word.word,
                token=word.token,
                id=word.id,
                norm=norm,
                norm_percentile=float(100.0 * np.searchsorted(norms, norm) / len(norms)),
                norm_z=float((norm - norms.mean()) / norms.std()) if norms.std() > 0 else 0.0,
                cosine_pieces=float(row @ pieces / denominator) if denominator > 0 else 0.0,
                nearest=tuple(Nearest(x.token, x.id, x.score) for x in found[n].neighbors),
            )
        )
    return out


def _contains_new(extension: Extension, text: str) -> bool:
    new = set(extension.ids)
    return any(i in new for i in extension.tokenizer.encode(text).ids)


def _split_texts(extension: Extension, options: ReportOptions, notes: list[str]) -> tuple[list[str], list[str]]:
    """Texts without new words (masked-LM check) and texts with them (contextual check)."""
    given = [t for t in options.texts if t.strip()]
    with_new = [t for t in given if _contains_new(extension, t)]
    without = [t for t in given if not _contains_new(extension, t)]
    if not without:
        without = list(MASKED_SAMPLE)
    if not with_new:
        chosen = extension.added[: options.context_words]
        with_new = [template.format(word=w.word) for w in chosen for template in CONTEXT_TEMPLATES]
        if len(extension.added) > len(chosen):
            notes.append(
                f"The contextual check puts the first {len(chosen)} of {len(extension.added)} new words into "
                f"{len(CONTEXT_TEMPLATES)} template sentences each (ReportOptions.context_words)."
            )
    return without, with_new


class _Runner:
    """The source model once as a torch model, resized once; each extension's rows are written into it in turn."""

    def __init__(
        self,
        model: Model,
        first: Extension,
        options: ReportOptions,
        masked_texts: list[str],
        context_texts: list[str],
        notes: list[str],
    ) -> None:
        import torch

        from ..core.loader import load_torch_model, quiet_transformers

        self.model, self.options, self.notes = model, options, notes
        self.mlm = has_mlm_head(model)
        if model.source.path is None:
            raise InputError("The report needs a model loaded from its directory.", "Load it with load_model(PATH).")
        self.net = load_torch_model(model.source.path, "masked-lm" if self.mlm else "base")
        self.ids = first.ids
        self.samples: tuple[MaskedSample, ...] = ()
        self.old_log_probs: np.ndarray | None = None
        if self.mlm:
            self.samples, self.inputs = self._mask(masked_texts)
            self.old_log_probs = self._masked_log_probs()  # (positions, V) before any new row exists
        else:
            notes.append("The model has no masked-LM head: the masked-prediction check does not apply.")
        self.context_texts = context_texts
        self.old_states = hidden_states(model, context_texts, options=options.run) if context_texts else None
        with torch.random.fork_rng(devices=[]), quiet_transformers():
            self.net.resize_token_embeddings(first.new_rows, mean_resizing=False)

    def _mask(self, texts: list[str]) -> tuple[tuple[MaskedSample, ...], list[list[int]]]:
        vocabulary = self.model.vocabulary
        mask = next(
            (
                vocabulary.token_to_id(t)
                for t in ("[MASK]", "<mask>", "[mask]")
                if vocabulary.token_to_id(t) is not None
            ),
            None,
        )
        if mask is None:
            raise InputError(
                "The tokenizer has no mask token, so masked predictions cannot be checked.",
                "Use a model trained with masked-LM (its tokenizer has [MASK] or <mask>), or use extend without a "
                "report.",
            )
        rng = np.random.default_rng(self.options.seed)
        limit = max_length(self.model)
        samples, inputs, skipped = [], [], 0
        for text in texts:
            encoding = vocabulary.tokenizer.encode(text)
            ids = list(encoding.ids)
            content = [i for i, special in enumerate(encoding.special_tokens_mask) if not special]
            if not content or (limit is not None and len(ids) > limit):
                skipped += 1
                continue
            count = max(1, round(self.options.mask_rate * len(content)))
            positions = sorted(int(p) for p in rng.choice(content, size=count, replace=False))
            for p in positions:
                ids[p] = mask
            samples.append(MaskedSample(text, tuple(positions)))
            inputs.append(ids)
        if skipped:
            self.notes.append(f"{skipped} masked-LM text(s) were empty or longer than the model's maximum: left out.")
        if not samples:
            raise InputError("No text is left for the masked-LM check.", "Give shorter texts without the new words.")
        return tuple(samples), inputs

    def _masked_log_probs(self) -> np.ndarray:
        """log-probabilities at every masked position: (positions, vocabulary) float64."""
        import torch

        pad = self.model.config.pad_token_id or 0
        out = []
        for start in range(0, len(self.inputs), 32):
            batch = self.inputs[start : start + 32]
            longest = max(len(ids) for ids in batch)
            ids = torch.full((len(batch), longest), pad, dtype=torch.long)
            attention = torch.zeros((len(batch), longest), dtype=torch.long)
            for row, seq in enumerate(batch):
                ids[row, : len(seq)] = torch.tensor(seq)
                attention[row, : len(seq)] = 1
            with torch.inference_mode():
                logits = self.net(input_ids=ids, attention_mask=attention).logits.double()  # (B, T, V)
            for row, sample in enumerate(self.samples[start : start + 32]):
                out.append(torch.log_softmax(logits[row, list(sample.positions)], dim=-1).numpy())
        return np.concatenate(out)

    def _write_rows(self, extension: Extension) -> None:
        import torch

        ids = torch.tensor(extension.ids, dtype=torch.long)
        embeddings = self.net.get_input_embeddings()
        with torch.no_grad():
            embeddings.weight[ids] = torch.from_numpy(extension.rows).to(embeddings.weight.dtype)
            output = self.net.get_output_embeddings() if self.mlm else None
            if output is not None:
                for values in extension.head.values():  # decoder weight (when untied) and output bias
                    tensor = torch.from_numpy(values)
                    if values.ndim == 2 and output.weight.data_ptr() != embeddings.weight.data_ptr():
                        output.weight[ids] = tensor
                    elif values.ndim == 1 and getattr(output, "bias", None) is not None:
                        output.bias[ids] = tensor

    def run(
        self, extension: Extension
    ) -> tuple[MaskedShift | None, dict[int, tuple[tuple[float, ...], int]], tuple[float, ...] | None, Any]:
        from ..core.model import from_objects

        self._write_rows(extension)
        masked = self._shift(extension) if self.mlm else None
        if self.old_states is None:
            return masked, {}, None, None
        new_model = from_objects(self.net, extension.tokenizer)
        new_states = hidden_states(new_model, self.context_texts, options=self.options.run)
        return (masked, *_compare_states(self.old_states, new_states, set(extension.ids)))

    def _shift(self, extension: Extension) -> MaskedShift:
        assert self.old_log_probs is not None
        new = self._masked_log_probs()  # (positions, V + n)
        old = self.old_log_probs
        vocab = old.shape[1]
        p_old = np.exp(old)
        kl = (p_old * (old - new[:, :vocab])).sum(axis=1)  # (positions,)
        new_ids = np.asarray(extension.ids)
        top_new = new.argmax(axis=1)
        new_top = np.isin(top_new, new_ids)
        return MaskedShift(
            positions=len(kl),
            kl_mean=float(kl.mean()),
            kl_median=float(np.median(kl)),
            kl_max=float(kl.max()),
            new_top1=int(new_top.sum()),
            new_top1_rate=float(new_top.mean()),
            top1_changed_rate=float((top_new != old.argmax(axis=1)).mean()),
            new_mass=float(np.exp(new[:, new_ids]).sum(axis=1).mean()),
        )


def _cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise cosine of (layers, H) arrays: (layers,)."""
    a, b = a.astype(np.float64), b.astype(np.float64)
    denominator = np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1)
    return np.divide((a * b).sum(axis=-1), denominator, out=np.zeros(len(a)), where=denominator > 0)


def _compare_states(
    old: Any, new: Any, new_ids: set[int]
) -> tuple[dict[int, tuple[tuple[float, ...], int]], tuple[float, ...] | None, tuple[float, ...] | None]:
    """Per new token id: mean per-layer cosine with its old pieces' mean, and the number of occurrences; the mean
    over all occurrences; and the per-layer cosine of the other (non-special) tokens, matched by character offsets."""
    per_word: dict[int, list[np.ndarray]] = {}
    context: list[np.ndarray] = []
    for before, after in zip(old.results, new.results, strict=True):
        text = after.text
        old_by_span = {(t.start, t.end): t.index for t in before.tokens if not t.special}
        for token in after.tokens:
            if token.special:
                continue
            if token.id in new_ids:
                span = text[token.start : token.end]
                start = token.start + len(span) - len(span.lstrip())  # lstrip tokens cover the space before
                inside = [t.index for t in before.tokens if not t.special and start <= t.start and t.end <= token.end]
                if not inside:
                    continue
                pieces = before.states[:, inside].mean(axis=1)  # (layers, H)
                per_word.setdefault(token.id, []).append(_cosines(after.states[:, token.index], pieces))
            elif (token.start, token.end) in old_by_span:
                same = before.states[:, old_by_span[token.start, token.end]]  # (layers, H)
                context.append(_cosines(after.states[:, token.index], same))
    words = {i: (tuple(float(v) for v in np.mean(c, axis=0)), len(c)) for i, c in per_word.items()}
    every = [c for cs in per_word.values() for c in cs]
    word_means = tuple(float(v) for v in np.mean(every, axis=0)) if every else None
    context_means = tuple(float(v) for v in np.mean(context, axis=0)) if context else None
    return words, word_means, context_means
