"""The GPT vs BERT lesson with the offline pack's smollm2-135m (real weights: slow tier)."""

from __future__ import annotations

import base64
import json
import re

import numpy as np
import pytest

import model_zoo
from model_zoo.lessons.generation import Strategy, generate_steps, left_only_vs_whole
from tests.conftest import all_text, chart, open_page, shown

pytestmark = pytest.mark.slow


def heatmap(at, key: str) -> np.ndarray:  # noqa: ANN001
    """A heatmap's values as drawn (plotly packs arrays in binary: read them back with plotly)."""
    found = next(c for c in at.get("plotly_chart") if c.proto.id.endswith(f"-{key}"))
    z = json.loads(found.proto.spec)["data"][0]["z"]
    if isinstance(z, dict):  # {"dtype": "f4", "bdata": base64, "shape": "rows, cols"}
        shape = tuple(int(n) for n in str(z["shape"]).split(","))
        return np.frombuffer(base64.b64decode(z["bdata"]), dtype=np.dtype(z["dtype"])).reshape(shape).astype(float)
    return np.asarray(z, dtype=float)


def test_default_page_shows_every_section_from_the_model() -> None:
    at = open_page("pages/gpt.py")
    assert not at.exception
    text = all_text(at)
    assert "smollm2-135m" in text
    causal = heatmap(at, "causal_mask")
    assert (causal[np.triu_indices_from(causal, k=1)] == 0).all() and causal[0, 0] == pytest.approx(1.0)
    full = heatmap(at, "full_mask")
    assert (full[np.triu_indices_from(full, k=1)] > 0).all()  # BERT: every token sees every other
    assert "heads give more than half of their attention to the first token" in text
    sizes = next(d.value for d in at.dataframe if "Decoder layers" in d.value.columns)
    gpt1 = sizes[sizes["Model"] == "GPT-1 (2018)"].iloc[0]
    assert gpt1["Decoder layers"] == 12 and gpt1["Parameters"] == "117M"
    assert sizes["Model"].iloc[-1] == "smollm2-135m"
    # the sizes the quiz asks about read as the table writes them (it said 1,558M and 174,604M to a quiz's 1.56B, 175B)
    quiz = next(r for r in at.radio if "GPT-3 175B" in r.options or "175B" in r.options)
    assert set(quiz.options) <= set(sizes["Parameters"])
    assert int(sizes.set_index("Model").loc["GPT-2 XL (2019)", "Counted exactly"].replace(",", "")) > 1.5e9


def test_writing_streams_the_models_own_greedy_tokens() -> None:
    at = open_page("pages/gpt.py", max_tokens="6")
    at.button(key="write").click().run(timeout=120)
    assert not at.exception
    prompt = at.text_area(key="prompt").value
    expected = list(generate_steps(model_zoo.load("smollm2-135m"), prompt, Strategy(max_new_tokens=6)))
    assert at.code[0].value == expected[-1].text
    steps = at.dataframe[0].value
    assert list(steps["Token chosen"]) == [s.token.replace(" ", "␣").replace("\n", "↵") for s in expected]


def test_writing_chinese_shows_pieces_of_characters_as_bytes_and_says_what_they_are() -> None:
    """SmolLM2 writes Chinese a byte or two a token: "Token chosen" spelled such a piece "�" (the candidates
    beside it, ‹e4 bd›), and the text ended in "�" where max tokens stopped inside a character."""
    at = open_page("pages/gpt.py", max_tokens="7", prompt="我们今天去")
    at.button(key="write").click().run(timeout=120)
    assert not at.exception
    steps = at.dataframe[0].value
    chosen = " ".join(steps["Token chosen"])
    assert "‹" in chosen and "\ufffd" not in chosen + at.code[0].value  # the model's own pieces, as their bytes
    assert at.code[0].value.startswith("我们今天去")
    assert any("is a piece of a character" in shown(c.value) for c in at.caption)


def test_sampling_with_the_same_seed_writes_the_same_text() -> None:
    texts = []
    for _ in range(2):
        at = open_page("pages/gpt.py", max_tokens="8", strategy="top_k", gen_seed="7")
        at.button(key="write").click().run(timeout=120)
        assert not at.exception
        texts.append(at.code[0].value)
    assert texts[0] == texts[1]
    at = open_page("pages/gpt.py", max_tokens="8", strategy="top_k", gen_seed="8")
    at.button(key="write").click().run(timeout=120)
    assert at.code[0].value != texts[0]


def test_a_prompt_button_and_an_empty_prompt() -> None:
    at = open_page("pages/gpt.py")
    at.button(key="prompt_qa").click().run()
    prompt = at.text_area(key="prompt").value  # the lecture's format: a passage, then "Q:" and "A:"
    assert prompt.startswith("In meteorology, precipitation")
    assert prompt.endswith("Q: What causes precipitation to fall?\nA:")
    at.text_area(key="prompt").input("   ").run()
    at.button(key="write").click().run(timeout=60)
    assert not at.exception
    assert "The prompt is empty" in shown(at.info[0].value)


def test_left_only_against_both_sides_names_what_each_reads() -> None:
    at = open_page("pages/gpt.py")
    rows = at.dataframe[0].value  # no text written yet: the first table is the blank's
    sentence = at.text_input(key="blank_text").value
    expected = left_only_vs_whole(model_zoo.load("smollm2-135m"), sentence, 8, ())
    best_left = min(expected, key=lambda r: r.left_rank).candidate
    assert f"From the left alone, smollm2-135m's first guess is “{best_left}”" in all_text(at)
    assert list(rows["Rank, whole sentence"]) == sorted(rows["Rank, whole sentence"])
    assert rows["Rank, left only"].isna().any()  # the masked LM's words, scored too: no rank from the left
    assert any("smollm2-135m-mlm proposed that word from both sides" in shown(c.value) for c in at.caption)  # said
    at.text_input(key="blank_text").input("no blank in this one").run()
    assert not at.exception and "___" in shown(at.info[0].value)


def test_a_paragraph_in_the_blank_box_is_cut_to_a_sentence_and_said_so() -> None:
    """A blank's candidates are each read as a whole sentence: a link's paragraph is cut to the box's
    300 characters, with one sentence saying so, and the blank still answered."""
    long = "The man went to the ___ to deposit his money. " + "He walked home slowly after that. " * 30
    at = open_page("pages/gpt.py", blank_text=long)
    assert not at.exception
    assert any("so the page reads its first 300" in shown(i.value) for i in at.info)
    rows = at.dataframe[0].value
    assert len(rows) >= 3 and rows["Rank, left only"].isna().any()  # the masked LM's words too


def test_the_product_of_factors_is_the_sentence_probability() -> None:
    at = open_page("pages/gpt.py", product_text="The tide went out.")
    assert not at.exception
    bars = chart(at, "factors")["data"][0]
    assert [label.split(" · ", 1)[1].strip() for label in reversed(bars["y"])] == ["The", "tide", "went", "out", "."]
    assert all(0 < p <= 1 for p in bars["x"])
    # every factor's label reads its size, the smallest too: "0.021%", never a "0.0%" that hides the weakest
    assert "0.0%" not in bars["text"] and all(float(x.rstrip("%")) > 0 for x in bars["text"])
    formula = next(el.value for el in at.latex if r"\prod" in el.value)  # their product, as 7.9 × 10⁻³⁴ (not 7.9e-34)
    mantissa, exponent = re.search(r"\\approx ([\d.]+) \\times 10\^\{(-?\d+)\}", formula).groups()
    assert float(mantissa) * 10.0 ** int(exponent) == pytest.approx(float(np.prod(bars["x"])), rel=0.1)


def test_the_page_speaks_chinese() -> None:
    at = open_page("pages/gpt.py", lang="zh")
    assert not at.exception
    assert "GPT 就是单独拿出来的 Transformer 解码器" in all_text(at) and "把注意力停在第一个词元上的头" in all_text(at)


def test_odd_and_overlong_prompts_get_text_and_a_sentence() -> None:
    at = open_page("pages/gpt.py", max_tokens="3")
    at.text_area(key="prompt").input("<script>alert(1)</script> café 🙂 \u202eevil\x00 [link](http://x.y)").run()
    at.button(key="write").click().run(timeout=120)
    assert not at.exception
    assert at.code[0].value.startswith("<script>alert(1)</script> café 🙂")  # shown as text, in a code block
    at.text_area(key="prompt").input(" ".join(str(i) for i in range(500))).run()  # 1,889 characters, 1,400 tokens
    at.button(key="write").click().run(timeout=120)
    assert not at.exception
    assert "its beginning was left out" in shown(at.warning[0].value)
    assert at.code[0].value.rstrip().split()[0] != "0"  # the start is gone, the end is kept
