"""What one request may ask for (`ServerLimits`), and the checks that refuse a request beyond them (a 413 with a
clear message, never a slow answer)."""

from __future__ import annotations

from dataclasses import dataclass

from ..core.errors import InputError
from ..core.tokens import check_text
from .errors import RequestTooLargeError


@dataclass(frozen=True)
class ServerLimits:
    """What one request may ask for. Bigger requests get a 413 or 422 with a clear message, never a slow answer.

    >>> limits = ServerLimits(max_tsne_points=2000, max_connections=16)
    >>> app = create_app(["default"], limits)  # doctest: +SKIP
    """

    max_text_chars: int = 20_000  # longest text (or pair, or sentence, or word) in a request
    max_body_bytes: int = 2_000_000  # largest request body; bigger ones are refused (413) before being parsed
    max_sentences: int = 32  # sentences in one context or trajectory request
    max_queries: int = 100  # queries (or expression terms) in one neighbours request
    max_k: int = 1_000  # neighbours per query
    max_points: int = 50_000  # points in one projection
    max_tsne_points: int = 5_000  # points in one t-SNE projection (about 15 s on 2 cores; the CLI has no such cap)
    max_umap_points: int = 10_000  # points in one UMAP projection (about 10 s)
    max_projection_chars: int = 250_000  # characters of text in one contextual projection (all texts together)
    max_positions: int = 4_096  # rows of the position-similarity heatmap
    max_search_k: int = 200  # hits of one corpus search (bertlens search -k; the CLI has no such cap)
    max_sense_occurrences: int = 2_000  # occurrences one senses request may cluster (max_occurrences; a sample)
    max_diff_k: int = 100  # nearest tokens per token in one comparison (diff's k: two (tokens, k) sets are kept)
    max_diff_top: int = 500  # tokens that moved most listed by one comparison (diff's top)
    max_diff_occurrences: int = 10_000  # word occurrences one comparison of the layers reads (diff's occurrences)
    kept_diffs: int = 3  # comparisons kept for their tokens' neighbourhoods (two 30,522 x 384 models: ~100 MB each)
    model_workers: int = 1  # forward passes running at once, all models together (each uses torch's threads)
    search_workers: int = 1  # matrix scans (neighbours not in the table) at once: each uses every BLAS thread
    projection_workers: int = 1  # t-SNE, UMAP and contextual projections at once, beside the forward-pass slots
    read_timeout: float = 15.0  # seconds a request's body has to arrive once its head is read (408 after)
    max_head_bytes: int = 16_384  # a request head (line and headers) still incomplete past this: 400 (uvicorn)
    keep_alive_timeout: int = 5  # seconds a connection left idle after an answer is kept open (uvicorn)
    # Open connections, and requests in flight, at once; beyond: 503 (uvicorn's limit_concurrency). A request's task
    # lingers a moment after its answer, so a keep-alive client sending back to back can count twice.
    max_connections: int = 64
    precompute: bool = True  # build each model's missing neighbour table in the background once the app is made
    # (then cached; token queries become lookups when it is ready, scans until then)
    cache_dir: str | None = None  # where similarity indexes are cached (default: $BERTLENS_CACHE or ~/.cache)


def checked_text(
    limits: ServerLimits, value: str, what: str, *, empty_ok: bool = False, longest: int | None = None
) -> str:
    """A text from a request, refused (413) when longer than the server takes, and (unless `empty_ok`) when empty."""
    longest = limits.max_text_chars if longest is None else longest
    check_text(value, what)  # a JSON string may hold lone surrogates (\udcff escapes): a 400, not a 500
    if len(value) > longest:
        raise RequestTooLargeError(
            f"The {what} has {len(value):,} characters; this server takes at most {longest:,}.",
            "Send a shorter text (bertlens serve is for looking at examples; use the library for whole corpora).",
        )
    if not empty_ok and not value.strip():
        raise InputError(f"The {what} is empty.", "Type some text.")
    return value


def check_count(count: int, most: int, what: str) -> None:
    """Refuse (413) a request that asks for more than `most` of `what` (sentences, queries, points…)."""
    if count > most:
        raise RequestTooLargeError(
            f"The request asks for {count:,} {what}; this server allows at most {most:,}.",
            f"Ask for at most {most:,} (the limits are listed by GET /api/models).",
        )


def word_and_sentences(limits: ServerLimits, word: str, sentences: list[str]) -> tuple[str, list[str]]:
    """A context or trajectory request's word and sentences, each checked, and not too many sentences."""
    check_count(len(sentences), limits.max_sentences, "sentences")
    return checked_text(limits, word, "word"), [
        checked_text(limits, s, f"sentence #{i}") for i, s in enumerate(sentences)
    ]


def check_method_points(limits: ServerLimits, method: str, points: int) -> None:
    """t-SNE and UMAP take minutes on tens of thousands of points: the server takes fewer (the CLI has no cap)."""
    most = {"tsne": limits.max_tsne_points, "umap": limits.max_umap_points}.get(method)
    if most is not None and points > most:
        name = {"tsne": "t-SNE", "umap": "UMAP"}[method]
        raise RequestTooLargeError(
            f"The request asks for a {name} of {points:,} points; this server runs {name} on at most {most:,}.",
            f"Ask for fewer points, use PCA (up to {limits.max_points:,} points), or run it without a limit from "
            "the command line (bertlens plot tokens … / plot contextual …) or the library.",
        )


def public_limits(limits: ServerLimits) -> dict[str, int]:
    """The limits a client can plan by (GET /api/models lists them)."""
    names: tuple[str, ...] = ("max_text_chars", "max_body_bytes", "max_sentences", "max_queries", "max_k", "max_points")
    names += ("max_tsne_points", "max_umap_points")
    names += ("max_search_k", "max_sense_occurrences")
    names += ("max_diff_k", "max_diff_top", "max_diff_occurrences")
    return {name: getattr(limits, name) for name in names}
