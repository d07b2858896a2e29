"""The extension report's forward passes: the source model built once as a torch model, resized once, and each
extension's rows written into it in turn.

`ReportRunner` masks texts without new words and measures how the masked-LM predictions move (`MaskedShift`), and runs
texts with new words through the old and the new model; `compare_states` compares their hidden states layer by layer.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..contextual.states import HiddenStates, hidden_states
from ..core.errors import InputError
from ..core.model import Model
from ..core.tokens import max_length
from .report_results import MaskedSample, MaskedShift, ReportOptions
from .results import Extension
from .strategies import has_mlm_head


class ReportRunner:
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
        return (masked, *compare_states(self.old_states, new_states, set(extension.ids)))

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
    cosines: np.ndarray = np.divide((a * b).sum(axis=-1), denominator, out=np.zeros(len(a)), where=denominator > 0)
    return cosines


def compare_states(
    old: HiddenStates, new: HiddenStates, new_ids: set[int]
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
