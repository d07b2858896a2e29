"""`Lens`: one model and every question about it, as methods. It only delegates to the module functions.

A facade, longer than the package's other modules (~400 lines) because it is one short delegating method per
capability and nothing else, in the order of the documentation: tokens and the embedding layer, static rows, similarity,
contextual vectors, views and plots, new words, training. Heavier capabilities are imported on first call.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from .core.model import Model, load_model
from .core.tokens import Tokenization, tokenize
from .embeddings.export import ExportFormat, ExportResult, export_matrix
from .embeddings.info import ModelInfo, info
from .embeddings.layer import EmbeddingComparison, EmbeddingLayerExplanation, compare_inputs, explain
from .embeddings.static import Pool, StaticVector, StaticVectors, token_vector, vector, vectors, word_vector
from .embeddings.token_classes import TokenFilter
from .similarity.index import Adjustment, VectorIndex, open_index
from .similarity.nearest import (
    Metric,
    Neighbors,
    NeighborsBatch,
    PairSimilarity,
    Query,
    neighbors,
    neighbors_many,
    similarity,
)

if TYPE_CHECKING:  # imported on first use, so that opening a Lens stays light
    from .contextual.context import ContextComparison
    from .contextual.contextuality import Contextuality
    from .contextual.distill import DistilledVectors
    from .contextual.engines import RayOptions
    from .contextual.extract import ExtractOptions, ExtractResult
    from .contextual.states import HiddenStates, RunOptions
    from .contextual.vectors import SentenceVectors, WordVectors
    from .core.options import AnalogyMethod, Combine, Level, ProjectionMethod, SentencePool, WordPool
    from .embeddings.positions import PositionSimilarity
    from .extend import ExtendOptions, ExtendResult, Extension
    from .extend.report import ExtensionReport, ReportOptions
    from .occurrences.build import IndexOptions, IndexResult
    from .occurrences.same_sense import Calibration, SameSenseResult
    from .occurrences.search import SearchOptions, SearchResult
    from .occurrences.senses import SensesOptions, SensesResult
    from .occurrences.wic import WicResult
    from .occurrences.wic_readout import WicRecipe
    from .plots.render import PlotOptions, Rendered
    from .similarity.analogy import AnalogyResult
    from .similarity.evaluate import AnalogyEvaluation, PairEvaluation
    from .training import PretrainConfig, PretrainResult
    from .views.projection import Projection, ProjectionSettings
    from .views.trajectory import Trajectory


class Lens:
    """A model opened for inspection: `Lens()` is the default model, `Lens("path/to/folder")` a local one, and
    `Lens("bert-base-uncased")` (or `"owner/name@revision"`) one from the Hugging Face Hub, fetched into its cache once
    and read from there after (`offline=True` never fetches; `progress=True` shows the fetch on standard error).

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
        self.model = (
            model
            if isinstance(model, Model)
            else load_model(model, tokenizer=tokenizer, offline=offline, progress=progress)
        )
        self.cache_dir = cache_dir
        self._index: VectorIndex | None = None

    @property
    def index(self) -> VectorIndex:
        """The similarity index (opened on first use, then kept).

        >>> lens.index.precompute()  # the similarity index: opened on first use, cached on disk  # doctest: +SKIP
        """
        if self._index is None:
            self._index = open_index(self.model, self.cache_dir)
        return self._index

    def precompute_neighbors(self) -> None:
        """Build (once, then cached on disk) the neighbour table: token queries become lookups.

        >>> lens.precompute_neighbors()  # about 15 s once per model; later runs read the cached table  # doctest: +SKIP
        >>> lens.neighbors("dog", 3).neighbors[0].token
        'dogs'
        """
        self.index.precompute()

    def __repr__(self) -> str:
        return f"Lens({self.model!r})"

    def info(self) -> ModelInfo:
        """What the model is: family, sizes, position scheme, parameters, where it was loaded from.

        >>> lens.info().vocab_size
        30522
        >>> lens.info().layers
        6
        """
        return info(self.model)

    def tokens(self, text: str, pair: str | None = None, *, add_special_tokens: bool = True) -> Tokenization:
        """The text (or a pair: `pair` is segment 1) as pieces, ids, character offsets, words and segments. Never padded
        or truncated; `add_special_tokens=False` leaves out [CLS] and [SEP].

        >>> t = lens.tokens("I am Sinan")
        >>> t.ids
        [101, 1045, 2572, 8254, 2319, 102]
        >>> [(token.piece, token.start, token.end, token.word) for token in t.tokens][3:5]
        [('sin', 5, 8, 2), ('##an', 8, 10, 2)]
        """
        return tokenize(self.model, text, pair, add_special_tokens=add_special_tokens)

    def explain(self, text: str, pair: str | None = None, *, check: bool = True) -> EmbeddingLayerExplanation:
        """The embedding layer laid bare for every token of `text` (and `pair`): its `word_embeddings`,
        `position_embeddings` and `token_type_embeddings` rows, their sum, LayerNorm, and the output, checked against
        the model's own `hidden_states[0]` (`check=False` skips running the model, and torch).

        >>> x = lens.explain("hello, world!")
        >>> x.max_abs_diff, x.matches  # bit for bit on the default model
        (0.0, True)
        >>> x.matrix("output").shape  # also "word_row", "position_row", "token_type_row", "sum", ...
        (6, 384)
        """
        return explain(self.model, text, pair, check=check)

    def compare(self, text_a: str, text_b: str, *, check: bool = True) -> EmbeddingComparison:
        """The tokens two texts share, compared: the same output at the same position and segment, otherwise a sum that
        differs by exactly the position rows ("is `bread` the same vector in both?").

        >>> c = lens.compare("I like eating bread", "The banana bread was horrible")
        >>> [token.piece for token in c.shared]
        ['[CLS]', 'bread', '[SEP]']
        """
        return compare_inputs(self.model, text_a, text_b, check=check)

    def vector(self, query: str, pool: Pool = "mean") -> StaticVector:
        """A static vector: a token's (or id's) row of `word_embeddings`, or a word's pieces' rows pooled by `pool`
        (mean, first, last, sum); the answer names the pieces. Several words in one query are refused.

        >>> v = lens.vector("Sinan")
        >>> v.pieces, v.vector.shape
        (('sin', '##an'), (384,))
        """
        return vector(self.model, query, pool)

    def vectors(self, queries: Sequence[str | int], pool: Pool = "mean") -> StaticVectors:
        """`vector` for several queries (tokens, words or ids), one result each.

        >>> vs = lens.vectors(["dog", "Sinan", 2293])
        >>> [v.pieces for v in vs]
        [('dog',), ('sin', '##an'), ('love',)]
        """
        return vectors(self.model, queries, pool)

    def token_vector(self, token: str | int) -> StaticVector:
        """One row of `word_embeddings`, by token or id (a word the vocabulary lacks is an error: see `vector`).

        >>> lens.token_vector("dog").ids
        (3899,)
        >>> lens.token_vector(3899).vector.shape
        (384,)
        """
        return token_vector(self.model, token)

    def word_vector(self, word: str, pool: Pool = "mean") -> StaticVector:
        """A word's vector: its pieces' rows of `word_embeddings` pooled by `pool` (mean, first, last, sum).

        >>> lens.word_vector("Sinan", pool="first").pieces
        ('sin', '##an')
        """
        return word_vector(self.model, word, pool)

    def export(
        self,
        directory: str | os.PathLike[str],
        fmt: ExportFormat = "word2vec",
        *,
        overwrite: bool = False,
        filters: TokenFilter | None = None,
        count: int | None = None,
        progress: bool = False,
    ) -> ExportResult:
        """The whole input matrix with its vocabulary into `directory`: `npy`, `safetensors`, `word2vec` text
        (gensim's `KeyedVectors.load_word2vec_format` reads it) or `tensorboard` (the projector's files). Written
        completely or not at all; an existing export is kept unless `overwrite=True`. `filters` and `count` choose a
        subset (word2vec, tensorboard).

        >>> result = lens.export("vectors-npy/", "npy")
        >>> result.files
        ('vectors-npy/word_embeddings.npy', 'vectors-npy/vocab.txt')
        """
        return export_matrix(
            self.model, directory, fmt, overwrite=overwrite, filters=filters, count=count, progress=progress
        )

    def neighbors(
        self,
        query: Query,
        k: int = 10,
        *,
        metric: Metric = "cosine",
        filters: TokenFilter = TokenFilter(),  # noqa: B008 - frozen dataclass
        adjustment: Adjustment = Adjustment(),  # noqa: B008
        pool: Pool = "mean",
    ) -> Neighbors:
        """The rows of the input matrix nearest to `query`: a token, a word (pieces pooled), an id, a vector or an
        `Expression` (king - man + woman). Specials and [unused] rows are left out unless `filters` says otherwise;
        `adjustment` scores in an anisotropy-adjusted space, with the raw scores beside. The result carries the baseline
        (the mean cosine of random token pairs): how high "high" is.

        >>> [n.token for n in lens.neighbors("dog", 3).neighbors]
        ['dogs', 'canine', 'puppy']
        >>> lens.neighbors(Expression(positive=("king", "woman"), negative=("man",)), 1).neighbors[0].token
        'queen'
        """
        return neighbors(
            self.model, query, k, metric=metric, filters=filters, adjustment=adjustment, pool=pool, index=self.index
        )

    def neighbors_many(
        self,
        queries: list[Query],
        k: int = 10,
        *,
        metric: Metric = "cosine",
        filters: TokenFilter = TokenFilter(),  # noqa: B008
        adjustment: Adjustment = Adjustment(),  # noqa: B008
        pool: Pool = "mean",
    ) -> NeighborsBatch:
        """`neighbors` for several queries at once (one scan, or one table lookup each), one result per query.

        >>> batch = lens.neighbors_many(["dog", "cat"], 2)
        >>> [(result.query, [n.token for n in result.neighbors]) for result in batch]
        [('dog', ['dogs', 'canine']), ('cat', ['cats', 'kitten'])]
        """
        return neighbors_many(
            self.model, queries, k, metric=metric, filters=filters, adjustment=adjustment, pool=pool, index=self.index
        )

    def similarity(
        self,
        a: str | int,
        b: str | int,
        *,
        metric: Metric = "cosine",
        adjustment: Adjustment = Adjustment(),  # noqa: B008
        pool: Pool = "mean",
    ) -> PairSimilarity:
        """The cosine (or dot, or euclidean distance) of two tokens or words, with the pieces used, raw and in an
        anisotropy-adjusted space when `adjustment` asks for one.

        >>> round(lens.similarity("bread", "loaf").score, 2)
        0.53
        >>> centred = lens.similarity("bread", "loaf", adjustment=Adjustment(center=True, remove_top=3))
        """
        return similarity(self.model, a, b, metric=metric, adjustment=adjustment, pool=pool, index=self.index)

    def extend(
        self,
        words: Iterable[str],
        out: str | os.PathLike[str],
        options: ExtendOptions | None = None,
        *,
        rows: Mapping[str, Any] | str | os.PathLike[str] | None = None,
    ) -> ExtendResult:
        """Save a copy of the model with `words` added as new tokens into `out` (see `bertlens.extend`).

        >>> result = lens.extend(["aspirinex"], "drugs-model/", ExtendOptions(strategy="pieces"))
        >>> [word.token for word in result.added]
        ['aspirinex']
        """
        from .extend import ExtendOptions, extend_vocabulary

        return extend_vocabulary(self.model, words, out, options or ExtendOptions(), rows=rows)

    def extend_report(
        self,
        words: Iterable[str],
        strategies: Sequence[str] = ("random", "mean", "mean-resizing", "pieces", "neighbors"),
        *,
        extend: ExtendOptions | None = None,
        options: ReportOptions | None = None,
        rows: Mapping[str, Any] | str | os.PathLike[str] | None = None,
        progress: bool = False,
    ) -> ExtensionReport:
        """What new rows for `words` would do under each strategy, side by side (see `bertlens.extend.report`).

        >>> report = lens.extend_report(["aspirinex"], ["mean", "pieces"])  # doctest: +SKIP
        >>> report.recommended  # doctest: +SKIP
        'pieces'
        """
        from .extend import ExtendOptions
        from .extend.report import ReportOptions, compare_strategies

        return compare_strategies(
            self.model,
            words,
            strategies,
            extend=extend or ExtendOptions(),
            options=options or ReportOptions(cache_dir=None if self.cache_dir is None else str(self.cache_dir)),
            rows=rows,
            progress=progress,
        )

    def plan_extension(
        self,
        words: Iterable[str],
        options: ExtendOptions | None = None,
        *,
        rows: Mapping[str, Any] | str | os.PathLike[str] | None = None,
    ) -> Extension:
        """The new tokens and their first rows, computed but not saved (see `bertlens.extend`).

        >>> plan = lens.plan_extension(["aspirinex"], ExtendOptions(strategy="pieces"))
        >>> plan.old_rows, plan.new_rows
        (30522, 30523)
        """
        from .extend import ExtendOptions, plan_extension

        return plan_extension(self.model, words, options or ExtendOptions(), rows=rows)

    def report_extensions(
        self, extensions: Sequence[Extension], options: ReportOptions | None = None
    ) -> ExtensionReport:
        """What already planned extensions do to the model, side by side (see `bertlens.extend.report`).

        >>> plans = [lens.plan_extension(["aspirinex"], ExtendOptions(strategy=s)) for s in ("mean", "pieces")]
        >>> lens.report_extensions(plans).recommended  # doctest: +SKIP
        'pieces'
        """
        from .extend.report import ReportOptions, report_extensions

        return report_extensions(self.model, extensions, options or ReportOptions())

    # --- similarity: analogies and benchmarks ---

    def analogy(
        self,
        a: str | int,
        b: str | int,
        c: str | int,
        *,
        k: int = 10,
        method: AnalogyMethod = "3cosadd",
        filters: TokenFilter = TokenFilter.words_only(),  # noqa: B008 - as analogy(): answers among whole words
    ) -> AnalogyResult:
        """a : b :: c : ? among the vocabulary (3CosAdd or 3CosMul).

        >>> [answer.token for answer in lens.analogy("man", "king", "woman", k=3).answers]
        ['queen', 'kings', 'monarch']
        """
        from .similarity.analogy import analogy

        return analogy(self.model, a, b, c, k=k, method=method, filters=filters, index=self.index)

    def evaluate(self, benchmark: str | os.PathLike[str], *, pool: Pool = "mean") -> PairEvaluation:
        """Spearman and Pearson of the input matrix's cosines on a word-similarity benchmark (name or file).

        >>> round(lens.evaluate("rg65").spearman, 3)
        0.707
        """
        from .similarity.evaluate import evaluate_pairs

        return evaluate_pairs(self.model, benchmark, pool=pool, cache_dir=self.cache_dir)

    def evaluate_analogies(
        self, benchmark: str | os.PathLike[str] = "google", *, method: AnalogyMethod = "3cosadd"
    ) -> AnalogyEvaluation:
        """Accuracy on an analogy benchmark (name or file).

        >>> round(lens.evaluate_analogies("google").accuracy, 3)
        0.551
        """
        from .similarity.evaluate import evaluate_analogies

        return evaluate_analogies(self.model, benchmark, method=method, index=self.index)

    # --- contextual vectors ---

    def hidden_states(self, texts: str | Sequence[str], *, options: RunOptions | None = None) -> HiddenStates:
        """Every layer's vector of every token of `texts` (layer 0: the embedding layer's output).

        >>> states = lens.hidden_states("I like eating bread")
        >>> states.results[0].states.shape  # layers 0..6 x tokens x hidden
        (7, 6, 384)
        """
        from .contextual.states import RunOptions, hidden_states

        return hidden_states(self.model, texts, options=options or RunOptions())

    def word_vectors(
        self,
        text: str,
        *,
        layers: Sequence[int] = (-1,),
        combine: Combine = "mean",
        pool: WordPool = "mean",
        options: RunOptions | None = None,
    ) -> WordVectors:
        """One vector per word of `text` (its pieces pooled) from `layers`.

        >>> words = lens.word_vectors("I like eating bread", layers=[6])
        >>> [word.text for word in words.words], words.vectors.shape
        (['I', 'like', 'eating', 'bread'], (4, 384))
        """
        from .contextual.states import RunOptions
        from .contextual.vectors import word_vectors

        return word_vectors(
            self.model, text, layers=layers, combine=combine, pool=pool, options=options or RunOptions()
        )

    def word_vectors_many(
        self,
        texts: Sequence[str],
        *,
        layers: Sequence[int] = (-1,),
        combine: Combine = "mean",
        pool: WordPool = "mean",
        options: RunOptions | None = None,
    ) -> tuple[WordVectors, ...]:
        """`word_vectors` for many texts, batched.

        >>> [len(result.words) for result in lens.word_vectors_many(["I like bread", "a dog"])]
        [3, 2]
        """
        from .contextual.states import RunOptions
        from .contextual.vectors import word_vectors_many

        return word_vectors_many(
            self.model, texts, layers=layers, combine=combine, pool=pool, options=options or RunOptions()
        )

    def sentence_vectors(
        self,
        texts: str | Sequence[str],
        *,
        method: SentencePool = "mean",
        layers: Sequence[int] = (-1,),
        combine: Combine = "mean",
        special: bool = False,
        options: RunOptions | None = None,
    ) -> SentenceVectors:
        """One vector per text: [CLS], or the mean or max of its tokens.

        >>> lens.sentence_vectors(["I like eating bread", "a dog"]).vectors.shape
        (2, 384)
        """
        from .contextual.states import RunOptions
        from .contextual.vectors import sentence_vectors

        return sentence_vectors(
            self.model,
            texts,
            method=method,
            layers=layers,
            combine=combine,
            special=special,
            options=options or RunOptions(),
        )

    def context(
        self, word: str, sentences: Sequence[str], *, pool: WordPool = "mean", options: RunOptions | None = None
    ) -> ContextComparison:
        """How `word`'s vector differs between `sentences`, layer by layer ("bread" in two sentences).

        >>> bread = lens.context("bread", ["I like eating bread", "The banana bread was horrible"])
        >>> bread.layers[0].layer, bread.layers[0].mean_cosine  # the input matrix's row: the same in both
        ('input matrix', 1.0)
        """
        from .contextual.context import compare_contexts
        from .contextual.states import RunOptions

        return compare_contexts(self.model, word, sentences, pool=pool, options=options or RunOptions())

    def contextuality(
        self,
        texts: Sequence[str],
        *,
        words: Sequence[str] | None = None,
        max_contexts: int = 50,
        pairs: int = 5000,
        seed: int = 0,
        options: RunOptions | None = None,
    ) -> Contextuality:
        """How contextual each layer is: self-similarity of words across contexts against unrelated pairs.

        >>> texts = ["I like eating bread", "The banana bread was horrible", "bread is good", "a dog barked at the cat"]
        >>> measured = lens.contextuality(texts, words=["bread"])
        >>> len(measured.layers)  # layer 0 (the embedding output) to 6
        7
        """
        from .contextual.contextuality import measure_contextuality
        from .contextual.states import RunOptions

        return measure_contextuality(
            self.model,
            texts,
            words=words,
            max_contexts=max_contexts,
            pairs=pairs,
            seed=seed,
            options=options or RunOptions(),
        )

    def distill(
        self,
        words: Sequence[str],
        texts: Iterable[str],
        *,
        layers: Sequence[int] = (-1,),
        combine: Combine = "mean",
        max_contexts: int = 50,
        out: str | os.PathLike[str] | None = None,
        overwrite: bool = False,
        options: RunOptions | None = None,
        engine: Literal["local", "ray"] = "local",
        ray: RayOptions | None = None,
    ) -> DistilledVectors:
        """Static vectors for `words`: each word's contextual vectors averaged over its contexts in `texts`.

        >>> texts = ["I like eating bread", "The banana bread was horrible", "A dog ate the bread"]
        >>> distilled = lens.distill(["bread", "dog"], texts)
        >>> distilled.vectors.shape
        (2, 384)
        """
        from .contextual.distill import distill
        from .contextual.states import RunOptions

        return distill(
            self.model,
            words,
            texts,
            layers=layers,
            combine=combine,
            max_contexts=max_contexts,
            out=out,
            overwrite=overwrite,
            options=options or RunOptions(),
            engine=engine,
            ray=ray,
        )

    def extract(
        self,
        corpus: str | os.PathLike[str],
        out: str | os.PathLike[str],
        *,
        options: ExtractOptions | None = None,
        run: RunOptions | None = None,
        resume: bool = False,
        progress: bool = False,
        engine: Literal["local", "ray"] = "local",
        ray: RayOptions | None = None,
    ) -> ExtractResult:
        """Per-word (or per-token) vectors of a whole corpus, written in shards (resumable).

        >>> result = lens.extract("sample", "shards/", options=ExtractOptions(layers=(6,)))  # doctest: +SKIP
        >>> result.rows  # doctest: +SKIP
        217092
        """
        from .contextual.extract import ExtractOptions, extract
        from .contextual.states import RunOptions

        return extract(
            self.model,
            corpus,
            out,
            options=options or ExtractOptions(),
            run=run or RunOptions(),
            resume=resume,
            progress=progress,
            engine=engine,
            ray=ray,
        )

    def search(
        self,
        index: str | os.PathLike[str],
        example: str | None = None,
        *,
        options: SearchOptions | None = None,
        run: RunOptions | None = None,
    ) -> SearchResult:
        """Occurrences in an occurrence `index` used most like the example's marked word (or `options.occurrence`).

        `example` is a sentence with the word to look for in brackets (`"a new world [record]"`), or a plain sentence
        with `SearchOptions(word="record")`; `SearchOptions(occurrence=(text_id, position))` starts from an
        occurrence in the index instead. The hits are ranked by cosine with the word's vector in the example, at
        `SearchOptions.layer` (the index's last stored layer by default): the same word's occurrences, or with
        `any_word=True` other words used like it; `k` hits, at most one per text (`one_per_text=False`: every
        occurrence), `exclude_same_text` leaves out hits from the example's own text. Each hit has its sentence, the
        word's place in it, its score and source (file:line), and for the same word `word_percentile`: the share of
        random pairs of the word's own occurrences that score lower (above 50: more alike than its typical pair).
        The index comes from `index_corpus` (or `bertlens index`), built with this model.

        >>> built = lens.index_corpus("sample", "sample-index", max_texts=300)  # as `bertlens index sample ...`
        >>> hits = lens.search("sample-index", "She set a new world [record] in the final", options=SearchOptions(k=5))
        >>> len(hits.hits)
        5
        """
        from .contextual.states import RunOptions
        from .occurrences.search import SearchOptions, search_occurrences

        return search_occurrences(
            self.model, index, example, options=options or SearchOptions(), run=run or RunOptions()
        )

    def senses(
        self,
        word: str,
        *,
        index: str | os.PathLike[str] | None = None,
        corpus: str | os.PathLike[str] | None = None,
        options: SensesOptions | None = None,
        run: RunOptions | None = None,
        progress: bool = False,
    ) -> SensesResult:
        """`word`'s senses in an occurrence `index` or a `corpus` (exactly one): clusters, typical sentences, words.

        >>> senses = lens.senses("record", index="sample-index")
        >>> senses.word, len(senses.senses) > 1
        ('record', True)
        """
        from .contextual.states import RunOptions
        from .occurrences.senses import SensesOptions, word_senses

        return word_senses(
            self.model,
            word,
            index=index,
            corpus=corpus,
            options=options or SensesOptions(),
            run=run or RunOptions(),
            progress=progress,
        )

    def same_sense(
        self,
        word: str,
        sentence_1: str,
        sentence_2: str,
        *,
        layer: int | None = None,
        options: RunOptions | None = None,
    ) -> SameSenseResult:
        """Whether `word` has the same sense in both sentences: per-layer cosines and a calibrated verdict (the
        default model's calibration ships with bertlens; fit one for another model with `fit_calibration`).

        >>> result = lens.same_sense("bank", "I sat on the river bank .", "The bank raised its interest rates .")
        >>> result.verdict
        'different senses'
        """
        from .contextual.states import RunOptions
        from .occurrences.same_sense import same_sense

        return same_sense(
            self.model,
            word,
            sentence_1,
            sentence_2,
            layer=layer,
            cache_dir=self.cache_dir,
            options=options or RunOptions(),
        )

    def fit_calibration(
        self, path: str | os.PathLike[str], *, options: RunOptions | None = None, progress: bool = False
    ) -> Calibration:
        """Fit and store this model's same-sense calibration on labelled pairs in WiC format (`path`).

        >>> calibration = lens.fit_calibration("WiC/train")  # WiC (CC BY-NC): download it  # doctest: +SKIP
        """
        from .contextual.states import RunOptions
        from .occurrences.same_sense import fit_calibration

        return fit_calibration(
            self.model, path, cache_dir=self.cache_dir, options=options or RunOptions(), progress=progress
        )

    def evaluate_wic(
        self,
        path: str | os.PathLike[str],
        *,
        train: str | os.PathLike[str] | None = None,
        recipe: WicRecipe | None = None,
        options: RunOptions | None = None,
        progress: bool = False,
    ) -> WicResult:
        """WiC accuracy per layer (threshold from `train`) and with the default read-out (fitted on `train`).

        >>> result = lens.evaluate_wic("WiC/dev", train="WiC/train")  # doctest: +SKIP
        >>> result.recipe_accuracy  # doctest: +SKIP
        """
        from .contextual.states import RunOptions
        from .occurrences.wic import WicRecipe, evaluate_wic

        return evaluate_wic(
            self.model,
            path,
            train=train,
            recipe=recipe or WicRecipe(),
            options=options or RunOptions(),
            progress=progress,
        )

    def index_corpus(
        self,
        corpus: str | os.PathLike[str],
        out: str | os.PathLike[str],
        *,
        options: IndexOptions | None = None,
        run: RunOptions | None = None,
        resume: bool = False,
        add: bool = False,
        overwrite: bool = False,
        progress: bool = False,
        engine: Literal["local", "ray"] = "local",
        ray: RayOptions | None = None,
        max_texts: int | None = None,
    ) -> IndexResult:
        """Every word occurrence of a corpus with its vectors, into an occurrence index (LanceDB; resumable).

        >>> built = lens.index_corpus("sample", "sample-index", max_texts=300)  # doctest: +SKIP
        >>> built.texts  # doctest: +SKIP
        300
        """
        from .contextual.states import RunOptions
        from .occurrences.build import index_corpus

        return index_corpus(
            self.model,
            corpus,
            out,
            options=options,
            run=run or RunOptions(),
            resume=resume,
            add=add,
            overwrite=overwrite,
            progress=progress,
            engine=engine,
            ray=ray,
            max_texts=max_texts,
        )

    # --- views and plots ---

    def project_tokens(
        self,
        tokens: Sequence[str | int] | None = None,
        count: int | None = None,
        method: ProjectionMethod = "pca",
        dims: int = 2,
        seed: int = 0,
        *,
        settings: ProjectionSettings | None = None,
    ) -> Projection:
        """Vocabulary rows (these tokens, or the first `count` whole words) projected to 2-D or 3-D.

        >>> points = lens.project_tokens(["king", "queen", "man", "woman"])
        >>> points.points.shape, points.labels
        ((4, 2), ('king', 'queen', 'man', 'woman'))
        """
        from .views.projection import ProjectionSettings
        from .views.tokens import project_tokens

        return project_tokens(self.model, tokens, count, method, dims, seed, settings=settings or ProjectionSettings())

    def project_word_groups(
        self,
        groups: Sequence[str] | Mapping[str, Sequence[str]] | None = None,
        method: ProjectionMethod = "tsne",
        dims: int = 2,
        seed: int = 0,
        *,
        settings: ProjectionSettings | None = None,
    ) -> Projection:
        """Common words in groups a reader knows (numbers, months, colours, family, …) projected, each point's group
        in the metadata column 'group'; or your own groups, as a dict group -> words.

        >>> lens.project_word_groups(["months", "colours"], method="pca").metadata["group"][0]  # doctest: +SKIP
        'months'
        """
        from .views.groups import project_word_groups
        from .views.projection import ProjectionSettings

        return project_word_groups(self.model, groups, method, dims, seed, settings=settings or ProjectionSettings())

    def project_contextual(
        self,
        texts: str | Sequence[str],
        layer: int = -1,
        level: Level = "word",
        method: ProjectionMethod = "pca",
        dims: int = 2,
        seed: int = 0,
        *,
        settings: ProjectionSettings | None = None,
    ) -> Projection:
        """The words (or tokens) of `texts` at `layer`, projected to 2-D or 3-D.

        >>> lens.project_contextual(["I like eating bread", "a dog barked"], layer=6).labels
        ('I', 'like', 'eating', 'bread', 'a', 'dog', 'barked')
        """
        from .views.projection import ProjectionSettings
        from .views.tokens import project_contextual

        return project_contextual(
            self.model, texts, layer, level, method, dims, seed, settings=settings or ProjectionSettings()
        )

    def trajectory(
        self, word: str, sentences: Sequence[str], method: ProjectionMethod = "pca", dims: int = 2, seed: int = 0
    ) -> Trajectory:
        """`word` at every layer in each sentence, all layers projected into one space.

        >>> path = lens.trajectory("bread", ["I like eating bread", "The banana bread was horrible"])
        >>> path.points.shape  # sentences x layers 0..6 x dims, one fit
        (2, 7, 2)
        """
        from .views.trajectory import trajectory

        return trajectory(self.model, word, sentences, method, dims, seed)

    def position_similarity(self, limit: int | None = None) -> PositionSimilarity:
        """Cosines between the position rows (and the token-type rows).

        >>> lens.position_similarity(limit=16).cosine.shape
        (16, 16)
        """
        from .embeddings.positions import position_similarity

        return position_similarity(self.model, limit)

    def plot(self, result: Any, target: str | os.PathLike[str], options: PlotOptions | None = None) -> Rendered:
        """Draw any result above that has a picture into `target` (.png, .svg or .html).

        >>> lens.plot(lens.project_tokens(["king", "queen", "man", "woman"]), "royals.png").format
        'png'
        """
        from .plots.render import PlotOptions, render

        return render(result, target, options or PlotOptions())

    # --- training ---

    def pretrain(
        self,
        corpus: str | os.PathLike[str],
        out: str | os.PathLike[str],
        config: PretrainConfig | None = None,
        *,
        validation: str | os.PathLike[str] | None = None,
        resume: bool = False,
        overwrite: bool = False,
    ) -> PretrainResult:
        """Continue pre-training this model (masked-LM) on `corpus` into `out`; the model itself is never written.

        Training from scratch needs no model: `bertlens.pretrain(PretrainConfig(...), corpus, out)`.

        >>> lens = Lens("tiny-bert/")  # a model folder, e.g. one bertlens pretrain wrote  # doctest: +SKIP
        >>> lens.pretrain("sample", "tiny-bert-more/", PretrainConfig(max_steps=20))  # doctest: +SKIP
        """
        import dataclasses

        from .core.errors import InputError
        from .training import PretrainConfig, pretrain

        if self.model.source.path is None:
            raise InputError(
                "Continuing pre-training needs a model loaded from its folder.", "Open the Lens with a path or id."
            )
        config = dataclasses.replace(config or PretrainConfig(), init_from=str(self.model.source.path))
        return pretrain(config, corpus, out, validation=validation, resume=resume, overwrite=overwrite)
