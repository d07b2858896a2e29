"""Benchmarks: pair figures equal gensim's evaluate_word_pairs, the reference figures are reproduced, analogy accuracy
equals gensim's on the questions both can ask, and every bad file gets a clear error."""

from __future__ import annotations

import csv
import json
import math
import sys
from pathlib import Path

import numpy as np
import pytest
from bounds import (
    EPS32,
    EPS64,
    RANK_CORRELATION_ROUNDING,
    correlation_shift_bound,
    gamma,
    pearson_rounding,
    rank_change,
)
from handmade import make_handmade

from bertlens import InputError, load_model, word_vector
from bertlens.embeddings.token_classes import TokenFilter
from bertlens.similarity.benchmarks import ANALOGY_BENCHMARKS, DATA, NAMED, SIMILARITY_BENCHMARKS, list_benchmarks
from bertlens.similarity.evaluate import evaluate_analogies, evaluate_pairs
from bertlens.similarity.index import open_index
from bertlens.similarity.statistics import pearson, ranks, spearman

ROOT = Path(__file__).resolve().parents[2]
SHARED = ROOT / ".." / "shared" / "data"
# Spearman of the default model's input matrix, measured with a plain script.
REFERENCE = {"wordsim353": 0.742, "men": 0.730, "rg65": 0.707, "simverb3500": 0.370, "rw": 0.372, "mturk771": 0.736}


@pytest.fixture(scope="module")
def pairs(default_model):
    return {name: evaluate_pairs(default_model, name) for name in SIMILARITY_BENCHMARKS}


@pytest.fixture(scope="module")
def index(default_model, tmp_path_factory):
    return open_index(default_model, tmp_path_factory.mktemp("cache"))


@pytest.fixture(scope="module")
def google(default_model, index):
    return evaluate_analogies(default_model, "google", index=index)


@pytest.fixture(scope="module")
def hand_model(tiny_dirs, tmp_path_factory):
    return load_model(str(make_handmade(tiny_dirs["bert"], tmp_path_factory.mktemp("handmade") / "bert")))


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


# --- correlation ---------------------------------------------------------------------------------------------------


def test_ranks_and_correlations_by_hand():
    assert ranks(np.array([10, 20, 20, 5])).tolist() == [2, 3.5, 3.5, 1]
    rho = spearman(np.array([1, 2, 3, 4]), np.array([0.1, 0.2, 0.4, 0.3]))
    assert rho == pytest.approx(0.8, abs=RANK_CORRELATION_ROUNDING)  # 1 - 6*2/60
    assert pearson(np.array([1, 2, 3]), np.array([2, 4, 6])) == 1.0  # small integers: every step exact
    assert math.isnan(pearson(np.array([1, 1, 1]), np.array([1, 2, 3])))


def test_correlations_equal_scipy():
    stats = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(0)
    for _ in range(20):
        x = rng.integers(0, 8, 300).astype(float)  # many ties
        y = x + rng.normal(0, 3, 300).round(1)
        assert spearman(x, y) == pytest.approx(stats.spearmanr(x, y).statistic, abs=RANK_CORRELATION_ROUNDING)
        assert pearson(x, y) == pytest.approx(stats.pearsonr(x, y).statistic, abs=pearson_rounding(x, y))
        np.testing.assert_array_equal(ranks(y), stats.rankdata(y))


# --- word pairs ----------------------------------------------------------------------------------------------------


def _gensim_vectors(model, words: list[str], cosines: dict[tuple[str, str], float] | None = None, dtype=np.float64):
    """gensim KeyedVectors of our pooled vectors; given `cosines`, its `similarity` answers exactly those."""
    from gensim.models import KeyedVectors

    class GivenCosines(KeyedVectors):
        def similarity(self, w1: str, w2: str) -> float:  # what evaluate_word_pairs ranks
            return cosines[w1, w2]

    kv = (KeyedVectors if cosines is None else GivenCosines)(384, dtype=dtype)
    kv.add_vectors(words, np.stack([word_vector(model, w, phrase=True).vector for w in words]).astype(dtype))
    return kv


def _pair_rows(path: Path, tmp_path: Path) -> tuple[list[list[str]], Path]:
    """The rows of a benchmark file, and a header-less copy for gensim."""
    rows = list(csv.reader(path.read_text(encoding="utf-8").splitlines()))[1:]
    return rows, write(tmp_path / path.name, "".join(f"{a},{b},{s}\n" for a, b, s in rows))


@pytest.mark.parametrize("name", SIMILARITY_BENCHMARKS)
def test_pair_figures_equal_gensim(default_model, pairs, name, tmp_path):
    """gensim's evaluate_word_pairs on the same pooled vectors (keys: the words as written) gives the same figures."""
    rows, copy = _pair_rows(DATA / NAMED[name].file, tmp_path)
    words = sorted({w for row in rows for w in row[:2]})
    ours = pairs[name]
    assert ours.pairs_used == ours.pairs_total == len(rows) and not ours.skipped
    mine = np.array([p.model for p in ours.pairs])
    gold = np.array([float(s) for _, _, s in rows])

    # Given exactly our cosines, gensim's reading of the file and its statistics give our figures, on any CPU.
    given = _gensim_vectors(default_model, words, {(a, b): c for (a, b, _), c in zip(rows, mine, strict=True)})
    (pearson_, _), spearman_, oov = given.evaluate_word_pairs(str(copy), delimiter=",", case_insensitive=False)
    assert oov == 0
    assert abs(ours.spearman - spearman_.statistic) <= RANK_CORRELATION_ROUNDING
    assert abs(ours.pearson - pearson_) <= pearson_rounding(gold, mine)

    # gensim's own float64 cosines are ours up to rounding: two 384-term norms and a dot product of unit vectors
    # (|u| |v| = 1) each, summed in whatever order its BLAS takes (it may even differ from call to call).
    kv = _gensim_vectors(default_model, words)
    wobble = 2 * gamma(2 * 384 + 4, EPS64)
    theirs = np.array([kv.similarity(a, b) for a, b, _ in rows])
    assert np.abs(theirs - mine).max() <= wobble
    # Distinct cosines lie farther apart than that, so gensim's order is ours except inside ties, which its rounding
    # may split (rw has discovery/rediscovery both ways): tied again, the ranks are the same, number for number.
    assert np.diff(np.unique(mine)).min() > 2 * wobble
    retied = theirs.copy()
    for value in {v for v in mine if (mine == v).sum() > 1}:
        retied[mine == value] = theirs[mine == value][0]
    np.testing.assert_array_equal(ranks(retied), ranks(mine))
    # End to end, gensim's figures can move only as far as ties split and cosines wobble allow.
    (gensim_pearson, _), gensim_spearman, _ = kv.evaluate_word_pairs(str(copy), delimiter=",", case_insensitive=False)
    spread = correlation_shift_bound(ranks(mine), rank_change(mine, wobble))
    assert abs(ours.spearman - gensim_spearman.statistic) <= RANK_CORRELATION_ROUNDING + spread
    shift = correlation_shift_bound(mine, wobble * math.sqrt(len(mine)))
    assert abs(ours.pearson - gensim_pearson) <= pearson_rounding(gold, mine) + shift


def test_float32_gensim_agrees_closely(default_model, pairs, tmp_path):
    """gensim's default float32 vectors round each cosine to float32 steps, which moves the figures only a little."""
    rows, copy = _pair_rows(DATA / "similarity" / "wordsim353.csv", tmp_path)
    kv = _gensim_vectors(default_model, sorted({w for row in rows for w in row[:2]}), dtype=np.float32)
    (gensim_pearson, _), gensim_spearman, _ = kv.evaluate_word_pairs(str(copy), delimiter=",", case_insensitive=False)
    mine = np.array([p.model for p in pairs["wordsim353"].pairs])
    wobble = 2 * gamma(2 * 384 + 4, EPS32)  # float32 norms and dot products, as above, in any order
    spread = correlation_shift_bound(ranks(mine), rank_change(mine, wobble))
    assert abs(pairs["wordsim353"].spearman - gensim_spearman.statistic) <= RANK_CORRELATION_ROUNDING + spread
    shift = correlation_shift_bound(mine, wobble * math.sqrt(len(mine)))
    gold = np.array([float(s) for _, _, s in rows])
    assert abs(pairs["wordsim353"].pearson - gensim_pearson) <= pearson_rounding(gold, mine) + shift
    assert spread < 0.05 and shift < 0.05  # worst-case bounds, yet not vacuous on these 353 pairs


def test_reversed_pairs_score_the_same(hand_model, tmp_path):
    result = evaluate_pairs(hand_model, write(tmp_path / "r.csv", "cats,dog,1\ndog,cats,2\nhe,days,3\ndays,he,4\n"))
    assert result.pairs[0].model == result.pairs[1].model and result.pairs[2].model == result.pairs[3].model


@pytest.mark.parametrize("name", sorted(REFERENCE))
def test_reference_figures_are_reproduced(pairs, name):
    # References printed to 3 decimals: rounding can flip the last one, so within 0.0015; any rounding is far below.
    assert abs(round(pairs[name].spearman, 3) - REFERENCE[name]) <= 0.0015


def test_pair_result_reports_coverage(pairs):
    rw = pairs["rw"]
    assert rw.pairs_multi_piece == sum(len(p.pieces1) > 1 or len(p.pieces2) > 1 for p in rw.pairs) > 1000
    assert rw.pairs_unknown == 0 and rw.pool == "mean" and rw.metric == "cosine"
    data = json.loads(json.dumps(rw.to_dict()))
    assert data["pairs"][0]["word1"] == "squishing" and len(data["pairs"]) == 2034
    assert "rw" in rw.to_table() and "spearman=0.372" in repr(rw)


def test_pairs_by_hand(hand_model, tmp_path):
    # cosines: he-she 1/2, she-dog 1/sqrt(2), he-night 0, night-night 1
    ordered = write(tmp_path / "a.csv", "word1,word2,score\nhe,she,2\nshe,dog,3\nhe,night,1\nnight,night,4\n")
    result = evaluate_pairs(hand_model, ordered)
    assert [p.model for p in result.pairs] == pytest.approx([0.5, 1 / math.sqrt(2), 0.0, 1.0])
    assert result.spearman == pytest.approx(1.0)
    assert result.pearson == pytest.approx(np.corrcoef([2, 3, 1, 4], [0.5, 1 / math.sqrt(2), 0, 1])[0, 1])
    swapped = write(tmp_path / "b.csv", "he,she,2\nshe,dog,4\nhe,night,1\nnight,night,3\n")  # no header
    assert evaluate_pairs(hand_model, swapped).spearman == pytest.approx(0.8)


def test_pairs_coverage_never_drops_silently(hand_model, tmp_path):
    text = "he,she,1\ndays,night,2\n🙂,dog,3\n\u200b,dog,4\nshe,dog,5\n"
    result = evaluate_pairs(hand_model, write(tmp_path / "c.csv", text))
    assert (result.pairs_total, result.pairs_used, result.pairs_multi_piece, result.pairs_unknown) == (5, 4, 1, 1)
    assert [(s.line, s.word1) for s in result.skipped] == [(4, "\u200b")]
    assert "no pieces" in result.skipped[0].reason
    assert "Skipped" in result.to_table() and "\\u200b" in result.to_table()
    assert result.pairs[1].pieces1 == ("day", "##s")


def test_tab_separated_and_extra_columns(hand_model, tmp_path):
    tabbed = evaluate_pairs(hand_model, write(tmp_path / "t.txt", "he\tshe\t2\nshe\tdog\t3\nhe\tnight\t1\n"))
    extra = evaluate_pairs(
        hand_model, write(tmp_path / "x.csv", "relation,score,word2,word1\nr,2,she,he\nr,3,dog,she\nr,1,night,he\n")
    )
    assert tabbed.spearman == extra.spearman == pytest.approx(1.0)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "is empty"),
        ("\n  \n", "is empty"),
        ("word1,word2,score\n", "header line but no pairs"),
        ("he,she\n", "line 1: 2 column"),
        ("word1,word2,score\nhe,she,1\nshe\n", "line 3: 1 column"),
        ("word1,word2,score\nhe,she,1\nshe,dog,high\n", "line 3: the score 'high' is not a number"),
        ("he,she,1\nshe,dog,nan\n", "line 2: the score 'nan' is not a number"),
        ("he,she,1\n", "a correlation needs at least 2"),
        ("he,\u200b,1\nshe,dog,2\n", "only 1 of 2 pairs could be scored"),
    ],
)
def test_bad_pair_files(hand_model, tmp_path, text, message):
    with pytest.raises(InputError, match=message):
        evaluate_pairs(hand_model, write(tmp_path / "bad.csv", text))


def test_bad_pair_arguments(hand_model, tmp_path):
    with pytest.raises(InputError, match="Unknown benchmark 'wordsim'") as error:
        evaluate_pairs(hand_model, "wordsim")
    assert "wordsim353, wordsim353-sim" in error.value.hint and "google" not in error.value.hint
    with pytest.raises(InputError, match="File not found"):
        evaluate_pairs(hand_model, tmp_path / "missing.csv")
    with pytest.raises(InputError, match="not a file"):
        evaluate_pairs(hand_model, tmp_path)
    with pytest.raises(InputError, match="is an analogy benchmark"):
        evaluate_pairs(hand_model, "google")
    with pytest.raises(InputError, match="Unknown pooling"):
        evaluate_pairs(hand_model, "mc30", pool="max")
    with pytest.raises(InputError, match="not (valid )?UTF-8"):
        evaluate_pairs(hand_model, _latin(tmp_path))
    with pytest.raises(InputError, match="No benchmark"):
        evaluate_pairs(hand_model, "")


def _latin(tmp_path: Path) -> Path:
    path = tmp_path / "latin1.csv"
    path.write_bytes("caf\u00e9,tea,3\n".encode("latin-1"))
    return path


# --- named benchmarks ----------------------------------------------------------------------------------------------


def test_list_benchmarks_with_sizes():
    listed = list_benchmarks()
    sizes = {b.name: b.size for b in listed}
    assert sizes == {
        "wordsim353": 353,
        "wordsim353-sim": 203,
        "wordsim353-rel": 252,
        "men": 3000,
        "rg65": 65,
        "mc30": 30,
        "rw": 2034,
        "simverb3500": 3500,
        "mturk287": 287,
        "mturk771": 771,
        "yp130": 130,
        "verb143": 144,
        "semeval17": 500,
        "google": 19544,
        "bats": 98000,
    }
    assert listed.names == [*SIMILARITY_BENCHMARKS, *ANALOGY_BENCHMARKS]
    assert listed["bats"].kind == "analogy" and "LGPL" in listed["google"].licence
    assert "wordsim353" in listed.to_table() and json.dumps(listed.to_dict())


def test_every_benchmark_ships_with_its_readme():
    for named in NAMED.values():
        path = DATA / named.file
        assert path.is_file()
        readme = path.with_name(path.name.split(".")[0].removesuffix("-sim").removesuffix("-rel") + ".README.md")
        if named.kind == "analogy":
            readme = path.with_name(("google" if "questions" in path.name else "bats") + ".README.md")
        assert readme.is_file(), readme
        assert str(ROOT / "bertlens" / "data") in str(path.resolve())  # inside the package, not ../shared


def test_package_data_globs_cover_every_data_file():
    tomllib = pytest.importorskip("tomllib")
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    patterns = config["tool"]["setuptools"]["package-data"]["bertlens"]
    package = ROOT / "bertlens"
    shipped = {p for pattern in patterns for p in package.glob(pattern) if p.is_file()}
    every = {p for p in (package / "data").rglob("*") if p.is_file()}
    assert every and every <= shipped


@pytest.mark.skipif(not SHARED.is_dir(), reason="../shared/data is not here")
def test_shipped_files_are_the_collected_ones():
    sources = {
        "similarity/semeval17.csv": "similarity/semeval17-en/semeval17-en.csv",
        "similarity/men.csv": "similarity/men/men.csv",
        "analogy/questions-words.txt": "analogy/google/questions-words.txt",
        "analogy/bats.csv": "analogy/bats/bats.csv",
    }
    for named in NAMED.values():
        stem = Path(named.file).stem
        source = sources.get(named.file, f"similarity/{stem.removesuffix('-sim').removesuffix('-rel')}/{stem}.csv")
        assert (DATA / named.file).read_bytes() == (SHARED / source).read_bytes(), named.file


# --- analogies -----------------------------------------------------------------------------------------------------


def test_google_on_the_default_model(google):
    result = google
    assert result.questions == 19544 and len(result.categories) == 14
    assert [g.name for g in result.groups] == ["semantic", "syntactic"]
    assert [g.questions for g in result.groups] == [8869, 10675]
    for parts in (result.categories, result.groups):
        assert sum(c.questions for c in parts) == result.questions
        assert sum(c.covered for c in parts) == result.covered
        assert sum(c.correct for c in parts) == result.correct
    assert result.correct <= result.covered <= result.questions
    assert 0.85 < result.covered / result.questions < 0.9  # 17,098 covered
    assert 0.5 < result.accuracy < 0.6 and 0.6 < result.accuracy_covered < 0.7  # 0.551 and 0.630 measured
    assert result.accuracy == result.correct / result.questions
    assert result.accuracy_covered == result.correct / result.covered
    capitals = result.categories[0]
    assert capitals.name == "capital-common-countries" and capitals.group == "semantic" and capitals.questions == 506
    table = result.to_table()
    assert "capital-common-countries" in table and "syntactic" in table and "3CosAdd" in table
    assert json.loads(json.dumps(result.to_dict()))["groups"][0]["name"] == "semantic"


def test_accuracy_equals_gensim_on_questions_both_can_ask(default_model, index, tmp_path):
    """On Google questions whose four words are single whole-word tokens, gensim's evaluate_word_analogies on the
    same unit vectors counts the same correct answers."""
    from gensim.models import KeyedVectors

    allowed = index.allowed(TokenFilter.words_only())
    ids = np.flatnonzero(allowed)
    lines = []

    def single(word: str) -> bool:
        pieces = word_vector(default_model, word).ids
        return len(pieces) == 1 and bool(allowed[pieces[0]])

    for line in (DATA / "analogy" / "questions-words.txt").read_text(encoding="utf-8").splitlines()[::12]:
        if line.startswith(":"):
            continue
        words = line.split()
        if all(single(w) for w in words):
            lines.append(" ".join(words))
    assert len(lines) > 1000
    path = write(tmp_path / "q.txt", ": sample\n" + "\n".join(lines) + "\n")
    ours = evaluate_analogies(default_model, path, index=index)
    assert ours.questions == ours.covered == len(lines)
    kv = KeyedVectors(index.dims)
    kv.add_vectors([index.tokens[i] for i in ids], np.asarray(index.raw.unit)[ids])
    theirs, sections = kv.evaluate_word_analogies(str(path), restrict_vocab=len(ids), case_insensitive=True)
    assert len(sections[-1]["correct"]) + len(sections[-1]["incorrect"]) == len(lines)
    assert ours.correct == len(sections[-1]["correct"])
    assert ours.accuracy == pytest.approx(theirs)


def test_bats_on_the_default_model(default_model, index):
    result = evaluate_analogies(default_model, "bats", index=index)
    assert result.questions == 98000 and len(result.categories) == 40
    assert [g.questions for g in result.groups] == [24500] * 4
    assert all(c.questions == 2450 for c in result.categories)
    assert result.categories[0].name == "I01 [noun - plural_reg]"
    assert result.categories[0].group == "1_Inflectional_morphology"
    assert sum(c.correct for c in result.categories) == result.correct <= result.covered
    assert 0.15 < result.accuracy < 0.3  # 0.211 measured


def test_analogy_files_by_hand(hand_model, tmp_path):
    words = write(tmp_path / "q.txt", ": pronouns\nhe she day night\nhe she day dog\nhe she day days\n")
    result = evaluate_analogies(hand_model, words, cache_dir=tmp_path)
    # night is the answer (cos 1); dog is wrong; "days" is two pieces, so that question is not covered
    assert (result.questions, result.covered, result.correct) == (3, 2, 1)
    assert result.accuracy == pytest.approx(1 / 3) and result.accuracy_covered == pytest.approx(0.5)
    assert result.categories[0].name == "pronouns" and result.groups == ()
    alternatives = write(tmp_path / "a.csv", "category,word1,word2,word3,word4\nx,he,she,day,dog/night\n")
    assert evaluate_analogies(hand_model, alternatives, cache_dir=tmp_path).correct == 1
    # BATS-style pairs: he:she :: day:? (night or dog) and day:night :: he:? (she); both are right
    text = "group,code,relation,word1,word2_alternatives\ng,R1,rel,he,she\ng,R1,rel,day,night/dog\n"
    bats = write(tmp_path / "b.csv", text)
    result = evaluate_analogies(hand_model, bats, method="3cosmul", cache_dir=tmp_path)
    assert (result.questions, result.correct) == (2, 2)
    assert result.categories[0].name == "R1 [rel]" and [g.name for g in result.groups] == ["g"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "is empty"),
        (": s\nhe she day\n", "line 2: 3 word"),
        ("he she day night\nhe she day\n", "line 2: 3 word"),
        (": only a section\n", "has no questions"),
        ("word1;word2\n", "format is not recognised"),
        ("category,word1,word2,word3,word4\n", "header line but no questions"),
        ("category,word1,word2,word3,word4\nx,he,she,day\n", "line 2: 4 column"),
        ("category,word1,word2,word3,word4\nx,he,,day,night\n", "line 2: the column word2 is empty"),
        ("word1,word2_alternatives\nhe,she\n", "no relation has two pairs"),
        ("word1,word2_alternatives\nhe,she\nday, / \n", "line 3: no word in"),
        ("he she \u200b night\n", "line 1: .* has no pieces"),
    ],
)
def test_bad_analogy_files(hand_model, tmp_path, text, message):
    with pytest.raises(InputError, match=message):
        evaluate_analogies(hand_model, write(tmp_path / "bad.txt", text), cache_dir=tmp_path)


def test_bad_analogy_arguments(hand_model, tmp_path):
    with pytest.raises(InputError, match="Unknown analogy method"):
        evaluate_analogies(hand_model, "google", method="3cosmax")
    with pytest.raises(InputError, match="is a similarity benchmark"):
        evaluate_analogies(hand_model, "wordsim353")
    with pytest.raises(InputError, match="Unknown benchmark 'msr'") as error:
        evaluate_analogies(hand_model, "msr")
    assert error.value.hint.startswith("Named analogy benchmarks: google, bats")
    with pytest.raises(InputError, match="File not found"):
        evaluate_analogies(hand_model, tmp_path / "missing.txt")


def test_no_import_of_torch(tmp_path):
    """Benchmarks need neither torch nor transformers (checked in a fresh interpreter)."""
    import subprocess

    code = (
        "import sys; from bertlens import load_model; from bertlens.similarity.evaluate import evaluate_pairs;"
        "evaluate_pairs(load_model(), 'mc30'); print('torch' in sys.modules, 'transformers' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=tmp_path)
    assert out.stdout.split() == ["False", "False"]
