"""The watch report shows the rows moving: the group words in one shared plane at a few checkpoints, the category
purity (with chance and word2vec's) and the frequency plateau over checkpoints, named where it holds, and the probe
words' nearest tokens per checkpoint; `bertlens watch --json` carries the purity and the plateau."""

from __future__ import annotations

import html
import json
import random
from pathlib import Path

import numpy as np
import pytest
from tiny_runs import tiny

from bertlens.cli import main
from bertlens.training import TokenizerConfig, pretrain, train_tokenizer, watch_report
from bertlens.training.baseline import vectors_purity, word2vec_baseline
from bertlens.training.plateau import PLATEAU_SHARE, find_plateau, frequency_snapshot
from bertlens.training.projection import group_projection
from bertlens.training.purity import learning_groups
from bertlens.training.report_figures import GROUPS_HEADING, PLATEAU_TAG, panel_indices, report_figures
from bertlens.training.watch_html import chosen_probes

GROUPS = learning_groups()
FILLER = ["the", "and", "of", "in", "a", "was", "with", "by"]


def group_text(lines: int, seed: int = 0) -> str:
    """Lines whose words come from one learning group each, with a few common words between them."""
    rng = random.Random(seed)
    names = list(GROUPS)
    out = []
    for _ in range(lines):
        words = GROUPS[rng.choice(names)]
        out.append(" ".join(f"{rng.choice(FILLER)} {rng.choice(words)} {rng.choice(words)}" for _ in range(4)) + ".")
    return "\n".join(out) + "\n"


@pytest.fixture(scope="module")
def group_corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    file = tmp_path_factory.mktemp("groups") / "groups.txt"
    file.write_text(group_text(400), encoding="utf-8")
    return file


@pytest.fixture(scope="module")
def group_run(group_corpus: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny run on the group text (every group word one piece), watched at steps 0, 2 and 4."""
    tokenizer = tmp_path_factory.mktemp("tok")
    train_tokenizer(group_corpus, tokenizer, TokenizerConfig(vocab_size=400))
    out = tmp_path_factory.mktemp("run") / "groups-bert"
    pretrain(
        tiny(max_steps=4, checkpoint_every=2, probe_words=("one", "january", "war")),
        group_corpus,
        out,
        tokenizer=tokenizer,
    )
    return out


# --- the frequency plateau ------------------------------------------------------------------------------------------


def test_frequency_snapshot_counts_the_most_frequent_tokens():
    from scipy.stats import spearmanr

    rng = np.random.default_rng(0)
    rows = rng.normal(size=(300, 8))  # (vocab, E)
    allowed = np.ones(300, dtype=bool)
    allowed[:5] = False  # specials: never counted, never neighbours
    counts = np.arange(300)[::-1].copy()  # id 5 is the most frequent allowed token, id 299 occurs 0 times
    counts[:5] = 10_000

    class Vocabulary:
        def id_to_token(self, token_id: int) -> str:
            return f"t{token_id}"

        def token_to_id(self, token: str) -> int | None:
            return int(token[1:]) if token[:1] == "t" and token[1:].isdigit() else None

    # t6 is a probe word: left out of the frequent tokens, which are then ids 5 and 7..105
    found = frequency_snapshot(rows, allowed, counts, [5, 6, 105, 250], Vocabulary(), ["t6"], top=100)
    assert found is not None
    assert found["top_share"] == 0.5  # 5 and 105 are among the 100 most frequent; 6 (a probe) and 250 are not
    assert found["chance"] == 100 / 295 and found["tokens_counted"] == 294 and found["neighbours"] == 4
    assert found["frequent"][:2] == ["t5", "t7"] and found["frequent"][-1] == "t105" and len(found["frequent"]) == 100
    seen = np.arange(5, 299)
    expected = spearmanr(np.linalg.norm(rows[seen], axis=1), counts[seen]).statistic
    assert found["norm_spearman"] == pytest.approx(expected, abs=1e-12)
    assert frequency_snapshot(rows, allowed, None, [5]) is None  # no counts (a run watched without them)


def records_with(shares: list[float | None], purities: list[float]) -> list[dict]:
    return [
        {"step": 10 * i, "frequency": {"top_share": s}, "category_purity": {"purity": p, "chance": 0.12}}
        for i, (s, p) in enumerate(zip(shares, purities, strict=True))
    ]


def test_plateau_is_named_where_it_holds_and_where_the_rows_left_it():
    found = find_plateau(records_with([0.02, 0.7, 0.9, 0.6, 0.05, 0.02], [0.12, 0.13, 0.15, 0.2, 0.5, 0.8]))
    assert found is not None and found.found
    assert (found.steps, found.left_at) == ((10, 20, 30), 40)
    assert (found.purity_on, found.purity_left, found.purity_last) == (0.2, 0.5, 0.8)
    assert found.text.startswith("The rows are learning frequency first: at steps 10 to 30")
    assert "left it by step 40" in found.text and "0.80 at the last checkpoint" in found.text
    still = find_plateau(records_with([0.0, 0.05, 0.8], [0.1, 0.1, 0.1]))
    assert still is not None and (still.steps, still.left_at) == ((20,), None) and "still are" in still.text


def test_plateau_absent_is_said_and_older_runs_have_none():
    never = find_plateau(records_with([0.9, 0.05, 0.02], [0.1, 0.3, 0.7]))  # step 0 is never the plateau
    assert never is not None and not never.found and "No frequency plateau" in never.text and never.steps == ()
    small = records_with([0.0, 0.6, 0.6], [0.1, 0.1, 0.1])  # a vocabulary of 150: 100 frequent tokens are most of it
    for record in small:
        record["frequency"]["chance"] = 100 / 150
    found = find_plateau(small)
    assert found is not None and not found.found  # 0.6 is below 10 times chance
    assert find_plateau([{"step": 0}, {"step": 5, "frequency": None}]) is None
    assert never.to_dict()["threshold"] == PLATEAU_SHARE


# --- the group words in one plane -----------------------------------------------------------------------------------


def group_records(steps: int = 9) -> list[dict]:
    """Records whose group words start as noise and end in one tight cluster per group."""
    rng = np.random.default_rng(1)
    words = [w for ws in GROUPS.values() for w in ws]
    labels = [g for g, ws in GROUPS.items() for _ in ws]
    centres = {g: rng.normal(size=16) * 3 for g in GROUPS}
    noise = rng.normal(size=(len(words), 16))
    records = []
    for i in range(steps):
        t = i / (steps - 1)
        rows = np.stack(
            [t * centres[g] + (1 - t) * n + 0.05 * rng.normal(size=16) for g, n in zip(labels, noise, strict=True)]
        )
        share = [0.02, 0.05, 0.7, 0.8, 0.6, 0.05, 0.05, 0.02, 0.02][i]
        records.append(
            {
                "step": 100 * i,
                "tokens": 1000 * i,
                "loss": None,
                "perplexity": None,
                "baseline": 0.01,
                "norms": {p: 1.0 for p in ("p5", "p25", "p50", "p75", "p95")},
                "benchmarks": {"rg65": {"spearman": 0.1 * t, "pairs_used": 40, "pairs_total": 65}},
                "neighbors": {"king": [["the", 0.5], [",", 0.4]], "one": [["two", 0.9], ["the", 0.5]]},
                "probes": {"king": rng.normal(size=16).tolist(), "one": rng.normal(size=16).tolist()},
                "category_purity": {
                    "purity": 0.12 + 0.8 * t,
                    "chance": 0.12,
                    "k": 5,
                    "words_used": 73,
                    "words_total": 73,
                    "per_group": {},
                },
                "frequency": {
                    "top": 100,
                    "top_share": share,
                    "chance": 0.0125,
                    "norm_spearman": share / 2,
                    "frequent": ["the", ","],
                },
                "group_rows": {"words": words, "groups": labels, "rows": rows.tolist()},
            }
        )
    return records


def test_group_projection_is_one_plane_for_every_checkpoint():
    records = group_records(3)
    found = group_projection(records)
    assert found is not None and found["steps"] == [0, 100, 200] and found["words"][:2] == ["one", "two"]
    points = np.asarray(found["points"])  # (steps, words, 2)
    assert points.shape == (3, 73, 2)
    stacked = np.concatenate([np.asarray(r["group_rows"]["rows"]) for r in records])
    unit = stacked / np.linalg.norm(stacked, axis=1, keepdims=True)
    centred = unit - unit.mean(axis=0)
    # one PCA of all checkpoints' unit rows: distances within the plane are those of the rows' top-2 projection
    _, singular, vt = np.linalg.svd(centred, full_matrices=False)
    expected = centred @ vt[:2].T
    assert np.allclose(np.abs(points.reshape(-1, 2)), np.abs(expected), atol=1e-4)
    assert found["variance"] == pytest.approx((singular[:2] ** 2 / (singular**2).sum()).tolist())
    assert group_projection([{"step": 0, "probes": {}}]) is None  # an older run: no group rows


def test_small_multiples_share_their_axes_and_name_every_group():
    records = group_records()
    found = find_plateau(records)
    assert found is not None
    plateau = found.to_dict()
    assert plateau["steps"] == [200, 300, 400] and plateau["left_at"] == 500
    assert panel_indices([r["step"] for r in records], plateau) == [0, 2, 3, 5, 6, 8]  # the plateau and its end too
    word2vec = {
        "benchmarks": {"rg65": {"spearman": 0.3, "pairs_used": 20, "pairs_total": 65}},
        "category_purity": {"purity": 0.55, "words_used": 70},
    }
    figures = dict(report_figures(records, [], {}, word2vec, groups=group_projection(records), plateau=plateau))
    groups = figures["The group words' rows forming, in one shared plane"]
    panels = [axis for axis in groups.axes if axis.get_visible()]
    assert (
        len(panels) == 6 and len({axis.get_xlim() for axis in panels}) == 1 and len({a.get_ylim() for a in panels}) == 1
    )
    assert panels[0].get_title() == "step 0 · purity 0.12" and panels[2].get_title().endswith(" · plateau")
    legend = groups.legends[0]
    assert [t.get_text() for t in legend.get_texts()] == [f"{g} ({len(ws)})" for g, ws in GROUPS.items()]
    purity = figures["Category purity and the frequency plateau"]
    entries = [t.get_text() for axis in purity.axes for t in axis.get_legend().get_texts()]
    assert {"category purity", "chance (random rows)", "word2vec (70 words)", "frequency plateau"} <= set(entries)
    assert "Spearman(row norm, frequency)" in entries and "plateau threshold" in entries
    similarity = figures["Word similarity of the input matrix (dashed: word2vec, same corpus and wall-clock time)"]
    labels = [t.get_text() for t in similarity.axes[0].get_legend().get_texts()]
    assert labels[:2] == ["rg65 (40 of 65 pairs)", "rg65 (word2vec, 20 of 65 pairs)"]
    for figure in (groups, purity, similarity):  # no point under any legend
        figure.canvas.draw()
        renderer = figure.canvas.get_renderer()
        boxes = [legend.get_window_extent(renderer) for legend in figure.legends]
        boxes += [a.get_legend().get_window_extent(renderer) for a in figure.axes if a.get_legend()]
        for axis in figure.axes:
            drawn = [np.column_stack([line.get_xdata(), line.get_ydata()]) for line in axis.get_lines()]
            drawn += [collection.get_offsets() for collection in axis.collections]
            for xy in drawn:
                xy = np.asarray(xy, dtype=float)
                xy = axis.transData.transform(xy[np.isfinite(xy).all(axis=1)]) if len(xy) else xy
                assert not any(box.contains(x, y) for box in boxes for x, y in xy)


def test_report_page_from_records(tmp_path: Path):
    run = tmp_path / "run"
    (run / "training").mkdir(parents=True)
    records = group_records()
    (run / "training" / "watch.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    report = watch_report(run)
    page = Path(report.html).read_text(encoding="utf-8")
    assert page.count("<svg") == 6  # groups, purity, similarity, loss, norms, the probes' paths
    assert "The rows are learning frequency first: at steps 200 to 400" in page
    assert "0.12 at step 0 (chance 0.12), 0.92 at step 800" in page
    assert "<span class=own>two</span>" in page and "<span class=frequent>the</span>" in page
    assert page.count("<tr class=plateau>") >= 3 and "<details><summary>Every checkpoint</summary>" in page
    assert report.plateau is not None and report.plateau["left_at"] == 500
    assert [c["category_purity"] for c in report.checkpoints][::8] == [0.12, pytest.approx(0.92)]
    data = json.loads(Path(report.json).read_text(encoding="utf-8"))
    assert data["plateau"] == report.plateau and data["group_projection"]["steps"][-1] == 800
    assert data["checkpoints"][0]["category_purity"]["chance"] == 0.12 and "group_rows" not in data["checkpoints"][0]
    assert chosen_probes(records) == ["one", "king"]  # a group word first
    text = report.to_table()
    assert "purity" in text and "frequent" in text and "learning frequency first" in text


def test_plateau_shading_ends_at_the_last_checkpoint_and_its_tag_is_explained(tmp_path: Path):
    records = group_records()
    for record, share in zip(records, [0.02, 0.05, 0.05, 0.05, 0.05, 0.05, 0.7, 0.8, 0.9], strict=True):
        record["frequency"]["top_share"] = share  # on the plateau from step 600 to the last checkpoint, 800
    found = find_plateau(records)
    assert found is not None and found.steps == (600, 700, 800) and found.left_at is None
    plateau = found.to_dict()
    figures = dict(report_figures(records, [], {}, None, groups=group_projection(records), plateau=plateau))
    purity = figures["Category purity and the frequency plateau"]
    shaded = [
        patch.get_patch_transform().transform(patch.get_path().vertices)[:, 0]  # the span's x, in steps
        for axis in purity.axes
        for patch in axis.patches
    ]
    assert len(shaded) == 2  # one span in each panel, from half a checkpoint before the plateau to the last one
    assert all((xs.min(), xs.max()) == (550, 800) for xs in shaded)
    groups = figures[GROUPS_HEADING]
    x_label, y_label = groups.get_supxlabel(), groups.get_supylabel()
    assert x_label.startswith("first principal direction (") and x_label.endswith("% of the variance)")
    assert y_label.startswith("second principal direction (") and y_label.endswith("% of the variance)")
    assert any(axis.get_title().endswith(" · plateau") for axis in groups.axes if axis.get_visible())
    run = tmp_path / "run"
    (run / "training").mkdir(parents=True)
    (run / "training" / "watch.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    page = Path(watch_report(run).html).read_text(encoding="utf-8")
    figure_end = page.index("</div>", page.index(html.escape(GROUPS_HEADING)))  # the caption right under the picture
    assert page[figure_end:].startswith(f"</div>\n<p class=caption>{html.escape(PLATEAU_TAG)}</p>")
    assert "\u201cplateau\u201d in a panel's title" in PLATEAU_TAG
    assert "class=caption" not in watch_report_page_without_plateau(tmp_path)


def watch_report_page_without_plateau(tmp_path: Path) -> str:
    records = group_records()
    for record in records:
        record["frequency"]["top_share"] = 0.0
    run = tmp_path / "flat"
    (run / "training").mkdir(parents=True)
    (run / "training" / "watch.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return Path(watch_report(run).html).read_text(encoding="utf-8")


def test_benchmark_lines_that_coincide_all_stay_visible():
    records = group_records(4)
    for record in records:  # three sets scoring alike at every checkpoint
        score = record["benchmarks"]["rg65"]
        record["benchmarks"] = {name: dict(score) for name in ("men", "simverb3500", "rg65")}
    figure = next(f for t, f in report_figures(records, [], {}, None) if t.startswith("Word similarity"))
    lines = [line for line in figure.axes[0].get_lines() if not line.get_label().startswith("_")]
    assert [line.get_label() for line in lines] == [f"{n} (40 of 65 pairs)" for n in ("men", "simverb3500", "rg65")]
    assert len({line.get_marker() for line in lines}) == 3 and len({line.get_color() for line in lines}) == 3
    widths, sizes = [line.get_linewidth() for line in lines], [line.get_markersize() for line in lines]
    orders = [line.get_zorder() for line in lines]
    assert widths == sorted(widths, reverse=True) and len(set(widths)) == 3  # an earlier line shows around a later one
    assert sizes == sorted(sizes, reverse=True) and len(set(sizes)) == 3 and orders == sorted(orders)
    assert [t.get_text() for t in figure.axes[0].get_legend().get_texts()] == [line.get_label() for line in lines]


# --- a real run, the CLI, word2vec ----------------------------------------------------------------------------------


def test_watch_json_carries_purity_frequency_and_plateau(group_run: Path, capsys: pytest.CaptureFixture[str]):
    records = [json.loads(line) for line in (group_run / "training/watch.jsonl").read_text().splitlines()]
    assert [r["step"] for r in records] == [0, 2, 4]
    assert all(r["category_purity"]["words_used"] == 73 for r in records)  # every group word is one piece
    assert all(0 <= r["frequency"]["top_share"] <= 1 and r["frequency"]["neighbours"] == 24 for r in records)
    assert main(["watch", str(group_run), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert [c["category_purity"] for c in report["checkpoints"]] == [r["category_purity"]["purity"] for r in records]
    assert [c["frequent_share"] for c in report["checkpoints"]] == [r["frequency"]["top_share"] for r in records]
    assert report["plateau"]["threshold"] == PLATEAU_SHARE and report["plateau"]["text"]
    page = (group_run / "report.html").read_text(encoding="utf-8")
    assert "rows forming, in one shared plane" in page and "Category purity and the frequency plateau" in page


def test_vectors_purity_is_the_shared_category_purity():
    rng = np.random.default_rng(0)
    centres = {g: rng.normal(size=12) * 4 for g in GROUPS}
    vectors = {w: centres[g] + rng.normal(size=12) for g, ws in GROUPS.items() for w in ws[:4]}  # 32 words
    found = vectors_purity(vectors, GROUPS)
    assert found is not None and (found.words_used, found.words_total) == (32, 73)
    assert found.purity == pytest.approx(3 / 5)  # each word's 3 group-mates first, then 2 others of k = 5
    assert found.chance == pytest.approx(8 * 4 * 3 / (32 * 31))
    assert vectors_purity({"one": np.ones(3), "two": np.ones(3)}, GROUPS) is None


def test_word2vec_baseline_scores_the_learning_groups(group_corpus: Path, tmp_path: Path):
    from bertlens.training.baseline import save_word2vec_baseline

    baseline = word2vec_baseline(group_corpus, 0.5, benchmarks=["rg65"], min_count=1)
    purity = baseline.category_purity
    assert purity is not None and purity["words_used"] == purity["words_total"] == 73
    assert 0 <= purity["purity"] <= 1 and purity["k"] == 5
    assert "category purity" in baseline.to_table()
    saved = json.loads(save_word2vec_baseline(baseline, tmp_path).read_text(encoding="utf-8"))
    assert saved["category_purity"] == purity
