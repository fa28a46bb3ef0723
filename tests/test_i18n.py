"""One translation mechanism: both languages complete, every key the code asks for present."""

from __future__ import annotations

import re
import string

import numpy as np
import pytest

import model_zoo
from components.i18n import LANGS, strings, translate
from components.road import CLASSROOM, HOME, PLAYGROUND, ROAD
from tests.conftest import ROOT, rendered

CODE = [p for d in ("app.py", "pages", "components") for p in sorted((ROOT / d).rglob("*.py")) or [ROOT / d]]


def placeholders(text: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(text) if name}


def test_every_language_has_the_same_keys_and_placeholders() -> None:
    english = strings("en")
    for lang in LANGS:
        other = {key: text for key, text in strings(lang).items() if not key.startswith("card.")}
        assert set(other) == set(english), f"{lang}: {set(other) ^ set(english)}"
        for key, text in english.items():
            # A translation may leave a field out (English's "{what}"), never invent one.
            assert placeholders(other[key]) <= placeholders(text), (lang, key)


def test_the_models_table_speaks_chinese(monkeypatch: pytest.MonkeyPatch) -> None:
    """The home page's models table in Chinese: where a card's size, source or licence says something in English (how
    ContextLab made the weights, "3M words"), zh.toml's card.<name>.<field> says it in Chinese (it read English);
    a source that is only a name and a package stays as it is. Each such key names a card of the registry."""
    from components.models_panel import build_model_table

    chinese = strings("zh")
    cards = {card.name: card for card in model_zoo.list_models()}
    for key in (k for k in chinese if k.startswith("card.")):
        _, name, field = key.split(".")
        assert name in cards and field in ("source", "licence", "size"), key
    prose = re.compile(r"\b(?:by|on|trained|made|fine-tuned|words|architecture)\b")
    states = {card.name: model_zoo.Availability("installed", "") for card in cards.values()}
    monkeypatch.setattr("components.i18n.current_lang", lambda: "zh")
    table = build_model_table(list(cards.values()), states)
    for column in ("规模", "来源", "许可证"):
        english = [cell for cell in table[column] if prose.search(cell)]
        assert english == [], english
    assert not any(", " in cell for cell in table["能力"])  # a Chinese list is joined with 、


def test_chinese_is_actually_translated() -> None:
    english, chinese = strings("en"), strings("zh")
    same = [k for k in english if english[k] == chinese[k] and re.search(r"[a-z]{4,}", english[k])]
    # Proper names (ELMo, GPT, word2vec / GloVe) and English demo text for English models stay.
    assert set(same) <= {
        "road.static.name",
        "road.elmo.name",
        "road.bert.name",
        "road.gpt.name",
        "lesson.elmo.title",
        "lesson.gpt.title",
        "playground.default_text",
        "onehot.default_text",
        "emb.map_default",
        "emb.axes_default",  # GloVe's English words, as on the word map
        "mlm.recipe_default",
        "using.example_sentiment",
        "using.example_spam",
        "using.qa_unanswerable",
    } | {f"road.{stop.key}.example" for stop in ROAD}


def test_every_literal_key_in_the_code_exists() -> None:
    english = strings("en")
    used = set()
    for path in CODE:
        # A whole key: dotted, not ending in "." (keys built from data are checked below).
        used |= set(re.findall(r"""\bt\(\s*["']([a-z_]+(?:\.[a-z_]+)+)["']""", path.read_text()))
    assert used, "the scan found no t() calls"
    assert sorted(used - set(english)) == []


def test_keys_built_from_data_exist() -> None:
    english = strings("en")
    for stop in ROAD:
        for part in ("name", "idea", "limit") + (("example",) if stop.family else ()):
            assert f"road.{stop.key}.{part}" in english
        for lesson in stop.lessons:
            assert f"lesson.{lesson.key}.title" in english
    for lesson in (HOME, PLAYGROUND, CLASSROOM):
        assert f"lesson.{lesson.key}.title" in english
    for card in model_zoo.list_models():
        assert f"kind.{card.kind}" in english
        for cap in card.capabilities:
            assert f"cap.{cap}" in english
    for status in ("installed", "cached", "needs_download", "coming", "missing"):
        assert f"status.{status}" in english and f"reason.{status}" in english


def every_error() -> list[type]:
    """Every ModelZooError class, at any depth, the class store's included (imported here: collected at
    import time, a subclass defined in a module no test imported yet would be missed)."""
    import serving.classroom.errors  # noqa: F401

    found, todo = [], list(model_zoo.ModelZooError.__subclasses__())
    while todo:
        cls = todo.pop()
        found.append(cls)
        todo.extend(cls.__subclasses__())
    return sorted(set(found), key=lambda c: c.__name__)


@pytest.mark.parametrize("error_class", every_error())
def test_every_model_zoo_error_has_a_translated_message(error_class: type) -> None:
    key = f"error.{error_class.__name__}"
    for lang in LANGS:
        assert key in strings(lang), (lang, key)


def test_error_messages_fill_in_their_fields() -> None:
    err = model_zoo.WordNotInVocabulary("bankk", "glove-6b-50d", ["bank", "banks"])
    params = {k: ", ".join(v) if isinstance(v, list) else v for k, v in vars(err).items()}
    shown = rendered(translate("error.WordNotInVocabulary", "zh", **params))[1]
    assert shown == "“bankk”不在 glove-6b-50d 的词表中。拼写最接近的词：bank, banks。"


# -- What a learner types is shown as text -----------------------------------------------------
# Strings that Markdown (as Streamlit renders it) would turn into an outside image, a link,
# emphasis, HTML, LaTeX or a Streamlit directive.
MARKDOWN_ATTACKS = [
    "![x](http://example.com/pixel.png)",
    "[click me](http://example.com/)",
    "<img src=http://example.com/p.png>",
    "**bold** _it_ `code` ~~gone~~",
    "# heading",
    "$x^2$ :red[red] :material/home:",
    "line one\n\n- a list item",
    "back\\slash \\*",
    "http://example.com www.example.com bob@example.com",  # GitHub's autolinks
]


@pytest.mark.parametrize("typed", MARKDOWN_ATTACKS)
def test_a_learners_text_in_a_message_is_shown_as_written(typed: str) -> None:
    # emb.missing is the GloVe missing-word box that fetched an outside image before.
    message = translate("emb.missing", "en", words=typed, n=1)
    html, text = rendered(message)
    for tag in ("<img", "<a ", "<em>", "<strong>", "<code>", "<del>", "<h1>", "<li>"):
        assert tag not in html, (typed, html)
    assert typed.replace("\n", " ") in text


def test_values_in_a_code_span_are_not_escaped_but_cannot_close_it() -> None:
    # notice.needs_download puts the prefetch command in a `code span`, where escapes would show.
    message = translate("notice.needs_download", "en", name="bert", fallback="", command="pip `x` a_b")
    html, _ = rendered(message)
    assert "<code>pip 'x' a_b</code>" in html


def test_a_translated_string_filled_into_another_stays_markdown() -> None:
    from components.i18n import Markdown

    inner = Markdown(translate("notice.fallback", "en", fallback="glove-6b-50d"))
    outer = translate("notice.needs_download", "en", name="bert", fallback=inner, command="x")
    assert inner in outer and "\\\\" not in outer  # glove\-6b\-50d once, not glove\\\-6b


def test_chart_titles_and_labels_show_html_as_text() -> None:
    from components.charts import build_score_bars, build_word_map

    link = '<a href="http://example.com/">see</a>'
    bars = build_score_bars([(link, 0.5), ("bank", 0.25)], title=f"Neighbours of {link}")
    drawn = bars.layout.title.text
    assert "<a" not in drawn and "&lt;a href" in drawn.replace("<br>", " ")  # its lines wrapped only with <br>
    assert all("<a" not in label for label in bars.data[0].y)
    words = build_word_map([link, "bank"], np.zeros((2, 2)), ["<b>noun</b>", "noun"], title="map")
    assert all("<" not in str(trace.text) and "<b>" not in trace.name for trace in words.data)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_bold_renders_as_bold(lang: str) -> None:
    """CommonMark closes ** only where it is flanked right: "**答案：**11" would show its asterisks."""
    from tests.conftest import rendered

    literal = [key for key, text in strings(lang).items() if "**" in rendered(text)[1]]
    assert literal == []


@pytest.mark.parametrize(
    ("lang", "zero", "small"), [("en", "exactly 0", "at most 3e-08"), ("zh", "恰好是 0", "最多是 3e-08")]
)
def test_gpts_largest_weight_on_a_later_token_reads_plainly_when_it_is_zero(
    monkeypatch: pytest.MonkeyPatch, lang: str, zero: str, small: str
) -> None:
    """The GPT lesson's answer on "deposit" says the weights on later tokens are "exactly 0", not "at most 0e+00"."""
    from components import gpt_view, i18n

    monkeypatch.setattr(i18n, "current_lang", lambda: lang)
    assert gpt_view.later_weights(0.0) == zero
    assert gpt_view.later_weights(3e-8) == small
    why = i18n.translate("quiz.gpt_blank.why", lang, plain=True, model="m", left="l", bert="b", masked="x", zero=zero)
    assert zero in why and "0e+00" not in why


def test_an_error_repeats_a_long_paste_cut_short() -> None:
    """A 3,000-character paste in the Word box: the sentence quotes its start, not all of it."""
    from components.i18n import QUOTED
    from components.notices import error_message

    pasted = "the river bank " * 200
    err = model_zoo.WordNotInVocabulary(pasted, "glove-6b-50d", [])
    said = rendered(error_message(err))[1]
    assert f"“{pasted[:QUOTED]}…” is not in the vocabulary of glove-6b-50d" in said and len(said) < QUOTED + 120
