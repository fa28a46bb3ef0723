"""Every page through Streamlit's AppTest: default input, one changed input, what it shows."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest
from streamlit.testing.v1 import AppTest

import model_zoo
from tests.conftest import ROOT

TIMEOUT = 180  # model pages load real weights on first use


def app(**query: str) -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT)
    for key, value in query.items():
        at.query_params[key] = value
    return at


def open_page(path: str, **query: str) -> AppTest:
    """Run the app on page `path` (pages/....py) with `query` in the URL."""
    at = app(**query)
    at.switch_page(path)
    return at.run()


def test_home_page_runs_without_importing_torch() -> None:
    """The page every student opens first reads model availability only: torch (about 3 s
    on a cold server) waits for a page that runs a model."""
    script = (
        "import sys\n"
        "from streamlit.testing.v1 import AppTest\n"
        "at = AppTest.from_file('app.py', default_timeout=120).run()\n"
        "assert not at.exception, at.exception\n"
        "assert at.dataframe, 'the models panel is drawn'\n"
        "print('torch' in sys.modules)\n"
    )
    env = {**os.environ, "CONTEXTLAB_WARMUP": "0"}
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "False"


def playground(**query: str) -> AppTest:
    return open_page("pages/playground.py", **query)


def all_text(at: AppTest) -> str:
    parts = [e.value for kind in ("title", "markdown", "caption", "subheader", "info", "warning") for e in at.get(kind)]
    return "\n".join(str(p) for p in parts)


def test_home_shows_the_road_and_every_model() -> None:
    at = app().run()
    assert not at.exception
    assert at.title[0].value.startswith("ContextLab")
    text = all_text(at)
    for stop in ("One-hot", "word2vec / GloVe", "ELMo", "BERT", "GPT"):
        assert stop in text
    table = at.dataframe[0].value
    assert list(table["Model"]) == [card.name for card in model_zoo.list_models()]
    status = dict(zip(table["Model"], table["Status"]))
    assert status["minilm-l6"] == "✅ installed"
    assert status["bert-base-uncased"] == "⬇️ needs download"
    assert status["elmo-small"] == "🕒 coming"
    why = dict(zip(table["Model"], table["Why"]))
    assert "python -m model_zoo prefetch gpt2" in why["gpt2"]


def test_home_map_links_each_stop_to_a_model_that_is_here() -> None:
    at = app().run()
    links = {link.proto.label: link.proto for link in at.get("page_link")}
    assert {"Try glove-6b-50d", "Try minilm-l6", "Try smollm2-135m"} <= set(links)
    assert not any("elmo" in label for label in links)  # nothing to try there yet
    assert {link.page for label, link in links.items() if label.startswith("Try ")} == {"playground"}
    assert links["One-hot vectors"].page == "onehot" and links["Word embeddings"].page == "embeddings"
    assert links["Try smollm2-135m"].query_string == "model=smollm2-135m&text=I+deposited+the+cheque+at+the"


def test_home_in_chinese_from_the_url() -> None:
    at = app(lang="zh").run()
    assert not at.exception
    assert at.title[0].value == "ContextLab：机器如何学会结合上下文理解词语"
    assert "模型" in at.dataframe[0].value.columns
    assert "需要下载" in " ".join(at.dataframe[0].value["状态"])


def test_language_switch_changes_the_page() -> None:
    at = app().run()
    at.radio(key="lang").set_value("zh").run()
    assert not at.exception
    assert at.title[0].value.startswith("ContextLab：")
    assert "需要下载" in " ".join(at.dataframe[0].value["状态"])


def test_playground_default_encodes_with_minilm() -> None:
    at = playground()
    assert not at.exception
    assert at.subheader[0].value == "13 tokens"
    chips = at.get("html")[0].proto.body
    assert ">##" not in chips and ">bank<" in chips and ">[CLS]<" in chips
    assert at.slider(key="layer").value == 6  # MiniLM's last layer


def test_playground_static_model_shows_real_neighbours() -> None:
    at = playground(model="glove-6b-50d", text="bank qwertyuiop")
    assert not at.exception
    rows = dict(zip(*at.table[0].value.to_dict("list").values()))
    assert "banks" in rows["bank"]
    assert rows["qwertyuiop"].startswith("⚠")


def test_playground_unreachable_classic_says_so_and_uses_the_offline_model() -> None:
    at = playground(model="bert-base-uncased")
    assert not at.exception
    warning = at.warning[0].value
    assert "bert-base-uncased" in warning and "minilm-l6" in warning
    assert "python -m model_zoo prefetch bert-base-uncased" in warning
    assert at.subheader[0].value == "13 tokens"  # and the page still works, on MiniLM


def test_playground_causal_lm_predicts_the_next_token() -> None:
    at = playground(model="smollm2-135m", text="I deposited the cheque at the")
    assert not at.exception
    assert len(at.get("plotly_chart")) == 2  # next-token bars and the similarity map


def test_playground_empty_text_gets_a_message() -> None:
    at = playground(text="   ")
    assert not at.exception
    assert "empty" in at.info[0].value


def test_playground_escapes_html_in_tokens() -> None:
    at = playground(text="<script>alert(1)</script> <img src=x onerror=alert(2)>")
    assert not at.exception
    chips = at.get("html")[0].proto.body
    assert "<script>" not in chips and "<img" not in chips
    assert "&lt;" in chips


@pytest.mark.parametrize("model", ["minilm-l6", "glove-6b-50d", "smollm2-135m"])
def test_playground_odd_unicode_gets_a_result(model: str) -> None:
    at = playground(model=model, text="café 🙂 银行\u200b naïve ﬁnance \u202eevil")
    assert not at.exception
    assert at.subheader  # tokens or neighbours were drawn


def test_playground_long_text_is_truncated_with_a_note() -> None:
    at = playground(text="a " * 990)  # 990 one-letter words: past 512 tokens, within 2,000 characters
    assert not at.exception
    assert "only the first 512 tokens" in at.warning[0].value


def test_models_are_loaded_once_and_shared(monkeypatch: pytest.MonkeyPatch) -> None:
    """Thirty sessions asking at once for one model get one copy, loaded once."""
    import threading

    import serving

    calls: list[str] = []

    def slow_load(name: str) -> object:
        calls.append(name)
        threading.Event().wait(0.5)
        return object()

    monkeypatch.setattr(serving.model_zoo, "load", slow_load)
    serving.load_model.clear()
    got: list[object] = []
    threads = [threading.Thread(target=lambda: got.append(serving.load_model("minilm-l6"))) for _ in range(30)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    serving.load_model.clear()
    assert calls == ["minilm-l6"]
    assert len(got) == 30 and all(model is got[0] for model in got)


def test_slow_results_are_computed_once_for_sessions_asking_at_once() -> None:
    """Thirty sessions opening one word's map with a model that has no precomputed figures
    start one encoding; a failed computation is not kept, and the next session tries again."""
    import threading

    import serving

    calls: list[int] = []

    def slow() -> object:
        calls.append(1)
        threading.Event().wait(0.5)
        return object()

    key = ("test", "once", time.time())
    got: list[object] = []
    threads = [threading.Thread(target=lambda: got.append(serving._shared(key, slow))) for _ in range(30)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(calls) == 1 and len(got) == 30 and all(value is got[0] for value in got)
    assert serving._shared(key, slow) is got[0] and len(calls) == 1

    def broken() -> object:
        raise model_zoo.ModelZooError("unreachable")

    failing = ("test", "fails", time.time())
    with pytest.raises(model_zoo.ModelZooError):
        serving._shared(failing, broken)
    assert serving._shared(failing, slow) is not None and len(calls) == 2


def test_playground_elmo_is_named_as_coming() -> None:
    at = playground(model="elmo-small")
    assert not at.exception
    assert "elmo-small" in at.warning[0].value


def test_app_warm_up_waits_for_the_first_page(monkeypatch: pytest.MonkeyPatch) -> None:
    """The app's warm-up thread begins loading models only after its pause (the first page draws
    first): serving.warm_up is not called before it, and is called once after."""
    import time

    import serving
    from components import warm

    calls: list[float] = []
    monkeypatch.setattr(serving, "warm_up", lambda: calls.append(time.perf_counter()))
    start = time.perf_counter()
    thread = warm.begin(delay_s=0.5)
    assert thread.daemon and thread.is_alive() and calls == []
    thread.join(timeout=30)
    assert len(calls) == 1 and calls[0] - start >= 0.5


def test_warm_up_loads_the_default_models_in_the_background(monkeypatch: pytest.MonkeyPatch) -> None:
    import serving

    loaded: list[str] = []
    monkeypatch.setattr(serving, "load_model", loaded.append)
    monkeypatch.setenv("CONTEXTLAB_WARMUP", "1")
    serving.warm_up.clear()
    thread = serving.warm_up()
    assert thread is not None and thread.daemon
    thread.join(timeout=300)
    assert not thread.is_alive()
    assert loaded == list(serving.WARM)
    assert serving.warm_up() is thread  # once per server
    serving.warm_up.clear()
    monkeypatch.setenv("CONTEXTLAB_WARMUP", "0")
    assert serving.warm_up() is None
