"""Numbers exact in every corner: position ids when a text holds the pad token (every family, every path), one
word-splitting rule for every word look-up, and texts without a word.

transformers is the oracle: each text's hidden states are its own `model(input_ids, attention_mask)` on the float64
twin of the tiny model (tests/bounds.py: a float64 forward pass in any order, rounded to float32, lies within
`rounded_bound` of transformers' float64 states, whatever the CPU).
"""

from __future__ import annotations

import json
import shutil
import sys
from functools import partial
from pathlib import Path

import numpy as np
import pytest
import torch
from bounds import float64_twin, float64_wobble, rounded_bound
from tiny import BERT_SPECIALS, FAMILIES, build_tokenizer, make_tiny

from bertlens import InputError, load_model
from bertlens.cli import main
from bertlens.contextual.context import compare_contexts
from bertlens.contextual.distill import distill
from bertlens.contextual.runner import special_frame, window_plan
from bertlens.contextual.states import RunOptions, _best_window, _windows, hidden_states
from bertlens.contextual.vectors import word_vectors, word_vectors_many
from bertlens.core.families import position_ids
from bertlens.core.options import COMBINES, WORD_POOLS
from bertlens.core.packing import inference_model
from bertlens.core.tokens import find_word, text_words, word_key
from bertlens.occurrences.marked import parse_example
from bertlens.senses.senses import SensesOptions, word_senses
from bertlens.wic.same_sense import find_target

sys.path.append(str(Path(__file__).resolve().parents[2] / "bench"))  # bench/senses_quality.py: `collect`
from senses_quality import collect

OFFSET = ("roberta", "xlm-roberta", "camembert", "roberta-pad-0")  # positions from padding_idx + 1, pads skipped


@pytest.fixture(scope="module")
def dirs(tiny_dirs, tmp_path_factory):
    """Every tiny family's folder, a CamemBERT (RoBERTa's weights under model_type camembert) and the RoBERTa of the
    report: pad_token_id 0, with a BERT tokenizer whose [PAD] is id 0."""
    root = tmp_path_factory.mktemp("corners")
    camembert = shutil.copytree(tiny_dirs["roberta"], root / "camembert")
    config = json.loads((camembert / "config.json").read_text())
    config.update(model_type="camembert", architectures=["CamembertModel"])
    (camembert / "config.json").write_text(json.dumps(config))
    pad_0 = make_tiny("roberta", root / "roberta-pad-0", pad_token_id=0)
    tokenizer, _ = build_tokenizer(BERT_SPECIALS)
    tokenizer.save(str(pad_0 / "tokenizer.json"))
    return {**tiny_dirs, "camembert": camembert, "roberta-pad-0": pad_0}


@pytest.fixture(scope="module")
def models(dirs):
    return {family: load_model(str(path)) for family, path in dirs.items()}


def pad_piece(model) -> str:
    return "<pad>" if model.vocabulary.token_to_id("<pad>") is not None else "[PAD]"


def transformers_states(model, ids: list[int]) -> np.ndarray:
    """transformers' own hidden states for one unpadded input: (layers + 1, tokens, H), in the model's dtype."""
    tensor = torch.tensor([ids])
    with torch.inference_mode():
        out = model.torch_model()(input_ids=tensor, attention_mask=torch.ones_like(tensor), output_hidden_states=True)
    return torch.stack(out.hidden_states)[:, 0].numpy()


def assert_rounded_from(ours: np.ndarray, exact: np.ndarray) -> None:
    """`ours` (float32): a float64 forward pass in any order, rounded; `exact`: transformers' float64 one."""
    assert ours.dtype == np.float32 and exact.dtype == np.float64 and ours.shape == exact.shape
    assert (np.abs(ours - exact) <= rounded_bound(exact, float64_wobble(np.abs(exact).max()))).all()


def test_position_ids_are_transformers_own():
    ids = torch.tensor([[0, 7, 1, 9, 1, 1, 2], [0, 5, 2, 1, 1, 1, 1]])  # RoBERTa: <s> … </s>, pad (1) inside and after
    expected = torch.tensor([[2, 3, 1, 4, 1, 1, 5], [2, 3, 4, 1, 1, 1, 1]])
    from transformers.models.roberta.modeling_roberta import RobertaEmbeddings

    assert torch.equal(RobertaEmbeddings.create_position_ids_from_input_ids(ids, padding_idx=1), expected)
    assert torch.equal(position_ids(ids, "absolute-offset", 1), expected)
    np.testing.assert_array_equal(position_ids(ids.numpy(), "absolute-offset", 1), expected.numpy())  # numpy alike
    assert position_ids(ids.numpy(), "absolute-offset", 1).dtype == np.int64
    assert torch.equal(position_ids(ids, "absolute", 0), torch.arange(7).expand(2, 7))  # BERT: places, pads or not


@pytest.mark.parametrize("family", [*FAMILIES, "camembert", "roberta-pad-0"])
def test_a_text_holding_the_pad_token_gets_transformers_hidden_states(models, family):
    model = models[family]
    pad = pad_piece(model)
    texts = [f"a {pad} b {pad} c", "the cat sat on the mat", f"{pad} the big {pad} red car {pad}", "a dog"]
    encodings = [model.vocabulary.tokenizer.encode(text) for text in texts]
    pad_id = model.config.pad_token_id or 0
    assert encodings[0].ids.count(pad_id) == 2 and encodings[2].ids.count(pad_id) == 3  # the pad token itself
    twin = float64_twin(model)
    for encoding, states in zip(encodings, hidden_states(twin, texts).results, strict=True):  # one batch
        assert_rounded_from(states.states, transformers_states(twin, encoding.ids))
    # One text alone through the float32 model bertlens loads from the folder (transformers' own): bit for bit the
    # module it runs, deriving position ids from the ids as transformers' embeddings do.
    ids = torch.tensor([encodings[0].ids])
    net = inference_model(model, "cpu", "float32")
    with torch.inference_mode():
        out = net(input_ids=ids, attention_mask=torch.ones_like(ids), output_hidden_states=True)
    alone = torch.stack(out.hidden_states)
    np.testing.assert_array_equal(hidden_states(model, texts[0])[0].states, alone[:, 0].numpy())


@pytest.mark.parametrize("family", ["roberta", "xlm-roberta", "bert"])
def test_windows_of_a_long_text_holding_the_pad_token(models, family):
    twin = float64_twin(models[family])
    text = " ".join([f"the cat {pad_piece(twin)} sat"] * 30)  # 120 content tokens: windows of 60 (RoBERTa), 62
    result = hidden_states(twin, [text, "a dog"])[0]
    prefix, suffix = special_frame(twin)
    size, overlap = window_plan(twin, RunOptions())
    content = twin.vocabulary.tokenizer.encode(text, add_special_tokens=False).ids
    starts = _windows(len(content), size, overlap)
    assert result.windows == len(starts) >= 3
    windows = {start: transformers_states(twin, prefix + content[start : start + size] + suffix) for start in starts}
    for position in range(len(content)):  # each token from its best window, as transformers computes that window
        start = starts[_best_window(position, starts, size)]
        assert_rounded_from(result.states[:, len(prefix) + position], windows[start][:, len(prefix) + position - start])


@pytest.mark.parametrize("family", ["roberta", "camembert", "bert", "distilbert"])
def test_word_vectors_of_a_text_holding_the_pad_token(models, family):
    twin = float64_twin(models[family])
    pad = pad_piece(twin)
    texts = [f"a {pad} b {pad} c", "the big red car ran", f"{pad} dog {pad}"]
    for text, many in zip(
        texts, word_vectors_many(twin, texts, layers=[0, -1], combine="concat", pool="max"), strict=True
    ):
        one = word_vectors(twin, text, layers=[0, -1], combine="concat", pool="max")
        exact = transformers_states(twin, twin.vocabulary.tokenizer.encode(text).ids)  # (layers + 1, tokens, H)
        wobble = float64_wobble(np.abs(exact).max())
        for result in (one, many):
            assert [w.text for w in result.words] == [w.text for w in one.words] and len(one.words) >= 3
            for word, vector in zip(result.words, result.vectors, strict=True):
                pieces = np.concatenate([exact[0], exact[-1]], axis=-1)[list(word.token_indices)]  # (pieces, 2H)
                # picked and maxed: exact operations on rounded states, each within its bound of transformers'
                reach = rounded_bound(pieces, wobble).max(axis=0)
                assert (np.abs(vector - pieces.max(axis=0)) <= reach).all(), (family, text, word.text)


BREAD = [
    "I like bread and more bread.",
    "The banana bread was horrible",
    "BREAD is life",
    "no match here",
    "the bread's crust was hard",
    "a bread-maker broke",
]
# word, texts, the texts that hold the word as BERT's tokenizer splits words (counted by hand)
CASES = [
    ("bread", BREAD, [0, 1, 2, 4, 5]),
    ("don", ["I don't know", "Don is here", "London calling", "don-like"], [0, 1, 3]),
    ("maker", ["a bread-maker broke", "the Maker", "makers", "maker's mark"], [0, 1, 3]),
    ("café", ["Un café noir", "CAFÉ au lait", "the cafe", "cafés"], [0, 1]),
    ("straße", ["die STRASSE", "die Straße", "Strassenbahn"], [0, 1]),
    ("面", ["我喜欢面包", "面", "麺", "a面b"], [0, 1, 3]),
    ("3", ["pi is 3.14", "3 cats", "33 cats", "x3", "3-2"], [0, 1, 4]),
    ("o", ["O'Brien", "o_o", "no"], [0, 1]),
]


@pytest.mark.parametrize(("word", "texts", "holding"), CASES, ids=[case[0] for case in CASES])
def test_distill_and_context_find_the_same_words(tiny_models, word, texts, holding):
    model = tiny_models["bert"]  # BERT's normalizer and pre-tokenizer, as the default model's
    found = [bool(find_word(model, text, word)) for text in texts]
    assert [i for i, yes in enumerate(found) if yes] == holding
    distilled = distill(model, [word], texts)
    assert distilled.contexts == (len(holding),)
    compared = compare_contexts(model, word, [texts[i] for i in holding]) if len(holding) > 1 else None
    if compared is not None:
        assert sorted({o.sentence for o in compared.occurrences}) == list(range(len(holding)))
        occurrences = [(holding[o.sentence], o.start, o.end) for o in compared.occurrences]
        assert occurrences == [(i, s, e) for i in holding for s, e in find_word(model, texts[i], word)]
    for i in set(range(len(texts))) - set(holding):
        with pytest.raises(InputError, match="does not occur"):
            compare_contexts(model, word, [texts[i], texts[holding[0]]])


def test_distill_of_the_bread_example_uses_the_five_contexts_context_finds(default_model):
    distilled = distill(default_model, ["bread"], BREAD)
    assert distilled.contexts == (5,) and distilled.texts_read == 6
    vectors = word_vectors_many(default_model, [BREAD[i] for i in (0, 1, 2, 4, 5)], layers=[-1])
    first = [next(v for w, v in zip(r.words, r.vectors, strict=True) if word_key(w.text) == "bread") for r in vectors]
    mean = np.mean(np.array(first, np.float64), axis=0)  # each text's first "bread", averaged
    # distill ran these five texts as this one batch (the same bits) and summed them in float64 in this order
    np.testing.assert_array_equal(distilled.vectors[0], mean.astype(np.float32))
    words = text_words(default_model, ["the bread's crust", "a bread-maker"])
    assert [[t[s:e] for s, e in w] for t, w in zip(["the bread's crust", "a bread-maker"], words, strict=True)] == [
        ["the", "bread", "'", "s", "crust"],
        ["a", "bread", "-", "maker"],
    ]


@pytest.mark.parametrize("text", ["", "   ", "\u200b\x00"])
def test_a_text_without_words_gives_no_word_vectors(tiny_models, text):
    model = tiny_models["bert"]  # 2 layers: layer 2 is the last
    hidden = model.config.hidden_size
    for pool in WORD_POOLS:
        for combine in COMBINES:
            alone = word_vectors(model, text, layers=(2, -1), combine=combine, pool=pool)
            beside = word_vectors_many(model, [text, "a dog"], layers=(2, -1), combine=combine, pool=pool)[0]
            width = hidden * (2 if combine == "concat" else 1) * (2 if pool == "first+last" else 1)
            assert alone.vectors.shape == beside.vectors.shape == (0, width), (pool, combine)
            assert len(alone.words) == 0 and alone.to_dict()["vectors"] == []


def test_the_layers_command_answers_a_text_without_words(tiny_dirs, capsys):
    argv = ["layers", "", "--words", "--layers", "2", "-1", "--combine", "concat", "--pool", "max"]
    assert main([*argv, "--model", str(tiny_dirs["bert"])]) == 0
    assert "The text holds no words" in capsys.readouterr().out
    assert main([*argv, "--model", str(tiny_dirs["bert"]), "--json"]) == 0
    answer = json.loads(capsys.readouterr().out)
    assert answer["words"] == [] and answer["vectors"] == []


def test_word_key_and_find_word(default_model):
    assert word_key(" Bread ") == "bread" and word_key("STRASSE") == word_key("straße")
    assert find_word(default_model, "The bread's crust, a bread-maker", "BREAD") == [(4, 9), (21, 26)]
    assert find_word(default_model, "breadth", "bread") == [] and find_word(default_model, "", "bread") == []


def test_senses_and_search_find_words_as_the_tokenizer_splits_them(tiny_models, tmp_path):
    model = tiny_models["bert"]  # BERT's normalizer: every CJK character a word of its own; "_" punctuation
    corpus = tmp_path / "cjk.txt"
    lines = ["我喜欢面包。", "这碗面很好吃。", "面条很长。", "他的面包坏了。", "o_o 面 x", "面对问题。", "the 麺 shop"]
    corpus.write_text("\n".join(lines) + "\n", encoding="utf-8")
    found = word_senses(model, "面", corpus=corpus, options=SensesOptions(k=2))
    assert found.found == 6 == sum(bool(find_word(model, line, "面")) for line in lines)
    collected = collect(corpus, ["面", "O"], 10, model=model)  # the sentences pseudo-word and WiC scores read
    assert collected == {"面": lines[:6], "o": ["o_o 面 x"]}
    example = parse_example("a bread_maker broke", "BREAD", find=lambda text, word: find_word(model, text, word))
    assert (example.start, example.end, example.word) == (2, 7, "bread")
    found_by = partial(find_word, model)  # same-sense's target: the word itself, not a longer word starting with it
    assert find_target("a bread_maker broke", "bread", "first", found_by) == ("a bread_maker broke", 2, 7, None)
    assert find_target("我喜欢面包", "面", "first", found_by)[1:3] == (3, 4)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU (none here)")
@pytest.mark.parametrize("family", ["roberta", "roberta-pad-0", "bert"])
def test_on_the_gpu_a_text_holding_the_pad_token_keeps_the_cpus_positions(models, family):
    # The CPU's numbers are transformers' (the tests above); on CUDA only the order of float32 sums differs, while
    # positions numbered straight through a pad token moved the states to cosine ~0.6.
    model = models[family]
    pad = pad_piece(model)
    texts = [f"a {pad} b {pad} c", "the cat sat on the mat", f"{pad} dog {pad}", " ".join([f"the {pad} cat"] * 30)]
    on_gpu = RunOptions(device="cuda", dtype="float32", batch_tokens=64)  # several padded batches, windows

    def cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:  # (..., H) pairs of rows: their cosines
        a, b = a.astype(np.float64), b.astype(np.float64)
        return (a * b).sum(-1) / (np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1))

    for cpu, gpu in zip(hidden_states(model, texts), hidden_states(model, texts, options=on_gpu), strict=True):
        assert (cosines(cpu.states, gpu.states) >= 1 - 1e-5).all()
    every = list(range(model.config.num_hidden_layers + 1))
    cpu_words = word_vectors_many(model, texts, layers=every, combine="concat")
    gpu_words = word_vectors_many(model, texts, layers=every, combine="concat", options=on_gpu)  # the word pipeline
    for a, b in zip(cpu_words, gpu_words, strict=True):
        rows = (len(a.vectors), len(every), -1)
        assert (cosines(a.vectors.reshape(rows), b.vectors.reshape(rows)) >= 1 - 1e-5).all()
