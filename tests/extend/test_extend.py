"""New words: extension strategies against hand-computed rows and transformers' own resize, saved models loaded by
transformers and sentence-transformers without bertlens, bad inputs, and the report checked against transformers."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from bounds import EPS64, cosine_rounding, direction_shift, dot_bound, float64_wobble, gamma, mean_bound, rounded_bound
from tiny import FAMILIES, make_tiny

from bertlens import InputError, load_model
from bertlens.cli import main
from bertlens.core.packing import packed_copy
from bertlens.core.sources import default_model_dir
from bertlens.extend import ExtendOptions, extend_vocabulary, mean_resizing_rows, plan_extension, read_words
from bertlens.extend.report import ReportOptions, compare_strategies

WORDS = ["walking", "houses", "cat"]  # walk ##ing, house ##s; cat is a token already


@pytest.fixture(scope="module")
def mlm_dirs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A tiny model with its masked-LM head per family.

    Each names its tokenizer class as tokenizer.json's own, as real models name theirs: without it transformers 5
    rebuilds e.g. a RoBERTa tokenizer from the (WordPiece) vocabulary of these tiny models.
    """
    root = tmp_path_factory.mktemp("mlm")
    dirs = {family: make_tiny(family, root / family, mlm=True) for family in FAMILIES}
    for folder in dirs.values():
        (folder / "tokenizer_config.json").write_text('{"tokenizer_class": "PreTrainedTokenizerFast"}')
    return dirs


@pytest.fixture(scope="module")
def bert(mlm_dirs: dict[str, Path]):
    return load_model(str(mlm_dirs["bert"]))


def _quiet_load(cls, path: Path):
    import transformers

    transformers.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()
    return cls.from_pretrained(str(path), local_files_only=True).eval()


def _fingerprint(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def _no_leftovers(parent: Path) -> None:
    assert not [p.name for p in parent.iterdir() if p.name.startswith(".bertlens-extend-")]


# ------------------------------------------------------------------------------------ saved models, every family


@pytest.mark.parametrize("family", FAMILIES)
def test_every_family_saves_a_model_transformers_loads(mlm_dirs, family, tmp_path):
    import torch
    from safetensors.numpy import load_file
    from transformers import AutoModelForMaskedLM, AutoTokenizer

    source = mlm_dirs[family]
    before = _fingerprint(source)
    model = load_model(str(source))
    result = extend_vocabulary(model, WORDS, tmp_path / "new", ExtendOptions(strategy="pieces"))
    assert [(w.word, w.id) for w in result.added] == [("walking", 80), ("houses", 81)]
    assert [(k.word, k.id) for k in result.known] == [("cat", model.vocabulary.token_to_id("cat"))]
    assert result.new_rows == 82 and len(result.head_tensors) == 1
    assert _fingerprint(source) == before  # the source is only read

    tokenizer = AutoTokenizer.from_pretrained(str(tmp_path / "new"), local_files_only=True)
    ids = tokenizer("Walking houses and walkings")["input_ids"]
    ours = load_model(str(tmp_path / "new"))
    assert ids == ours.vocabulary.tokenizer.encode("Walking houses and walkings").ids
    assert ids[1:3] == [80, 81] and 80 not in ids[3:]  # "walkings" is not the new word

    old_net = _quiet_load(AutoModelForMaskedLM, source)
    new_net = _quiet_load(AutoModelForMaskedLM, tmp_path / "new")
    old_rows = old_net.get_input_embeddings().weight.detach().numpy()
    new_rows = new_net.get_input_embeddings().weight.detach().numpy()
    np.testing.assert_array_equal(new_rows[:80], old_rows)
    for row, word in zip((80, 81), result.added, strict=True):  # FVT: the mean of the old pieces' rows
        assert_float32_of_mean(new_rows[row], old_rows[list(word.piece_ids)])
    output = new_net.get_output_embeddings()
    assert output.weight.data_ptr() == new_net.get_input_embeddings().weight.data_ptr()  # still tied
    old_bias = load_file(str(source / "model.safetensors"))[result.head_tensors[0]]
    for row, word in zip((80, 81), result.added, strict=True):
        assert_float32_of_mean(output.bias[row].detach().numpy(), old_bias[list(word.piece_ids)])
    text = torch.tensor([tokenizer("the cat sat on the mat")["input_ids"]])
    with torch.no_grad():  # nothing else changed: the old tokens' logits are the old model's
        new, old = new_net.double()(text).logits[..., :80].numpy(), old_net.double()(text).logits.numpy()
    # A vocabulary of 82 columns, not 80, may be summed in another order: in float64 that is float64_wobble at most.
    assert np.abs(new - old).max() <= 2 * float64_wobble(np.abs(old).max())


def assert_float32_of_mean(ours: np.ndarray, rows: np.ndarray) -> None:
    """`ours`: the mean of `rows` (n, ...) float32, taken in float64 and rounded once to float32."""
    exact = rows.astype(np.float64).mean(axis=0)
    assert (np.abs(ours - exact) <= rounded_bound(exact, mean_bound(rows, axis=0, eps=EPS64))).all()


def test_default_model_loads_in_sentence_transformers_and_transformers(default_model, tmp_path):
    from sentence_transformers import SentenceTransformer
    from transformers import AutoModel, AutoTokenizer

    source = default_model_dir()
    sizes = {p.name: (p.stat().st_size, p.stat().st_mtime_ns) for p in source.iterdir() if p.is_file()}
    out = tmp_path / "drugs"
    result = extend_vocabulary(default_model, ["Aspirinex", "ibuprofenol"], out, ExtendOptions(strategy="neighbors"))
    assert sizes == {p.name: (p.stat().st_size, p.stat().st_mtime_ns) for p in source.iterdir() if p.is_file()}
    assert result.sentence_transformers and {"modules.json", "1_Pooling"} <= {p.name for p in out.iterdir()}
    assert [w.token for w in result.added] == ["aspirinex", "ibuprofenol"]  # the uncased tokenizer's form

    st = SentenceTransformer(str(out), device="cpu")
    assert st.tokenizer.tokenize("ASPIRINEX, ibuprofenol") == ["aspirinex", ",", "ibuprofenol"]
    original = SentenceTransformer(str(source), device="cpu")
    plain = ["The cat sat on the mat.", "A sentence without new words."]
    # No new word in them: the same ids through the same weights (two more rows are never gathered), bit for bit.
    np.testing.assert_array_equal(st.encode(plain), original.encode(plain))
    assert st.encode(["aspirinex helps"]).shape == (1, 384)

    net = _quiet_load(AutoModel, out)
    assert net.get_input_embeddings().weight.shape == (30524, 384)
    np.testing.assert_array_equal(
        net.get_input_embeddings().weight.detach().numpy()[30522:],
        np.stack(
            [plan_extension(default_model, ["Aspirinex", "ibuprofenol"], ExtendOptions(strategy="neighbors")).rows]
        )[0],
    )
    assert AutoTokenizer.from_pretrained(str(out), local_files_only=True)("aspirinex")["input_ids"] == [101, 30522, 102]
    again = load_model(str(out))
    assert again.matrix_rows == 30524 and again.vocabulary.token_to_id("ibuprofenol") == 30523


# ------------------------------------------------------------------------------------------- strategies by hand


def test_mixing_strategies_by_hand(bert):
    from bertlens.embeddings.static import word_vector
    from bertlens.similarity.index import open_index

    matrix = bert.embedding_weights.word_embeddings  # (80, 32)
    walk, ing = bert.vocabulary.token_to_id("walk"), bert.vocabulary.token_to_id("##ing")

    def rows(strategy: str, **extra) -> np.ndarray:
        return plan_extension(bert, ["walking"], ExtendOptions(strategy=strategy, **extra)).rows[0]

    pieces = matrix[[walk, ing]]  # (2, E)
    assert_float32_of_mean(rows("pieces"), pieces)  # and word_vector's float32 mean is within mean_bound of it:
    exact = pieces.astype(np.float64).mean(axis=0)
    assert (np.abs(word_vector(bert, "walking").vector - exact) <= mean_bound(pieces, axis=0)).all()
    np.testing.assert_array_equal(rows("pieces-first"), matrix[walk])
    np.testing.assert_array_equal(rows("pieces-last"), matrix[ing])
    wide = matrix.astype(np.float64)
    weighted = (4 * wide[walk] + 3 * wide[ing]) / 7  # weights 4/7, 3/7 by piece length
    rounding = gamma(4, EPS64) * (4 * np.abs(matrix[walk]) + 3 * np.abs(matrix[ing])) / 7  # in float64, then float32
    assert (np.abs(rows("pieces-weighted") - weighted) <= rounded_bound(weighted, rounding)).all()
    assert_float32_of_mean(rows("mean"), matrix)

    query = (matrix[walk].astype(np.float64) + matrix[ing]) / 2  # brute force: cosine to every allowed row
    allowed = open_index(bert).allowed(ExtendOptions().filters)
    cosines = matrix @ query / (np.linalg.norm(matrix, axis=1) * np.linalg.norm(query))
    cosines[~allowed] = -np.inf
    top = np.argsort(-cosines)[:4]
    weights = np.exp((cosines[top] - cosines[top].max()) / 0.5)
    weights /= weights.sum()
    plan = plan_extension(bert, ["walking"], ExtendOptions(strategy="neighbors", k=4, temperature=0.5))
    # Ours: the query rounded to float32, float64 cosines. Each score is then within `wobble` of these, and the five
    # best stand farther apart than that, so the order is the same on any CPU.
    wobble = direction_shift(np.linalg.norm(rounded_bound(query)), np.linalg.norm(query)) + cosine_rounding(32, EPS64)
    assert (-np.diff(np.sort(cosines)[::-1][:5]) > 4 * wobble).all()
    assert [s.id for s in plan.added[0].sources] == top.tolist()
    # softmax(s / T): every log-weight moves by at most 2 * 2 wobble / T, and float64 rounds the rest.
    moved = weights * np.expm1(4 * wobble / 0.5) + gamma(4 + 4, EPS64) * weights
    assert (np.abs([s.weight for s in plan.added[0].sources] - weights) <= moved).all()
    expected = weights @ matrix[top]  # (E,) float64
    apart = moved @ np.abs(matrix[top]) + dot_bound(weights, matrix[top], EPS64)
    assert (np.abs(plan.rows[0] - expected) <= rounded_bound(expected, apart)).all()


def test_biases_follow_the_rows(bert, mlm_dirs):
    from safetensors.numpy import load_file

    bias = load_file(str(mlm_dirs["bert"] / "model.safetensors"))["cls.predictions.bias"]
    walk, ing = bert.vocabulary.token_to_id("walk"), bert.vocabulary.token_to_id("##ing")
    head = {
        s: plan_extension(bert, ["walking"], ExtendOptions(strategy=s)).head["cls.predictions.bias"]
        for s in ("pieces", "random", "mean", "mean-resizing")
    }
    assert_float32_of_mean(head["pieces"][0], bias[[walk, ing]])
    assert head["random"][0] == 0.0
    assert_float32_of_mean(head["mean"][0], bias)
    # One seeded draw from normal(mean, 1e-9 * std): the same on every CPU, within 6 standard deviations (beyond them
    # with probability 2e-9), then rounded to float32.
    exact = bias.astype(np.float64).mean()
    spread = 6 * 1e-9 * bias.astype(np.float64).std(ddof=1) + mean_bound(bias, eps=EPS64)
    assert abs(head["mean-resizing"][0] - exact) <= rounded_bound(exact, spread)


def test_random_and_rows(bert, tmp_path):
    first = plan_extension(bert, ["walking", "houses"], ExtendOptions(strategy="random", seed=3)).rows
    again = plan_extension(bert, ["walking", "houses"], ExtendOptions(strategy="random", seed=3)).rows
    other = plan_extension(bert, ["walking", "houses"], ExtendOptions(strategy="random", seed=4)).rows
    np.testing.assert_array_equal(first, again)
    assert not np.array_equal(first, other) and 0.01 < first.std() < 0.03  # initializer_range 0.02

    vectors = {"walking": np.arange(32, dtype=np.float32), "houses": -np.ones(32, dtype=np.float32)}
    file = tmp_path / "rows.w2v.txt"
    file.write_text("2 32\n" + "".join(f"{w} {' '.join(map(str, v))}\n" for w, v in vectors.items()))
    plan = plan_extension(bert, ["houses", "walking"], ExtendOptions(strategy="rows"), rows=file)
    np.testing.assert_array_equal(plan.rows, np.stack([vectors["houses"], vectors["walking"]]))


def sampling_bound(old: np.ndarray, count: int) -> np.ndarray:
    """How far the mean of `count` draws from N(mean, 1e-9 * covariance) of the rows `old` (V, E), each rounded to
    float32, may lie from the rows' mean, per coordinate: 6 standard deviations of a sample mean (beyond them with
    probability 2e-9), plus the draws' float32 rounding (each within 8 deviations)."""
    wide = old.astype(np.float64)
    sigma = np.sqrt(1e-9 * wide.var(axis=0))  # (E,) the covariance's diagonal
    rounding = rounded_bound(wide.mean(axis=0), 8 * sigma) - 8 * sigma  # (E,) half a float32 step there
    return 6 * sigma / np.sqrt(count) + rounding


def test_mean_resizing_matches_transformers_in_distribution(mlm_dirs, default_model):
    import torch
    from transformers import AutoModel, AutoModelForMaskedLM

    net = _quiet_load(AutoModelForMaskedLM, mlm_dirs["bert"])
    old = net.get_input_embeddings().weight.detach().numpy().copy()
    old_bias = net.get_output_embeddings().bias.detach().numpy().copy()
    added = 4000
    torch.manual_seed(0)
    net.resize_token_embeddings(80 + added, mean_resizing=True)
    theirs = net.get_input_embeddings().weight.detach().numpy()[80:].astype(np.float64)
    ours, drawn = mean_resizing_rows(old, added, seed=0)
    assert drawn
    sample = sampling_bound(old, added)
    assert (
        np.abs(ours.astype(np.float64).mean(axis=0) - theirs.mean(axis=0)) <= 2 * sample + mean_bound(old, axis=0)
    ).all()
    assert (np.abs(ours.astype(np.float64).mean(axis=0) - old.astype(np.float64).mean(axis=0)) <= sample).all()
    # Seeded draws: the same numbers on every CPU up to rounding (1e-7 of this statistic), so none moves it across
    # 0.2, about twice the sampling error of the difference, sqrt(2 (tr C^2 + (tr C)^2) / N) / |C|_F = 0.11 here.
    cov_ours, cov_theirs = np.cov(ours.astype(np.float64).T), np.cov(theirs.T)
    assert np.linalg.norm(cov_ours - cov_theirs) / np.linalg.norm(cov_theirs) < 0.2
    centred = old.astype(np.float64) - old.astype(np.float64).mean(axis=0)
    expected = 1e-9 * centred.T @ centred / len(old)
    assert np.linalg.norm(cov_ours - expected) / np.linalg.norm(expected) < 0.2
    new_bias = net.get_output_embeddings().bias.detach().numpy()[80:]
    ours_bias = plan_extension(load_model(str(mlm_dirs["bert"])), ["walking"], ExtendOptions(strategy="mean-resizing"))
    # Bias draws: normal(mean, 1e-9 * std), one of ours and 4000 of theirs, each within 6 of its deviations.
    spread = 6e-9 * old_bias.astype(np.float64).std(ddof=1)
    exact = old_bias.astype(np.float64).mean()
    theirs_mean = abs(float(new_bias.mean()) - exact)  # their 4000 draws, rounded, averaged in float32
    assert theirs_mean <= rounded_bound(exact, spread / np.sqrt(added) + mean_bound(old_bias)) + mean_bound(new_bias)
    ours_draw = abs(float(ours_bias.head["cls.predictions.bias"][0]) - exact)
    assert ours_draw <= rounded_bound(exact, spread + mean_bound(old_bias, eps=EPS64))

    real = _quiet_load(AutoModel, default_model_dir())  # the default model: 384 x 384 covariance
    matrix = default_model.embedding_weights.word_embeddings
    torch.manual_seed(0)
    real.resize_token_embeddings(30522 + 500, mean_resizing=True)
    theirs = real.get_input_embeddings().weight.detach().numpy()[30522:].astype(np.float64)
    ours, _ = mean_resizing_rows(matrix, 500, seed=0)
    sample = sampling_bound(matrix, 500)
    assert (
        np.abs(ours.astype(np.float64).mean(axis=0) - theirs.mean(axis=0)) <= 2 * sample + mean_bound(matrix, axis=0)
    ).all()


# ------------------------------------------------------------------------------------------------- other layouts


def test_tokenizer_smaller_than_the_matrix_uses_the_token_less_rows(tmp_path):
    from transformers import AutoModel, AutoTokenizer

    source = make_tiny("bert", tmp_path / "padded", vocab_size=90)  # 80 tokens, 90 rows
    model = load_model(str(source))
    result = extend_vocabulary(model, ["walking"], tmp_path / "new", ExtendOptions(strategy="mean"))
    assert result.added[0].id == 80 and result.new_rows == 90 and "no token used before" in result.notes[0]
    net = _quiet_load(AutoModel, tmp_path / "new")
    assert_float32_of_mean(
        net.get_input_embeddings().weight[80].detach().numpy(), model.embedding_weights.word_embeddings
    )
    assert AutoTokenizer.from_pretrained(str(tmp_path / "new"))("walking")["input_ids"][1] == 80


def test_bfloat16_sharded_and_pickled_sources(tmp_path):
    import torch
    from safetensors import safe_open
    from transformers import AutoModel, AutoModelForMaskedLM

    half = make_tiny("bert", tmp_path / "bf16", mlm=True)
    _quiet_load(AutoModelForMaskedLM, half).to(torch.bfloat16).save_pretrained(half, max_shard_size="20KB")
    (half / "model.safetensors").unlink(missing_ok=True)
    model = load_model(str(half))
    assert len(model.source.weights_files) > 1
    result = extend_vocabulary(model, ["walking"], tmp_path / "bf16-new", ExtendOptions(strategy="pieces"))
    index = json.loads((tmp_path / "bf16-new" / "model.safetensors.index.json").read_text())
    name = "bert.embeddings.word_embeddings.weight"
    with safe_open(str(tmp_path / "bf16-new" / index["weight_map"][name]), "pt") as handle:
        grown = handle.get_tensor(name)
    assert grown.dtype == torch.bfloat16 and grown.shape == (81, 32)
    expected = torch.from_numpy(plan_extension(model, ["walking"]).rows).to(torch.bfloat16)
    assert torch.equal(grown[80:], expected) and "model.safetensors.index.json" in result.files
    net = _quiet_load(AutoModelForMaskedLM, tmp_path / "bf16-new")
    assert torch.equal(net.get_input_embeddings().weight[80:], expected)

    pickled = make_tiny("distilbert", tmp_path / "pickled", safetensors=False)
    result = extend_vocabulary(load_model(str(pickled)), ["walking"], tmp_path / "pickled-new")
    assert "model.safetensors" in result.files and not (tmp_path / "pickled-new" / "pytorch_model.bin").exists()
    assert _quiet_load(AutoModel, tmp_path / "pickled-new").get_input_embeddings().weight.shape == (81, 32)


def test_byte_level_bpe_words_take_the_space_before_them(tmp_path):
    from tokenizers import ByteLevelBPETokenizer
    from transformers import AutoTokenizer

    source = make_tiny("roberta", tmp_path / "bpe", vocab_size=300)
    trainer = ByteLevelBPETokenizer()
    trainer.train_from_iterator(
        ["the cat sat on the mat", "a dog ran in the house"] * 20,
        vocab_size=300,
        special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"],
        show_progress=False,
    )
    trainer.save(str(source / "tokenizer.json"))
    model = load_model(str(source))
    result = extend_vocabulary(model, ["zorblax"], tmp_path / "new")
    assert "Ġ" not in result.added[0].pieces  # the bare space marker is not a piece of the word
    tokens = AutoTokenizer.from_pretrained(str(tmp_path / "new")).tokenize("the zorblax sat")
    ids = load_model(str(tmp_path / "new")).vocabulary.tokenizer.encode("the zorblax sat", add_special_tokens=False)
    assert len(tokens) == 3 and ids.ids[1] == result.added[0].id  # no stray 'Ġ' token before the new word


def test_sentence_transformers_folder_layout(tmp_path):
    from sentence_transformers import SentenceTransformer

    root = tmp_path / "st"
    make_tiny("bert", root / "0_Transformer")
    (root / "0_Transformer" / "sentence_bert_config.json").write_text('{"max_seq_length": 32}')
    (root / "1_Pooling").mkdir()
    pooling = {"word_embedding_dimension": 32, "pooling_mode_mean_tokens": True}
    (root / "1_Pooling" / "config.json").write_text(json.dumps(pooling))
    (root / "modules.json").write_text(
        json.dumps(
            [
                {"idx": 0, "name": "0", "path": "0_Transformer", "type": "sentence_transformers.models.Transformer"},
                {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
            ]
        )
    )
    (root / "onnx").mkdir()
    result = extend_vocabulary(load_model(str(root)), ["walking"], tmp_path / "new")
    assert result.files[0].startswith("0_Transformer/")
    assert result.left_out == ("onnx/ (not a sentence-transformers module)",)
    st = SentenceTransformer(str(tmp_path / "new"), device="cpu")
    assert st.tokenizer.tokenize("walking dogs") == ["walking", "dog", "##s"]
    assert st.encode(["walking"]).shape == (1, 32)


# ---------------------------------------------------------------------------------------------------- bad inputs


@pytest.mark.parametrize(
    ("words", "options", "message"),
    [
        ([], {}, "No words"),
        (["walking", "houses", "walking"], {}, "given twice"),
        (["Walking", "walking"], {}, "same token"),
        (["walking dogs"], {}, "whitespace"),
        (["   "], {}, "empty"),
        (["walk\x00ing"], {}, "control"),
        (["walking"], {"strategy": "frobnicate"}, "Unknown strategy"),
        (["walking"], {"strategy": "neighbors", "k": 0}, "k must be"),
        (["walking"], {"strategy": "rows"}, "needs a vector"),
        (["cat", "dog"], {}, "already a token"),
    ],
)
def test_bad_inputs_write_nothing(bert, tmp_path, words, options, message):
    with pytest.raises(InputError, match=message):
        extend_vocabulary(bert, words, tmp_path / "new", ExtendOptions(**options))
    assert not (tmp_path / "new").exists()
    _no_leftovers(tmp_path)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("walking 1 2 3\nhouses 1 2 3\n", "has 3 values, but this model's rows have 32"),
        ("2 32\nwalking " + " ".join(["1"] * 32) + "\nhouses " + " ".join(["1"] * 31) + "\n", "Line 3"),
        ("houses " + " ".join(["1"] * 32) + "\n", "no vector for 1 new word"),
        ("walking " + " ".join(["x"] * 32) + "\n", "not a number"),
    ],
)
def test_bad_rows_files(bert, tmp_path, content, message):
    file = tmp_path / "rows.txt"
    file.write_text(content)
    with pytest.raises(InputError, match=message):
        extend_vocabulary(bert, ["walking", "houses"], tmp_path / "new", ExtendOptions(strategy="rows"), rows=file)
    assert not (tmp_path / "new").exists()


def test_existing_output_is_left_alone(bert, tmp_path):
    out = tmp_path / "new"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    with pytest.raises(InputError, match="already exists"):
        extend_vocabulary(bert, ["walking"], out)
    assert [p.name for p in out.iterdir()] == ["keep.txt"]


def test_a_failure_while_writing_leaves_nothing(bert, tmp_path, monkeypatch):
    import bertlens.extend.save

    def fail(target, extension):
        raise InputError("injected failure", "")

    monkeypatch.setattr(bertlens.extend.save, "_verify", fail)
    with pytest.raises(InputError, match="injected"):
        extend_vocabulary(bert, ["walking"], tmp_path / "new")
    assert not (tmp_path / "new").exists()
    _no_leftovers(tmp_path)


def test_words_file(tmp_path):
    file = tmp_path / "words.txt"
    file.write_text("walking\n\n  houses \n")
    assert read_words(file) == ["walking", "houses"]
    file.write_text("walking dogs\n")
    with pytest.raises(InputError, match="Line 1"):
        read_words(file)


# -------------------------------------------------------------------------------------------------------- report


def assert_cosine_with_its_rounding(cosine: float, model, word: str) -> None:
    """The "pieces" row is the float64 mean of its pieces' rows rounded to float32: its cosine with that mean is 1 up
    to 1 - cos = |u - v|^2 / 2 for the unit vectors (direction_shift of the rounding), and float64 rounding."""
    rows = model.embedding_weights.word_embeddings
    ids = plan_extension(model, [word], ExtendOptions(strategy="pieces")).added[0].piece_ids
    exact = rows[list(ids)].astype(np.float64).mean(axis=0)
    step = np.linalg.norm(rounded_bound(exact, mean_bound(rows[list(ids)], axis=0, eps=EPS64)))
    bound = float(direction_shift(step, np.linalg.norm(exact))) ** 2 / 2 + 2 * cosine_rounding(len(exact), EPS64)
    assert abs(cosine - 1.0) <= bound


def test_report_matches_transformers_on_a_masked_lm(bert, mlm_dirs, tmp_path):
    import torch
    from transformers import AutoModel, AutoModelForMaskedLM

    texts = ("the walking dog sat", "a cat ran to the house .", "she was in the car .", "it is a good day")
    report = compare_strategies(bert, WORDS, ["random", "pieces"], options=ReportOptions(texts=texts, k=3))
    assert report.words == ("walking", "houses") and report.known[0].word == "cat"
    assert report.context_texts == ("the walking dog sat",) and len(report.masked_samples) == 3
    pieces = report.strategy("pieces")
    assert_cosine_with_its_rounding(pieces.words[0].cosine_pieces, bert, "walking")
    assert pieces.words[1].contexts == 0 and pieces.words[1].layer_cosines is None

    extend_vocabulary(bert, WORDS, tmp_path / "new", ExtendOptions(strategy="pieces"))
    old_net, new_net = (_quiet_load(AutoModelForMaskedLM, p) for p in (mlm_dirs["bert"], tmp_path / "new"))
    tokenizer = bert.vocabulary.tokenizer
    # The report runs its masked samples as one padded batch: given the same batch, transformers computes the same
    # float32 logits (same weights, inputs and shapes), so only the float64 KL sums differ.
    batch = []
    for sample in report.masked_samples:
        ids = tokenizer.encode(sample.text).ids
        for p in sample.positions:
            ids[p] = tokenizer.token_to_id("[MASK]")
        batch.append(ids)
    ids = torch.full((len(batch), max(map(len, batch))), bert.config.pad_token_id or 0)
    attention = torch.zeros_like(ids)
    for row, seq in enumerate(batch):
        ids[row, : len(seq)], attention[row, : len(seq)] = torch.tensor(seq), 1
    with torch.no_grad():
        old_logits = old_net(input_ids=ids, attention_mask=attention).logits.double()
        new_logits = new_net(input_ids=ids, attention_mask=attention).logits.double()
    kls, terms, new_top = [], [], 0
    for row, sample in enumerate(report.masked_samples):
        old = torch.log_softmax(old_logits[row, list(sample.positions)], -1)
        new = torch.log_softmax(new_logits[row, list(sample.positions)], -1)
        kls += (old.exp() * (old - new[:, :80])).sum(-1).tolist()
        terms += (old.exp() * (old - new[:, :80])).abs().sum(-1).tolist()
        new_top += int((new.argmax(-1) >= 80).sum())
    # Each KL: 80 terms p (a - b), an exp within an ulp (2 roundings) and a difference, product and sum in any order.
    rounding = 2 * gamma(80 + 4 + len(kls), EPS64) * np.mean(terms)
    assert abs(pieces.masked.kl_mean - np.mean(kls)) <= rounding
    assert pieces.masked.new_top1 == new_top and pieces.masked.positions == len(kls)

    # transformers' base models, their linear products prepacked as bertlens runs them (tests/core/test_packing.py)
    old_base, new_base = (packed_copy(_quiet_load(AutoModel, p)) for p in (mlm_dirs["bert"], tmp_path / "new"))
    old_ids = tokenizer.encode("the walking dog sat").ids  # [CLS] the walk ##ing dog sat [SEP]
    new_ids = load_model(str(tmp_path / "new")).vocabulary.tokenizer.encode("the walking dog sat").ids
    with torch.no_grad():
        before = torch.stack(old_base(torch.tensor([old_ids]), output_hidden_states=True).hidden_states)[:, 0]
        after = torch.stack(new_base(torch.tensor([new_ids]), output_hidden_states=True).hidden_states)[:, 0]
    # One text alone: the report's states are these, bit for bit (its pieces' mean, one float32 addition and an exact
    # halving, too). Cosines in float64 on both sides: within cosine_rounding each, 3 of them averaged for context.
    bound = 2 * cosine_rounding(after.shape[-1], EPS64) + gamma(3, EPS64)
    expected = torch.cosine_similarity(after[:, 2].double(), before[:, 2:4].mean(1).double(), dim=-1).numpy()
    assert (np.abs(np.array(pieces.words[0].layer_cosines) - expected) <= bound).all()
    context = torch.cosine_similarity(after[:, [1, 3, 4]].double(), before[:, [1, 4, 5]].double(), dim=-1).mean(1)
    assert (np.abs(np.array(pieces.context_cosines) - context.numpy()) <= bound).all()
    assert "KL mean" in str(report) and "pieces:" in str(report)


def test_report_on_the_default_model_without_a_head(default_model):
    report = compare_strategies(default_model, ["Aspirinex"], ["mean", "pieces"])
    assert report.masked_samples == () and "no masked-LM head" in report.notes[0]
    mean, pieces = report.strategy("mean"), report.strategy("pieces")
    assert mean.masked is None and len(pieces.layer_cosines) == 7 and pieces.words[0].contexts == 4
    assert_cosine_with_its_rounding(pieces.words[0].cosine_pieces, default_model, "Aspirinex")
    assert pieces.layer_cosines[0] > mean.layer_cosines[0]  # the pieces' mean starts nearer the old meaning
    assert mean.words[0].norm_percentile < 1.0  # the mean row is shorter than nearly every real row


# ----------------------------------------------------------------------------------------------------------- CLI


def test_cli_extend_and_report(capsys, mlm_dirs, tmp_path):
    words = tmp_path / "words.txt"
    words.write_text("walking\nhouses\n")
    out = tmp_path / "new"
    argv = ["extend", str(mlm_dirs["bert"]), "--words-file", str(words), "--init", "mean", "--out", str(out), "--json"]
    assert main(argv) == 0
    data = json.loads(capsys.readouterr().out)
    assert [w["id"] for w in data["added"]] == [80, 81] and data["directory"] == str(out)
    assert load_model(str(out)).matrix_rows == 82

    argv = ["extend-report", "--model", str(mlm_dirs["bert"]), "-w", "walking", "--init", "mean", "pieces", "--json"]
    assert main(argv) == 0
    data = json.loads(capsys.readouterr().out)
    assert [s["strategy"] for s in data["strategies"]] == ["mean", "pieces"]
    assert data["strategies"][1]["masked"]["positions"] > 0

    assert main(["extend", str(mlm_dirs["bert"]), "-w", "walking", "--out", str(out), "--json"]) == 2
    assert json.loads(capsys.readouterr().out)["error"] == "InputError"
    assert main(["extend", str(mlm_dirs["bert"]), "-w", "walking", "--init", "rows", "--out", str(tmp_path / "x")]) == 2
    assert "needs a vector" in capsys.readouterr().err and not (tmp_path / "x").exists()
    shutil.rmtree(out)


def test_lens_facade(bert, tmp_path):
    from bertlens import Lens

    lens = Lens(bert)
    result = lens.extend(["walking"], tmp_path / "new", ExtendOptions(strategy="mean"))
    assert result.added[0].id == 80 and (tmp_path / "new" / "model.safetensors").is_file()
    report = compare_strategies(lens.model, ["walking"], ["pieces"], options=ReportOptions(texts=("the walking dog",)))
    assert report.strategy("pieces").words[0].contexts == 1


def test_cli_mistyped_words_file_is_an_error_not_a_word(capsys, mlm_dirs, tmp_path):
    argv = ["extend", str(mlm_dirs["bert"]), "--words", str(tmp_path / "wrods.txt"), "--out", str(tmp_path / "new")]
    assert main(argv) == 2
    assert "--words-file" in capsys.readouterr().err and not (tmp_path / "new").exists()
