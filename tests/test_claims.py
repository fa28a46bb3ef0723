"""What a lesson says a model does is what it computes (issue 33), in the fast tier on the tiny zoo."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import all_text, open_page


def test_a_stacked_lstm_pipelines_its_layers(tiny_zoo: Path) -> None:
    """The Transformer's LSTM count: T + L - 1 steps one after another (layer 2 reads token t while layer 1
    reads token t + 1), not L x T."""
    at = open_page("pages/transformer.py", tf_text="the man went to the bank .")
    assert not at.exception
    tokens = len(next(s for s in at.selectbox if s.key.startswith("tf_pick_")).options)
    lstm = next(m for m in at.metric if "LSTM" in m.label)
    assert lstm.value == str(tokens + 1)


def test_chinese_on_an_english_only_model_gets_one_line_naming_the_models_that_read_it(tiny_zoo: Path) -> None:
    at = open_page("pages/masked_lm.py", text="巴黎是法国的首[MASK]。")
    assert not at.exception
    said = all_text(at)
    assert "learned from English text only" in said and "bert-base-chinese" in said
    at = open_page("pages/masked_lm.py", text="Paris is the capital of [MASK].")
    assert "learned from English text only" not in all_text(at)


ZH = "我把钱存进了银行"
ENGLISH_ONLY = "learned from English text only"
NONE_READS = "no model of the zoo that reads Chinese does this"
READERS = "Models of the zoo that read Chinese: bert-base-chinese, bert-base-multilingual-cased"


def first_per_page_fast(cases: list[tuple]) -> list:
    """The first case of each page in the fast tier (every page covered there); the others in the slow tier."""
    seen: set[str] = set()
    out = []
    for case in cases:
        out.append(case if case[0] not in seen else pytest.param(*case, marks=pytest.mark.slow))
        seen.add(case[0])
    return out


@pytest.mark.parametrize(
    ("page", "query", "said"),
    first_per_page_fast(
        [
            ("pages/elmo.py", {"lm_text": ZH}, f"elmo-mini {ENGLISH_ONLY}"),
            ("pages/elmo.py", {"lm_text": ZH}, f"{NONE_READS} (ELMo: next-word prediction)"),
            ("pages/elmo.py", {"sentence": ZH}, f"{NONE_READS} (ELMo: contextual vectors per layer)"),
            ("pages/elmo.py", {"a": ZH, "b": "我去了银行"}, f"{NONE_READS} (ELMo: contextual vectors per layer)"),
            ("pages/transformer.py", {"tf_text": ZH}, f"minilm-l6 {ENGLISH_ONLY}"),
            ("pages/transformer.py", {"tf_text": ZH}, READERS),
            ("pages/playground.py", {"text": ZH}, READERS),
            ("pages/playground.py", {"model": "glove-6b-50d", "text": ZH}, f"{NONE_READS} (word vectors, neighbours"),
            ("pages/gpt.py", {"prompt": ZH}, f"smollm2-135m {ENGLISH_ONLY}"),
            ("pages/gpt.py", {"prompt": ZH}, f"{NONE_READS} (GPT: next-word prediction)"),
            ("pages/gpt.py", {"mask_text": ZH}, f"smollm2-135m, minilm-l6 {ENGLISH_ONLY}"),
            ("pages/gpt.py", {"blank_text": "我把钱存进了___。"}, f"smollm2-135m, smollm2-135m-mlm {ENGLISH_ONLY}"),
            ("pages/gpt.py", {"product_text": ZH}, f"{NONE_READS} (GPT: next-word prediction)"),
            ("pages/onehot.py", {"text": ZH, "glove": "true"}, f"glove-6b-50d {ENGLISH_ONLY}"),
            ("pages/onehot.py", {"text": ZH, "glove": "true"}, f"{NONE_READS} (word vectors, neighbours"),
            ("pages/senses.py", {"mine": "我把钱存进了bank"}, f"elmo-mini, minilm-l6 {ENGLISH_ONLY}"),
            ("pages/senses.py", {"mine": ZH}, READERS),
            ("pages/using_bert.py", {"sentence_sentiment": ZH}, READERS),
            ("pages/using_bert.py", {"ner_text": ZH}, READERS),
            ("pages/using_bert.py", {"premise": ZH}, READERS),
            ("pages/using_bert.py", {"question": "钱存在哪里？"}, f"{NONE_READS} (answer span in a passage)"),
        ]
    ),
)
def test_chinese_meeting_an_english_only_model_gets_one_line_on_every_page(
    tiny_zoo: Path, page: str, query: dict[str, str], said: str
) -> None:
    """Chinese in any input that an English-only model reads: one line saying so, naming the models of the zoo
    that read Chinese and do that section's job, or saying that none does (ELMo, GPT, GloVe, a reader)."""
    at = open_page(page, **query)
    assert not at.exception
    lines = [line for line in all_text(at).splitlines() if ENGLISH_ONLY in line]
    assert len(lines) == 1, lines
    assert said in lines[0]


@pytest.mark.parametrize(
    ("page", "query"),
    [
        ("pages/elmo.py", {}),
        ("pages/transformer.py", {}),
        ("pages/playground.py", {}),
        ("pages/gpt.py", {}),
        ("pages/onehot.py", {"glove": "true"}),
        ("pages/senses.py", {"mine": "I went to the bank."}),
        ("pages/using_bert.py", {}),
    ],
)
@pytest.mark.slow  # the fast tier opens every page on its English default already (tests/test_pages_fast.py)
def test_english_text_gets_no_line_about_chinese(tiny_zoo: Path, page: str, query: dict[str, str]) -> None:
    at = open_page(page, **query)
    assert not at.exception
    assert ENGLISH_ONLY not in all_text(at)


def test_bert_inputs_say_why_chinese_falls_apart(tiny_zoo: Path) -> None:
    at = open_page("pages/bert_inputs.py", a="我把钱存进了银行")
    assert not at.exception
    assert "learned from English text only" in all_text(at)


def test_probing_questions_name_tasks_and_layers_as_the_charts_do(tiny_zoo: Path) -> None:
    at = open_page("pages/probing.py")
    at.toggle(key="quiz_reveal").set_value(True).run()
    assert not at.exception
    high = at.radio(key="quiz_probe_high")
    assert list(high.options)[:3] == ["Part of speech", "Named entities", "Dependency relation"]
    pos = at.radio(key="quiz_probe_pos")
    assert list(pos.options)[-1] == "6 (1.00)"  # the chart's normalised depth
    said = all_text(at)
    assert "in normalised depth (the chart's diamonds); the lowest is" in said


def test_one_hot_glove_line_names_the_closest_and_farthest_pair_of_the_chart(tiny_zoo: Path) -> None:
    import base64
    import json

    import numpy as np

    at = open_page("pages/onehot.py", glove="true")
    assert not at.exception
    chart = next(c for c in at.get("plotly_chart") if c.proto.id.endswith("similarity"))
    trace = json.loads(chart.proto.spec)["data"][0]
    words = trace["x"]
    z = np.frombuffer(base64.b64decode(trace["z"]["bdata"]), trace["z"]["dtype"]).reshape(len(words), len(words))
    off = [(z[i, j], words[i], words[j]) for i in range(len(words)) for j in range(i + 1, len(words))]
    (high, a, b), (low, c, d) = max(off), min(off)
    said = all_text(at)
    assert f"“{a}” and “{b}” are the closest pair ({high:.2f})" in said
    assert f"“{c}” and “{d}” the farthest ({low:.2f})" in said


def test_a_check_yourself_explanation_quotes_the_figures_of_the_bars(tiny_zoo: Path) -> None:
    """Masked LM's Paris question quotes the model's top three as the page's bars label them: its ".0%" said
    "100%, 0%, 0%" beside bars of 99.7%, 0.1% and 0.03%."""
    import json

    at = open_page("pages/masked_lm.py", text="Paris is the capital of [MASK].")
    # the Paris question alone: "Show the answers" would also train the page's why-mask race (50 s of a core)
    at.radio(key="quiz_mlm_paris").set_value("france").run()
    assert not at.exception
    bars = next(json.loads(c.proto.spec)["data"][0] for c in at.get("plotly_chart") if c.proto.id.endswith("mask0"))
    top = list(zip(bars["y"], bars["text"]))[::-1][:3]  # drawn highest on top: the last bar first
    said = next(line for line in all_text(at).split("\n") if "Its top three:" in line)
    assert [part.rsplit(" ", 1)[1] for part in said.split("Its top three: ")[1].split(" (")[0].split(", ")] == [
        p for _, p in top
    ]
