"""The API's request bodies: one pydantic model per endpoint, its shared fields made from core.options.

A field that a command line option also sets is `field(OPTION)` with the Literal type from core.options, so that its
description, choices and default are the CLI's (`cli.common.add_option` makes the flag from the same `Option`).
Bodies are validated strictly: unknown fields are refused, and a JSON `true` is not the integer 1, `1` is not `true`,
`"5"` is not 5. Imported only by api.py (pydantic loads with the app, never with bertlens).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ..core.options import (
    ANY_WORD_OPTION,
    CENTER_OPTION,
    CONTEXTUAL_OPTION,
    DIMS_OPTION,
    EXCLUDE_SAME_TEXT_OPTION,
    ID_OPTION,
    INDEX_LAYER_OPTION,
    K_OPTION,
    LABEL_OPTION,
    LAYER_B_OPTION,
    LAYER_OPTION,
    LEVEL_OPTION,
    MAX_OCCURRENCES_OPTION,
    METHOD_OPTION,
    METRIC_OPTION,
    NEGATIVE_OPTION,
    NO_NUMBERS_OPTION,
    NO_PIECES_OPTION,
    NO_PUNCTUATION_OPTION,
    OCCURRENCES_OPTION,
    PAIR_OPTION,
    POOL_OPTION,
    POSITIVE_OPTION,
    QUERIES_OPTION,
    REMOVE_TOP_OPTION,
    SEED_OPTION,
    SENSE_WORDS_OPTION,
    SENTENCES_OPTION,
    SPECIALS_OPTION,
    TARGET_WORD_OPTION,
    TOP_OPTION,
    TRAJECTORY_SENTENCES_OPTION,
    TYPICAL_OPTION,
    UNUSED_OPTION,
    WORD_OPTION,
    WORD_POOL_OPTION,
    WORDS_ONLY_OPTION,
    Dims,
    Level,
    Metric,
    Option,
    Pool,
    ProjectionMethod,
    WordPool,
)

ModelChoice = str | int | None
MODEL_FIELD = Field(None, description="a model's name or index from GET /api/models (default: the first)")
BREAD = ["I like eating bread", "The banana bread was horrible"]


def field(option: Option, *, when: str | None = None, description: str = "") -> Any:
    """Any, as pydantic's `Field` returns: it stands as the default of a field of any type.

    The request field of `option`: its help text as the description (after `when`, where it applies: "contextual:
    …"; or the endpoint's own `description`), and its default (none where the field is required)."""
    description = description or (f"{when}: {option.help}" if when else option.help)
    if option.required:
        return Field(description=description)
    default = option.default
    return Field(list(default) if option.many and isinstance(default, tuple) else default, description=description)


def strict(**example: Any) -> ConfigDict:
    """Unknown fields are refused, types are not coerced (`true` is no integer); `example` is shown on /docs."""
    return ConfigDict(extra="forbid", strict=True, json_schema_extra={"examples": [example]})


class Strict(BaseModel):
    """A request body: unknown fields refused, no type coercion."""

    model_config = ConfigDict(extra="forbid", strict=True)


class TokensRequest(Strict):
    """`bertlens tokens TEXT [--pair PAIR] [--no-special]`"""

    model_config = strict(text="I am Sinan")

    model: ModelChoice = MODEL_FIELD
    text: str = Field(description="the text to tokenize")
    pair: str | None = field(PAIR_OPTION)
    add_special_tokens: bool = Field(True, description="add [CLS], [SEP] and the like, as the model receives them")


class ExplainRequest(Strict):
    """`bertlens explain TEXT [--pair PAIR] [--no-check]`"""

    model_config = strict(text="hello, world!")

    model: ModelChoice = MODEL_FIELD
    text: str = Field(description="a short text (the model's maximum length at most)")
    pair: str | None = field(PAIR_OPTION)
    check: bool = Field(True, description="run the model and compare with its hidden_states[0]")


class NeighborsRequest(Strict):
    """`bertlens neighbors QUERY… [options]`: the same options, by the same names."""

    model_config = strict(queries=["dog"], k=5, words_only=True)

    model: ModelChoice = MODEL_FIELD
    queries: list[str] = field(QUERIES_OPTION)
    id: bool = field(ID_OPTION)
    positive: list[str] = field(POSITIVE_OPTION)
    negative: list[str] = field(NEGATIVE_OPTION)
    k: int = field(K_OPTION)
    metric: Metric = field(METRIC_OPTION)
    center: bool = field(CENTER_OPTION)
    remove_top: int = field(REMOVE_TOP_OPTION)
    pool: Pool = field(POOL_OPTION)
    words_only: bool = field(WORDS_ONLY_OPTION)
    no_pieces: bool = field(NO_PIECES_OPTION)
    no_numbers: bool = field(NO_NUMBERS_OPTION)
    no_punctuation: bool = field(NO_PUNCTUATION_OPTION)
    specials: bool = field(SPECIALS_OPTION)
    unused: bool = field(UNUSED_OPTION)


class ContextRequest(Strict):
    """`bertlens context WORD SENTENCE SENTENCE…`"""

    model_config = strict(word="bread", sentences=BREAD)

    model: ModelChoice = MODEL_FIELD
    word: str = field(WORD_OPTION)
    sentences: list[str] = field(SENTENCES_OPTION)
    pool: WordPool = field(WORD_POOL_OPTION)


class TrajectoryRequest(Strict):
    """The word's vector at every layer in each sentence, all layers projected together into one space."""

    model_config = strict(word="bread", sentences=BREAD)

    model: ModelChoice = MODEL_FIELD
    word: str = field(WORD_OPTION)
    sentences: list[str] = field(TRAJECTORY_SENTENCES_OPTION)
    method: ProjectionMethod = field(METHOD_OPTION)
    dims: Dims = field(DIMS_OPTION)
    seed: int = field(SEED_OPTION)


class ProjectionRequest(Strict):
    """Vocabulary rows (`tokens`), common words in groups (`groups`) or contextual word/token vectors of texts
    (`contextual`), projected to 2-D or 3-D."""

    model_config = strict(source="tokens", tokens=["king", "queen", "man", "woman", "dog", "cat"])

    model: ModelChoice = MODEL_FIELD
    source: Literal["tokens", "groups", "contextual"] = Field(
        "tokens", description="input-matrix rows, the same for words in groups a reader knows, or contextual vectors"
    )
    tokens: list[str | int] | None = Field(
        None, description="tokens: these tokens, words (pieces pooled) or ids (numbers); else the first `count` words"
    )
    count: int | None = Field(
        None, description="tokens: the first `count` whole-word tokens of the vocabulary (default: all of them)"
    )
    groups: list[str] | None = Field(
        None, description="groups: names of shipped word groups (numbers, months, colours, …; default: all of them)"
    )
    texts: list[str] = Field([], description="contextual: the texts whose words (or tokens) are projected")
    layer: int = field(LAYER_OPTION, when="contextual")
    level: Level = field(LEVEL_OPTION, when="contextual")
    method: ProjectionMethod = field(METHOD_OPTION)
    dims: Dims = field(DIMS_OPTION)
    seed: int = field(SEED_OPTION)
    label: str | None = field(LABEL_OPTION)


IndexChoice = str | int | None
INDEX_FIELD = Field(None, description="an index's name or number from GET /api/indexes (default: the first)")


class SearchRequest(Strict):
    """`bertlens search INDEX EXAMPLE [--word W] [--layer L] [--any-word] [-k K] [--exclude-same-text]
    [--all-per-text]`: the fields of the library's `SearchOptions`, with its defaults."""

    model_config = strict(example="I sat on the river [bank]", k=10)

    index: IndexChoice = INDEX_FIELD
    example: str | None = Field(
        None, description="a sentence with the target word [marked] (or plain, with `word`); none with `occurrence`"
    )
    word: str | None = field(TARGET_WORD_OPTION, description="the target word of a plain example sentence")
    layer: int | None = field(
        INDEX_LAYER_OPTION, description="the layer searched (default: the index's last stored layer)"
    )
    any_word: bool = field(
        ANY_WORD_OPTION, description="occurrences of other words used most like it (contextual substitutes)"
    )
    k: int = field(K_OPTION, description="how many occurrences (default 10)")
    exclude_same_text: bool = field(
        EXCLUDE_SAME_TEXT_OPTION, description="leave out occurrences from the example's own text"
    )
    one_per_text: bool = Field(
        True,
        description="at most one hit per text, its best occurrence (false: every occurrence; the CLI's --all-per-text)",
    )
    occurrence: list[int] | None = Field(
        None,
        min_length=2,
        max_length=2,
        description="search from an occurrence of the index instead: [text_id, position] (from a hit)",
    )


class SensesRequest(Strict):
    """`bertlens senses INDEX WORD [--k auto|N] [--layer L]`"""

    model_config = strict(word="bank", k="auto")

    index: IndexChoice = INDEX_FIELD
    word: str = Field(description="the word whose occurrences are clustered into senses")
    k: Literal["auto"] | int = Field("auto", description="how many senses: 'auto' (chosen by the data) or a number")
    layer: int | None = field(
        INDEX_LAYER_OPTION, description="the layer clustered (default: the index's last stored layer)"
    )
    max_occurrences: int = field(
        MAX_OCCURRENCES_OPTION,
        description="cluster at most this many occurrences, a seeded sample (within the server's limit when not given)",
    )
    typical: int = field(TYPICAL_OPTION)
    words: int = field(SENSE_WORDS_OPTION)
    seed: int = field(SEED_OPTION, description="the seed of the sample and of k-means (default 0)")


SPACES_CORPUS = Literal["sample", "genesis"]  # the corpora bertlens ships: a request never names a file


class DiffRequest(Strict):
    """`bertlens diff A B [-k K] [--top N] [--corpus sample|genesis] [--contextual [--layer L] [--layer-b L]
    [--occurrences N]]`: two served models compared, with the library's defaults."""

    model_config = strict(model_a=0, model_b=1, k=10)

    model_a: ModelChoice = Field(None, description="model A: a name or index from GET /api/models (default: the first)")
    model_b: ModelChoice = Field(1, description="model B: a name or index from GET /api/models (default: the second)")
    k: int = field(K_OPTION, description="nearest tokens compared per token (default 10)")
    top: int = field(TOP_OPTION)
    corpus: SPACES_CORPUS | None = Field(
        None,
        description="a corpus bertlens ships: summaries by each token's count in it; what the layers are compared on "
        "(default none; the layers read 'sample')",
    )
    contextual: bool = field(CONTEXTUAL_OPTION)
    layer: int | None = Field(
        None, description="contextual: A's layer whose neighbours are compared, and B's unless layer_b (default last)"
    )
    layer_b: int | None = field(LAYER_B_OPTION, description="contextual: B's layer (default: as layer, else B's last)")
    occurrences: int = field(OCCURRENCES_OPTION, description="contextual: word occurrences read from the corpus")


class DiffTokenRequest(Strict):
    """One token of a comparison: its nearest tokens in A and in B (`SpaceDiff.token`)."""

    model_config = strict(model_a=0, model_b=1, k=10, token="bank")

    model_a: ModelChoice = Field(None, description="model A, as in POST /api/diff")
    model_b: ModelChoice = Field(1, description="model B, as in POST /api/diff")
    k: int = field(K_OPTION, description="nearest tokens per token, as in POST /api/diff (default 10)")
    token: str = Field(description="a token both vocabularies hold, as the tokenizer writes it")
