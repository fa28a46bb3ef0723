"""Share links (issue 33): a page opened from a link shows the view the link names, and a value it does
not know gets one sentence, never a silent default. Fast tier: the tiny zoo (tests/conftest.py)."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import all_text, open_page, shown


def infos(at) -> str:  # noqa: ANN001
    """The info boxes as a reader sees them."""
    return " ".join(shown(str(x.value)) for x in at.info)


def test_gpt_link_may_name_the_strategy_by_the_word_on_its_button(tiny_zoo: Path) -> None:
    at = open_page("pages/gpt.py", strategy="nucleus")
    assert not at.exception and at.radio(key="strategy").value == "top_p"
    assert "does not know" not in infos(at)


def test_gpt_link_with_an_unknown_strategy_says_what_opened_instead(tiny_zoo: Path) -> None:
    at = open_page("pages/gpt.py", strategy="beam")
    assert not at.exception and at.radio(key="strategy").value == "greedy"
    said = infos(at)
    assert "strategy=beam" in said and "greedy" in said and "top_p" in said
    assert at.query_params["strategy"] == "greedy"  # the link is mended: the sentence does not come back


def test_a_links_value_is_shown_as_text(tiny_zoo: Path) -> None:
    at = open_page("pages/gpt.py", strategy="**bold** [x](http://example.org)")
    said = infos(at)
    assert "**bold** [x](http" in said  # shown as typed: no emphasis, no link


def test_transformer_reopens_on_the_links_sentence_and_word(tiny_zoo: Path) -> None:
    at = open_page("pages/transformer.py", tf_text="the man went to the bank .", tf_word="bank")
    assert not at.exception and at.text_input(key="tf_text").value == "the man went to the bank ."
    picked = next(s for s in at.selectbox if s.key.startswith("tf_pick_"))
    assert picked.value is not None and picked.format_func(picked.value).endswith(": bank")
    assert at.query_params["tf_word"] == "bank" and at.query_params["tf_text"] == "the man went to the bank ."
    picked.set_value(1).run()
    assert at.query_params["tf_word"] != "bank"  # the link follows the learner's pick


def test_transformer_link_word_absent_from_its_sentence_is_said(tiny_zoo: Path) -> None:
    at = open_page("pages/transformer.py", tf_text="the man went to the bank .", tf_word="river")
    assert not at.exception
    assert "“river” is not a token of this sentence" in all_text(at)


def test_probing_link_with_an_unknown_task_drops_it_and_says_so(tiny_zoo: Path) -> None:
    at = open_page("pages/probing.py", tasks="pos,bogus")
    assert not at.exception and at.multiselect(key="tasks").value == ["pos"]
    assert "bogus" in infos(at)
