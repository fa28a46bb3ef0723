"""The Using BERT lesson on the offline pack (real weights: slow tier): heads on smollm2-135m-mlm, the tagger
and the cross-lingual head on minilm-l6, the reader smollm2-135m-qa."""

from __future__ import annotations

import html
import json
import re

import pytest

from model_zoo.registry import get_card
from model_zoo.trained import training_of
from tests.conftest import all_text, keeps_bio_rule, open_page, rendered, shown

pytestmark = pytest.mark.slow


def bars(at, key: str) -> dict[str, float]:  # noqa: ANN001
    found = next(c for c in at.get("plotly_chart") if c.proto.id.endswith(f"-{key}"))
    data = json.loads(found.proto.spec)["data"][0]
    return dict(zip(data["y"], data["x"]))


def test_sentence_heads_beat_the_majority_and_classify_the_learners_sentence() -> None:
    at = open_page("pages/using_bert.py")
    assert not at.exception
    table = at.dataframe[0].value
    assert list(table["Sentence vector"]) == [
        "first token ([CLS] in BERT)",
        "mean of the tokens",
    ]  # SmolLM has no [CLS]
    assert (table["Held-out accuracy"] >= 0.85).all() and (table["Majority class"] == 0.5).all()  # 0.87, 0.87
    assert all(0 < int(read.split(" / ")[0]) <= int(read.split(" / ")[1]) for read in table["Layer read"])
    assert "five development folds" in all_text(at)
    first, mean = (f"{a:.3f}" for a in table["Held-out accuracy"])  # the caption names the rows' own order
    said = (
        "both read " + first
        if first == mean
        else (
            f"first token ([CLS] in BERT) {first}, mean of the tokens {mean}"
            if first > mean
            else f"mean of the tokens {mean}, first token ([CLS] in BERT) {first}"
        )
    )
    assert said in all_text(at) and "often carries more" not in all_text(at)
    at.text_input(key="sentence_sentiment").input("The food was awful and the waiter was rude.").run()
    assert bars(at, "sentence_bars")["negative"] > 0.5
    assert "The head says negative" in all_text(at)


def test_spam_in_the_url_and_its_own_sentence() -> None:
    at = open_page("pages/using_bert.py", task="spam")
    assert not at.exception
    assert bars(at, "sentence_bars")["spam"] > 0.5  # the example: a prize for a card number


def test_the_order_of_a_pair_matters() -> None:
    at = open_page("pages/using_bert.py")
    before = bars(at, "pair_bars")
    assert max(before, key=before.get) == "entailment"  # a woman walking her dog: someone is outside with an animal
    at.button(key="swap").click().run()
    assert not at.exception
    assert at.text_input(key="premise").value == "Someone is outside with an animal."
    after = bars(at, "pair_bars")
    assert max(after, key=after.get) == "neutral"  # read backwards, the general sentence does not give the scene
    text = all_text(at)
    assert "has no segment embeddings" in text and "of the 20 held-out pairs where the swap" in text


def test_fine_tuning_a_copy_is_compared_with_the_frozen_head() -> None:
    at = open_page("pages/using_bert.py")
    at.button(key="finetune").click().run(timeout=300)
    assert not at.exception
    table = next(d.value for d in at.dataframe if "How" in d.value.columns)
    assert list(table["How"]) == [
        "Frozen vectors + a linear layer on the first token ([CLS] in BERT)",
        "The whole model fine-tuned (3 epochs)",
    ]
    # well above chance (0.50): a causal pass of the copy once left smollm2-135m-mlm's fine-tuned [CLS] at chance
    # (measured after the fix: 0.88, the frozen head 0.90)
    assert 0.75 <= table["Held-out accuracy"].iloc[1] <= 1.0


def test_empty_sentence_gets_a_sentence() -> None:
    at = open_page("pages/using_bert.py")
    at.text_input(key="sentence_sentiment").input("  ").run()
    assert not at.exception and "empty" in at.info[0].value


def test_the_page_speaks_chinese() -> None:
    at = open_page("pages/using_bert.py", lang="zh")
    assert not at.exception and "BERT 先在普通文本上训练一次" in all_text(at)
    # a class is named in Chinese, the data's label beside it: on the bars, in the verdict and the guesses
    assert at.radio(key="predict_using_sentence").options == ["负面（negative）", "正面（positive）"]
    shown = bars(at, "sentence_bars")  # the example sentence's (a widget changed here would be read in English)
    assert set(shown) == {"负面（negative）", "正面（positive）"}
    assert f"分类头的判断是 {max(shown, key=shown.__getitem__)}，" in all_text(at)


def test_the_tagger_trains_on_the_probing_data_and_tags_the_sentence() -> None:
    at = open_page("pages/using_bert.py")
    at.button(key="train_tagger").click().run(timeout=300)
    assert not at.exception
    text = " ".join(m.value for m in at.markdown)
    assert "**Barack** `B-PERSON`" in text and "**Paris** `B-GPE`" in text
    assert "a weak tagger" in all_text(at)
    # the tags shown keep the B-/I- rule (an I- tag continues an entity of its type) ...
    line = next(m.value for m in at.markdown if "`B-PERSON`" in m.value)
    shown = [tag or "O" for _, tag, _ in re.findall(r"\*\*(.+?)\*\* `([BI]-[A-Z_]+)`|(\S+)", line)]
    assert keeps_bio_rule(shown), shown
    # ... and where that changed a word's own top tag, the page names the word and both tags (measured: the
    # head reads "United Nations" as I-GPE I-ORG word by word)
    changed = next(rendered(c.value)[1] for c in at.caption if "word by word the head said" in c.value)
    assert "Nations I-ORG → I-GPE" in changed
    scored = r"test sentences \(\d+ named entities\) it finds the entities \(span and type both right\) with F1 0\.\d\d"
    assert re.search(scored, all_text(at))


# -- extractive question answering: smollm2-135m-qa, trained by ContextLab (assets/models/smollm2-135m-qa) ----
PRECIPITATION = (
    "In meteorology, precipitation is any product of the condensation of atmospheric water vapor that falls "
    "under gravity."
)


# Of the four, measured: all four as the lecture answers them since 2026-11-30 ("gravity" by the question's answer
# type, where the scores alone prefer "under gravity"; tasks.pick_answer).
MIN_SEED_RIGHT = 4


def curves(at, key: str = "qa_curves") -> dict:  # noqa: ANN001
    found = next(c for c in at.get("plotly_chart") if c.proto.id.endswith(f"-{key}"))
    return json.loads(found.proto.spec)


def verdict(at) -> str:  # noqa: ANN001
    """The answer box (success) or the no-answer box (warning) of the QA section."""
    boxes = [b.value for b in [*at.success, *at.warning] if "Answer:" in b.value or "No answer" in b.value]
    assert len(boxes) == 1, boxes
    return boxes[0]


def test_the_lectures_precipitation_passage_is_read_with_both_curves() -> None:
    at = open_page("pages/using_bert.py")
    assert not at.exception
    assert at.text_area(key="passage").value.startswith(PRECIPITATION)
    assert "was fine-tuned by ContextLab" in all_text(at)  # a model trained here says so, with each stage
    went_on = training_of(get_card("smollm2-135m-qa")).went_on
    assert went_on is not None and f"on all {went_on.written_questions} written training questions" in all_text(at)
    causes = f"and {went_on.cause_questions} questions of cause made by rule"  # said where some were mixed in
    assert (causes in all_text(at)) == (went_on.cause_questions > 0)
    spec = curves(at)
    start, end = spec["data"][0], spec["data"][1]
    assert (start["name"], end["name"]) == ("start", "end")
    ticks = [tick.replace("\u200b", "") for tick in start["x"]]  # a repeated token made distinct as a category
    # the decoder-made reader reads <|endoftext|> where BERT reads [CLS] and [SEP], and the page says so
    assert html.unescape(ticks[0]) == html.unescape(ticks[-1]) == "<|endoftext|>"  # shown as text, escaped
    assert "gravity" in [tick.strip() for tick in ticks] and len(start["y"]) == len(ticks)
    assert "where BERT reads its special tokens" in all_text(at)
    assert sum(start["y"]) == pytest.approx(1.0, abs=1e-4) and sum(end["y"]) == pytest.approx(1.0, abs=1e-4)


def test_the_seed_questions_are_answered_from_the_passage() -> None:
    """The lecture's three questions and the fourth written for ContextLab, asked as a learner does."""
    at = open_page("pages/using_bert.py")
    gold = {
        "What causes precipitation to fall?": "gravity",
        "What is another main form of precipitation besides drizzle, rain, snow, sleet and hail?": "graupel",
        "Where do water droplets collide with ice crystals to form precipitation?": "within a cloud",
        "What are short, intense periods of rain in scattered locations called?": "showers",
    }
    right = 0
    for question, answer in gold.items():
        at.pills(key="qa_try").set_value(question).run()
        assert not at.exception
        assert at.text_input(key="question").value == question  # the pill fills the question box
        shown = verdict(at)
        exact = False
        if shown.startswith("Answer:"):
            span = shown.split("**")[1]
            assert span.replace("\\", "") in at.text_area(key="passage").value  # a span of the passage
            right += answer in span.replace("\\", "")
            exact = span.replace("\\", "").lower().removeprefix("the ") == answer
        # a miss is said under the answer, with the reader that answers such questions
        miss = [c.value for c in at.caption if "misses this question" in c.value]
        assert bool(miss) != exact, (question, shown)
        assert not miss or f"the passage's answer is “{answer}”" in miss[0] and "bert-base-squad2" in miss[0]
    assert right >= MIN_SEED_RIGHT


def test_a_question_the_passage_cannot_answer_gets_no_answer() -> None:
    at = open_page("pages/using_bert.py")
    at.pills(key="qa_try").set_value("Who won the football World Cup in 1998?").run()
    assert not at.exception
    assert verdict(at).startswith("No answer in this passage")
    spec = curves(at)
    assert not spec["layout"].get("shapes")  # no span shaded


def test_the_question_is_kept_in_the_url_and_odd_input_stays_text() -> None:
    question = "What are short, intense periods of rain in scattered locations called?"
    at = open_page("pages/using_bert.py", qa_passage="p11", question=question)
    assert at.text_input(key="question").value == question
    assert "showers" in verdict(at)
    at.text_input(key="question").input("<script>alert(1)</script> [x](http://evil) **?**").run()
    assert not at.exception and verdict(at)
    at.text_input(key="question").input("   ").run()
    assert not at.exception and any("empty" in i.value for i in at.info)


def test_another_passage_and_the_learners_own() -> None:
    at = open_page("pages/using_bert.py")
    at.selectbox(key="qa_passage").set_value("p01").run()
    assert not at.exception and at.text_area(key="passage").value.startswith("Honeybees")
    at.selectbox(key="qa_passage").set_value("h01").run()  # the passages written for testing only are offered too
    assert not at.exception and at.text_area(key="passage").value.startswith("A lighthouse")
    own = "Marie Curie was born in Warsaw in 1867. She moved to Paris to study physics."
    at.text_area(key="passage").input(own).run()
    at.text_input(key="question").input("Where was Marie Curie born?").run()
    assert not at.exception
    shown = verdict(at)
    assert shown.startswith("No answer") or shown.split("**")[1].replace("\\", "") in own


def test_the_frozen_head_is_compared_with_the_fine_tuned_reader() -> None:
    at = open_page("pages/using_bert.py")
    at.button(key="train_qa_head").click().run(timeout=300)
    assert not at.exception
    assert curves(at, "qa_frozen_curves")["data"][0]["name"] == "start"
    assert "the frozen-vector head gives the exact answer" in all_text(at)


def test_multilingual_section_offline_trains_on_english_and_reads_chinese() -> None:
    """Offline: which model to prefetch, and the English-only model's answer on Chinese (near chance)."""
    at = open_page("pages/using_bert.py")
    assert not at.exception
    missing = next(i.value for i in at.info if "bert-base-multilingual-cased" in i.value)
    assert "python -m model_zoo prefetch bert-base-multilingual-cased" in missing and "104" in all_text(at)
    at.button(key="ml_train").click().run(timeout=300)
    assert not at.exception
    metrics = {m.label: m.value for m in at.metric}
    english = int(metrics["English held-out accuracy (60 sentences)"].rstrip("%"))
    chinese = int(metrics["Chinese accuracy (30 sentences, none trained on)"].rstrip("%"))
    assert english >= 70 and chinese <= 65  # English learned; Chinese near the coin flip of an English-only model
    table = next(d.value for d in at.dataframe if "Chinese sentence" in d.value.columns)
    assert len(table) == 30 and set(table["Head's answer"]) <= {"positive", "negative"}
    at.text_input(key="ml_own").input("这家餐厅太棒了。").run()
    assert not at.exception and set(bars(at, "ml_own_bars")) == {"positive", "negative"}


def test_multilingual_section_uses_multilingual_bert_once_prefetched(tiny_bert, fake_hub) -> None:
    from model_zoo import get_card

    fake_hub(get_card("bert-base-multilingual-cased").hub_repo or "", tiny_bert)
    at = open_page("pages/using_bert.py")
    assert not at.exception
    assert not any("bert-base-multilingual-cased" in i.value for i in at.info)
    at.button(key="ml_train").click().run(timeout=300)
    assert not at.exception
    assert shown(at.button(key="ml_train").label) == "Train on English, test on Chinese (bert-base-multilingual-cased)"
    assert any("none trained on" in m.label for m in at.metric)
    assert "bert-base-multilingual-cased's mean-pooled last layer" in all_text(at)
