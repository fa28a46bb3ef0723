"""Lessons 1-2 (one-hot, word embeddings) through AppTest, and their model_zoo helpers."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from model_zoo.lessons import lexicon
from model_zoo.lessons.onehot import cosine_matrix, one_hot
from model_zoo.lessons.projection import pca_2d, project_2d
from model_zoo.words import split_words
from tests.conftest import open_page as page
from tests.conftest import rendered, shown


def markdown(at) -> str:
    """The page's Markdown as a reader sees it: `**king**` is "king" (rendered, tags dropped)."""
    return "\n".join(rendered(m.value)[1] for m in at.markdown)


# -- model_zoo helpers ---------------------------------------------------------------------
def test_one_hot_vectors_are_orthogonal() -> None:
    words = ["dog", "cat", "car"]
    matrix = one_hot(words, words)
    np.testing.assert_array_equal(matrix, np.eye(3))
    np.testing.assert_array_equal(cosine_matrix(matrix), np.eye(3))


def test_split_words_handles_odd_text() -> None:
    assert split_words("Let’s stick to <b>it</b>! 🙂 42") == ["let's", "stick", "to", "b", "it", "b", "42"]
    assert split_words("银行 bank") == ["银", "行", "bank"]  # a Chinese character is a word, as BERT reads it
    assert split_words("🙂 ... !!") == []
    assert split_words("A bank-holiday, twenty-one snake_case -dash-") == [
        "a",
        "bank-holiday",
        "twenty-one",
        "snake",
        "case",
        "dash",
    ]


def test_shipped_corpus_and_word_classes() -> None:
    sentences = lexicon.corpus()
    assert len(sentences) > 200_000
    assert sum(map(len, sentences)) > 2_000_000
    assert sentences[0][:4] == ("in", "the", "beginning", "god")
    classes = lexicon.word_classes()
    assert classes["dog"] == classes["cat"] == "noun.animal"
    assert classes["run"] == "verb.motion" and len(set(classes.values())) == 45


def test_pca_is_deterministic_and_umap_is_seeded() -> None:
    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(30, 10)).astype(np.float32)
    np.testing.assert_array_equal(pca_2d(vectors), pca_2d(vectors.copy()))
    first = project_2d(vectors, "umap", seed=3)
    np.testing.assert_allclose(first, project_2d(vectors, "umap", seed=3), atol=1e-5)
    assert first.shape == (30, 2)
    with pytest.raises(ValueError, match="three words"):
        project_2d(vectors[:2])


def test_word2vec_training_reports_each_epoch() -> None:
    from model_zoo.lessons.word2vec import TrainSettings, class_agreement, train_word2vec

    reports = []
    sentences = lexicon.corpus()[:30_000]
    model = train_word2vec(
        sentences, TrainSettings(dim=20, epochs=2, min_count=3), watch="water", on_epoch=reports.append
    )
    assert [r.epoch for r in reports] == [1, 2] and len(reports[-1].neighbours) == 8
    assert model.dim == 20 and "water" in model
    for report in reports:  # true cosines of the vectors as they are after that epoch
        assert all(-1.0 <= s <= 1.0 + 1e-6 for _, s in report.neighbours)
    assert reports[-1].neighbours == model.most_similar("water", 8)
    classes = lexicon.word_classes()
    frequent = [w for w in model.kv.index_to_key[:500] if w in classes]
    score = class_agreement(model, classes, frequent)
    counts = Counter(classes[w] for w in frequent)
    chance = sum((n / len(frequent)) ** 2 for n in counts.values())  # a random neighbour's odds
    assert score > chance  # two epochs on 30k sentences already beat random vectors


# -- One-hot page ----------------------------------------------------------------------------
def test_onehot_default_shows_orthogonal_words_and_classes(tiny_zoo: Path) -> None:  # its guess reads GloVe
    at = page("pages/onehot.py")
    assert not at.exception
    assert at.metric[0].value == "11"
    assert "cos(dog, cat) = 0.00 and cos(dog, car) = 0.00" in markdown(at)
    assert "noun.animal: dog, cat, bird, queen" in markdown(at)
    at.toggle(key="quiz_reveal").set_value(True).run()  # the check's answer and the scale line: one size
    said = markdown(at) + " ".join(shown(c.value) for c in at.caption)
    assert (
        "30,000 numbers (120 KB as float32)" in said
        and "30,000: one dimension per word of the vocabulary, 120 KB" in said
    )


@pytest.mark.slow
def test_onehot_with_glove_shows_dog_near_cat() -> None:
    at = page("pages/onehot.py", glove="true")
    assert not at.exception
    assert "cos(dog, cat) = 0.92 and cos(dog, car) = 0.46" in markdown(at)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("text", "expected"),
    [("   ", "No words found"), ("🙂 ✨ !!", "No words found"), ("银行 🙂", None), ("42 1999 <b>x</b>", None)],
)
def test_onehot_odd_input(text: str, expected: str | None) -> None:
    at = page("pages/onehot.py", text=text, glove="true")
    assert not at.exception
    if expected:
        assert expected in shown(at.info[0].value)
    else:
        assert at.metric[0].value.isdigit()


def test_onehot_reads_sat_as_sit_and_says_so(tiny_zoo: Path) -> None:
    at = page("pages/onehot.py", text="The old fisherman sat on the river bank.")
    assert not at.exception
    said = markdown(at) + " ".join(shown(c.value) for c in at.caption)
    assert "noun.time" not in said  # Saturday's class, which "sat" was given
    assert "Read as their dictionary form" in said and "sat → sit" in said
    assert "No class for the:" in said


def test_onehot_ten_thousand_words_are_counted_and_capped(tiny_zoo: Path) -> None:
    at = page("pages/onehot.py", text=" ".join(f"w{i}" for i in range(10_000)))
    assert not at.exception
    assert at.metric[0].value == "10,000"
    assert "first 40 of 10000" in shown(at.caption[0].value)


# -- Word embeddings page ----------------------------------------------------------------------
@pytest.mark.slow
def test_embeddings_default_solves_king_analogy() -> None:
    at = page("pages/embeddings.py")
    assert not at.exception
    assert "man is to king as woman is to queen" in markdown(at)
    at.radio(key="predict_emb_bank").set_value("different").run()  # the sentences come once the learner guessed
    polysemy = [tbl.value for tbl in at.table]
    assert all(set(tbl.iloc[:, 1]) == {"1.000"} for tbl in polysemy[:2])  # bank, stick: one vector


@pytest.mark.slow
def test_embeddings_example_button_sets_the_analogy() -> None:
    at = page("pages/embeddings.py")
    at.button(key="ex_stockholm").click().run()
    assert not at.exception
    assert "cairo is to egypt" in markdown(at)
    at.button(key="ex_had").click().run()
    assert "was is to is" in markdown(at)


@pytest.mark.slow
def test_embeddings_missing_word_suggests_spellings() -> None:
    at = page("pages/embeddings.py", word="bankk", words="king qqqzzz")
    assert not at.exception
    infos = " ".join(shown(i.value) for i in at.info)
    assert "bankk" in infos and "Closest spellings: bank" in infos
    assert "qqqzzz" in infos


@pytest.mark.slow
def test_embeddings_markdown_typed_in_a_box_is_shown_as_text() -> None:
    # The boxes are bound to the URL: this is also what a shared link would show everyone.
    image, link = "![x](http://example.com/pixel.png)", "[click](http://example.com/)"
    at = page("pages/embeddings.py", word=image, a=link, words=f"king {link}")
    assert not at.exception
    messages = [rendered(i.value) for i in at.info] + [rendered(e.value) for e in at.error]
    assert any(image in text for _, text in messages) and any(link in text for _, text in messages)
    assert all("<img" not in html and "<a " not in html for html, _ in messages)
    assert any("no word it knows is spelled like it" in text for _, text in messages)  # not "Closest spellings: ."


@pytest.mark.slow
def test_embeddings_map_caps_a_huge_word_list() -> None:
    glove_words = "the of and to in for is on that by with he it at as from his said was".split()
    at = page("pages/embeddings.py", map=" ".join(glove_words * 1 + [f"{i}" for i in range(400)]))
    assert not at.exception
    assert any("first 200" in shown(w.value) for w in at.warning)


@pytest.mark.slow
def test_embeddings_unreachable_word2vec_falls_back_to_glove() -> None:
    at = page("pages/embeddings.py", model="word2vec-google-news-300")
    assert not at.exception
    warning = shown(at.warning[0].value)
    assert "glove-6b-50d" in warning and "prefetch word2vec-google-news-300" in warning
    assert "woman is to queen" in markdown(at)


@pytest.mark.slow
def test_embeddings_live_training_shows_progress_and_quality() -> None:
    at = page("pages/embeddings.py")
    at.slider(key="w2v_epochs").set_value(1)
    at.select_slider(key="w2v_dim").set_value(25)
    train = [b for b in at.button if b.label == "Train"][0]
    train.click().run(timeout=300)
    assert not at.exception
    assert any("trained by ContextLab" in shown(s.value) for s in at.success)
    assert "Measured quality" in markdown(at)
