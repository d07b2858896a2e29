"""New words: add whole-word tokens to a model's vocabulary, with principled first rows, saved as a new model.

Strategies for the new rows of `word_embeddings` (E values each):

- `random`: normal(0, initializer_range), transformers' old default (`mean_resizing=False`).
- `mean`: the mean of all old rows, the same for every word (Hewitt 2021).
- `mean-resizing`: transformers' current default, reproduced: a draw from a multivariate normal around the old mean
  with 1e-9 times the old rows' covariance (the mean alone when that covariance is not positive definite).
- `pieces`: the mean of the rows of the pieces the old tokenizer splits the word into (FVT, Gee et al. 2022);
  `pieces-first` / `pieces-last` take the first / last piece; `pieces-weighted` weights each piece by its number of
  characters (word-start markers `##`, `Ġ`, `▁` not counted).
- `neighbors`: a mix of the k old tokens nearest (cosine) to the pieces' mean, weighted by softmax(cosine / T)
  (FOCUS's weighting; WECHSEL mixes neighbours the same way); the special and [unused] rows never take part.
- `rows`: a vector given by the user for each word (word2vec text format, or a mapping in Python).

A model with a masked-LM head gets the same treatment for every vocabulary-sized head tensor: the decoder matrix (when
stored and tied, the new input rows; when untied, the same strategy over the decoder's own rows) and the output
bias. Strategies that mix old rows give the new bias the same mix of the old biases, so the new word's logit starts as
the same mix of the mixed tokens' logits; `random` gives 0 (transformers' Linear init), `mean-resizing` transformers'
normal(mean, 1e-9 std), `mean` and `rows` the mean bias.

The words become added tokens (`single_word`, matched on the normalised text, absorbing the space before them for
byte-level BPE and SentencePiece vocabularies), so transformers' tokenizer and bertlens' own split text alike. The
new model is written into a folder beside the destination and moved in only when complete; the source is only read.
Weights are copied tensor by tensor from the source's safetensors files (dtype kept), so no torch model is built.
"""

from .inputs import MIXING, STRATEGIES, ExtendOptions, Strategy, check_destination, read_rows, read_words
from .plan import plan_extension
from .report import compare_strategies, report_extensions
from .report_results import ExtensionReport, ReportOptions
from .results import ExtendResult, Extension, KnownWord, NewWord, Source
from .save import extend_vocabulary, save_extension
from .strategies import MEAN_RESIZING_EPSILON, has_mlm_head, mean_resizing_rows

__all__ = [
    "MEAN_RESIZING_EPSILON",
    "MIXING",
    "STRATEGIES",
    "ExtendOptions",
    "ExtendResult",
    "Extension",
    "ExtensionReport",
    "KnownWord",
    "NewWord",
    "ReportOptions",
    "Source",
    "Strategy",
    "check_destination",
    "compare_strategies",
    "extend_vocabulary",
    "has_mlm_head",
    "mean_resizing_rows",
    "plan_extension",
    "read_rows",
    "read_words",
    "report_extensions",
    "save_extension",
]
