"""Every page in the fast tier, on the tiny zoo (tests/conftest.py): its default view and one changed
input, with no error and the section the input drives drawn. What the tiny models say is nonsense: the
slow tier checks the facts of real weights; this tier checks that every page's code runs, in seconds."""

from __future__ import annotations

import json
from pathlib import Path

import plotly.graph_objects as go
import plotly.io as pio
import pytest

import model_zoo
from tests.conftest import ROOT, all_text, chart, light_charts, open_page, shown

# Every page file but pages/0_class.py, which only hands a fresh server's first /class visit to app.py
PAGES = sorted(p.name for p in (ROOT / "pages").glob("*.py") if not p.name[0].isdigit())


def charts(at) -> set[str]:  # noqa: ANN001
    """The keys of the Plotly charts drawn (the part after the widget prefix)."""
    return {c.proto.id.rsplit("-", 1)[-1] for c in at.get("plotly_chart")}


def ok(at) -> None:  # noqa: ANN001
    """No exception or error on the page, and every chart as plotly's checks make it: the charts a page draws on
    every sentence are built unvalidated (charts.plain_figure), and a named colour scale left to plotly.js, for
    one, would draw other colours."""
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    for drawn in at.get("plotly_chart"):
        spec = json.loads(drawn.proto.spec)
        assert json.loads(pio.to_json(go.Figure(spec))) == spec, drawn.proto.id


@pytest.mark.parametrize("page", PAGES)
def test_every_page_opens_on_the_tiny_zoo(tiny_zoo: Path, page: str) -> None:
    ok(open_page(f"pages/{page}"))


def test_attention_each_view(tiny_zoo: Path) -> None:
    at = open_page("pages/attention.py")
    ok(at)
    assert at.get("iframe")  # the head view
    for tab in ("Model view", "Query · key", "Head summary"):
        at.session_state["view"] = tab
        ok(at.run())
    assert {"summary_first", "summary_entropy"} <= charts(at)  # the head summary's heatmaps
    at.text_input(key="text").input("The cat sat on the mat.").run()
    ok(at)


@pytest.mark.parametrize(
    ("model", "text", "drawn"),
    [
        ("glove-6b-50d", "king queen zzzz", "table"),
        ("minilm-l6-mlm", "the man went to the [MASK] .", "mask0"),
        ("smollm2-135m", "the man went to the", "plotly"),
        ("elmo-mini", "the man went to the", "forward"),
        ("minilm-l6", "the man went to the bank.", "no head"),
    ],
)
def test_playground_each_kind_of_model(tiny_zoo: Path, model: str, text: str, drawn: str) -> None:
    at = open_page("pages/playground.py", model=model, text=text)
    ok(at)
    if drawn == "table":
        assert at.table  # nearest neighbours, and a word outside the vocabulary said so
        assert "⚠" in str(at.table[0].value)
    elif drawn == "plotly":
        assert at.get("plotly_chart")
    elif drawn == "no head":  # the intro promises predictions: one line says why this model makes none
        assert "minilm-l6 predicts no words: it has no output head" in all_text(at)
        assert "smollm2-135m-mlm fills a [MASK] from both sides; smollm2-135m guesses the next token" in all_text(at)
    else:
        assert drawn in charts(at)


def test_one_hot_own_words(tiny_zoo: Path) -> None:
    at = open_page("pages/onehot.py")
    at.text_area(key="text").input("river bank money").run()
    ok(at)
    assert len(at.get("plotly_chart")) >= 2  # the one-hot matrix and the similarity matrix of these words
    assert not any("No class for" in shown(c.value) for c in at.caption)  # WordNet has all three
    at.text_area(key="text").input("the river was 银行").run()
    ok(at)
    said = [shown(c.value) for c in at.caption if "No class for" in shown(c.value)]
    assert len(said) == 1 and said[0].startswith("No class for the, 银, 行: WordNet lists English"), said
    assert any("was → be" in shown(c.value) for c in at.caption)  # an inflected form: its dictionary form's class


def test_embeddings_neighbours_and_analogy(tiny_zoo: Path) -> None:
    at = open_page("pages/embeddings.py")
    at.text_input(key="word").input("river").run()
    ok(at)
    at.text_input(key="a").input("man").run()
    ok(at)


def test_embeddings_strip_note_names_the_learners_own_closest_and_farthest_pair(tiny_zoo: Path) -> None:
    """The line under the vector strip is computed from the words typed, not written for the default ones."""
    import numpy as np

    import model_zoo

    words = ["river", "bank", "money", "water"]
    at = open_page("pages/embeddings.py")
    at.text_input(key="words").input(" ".join(words)).run()
    ok(at)
    vectors = model_zoo.load("glove-6b-50d").vectors(words)
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    pairs = sorted((float(unit[i] @ unit[j]), words[i], words[j]) for i in range(4) for j in range(i + 1, 4))
    (low, c, d), (high, a, b) = pairs[0], pairs[-1]
    said = [shown(c_.value) for c_ in at.caption if "No single number" in shown(c_.value)]
    assert said == [
        f"Of these words, “{a}” and “{b}” share the most colours (cosine {high:.2f}), “{c}” and “{d}” the "
        f"fewest ({low:.2f}). No single number means “royal” or “female”: meaning is spread over all of them."
    ]
    assert "king" not in said[0]
    at.text_input(key="words").input("river bank").run()  # two words: one pair, nothing to rank
    assert any("With three or more words" in shown(c_.value) for c_ in at.caption)


def test_elmo_own_text(tiny_zoo: Path) -> None:
    at = open_page("pages/elmo.py")
    at.text_input(key="lm_text").input("the man went to").run()
    ok(at)
    assert {"forward", "backward"} <= charts(at)


def test_elmo_says_in_one_line_where_its_lm_misses_the_lessons_word(tiny_zoo: Path) -> None:
    """After "hang" the lesson expects "out": a biLM that puts another word first (the tiny random one here)
    gets one line naming its first guess and where "out" stands, then the offline GPT's answer measured the
    same way where that GPT shows the point, else the classic to prefetch. (The shipped elmo-mini puts "out"
    first, so only this tier draws the line.)"""
    import model_zoo
    import serving
    from model_zoo.lessons import cloze

    text = "After work we like to hang"
    at = open_page("pages/elmo.py")
    at.text_input(key="lm_text").input(text).run()
    ok(at)
    elmo = model_zoo.load("elmo-mini")
    check = cloze.check(cloze.NEXT_WORDS_NAMED[text], elmo.next_words(text, elmo.vocab_size))
    lines = [shown(c.value) for c in at.caption if "does not show the lesson's point here" in shown(c.value)]
    if check.shows:  # a tiny model that happened to say "out" first: no line
        assert lines == []
        return
    (line,) = lines
    assert f"its first guess is “{check.first}”" in line
    assert (f"its guess number {check.rank} " in line) if check.rank else ("not among" in line)
    gpt = serving.lesson_next_word("smollm2-135m", text)
    if gpt is not None and gpt.shows:
        assert "smollm2-135m, a GPT pre-trained on trillions of tokens" in line
    else:
        assert "python -m model_zoo prefetch gpt2" in line


@pytest.mark.parametrize(("lang", "full_stop"), [("en", ". (full stop)"), ("zh", ".（英文句号）")])
def test_a_punctuation_mark_among_the_options_is_named(tiny_zoo: Path, lang: str, full_stop: str) -> None:
    """ELMo's "what comes after hang?" offers "." among its words: a lone dot was nearly invisible on a
    projector, so the option, and the answer where the model picks it, are written with the mark's name."""
    at = open_page("pages/elmo.py", lang=lang)
    options = at.radio(key="predict_elmo_hang").options
    assert full_stop in options and "out" in options and "." not in options
    if lang == "en":  # (AppTest writes a picked option with format_func outside the page's run, in English)
        at.radio(key="predict_elmo_hang").set_value(".").run()
        ok(at)
        assert full_stop in [m.value for m in at.metric]  # the learner's pick, beside the model's


def test_masked_lm_own_sentence(tiny_zoo: Path) -> None:
    at = open_page("pages/masked_lm.py")
    at.text_input(key="text").input("the man went to the [MASK] .").run()
    ok(at)


def test_gpt_writes(tiny_zoo: Path) -> None:
    at = open_page("pages/gpt.py")
    at.button(key="write").click().run()
    ok(at)


def test_gpt_says_an_empty_prompt_under_its_write_button(tiny_zoo: Path) -> None:
    """The sentence sat under the sampling settings, below a 900 px screen: Write seemed to do nothing."""
    at = open_page("pages/gpt.py")
    at.text_area(key="prompt").input("   ").run()
    at.button(key="write").click().run()
    main = next(b for b in at.main.children.values() if str(getattr(b.proto, "id", "")).endswith("main_output"))
    said = [e.value for e in main.children.values() if type(e).__name__ == "Info"]
    assert said and "The prompt is empty" in shown(said[0])


def test_gpt_blank_draws_the_left_candidates_from_their_own_pass(tiny_zoo: Path, monkeypatch) -> None:  # noqa: ANN001
    """The left context's candidates and the masked LM's bars come from one pass each and are drawn before
    the whole-sentence scores, which wait for the class's shared passes: when those fail, the candidates
    stay on screen with their whole-sentence columns empty, and one sentence says why."""
    import serving

    at = open_page("pages/gpt.py")
    ok(at)
    axes = chart(at, "sink")["layout"]  # the first-token heatmap names its axes, as Attention's head summary does
    assert (axes["xaxis"]["title"]["text"], axes["yaxis"]["title"]["text"]) == ("Head", "Layer")
    scored = at.dataframe[0].value
    assert scored["Rank, whole sentence"].notna().all()
    from_masked = scored["Rank, left only"].isna().any()  # a masked LM's word: one line says why its cells are —
    assert from_masked == ("proposed that word from both sides; it was not among the causal LM" in all_text(at))

    def damaged(*args: object) -> None:
        raise model_zoo.BadCheckpoint("weights.safetensors", "a tensor is cut short")

    monkeypatch.setattr(serving, "left_vs_whole", damaged)
    at.text_input(key="blank_text").input("The cat sat on the ___ all day.").run()
    assert not at.exception
    left = at.dataframe[0].value
    assert len(left) >= 1 and left["Rank, whole sentence"].isna().all()
    assert list(left["Rank, left only"].dropna()) == sorted(left["Rank, left only"].dropna())
    assert at.dataframe[0].proto.placeholder == "—"  # a score not in (or a word the left did not rank), not "None"
    assert "masked" in charts(at)
    assert "cannot be loaded: a tensor is cut short" in shown(at.info[-1].value)
    assert "scoring the whole sentence" not in all_text(at)


def test_gpt_blank_finding_says_what_the_table_shows(tiny_zoo: Path, monkeypatch) -> None:  # noqa: ANN001
    """The sentence under the blank's table names the two first choices as the table ranks them, and gives the
    lecture notes' point (the words after the blank change the answer) only where they did."""
    import dataclasses

    import serving

    def finding(at) -> str:  # noqa: ANN001
        return next(m.value for m in at.markdown if "From the left alone" in m.value)

    at = open_page("pages/gpt.py")
    ok(at)
    table = at.dataframe[0].value
    left = table.loc[table["Rank, left only"] == table["Rank, left only"].min(), "Candidate"].iloc[0]
    whole = table.loc[table["Rank, whole sentence"] == 1, "Candidate"].iloc[0]
    said = finding(at)
    assert f"first guess is “{left}”" in said
    point, same = "lecture notes' point" in said, "did not change its choice" in said
    assert point == (left != whole) and same == (left == whole)
    real = serving.left_vs_whole

    def reranked(same: bool):  # noqa: ANN202
        def rows(*args: object) -> list:  # the model's own rows, the whole ranks turned so the two firsts agree or not
            found = real(*args)
            by_left = sorted((r for r in found if r.left_rank), key=lambda r: r.left_rank)
            order = by_left if same else by_left[1:] + by_left[:1]
            order += [r for r in found if not r.left_rank]
            return [dataclasses.replace(r, whole_rank=order.index(r) + 1) for r in found]

        return rows

    for same in (True, False):
        monkeypatch.setattr(serving, "left_vs_whole", reranked(same))
        at.text_input(key="blank_text").input(f"The cat sat on the ___ all day{'.' if same else '!'}").run()
        ok(at)
        said = finding(at)
        assert ("did not change its choice" in said) == same and ("lecture notes' point" in said) == (not same), said


def test_gpt_blank_with_two_blanks_says_to_put_one(tiny_zoo: Path) -> None:
    """A second ___ would be scored as the text "___" in every whole sentence: the page asks for one blank."""
    at = open_page("pages/gpt.py")
    at.text_input(key="blank_text").input("She opened the door and ___ walked in with a ___.").run()
    ok(at)
    assert any("This sentence has 2 blanks" in shown(i.value) for i in at.info)
    assert not any("Rank, whole sentence" in d.value.columns for d in at.dataframe)


def test_bert_inputs_a_pair(tiny_zoo: Path) -> None:
    at = open_page("pages/bert_inputs.py")
    at.text_input(key="b").input("the river bank .").run()
    ok(at)


def test_transformer_own_text(tiny_zoo: Path) -> None:
    at = open_page("pages/transformer.py")
    at.text_input(key="tf_text").input("the man went to the bank .").run()
    ok(at)


def test_probing_another_task(tiny_zoo: Path) -> None:
    at = open_page("pages/probing.py")
    ok(at)
    assert "weights" in charts(at)


def test_senses_own_sentence(tiny_zoo: Path) -> None:
    at = open_page("pages/senses.py")
    at.text_input(key="mine").input("we sat on the river bank .").run()
    ok(at)


def test_using_bert_token_diagram_shows_the_tokens_the_tagger_reads(
    tiny_zoo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where the page's encoder is too big to probe here, the tagger reads another model: its diagram is drawn
    with that model's tokens (it showed the page model's byte-level pieces under "The tagger reads minilm-l6")."""
    import serving

    monkeypatch.setattr(serving, "tagger_model", lambda name: "minilm-l6")
    at = open_page("pages/using_bert.py", ner_text="we sat .")
    ok(at)
    labels = [a["text"] for a in chart(at, "token_diagram")["layout"]["annotations"]]
    assert "sat" in labels and "␣sat" not in labels and "[CLS]" in labels
    assert "The tagger reads minilm-l6" in all_text(at)


def test_using_bert_qa_diagram_dots_start_and_end_with_the_passage_of_a_reader_without_segments(
    tiny_zoo: Path,
) -> None:
    """The default reader (a decoder made a masked LM) has no segment ids: its diagram still tells the passage
    from the question, and draws the start and end vectors over the passage's tokens (it drew neither)."""
    at = open_page("pages/using_bert.py")
    ok(at)
    spec = chart(at, "qa_diagram")
    labels = [a["text"] for a in spec["layout"]["annotations"]]
    assert any("start vector" in label for label in labels) and any("end vector" in label for label in labels)
    assert any(label.startswith("d") and label[1:].isdigit() for label in labels)  # the passage's tokens, d1 ...
    # a question and a passage abridged to ten token boxes in all (a phone reads 11 px text in them), the
    # passage's first and last among them
    boxes = [s for s in spec["layout"]["shapes"] if s["type"] == "rect" and s["y0"] == 0.0]
    assert len(boxes) == 10 and labels.count("…") >= 2 and "d1" in labels


def test_using_bert_a_question(tiny_zoo: Path) -> None:
    at = open_page("pages/using_bert.py")
    lecture = "Why these are not the lecture's numbers"  # a note on the lecture's passage, shown under it only
    assert lecture in all_text(at)
    at.text_input(key="question").input("where did we sit ?").run()
    ok(at)
    assert "qa_curves" in charts(at) and lecture in all_text(at)
    at.text_area(key="passage").input("We sat on the river bank. The water was cold.").run()
    ok(at)
    assert "qa_curves" in charts(at) and lecture not in all_text(at)


def test_transfer_race_trains_on_a_click(tiny_zoo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The race's button runs it and the page draws what it measured: two of its five draw sizes and two passes
    here (25 s of the tiny ELMo's steps for the whole race; its schedule is the lesson's, not the page's)."""
    from model_zoo.lessons import transfer

    monkeypatch.setattr(transfer, "SIZES", transfer.SIZES[:2])
    monkeypatch.setattr(transfer, "EPOCHS", 2)
    at = open_page("pages/transfer.py")
    at.button(key="transfer_train").click().run(timeout=300)
    ok(at)
    at.radio(key="predict_transfer_first").set_value("pretrained").run()  # the result quotes the first point
    assert "transfer_chart" in light_charts(at) and "%" in all_text(at)


def test_masked_lm_rollout_reads_the_recipe_sentence(tiny_zoo: Path) -> None:
    at = open_page("pages/masked_lm.py")
    ok(at)
    assert {"rollout", "mask0"} <= charts(at)  # the sections fed by another section's input are drawn too
    ticks = chart(at, "rollout")["data"][0]["x"]  # the byte-level BPE's Ġ shown as the ␣ the page uses elsewhere
    assert any("␣" in tick for tick in ticks) and not any("Ġ" in tick for tick in ticks)
    assert "Your pair as the model read it" in all_text(at) and "Ġ" not in all_text(at)


def test_inside_every_view_on_an_encoder_and_a_decoder(tiny_zoo: Path) -> None:
    """Inside the model: the lens grid first, a token's path, a knock-out with its sentence, and every head's
    map after one click, on the masked LM (the default) and on the causal LM (which reads before [MASK])."""
    for model in ("smollm2-135m-mlm", "smollm2-135m"):
        at = open_page("pages/inside.py", model=model)
        ok(at)
        assert {"grid_Logit lens", "answer_curve", "block_sizes"} <= charts(at), model
        assert "knocked_top" not in charts(at)  # lazy tabs: only the open one runs
        assert f"{model}'s answer is" in all_text(at)
        # where the answer is read, and why there: the token before the [MASK], or the last one read
        why = "the one before the [MASK]: smollm2-135m-mlm is a decoder" if model.endswith("mlm") else "the last before"
        assert why in all_text(at), model
        at.session_state["inside_view"] = "Knock it out"
        ok(at.run())
        assert "knocked_top" in charts(at) and "Without the MLP of layer 1" in all_text(at)
        at.session_state["inside_view"] = "Every head knocked out, next to where it looks"
        ok(at.run())
        assert {"effects", "weights"}.isdisjoint(charts(at))  # the head map runs on a click only
        at.button(key="heads_run").click().run()
        ok(at)
        assert {"effects", "weights"} <= charts(at)
        assert "Spearman" in all_text(at) or "cannot be compared" in all_text(at)
        at.session_state["inside_view"] = "One token's path through a block"
        at.run()
        options = at.selectbox(key="block_token").options  # the tokens the model reads: a causal LM's stop at [MASK]
        assert ("[MASK]" in "".join(options)) == (model == "smollm2-135m-mlm"), options
        at.selectbox(key="block_token").set_value(len(options) - 1).run()
        ok(at)
        at.session_state["inside_view"] = "Knock it out"
        at.run()
        at.selectbox(key="part").set_value("head").run()
        at.number_input(key="knock_head").set_value(2).run()
        ok(at)
        assert "Without head 2 of layer 1" in all_text(at)


def test_inside_knocking_one_part_after_another_reads_the_intact_model_once(tiny_zoo: Path, monkeypatch) -> None:  # noqa: ANN001
    """A learner trying part after part on one sentence pays the knocked pass alone: the intact answer it is
    measured against is read once for the sentence (and is the same as a knock-out reading it itself)."""
    from model_zoo.lessons import inside

    at = open_page("pages/inside.py", text="A river [MASK] is made of sand.")
    ok(at)
    intact: list[str] = []
    own = inside.intact_answer
    monkeypatch.setattr(inside, "intact_answer", lambda model, text: intact.append(text) or own(model, text))
    at.session_state["inside_view"] = "Knock it out"
    ok(at.run())
    for layer in (1, 2):
        for part in ("mlp", "heads", "layer"):
            at.selectbox(key="part").set_value(part).run()
            at.number_input(key="knock_layer").set_value(layer).run()
            ok(at)
    assert intact == ["A river [MASK] is made of sand."]
    import serving

    shown_knock = inside.knock_out(
        serving.loaded("smollm2-135m-mlm", inside.Encoder), intact[0], inside.Knock("layer", 1)
    )
    assert f"{shown_knock.before:.1%}" in all_text(at)  # the page's intact probability: the model's own


def test_inside_a_new_sentence_opens_at_its_answer(tiny_zoo: Path, monkeypatch) -> None:  # noqa: ANN001
    """A token picked on one sentence is not carried to the next (its number would name another word): the new
    sentence's path opens at its answer, as a link to it would, read from the pass its lenses made."""
    from model_zoo.lessons import inside

    river = "We sat on the river [MASK] and watched the boats."
    fresh = open_page("pages/inside.py", text=river)
    at = open_page("pages/inside.py")
    at.selectbox(key="block_token").set_value(0).run()
    ok(at)
    passes: list[int] = []
    own_pass = inside.block_path
    monkeypatch.setattr(inside, "block_path", lambda *a, **k: passes.append(1) or own_pass(*a, **k))
    at.text_input(key="text").set_value(river).run()
    ok(at)
    assert at.selectbox(key="block_token").value == fresh.selectbox(key="block_token").value != 0
    assert at.query_params["block_token"] == fresh.query_params["block_token"] and not passes
    at.selectbox(key="block_token").set_value(1).run()  # a token the learner picks on this sentence stays
    ok(at)
    assert at.selectbox(key="block_token").value == 1


def test_inside_without_a_blank_says_so_for_a_masked_lm(tiny_zoo: Path) -> None:
    at = open_page("pages/inside.py", text="The river was muddy after the rain.")
    assert not at.exception
    said = [shown(i.value) for i in at.info]
    assert sum("There is no [MASK] in the text" in s for s in said) == 1, said  # one sentence, once, no traceback


def test_a_class_server_in_bf16_says_so_under_each_models_scores(tiny_zoo: Path, monkeypatch) -> None:  # noqa: ANN001
    """CONTEXTLAB_BF16 (scripts/serve.py sets `auto`): the masked LM and the reader on its weights multiply in
    bf16, and their training boxes add one line with the scores measured again in bf16 (bf16.json); served in
    fp32 (make run) they say nothing of it, and where bf16 was never measured they say that."""
    import components.training
    import serving
    from model_zoo.onednn import BF16_VAR
    from model_zoo.trained import in_bf16

    def lines(bf16: str) -> tuple[str, str]:
        monkeypatch.setenv(BF16_VAR, bf16)
        serving.load_model.clear()  # a server starts with its setting: the models load again
        masked = open_page("pages/masked_lm.py")
        reader = open_page("pages/using_bert.py")
        ok(masked)
        ok(reader)
        return all_text(masked), all_text(reader)

    masked, reader = lines("0")
    assert "bf16" not in masked and "bf16" not in reader
    masked, reader = lines("1")
    mlm, qa = in_bf16(model_zoo.get_card("smollm2-135m-mlm")), in_bf16(model_zoo.get_card("smollm2-135m-qa"))
    assert mlm is not None and qa is not None  # measured for the shipped weights
    assert f"thirty sentences take {mlm.seconds_bf16:.2f} s instead of {mlm.seconds_fp32:.2f} s" in masked
    assert f"its first guess is fp32's on {mlm.same} of {mlm.items}" in masked
    assert f"its answer is fp32's on {qa.same} of {qa.items}" in reader
    monkeypatch.setattr(components.training, "in_bf16", lambda card: None)
    masked, reader = lines("1")
    assert "not yet again in bf16" in masked and "not yet again in bf16" in reader


def test_a_class_server_in_bf16_says_so_on_the_gpt_lesson(tiny_zoo: Path, monkeypatch) -> None:  # noqa: ANN001
    """The GPT lessons' SmolLM2 multiplies in bf16 on a class's server too: the page says so in one line with
    what was measured against fp32 (assets/eval/smollm2-135m.bf16.json); nothing in fp32; unmeasured, that."""
    import components.training
    import serving
    from model_zoo.onednn import BF16_VAR
    from model_zoo.trained import causal_in_bf16

    def page(bf16: str) -> str:
        monkeypatch.setenv(BF16_VAR, bf16)
        serving.load_model.clear()  # a server starts with its setting: the models load again
        at = open_page("pages/gpt.py")
        ok(at)
        assert serving.loaded("smollm2-135m", model_zoo.CausalLM).runs_bf16 == (bf16 == "1")
        return all_text(at)

    assert "bf16" not in page("0")
    said, check = page("1"), causal_in_bf16("smollm2-135m")
    assert check is not None  # measured for the pack's model
    assert f"its next word is fp32's at {check.same_next:,} of {check.positions:,} positions" in said
    assert f"its perplexity is {check.perplexity_bf16:.1f} (fp32: {check.perplexity_fp32:.1f})" in said
    monkeypatch.setattr(components.training, "causal_in_bf16", lambda name: None)
    assert "were not measured against fp32" in page("1")


@pytest.mark.parametrize("text", ["我把钱存进了银行。", "<b>hi</b>"])
def test_onehot_asks_which_word_is_nearest_only_among_words_glove_knows(text: str, tiny_zoo: Path) -> None:
    """A question the model cannot answer is not asked: "我" has no GloVe vector, and "<b>hi</b>" leaves one
    word to choose ("hi" beside "b"). One line says why there is no guess."""
    at = open_page("pages/onehot.py", text=text)
    ok(at)
    assert not [r for r in at.radio if r.key == "predict_onehot_nearest"]
    assert "No guess here: glove-6b-50d has vectors for too few of your words" in all_text(at)
    at = open_page("pages/onehot.py", text="dog 我 cat car")  # a word it lacks is not offered; the rest are
    ok(at)
    assert list(at.radio(key="predict_onehot_nearest").options) == ["car", "cat"]


def widget_values(at) -> dict[str, object]:  # noqa: ANN001
    """Every keyed box and picker of a page run, by key: what the learner sees in them."""
    kinds = ("text_input", "text_area", "multiselect", "selectbox", "radio", "slider")
    return {w.key: w.value for kind in kinds for w in at.get(kind) if getattr(w, "key", None)}


# (the page left, the page opened from its sidebar): pages whose boxes share keys (text, a, b, words, models)
MOVES = [
    ("masked_lm.py", "attention.py"),
    ("senses.py", "probing.py"),
    ("embeddings.py", "elmo.py"),
    ("embeddings.py", "bert_inputs.py"),
    ("masked_lm.py", "inside.py"),
    ("attention.py", "masked_lm.py"),
]


@pytest.mark.parametrize(("left", "opened"), MOVES, ids=lambda p: p.removesuffix(".py"))
def test_a_page_opened_from_another_shows_its_own_defaults(tiny_zoo: Path, left: str, opened: str) -> None:
    """What one page's boxes held (its defaults, a sentence the learner typed, a value its example button set)
    never fills another page's boxes of the same key: the page opens as it opens from its own link. It did not:
    Attention opened on Masked LM's sentence, BERT inputs' sentences A and B on Word embeddings' "man" and "king",
    Probing with no model picked after Word senses, and ELMo stopped with an error box."""
    own = widget_values(open_page(f"pages/{opened}"))
    at = open_page(f"pages/{left}")
    for box in at.text_input:
        if box.key in own and isinstance(own[box.key], str):
            box.input(f"{box.value} again").run()  # the learner's own text, where the next page has that box too
    ok(at)
    at.switch_page(f"pages/{opened}").run()
    ok(at)
    assert widget_values(at) == own


def test_an_empty_picker_asks_in_the_learner_s_language(tiny_zoo: Path) -> None:
    """The model and task pickers' placeholder (what an emptied picker says) in Chinese too, not Streamlit's
    "Choose options"."""
    at = open_page("pages/probing.py", lang="zh")
    ok(at)
    assert {at.multiselect(key=k).proto.placeholder for k in ("models", "tasks")} == {"选择一个或多个"}
    senses = open_page("pages/senses.py", lang="zh")
    assert senses.multiselect(key="models").proto.placeholder == "选择一个或多个"


def test_a_plain_figure_writes_what_plotly_writes_and_reads_back_as_a_figure() -> None:
    """A chart built unchecked (charts.plain_figure) is written out as plotly's own figure writes it, template
    and numpy arrays included, without plotly building it; read or changed through plotly, it is that figure."""
    import numpy as np
    import streamlit.elements.plotly_chart  # noqa: F401  Streamlit's template, plotly's default, as on a page
    from _plotly_utils.utils import convert_to_base64

    from components.charts import plain_figure

    def build() -> go.Figure:
        return plain_figure(
            [
                {
                    "type": "bar",
                    "x": np.array([0.5, 0.25]),
                    "y": ["a", "b", None],
                    "marker": {"color": np.array([1.0, 2.0]), "line": None},
                }
            ],
            {"title": {"text": "Top words"}, "height": 300, "xaxis": {"range": [0, 1]}},
        )

    theirs = go.Figure(build()._plain, _validate=False)
    expected = {"data": [dict(trace) for trace in theirs._data], "layout": dict(theirs._layout)}
    convert_to_base64(expected)
    figure = build()
    assert json.loads(pio.to_json(figure.to_dict())) == json.loads(pio.to_json(expected))
    assert figure.to_dict() == figure.to_dict()  # written twice, the same (its arrays stay the figure's)
    assert list(figure.data[0].y) == ["a", "b", None] and figure.layout.title.text == "Top words"
    figure.update_layout(height=420)
    assert figure.to_dict()["layout"]["height"] == 420


def test_no_box_of_any_page_drops_a_paste_it_cannot_hold(tiny_zoo: Path) -> None:
    """Streamlit's max_chars drops a longer paste in the browser without a word (streamlit/streamlit#9221): no
    box of any page has one, the views a link opens included (the class page's forms: tests/test_class_page.py).
    Each box says in one sentence what it did with a text too long for it (below, and the tests it names)."""
    opened = [open_page(f"pages/{page}") for page in PAGES]
    opened.append(open_page("pages/senses.py", tool="axes", axes_xa="word", axes_xb="word"))
    boxes = [(w.key, w.label) for at in opened for w in [*at.text_input, *at.text_area]]
    assert len(boxes) > 40 and ("axes_xb_word_bank", "The word") in boxes and ("axes_y_to", "to") in boxes
    assert not [
        (w.key, w.proto.max_chars) for at in opened for w in [*at.text_input, *at.text_area] if w.proto.max_chars
    ]


def test_a_paste_longer_than_a_box_is_cut_to_what_it_holds_and_said_once(tiny_zoo: Path) -> None:
    """Streamlit's max_chars ignored a paste over its limit without a word (the box stayed as it was); the
    box now keeps the paste's first 2,000 characters, in the box and the address, and one sentence says so."""
    pasted = "the man went to the bank . " * 100  # 2,700 characters; the Transformer's box holds 2,000
    at = open_page("pages/transformer.py")
    at.text_input(key="tf_text").input(pasted).run()
    ok(at)
    assert at.text_input(key="tf_text").value == pasted[:2000] == at.query_params["tf_text"]
    assert "The box holds 2,000 characters: it kept the first 2,000 of the 2,700 pasted." in all_text(at)
    at.run()
    assert "pasted" not in all_text(at)  # said once, when it was cut
    linked = open_page("pages/transformer.py", tf_text=pasted)
    ok(linked)
    assert "This link's tf_text is 2700 characters long" in all_text(linked)  # the rest: test_share_links_pages
    assert linked.query_params["tf_text"] == pasted[:2000]


def test_a_long_paste_keeps_the_blank_the_page_reads(tiny_zoo: Path) -> None:
    """300 words with GPT's blank near word 150: the box kept its first 300 characters, the blank with the rest,
    and the page said both that and "There is no ___ in the text". It now keeps the 300 around the blank, says
    so in one sentence, and fills it. A link's long text to Inside the model keeps its [MASK] the same way."""
    from components.url import kept_part

    words = [f"word{i}" for i in range(300)]
    pasted = " ".join([*words[:150], "___", *words[150:]])
    at = open_page("pages/gpt.py")
    at.text_input(key="blank_text").input(pasted).run()
    ok(at)
    kept = at.text_input(key="blank_text").value
    assert "___" in kept and len(kept) <= 300 and kept in pasted and not kept.startswith(" ")
    said = all_text(at)
    assert f"The box holds 300 characters: of the {len(pasted):,} pasted it kept the 300 around the first ___." in said
    assert "There is no ___" not in said and "kept the first" not in said
    linked = open_page("pages/inside.py", text=pasted.replace("___", "[MASK]"))
    ok(linked)
    assert "[MASK]" in linked.query_params["text"] and "reads the 300 around its first [MASK]" in all_text(linked)
    emptied = open_page("pages/gpt.py")
    emptied.text_input(key="blank_text").input("  ").run()
    ok(emptied)
    assert "The text is empty: type something first." in all_text(emptied) and "There is no" not in all_text(emptied)
    assert kept_part("a b [MASK] c", 300, "[MASK]") == "a b [MASK] c"  # a text that fits is kept whole
    assert kept_part("x" * 400, 300, "___") == "x" * 300  # no mark: the first characters
