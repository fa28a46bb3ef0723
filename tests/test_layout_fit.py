"""Key results fit a projector (1440 px wide) and a phone (390 px): the word map's labels keep apart, Word
senses' glosses are cut only between words, Probing's task chips wrap, its table's headers are short and its
panels' titles fit five side by side (issue 33). Each is checked on what the browser is given, with text
widths estimated on the generous side (7 px a character at plotly's 12 px, as wide as "woman" is drawn)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from components.charts import build_probe_curves, build_probe_weights, build_word_map
from model_zoo.lessons.sense_data import load_senses
from tests.conftest import light_chart_elements, open_page

# The default word list of the Word embeddings map and where GloVe 6B 50d puts it (glove-6b-50d, seed 0),
# rounded: king, queen and princess within a few pixels of each other.
WORDS = (
    "king queen prince princess man woman boy girl dog cat horse cow lion car bus train plane ship paris london "
    "berlin tokyo france england germany japan run walk swim fly apple banana orange bread"
).split()
PCA = [
    [-0.063, -2.319], [-0.144, -2.18], [0.75, -2.15], [-0.107, -2.168], [-1.184, 0.211], [-1.356, -0.09],
    [-2.284, 0.074], [-1.984, -0.32], [-2.847, 0.419], [-2.56, -0.108], [-1.835, 0.192], [-1.401, -0.546],
    [-1.262, -1.135], [0.099, 2.451], [0.389, 3.077], [0.923, 2.703], [0.524, 2.963], [0.357, 1.861],
    [3.304, -0.579], [2.409, -0.564], [3.384, -0.414], [2.825, 0.512], [3.173, -1.207], [1.252, -1.04],
    [3.693, -0.765], [2.153, 0.058], [0.059, 1.247], [-0.852, 1.498], [-1.202, 1.567], [-0.093, 1.793],
    [-1.744, -0.932], [-1.733, -1.512], [-1.141, -0.915], [-1.503, -1.681],
]  # fmt: skip
UMAP = [
    [5.471, 3.619], [5.721, 3.419], [5.138, 3.197], [5.658, 3.116], [6.795, 2.985], [6.435, 3.206],
    [6.873, 3.408], [6.436, 3.37], [7.483, 3.335], [7.063, 3.903], [7.872, 3.081], [7.555, 4.117],
    [7.43, 3.702], [6.064, 1.329], [6.563, 1.202], [6.453, 1.474], [6.136, 1.764], [5.834, 1.961],
    [4.008, 2.058], [4.454, 2.219], [4.497, 1.726], [4.836, 1.509], [3.882, 1.596], [4.557, 2.64],
    [4.24, 1.349], [5.064, 1.243], [6.747, 2.133], [7.393, 2.269], [7.674, 2.47], [7.092, 1.772],
    [7.488, 5.063], [7.757, 4.692], [7.199, 4.981], [7.474, 4.649],
]  # fmt: skip
PROJECTOR = (960, 468)  # px of the map's plot area at 1440 px with the sidebar open (measured in Chromium)
PHONE = (338, 400)  # and at 390 px, where the legend takes five rows
GAP = 3 / 0.8 + 1  # px from a marker's centre to its label: plotly's Drawing.textPointPosition, marker size 6


def label_boxes(fig, plot: tuple[int, int], char_px: float) -> list[tuple[str, tuple[float, ...], tuple[float, float]]]:  # noqa: ANN001
    """Each label's text, its box (x0, y0, x1, y1; px, y down) where plotly draws it, and its point in px."""
    points = np.array([(x, y) for trace in fig.data for x, y in zip(trace.x, trace.y)])
    ranges = []
    for axis, values in ((fig.layout.xaxis, points[:, 0]), (fig.layout.yaxis, points[:, 1])):
        pad = 0.05 * (values.max() - values.min())  # about what plotly's autorange adds, where no range is set
        ranges.append(axis.range or (values.min() - pad, values.max() + pad))
    (x_lo, x_hi), (y_lo, y_hi) = ranges
    width, height = plot
    boxes = []
    for trace in fig.data:
        where = trace.textposition
        for k, (x, y, text) in enumerate(zip(trace.x, trace.y, trace.text)):
            position = where if isinstance(where, str) else where[k]
            px, py = (x - x_lo) / (x_hi - x_lo) * width, (1 - (y - y_lo) / (y_hi - y_lo)) * height
            w, h = char_px * len(text), 15.0
            x0 = px - GAP - w if "left" in position else px + GAP if "right" in position else px - w / 2
            y0 = py - GAP - h if "top" in position else py + GAP if "bottom" in position else py - h / 2
            boxes.append((text, (x0, y0, x0 + w, y0 + h), (px, py)))
    return boxes


def clashes(boxes: list, marker: float = 3.0) -> list[tuple[str, str]]:
    """Pairs of labels whose boxes overlap, and (label, "•word") where a label covers another word's point."""
    found = []
    for i, (a, box, _) in enumerate(boxes):
        for j, (b, other, (px, py)) in enumerate(boxes):
            if (
                j > i
                and min(box[2], other[2]) > max(box[0], other[0])
                and min(box[3], other[3]) > max(box[1], other[1])
            ):
                found.append((a, b))
            if (
                j != i
                and box[0] < px + marker
                and px - marker < box[2]
                and box[1] < py + marker
                and py - marker < box[3]
            ):
                found.append((a, "•" + b))
    return found


@pytest.mark.parametrize("xy", [PCA, UMAP], ids=["pca", "umap"])
def test_word_map_labels_keep_apart_on_a_projector_and_a_phone(xy: list[list[float]]) -> None:
    groups = ["noun.person"] * 8 + ["noun.animal"] * 5 + ["noun.artifact"] * 5 + ["noun.location"] * 8 + ["x"] * 8
    fig = build_word_map(WORDS, np.array(xy), groups, "PCA map of 34 words")
    assert clashes(label_boxes(fig, PROJECTOR, 7.0)) == []
    assert clashes(label_boxes(fig, PHONE, 6.0)) == []  # Source Sans at 12 px: 5 to 7.5 px a character
    drawn = {t: (x, y) for trace in fig.data for t, x, y in zip(trace.text, trace.x, trace.y)}
    assert drawn == {w: tuple(p) for w, p in zip(WORDS, xy)}  # the points stay where the projection put them


def test_word_map_labels_of_words_on_one_spot_take_different_sides() -> None:
    xy = np.array([[0.0, 0.0], [0.001, 0.0], [0.0, 0.001], [5.0, 5.0], [-5.0, 3.0]])
    fig = build_word_map(["king", "queen", "princess", "far", "away"], xy, ["a", "a", "b", "b", "a"])
    assert clashes(label_boxes(fig, PROJECTOR, 7.0), marker=0.0) == []


def test_sense_legend_cuts_glosses_between_words_with_an_ellipsis(tiny_zoo: Path) -> None:
    at = open_page("pages/senses.py")
    assert not at.exception
    maps = [m for m in (json.loads(c.proto.bytes) for c in light_chart_elements(at)) if m["kind"] == "map"]
    assert maps
    glosses = [g.split(";")[0] for g in load_senses()["bank"].glosses.values()]
    for entry in maps[0]["senses"]:
        number, text = entry.split(". ", 1)
        gloss = glosses[int(number) - 1]
        if text != gloss:  # shortened: a whole-word beginning of the gloss, and it says so
            assert text.endswith("…") and gloss.startswith(text[:-1]), entry
            assert gloss[len(text) - 1] == " ", entry  # the next character is a space: no word was cut
            assert len(text) <= 61
    assert any(entry.endswith("…") for entry in maps[0]["senses"])  # bank's money sense is longer than a legend line


def test_sense_legend_names_each_sense_in_chinese_before_wordnets_gloss(tiny_zoo: Path) -> None:
    """WordNet's glosses are English only: in Chinese each sense's short Chinese name comes first (2. 银行 · a
    financial…), for every sense the lesson ships."""
    from model_zoo.lessons.sense_data import chinese_names

    at = open_page("pages/senses.py", lang="zh")
    assert not at.exception
    maps = [m for m in (json.loads(c.proto.bytes) for c in light_chart_elements(at)) if m["kind"] == "map"]
    names, bank = chinese_names(), load_senses()["bank"]
    heads = [f"{i + 1}. {names[key]} · " for i, key in enumerate(bank.sense_keys)]
    assert maps and [entry[: len(head)] for entry, head in zip(maps[0]["senses"], heads)] == heads
    assert heads == ["1. 河岸 · ", "2. 银行 · "]
    assert set(names) == {key for s in load_senses().values() for key in s.sense_keys}  # none left in English


def test_probing_task_chips_wrap_and_table_headers_fit(tiny_zoo: Path) -> None:
    at = open_page("pages/probing.py")
    assert not at.exception
    assert at.multiselect(key="tasks").proto.wrap and at.multiselect(key="models").proto.wrap
    config = json.loads(at.dataframe[0].proto.columns)
    names = list(at.dataframe[0].value.columns)  # each column's full name; its header is its label, if it has one
    heads = {name: config.get(name, {}).get("label", name) for name in names}
    assert len(heads) == 10
    assert max(len(head) for head in heads.values()) <= 18, heads  # ten columns in 950 px
    assert all(config[name]["help"] == name for name, head in heads.items() if head != name)  # the full name on hover


def test_probing_panel_titles_fit_five_panels_on_a_phone() -> None:
    tasks = ["Part of speech", "Named entities", "Dependency relation", "Word sense", "Subject number"]
    labels = {"title": "Learned layer weights s (scalar mix) per task and model", "depth": "depth", "weight": "s"}
    labels |= {"cog": "centre of gravity", "paper": "BERT-large", "score": "score", "control": "control"}
    labels["majority"] = "majority class"
    weights = build_probe_weights(tasks, {"m": [[0.5, 0.5]] * 5}, [0.5] * 5, labels)
    curves = build_probe_curves(tasks, {"m": [[0.5, 0.7]] * 5}, {"m": [[0.4, 0.4]] * 5}, [0.3] * 5, labels)
    for fig in (weights, curves):
        panel_titles = [note.text for note in fig.layout.annotations[:5]]
        assert [t.replace("<br>", " ") for t in panel_titles] == tasks
        # five panels share 280 px on a phone: 56 px each, 10 characters at 12 px
        assert max(len(line) for t in panel_titles for line in t.split("<br>")) <= 10, panel_titles
        assert max(len(line) for line in fig.layout.title.text.split("<br>")) <= 40  # the title wraps on a phone
        assert fig.layout.legend.yref == "container"  # below the depth axis's title, not over it


def test_chinese_chart_titles_wrap_to_fit_a_phone() -> None:
    """A chart's title wraps to fit a phone by its width, a Chinese character counting two: counted as one, the
    Chinese titles of Masked LM, ELMo, GPT and Using BERT ran off a phone's chart (wrapped at spaces they had
    none of). Broken between Chinese characters, nothing of the title is lost."""
    from components.charts import TITLE_CHARS, text_width, title_lines
    from components.i18n import translate

    titles = [
        translate("mlm.rollout_chart", "zh", model="smollm2-135m-mlm"),
        "“stick”：每一层的向量与加权和（256 维中的前 64 维）",
        "smollm2-135m：每个头放在第一个词元上的注意力比例",
        "每个词元作为起点和终点的概率（smollm2-135m-qa）",
    ]
    for title in titles:
        lines = title_lines(title)
        assert len(lines) > 1 and all(text_width(line) <= TITLE_CHARS for line in lines), lines
        assert "".join(lines).replace(" ", "") == title.replace(" ", "")
        assert not any(line.startswith(("，", "）", "：")) for line in lines)


def test_a_wrapped_title_breaks_evenly() -> None:
    """A title of two lines is broken near its middle, not filled to 40 characters with its last word alone on the
    second line (a phone showed "... the answer's path through layer" over "6")."""
    from components.charts import TITLE_CHARS, text_width, title_lines

    title = "Inside smollm2-135m-mlm: the answer's path through layer 6"
    lines = title_lines(title)
    assert len(lines) == 2 and " ".join(lines) == title
    assert all(text_width(line) <= TITLE_CHARS for line in lines)
    assert abs(len(lines[0]) - len(lines[1])) <= 8, lines
    assert title_lines("Layer 3, head 1: every query (rows)") == ["Layer 3, head 1: every query (rows)"]
    chinese = "每个词元作为起点和终点的概率（smollm2-135m-qa）"
    lines = title_lines(chinese)
    assert "".join(lines) == chinese and abs(text_width(lines[0]) - text_width(lines[-1])) <= 10, lines


def test_a_log_axis_writes_its_ticks_out() -> None:
    """Perplexities on a log axis are ticked 100, 200, 500 (plotly's own ticks wrote the steps between decades as
    single digits, "7 6 5 4 3 2 100 9 8": the run's 658 read as 6), and the learning curve's axis is one of them."""
    from components.charts import build_learning_curve, build_lines

    fig = build_lines([1, 2, 3], {"held-out perplexity": [658.0, 219.0, 83.0]}, {}, "run", "step", log_y=True)
    assert fig.layout.yaxis.type == "log" and list(fig.layout.yaxis.ticktext) == ["100", "200", "500"]
    curve = build_learning_curve([{"tokens": 1e6, "ppl": 0.4}, {"tokens": 2e6, "ppl": 31.7}], {"ppl": "ppl"}, {}, False)
    assert list(curve.layout.yaxis.ticktext) == ["0.5", "1", "2", "5", "10", "20"]


def test_a_lens_grid_keeps_its_words_legible_on_a_phone() -> None:
    """plotly sizes every cell's text to fit the longest word in the narrowest cell: one "Luxembourg" drew all of a
    lens grid's words at 6 px on a phone. A cell shows at most GRID_WORD characters (the whole word on hover, and
    in the CSV), and the colour scale lies under the grid, leaving its width to the cells."""
    from components.inside_view import GRID_WORD, build_lens_grid
    from model_zoo.lessons.inside import LayerGuess, Lens

    rows = [LayerGuess(i, [(" France", 0.6), (" Luxembourg", 0.2), (" a", 0.1)], 1, 0.6) for i in range(3)]
    fig = build_lens_grid(Lens(["Paris", " of"], 1, " France", rows, 2), "Logit lens")
    heat = fig.data[0]
    assert [list(row) for row in heat.text][0] == ["France", "Luxembo…", "a"]
    assert max(len(word) for row in heat.text for word in row) <= GRID_WORD
    assert heat.customdata[0][1] == "Luxembourg" and "%{customdata}" in heat.hovertemplate
    assert heat.colorbar.orientation == "h"
    # the rows' heading stands upright above them (as the y axis's title it lay on its side: 层 in Chinese)
    assert not fig.layout.yaxis.title.text
    heading = fig.layout.annotations[0]
    assert heading.text == "Layer" and (heading.x, heading.y, heading.xanchor) == (0, 1, "right")


def test_the_masked_lms_bars_beside_gpts_table_keep_their_whole_title_in_a_third_of_the_screen() -> None:
    """GPT's blank: the masked LM's bars sit in a third of the main column on a wide screen (about 300 px), where a
    title wrapped for a phone's whole width (40) lost its end in Chinese ("…（读两边" of "…（读两边）"). Their title
    wraps at THIRD_TITLE_CHARS, every character kept."""
    from components.charts import THIRD_TITLE_CHARS, build_score_bars, text_width
    from components.i18n import translate

    title = translate("gpt.masked_title", "zh", name="smollm2-135m-mlm")
    lines = build_score_bars([("bank", 0.75), ("store", 0.09)], title, title_chars=THIRD_TITLE_CHARS).layout.title.text
    assert all(text_width(line) <= THIRD_TITLE_CHARS for line in lines.split("<br>")), lines
    assert lines.replace("<br>", "").replace(" ", "") == title.replace(" ", "")


def test_a_vector_strip_numbers_its_dimensions_at_round_steps() -> None:
    """A word's vector as a strip of cells: its dimensions numbered every round step under the cells (0, 10, 20 of
    GloVe's 50; 0, 20, 40, 60 of ELMo's first 64), not a row of ticks with no number under them."""
    import numpy as np

    from components.charts import build_vector_strip

    for dims, step in ((50, 10), (64, 20), (384, 100), (4, 1)):
        axis = build_vector_strip(["king", "queen"], np.ones((2, dims)), "strip").layout.xaxis
        assert axis.showticklabels is not False
        assert (axis.dtick or 1) == step and (step == 1 or axis.tick0 == 0), (dims, axis)
