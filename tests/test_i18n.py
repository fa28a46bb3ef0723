"""One translation mechanism: both languages complete, every key the code asks for present."""

from __future__ import annotations

import re
import string

import pytest

import model_zoo
from components.i18n import LANGS, strings, translate
from components.road import HOME, PLAYGROUND, ROAD
from tests.conftest import ROOT

CODE = [p for d in ("app.py", "pages", "components") for p in sorted((ROOT / d).rglob("*.py")) or [ROOT / d]]


def placeholders(text: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(text) if name}


def test_every_language_has_the_same_keys_and_placeholders() -> None:
    english = strings("en")
    for lang in LANGS:
        other = strings(lang)
        assert set(other) == set(english), f"{lang}: {set(other) ^ set(english)}"
        for key, text in english.items():
            # A translation may leave a field out (English's "{what}"), never invent one.
            assert placeholders(other[key]) <= placeholders(text), (lang, key)


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
        "mlm.recipe_default",
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
    for lesson in (HOME, PLAYGROUND):
        assert f"lesson.{lesson.key}.title" in english
    for card in model_zoo.list_models():
        assert f"kind.{card.kind}" in english
        for cap in card.capabilities:
            assert f"cap.{cap}" in english
    for status in ("installed", "cached", "needs_download", "coming", "missing"):
        assert f"status.{status}" in english and f"reason.{status}" in english


@pytest.mark.parametrize("error_class", model_zoo.ModelZooError.__subclasses__())
def test_every_model_zoo_error_has_a_translated_message(error_class: type) -> None:
    key = f"error.{error_class.__name__}"
    for lang in LANGS:
        assert key in strings(lang), (lang, key)


def test_error_messages_fill_in_their_fields() -> None:
    err = model_zoo.WordNotInVocabulary("bankk", "glove-6b-50d", ["bank", "banks"])
    params = {k: ", ".join(v) if isinstance(v, list) else v for k, v in vars(err).items()}
    assert (
        translate("error.WordNotInVocabulary", "zh", **params)
        == "“bankk”不在 glove-6b-50d 的词表中。拼写最接近的词：bank, banks。"
    )
