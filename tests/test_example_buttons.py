"""Every example button of every lesson, clicked on the offline pack (real weights: slow tier), against the
outcome its text names: the word it promises first, the weights a preset names, the pair that should score
higher. Where the offline model does not give that outcome, the page says so in one line, and the test reads
that line instead (measured when written; a model that starts to give the outcome fails the test, so the
list stays true). One page run per lesson, its buttons clicked in turn."""

from __future__ import annotations

import html
import json
import re

import pandas as pd
import pytest

from model_zoo.lessons.cloze import NEXT_WORDS_NAMED
from tests.conftest import all_text, chart, open_page, shown, title_of

pytestmark = pytest.mark.slow

ENGLISH_ONLY = "learned from English text only"
MISS = "does not show the lesson's point here"


def ranked(spec: dict) -> list[str]:
    """The words of a score-bar chart, best first (drawn highest on top: last in the spec), as shown."""
    return [html.unescape(str(word)).strip() for word in spec["data"][0]["y"][::-1]]


def captions(at, needle: str) -> list[str]:  # noqa: ANN001
    return [shown(c.value) for c in at.caption if needle in shown(c.value)]


def click(at, key: str, timeout: int = 180):  # noqa: ANN001, ANN201
    at.button(key=key).click().run(timeout=timeout)
    assert not at.exception, key
    return at


# -- Masked LM (smollm2-135m-mlm) -----------------------------------------------------------------------
def test_masked_lm_examples_fill_the_words_their_sources_name() -> None:
    at = open_page("pages/masked_lm.py")

    def firsts(key: str) -> list[str]:
        click(at, key)
        charts = {int(m[1]): c for c in at.get("plotly_chart") if (m := re.search(r"-mask(\d+)$", c.proto.id))}
        return [ranked(json.loads(charts[i].proto.spec))[0].lower() for i in sorted(charts)]

    assert firsts("ex0") == ["bank"]  # "The man went to the [MASK] to deposit his money."
    assert not captions(at, MISS)
    # "Let's stick to [MASK].": the word that opens what one sticks to, as the ELMo lesson names it
    (stick,) = firsts("ex1")
    assert stick in NEXT_WORDS_NAMED["Let's stick to"], stick
    assert firsts("ex2") == ["bank"]  # "... lying dead on the river [MASK]." (the lecture's bank)
    assert not captions(at, MISS)
    assert firsts("ex3") == ["money", "bank"]  # "It is safest to deposit your [MASK] in the [MASK]."
    # "巴黎是法国的首[MASK]。": an English-only model does not say 都 (measured: 人); the page says so twice
    (capital,) = firsts("ex4")
    assert capital != "都"
    (script,) = captions(at, ENGLISH_ONLY)
    assert script.startswith("smollm2-135m-mlm learned from English text only") and "bert-base-chinese" in script
    (miss,) = captions(at, MISS)
    assert f"its first guess is “{capital}”" in miss and "“都”" in miss
    assert "python -m model_zoo prefetch bert-base-chinese" in miss


# -- ELMo (elmo-mini) ------------------------------------------------------------------------------------
def test_elmo_next_word_examples_put_the_lessons_words_first() -> None:
    at = open_page("pages/elmo.py")
    click(at, "lm_ex_Let's stick to")
    assert ranked(chart(at, "forward"))[0] in NEXT_WORDS_NAMED["Let's stick to"]  # measured: "the"
    assert not captions(at, MISS)
    # "After “hang” a good model expects “out”": elmo-mini puts it first (measured: 41.5%), so no line
    click(at, "lm_ex_After work we like to hang")
    assert ranked(chart(at, "forward"))[0] == "out"
    assert not captions(at, MISS)
    click(at, "lm_ex_The man went to the bank to")  # no word named: the model's own guesses, and no line
    assert title_of(chart(at, "forward")) == "Next word after “to the bank to” (forward LM)"
    assert not captions(at, MISS)


def test_elmo_presets_set_the_weights_they_name() -> None:
    at = open_page("pages/elmo.py")

    def weights(key: str) -> tuple[float, float, float]:
        click(at, key)
        (line,) = captions(at, "s = softmax(w₀, w₁, w₂)")
        found = re.search(r"token ([\d.]+), LSTM-1 ([\d.]+), LSTM-2 ([\d.]+)", line)
        assert found, line
        return float(found[1]), float(found[2]), float(found[3])

    assert weights("preset_equal") == (0.33, 0.33, 0.33)  # "All three equally"
    token, lstm1, lstm2 = weights("preset_lstm1")  # "Lean on LSTM-1"
    assert lstm1 > 0.5 and lstm1 > token and lstm1 > lstm2
    assert weights("preset_top") == (0.0, 0.0, 1.0)  # "Top layer only"
    assert weights("preset_token") == (1.0, 0.0, 0.0)  # "Token layer only"


def test_elmo_pairs_same_sense_closer_than_different_senses() -> None:
    """ "Try a pair with the same sense and a pair with different senses: the LSTM layers should give the first
    pair the higher similarity", and GloVe 1.0 whatever the sentences."""
    at = open_page("pages/elmo.py")

    def cosines(key: str) -> dict[str, float]:
        click(at, key)
        bars = chart(at, "cosines")["data"][0]  # upright bars: layers along x
        return dict(zip(bars["x"], bars["y"]))

    stick = cosines("pair0")  # stick: the plan / a stick of wood
    assert at.selectbox(key="pair_word").value == "stick"
    assert stick["GloVe (one vector per word)"] == 1.0 and stick["LSTM-2"] < 1.0 and stick["LSTM-1"] < 1.0
    (line,) = captions(at, "calls ELMo “上下文无关”")
    assert f"a cosine as low as {min(stick['LSTM-1'], stick['LSTM-2']):.2f}" in line
    same = cosines("pair1")  # bank of the river / bank of the river
    different = cosines("pair2")  # bank of the river / the bank to deposit money
    assert at.selectbox(key="pair_word").value == "bank"
    for layer in ("LSTM-1", "LSTM-2"):
        assert same[layer] > different[layer], layer


# -- GPT (smollm2-135m; smollm2-135m-mlm for the blank) ----------------------------------------------------
def test_gpt_prompts_write_on_and_the_page_owns_up_to_what_a_small_model_misses() -> None:
    at = open_page("pages/gpt.py", max_tokens="20")

    def written(key: str) -> str:
        click(at, key)
        prompt = at.text_area(key="prompt").value
        click(at, "write", timeout=300)
        text = at.code[0].value
        assert text.startswith(prompt), key
        return text[len(prompt) :]

    assert "unicorn" in written("prompt_unicorn")  # the story goes on about them
    assert "bus" in written("prompt_tldr").lower()  # after "TL;DR:", the passage's bus routes retold
    small = "smollm2-135m is small (GPT-3 has over a thousand times its parameters): it often fails"
    # Known misses, measured: no answer after "A:" ("The answer to this question is:", then the end token),
    # and "cheese =" gives "cheche", not "fromage". The caption under the text says so.
    assert "gravity" not in written("prompt_qa")
    assert captions(at, small)
    assert "fromage" not in written("prompt_translate")
    assert captions(at, small) and "answering questions" in captions(at, small)[0]


def test_gpt_blanks_bank_needs_the_words_after_it() -> None:
    at = open_page("pages/gpt.py")
    for key, whole_first in (("blank_The man went", "bank"), ("blank_She sat on t", "edge")):
        click(at, key)
        finding = next(shown(m.value) for m in at.markdown if "From the left alone" in m.value)
        found = re.search(r"first guess is “(.+?)”.*answers “(.+?)”", finding)
        assert found, finding
        left, masked = found.groups()
        changed = re.search(r"best of these candidates is “(.+?)”", finding)
        whole = changed.group(1) if changed else left  # else "still the best ...: did not change its choice"
        assert changed or "did not change its choice" in finding, finding
        table = next(d.value for d in at.dataframe if "Candidate" in d.value.columns)
        bank = table[table["Candidate"] == "bank"].iloc[0]
        assert left != "bank" and pd.isna(bank["Rank, left only"]), key  # not from the left: the masked LM's
        assert masked == "bank", key  # reading both sides
        assert whole == whole_first, key
    # measured: the deposit sentence's whole sentence picks "bank" (left: "store"); the river sentence's left and
    # whole sentence both "edge", which fits; only the masked LM says "bank" there


# -- Attention (minilm-l6) ---------------------------------------------------------------------------------
def head_view(at, part: int = 0) -> dict:  # noqa: ANN001
    """The head view's attention data, as bertviz draws it (the default tab): all of it (part 0), or one of
    a pair's filters (1: within sentence A, ...)."""
    frame = at.get("iframe")[0].proto.srcdoc
    found = re.search(r"const params = (\{.*?\}); //", frame)
    assert found, "the head view's parameters are missing"
    return json.loads(found[1])["attention"][part]


def test_attention_examples_draw_their_sentences() -> None:
    at = open_page("pages/attention.py")
    click(at, "ex0")
    view = head_view(at)
    tokens = view["left_text"]
    i, animal = tokens.index("it"), tokens.index("animal")
    # the quiz's answer line: "the head view shows which ones look at “animal”": one head's most of all
    rows = [head[i] for layer in view["attn"] for head in layer]
    assert any(max(range(len(row)), key=row.__getitem__) == animal for row in rows)
    click(at, "ex1")
    assert head_view(at)["left_text"][1:-1] == "the man went to the bank to deposit his money .".split()
    click(at, "ex2")
    assert "nurse" in head_view(at)["left_text"] and "she" in head_view(at)["left_text"]
    click(at, "ex3")  # a pair: [CLS] A [SEP] B [SEP], A and B each drawn with their own filters
    view = head_view(at)
    assert view["left_text"].count("[SEP]") == 2 and view["left_text"][-3:-1] == ["milk", "."]
    assert head_view(at, 1)["name"] == "Sentence A -> Sentence A"


def test_attention_chinese_example_says_the_model_read_english_only() -> None:
    """ "我把钱存进了银行。" on minilm-l6: 6 of its 9 characters are [UNK] (measured). As on the Masked LM and BERT
    inputs pages, one line says that the model learned English only and names the models that read Chinese."""
    at = open_page("pages/attention.py")
    click(at, "ex4")
    assert head_view(at)["left_text"].count("[UNK]") >= 3
    (line,) = captions(at, ENGLISH_ONLY)
    assert line.startswith("minilm-l6 learned from English text only") and "bert-base-chinese" in line


# -- the Transformer (minilm-l6) -----------------------------------------------------------------------------
def test_transformer_examples_reach_the_word_each_looks_back_to() -> None:
    """Each button names the word whose attention is drawn; the one-step link found live reaches back to its
    subject (the page's own example: "are" to "keys"; measured: "it" to "animal", "was" to "book")."""
    at = open_page("pages/transformer.py")
    for key, word, other, distance in (
        ("tf_ex0", "are", "keys", 13),
        ("tf_ex1", "it", "animal", 8),
        ("tf_ex2", "was", "book", 11),
    ):
        click(at, key)
        note = next(shown(m.value) for m in at.markdown if m.value.startswith("**One step:**"))
        assert f"of the attention of “{word}” to “{other}”, {distance} tokens away" in note, note


# -- Word embeddings (glove-6b-50d) ------------------------------------------------------------------------
def test_analogy_examples_give_the_lessons_answers() -> None:
    at = open_page("pages/embeddings.py")
    for key, (a, b, c, d) in (
        ("ex_man", ("man", "king", "woman", "queen")),
        ("ex_stockholm", ("stockholm", "sweden", "cairo", "egypt")),
        ("ex_had", ("had", "has", "was", "is")),
    ):
        click(at, key)
        answer = next(shown(m.value) for m in at.markdown if " is to " in m.value and "cosine" in m.value)
        assert answer.startswith(f"{a} is to {b} as {c} is to {d} (cosine"), answer


# -- Word senses (elmo-mini, minilm-l6) ---------------------------------------------------------------------
def test_senses_blood_bank_is_voted_on_and_the_chinese_corner_names_its_model() -> None:
    at = open_page("pages/senses.py")
    click(at, "blood_bank")
    assert at.text_input(key="mine").value == "The hospital has its own blood bank."
    votes = at.dataframe[0].value  # "see which sense its nearest uses vote for, layer by layer"
    assert list(votes["Model"]) == ["elmo-mini", "minilm-l6"]
    legend = captions(at, "Columns are layers")[0]
    for _, row in votes.iterrows():
        cells = [v for v in row.iloc[1:] if v != "—"]  # — under the layers a model does not have
        assert cells and all(re.fullmatch(r"\d+", v) and f"{v}." in legend for v in cells), row.to_dict()
    # 长 / 苹果 need a model that reads Chinese: offline the corner says which, and how to fetch it
    (missing,) = [shown(i.value) for i in at.info if "No model that reads Chinese" in i.value]
    assert "bert-base-chinese" in missing and "python -m model_zoo prefetch bert-base-chinese" in missing


# -- Using BERT (smollm2-135m-mlm heads, minilm-l6 tagger, smollm2-135m-qa reader) ----------------------------
def answer_box(at) -> str:  # noqa: ANN001
    boxes = [shown(b.value) for b in [*at.success, *at.warning] if "Answer:" in b.value or "No answer" in b.value]
    assert len(boxes) == 1, boxes
    return boxes[0]


def test_using_bert_examples_sentences_pair_tagger_and_questions() -> None:
    at = open_page("pages/using_bert.py")
    assert not at.exception

    def verdict(key: str) -> tuple[str, float]:
        bars = chart(at, key)["data"][0]
        return max(zip(bars["y"], bars["x"]), key=lambda pair: pair[1])

    # the sentiment example: cold soup, kind staff, "we will come back"
    assert verdict("sentence_bars")[0] == "positive" and "The head says positive" in all_text(at)
    assert verdict("pair_bars")[0] == "entailment"  # a woman walking her dog: someone is outside with an animal
    click(at, "swap")  # "swapping A and B ... turns an entailment into a neutral pair"
    assert verdict("pair_bars")[0] == "neutral"
    click(at, "swap")
    assert verdict("pair_bars")[0] == "entailment"
    # Ask one of these: the lecture's precipitation passage, all answered as the lecture answers them. Its scores
    # alone prefer "under gravity" for "What causes precipitation to fall?": the page gives "gravity", the best
    # span a What question's answer type allows, and says so. "within a cloud" is answered by the scores, where
    # the lecture's rule of thumb would say none (its best end, "drops", before its best start).
    asked = {
        "What causes precipitation to fall?": ("Answer: gravity,", None),
        "What is another main form of precipitation besides drizzle, rain, snow, sleet and hail?": (
            "Answer: graupel,",
            None,
        ),
        "Where do water droplets collide with ice crystals to form precipitation?": ("Answer: within a cloud,", None),
        "What are short, intense periods of rain in scattered locations called?": ("Answer: showers,", None),
        "Who won the football World Cup in 1998?": (
            "No answer in this passage",
            None,
        ),  # "has no answer in any passage"
    }
    assert list(at.pills(key="qa_try").options) == list(asked)
    for question, (shown_answer, missed) in asked.items():
        at.pills(key="qa_try").set_value(question).run()
        assert not at.exception and at.text_input(key="question").value == question
        assert answer_box(at).startswith(shown_answer), (question, answer_box(at))
        miss = captions(at, "misses this question")
        assert len(miss) == (missed is not None), question
        assert not miss or f"the passage's answer is “{missed}”" in miss[0] and "bert-base-squad2" in miss[0]
        (scores,) = captions(at, "Start + end score of the best span")  # the two scores that decided
        span_score, null_score = (float(x) for x in re.findall(r": (-?\d+\.\d)", scores))
        assert ("No answer" in answer_box(at)) == (null_score >= span_score), (question, scores)
        passed = captions(at, "By its scores alone the best span was")
        assert [("“under gravity”" in c) for c in passed] == ([True] if question.startswith("What causes") else [])
        lecture = captions(at, "the lecture's sign of a question with perhaps no answer")
        assert bool(lecture) == question.startswith("Where do water droplets"), question
    # another passage from the picker: its first question in the box, answered
    at.selectbox(key="qa_passage").set_value("p01").run()
    assert at.text_input(key="question").value == "How many queens does a colony have?"
    assert answer_box(at).startswith("Answer: a single queen,") and not captions(at, "misses this question")
    at.pills(key="qa_try").set_value("Who won the football World Cup in 1998?").run()
    assert answer_box(at).startswith("No answer in this passage")
    # the spam example: a prize for a card number
    at.radio(key="task").set_value("spam").run()
    assert not at.exception and verdict("sentence_bars")[0] == "spam"
    # the tagging example: "B-PERSON starts a name, I-PERSON continues it"; the rest of it goes wrong (measured:
    # "the United Nations" as a GPE, 2009 B-DATE) and the caption calls the tagger weak
    click(at, "train_tagger", timeout=600)
    tagged = next(m.value for m in at.markdown if "`B-" in m.value)
    tags = dict(re.findall(r"\*\*(.+?)\*\* `([BI]-[A-Z]+)`", tagged))
    assert (tags["Barack"], tags["Obama"], tags["Paris"]) == ("B-PERSON", "I-PERSON", "B-GPE")
    assert captions(at, "a weak tagger")
