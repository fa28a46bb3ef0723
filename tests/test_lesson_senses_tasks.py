"""serving.lesson_senses and serving.lesson_tasks: what the Word senses, Probing and Using BERT pages show,
computed from the shipped data and results, the learner's text and the tiny zoo's models (tests/conftest.py)."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

import serving
from model_zoo.lessons.sense_data import MapView, SenseModel, SenseSet
from model_zoo.lessons.senses import PlacedOwn, SenseVectors
from serving import lesson_senses as ls
from serving import lesson_tasks as lt
from tests.conftest import ROOT

# Six uses of "bank", three by the river and three for money; at layer 0 every use looks alike, at layer
# 1 the senses pull apart. The learner's use sits among the river uses at layer 0 and the money uses at 1.
RIVER, MONEY = np.array([1.0, 0.0]), np.array([0.0, 1.0])
TOY = SenseSet(
    "bank",
    tuple(f"sentence {i}" for i in range(6)),
    ("bank%river",) * 3 + ("bank%money",) * 3,
    {"bank%river": "sloping land beside a river", "bank%money": "a financial institution"},
)
TOY_USES = SenseVectors(
    "bank",
    np.stack([np.stack([RIVER, RIVER])] * 3 + [np.stack([RIVER, MONEY])] * 3),  # (6, S=2, D=2)
    np.zeros(2),
    np.zeros(2),
)
TOY_OWN = np.stack([RIVER, MONEY])  # (S, D)


def view(method: str = "pca", layer: int = 3, neighbours: int = 15, min_dist: float = 0.1, seed: int = 0) -> MapView:
    return MapView(layer, 6, method, neighbours, min_dist, seed)


# -- Word senses: the shipped set -----------------------------------------------------------------------
def test_the_lessons_own_words_lead_then_the_others_alphabetically() -> None:
    words = ls.lesson_words()
    assert words[:2] == ["bank", "stick"]
    assert words[2:] == sorted(words[2:])
    assert sorted(words) == sorted(ls.sense_sets())


def test_total_uses_counts_every_sentence_of_the_shipped_set() -> None:
    rows = (ROOT / "assets" / "senses" / "senses.tsv").read_text(encoding="utf-8").splitlines()
    assert ls.total_uses() == len(rows) - 1  # a header, then one use a line
    assert ls.total_uses() == sum(len(s.sentences) for s in ls.sense_sets().values())


def test_a_precomputed_model_is_shown_from_its_file_at_its_own_depth() -> None:
    shown = ls.precomputed_model("minilm-l6", "bank")
    assert shown is not None and shown.pre is not None
    assert (shown.name, shown.static, shown.depth) == ("minilm-l6", False, 6)  # six layers above the embeddings
    assert ls.precomputed_model("minilm-l6", "no-such-word") is None
    assert ls.precomputed_model("bert-base-uncased", "bank") is None  # nothing precomputed for it


def test_ready_maps_need_no_model_and_a_learners_use_needs_one() -> None:
    sense_set = ls.sense_sets()["bank"]
    n = len(sense_set.sentences)
    glove = SenseModel("glove-6b-50d", True, 0, None)
    assert ls.ready_map(glove, view(), sense_set, True).tolist() == [[0.0, 0.0]] * n  # every use is one point
    minilm = ls.precomputed_model("minilm-l6", "bank")
    assert minilm is not None and minilm.pre is not None
    np.testing.assert_array_equal(ls.ready_map(minilm, view(layer=3), sense_set, False), minilm.pre.pca[:, 3])
    np.testing.assert_array_equal(ls.ready_map(minilm, view("umap", 6), sense_set, False), minilm.pre.umap[:, 6])
    assert ls.ready_map(minilm, view("umap", 6, neighbours=5), sense_set, False) is None  # not UMAP's defaults
    assert ls.ready_map(minilm, view(), sense_set, True) is None  # the learner's use must be placed


def test_other_forms_of_the_word_in_the_learners_sentence() -> None:
    assert ls.other_forms("The boat drifted toward the Bank's edge.", "bank") is None  # the word is there
    assert ls.other_forms("Two banks and a riverbank.", "bank") == ["banks", "riverbank"]
    assert ls.other_forms("No such word here.", "bank") == []


def test_the_learners_use_is_placed_last_and_voted_on_by_its_nearest_uses() -> None:
    xy = np.arange(14, dtype=float).reshape(7, 2)  # the six uses, then the learner's
    points, own = ls.place_own(xy, TOY_USES, TOY, TOY_OWN, 1)
    assert points.tolist() == xy[:-1].tolist()
    assert own == PlacedOwn(12.0, 13.0, "bank%money", 0.6)  # the three money uses among the nearest five
    assert ls.own_votes(TOY_USES, TOY, TOY_OWN, 1) == ["bank%river", "bank%money"]
    assert ls.own_votes(TOY_USES, TOY, TOY_OWN, 0) == ["bank%river"]  # a model's own depth only


def test_measure_lines_read_precomputed_figures_and_give_a_static_model_chance() -> None:
    sense_set = ls.sense_sets()["bank"]
    minilm = ls.precomputed_model("minilm-l6", "bank")
    assert minilm is not None and minilm.pre is not None
    lines = ls.measure_lines([SenseModel("glove-6b-50d", True, 0, None), minilm], sense_set)
    assert list(lines.accuracy) == ["glove-6b-50d", "minilm-l6"]
    np.testing.assert_array_equal(lines.accuracy["glove-6b-50d"], lines.chance)
    assert lines.chance.shape == (7,) and np.all(lines.chance == lines.chance[0])
    np.testing.assert_array_equal(lines.accuracy["minilm-l6"], minilm.pre.accuracy)
    assert list(lines.self_similarity) == list(lines.baseline) == ["minilm-l6"]  # contextual models only


def test_chinese_similarity_is_the_cosine_of_the_last_layer(monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[tuple[str, tuple[str, ...], str]] = []

    def word_vectors(model_name: str, texts: tuple[str, ...], word: str) -> np.ndarray:
        asked.append((model_name, texts, word))
        last = [RIVER] * 3 + [MONEY] * 3  # the last layer tells the senses apart; the first does not
        return np.stack([np.stack([RIVER, v]) for v in last])

    monkeypatch.setattr(serving, "word_vectors", word_vectors)
    similarity = ls.chinese_similarity("bert-base-chinese", "长")
    assert asked == [("bert-base-chinese", tuple(s for s, _ in ls.CHINESE["长"]), "长")]
    assert similarity.round(6).tolist() == [[1.0] * 3 + [0.0] * 3] * 3 + [[0.0] * 3 + [1.0] * 3] * 3


def test_live_maps_on_the_tiny_zoo(tiny_zoo: Path) -> None:
    sense_set = ls.sense_sets()["bank"]
    n = len(sense_set.sentences)
    uses = serving.sense_vectors("minilm-l6", "bank")
    assert uses.vectors.shape[:2] == (n, 3)  # the tiny BERT: embeddings and two layers
    assert ls.live_map("minilm-l6", "bank", 2, view(layer=2), None).shape == (n, 2)
    own = serving.own_sentence_vector("minilm-l6", "We sat on the river bank.", "bank")
    xy = ls.live_map("minilm-l6", "bank", 2, view(layer=2), own)
    assert xy.shape == (n + 1, 2)
    points, placed = ls.place_own(xy, uses, sense_set, own, 2)
    assert points.shape == (n, 2) and (placed.x, placed.y) == (float(xy[-1, 0]), float(xy[-1, 1]))
    assert placed.sense in sense_set.sense_keys and placed.share in {0.4, 0.6, 0.8, 1.0}  # of the nearest five


def test_a_static_model_gives_one_point_for_every_use(tiny_zoo: Path) -> None:
    assert ls.static_points("glove-6b-50d", "bank") == 1


# -- Probing ---------------------------------------------------------------------------------------------
def test_gathered_results_take_a_retrained_probe_over_the_shipped_one() -> None:
    shipped = serving.probing_results("minilm-l6")
    assert shipped is not None
    found = lt.gather_results(["minilm-l6", "bert-base-uncased"], ["pos", "ner"], {})
    assert found.results == {"minilm-l6": {"pos": shipped.tasks["pos"], "ner": shipped.tasks["ner"]}}
    assert (found.missing, found.live) == (["bert-base-uncased"], [])  # nothing shipped for it
    again = dataclasses.replace(shipped.tasks["pos"], mix_score=0.5)
    found = lt.gather_results(["minilm-l6"], ["pos", "ner"], {("minilm-l6", "pos"): again})
    assert found.results["minilm-l6"]["pos"].mix_score == 0.5 and found.live == [("minilm-l6", "pos")]


def test_bert_features_come_from_the_bert_models_picked() -> None:
    shipped = serving.probing_results("minilm-l6")
    assert shipped is not None and shipped.features
    assert lt.bert_features(["elmo-mini", "minilm-l6"]) == {"minilm-l6": shipped.features}  # ELMo is no BERT
    assert lt.TASKS == ("pos", "ner", "dep", "sense", "agreement")
    assert lt.PROBING_SCRIPT == "python -m model_zoo.probing"


# -- Using BERT ------------------------------------------------------------------------------------------
def test_written_questions_hold_the_lecture_passage_and_the_split_sizes() -> None:
    from model_zoo.lessons import tasks

    passages, train, test = lt.written_questions()
    assert lt.LECTURE_PASSAGE in passages and "precipitation" in passages[lt.LECTURE_PASSAGE][0].passage
    assert (train, test) == tuple(map(len, tasks.load_questions()))
    assert train > test > 0
    assert lt.POOLINGS == ("cls", "mean")


def test_held_out_sentences_are_every_fifth() -> None:
    rows = (ROOT / "assets" / "tasks" / "sentiment.tsv").read_text(encoding="utf-8").splitlines()
    assert lt.held_out_sentences("sentiment") == (len(rows) - 1 + 4) // 5  # rows 0, 5, 10, ... after the header


def test_the_pair_separator_is_the_second_token_of_no_word(tiny_zoo: Path) -> None:
    roberta = SimpleNamespace(tokens=["<s>", "A", "</s>", "</s>", "B", "</s>"], word_ids=[None, 0, None, None, 1, None])
    assert lt.pair_separator(roberta) == "</s>"  # type: ignore[arg-type]
    assert lt.pair_separator(SimpleNamespace(tokens=["a", "b"], word_ids=[0, 1])) is None  # type: ignore[arg-type]
    assert lt.pair_separator(serving.pair_states("minilm-l6", "we sat on the bank", "the river")) == "[SEP]"


def test_a_reader_that_misses_the_written_answer_is_told(monkeypatch: pytest.MonkeyPatch) -> None:
    from model_zoo.lessons.tasks import Answer

    passages, _, _ = lt.written_questions()
    written = passages[lt.LECTURE_PASSAGE][0]
    empty = np.zeros(3)

    def answer(text: str, span: tuple[int, int] | None) -> Answer:
        return Answer(text, 0, 1, ["a", "b", "c"], empty, empty, 0, 1, passage=written.passage, span=span)

    def reading(got: Answer):  # noqa: ANN202
        monkeypatch.setattr(serving, "read_question", lambda reader, question, passage: got)
        return lt.read_question("minilm-l6-qa", written.question, written.passage)

    found = answer(written.answer, written.span)
    assert reading(found) == (found, None)
    wrong = answer("something else", (0, 9))
    assert reading(wrong) == (wrong, written.answer)
    assert reading(answer("", None))[1] == written.answer  # no answer at all is a miss
    monkeypatch.setattr(serving, "read_question", lambda reader, question, passage: wrong)
    assert lt.read_question("minilm-l6-qa", "A question nobody wrote?", written.passage)[1] is None


def test_a_reader_on_the_tiny_zoo_answers_within_the_passage(tiny_zoo: Path) -> None:
    passages, _, _ = lt.written_questions()
    written = passages[lt.LECTURE_PASSAGE][0]
    got, missed = lt.read_question("minilm-l6-qa", written.question, written.passage)
    assert got.passage and got.tokens
    assert missed in (None, written.answer)


def test_importing_the_lesson_modules_does_not_import_torch() -> None:
    """Word senses draws its precomputed figures before torch is imported; Probing never needs it."""
    script = (
        "import sys\n"
        "import serving.lesson_senses, serving.lesson_tasks\n"
        "from model_zoo.types import MapView, OwnVectors, SenseModel, SenseSet, SenseVectors, TaskResult\n"
        "print('torch' in sys.modules)\n"
        "serving.lesson_tasks.POOLINGS\n"
        "print('torch' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["False", "True"]  # the Using BERT constants come with the tasks lesson
