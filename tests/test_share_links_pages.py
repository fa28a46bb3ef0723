"""Share links on every page (issue 33): each page opened from a link with non-default values for its inputs
shows them in its widgets and uses them in what it draws; a value the page cannot take gets one sentence
(shown as text), never a silent default. Fast tier: the tiny zoo (tests/conftest.py), whose models say
nonsense: what is checked is that the link's values reach the widgets and the output."""

from __future__ import annotations

import json
from pathlib import Path

import serving
from components.i18n import translate
from tests.conftest import all_text, light_chart_elements, open_page, shown, title_of


def infos(at) -> str:  # noqa: ANN001
    """The info boxes as a reader sees them."""
    return " ".join(shown(str(x.value)) for x in at.info)


def ok(at) -> None:  # noqa: ANN001
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    assert "does not know" not in infos(at) and "This link" not in infos(at), infos(at)


def charts(at) -> dict[str, dict]:  # noqa: ANN001
    """Each Plotly chart drawn, by its key (the part after the widget prefix)."""
    return {c.proto.id.rsplit("-", 1)[-1]: json.loads(c.proto.spec) for c in at.get("plotly_chart")}


def title(at, key: str) -> str:  # noqa: ANN001
    """A chart's title as a reader reads it: its lines (wrapped to fit a phone) joined by spaces."""
    return title_of(charts(at)[key])


def open_tab(at, label: str):  # noqa: ANN001, ANN201
    """Click one of the attention page's lazy tabs (only the open one runs)."""
    at.session_state["view"] = label
    return at.run(timeout=300)


# -- every page from a link with non-default values -------------------------------------------------------
def test_home_opens_in_the_links_language(tiny_zoo: Path) -> None:
    at = open_page("pages/home.py", lang="zh")
    ok(at)
    assert at.radio(key="lang").value == "zh" and at.title[0].value == translate("home.title", "zh")


def test_onehot_link(tiny_zoo: Path) -> None:
    at = open_page("pages/onehot.py", text="river bank money", glove="true")
    ok(at)
    assert at.text_area(key="text").value == "river bank money" and at.toggle(key="glove").value is True
    text = all_text(at)
    assert "cos(river, bank) =" in text  # the link's words, in its order
    assert title(at, "similarity") == translate("onehot.sim_glove_title", "en")  # GloVe's cosines, not one-hot's


def test_embeddings_link(tiny_zoo: Path) -> None:
    query = {"words": "queen water", "word": "river", "a": "man", "b": "king", "c": "woman"}
    at = open_page("pages/embeddings.py", **query, map="king queen man woman river bank", proj="umap")
    ok(at)
    for key, value in query.items():
        assert at.text_input(key=key).value == value
    assert at.radio(key="proj").value == "umap" and at.query_params["proj"] == "umap"
    assert title(at, "nn") == "Words closest to “river” (cosine similarity)"
    assert "man is to king as woman is to" in all_text(at)
    assert title(at, "map_fig") == "UMAP map of 6 words"


def test_embeddings_link_sets_the_word2vec_knobs(tiny_zoo: Path) -> None:
    query = {"w2v_dim": "25", "w2v_window": "3", "w2v_negative": "2", "w2v_epochs": "1", "w2v_watch": "bank"}
    at = open_page("pages/embeddings.py", **query)
    ok(at)
    assert at.select_slider(key="w2v_dim").value == 25
    assert [at.slider(key=k).value for k in ("w2v_window", "w2v_negative", "w2v_epochs")] == [3, 2, 1]
    assert at.text_input(key="w2v_watch").value == "bank"
    assert {k: at.query_params[k] for k in query} == query  # kept as they are
    at.button(key="w2v_train").click().run(timeout=300)  # about 6 s here
    ok(at)
    assert "25 dimensions, 1 epochs" in shown(at.success[0].value)
    assert "Nearest to “bank”" in at.table[0].value.columns


def test_elmo_link(tiny_zoo: Path) -> None:
    query = {
        "lm_text": "we sat on the",
        "sentence": "we sat on the river bank .",
        "word": "river",
        "w0": "4",
        "w1": "-4",
        "w2": "-4",
        "gamma": "2",
        "a": "the man went to the bank .",
        "b": "we sat on the river bank .",
        "pair_word": "the",
    }
    at = open_page("pages/elmo.py", **query)
    ok(at)
    assert at.text_input(key="lm_text").value == "we sat on the"
    assert "we sat on the" in title(at, "forward")
    picker = next(s for s in at.selectbox if s.key.startswith("position-"))
    assert picker.format_func(picker.value) == "5. river"
    assert title(at, "strip").startswith("“river”")
    assert [at.slider(key=k).value for k in ("w0", "w1", "w2", "gamma")] == [4.0, -4.0, -4.0, 2.0]
    assert "token 1.00" in all_text(at) and "γ = 2.0" in all_text(at)  # the weights' softmax: all on the token layer
    assert at.selectbox(key="pair_word").value == "the" and "“the”" in title(at, "cosines")


def test_attention_link(tiny_zoo: Path) -> None:
    query = {"model": "minilm-l6-mlm", "text": "the man went to the bank .", "text_b": "we sat on the river bank ."}
    at = open_page("pages/attention.py", **query, layer="2", head="3", query="bank", summary_source="examples")
    ok(at)
    assert at.selectbox(key="model").value == "minilm-l6-mlm"
    assert at.text_input(key="text").value == query["text"] and at.text_input(key="text_b").value == query["text_b"]
    open_tab(at, "Query · key")
    ok(at)
    assert at.slider(key="layer").value == 2 and at.slider(key="head").value == 3
    picked = at.selectbox(key="query")
    assert picked.format_func(picked.value).endswith(": bank")
    assert title(at, "qk_matrix").startswith("Layer 2, head 3")
    assert at.query_params["query"] == "bank"
    open_tab(at, "Head summary")
    ok(at)
    assert at.radio(key="summary_source").value == "examples" and at.query_params["summary_source"] == "examples"
    assert "Measured on 300 sentence(s)" in all_text(at)


def test_inside_link(tiny_zoo: Path) -> None:
    text = "the man went to the [MASK] ."
    query = {"model": "minilm-l6-mlm", "text": text, "block_layer": "2", "block_token": "man"}
    at = open_page("pages/inside.py", **query, part="head", knock_layer="2", knock_head="3", mode="mean")
    ok(at)
    assert at.selectbox(key="model").value == "minilm-l6-mlm" and at.text_input(key="text").value == text
    assert at.slider(key="block_layer").value == 2
    picked = at.selectbox(key="block_token")
    assert picked.format_func(picked.value).endswith(": man")
    assert title(at, "block_sizes").startswith("Block 2, token “man”")
    at.session_state["inside_view"] = "Knock it out"
    at.run()
    assert at.selectbox(key="part").value == "head" and at.radio(key="mode").value == "mean"
    assert at.number_input(key="knock_layer").value == 2 and at.number_input(key="knock_head").value == 3
    assert "Without head 3 of layer 2" in all_text(at)
    at.radio(key="mode").set_value("zero").run()
    assert at.query_params["mode"] == "zero"


def test_bert_inputs_link(tiny_zoo: Path) -> None:
    at = open_page("pages/bert_inputs.py", model="minilm-l6-mlm", a="the man went to the bank .", b="we sat .")
    ok(at)
    assert at.selectbox(key="model").value == "minilm-l6-mlm"
    assert at.text_input(key="a").value == "the man went to the bank ." and at.text_input(key="b").value == "we sat ."
    tokens = list(at.dataframe[0].value.iloc[:, 0])
    assert tokens == ["[CLS]", "the", "man", "went", "to", "the", "bank", ".", "[SEP]", "we", "sat", ".", "[SEP]"]


def test_masked_lm_link(tiny_zoo: Path) -> None:
    query = {"model": "minilm-l6-mlm", "text": "the man went to the [MASK] .", "top_k": "4"}
    at = open_page("pages/masked_lm.py", **query, mask_pick="man", recipe_text="we sat on the river bank .")
    ok(at)
    assert at.selectbox(key="model").value == "minilm-l6-mlm" and at.slider(key="top_k").value == 4
    assert len(charts(at)["mask0"]["data"][0]["y"]) == 4  # four guesses drawn for the one [MASK]
    assert at.text_input(key="recipe_text").value == "we sat on the river bank ."
    assert at.selectbox(key="mask_pick").value == "man"
    at.button[[b.label for b in at.button].index(translate("mlm.mask_it", "en"))].click().run()
    ok(at)
    assert at.text_input(key="text").value == "the [MASK] went to the [MASK] ."  # the link's word is the one hidden


def test_masked_lm_link_sets_the_pair(tiny_zoo: Path) -> None:
    at = open_page("pages/masked_lm.py", nsp_a="we sat on the river bank .", nsp_b="the man went to the bank .")
    ok(at)
    assert at.text_input(key="nsp_a").value == "we sat on the river bank ."
    assert at.text_input(key="nsp_b").value == "the man went to the bank ."
    pair = next(line for line in all_text(at).splitlines() if line.startswith("Your pair as the model read it"))
    assert "river" in pair  # sentence A is the link's, not the page's store and milk


def test_playground_link(tiny_zoo: Path) -> None:
    at = open_page("pages/playground.py", model="minilm-l6-mlm", text="the man went to the bank .", layer="1")
    ok(at)
    assert at.selectbox(key="model").value == "minilm-l6-mlm" and at.slider(key="layer").value == 1
    titles = [title_of(c) for c in charts(at).values()]
    assert "Cosine similarity between token vectors at layer 1" in titles
    assert at.query_params["layer"] == "1"


def test_probing_link(tiny_zoo: Path) -> None:
    query = {"models": "minilm-l6,elmo-mini", "tasks": "pos,agreement", "retrain_model": "elmo-mini"}
    at = open_page("pages/probing.py", **query, retrain_task="agreement", seed="7")
    ok(at)
    assert at.multiselect(key="models").value == ["minilm-l6", "elmo-mini"]
    assert at.multiselect(key="tasks").value == ["pos", "agreement"]
    assert at.selectbox(key="retrain_model").value == "elmo-mini"
    assert at.selectbox(key="retrain_task").value == "agreement" and at.number_input(key="seed").value == 7
    assert at.query_params["retrain_model"] == "elmo-mini" and at.query_params["seed"] == "7"
    at.button(key="retrain").click().run(timeout=300)  # about 13 s here
    ok(at)
    assert "Retrained Subject number on elmo-mini with seed 7" in shown(at.success[0].value)


def test_senses_link(tiny_zoo: Path) -> None:
    query = {"word": "stick", "models": "glove-6b-50d,minilm-l6", "layer": "1", "method": "UMAP"}
    at = open_page("pages/senses.py", **query, neighbours="9", min_dist="0.3", seed="5", mine="a stick of wood .")
    ok(at)
    assert at.selectbox(key="word").value == "stick" and at.multiselect(key="models").value == [
        "glove-6b-50d",
        "minilm-l6",
    ]
    assert at.slider(key="layer").value == 1 and at.radio(key="method").value == "umap"
    assert [at.slider(key="neighbours").value, at.slider(key="min_dist").value, at.number_input(key="seed").value] == [
        9,
        0.3,
        5,
    ]
    assert at.text_input(key="mine").value == "a stick of wood ."
    assert at.query_params["models"] == "glove-6b-50d,minilm-l6" and at.query_params["method"] == "umap"
    maps = [json.loads(c.proto.bytes).get("title") for c in light_chart_elements(at)]  # the page's own SVG charts
    assert maps[:2] == ["glove-6b-50d · one vector per word", "minilm-l6 · layer 1 of 2"]
    assert "Every sentence gives GloVe the same vector for “stick”" in all_text(at)


def test_transformer_link_with_another_model(tiny_zoo: Path) -> None:
    at = open_page("pages/transformer.py", model="minilm-l6-mlm", tf_text="the man went to the bank .", tf_word="man")
    ok(at)
    assert at.selectbox(key="model").value == "minilm-l6-mlm"
    assert "“man”" in title(at, "tf_reach") and "minilm-l6-mlm" in title(at, "tf_reach")


def test_gpt_link(tiny_zoo: Path) -> None:
    query = {"prompt": "the man went to the", "strategy": "top_k", "top_k": "5", "gen_seed": "7", "max_tokens": "3"}
    texts = {"mask_text": "we sat on the river bank .", "product_text": "the man went to the bank ."}
    at = open_page("pages/gpt.py", **query, temperature="0.5", top_p="0.5", **texts)
    ok(at)
    assert at.text_area(key="prompt").value == "the man went to the" and at.radio(key="strategy").value == "top_k"
    assert [at.number_input(key="top_k").value, at.number_input(key="gen_seed").value] == [5, 7]
    assert [at.slider(key=k).value for k in ("temperature", "top_p", "max_tokens")] == [0.5, 0.5, 3]
    for key, value in texts.items():
        assert at.text_input(key=key).value == value
    assert "river" in json.dumps(charts(at)["causal_mask"]) and "bank" in json.dumps(charts(at)["factors"])
    at.button(key="write").click().run(timeout=120)
    ok(at)
    assert at.code[0].value.startswith("the man went to the") and 1 <= len(at.dataframe[0].value) <= 3


def test_using_bert_link(tiny_zoo: Path) -> None:
    query = {"task": "spam", "pooling": "mean", "sentence_spam": "win money now !", "ner_text": "we sat ."}
    pair = {"premise": "the man went to the bank .", "hypothesis": "a man went ."}
    at = open_page("pages/using_bert.py", **query, **pair, question="who went ?", ml_own="我们")
    ok(at)
    assert at.radio(key="task").value == "spam" and at.radio(key="pooling").value == "mean"
    assert (
        at.text_input(key="sentence_spam").value == "win money now !"
        and at.text_input(key="ner_text").value == "we sat ."
    )
    for key, value in pair.items():
        assert at.text_input(key=key).value == value
    assert at.text_input(key="question").value == "who went ?"
    guesses = serving.classify("smollm2-135m-mlm", "spam", "mean", "win money now !")  # the head the page trained
    assert charts(at)["sentence_bars"]["data"][0]["x"][::-1] == [p for _, p in guesses]  # this sentence's classes
    assert translate("using.pooling_mean", "en") in title(at, "sentence_bars")
    assert "␣sat" in [a["text"] for a in charts(at)["token_diagram"]["layout"]["annotations"]]  # "we sat ." tagged
    nli = serving.classify("smollm2-135m-mlm", "nli", serving.pair_pooling("smollm2-135m-mlm"), *pair.values())
    assert sorted(charts(at)["pair_bars"]["data"][0]["x"]) == sorted(p for _, p in nli)  # the link's pair, read


# -- values a page cannot take: one sentence each, the value shown as text ------------------------------
def test_unknown_language_is_said(tiny_zoo: Path) -> None:
    at = open_page("pages/home.py", lang="fr")
    assert not at.exception and at.radio(key="lang").value == "en"
    assert "lang=fr" in infos(at) and at.title[0].value == translate("home.title", "en")


def test_unknown_model_is_said(tiny_zoo: Path) -> None:
    at = open_page("pages/bert_inputs.py", model="**bert** [x](http://example.org)")
    assert not at.exception and at.selectbox(key="model").value == "minilm-l6"
    said = infos(at)
    assert "model=**bert** [x](http" in said and "minilm-l6" in said  # as typed: no emphasis, no link


def test_a_number_out_of_range_opens_on_the_nearer_end(tiny_zoo: Path) -> None:
    at = open_page("pages/gpt.py", top_p="7", max_tokens="many")
    assert not at.exception
    assert at.slider(key="top_p").value == 1.0 and at.slider(key="max_tokens").value == 30
    said = infos(at)
    assert "top_p=7" in said and "from 0.05 to 1.0" in said and "opened with 1.0" in said
    assert "max_tokens=many" in said and "opened with 30" in said
    assert at.query_params["top_p"] == "1"  # the link is mended


def test_a_whole_number_is_asked_where_the_widget_counts(tiny_zoo: Path) -> None:
    at = open_page("pages/playground.py", model="minilm-l6", layer="1.5")
    assert not at.exception and at.slider(key="layer").value == 2  # the tiny model's top layer: the default
    assert "layer=1.5" in infos(at)


def test_an_unknown_toggle_value_is_said(tiny_zoo: Path) -> None:
    at = open_page("pages/onehot.py", glove="maybe")
    assert not at.exception and at.toggle(key="glove").value is False
    assert "glove=maybe" in infos(at)


def test_an_unknown_choice_among_kept_keys_is_said(tiny_zoo: Path) -> None:
    at = open_page("pages/senses.py", method="tsne", models="minilm-l6,word9")
    assert not at.exception and at.radio(key="method").value == "pca"
    assert at.multiselect(key="models").value == ["minilm-l6"]
    said = infos(at)
    assert "method=tsne" in said and "word9" in said


def test_a_token_the_text_lacks_is_said(tiny_zoo: Path) -> None:
    at = open_page("pages/elmo.py", sentence="we sat on the river bank .", word="stick")
    assert not at.exception
    picker = next(s for s in at.selectbox if s.key.startswith("position-"))
    assert picker.format_func(picker.value) == "1. we"
    assert "word=stick" in infos(at) and "opened on we" in infos(at)


def test_a_text_longer_than_its_box_is_said(tiny_zoo: Path) -> None:
    """The page reads the first 2,000 characters and the address keeps them (the box shows the link's whole text
    on its first run: Streamlit seeds a bound box from the address it opened with, whatever the page sets)."""
    at = open_page("pages/transformer.py", tf_text="bank " * 500)
    assert not at.exception and at.query_params["tf_text"] == ("bank " * 500)[:2000]
    said = infos(at)
    assert "tf_text is 2500 characters long" in said and "the page reads its first 2000" in said


def test_a_word_not_among_the_pickers_options_is_said_once(tiny_zoo: Path) -> None:
    at = open_page("pages/elmo.py", a="the man went .", b="the man sat .", pair_word="river")
    assert not at.exception and at.selectbox(key="pair_word").value == "the"  # the longest shared word
    assert "pair_word=river" in infos(at)
    at.text_input(key="b").input("the man went to the bank .").run()
    assert "pair_word=river" not in infos(at)  # said once: the learner's typing is no link's fault


def test_the_link_follows_the_learners_changes(tiny_zoo: Path) -> None:
    at = open_page("pages/gpt.py", top_p="0.5", strategy="top_p")
    at.slider(key="top_p").set_value(0.75).run()
    at.run()  # and stays there on the next rerun
    assert at.slider(key="top_p").value == 0.75 and at.query_params["top_p"] == "0.75"
    at = open_page("pages/elmo.py")
    at.button(key="preset_top").click().run()
    assert [at.query_params[k] for k in ("w0", "w1", "w2")] == ["-4", "-4", "4"]  # a preset's weights, kept
