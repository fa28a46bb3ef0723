"""The Word senses charts' data (components/light_charts.py): what the page's script draws."""

from __future__ import annotations

import numpy as np

from components.light_charts import COLORS, Own, build_layer_lines, build_sense_map, word_span


def test_word_span_finds_the_whole_word_in_any_case() -> None:
    assert word_span("The Bank was shut.", "bank") == [4, 8]
    assert word_span("Banks and riverbanks, then the bank.", "bank") == [31, 35]  # not inside other words
    assert word_span("a bank-holiday, then a bank", "bank") == [23, 27]  # nor a hyphenated compound
    assert word_span("nothing here", "bank") == [0, 0]


def test_sense_map_carries_each_use_with_its_sense_sentence_and_gloss() -> None:
    xy = np.array([[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]])
    data = build_sense_map(
        xy,
        [0, 1, 0],
        ["1. slope", "2. money"],
        ["the bank of the river", "a bank loan", "Bank erosion"],
        ["sloping land", "a financial institution", "sloping land"],
        "bank",
        "minilm-l6 · layer 3 of 6",
        Own(0.5, 0.5, "<b>my</b> bank", "nearest 5 uses vote: 2. money (60%)"),
        "your sentence",
    )
    assert data["kind"] == "map" and data["file"] == "minilm-l6_layer_3_of_6"
    assert [(p["x"], p["y"], p["sense"]) for p in data["points"]] == [(0.0, 1.0, 0), (2.0, 3.0, 1), (4.0, 5.0, 0)]
    assert [p["span"] for p in data["points"]] == [[4, 8], [2, 6], [0, 4]]
    assert data["points"][1]["note"] == "a financial institution"
    assert data["colors"] == list(COLORS[:2])
    assert data["own"] == {
        "x": 0.5,
        "y": 0.5,
        "sense": -1,
        "sentence": "<b>my</b> bank",  # text, drawn with textContent: never markup
        "note": "nearest 5 uses vote: 2. money (60%)",
        "span": [10, 14],
    }
    assert build_sense_map(xy, [0, 1, 0], ["a", "b"], ["x"] * 3, ["n"] * 3, "bank", "t")["own"] is None


def test_layer_lines_keep_a_models_colour_and_its_baseline_beside_it() -> None:
    given = {"glove-6b-50d": COLORS[0], "minilm-l6": COLORS[1]}
    accuracy = build_layer_lines(
        {"glove-6b-50d": np.full(3, 0.5), "minilm-l6": np.array([0.5, 0.9, 1.0]), "chance": np.full(3, 0.5)},
        dashed=("chance",),
        colors=given,
    )
    similarity = build_layer_lines(
        {"minilm-l6": np.array([0.9, 0.8, 0.7]), "minilm-l6 · random pairs": np.array([0.1, 0.2, 0.3])},
        dashed=("minilm-l6 · random pairs",),
        colors=given,
    )
    acc = {s["name"]: s for s in accuracy["series"]}
    sim = {s["name"]: s for s in similarity["series"]}
    assert acc["minilm-l6"]["color"] == sim["minilm-l6"]["color"] == COLORS[1]  # the same in both charts
    assert sim["minilm-l6 · random pairs"]["color"] == COLORS[1] and sim["minilm-l6 · random pairs"]["dashed"]
    assert acc["chance"]["dashed"] and acc["chance"]["color"] not in (COLORS[0], COLORS[1])
    assert acc["minilm-l6"]["values"] == [0.5, 0.9, 1.0] and not acc["minilm-l6"]["dashed"]
    assert accuracy["kind"] == "lines" and accuracy["x_title"] == "layer"
