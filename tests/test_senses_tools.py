"""Word senses' instruments (issue 38): axes the learner names and the nearest uses in the shipped sentences.
The math against brute force, the index on a tiny encoder, and the page on the tiny zoo (fast tier)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

import model_zoo
from model_zoo.lessons import axes
from model_zoo.lessons.probing import Sentence
from model_zoo.lessons.uses import Uses, build_index, cached_index, nearest, select_uses, sense_share_by_layer, shares
from tests.conftest import all_text, forming_answers, open_page, shown


# -- axes ----------------------------------------------------------------------------------------------
def test_a_use_is_placed_by_poles_built_without_it() -> None:
    vectors = np.array([[0.0, 0.0], [2.0, 0.0], [10.0, 0.0], [12.0, 0.0], [6.0, 3.0]])
    a, b = axes.Pole("A", (0, 1)), axes.Pole("B", (2, 3))
    placed = axes.positions(vectors, a, b)
    # use 0 sees A as use 1 alone (2, 0) and B as the mean of 2 and 3 (11, 0): (0 - 2) / 9
    assert placed[0] == pytest.approx(-2 / 9)
    assert placed[3] == pytest.approx((12 - 1) / (10 - 1))  # B seen as use 2 alone, A as the mean (1, 0)
    assert placed[4] == pytest.approx((6 - 1) / 10)  # not a member: both whole means; the y part does not count
    word = axes.Pole("w", vector=np.array([0.0, 0.0]))
    assert axes.positions(vectors, word, axes.Pole("v", vector=np.array([10.0, 0.0])))[2] == pytest.approx(1.0)


def test_auc_is_the_mann_whitney_statistic() -> None:
    from sklearn.metrics import roc_auc_score

    rng = np.random.default_rng(0)
    scores = np.round(rng.normal(size=60), 1)  # ties included
    positive = rng.random(60) < 0.4
    assert axes.auc(scores, positive) == pytest.approx(roc_auc_score(positive, scores))
    assert axes.auc(np.full(10, np.nan), positive[:10]) == 0.5


def test_a_static_models_senses_give_a_flat_axis_and_removing_a_direction_removes_it() -> None:
    same = np.tile(np.array([[1.0, 2.0, 3.0]]), (6, 1))[:, None]  # one vector for every use, one layer
    senses = np.array(["a", "a", "a", "b", "b", "b"])
    sep = axes.separation(same, lambda _: (axes.Pole("a", (0, 1, 2)), axes.Pole("b", (3, 4, 5))), senses, "a", "b")
    assert sep.flat and sep.auc[0] == 0.5
    rng = np.random.default_rng(1)
    x, direction = rng.normal(size=(20, 5)), rng.normal(size=5)
    assert np.abs(axes.without(x, direction) @ direction).max() < 1e-9
    assert np.allclose(axes.without(x, np.zeros(5)), x)


# -- the index --------------------------------------------------------------------------------------------
def sentence(i: int, words: str, pos: str, sense: str | None = None, at: int = -1) -> Sentence:
    w = tuple(words.split())
    tags = tuple(pos.split())
    senses: tuple[str | None, ...] = tuple(sense if j == at else None for j in range(len(w)))
    return Sentence(f"s{i}", "train", "senses", w, {"pos": tags, "dep": tuple("dep" for _ in w), "sense": senses})


SENTENCES = [
    sentence(0, "we sat on the bank .", "PRON VERB ADP DET NOUN PUNCT", "river", 4),
    sentence(1, "the bank lent us money", "DET NOUN VERB PRON NOUN", "money", 1),
    sentence(2, "ducks swim near the bank", "NOUN VERB ADP DET NOUN", "river", 4),
    sentence(3, "a bank account pays interest", "DET NOUN NOUN VERB NOUN", "money", 1),
    sentence(4, "the river was cold today", "DET NOUN AUX ADJ NOUN"),
]


def test_every_word_but_punctuation_is_a_use() -> None:
    uses = select_uses(SENTENCES)
    assert len(uses) == sum(len(s.words) for s in SENTENCES) - 1
    row = uses.row_in("The bank lent us money.", "bank")
    assert row is not None and uses.use(row).sense == "money" and uses.use(row).pos == "NOUN"
    assert uses.row_in("no such sentence", "bank") is None


@pytest.fixture(scope="module")
def encoder(tiny_zoo_dir: Path):  # noqa: ANN201
    import model_zoo

    return model_zoo.load(tiny_zoo_dir / "minilm-l6")


def test_the_index_on_disk_gives_the_brute_force_nearest_uses(encoder, tmp_path: Path) -> None:  # noqa: ANN001
    uses = select_uses(SENTENCES)
    index = cached_index(encoder, uses, "v1", tmp_path)
    assert isinstance(index, np.memmap) and index.dtype == np.float16
    unread = SimpleNamespace(name=encoder.name)  # no span_vectors: reading the file back must not encode
    again = cached_index(unread, uses, "v1", tmp_path)  # type: ignore[arg-type]
    assert np.array_equal(np.asarray(again), np.asarray(index))
    wide = np.asarray(index, dtype=np.float64)
    for layer in range(index.shape[0]):
        query = wide[layer, 3] * 3.0  # any length: the order is the cosine's
        cosines = wide[layer] @ (query / np.linalg.norm(query))
        cosines[3] = -np.inf
        found = nearest(index, layer, query, 4, leave_out=3)
        assert 3 not in found.rows
        assert np.allclose(found.cosines, np.sort(cosines)[::-1][:4], atol=2e-3)


def test_a_full_or_damaged_cache_costs_the_work_again_not_the_answer(encoder, tmp_path: Path, monkeypatch) -> None:  # noqa: ANN001
    import errno

    uses = select_uses(SENTENCES)
    expected = np.array(cached_index(encoder, uses, "v1", tmp_path / "ok"))  # a copy: the file is torn below
    (kept,) = (tmp_path / "ok").glob("*.npy")
    kept.write_bytes(kept.read_bytes()[:200])  # torn: read as none, computed and written again
    np.testing.assert_array_equal(np.asarray(cached_index(encoder, uses, "v1", tmp_path / "ok")), expected)
    assert kept.stat().st_size > 200

    def full_disk(*_args: object, **_kwargs: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(np.lib.format, "open_memmap", full_disk)
    got = cached_index(encoder, uses, "v1", tmp_path / "full")
    np.testing.assert_array_equal(np.asarray(got), expected)
    assert list((tmp_path / "full").glob("*")) == []  # no partial file left behind


def test_shares_by_layer_count_the_word_its_sense_and_its_role() -> None:
    uses = select_uses(SENTENCES)
    rows = {uses.use(r).word + str(uses.use(r).sentence): r for r in range(len(uses))}
    dim = 4
    index = np.zeros((2, len(uses), dim), dtype=np.float16)
    rng = np.random.default_rng(0)
    index[:] = rng.normal(size=index.shape) * 0.01
    # layer 0: every "bank" alike; layer 1: the river banks together, the money banks together
    for key, r in rows.items():
        if key.startswith("bank"):
            index[0, r, 0] = 1
            index[1, r, 1 if uses.use(r).sense == "river" else 2] = 1
    query_row = rows["bank0"]
    query = np.asarray(index[:, query_row], dtype=np.float32)
    found = shares(index, uses, query, "bank", "river", "NOUN", 1, leave_out=query_row)
    assert found.same_word.tolist() == [1.0, 1.0]
    assert found.same_sense[1] == 1.0  # at layer 1 its nearest is the other river bank
    assert found.same_pos.tolist() == [1.0, 1.0]  # a bank is a noun at both layers
    verb = shares(index, uses, query, "bank", "river", "VERB", 1, leave_out=query_row)
    assert (
        verb.same_pos.tolist() == [0.0, 0.0]
        and np.isnan(shares(index, uses, query, "bank", None, None, 1).same_sense).all()
    )
    word_share, sense_share = sense_share_by_layer(index, uses, k=1)
    assert word_share.tolist() == [1.0, 1.0] and sense_share[1] == 1.0


def test_an_index_too_large_for_a_server_is_refused_in_one_sentence(monkeypatch, encoder) -> None:  # noqa: ANN001
    from model_zoo.errors import MissingCapability
    from model_zoo.lessons import uses as module

    monkeypatch.setattr(module, "MAX_INDEX_BYTES", 100)
    with pytest.raises(MissingCapability, match="nearest uses on this server"):
        build_index(encoder, select_uses(SENTENCES), None)


# -- the page, on the tiny zoo --------------------------------------------------------------------------
@pytest.fixture
def few_uses(monkeypatch):  # noqa: ANN001, ANN201
    """The shipped sentences cut to those of bank and 200 more: the tiny zoo's index in a second."""
    from model_zoo.lessons import probing
    from serving import lesson_uses

    every = probing.load_sentences()
    kept = [s for i, s in enumerate(every) if i < 200 or "bank" in [w.lower() for w in s.words]]
    uses = select_uses(kept)
    monkeypatch.setattr(lesson_uses, "shipped_uses", lambda: uses)
    return uses


def test_the_axes_draw_for_every_model_and_a_word_pole(tiny_zoo: Path, few_uses: Uses) -> None:
    at = open_page("pages/senses.py", word="bank", models="glove-6b-50d,minilm-l6")
    assert not at.get("plotly_chart")  # nothing computed before the learner picks an instrument
    at = open_page("pages/senses.py", word="bank", models="glove-6b-50d,minilm-l6", tool="axes")
    assert not at.exception, [e.value for e in at.exception]
    charts = {c.proto.id.rsplit("-", 1)[-1] for c in at.get("plotly_chart")}
    assert {"axes_map", "axes_auc", "axes_removed"} <= charts
    assert "separates senses 1 and 2 with an AUC of" in all_text(at)
    at.selectbox(key="axes_xb_bank").set_value("word").run()
    at.text_input(key="axes_xb_word_bank").input("money").run()
    assert not at.exception
    assert "“money”" in all_text(at)
    pasted = "money " * 20  # 120 characters: the box holds a word or a short phrase, 40
    at.text_input(key="axes_xb_word_bank").input(pasted).run()
    assert at.text_input(key="axes_xb_word_bank").value == pasted[:40] == at.query_params["axes_xb_word"]
    assert "The box holds 40 characters: it kept the first 40 of the 120 pasted." in all_text(at)
    at.text_input(key="axes_xb_word_bank").input("<b>zzqx</b>").run()  # in no sentence: one sentence, as text
    assert not at.exception
    assert any("“<b>zzqx</b>” is not among the" in shown(i.value) for i in at.info)
    at.selectbox(key="axes_model").set_value("glove-6b-50d").run()
    at.selectbox(key="axes_xb_bank").set_value("2").run()
    assert not at.exception
    assert any("one vector in every sentence" in shown(i.value) for i in at.info)


def test_nearest_uses_list_each_sentence_with_the_word_in_bold(tiny_zoo: Path, few_uses: Uses) -> None:
    at = open_page("pages/senses.py", word="bank", models="minilm-l6", tool="nearest")
    assert not at.exception, [e.value for e in at.exception]
    listed = next(m.value for m in at.markdown if m.value.startswith("1. `"))
    assert listed.count("\n") == 9 and "**" in listed
    charts = {c.proto.id.rsplit("-", 1)[-1] for c in at.get("plotly_chart")}
    assert {"near_counts", "near_shares"} <= charts
    assert any(b.proto.id.endswith("-near_csv") for b in at.get("download_button"))
    at.text_input(key="mine").input("The <i>bank</i> by the river flooded.").run(timeout=120)
    at.selectbox(key="near_use_bank").set_value("mine").run(timeout=120)
    assert not at.exception
    at.button(key="near_class_go").click().run(timeout=120)
    assert not at.exception
    assert "near_class" in {c.proto.id.rsplit("-", 1)[-1] for c in at.get("plotly_chart")}


# -- the Word embeddings lesson: axes of static vectors --------------------------------------------------
def test_removing_a_direction_brings_together_the_words_it_kept_apart() -> None:
    words = ["king", "queen", "man", "woman", "prince"]
    gender, royal = np.array([1.0, 0, 0, 0]), np.array([0, 1.0, 0, 0])
    vectors = np.array(
        [royal - gender, royal + gender, -gender + [0, 0, 0.3, 0], gender + [0, 0, 0.3, 0], royal - 1.2 * gender]
    )
    vectors = axes.unit(vectors)
    placed = axes.word_axes(vectors, words, (axes.unit(-gender), axes.unit(gender)), None)
    assert placed.y_is_pca and placed.xy.shape == (5, 2)
    assert placed.xy[0, 0] < 0.5 < placed.xy[1, 0]  # king towards the first pole, queen towards the second
    assert placed.nearest_before[0] == "prince" and placed.nearest_after[0] in ("queen", "prince")
    assert placed.nearest_before[1] != "king" and placed.nearest_after[1] == "king"


def test_the_embeddings_axes_tab_draws_and_says_what_removal_changed(tiny_zoo: Path) -> None:
    from tests.conftest import TINY_STATIC_WORDS

    known = " ".join(list(dict.fromkeys(TINY_STATIC_WORDS))[:8])
    pole_a, pole_b = list(dict.fromkeys(TINY_STATIC_WORDS))[:2]
    at = open_page("pages/embeddings.py", axes_words=known, axes_x_from=pole_a, axes_x_to=pole_b)
    assert not at.exception, [e.value for e in at.exception]
    assert "axes_fig" in {c.proto.id.rsplit("-", 1)[-1] for c in at.get("plotly_chart")}
    assert f"With the {pole_a} → {pole_b} direction removed from every vector" in all_text(at)
    at.text_input(key="axes_x_to").input("zzqxnotaword").run()
    assert not at.exception
    assert any("zzqxnotaword" in shown(i.value) for i in at.info)  # not in its vocabulary: one sentence


def test_the_senses_an_axis_is_scored_on_follow_its_ends(monkeypatch) -> None:  # noqa: ANN001
    from model_zoo.lessons.axes import PoleChoice
    from serving import lesson_uses

    monkeypatch.setattr(lesson_uses, "word_pole", lambda *args: np.zeros((1, 2)))
    senses = ("river", "money", "river", "blood")
    _, first, second = lesson_uses.poles("m", True, senses, (PoleChoice(word="w"), PoleChoice(sense="money")))
    assert (first, second) == ("river", "money")
    _, first, second = lesson_uses.poles("m", True, senses, (PoleChoice(sense="money"), PoleChoice(word="w")))
    assert (first, second) == ("money", "river")
    _, first, second = lesson_uses.poles("m", True, senses, (PoleChoice(sense="blood"), PoleChoice(sense="river")))
    assert (first, second) == ("blood", "river")
    _, first, second = lesson_uses.poles("m", True, senses, (PoleChoice(sense="money"), PoleChoice(sense="money")))
    assert first == "money" and second != "money"


def test_the_csv_exports_never_start_a_formula() -> None:
    from components.senses_tools_view import nearest_csv
    from model_zoo.lessons.uses import Found, Shares, Use

    use = Use(0, 0, 1, "=HYPERLINK(1)", "NOUN", "nsubj", None)
    found = Found([(use, 0.5)], Shares(np.zeros(1), np.zeros(1), np.zeros(1)))
    text = nearest_csv(found, [["@sum", "=HYPERLINK(1)"]])
    row = text.splitlines()[1].split(",")
    assert row[2] == "'=HYPERLINK(1)" and row[-1].startswith("'@sum")


def test_a_class_searched_together_gets_what_each_gets_alone() -> None:
    """serving's batcher searches a class's clicks in one float32 product per layer: every query gets the
    neighbours (and cosines, to float16's precision) that its own float16 search gives."""
    from model_zoo.lessons.uses import nearest_many

    rng = np.random.default_rng(3)
    index = axes.unit(rng.normal(size=(3, 500, 16))).astype(np.float16)
    queries = rng.normal(size=(5, 3, 16))
    leave_out = [7, None, 42, None, 0]
    rows, cosines = nearest_many(index, queries, 6, leave_out)
    assert rows.shape == (3, 5, 6)
    for i in range(5):
        alone_rows, alone_cosines = nearest_many(index, queries[i : i + 1], 6, [leave_out[i]])
        np.testing.assert_array_equal(rows[:, i], alone_rows[:, 0])
        np.testing.assert_allclose(cosines[:, i], alone_cosines[:, 0], atol=2e-3)
        if leave_out[i] is not None:
            assert leave_out[i] not in rows[:, i]
        for layer in range(3):  # against plain cosines in float64
            exact = np.asarray(index[layer], dtype=np.float64) @ axes.unit(queries[i, layer])
            if leave_out[i] is not None:
                exact[leave_out[i]] = -np.inf
            np.testing.assert_array_equal(rows[layer, i], np.argsort(-exact, kind="stable")[:6])


# -- senses forming while a model learns ----------------------------------------------------------------
def test_a_layer_separates_halfway_up_its_rise_from_its_low_before_the_peak() -> None:
    from model_zoo.lessons.forming import dip, first_to_separate, halfway

    flat = [0.44] * 6  # layer 0: one vector per word form, the same at every step
    rises = [0.60, 0.52, 0.60, 0.70, 0.74, 0.76]  # dips first: half of 0.52 -> 0.76 is 0.64, reached at step 3
    early = [0.60, 0.66, 0.72, 0.74, 0.75, 0.76]  # from 0.60, half of its rise (0.68) at step 2
    noisy = [0.50, 0.48, 0.52, 0.49, 0.51, 0.50]  # moves less than 5 points: not a rise
    late_dip = [0.50, 0.60, 0.70, 0.80, 0.80, 0.62]  # falls after its peak: its low is before the peak (0.50)
    table = np.array([flat, rises, early, noisy, late_dip]).T
    assert halfway(table) == [None, 3, 2, None, 1]  # late_dip: 0.50 -> 0.62 is 12 points, half (0.56) at 1
    assert halfway(np.array([late_dip]).T, least_rise=0.2) == [None]
    assert first_to_separate(table[:, :3]) == ("2", 2)
    assert first_to_separate(np.array([flat, rises, rises]).T) == ("together", 3)
    assert first_to_separate(np.array([flat, noisy]).T) == ("never", None)
    assert dip(table, 1) == 1 and dip(table, 2) is None and dip(table, 0) is None
    with_nan = np.array([flat, [np.nan, *rises[1:]]]).T
    assert halfway(with_nan) == [None, None] and dip(with_nan, 1) is None


@pytest.fixture
def tiny_forming(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A tiny ELMo trained from scratch with 3 sense snapshots of "bank" (seconds), packed as the slider's run
    for the weights shipped under elmo-mini, in place of assets/senses/forming: the file the page reads."""
    from model_zoo.lessons import forming, sense_data
    from model_zoo.lessons.senses import encode_senses
    from model_zoo.registry import weights_fingerprint
    from model_zoo.training.train_elmo import Trainer
    from tests.test_elmo import tiny_config, write_corpus

    every = sense_data.load_senses
    bank = {"bank": every()["bank"]}
    monkeypatch.setattr(sense_data, "load_senses", lambda: bank)  # the run reads one word of 12: seconds
    run = Trainer(write_corpus(tmp_path / "corpus"), tmp_path / "run", tiny_config(sense_snapshots=3), "cpu")
    assert run.train(minutes=5, progress=False) == "done"
    run.export()
    model = model_zoo.load(run.out / "elmo-mini")
    final = {"bank": encode_senses(model, bank["bank"]).vectors}
    weights = str(weights_fingerprint("elmo-mini"))
    arrays = forming.pack_run(run.out, final, bank, "elmo-mini", weights, "python -m model_zoo.train_elmo --tiny")
    folder = tmp_path / "forming"
    folder.mkdir()
    np.savez_compressed(folder / "elmo-mini.npz", **arrays)
    monkeypatch.setattr(forming, "FORMING", folder)
    monkeypatch.setattr(sense_data, "load_senses", every)  # the page reads the whole set
    return folder / "elmo-mini.npz"


def test_the_training_slider_redraws_the_map_and_says_what_each_step_shows(tiny_zoo: Path, tiny_forming: Path) -> None:
    """A packed run (read straight from its file here): the map and the sentence of the step the slider is on,
    and the predict moment judged by the layer whose mean accuracy is first halfway up its rise (computed here)."""
    from tests.conftest import light_charts

    with np.load(tiny_forming) as raw:
        steps, tokens, words = raw["steps"], raw["tokens"], [str(w) for w in raw["words"]]
        accuracy, maps = raw["accuracy"], raw["map_bank"].astype(np.float32)
    assert len(steps) == 4 and tokens[0] == 0 and steps[0] == 0 and list(tokens) == sorted(tokens)
    bank = accuracy[:, words.index("bank")]  # (steps, layers)
    at = open_page("pages/senses.py", word="bank", tool="forming")
    assert not at.exception, [e.value for e in at.exception]
    points = light_charts(at)["forming_map"]["points"]
    np.testing.assert_allclose([[p["x"], p["y"]] for p in points], maps[0, 1], atol=1e-3)
    said = all_text(at)
    assert (
        f"At step 0 · 0.00M tokens · 0%, layer 1: a use's nearest other use shares its sense {bank[0, 1]:.0%}" in said
    )
    assert f"the trained model {bank[-1, 1]:.0%}" in said
    assert {"forming_accuracy", "forming_similarity", "forming_perplexity"} <= {
        c.proto.id.rsplit("-", 1)[-1] for c in at.get("plotly_chart")
    }
    last = len(steps) - 1
    at.select_slider(key="forming_step").set_value(last).run()
    at.slider(key="forming_layer").set_value(2).run()
    assert not at.exception
    points = light_charts(at)["forming_map"]["points"]
    np.testing.assert_allclose([[p["x"], p["y"]] for p in points], maps[last, 2], atol=1e-3)
    share = f"{steps[last]} · {tokens[last] / 1e6:.2f}M tokens · 100%, layer 2"
    assert f"At step {share}: a use's nearest other use shares its sense {bank[last, 2]:.0%}" in all_text(at)
    at.slider(key="forming_layer").set_value(0).run()
    assert any("one vector in every sentence, at every step" in shown(c.value) for c in at.caption)
    # predict, then see: over all words, when the first layer is halfway from its lowest accuracy to its last
    # (by share of the run's tokens), and only once that is picked, which layer
    when, answer, first = forming_answers(accuracy, tokens)
    share = None if first is None else tokens[first] / tokens[-1]
    assert "predict_senses_forming" not in [r.key for r in at.radio]
    offered = list(at.radio(key="predict_senses_forming_when").options)
    assert offered[0] == "in its first tenth" and len(offered) == 4

    def same() -> int:
        return sum(s.value.startswith("Same as ") for s in at.success)

    other = next(o for o in ("tenth", "half", "later", "never") if o != when)
    at.radio(key="predict_senses_forming_when").set_value(other).run()
    assert not at.exception and same() == 0
    at.radio(key="predict_senses_forming_when").set_value(when).run()
    assert not at.exception and same() == 1
    if first is not None:
        said = f"at step {steps[first]}, after {tokens[first] / 1e6:.2f}M tokens ({share:.0%} of the run)"
        assert said in all_text(at)
    options = list(at.radio(key="predict_senses_forming").options)
    assert len(options) == 5
    other = next(o for o in ("0", "1", "2", "together", "never") if o != answer)
    for pick, hits in ((other, 1), (answer, 2)):
        at.radio(key="predict_senses_forming").set_value(pick).run()
        assert not at.exception
        assert same() == hits


def test_without_a_run_packed_for_the_weights_here_no_slider_is_offered(
    tiny_zoo: Path, tmp_path: Path, monkeypatch
) -> None:  # noqa: ANN001, E501
    from model_zoo.lessons import forming

    monkeypatch.setattr(forming, "FORMING", tmp_path)  # no packed run here (or one for other weights)
    at = open_page("pages/senses.py", word="bank", tool="forming")
    assert not at.exception
    offered = [o.content for o in at.segmented_control(key="tool").proto.options]
    assert offered == ["Axes with a meaning", "Nearest uses"]
    assert any("forming" in shown(i.value) for i in at.info)  # the link's instrument: one sentence says it is not here
    assert "predict_senses_forming" not in [r.key for r in at.radio]
