"""Projections (PCA against scikit-learn, t-SNE and UMAP against the libraries called directly), the input matrix,
contextual vectors and layer trajectories against transformers, and position similarity against the model's weights."""

from __future__ import annotations

import sys

import numpy as np
import pytest
import torch
from bounds import (
    EPS64,
    cosine_rounding,
    float64_twin,
    float64_wobble,
    mean_bound,
    pca_bounds,
    pca_signs_agree,
    rounded_bound,
)

from bertlens import InputError
from bertlens.embeddings.positions import position_similarity
from bertlens.embeddings.static import word_vector
from bertlens.views.projection import Projection, ProjectionSettings, pca, project
from bertlens.views.tokens import project_contextual, project_tokens, whole_word_ids
from bertlens.views.trajectory import trajectory

SENTENCES = ["I like eating bread", "The banana bread was horrible", "Bread, and more bread, is all I am Sinan"]


def oracle_states(model, text: str) -> np.ndarray:
    """transformers' own hidden_states for one unpadded text: (layers + 1, tokens, H), in the model's dtype."""
    ids = torch.tensor([model.vocabulary.tokenizer.encode(text).ids])
    with torch.inference_mode():
        out = model.torch_model()(input_ids=ids, attention_mask=torch.ones_like(ids), output_hidden_states=True)
    return torch.stack(out.hidden_states)[:, 0].numpy()


def assert_pca_matches(points: np.ndarray, x: np.ndarray, dims: int, moved: np.ndarray | None = None) -> np.ndarray:
    """Our float32 points against scikit-learn's PCA of x, within pca_bounds and one float32 rounding; its ratios."""
    expected, ratios = sklearn_pca(x, dims)
    apart, _, _ = pca_bounds(x, dims, moved)
    assert pca_signs_agree(x, dims, moved)  # the largest loadings stand clear: both PCAs pick the same signs
    assert points.dtype == np.float32 and (np.abs(points - expected) <= rounded_bound(expected, apart)).all()
    return ratios


@pytest.fixture(scope="module")
def twin(default_model):
    return float64_twin(default_model)


def pooled_move(states: np.ndarray, indices: list[int]) -> float:
    """How far a float32 mean of float64 states (transformers' own: `states`, (tokens, H)) rounded to float32 may lie
    from their float64 mean: each state a float32 step plus float64_wobble off, then the float32 mean's rounding."""
    wobble = float64_wobble(np.abs(states).max())
    pieces = states[indices]  # (pieces, H)
    return float(np.linalg.norm(rounded_bound(pieces, wobble).mean(axis=0) + 2 * mean_bound(pieces, axis=0)))


def sklearn_pca(x: np.ndarray, dims: int) -> tuple[np.ndarray, np.ndarray]:
    from sklearn.decomposition import PCA

    fitted = PCA(dims, svd_solver="full").fit(x)
    return fitted.transform(x), fitted.explained_variance_ratio_


# --- PCA, t-SNE, UMAP ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("n", "width", "dims"), [(300, 40, 2), (300, 40, 3), (12, 384, 2), (5, 384, 3)])
def test_pca_equals_sklearn(n, width, dims):
    x = np.random.default_rng(n + width).normal(size=(n, width)) * np.linspace(3, 0.5, width)
    result = project(x, [f"p{i}" for i in range(n)], "pca", dims)
    assert result.points.shape == (n, dims)
    ratios = assert_pca_matches(result.points, x, dims)
    assert (np.abs(result.explained - ratios) <= pca_bounds(x, dims)[1]).all()


def test_pca_golden_cases_by_hand():
    # Against the exact answers, within pca_bounds (an exact PCA is one of the two it allows for).
    # Three points on the x axis: all variance on axis 1, none on axis 2; the sign puts the largest loading positive.
    line = np.array([[-1.0, 5.0], [0.0, 5.0], [1.0, 5.0]])
    points, ratios = pca(line, 2)
    apart, spread, _ = pca_bounds(line, 2)  # axis 2 is undetermined, but every point on it is within apart of 0
    assert (np.abs(points - [[-1, 0], [0, 0], [1, 0]]) <= apart).all() and (np.abs(ratios - [1, 0]) <= spread).all()
    # A 4 x 2 rectangle: variances 4 and 1, so 80% and 20%; axis 1 is x.
    rect = np.array([[2.0, 1.0], [2.0, -1.0], [-2.0, 1.0], [-2.0, -1.0]]) + 10
    points, ratios = pca(rect, 2)
    apart, spread, _ = pca_bounds(rect, 2)
    assert (np.abs(np.abs(points) - [[2, 1]] * 4) <= apart).all() and (np.abs(ratios - [0.8, 0.2]) <= spread).all()
    assert pca_signs_agree(rect, 2) and (np.abs(points[:, 0] - [2, 2, -2, -2]) <= apart[:, 0]).all()
    # Identical points: centred exactly to 0, so every coordinate is 0 and nothing is explained, exactly.
    points, ratios = pca(np.ones((4, 3)), 2)
    assert not points.any() and not ratios.any()


def test_tsne_equals_sklearn_and_clamps_perplexity():
    from sklearn.manifold import TSNE
    from threadpoolctl import threadpool_limits

    x = np.random.default_rng(1).normal(size=(40, 16))
    settings = ProjectionSettings(max_iter=250)
    # project makes this very call (same arguments, same float32 input, same seed): the same code on the same
    # numbers. On one OpenMP thread, t-SNE's parallel sums (sQ) are also added in one fixed order: the same bits.
    with threadpool_limits(limits=1, user_api="openmp"):
        result = project(x, [str(i) for i in range(40)], "tsne", 2, seed=3, settings=settings)
        expected = TSNE(2, perplexity=13.0, metric="cosine", init="pca", max_iter=250, random_state=3).fit_transform(
            x.astype(np.float32)
        )
    assert result.parameters["perplexity"] == 13.0  # min(30, (40 - 1) / 3)
    np.testing.assert_array_equal(result.points, expected)
    assert result.explained is None
    small = project(x[:4], list("abcd"), "tsne", 3, settings=settings)
    assert small.parameters["perplexity"] == 1.0 and small.points.shape == (4, 3)  # (4 - 1) / 3
    assert (
        project(
            x, [str(i) for i in range(40)], "tsne", 2, settings=ProjectionSettings(perplexity=5, max_iter=250)
        ).parameters["perplexity"]
        == 5.0
    )
    with pytest.raises(InputError, match="perplexity"):
        project(x[:5], list("abcde"), "tsne", settings=ProjectionSettings(perplexity=5))


@pytest.mark.slow  # umap-learn compiles its numba kernels on first use
def test_umap_equals_umap_learn_and_is_seeded():
    import umap

    x = np.random.default_rng(2).normal(size=(60, 12))
    result = project(x, [str(i) for i in range(60)], "umap", 2, seed=7)
    assert result.parameters["neighbors"] == 15
    expected = umap.UMAP(n_neighbors=15, n_components=2, metric="cosine", random_state=7, n_jobs=1).fit_transform(
        x.astype(np.float32)
    )
    np.testing.assert_array_equal(result.points, expected)  # the very call project makes (single-threaded, seeded)
    again = project(x, [str(i) for i in range(60)], "umap", 2, seed=7)
    assert np.array_equal(result.points, again.points)
    few = project(x[:4], list("abcd"), "umap", 3)  # n_neighbors clamped to n - 1, random start
    assert few.parameters["neighbors"] == 3 and few.points.shape == (4, 3) and np.isfinite(few.points).all()


def test_umap_missing_is_a_clear_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "umap", None)  # what Python does when the package is absent: ImportError
    with pytest.raises(InputError, match="umap-learn") as info:
        project(np.eye(5), list("abcde"), "umap")
    assert 'pip install "bertlens[umap]"' in info.value.hint


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (dict(method="lda"), "Unknown projection method"),
        (dict(dims=4), "2 or 3 dimensions"),
        (dict(dims=1), "2 or 3 dimensions"),
        (dict(vectors=np.ones((2, 5)), labels=["a", "b"]), "at least 3"),
        (dict(vectors=np.ones(5), labels=list("abcde")), "2-D"),
        (dict(vectors=[[1.0, np.nan], [0, 1], [1, 1]], labels=list("abc")), "NaN"),
        (dict(vectors=np.ones((3, 1)), labels=list("abc")), "nothing to project"),
        (dict(labels=["a"]), "labels were given"),
        (dict(metadata={"word": ("x",)}), "has 1 values for 4 points"),
        (dict(seed=-1), "seed"),
        (dict(vectors=[["a", "b"]] * 3, labels=list("abc")), "not a numeric matrix"),
        (dict(featured=[4]), "featured points must be indices from 0 to 3"),
    ],
)
def test_bad_inputs_are_clear_errors(kwargs, message):
    arguments = dict(vectors=np.random.default_rng(0).normal(size=(4, 6)), labels=list("abcd")) | kwargs
    with pytest.raises(InputError, match=message):
        project(**arguments)


def test_to_dict_has_the_documented_keys():
    result = project(np.eye(4), list("abcd"), metadata={"id": (np.int64(1), 2, 3, 4)})
    data = result.to_dict()
    assert {"method", "dims", "points", "labels", "metadata", "explained"} <= set(data)
    assert data["points"][0] == result.points[0].tolist() and data["metadata"]["id"] == [1, 2, 3, 4]
    assert isinstance(data["metadata"]["id"][0], int)  # numpy scalars became JSON numbers


# --- the input matrix ----------------------------------------------------------------------------------------------


def test_project_tokens_uses_input_matrix_rows(default_model):
    result = project_tokens(default_model, ["king", "queen", "man", "woman", "Sinan", 3899], label="demo")
    rows = default_model.embedding_weights.word_embeddings
    sinan = word_vector(
        default_model, "Sinan"
    ).vector  # pieces sin ##an, mean-pooled as bertlens.embeddings.static does
    vectors = np.stack([rows[2332], rows[3035], rows[2158], rows[2450], sinan, rows[3899]])
    assert_pca_matches(result.points, vectors.astype(np.float64), 2)
    assert result.labels == ("king", "queen", "man", "woman", "Sinan", "dog")
    assert result.metadata["piece"][4] == "sin ##an" and result.metadata["id"][4] is None
    assert result.metadata["id"][:4] == (2332, 3035, 2158, 2450) and result.metadata["kind"][5] == "id"
    assert set(result.metadata["label"]) == {"demo"}


def test_project_first_whole_word_tokens(default_model):
    result = project_tokens(default_model, count=200)
    ids = result.metadata["id"]
    assert len(result) == 200 and list(ids) == sorted(ids)
    assert result.labels[:5] == ("the", "of", "and", "in", "to")  # after the single characters, by frequency
    assert all(len(label) >= 2 and not label.startswith("##") for label in result.labels)
    assert ids[:3] == tuple(whole_word_ids(default_model)[:3])
    assert default_model.vocabulary.id_to_token(ids[0]) == result.labels[0]
    with pytest.raises(InputError, match="whole-word tokens, fewer than"):
        project_tokens(default_model, count=10**7)
    with pytest.raises(InputError, match="either tokens or count"):
        project_tokens(default_model, ["dog"], count=5)
    with pytest.raises(InputError, match="out of range"):
        project_tokens(default_model, ["dog", "cat", 10**9])


def test_themes_are_named_by_their_central_words():
    from bertlens.views.tokens import themes

    axes = np.eye(12)
    sizes = {"a": 8, "b": 6, "c": 4}  # theme 0 is the largest
    rows, labels = [], []
    for t, (name, size) in enumerate(sizes.items()):
        for i in range(size):  # three directions far apart; member i strays i steps off its own, sideways
            rows.append(10 * axes[t] + i * axes[3 + i])
            labels.append(f"{name}{i}")
    names, featured = themes(np.array(rows), labels, 3)
    assert sorted(set(names)) == [f"theme {t}: {c}0, {c}1, {c}2" for t, c in enumerate("abc")]
    assert names[:8] == ["theme 0: a0, a1, a2"] * 8 and names[-1] == "theme 2: c0, c1, c2"
    assert [labels[i] for i in featured] == ["a0", "b0", "c0", "a1", "b1", "c1", "a2", "b2", "c2"]  # by rank


@pytest.mark.parametrize("family", ["bert", "roberta", "distilbert", "albert", "deberta-v2", "modernbert"])
def test_project_tokens_every_family(tiny_models, family):
    model = tiny_models[family]
    result = project_tokens(model, ["cat", "dog", "house", "tree"], dims=3)
    rows = model.embedding_weights.word_embeddings[
        [model.vocabulary.token_to_id(t) for t in ("cat", "dog", "house", "tree")]
    ]
    assert_pca_matches(result.points, rows.astype(np.float64), 3)


# --- contextual vectors and trajectories ---------------------------------------------------------------------------


def test_project_contextual_words_equal_transformers(twin):
    # The texts run as one padded batch, which another CPU sums in another order: compared in float64, each input
    # vector moved by at most its float32 rounding (pooled_move), which pca_bounds carries to the points.
    result = project_contextual(twin, [*SENTENCES[:2], "I am Sinan"], layer=3)
    vectors, words, moved = [], [], []
    for text in [*SENTENCES[:2], "I am Sinan"]:
        states = oracle_states(twin, text)[3]  # (tokens, H) float64
        encoding = twin.vocabulary.tokenizer.encode(text)
        for word in sorted({w for w in encoding.word_ids if w is not None}):
            indices = [i for i, w in enumerate(encoding.word_ids) if w == word]
            vectors.append(states[indices].mean(axis=0))
            moved.append(pooled_move(states, indices))
            words.append(text[encoding.offsets[indices[0]][0] : encoding.offsets[indices[-1]][1]])
    assert result.labels == tuple(words)
    assert_pca_matches(result.points, np.stack(vectors), 2, np.array(moved))
    assert set(result.metadata["layer"]) == {3} and result.metadata["sentence"][-1] == 2
    assert result.metadata["piece"][-1] == "sin ##an"


def test_project_contextual_tokens_and_bad_layer(default_model):
    tokens = project_contextual(default_model, ["hello, world!"], level="token", dims=3)
    assert tokens.labels == ("hello", ",", "world", "!")
    with_special = project_contextual(default_model, ["hello, world!"], level="token", special=True)
    assert with_special.labels[0] == "[CLS]" and with_special.metadata["word"][0] is None
    with pytest.raises(InputError, match="Layer 7 does not exist"):
        project_contextual(default_model, SENTENCES, layer=7)
    with pytest.raises(InputError, match="needs at least 3"):
        project_contextual(default_model, ["hello"])
    with pytest.raises(InputError, match="Unknown level"):
        project_contextual(default_model, SENTENCES, level="sentence")


def test_trajectory_is_one_fit_over_all_layers(default_model, twin):
    result = trajectory(default_model, "bread", SENTENCES)
    assert result.points.shape == (3, 7, 2) and result.layers == tuple(range(7))
    assert result.spans[2] == (0, 5)  # the first occurrence ("Bread") is followed
    exact = trajectory(twin, "bread", SENTENCES)  # in float64 (one padded batch), as in the test above
    stacked, moved = [], []
    for text, (start, end) in zip(SENTENCES, exact.spans, strict=True):
        encoding = twin.vocabulary.tokenizer.encode(text)
        indices = [i for i, (a, b) in enumerate(encoding.offsets) if a >= start and b <= end and b > a]
        states = oracle_states(twin, text)  # (layers + 1, tokens, H) float64
        stacked.append(states[:, indices].mean(axis=1))  # (layers + 1, H)
        moved += [pooled_move(layer, indices) for layer in states]
    flat = np.stack(stacked).reshape(21, -1)  # (sentences * layers, H): every layer of every sentence, one matrix
    ratios = assert_pca_matches(exact.points.reshape(21, 2), flat, 2, np.array(moved))
    assert (np.abs(exact.explained - ratios) <= pca_bounds(flat, 2, np.array(moved))[1]).all()
    assert np.array_equal(result.projection().points, result.points.reshape(21, 2))
    assert result.projection().metadata["layer"][:8] == (0, 1, 2, 3, 4, 5, 6, 0)
    # A fit per layer would put every layer's points around the origin; one shared fit keeps the layers apart.
    assert np.linalg.norm(result.points[:, 0].mean(axis=0) - result.points[:, -1].mean(axis=0)) > 1.0


def test_trajectory_bad_inputs(default_model):
    with pytest.raises(InputError, match="does not occur in sentence 1"):
        trajectory(default_model, "bread", ["I like bread", "I like cake"])
    with pytest.raises(InputError, match="empty"):
        trajectory(default_model, " ", SENTENCES)
    with pytest.raises(InputError, match="No sentences"):
        trajectory(default_model, "bread", [])


# --- position similarity -------------------------------------------------------------------------------------------


def torch_cosine(weight: torch.Tensor) -> np.ndarray:
    w = weight.detach().double()
    return torch.nn.functional.cosine_similarity(w[:, None, :], w[None, :, :], dim=-1).numpy()


def test_position_similarity_equals_the_model_weights(default_model):
    result = position_similarity(default_model, limit=100)
    embeddings = default_model.torch_model().embeddings
    expected = torch_cosine(embeddings.position_embeddings.weight[:100])
    # Two float64 cosines of the same float32 rows, each within cosine_rounding of the exact one, in any order.
    bound = 2 * cosine_rounding(384, EPS64)
    assert result.cosine.shape == (100, 100) and np.abs(result.cosine - expected).max() <= bound
    assert np.abs(result.token_types - torch_cosine(embeddings.token_type_embeddings.weight)).max() <= bound
    assert np.abs(np.diag(result.cosine) - 1.0).max() <= bound / 2 and result.first_position == 0
    whole = position_similarity(default_model)
    assert whole.rows == whole.table_rows == 512
    assert dict(whole.by_distance())[1] > dict(whole.by_distance())[256]  # neighbouring positions are more alike


def test_position_similarity_families(tiny_models):
    roberta = position_similarity(tiny_models["roberta"])
    assert roberta.first_position == 2 and "padding_idx + 1 = 2" in roberta.notes[0]
    distil = position_similarity(tiny_models["distilbert"])
    assert distil.token_types is None and distil.rows == 64
    for family in ("modernbert", "deberta-v2"):
        with pytest.raises(InputError, match="no absolute position rows"):
            position_similarity(tiny_models[family])
    with pytest.raises(InputError, match="positive integer"):
        position_similarity(tiny_models["bert"], limit=0)


def test_projection_is_a_result_with_a_table(default_model):
    result = project_tokens(default_model, ["dog", "cat", "bird"])
    assert isinstance(result, Projection) and "PCA to 2 dims of 3 points" in str(result)
    assert "Projection(pca, 3 points" in repr(result)
