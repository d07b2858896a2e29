"""`Lens`: one model and the questions a reader asks of it interactively, as methods that only delegate.

Each method calls one library function with the Lens's model (and its similarity index and cache folder where the
function takes them); every other argument is passed through unchanged, so each default lives in one place: the
function's signature (and the option dataclasses of `core/options.py` and the packages). Bulk and corpus builders that
are not interactive (extract, distill, pretrain, calibration fits, benchmark runs) are called from their packages:
`bertlens.contextual`, `bertlens.wic`, `bertlens.extend`, `bertlens.training`. Heavier capabilities are imported on
first call.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from .core.model import Model, load_model
from .similarity.index import VectorIndex, open_index

if TYPE_CHECKING:  # imported on first use, so that opening a Lens stays light
    from .contextual import ContextComparison, HiddenStates, SentenceVectors, WordVectors
    from .core.tokens import Tokenization
    from .embeddings import EmbeddingComparison, EmbeddingLayerExplanation, ExportResult, ModelInfo, PositionSimilarity
    from .embeddings.static import StaticVector, StaticVectors
    from .extend import ExtendResult, Extension
    from .occurrences import IndexResult, SearchResult
    from .plots import Rendered
    from .senses import SensesResult
    from .similarity import AnalogyEvaluation, AnalogyResult, Neighbors, NeighborsBatch, PairEvaluation, PairSimilarity
    from .similarity.query import Query
    from .spaces import SpaceDiff
    from .views import Projection, Trajectory
    from .wic import SameSenseResult


class Lens:
    """A model opened for inspection: `Lens()` is the default model, `Lens("path/to/folder")` a local one, and
    `Lens("bert-base-uncased")` (or `"owner/name@revision"`) one from the Hugging Face Hub, fetched into its cache once
    and read from there after (`offline=True` never fetches; `progress=True` shows the fetch on standard error). Each
    method passes its arguments on to the function it names, whose docstring describes them all.

    >>> lens = Lens()
    >>> lens.tokens("hello, world!").ids
    [101, 7592, 1010, 2088, 999, 102]
    """

    def __init__(
        self,
        model: str | os.PathLike[str] | Model | Any | None = None,
        *,
        tokenizer: Any = None,
        cache_dir: str | os.PathLike[str] | None = None,
        offline: bool = False,
        progress: bool = False,
    ) -> None:
        if not isinstance(model, Model):
            model = load_model(model, tokenizer=tokenizer, offline=offline, progress=progress)
        self.model: Model = model
        self.cache_dir = cache_dir
        self._index: VectorIndex | None = None

    def __repr__(self) -> str:
        return f"Lens({self.model!r})"

    @property
    def index(self) -> VectorIndex:
        """The similarity index (opened on first use, then kept; `bertlens.similarity.open_index`).

        >>> lens.index.precompute()  # the similarity index: opened on first use, cached on disk  # doctest: +SKIP
        """
        if self._index is None:
            self._index = open_index(self.model, self.cache_dir)
        return self._index

    def info(self) -> ModelInfo:
        """What the model is: family, sizes, position scheme, parameters, where it was loaded from (`info`).

        >>> lens.info().vocab_size, lens.info().layers
        (30522, 6)
        """
        from .embeddings import info

        return info(self.model)

    def tokens(self, text: str, *args: Any, **options: Any) -> Tokenization:
        """The text (or a pair) as pieces, ids, character offsets, words and segments (`bertlens.tokenize`).

        >>> [(token.piece, token.start, token.end, token.word) for token in lens.tokens("I am Sinan").tokens][3:5]
        [('sin', 5, 8, 2), ('##an', 8, 10, 2)]
        """
        from .core.tokens import tokenize

        return tokenize(self.model, text, *args, **options)

    def explain(self, text: str, *args: Any, **options: Any) -> EmbeddingLayerExplanation:
        """The embedding layer laid bare for every token, checked against the model's own output (`bertlens.explain`).

        >>> lens.explain("hello, world!").max_abs_diff  # bit for bit on the default model
        0.0
        """
        from .embeddings import explain

        return explain(self.model, text, *args, **options)

    def compare(self, text_a: str, text_b: str, **options: Any) -> EmbeddingComparison:
        """The tokens two texts share, compared (`bertlens.embeddings.compare_inputs`).

        >>> [token.piece for token in lens.compare("I like eating bread", "The banana bread was horrible").shared]
        ['[CLS]', 'bread', '[SEP]']
        """
        from .embeddings import compare_inputs

        return compare_inputs(self.model, text_a, text_b, **options)

    def vector(self, query: str, *args: Any, **options: Any) -> StaticVector:
        """A token's (or id's) row of `word_embeddings`, or a word's pieces' rows pooled (`bertlens.vector`).

        >>> lens.vector("Sinan").pieces
        ('sin', '##an')
        """
        from .embeddings import vector

        return vector(self.model, query, *args, **options)

    def vectors(self, queries: Sequence[str | int], *args: Any, **options: Any) -> StaticVectors:
        """`vector` for several queries, one result each (`bertlens.embeddings.vectors`).

        >>> [v.pieces for v in lens.vectors(["dog", "Sinan", 2293])]
        [('dog',), ('sin', '##an'), ('love',)]
        """
        from .embeddings import vectors

        return vectors(self.model, queries, *args, **options)

    def token_vector(self, token: str | int) -> StaticVector:
        """One row of `word_embeddings`, by token or id (`bertlens.token_vector`).

        >>> lens.token_vector("dog").ids
        (3899,)
        """
        from .embeddings import token_vector

        return token_vector(self.model, token)

    def word_vector(self, word: str, *args: Any, **options: Any) -> StaticVector:
        """A word's pieces' rows of `word_embeddings` pooled (`bertlens.word_vector`).

        >>> lens.word_vector("Sinan", pool="first").pieces
        ('sin', '##an')
        """
        from .embeddings import word_vector

        return word_vector(self.model, word, *args, **options)

    def position_similarity(self, *args: Any, **options: Any) -> PositionSimilarity:
        """Cosines between the position rows, and the token-type rows (`bertlens.embeddings.position_similarity`).

        >>> lens.position_similarity(limit=16).cosine.shape
        (16, 16)
        """
        from .embeddings import position_similarity

        return position_similarity(self.model, *args, **options)

    def export(self, directory: str | os.PathLike[str], *args: Any, **options: Any) -> ExportResult:
        """The whole input matrix with its vocabulary into `directory` (`bertlens.export_matrix`).

        >>> lens.export("vectors-npy/", "npy").files
        ('vectors-npy/word_embeddings.npy', 'vectors-npy/vocab.txt')
        """
        from .embeddings import export_matrix

        return export_matrix(self.model, directory, *args, **options)

    # --- similarity (bertlens.similarity): the Lens's index is used and kept ---

    def neighbors(self, query: Query, *args: Any, **options: Any) -> Neighbors:
        """The rows of the input matrix nearest to a token, word, id, vector or `Expression` (`bertlens.neighbors`).

        >>> [n.token for n in lens.neighbors("dog", 3).neighbors]
        ['dogs', 'canine', 'puppy']
        """
        from .similarity import neighbors

        return neighbors(self.model, query, *args, **{"index": self.index, **options})

    def neighbors_many(self, queries: Sequence[Query], *args: Any, **options: Any) -> NeighborsBatch:
        """`neighbors` for several queries at once (`bertlens.similarity.neighbors_many`).

        >>> [(r.query, [n.token for n in r.neighbors]) for r in lens.neighbors_many(["dog", "cat"], 2)]
        [('dog', ['dogs', 'canine']), ('cat', ['cats', 'kitten'])]
        """
        from .similarity import neighbors_many

        return neighbors_many(self.model, queries, *args, **{"index": self.index, **options})

    def similarity(self, a: str | int, b: str | int, **options: Any) -> PairSimilarity:
        """The cosine (or dot, or distance) of two tokens or words, raw or adjusted (`bertlens.similarity`).

        >>> round(lens.similarity("bread", "loaf").score, 2)
        0.53
        """
        from .similarity import similarity

        return similarity(self.model, a, b, **{"index": self.index, **options})

    def analogy(self, a: str | int, b: str | int, c: str | int, **options: Any) -> AnalogyResult:
        """a : b :: c : ? among the vocabulary (`bertlens.analogy`).

        >>> [answer.token for answer in lens.analogy("man", "king", "woman", k=3).answers]
        ['queen', 'kings', 'monarch']
        """
        from .similarity import analogy

        return analogy(self.model, a, b, c, **{"index": self.index, **options})

    def evaluate(self, benchmark: str | os.PathLike[str], **options: Any) -> PairEvaluation:
        """Spearman and Pearson of the input matrix's cosines on a word-similarity benchmark (`evaluate_pairs`).

        >>> round(lens.evaluate("rg65").spearman, 3)
        0.707
        """
        from .similarity import evaluate_pairs

        return evaluate_pairs(self.model, benchmark, **{"cache_dir": self.cache_dir, **options})

    def evaluate_analogies(self, *args: Any, **options: Any) -> AnalogyEvaluation:
        """Accuracy on an analogy benchmark, name or file (`bertlens.similarity.evaluate_analogies`).

        >>> round(lens.evaluate_analogies("google").accuracy, 3)
        0.551
        """
        from .similarity import evaluate_analogies

        return evaluate_analogies(self.model, *args, **{"index": self.index, **options})

    # --- contextual vectors (bertlens.contextual) ---

    def hidden_states(self, texts: str | Sequence[str], **options: Any) -> HiddenStates:
        """Every layer's vector of every token of `texts`, layer 0 the embedding output (`bertlens.hidden_states`).

        >>> lens.hidden_states("I like eating bread").results[0].states.shape  # layers 0..6 x tokens x hidden
        (7, 6, 384)
        """
        from .contextual import hidden_states

        return hidden_states(self.model, texts, **options)

    def word_vectors(self, text: str, **options: Any) -> WordVectors:
        """One vector per word of `text`, its pieces pooled (`bertlens.word_vectors`).

        >>> lens.word_vectors("I like eating bread", layers=[6]).vectors.shape
        (4, 384)
        """
        from .contextual import word_vectors

        return word_vectors(self.model, text, **options)

    def sentence_vectors(self, texts: str | Sequence[str], **options: Any) -> SentenceVectors:
        """One vector per text: [CLS], or the mean or max of its tokens (`bertlens.sentence_vectors`).

        >>> lens.sentence_vectors(["I like eating bread", "a dog"]).vectors.shape
        (2, 384)
        """
        from .contextual import sentence_vectors

        return sentence_vectors(self.model, texts, **options)

    def context(self, word: str, sentences: Sequence[str], **options: Any) -> ContextComparison:
        """How `word`'s vector differs between `sentences`, layer by layer (`bertlens.compare_contexts`).

        >>> lens.context("bread", ["I like eating bread", "The banana bread was horrible"]).layers[0].mean_cosine
        1.0
        """
        from .contextual import compare_contexts

        return compare_contexts(self.model, word, sentences, **options)

    def project_tokens(self, *args: Any, **options: Any) -> Projection:
        """Vocabulary rows (these tokens, or the first `count` whole words) projected (`bertlens.project_tokens`).

        >>> lens.project_tokens(["king", "queen", "man", "woman"]).points.shape
        (4, 2)
        """
        from .views import project_tokens

        return project_tokens(self.model, *args, **options)

    def project_word_groups(self, *args: Any, **options: Any) -> Projection:
        """Common words in groups a reader knows, or your own, projected (`bertlens.views.project_word_groups`).

        >>> lens.project_word_groups(["months", "colours"], method="pca").metadata["group"][0]  # doctest: +SKIP
        'months'
        """
        from .views import project_word_groups

        return project_word_groups(self.model, *args, **options)

    def project_contextual(self, texts: str | Sequence[str], *args: Any, **options: Any) -> Projection:
        """The words (or tokens) of `texts` at a layer, projected (`bertlens.views.project_contextual`).

        >>> lens.project_contextual(["I like eating bread", "a dog barked"], layer=6).labels
        ('I', 'like', 'eating', 'bread', 'a', 'dog', 'barked')
        """
        from .views import project_contextual

        return project_contextual(self.model, texts, *args, **options)

    def trajectory(self, word: str, sentences: Sequence[str], *args: Any, **options: Any) -> Trajectory:
        """`word` at every layer in each sentence, projected into one space (`bertlens.trajectory`).

        >>> lens.trajectory("bread", ["I like eating bread", "The banana bread was horrible"]).points.shape
        (2, 7, 2)
        """
        from .views import trajectory

        return trajectory(self.model, word, sentences, *args, **options)

    def diff(self, other: Lens | Model | str | os.PathLike[str] | None, **options: Any) -> SpaceDiff:
        """This model's embedding space beside `other`'s: a Lens, a Model or what load_model takes (`bertlens.diff`).

        >>> [token.token for token in lens.diff("demo-bert/", top=3).moved]  # doctest: +SKIP
        """
        from .spaces import diff

        return diff(self.model, other.model if isinstance(other, Lens) else Lens(other).model, **options)

    def plot(self, result: Any, target: str | os.PathLike[str], *args: Any, **options: Any) -> Rendered:
        """Draw any result that has a picture into `target`: .png, .svg or .html (`bertlens.render`).

        >>> lens.plot(lens.project_tokens(["king", "queen", "man", "woman"]), "royals.png").format
        'png'
        """
        from .plots import render

        return render(result, target, *args, **options)

    # --- a corpus's occurrences (bertlens.occurrences) ---

    def index_corpus(self, corpus: str | os.PathLike[str], out: str | os.PathLike[str], **options: Any) -> IndexResult:
        """Every word occurrence of a corpus with its vectors, into an index (`bertlens.occurrences.index_corpus`).

        >>> lens.index_corpus("sample", "sample-index", max_texts=300).texts  # doctest: +SKIP
        300
        """
        from .occurrences import index_corpus

        return index_corpus(self.model, corpus, out, **options)

    def search(self, index: str | os.PathLike[str], *args: Any, **options: Any) -> SearchResult:
        """Occurrences in an index used most like the example's [marked] word (`occurrences.search_occurrences`).

        >>> len(lens.search("sample-index", "a new world [record]", options=SearchOptions(k=5)).hits)
        5
        """
        from .occurrences import search_occurrences

        return search_occurrences(self.model, index, *args, **options)

    def senses(self, word: str, **options: Any) -> SensesResult:
        """`word`'s senses in an occurrence `index` or a `corpus` (`bertlens.senses.word_senses`).

        >>> len(lens.senses("record", index="sample-index").senses) > 1
        True
        """
        from .senses import word_senses

        return word_senses(self.model, word, **options)

    def same_sense(self, word: str, sentence_1: str, sentence_2: str, **options: Any) -> SameSenseResult:
        """Whether `word` has the same sense in both sentences, calibrated (`bertlens.wic.same_sense`).

        >>> lens.same_sense("bank", "I sat on the river bank .", "The bank raised its interest rates .").verdict
        'different senses'
        """
        from .wic import same_sense

        return same_sense(self.model, word, sentence_1, sentence_2, **{"cache_dir": self.cache_dir, **options})

    # --- new words (bertlens.extend) ---

    def plan_extension(self, words: Iterable[str], *args: Any, **options: Any) -> Extension:
        """The new tokens and their first rows, computed but not saved (`bertlens.extend.plan_extension`).

        >>> lens.plan_extension(["aspirinex"], ExtendOptions(strategy="pieces")).new_rows
        30523
        """
        from .extend import plan_extension

        return plan_extension(self.model, words, *args, **options)

    def extend(self, words: Iterable[str], out: str | os.PathLike[str], *args: Any, **options: Any) -> ExtendResult:
        """A copy of the model with `words` added as new tokens, saved into `out` (`bertlens.extend.extend_vocabulary`).

        >>> [word.token for word in lens.extend(["aspirinex"], "drugs-model/").added]
        ['aspirinex']
        """
        from .extend import extend_vocabulary

        return extend_vocabulary(self.model, words, out, *args, **options)
