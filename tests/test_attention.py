"""The attention lesson: q·k from the weights, Clark et al.'s head measures, bertviz offline and escaped."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import numpy as np
import pytest

import model_zoo
from components.attention_view import PATCHES, VENDOR, build_bertviz_html, script_json
from model_zoo.lessons.attention import METRICS, head_summary, query_key, sentence_summary
from tests.conftest import all_text, open_page, save_tiny_llama, title_of

ATTACK = "</script><img src=x onerror=alert(1)>"


@pytest.fixture(scope="module")
def tiny_llama(tmp_path_factory, tiny_gpt2) -> Path:
    return save_tiny_llama(tmp_path_factory.mktemp("tiny-llama"), tiny_gpt2)


# -- model_zoo ----------------------------------------------------------------------------------
def test_sentence_summary_matches_a_hand_computed_example() -> None:
    # One layer, one head, tokens [CLS] a b [SEP]; rows are where each token looks.
    a = np.array(
        [
            [1.0, 0.0, 0.0, 0.0],  # [CLS] looks at itself
            [0.5, 0.0, 0.0, 0.5],  # a: half [CLS], half [SEP]
            [0.0, 1.0, 0.0, 0.0],  # b: the previous token
            [0.25, 0.25, 0.25, 0.25],  # [SEP]: evenly
        ]
    )[None, None]
    special = np.array([True, False, False, True])
    m, uniform = sentence_summary(a, special)
    assert m["first"][0, 0] == pytest.approx((1 + 0.5 + 0 + 0.25) / 4)
    assert m["sep"][0, 0] == pytest.approx((0 + 0.5 + 0 + 0.25) / 4)
    assert m["self"][0, 0] == pytest.approx((1 + 0 + 0 + 0.25) / 4)
    assert m["prev"][0, 0] == pytest.approx((0.5 + 1 + 0.25) / 3)  # tokens 1..3 have a previous token
    assert m["next"][0, 0] == pytest.approx((0 + 0 + 0) / 3)  # tokens 0..2 have a next token
    assert m["entropy"][0, 0] == pytest.approx((0 + np.log(2) + 0 + np.log(4)) / 4)
    assert uniform == pytest.approx(np.log(4))
    _, causal_uniform = sentence_summary(a, special, causal=True)
    assert causal_uniform == pytest.approx(np.mean(np.log([1, 2, 3, 4])))


@pytest.mark.parametrize("fixture", ["tiny_bert", "tiny_gpt2", "tiny_llama"])
def test_query_key_from_the_weights_is_the_models_own_attention(fixture: str, request) -> None:
    model = model_zoo.load(request.getfixturevalue(fixture))
    text = "the man went to the bank and sat on the river bank"
    for layer in range(2):
        for head in range(4):
            qk = query_key(model, text, layer, head)
            n = len(qk.tokens)
            assert qk.queries.shape == (n, 8) and qk.keys.shape == (n, 8)
            assert qk.scaling == pytest.approx(8**-0.5)
            np.testing.assert_allclose(qk.weights.sum(-1), 1, atol=1e-5)
            assert qk.max_difference < 1e-5
            other = query_key(model, text, layer, (head + 1) % 4)  # the check can tell heads apart
            assert np.abs(qk.weights - other.model_weights).max() > 1e-3
            if qk.causal:
                assert np.all(qk.weights[np.triu_indices(n, 1)] == 0)
    assert qk.causal == (fixture != "tiny_bert")


def test_grouped_keys_are_shared_by_query_heads(tiny_llama) -> None:
    model = model_zoo.load(tiny_llama)
    heads = [query_key(model, "the bank of the river", 0, h) for h in range(4)]
    np.testing.assert_array_equal(heads[0].keys, heads[1].keys)  # heads 0 and 1 read key head 0
    assert not np.array_equal(heads[1].keys, heads[2].keys)
    assert not np.array_equal(heads[0].queries, heads[1].queries)


@pytest.mark.parametrize("fixture", ["tiny_bert", "tiny_gpt2"])
def test_head_summary_averages_sentences_by_tokens(fixture: str, request) -> None:
    """Sentences run as one padded batch measure the same as one at a time."""
    model = model_zoo.load(request.getfixturevalue(fixture))
    texts = ["the man went to the bank", "we sat on the river bank and it was the water"]
    both = head_summary(model, texts)
    one, two = head_summary(model, texts[:1]), head_summary(model, texts[1:])
    assert both.shape == (2, 4) and both.sentences == 2 and both.tokens == one.tokens + two.tokens
    for metric in METRICS:
        expected = (one.metrics[metric] * one.tokens + two.metrics[metric] * two.tokens) / both.tokens
        np.testing.assert_allclose(both.metrics[metric], expected, rtol=1e-6)
        if metric != "entropy":
            assert (both.metrics[metric] >= 0).all() and (both.metrics[metric] <= 1).all()
    assert len(both.rows()) == 8 and set(both.rows()[0]) == {"layer", "head", *METRICS}
    lines = both.to_csv().splitlines()  # what the page's CSV download holds
    assert len(lines) == 9 and lines[0].split(",") == ["layer", "head", *METRICS]
    assert lines[-1].startswith("1,3,")


def test_head_summary_of_a_sentence_pair(tiny_bert) -> None:
    model = model_zoo.load(tiny_bert)
    seen: list[float] = []
    pair = head_summary(model, [("the man went to the bank", "he sat on the river bank")], on_progress=seen.append)
    assert pair.metrics["sep"].mean() > 0  # two [SEP]s in a pair
    assert seen == [1.0]


def test_empty_text_is_refused(tiny_bert) -> None:
    model = model_zoo.load(tiny_bert)
    with pytest.raises(model_zoo.EmptyInput):
        query_key(model, "  ", 0, 0)
    with pytest.raises(model_zoo.EmptyInput):
        head_summary(model, [""])


@pytest.mark.slow
def test_real_minilm_has_positional_heads(offline_models) -> None:
    """Clark et al. found heads that attend to the previous token; all-MiniLM-L6-v2 has one too."""
    from model_zoo.lessons import lexicon

    summary = head_summary(offline_models("minilm-l6"), lexicon.examples()[:40])
    assert summary.metrics["prev"].max() > 0.5
    assert summary.metrics["first"].mean() > summary.metrics["self"].mean()


# -- bertviz, offline and escaped ------------------------------------------------------------------
def _page(view: str, tokens: list[str], b_start: int | None = None) -> str:
    rng = np.random.default_rng(0)
    n = len(tokens)
    att = rng.random((2, 3, n, n))
    return build_bertviz_html(view, tokens, att / att.sum(-1, keepdims=True), b_start, title="<b>x</b>")  # type: ignore[arg-type]


def _params(page: str) -> dict:
    match = re.search(r"const params = (\{.*?\}); //", page)
    assert match, "the view's parameters are missing"
    return json.loads(match.group(1))


@pytest.mark.parametrize("view", ["head", "model"])
def test_bertviz_page_fetches_nothing_and_escapes_tokens(view: str) -> None:
    page = _page(view, ["[CLS]", ATTACK, "&amp;", "[SEP]"])
    assert not re.search(r"""(src|href)\s*=\s*["']?https?:""", page)  # no script or link to fetch
    body = page.split("<body>")[1]  # bertviz's markup and code (the libraries sit in <head>)
    assert "cdnjs" not in page and "require.config(" not in body
    assert ATTACK not in page and "<img" not in body
    assert page.count("</script>") == 5  # d3, jQuery, require.js, the module names, bertviz's code
    params = _params(page)
    tokens = params["attention"][0]["left_text"]
    assert tokens[1] == ATTACK and tokens[2] == "&amp;"  # the browser gets the text back as written
    assert f'id="{params["root_div_id"]}"' in page
    assert "<title>&lt;b&gt;x&lt;/b&gt;</title>" in page
    for _, new in PATCHES[view]:
        assert new in page


def test_bertviz_page_is_the_same_for_the_same_input() -> None:
    assert _page("head", ["[CLS]", "bank", "[SEP]"]) == _page("head", ["[CLS]", "bank", "[SEP]"])
    assert (
        _params(_page("head", ["[CLS]", "bank", "[SEP]"]))["root_div_id"]
        != _params(_page("head", ["[CLS]", "river", "[SEP]"]))["root_div_id"]
    )


def test_sentence_pair_views_offer_the_pair_filters() -> None:
    params = _params(_page("head", ["[CLS]", "a", "[SEP]", "b", "[SEP]"], b_start=3))
    assert [d["name"] for d in params["attention"]][:2] == ["All", "Sentence A -> Sentence A"]
    assert params["attention"][1]["left_text"] == ["[CLS]", "a", "[SEP]"]


def test_script_json_cannot_close_a_script() -> None:
    text = script_json({"t": "</script><!-- & \u2028"})
    assert "<" not in text and ">" not in text and "&" not in text and "\u2028" not in text
    assert json.loads(text) == {"t": "</script><!-- & \u2028"}


def test_vendored_javascript_is_what_npm_served() -> None:
    sums = dict(line.split()[::-1] for line in (VENDOR / "SHA256SUMS").read_text().splitlines())
    assert set(sums) == {"d3.min.js", "jquery.min.js", "require.js"}
    for name, digest in sums.items():
        assert hashlib.sha256((VENDOR / name).read_bytes()).hexdigest() == digest


# -- the page ---------------------------------------------------------------------------------------
def chart_titles(at) -> list[str]:
    return [title_of(json.loads(chart.proto.spec)) for chart in at.get("plotly_chart")]


def views(at) -> list[dict]:
    """The parameters of each bertviz view on the page (head view first)."""
    return [_params(frame.proto.srcdoc) for frame in at.get("iframe")]


def open_tab(at, label: str):  # noqa: ANN001, ANN201
    """Click the tab `label` (the page's tabs are lazy: only the open one runs)."""
    at.session_state["view"] = label
    return at.run(timeout=300)


@pytest.mark.slow
def test_page_default_shows_every_view() -> None:
    at = open_page("pages/attention.py")
    assert not at.exception
    assert [tab.label for tab in at.tabs] == ["Head view", "Model view", "Query · key", "Head summary"]
    (head,) = views(at)  # only the open tab runs
    tokens = head["attention"][0]["left_text"]
    assert tokens[:3] == ["[CLS]", "the", "animal"] and tokens[-1] == "[SEP]"
    assert [b.label for b in at.get("download_button")] == ["Download this view (HTML, works offline)"]
    (model,) = views(open_tab(at, "Model view"))
    assert len(model["attention"][0]["attn"]) == 6 and len(model["attention"][0]["attn"][0]) == 12  # MiniLM
    text = all_text(open_tab(at, "Query · key"))
    assert "the attention is what the model itself reports, to the last bit" in text  # not "by at most 0"
    assert "Layer 3, head 1: every query (rows) against every key (columns)" in chart_titles(at)
    titles = chart_titles(open_tab(at, "Head summary"))
    assert "Attention to the previous token" in titles and "Attention to [SEP]" in titles
    assert at.radio(key="summary_source").value == "yours"
    assert "Entropy 0 means" in all_text(at)


@pytest.mark.slow
def test_page_changed_input_sentence_pair_and_examples() -> None:
    at = open_page("pages/attention.py", text="The man went to the store.", text_b="He bought a gallon of milk.")
    assert not at.exception
    assert at.text_input(key="text_b").value == "He bought a gallon of milk."
    head = views(at)[0]
    assert [d["name"] for d in head["attention"]][1] == "Sentence A -> Sentence A"
    assert "milk" in head["attention"][0]["left_text"]
    open_tab(at, "Query · key")
    at.slider(key="layer").set_value(2).run()
    at.slider(key="head").set_value(4).run()
    assert "Layer 2, head 4: every query (rows) against every key (columns)" in chart_titles(at)
    open_tab(at, "Head summary")
    at.radio(key="summary_source").set_value("examples").run(timeout=300)
    assert not at.exception
    assert "Measured on 300 sentence(s)" in all_text(at)


@pytest.mark.slow
def test_page_causal_model_explains_the_mask() -> None:
    at = open_page("pages/attention.py", model="smollm2-135m")
    assert not at.exception
    assert "may only look at itself and the tokens before it" in all_text(open_tab(at, "Query · key"))
    text = all_text(open_tab(at, "Head summary"))
    assert "has no [SEP] and cannot look at the next token" in text
    titles = chart_titles(at)
    assert "Attention to [SEP]" not in titles and "Attention to the previous token" in titles


@pytest.mark.slow
@pytest.mark.parametrize(
    "text, expected",
    [
        ("   ", "Type a sentence to see where its tokens look."),
        ("bank " * 600, "The views on this page draw the first 48"),
    ],
)
def test_page_bad_input_gets_a_message(text: str, expected: str) -> None:
    at = open_page("pages/attention.py", text=text)
    assert not at.exception
    assert expected in all_text(at)


@pytest.mark.slow
@pytest.mark.parametrize("text", [ATTACK, "I 🏦 the 银行 — naïve café", "\u200b\u0301"])
def test_page_odd_text_draws_without_error(text: str) -> None:
    at = open_page("pages/attention.py", text=text)
    assert not at.exception
    assert "Head view" in [tab.label for tab in at.tabs]
    assert views(at)[0]["attention"][0]["left_text"][0] == "[CLS]"


@pytest.mark.slow
def test_page_in_chinese() -> None:
    at = open_page("pages/attention.py", lang="zh")
    assert not at.exception
    assert at.title[0].value == "注意力"
    assert "注意力头统计" in [tab.label for tab in at.tabs]


@pytest.mark.slow
def test_page_second_visitor_gets_the_cached_summary() -> None:
    """A summary computed for one session (with its progress bar) is reused by the next one."""
    first = open_tab(open_page("pages/attention.py", text="The bank by the river."), "Head summary")
    second = open_tab(open_page("pages/attention.py", text="The bank by the river."), "Head summary")
    assert not first.exception and not second.exception
    assert chart_titles(first) == chart_titles(second)


def test_score_bars_show_negative_scores() -> None:
    """q·k scores can be negative: the axis must reach them (it started at 0 before)."""
    from components.charts import build_score_bars

    fig = build_score_bars([("a", 2.0), ("b", -1.5)], percent=False)
    low, high = fig.layout.xaxis.range
    assert low <= -1.5 and high >= 2.0


def test_small_probabilities_get_ticks_that_differ() -> None:
    """An axis that ends below 5% wrote its ticks as whole percents: "0% 0% 0% 1% 1%" (Inside's knock-out)."""
    from components.charts import build_score_bars

    assert build_score_bars([("a", 0.012), ("b", 0.004)]).layout.xaxis.tickformat == ".1%"
    assert build_score_bars([("a", 0.6), ("b", 0.004)]).layout.xaxis.tickformat == ".0%"


def test_a_tiny_probability_keeps_its_bar_and_its_number() -> None:
    """GPT's factor for "tide" after "The" is about 4.6e-9: plotly drew no label on a bar that short, so the bar
    is drawn a ten-thousandth of the longest (invisible) and its label and hover say its own value."""
    from components.charts import build_score_bars

    fig = build_score_bars([("1 · The", 2.6e-4), ("2 · tide", 4.6e-9), ("3 · out", 0.25), ("4 · none", 0.0)])
    bars = fig.data[0]
    drawn = dict(zip(bars.y, bars.x, strict=True))
    labels = dict(zip(bars.y, bars.text, strict=True))
    assert drawn["2 · tide"] == pytest.approx(0.25e-4) and labels["2 · tide"] == "4.6e-07%"
    assert drawn["1 · The"] == 2.6e-4 and drawn["3 · out"] == 0.25 and drawn["4 · none"] == 0.0
    assert "%{text}" in bars.hovertemplate  # the hover reads the label, not the drawn length


def test_bertviz_speaks_the_learners_language_as_text() -> None:
    """The Chinese UI's view says 层 / 注意力头 where bertviz writes Layer / Heads; a label is text, never markup."""
    rng = np.random.default_rng(0)
    att = rng.random((2, 3, 4, 4))
    att /= att.sum(-1, keepdims=True)
    labels = {"layer": "层：", "heads": "注意力头", "layers": "层</script>"}
    model = build_bertviz_html("model", ["a", "b", "c", "d"], att, labels=labels)
    assert '.text("Heads")' not in model and '.text("Layers")' not in model
    assert '.text("注意力头")' in model and '</script>")' not in model and '.text("层\\u003c/script\\u003e")' in model
    head = build_bertviz_html("head", ["a", "b", "c", "d"], att, labels=labels)
    assert "层： <select" in head and "Layer: <select" not in head
    assert "Layer: <select" in build_bertviz_html("head", ["a", "b", "c", "d"], att)  # English: bertviz's own
