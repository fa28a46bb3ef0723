"""Requests that arrive together share one forward pass (serving.MicroBatcher), and each learner
still gets the answer for their own sentence."""

from __future__ import annotations

import os
import threading
import time

import pytest

import model_zoo
import serving
from model_zoo.words import SPECIAL_ROOM


def test_callers_that_arrive_while_a_batch_runs_share_the_next_one() -> None:
    entered, release = threading.Event(), threading.Event()

    def run(items: list[int]) -> list[int]:
        if not entered.is_set():  # hold the first batch while the class arrives
            entered.set()
            release.wait(30)
        return [item * 10 for item in items]

    batcher: serving.MicroBatcher[int, int] = serving.MicroBatcher(run, max_batch=8)
    got: dict[int, int] = {}
    threads = [threading.Thread(target=lambda i=i: got.__setitem__(i, batcher(i))) for i in range(20)]
    threads[0].start()
    assert entered.wait(30)
    for t in threads[1:]:
        t.start()
    while sum(1 for s in batcher._queue) < 19:  # everyone else is waiting, none has run alone
        threading.Event().wait(0.01)
    release.set()
    for t in threads:
        t.join(30)
    assert got == {i: i * 10 for i in range(20)}  # each caller its own answer
    assert batcher.batches == [1, 8, 8, 3]  # 19 waiting callers in 3 passes, not 19


def _class_arriving(batcher: serving.MicroBatcher[int, int], gaps: list[float], page_runs: int) -> None:
    """Callers in page-script threads, one after another `gaps` apart, while `page_runs` other page scripts
    run in the worker (threads that Streamlit would name so)."""
    running = threading.Event()
    pages = [
        threading.Thread(target=running.wait, args=(30,), name=serving.runtime.SCRIPT_THREAD) for _ in range(page_runs)
    ]
    for t in pages:
        t.start()
    callers = []
    for i, gap in enumerate([0.0, *gaps]):
        threading.Event().wait(gap)
        callers.append(threading.Thread(target=batcher, args=(i,), name=serving.runtime.SCRIPT_THREAD))
        callers[-1].start()
    for t in callers:
        t.join(30)
    running.set()


def test_a_leader_waits_while_a_class_keeps_arriving() -> None:
    """Thirty learners' scripts reach the batcher spread out: with other page scripts running, the first
    one's pass waits while the others keep coming, instead of running alone and making them wait for it."""
    batcher: serving.MicroBatcher[int, int] = serving.MicroBatcher(
        lambda items: [i * 10 for i in items], gather_s=0.5, gather_max_s=20
    )
    _class_arriving(batcher, [0.1] * 5, page_runs=3)
    assert batcher.batches == [6]


def test_a_learner_alone_in_the_worker_is_not_kept_waiting() -> None:
    """No other page script running: the leader runs after its few ms, and a later request (here a
    non-page thread's, as the warm-up's) gets a pass of its own."""
    batcher: serving.MicroBatcher[int, int] = serving.MicroBatcher(
        lambda items: [i * 10 for i in items], gather_s=5, gather_max_s=20
    )
    first = threading.Thread(target=batcher, args=(0,), name=serving.runtime.SCRIPT_THREAD)
    first.start()
    threading.Event().wait(0.3)  # within a gather_s, had the first one waited
    assert batcher(1) == 10
    first.join(30)
    assert batcher.batches == [1, 1]


def test_a_leader_stops_waiting_when_nobody_more_comes() -> None:
    """A class's requests come within a gap of each other; the pass starts at the first gap that brings
    nobody, not at the longest wait."""
    batcher: serving.MicroBatcher[int, int] = serving.MicroBatcher(
        lambda items: [i * 10 for i in items], gather_s=0.5, gather_max_s=20
    )
    _class_arriving(batcher, [0.05, 0.05, 2.0], page_runs=2)
    assert batcher.batches == [3, 1]


def test_streamlit_runs_a_page_in_the_thread_the_batcher_counts(tmp_path) -> None:
    """serving.runtime.others_running knows a page run by its thread's name: Streamlit's own."""
    from streamlit.testing.v1 import AppTest

    page = tmp_path / "page.py"
    page.write_text("import threading\nimport streamlit as st\nst.write(threading.current_thread().name)\n")
    at = AppTest.from_file(str(page)).run(timeout=30)
    assert [m.value for m in at.markdown] == [serving.runtime.SCRIPT_THREAD]


def test_one_learners_bad_input_fails_only_their_own_request() -> None:
    entered, release = threading.Event(), threading.Event()

    def run(items: list[str]) -> list[str]:
        if not entered.is_set():
            entered.set()
            release.wait(30)
        if "" in items:
            raise model_zoo.EmptyInput()
        if "crash" in items:
            raise RuntimeError("a bug")
        return [s.upper() for s in items]

    batcher: serving.MicroBatcher[str, str] = serving.MicroBatcher(run)
    got: dict[str, object] = {}

    def ask(text: str) -> None:
        try:
            got[text] = batcher(text)
        except Exception as err:  # noqa: BLE001
            got[text] = err

    first = threading.Thread(target=ask, args=("first",))
    first.start()
    assert entered.wait(30)
    others = [threading.Thread(target=ask, args=(text,)) for text in ("", "ok", "fine")]
    for t in others:
        t.start()
    while len(batcher._queue) < 3:
        threading.Event().wait(0.01)
    release.set()
    for t in [first, *others]:
        t.join(30)
    assert got["first"] == "FIRST" and got["ok"] == "OK" and got["fine"] == "FINE"
    assert isinstance(got[""], model_zoo.EmptyInput)  # the empty box's owner alone sees why
    with pytest.raises(RuntimeError):  # a bug is not hidden
        batcher("crash")
    assert batcher("after") == "AFTER"


def test_fill_mask_batched_for_a_class_equals_one_by_one(tiny_bert) -> None:
    model = model_zoo.load(tiny_bert)
    texts = [f"the {w} went to the [MASK] ." for w in ("man", "dog", "cat", "bird", "child")]
    texts.append("[MASK] and [MASK] again")
    together = model.fill_masks(texts, 4)
    for text, guesses in zip(texts, together, strict=True):
        alone = model.fill_mask(text, 4)
        assert [[w for w, _ in g] for g in guesses] == [[w for w, _ in g] for g in alone]
        assert [p for g in guesses for _, p in g] == pytest.approx([p for g in alone for _, p in g], abs=1e-5)
    with pytest.raises(model_zoo.NoMaskToken):  # checked before any batch runs
        model.check_masked("no blank here")
    with pytest.raises(model_zoo.NoMaskToken):  # and by the batch itself
        model.fill_masks(["the [MASK] .", "no blank here"], 3)


@pytest.mark.skipif(not hasattr(os, "setpriority"), reason="thread priorities are a Linux/macOS feature")
def test_a_word2vec_training_runs_its_threads_below_the_page_runs(monkeypatch) -> None:
    """A learner's live training (gensim's worker threads) gives the cores to everyone else's pages first."""
    from model_zoo.lessons import lexicon
    from model_zoo.lessons import word2vec as w2v

    seen: dict[str, int] = {}

    def fake_train(corpus, settings, watch, on_epoch):  # noqa: ANN001, ANN202
        def worker() -> None:  # as gensim starts its workers: from the training's own thread
            seen["worker"] = lowness(threading.get_native_id())

        thread = threading.Thread(target=worker)
        thread.start()
        thread.join()
        return "model"

    monkeypatch.setattr(lexicon, "corpus", lambda: [["a"]])
    monkeypatch.setattr(w2v, "train_word2vec", fake_train)
    monkeypatch.setattr(w2v, "quality", lambda *args: "quality")
    monkeypatch.setattr(serving, "loaded", lambda *args: None)
    me = threading.get_native_id()
    before = lowness(me)
    trained = serving.train_word2vec(w2v.TrainSettings(), "water", lambda report: None)
    assert trained.model == "model"
    # Linux: the idle policy, which a waking page run preempts at once; elsewhere at least nice TRAINING_NICE
    assert seen["worker"] == (os.SCHED_IDLE if idle_policy else max(serving.TRAINING_NICE, before)) != before
    if os.geteuid() == 0:  # putting it back needs the privilege to raise priority
        assert lowness(me) == before


idle_policy = hasattr(os, "SCHED_IDLE")


def lowness(thread: int) -> int:
    """How low thread `thread` runs: its scheduling policy where the system has an idle one, else its nice."""
    return os.sched_getscheduler(thread) if idle_policy else os.getpriority(os.PRIO_PROCESS, thread)


def test_learners_pressing_train_with_the_same_settings_watch_one_word2vec_training(monkeypatch) -> None:
    """A class pressing Train together with the lesson's settings: one training, every epoch on each page;
    a learner who watches another word trains on their own."""
    from model_zoo.lessons import lexicon
    from model_zoo.lessons import word2vec as w2v

    trainings: list[str] = []
    started, release = threading.Event(), threading.Event()

    def fake_train(corpus, settings, watch, on_epoch):  # noqa: ANN001, ANN202
        trainings.append(watch)
        for epoch in (1, 2):
            on_epoch(w2v.EpochReport(epoch, 2, 0.1 * epoch, 1.0, [(watch, 1.0)]))
            started.set()
            assert release.wait(30)
        return f"model of {watch}"

    monkeypatch.setattr(lexicon, "corpus", lambda: [["a"]])
    monkeypatch.setattr(w2v, "train_word2vec", fake_train)
    monkeypatch.setattr(w2v, "quality", lambda *args: "quality")
    monkeypatch.setattr(serving, "loaded", lambda *args: None)
    epochs: dict[int, list[int]] = {i: [] for i in range(6)}
    models: dict[int, object] = {}

    def press(i: int, watch: str) -> None:
        trained = serving.train_word2vec(w2v.TrainSettings(), watch, lambda r: epochs[i].append(r.epoch))
        models[i] = trained.model

    first = threading.Thread(target=press, args=(0, "water"))
    first.start()
    assert started.wait(30)
    others = [threading.Thread(target=press, args=(i, "water" if i < 5 else "fire")) for i in range(1, 6)]
    for t in others:
        t.start()
    time.sleep(0.2)
    release.set()
    for t in [first, *others]:
        t.join(30)
    assert sorted(trainings) == ["fire", "water"]
    assert all(models[i] == "model of water" and epochs[i] == [1, 2] for i in range(5))
    assert models[5] == "model of fire" and epochs[5] == [1, 2]


def test_a_batcher_looks_its_model_up_at_each_batch(monkeypatch: pytest.MonkeyPatch) -> None:
    """A batcher lives as long as the server; the model it serves is the one load_model holds now, so a
    model let go of (load_model keeps 8) is not kept alive by the batcher."""

    class Fake:
        def __init__(self, tag: str) -> None:
            self.tag = tag

        def fill_mask(self, text: str, top_k: int) -> list[list[tuple[str, float]]]:
            return [[(self.tag, 1.0)]]

    models = iter([Fake("first"), Fake("second")])
    monkeypatch.setattr(serving, "loaded", lambda name, kind: next(models))
    serving._fill_mask_batcher.clear()
    try:
        batcher = serving._fill_mask_batcher("any")
        assert batcher(("a [MASK] .", 1)) == [[("first", 1.0)]]
        assert batcher(("a [MASK] .", 1)) == [[("second", 1.0)]]
    finally:
        serving._fill_mask_batcher.clear()


def test_attention_views_of_a_class_run_two_at_a_time(tiny_zoo, monkeypatch: pytest.MonkeyPatch) -> None:
    """Thirty learners typing into the Attention page at once: each sentence is its own forward pass with
    attention weights, and run all together they fight over the cores (p95 2.25 s against 1.3-1.4 s with
    two at a time, `make bench-load`). The passes wait for one of two slots; every learner gets their own."""
    model = serving.loaded("minilm-l6", model_zoo.Encoder)
    running, most, lock = 0, 0, threading.Lock()
    encode = type(model).encode

    def counted(self, *args, **kwargs):  # noqa: ANN001, ANN202
        nonlocal running, most
        with lock:
            running += 1
            most = max(most, running)
        threading.Event().wait(0.02)  # long enough for the others to arrive
        try:
            return encode(self, *args, **kwargs)
        finally:
            with lock:
                running -= 1

    monkeypatch.setattr(type(model), "encode", counted)
    texts = [f"The {n} farmers went to the river bank." for n in range(12)]
    got: dict[str, list[str]] = {}
    threads = [
        threading.Thread(target=lambda s=s: got.__setitem__(s, serving.attention_view("minilm-l6", s, None).tokens))
        for s in texts
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert most == 2
    monkeypatch.undo()
    for s in texts:  # each learner's own sentence, as read alone
        assert got[s] == model.encode(s, None, attentions=True, max_length=serving.VIEW_TOKENS).tokens


TEXTS = (
    "The man went to the [MASK] to deposit his money.",
    "我把钱存进了银行。巴黎是法国的首[MASK]。",
    "Emoji 🏦🌊 and accents: café, naïve, Zürich — “quotes”.",
    "   spaces   and\ttabs\nand lines   ",
    "a",
    "[MASK] [MASK] [MASK]",
    "x" * 300,
)


CONTEXTUAL = ["minilm-l6", "minilm-l6-mlm", "smollm2-135m", "smollm2-135m-mlm", "elmo-mini"]


@pytest.mark.parametrize("name", CONTEXTUAL)
def test_no_tokenizer_makes_more_tokens_than_bytes_and_room(tiny_zoo, name: str) -> None:
    """over_limit tells a short text without tokenizing it; that is sound only while every model's tokens
    stay within the text's UTF-8 bytes and SPECIAL_ROOM (a pair included)."""
    tokens_within_bytes(name)


@pytest.mark.slow
@pytest.mark.parametrize("name", CONTEXTUAL)
def test_no_real_tokenizer_makes_more_tokens_than_bytes_and_room(name: str) -> None:
    tokens_within_bytes(name)  # the offline pack's own tokenizers


def tokens_within_bytes(name: str) -> None:
    model = serving.contextual(name)
    for text in TEXTS:
        assert model.count_tokens(text) <= len(text.encode()) + SPECIAL_ROOM, (name, text)
        if name.startswith("minilm"):
            pair = len(text.encode()) + len(TEXTS[0].encode()) + SPECIAL_ROOM
            assert model.count_tokens(text, TEXTS[0]) <= pair, (name, text)


def test_a_short_text_is_under_the_limit_without_taking_the_tokenizer(tiny_zoo, monkeypatch) -> None:
    """Thirty learners' answers came back, then each waited for the tokenizer's lock (held by the next
    batch) only to learn that their sentence was not cut. A sentence whose bytes fit is not tokenized."""
    model = serving.contextual("minilm-l6-mlm")
    long_text = "bank " * model.max_length
    assert serving.over_limit("minilm-l6-mlm", long_text) == model.max_length  # tokenized: it is cut

    def refuse(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        raise AssertionError("tokenized a text that cannot be over the limit")

    monkeypatch.setattr(serving, "token_count", refuse)
    assert serving.over_limit("minilm-l6-mlm", "The man went to the [MASK].") is None
    with pytest.raises(AssertionError):  # near the limit it still counts
        serving.over_limit("minilm-l6-mlm", "b" * model.max_length)


@pytest.mark.parametrize("fixture", ["tiny_bert", "tiny_gpt2"])
def test_encodings_read_together_equal_one_by_one(fixture: str, request: pytest.FixtureRequest) -> None:
    """BERT inputs' sentences (and every page's hidden states) from a class share padded passes
    (Encoder.encode_many): each learner gets the tokens, words, segments, truncation and every layer's
    vectors their text gets alone, singles and pairs mixed, a text cut at the model's length included."""
    model = model_zoo.load(request.getfixturevalue(fixture))
    texts = ["My dog loves word embeddings.", "a", "He plays fetch by the river bank.", "word " * 600, "Zürich 🏦"]
    pairs = [None, "b c d", "It rained.", None, None] if fixture == "tiny_bert" else None
    together = model.encode_many(texts, pairs)
    assert len(together) == len(texts)
    for i, got in enumerate(together):
        alone = model.encode(texts[i], pairs[i] if pairs else None, attentions=False)
        assert (got.text, got.tokens, got.words, got.word_ids) == (
            alone.text,
            alone.tokens,
            alone.words,
            alone.word_ids,
        )
        assert got.truncated == alone.truncated == (i == 3)
        assert model.read_tokens(texts[i], pairs[i] if pairs else None) == (alone.tokens, alone.segment_ids.tolist())
        assert (got.segment_ids == alone.segment_ids).all() and got.attentions is None
        assert got.hidden_states.shape == alone.hidden_states.shape
        assert abs(got.hidden_states - alone.hidden_states).max() < 1e-4


def test_a_class_sending_sentences_shares_the_passes(tiny_zoo) -> None:
    """Twelve learners typing into BERT inputs at once: their sentences (alone and as pairs) run in
    shared passes, each learner gets their own, and an empty one gets its sentence alone."""
    texts = [f"The {n} farmers went to the bank." for n in range(12)]
    got: dict[int, object] = {}

    def send(n: int) -> None:
        try:
            got[n] = (
                serving.pair_states("minilm-l6", texts[n], "They sat.")
                if n % 2
                else serving.hidden_states("minilm-l6", texts[n] if n != 4 else " ")
            )
        except model_zoo.ModelZooError as err:
            got[n] = err

    serving._states_batcher("minilm-l6").wait_s = 0.2  # every thread is in before the first pass
    threads = [threading.Thread(target=send, args=(n,)) for n in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert max(serving._states_batcher("minilm-l6").batches) > 1
    assert isinstance(got[4], model_zoo.EmptyInput)
    for n in (0, 1, 2, 3, 5):
        assert got[n].text == (texts[n] if n % 2 == 0 else f"{texts[n]} ||| They sat.")  # type: ignore[attr-defined]
