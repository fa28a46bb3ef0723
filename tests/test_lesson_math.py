"""The lessons' own arithmetic, as model_zoo computes it for the pages (numpy only: fast tier)."""

from __future__ import annotations

import numpy as np
import pytest

from model_zoo.lessons.attention import attention_to_later_tokens, strongest_head_reach, uniform_first_token_share
from model_zoo.lessons.elmo_mix import layer_cosines, scalar_mix
from model_zoo.lessons.probing import normalised_depth

LAYERS = np.array([[1.0, 0.0], [0.0, 2.0], [3.0, 3.0]])  # (S=3, D=2)


def test_scalar_mix_is_gamma_times_the_softmax_weighted_sum() -> None:
    even = scalar_mix(LAYERS, [0.0, 0.0, 0.0], 1.0)
    np.testing.assert_allclose(even.weights, [1 / 3] * 3)
    np.testing.assert_allclose(even.vector, LAYERS.mean(0), rtol=1e-6)
    top = scalar_mix(LAYERS, [-20.0, -20.0, 20.0], 2.0)  # nearly all weight on the last layer, doubled
    np.testing.assert_allclose(top.vector, 2 * LAYERS[2], rtol=1e-5)
    assert top.weights.sum() == pytest.approx(1.0) and top.norm == pytest.approx(
        2 * np.linalg.norm(LAYERS[2]), rel=1e-5
    )


def test_layer_cosines_compare_one_word_layer_by_layer() -> None:
    pair = np.stack([LAYERS, LAYERS * [[1, 1], [1, -1], [-1, -1]]])  # same, orthogonal-ish, opposite
    np.testing.assert_allclose(layer_cosines(pair), [1.0, -1.0, -1.0], atol=1e-6)


def test_a_causal_mask_leaves_no_attention_on_later_tokens() -> None:
    t = 4
    causal = np.tril(np.ones((t, t))) / np.arange(1, t + 1)[:, None]  # each query spreads over what it sees
    full = np.full((t, t), 1 / t)
    assert attention_to_later_tokens(causal[None, None]) == 0.0
    assert attention_to_later_tokens(full[None, None]) == pytest.approx(0.25)
    assert uniform_first_token_share(t) == pytest.approx(np.mean([1 / 2, 1 / 3, 1 / 4]))


def test_the_strongest_head_of_each_layer_gives_the_reach() -> None:
    attn = np.zeros((2, 3, 4, 4))  # (L, H, T, T)
    attn[0, 1, 2, 0] = 0.9
    attn[1, 2, 2, 3] = 0.7
    reach = strongest_head_reach(attn, 2)
    assert reach.shape == (2, 4) and reach[0, 0] == 0.9 and reach[1, 3] == 0.7 and reach[0, 3] == 0.0


def test_normalised_depth_runs_from_the_embeddings_to_the_last_layer() -> None:
    assert normalised_depth(0, 7) == 0.0 and normalised_depth(6, 7) == 1.0 and normalised_depth(1.5, 4) == 0.5


def test_a_coin_needs_20_of_30_to_beat_chance() -> None:
    from model_zoo.lessons.tasks import chance_cutoff

    assert chance_cutoff(30) == 20  # P(X >= 20) = 4.9% for a fair coin; P(X >= 19) = 10%
    assert chance_cutoff(10) == 9 and chance_cutoff(100) == 59


def test_a_diagram_shows_each_segment_abridged_and_counts_a_passage_from_one() -> None:
    from model_zoo.lessons.tasks import abridged

    tokens = ["[CLS]", "where", "is", "it", "?", "[SEP]", *[f"d{k}" for k in range(1, 9)], "[SEP]"]
    segments = [0] * 6 + [1] * 9
    shown = abridged(tokens, segments, passage=True, per_segment=3)
    assert shown.tokens == ["[CLS]", "where", "is", "…", "[SEP]", "d1", "d2", "d3", "…", "[SEP]"]
    assert shown.positions == [0, 1, 2, None, 5, 1, 2, 3, None, 9]  # the passage's words from 1
    assert shown.segments == [0] * 5 + [1] * 5
    assert abridged(tokens, segments, passage=False, per_segment=3).positions[5] == 6  # the sequence from [CLS]


# -- Using BERT ---------------------------------------------------------------------------------------
def test_the_better_pooling_and_what_a_head_cost_in_all() -> None:
    from model_zoo.lessons.tasks import Head, TrainedHead, better_pooling

    assert better_pooling(0.9, 0.8) == "cls" and better_pooling(0.7, 0.8) == "mean"
    assert better_pooling(0.8, 0.8) == "tie"
    head = Head(("a", "b"), np.zeros((2, 1)), np.zeros(2), np.zeros(1), np.ones(1), 0.9, 0.5, seconds=0.25)
    trained = TrainedHead(head, feature_seconds=2.0, train=10, test=5, development=(0.5, 0.9), last_layer=0.8)
    assert trained.total_seconds == pytest.approx(2.25)


def test_a_pair_is_read_with_its_separator() -> None:
    from model_zoo.lessons.tasks import separator_token

    assert separator_token(["[CLS]", "a", "[SEP]", "b", "[SEP]"], [None, 0, None, 0, None]) == "[SEP]"
    assert separator_token(["<s>", "a", "</s>", "</s>", "b"], [None, 0, None, None, 0]) == "</s>"
    assert separator_token(["a", "b"], [0, 1]) is None and separator_token(["<s>", "a"], [None, 0]) is None


def test_a_reader_misses_the_written_answer_unless_it_gives_it_exactly() -> None:
    from model_zoo.lessons.tasks import Answer, missed_answer, written_passages

    written = written_passages()["p11"][0]  # the lecture's precipitation passage and its first question
    start, end = written.span

    def got(text: str, span: tuple[int, int] | None) -> Answer:
        scores = np.zeros(3)
        return Answer(text, 1, 1, ["[CLS]", "x", "[SEP]"], scores, scores, 1, 1, passage=written.passage, span=span)

    q, p = written.question, written.passage
    assert missed_answer(got(f"The {written.answer}.", (start, end)), q, p) is None  # SQuAD's normalisation
    assert missed_answer(got("drizzle", (0, 7)), q, p) == written.answer
    assert missed_answer(got("", None), q, p) == written.answer  # no answer is a miss
    assert missed_answer(got("", None), "My own question?", p) is None  # nothing written to miss


# -- Masked LM ----------------------------------------------------------------------------------------
def test_a_word_is_masked_where_it_is_still_visible() -> None:
    from model_zoo.lessons.cloze import mask_first, maskable_words, without_masks

    text = "The [MASK] by the river bank is a bank."
    assert without_masks(text) == text.replace("[MASK]", "      ") and len(without_masks(text)) == len(text)
    assert maskable_words(text) == ["The", "by", "the", "river", "bank", "is", "a"]
    assert mask_first(text, "bank") == "The [MASK] by the river [MASK] is a bank."
    assert mask_first("[MASK] MASK mask", "mask") == "[MASK] [MASK] mask"  # any case, never inside a [MASK]
    assert mask_first(text, "banks") == text  # no such word: unchanged


def test_the_classic_bert_and_the_top_word() -> None:
    from model_zoo.lessons.cloze import classic_bert, top_word

    assert classic_bert("巴黎是法国的首[MASK]。") == "bert-base-chinese"
    assert classic_bert("Paris is the capital of [MASK].") == "bert-base-uncased"
    assert top_word([(" France", 0.6), ("paris", 0.3)]) == "france"


def test_the_recipes_perplexity_is_exp_of_its_loss() -> None:
    from model_zoo.lessons.masking import RecipeDemo

    tokens = ["[CLS]", "[MASK]", "b", "[SEP]"]
    demo = RecipeDemo(tokens, [1, 2], ["a", "b"], [1, 3], ["[MASK]", "b"], ["a", "c"], [0.5, 0.125])
    assert demo.loss == pytest.approx(-np.log([0.5, 0.125]).mean())
    assert demo.perplexity == pytest.approx(4.0)  # the geometric mean of 1/p: sqrt(2 * 8)


def test_the_race_ends_with_the_copier_behind() -> None:
    from model_zoo.lessons.why_mask import Race

    def race(copy: float, masked: float) -> Race:
        loss = {"copy": [2.0, 0.01], "masked": [3.0, 1.5]}
        return Race([0, 10], loss, {"copy": [0.0, copy], "masked": [0.0, masked]}, 0.05, "the", 50, 100, 20, 1.0)

    assert race(0.02, 0.3).final("copy") == (0.01, 0.02) and race(0.02, 0.3).final("masked") == (1.5, 0.3)
    assert race(0.02, 0.3).copier_copies and not race(0.3, 0.3).copier_copies


def test_a_rollout_summary_reads_the_diagonal() -> None:
    from model_zoo.lessons.why_mask import rollout_summary

    t = 4
    mixed = rollout_summary(np.full((3, 2, t, t), 1 / t))  # every head attends evenly: inputs blur together
    assert len(mixed.rolled) == t and all(sum(row) == pytest.approx(1.0) for row in mixed.rolled)
    assert mixed.even == 0.25 and mixed.layers == 3 and mixed.own < 0.5
    kept = rollout_summary(np.broadcast_to(np.eye(t), (2, 2, t, t)))  # each position attends to itself
    assert kept.own == pytest.approx(1.0) and kept.rolled == np.eye(t).tolist()
    first = np.zeros((2, 2, t, t))
    first[..., 0] = 1.0  # every head attends to the first token: one bright column, what the page's line names
    column, share = rollout_summary(first).brightest
    assert column == 0 and share > 0.5


# -- Probing ------------------------------------------------------------------------------------------
def _probe(task: str = "pos", cog: float = 1.0, weights: tuple[float, ...] = (0.2, 0.5, 0.3), **kw: object):
    """A probing result on three layers, as a shipped results file holds it."""
    from model_zoo.lessons.probing import TaskResult

    sizes = {"layers": 3, "classes": 2, "train": 10, "dev": 5, "test": 5}
    scores = {"by_layer": [0.6, 0.9, 0.9], "control_by_layer": [0.5, 0.4, 0.6], "cumulative": [0.6, 0.9, 0.9]}
    mix = {"mix_weights": list(weights), "mix_gamma": 1.0, "mix_score": 0.8, "center_of_gravity": cog}
    fields = sizes | scores | mix | {"majority": 0.5, "expected_layer": 1.0, "seconds": 1.0} | kw
    return TaskResult(task=task, model="m", **fields)


def test_a_probes_best_layer_is_the_first_highest_with_its_control() -> None:
    from model_zoo.lessons.probing import best_layer

    assert best_layer([0.1, 0.3, 0.3, 0.2]) == 1 and best_layer([0.5]) == 0
    r = _probe()
    assert r.best_layer == 1 and r.control_at_best == 0.4
    assert _probe(control_by_layer=[]).control_at_best is None  # word senses: no control task


def test_gathered_results_prefer_a_retrained_probe_and_name_the_models_without() -> None:
    from model_zoo.lessons.probing import ModelResults, gather_results

    shipped = {"a": ModelResults("a", "v", {"pos": _probe(), "ner": _probe("ner")}, {}, 0.0, 0), "b": None}
    again = _probe(mix_score=0.95)
    found = gather_results(["a", "b"], ["pos"], shipped, {("a", "pos"): again, ("a", "ner"): _probe("ner")})
    assert list(found.results) == ["a"] and found.results["a"]["pos"] is again and found.missing == ["b"]
    assert found.live == [("a", "pos")]  # the retrained NER probe is not on the page: NER was not picked
    assert gather_results(["a"], ["dep"], shipped, {}).missing == ["a"]  # a task it has no result for


def test_weight_findings_order_the_tasks_against_the_paper() -> None:
    from model_zoo.lessons.probing import PAPER_BERT_LARGE, PAPER_LAYERS, paper_depths, weight_findings

    assert paper_depths(["pos", "agreement"]) == [PAPER_BERT_LARGE["pos"]["center_of_gravity"] / PAPER_LAYERS, None]
    per_task = {"dep": _probe("dep", 0.5, (0.1, 0.8, 0.1)), "pos": _probe("pos", 1.5), "sense": _probe("sense", 1.0)}
    found = weight_findings("minilm-l6", per_task, ["pos", "dep", "sense"])
    assert found.order == [("dep", 0.25), ("sense", 0.5), ("pos", 0.75)]
    assert found.ours == ["dep", "pos"] and found.theirs == ["pos", "dep"] and not found.agrees
    assert found.elmo_top is None  # MiniLM is not an ELMo
    elmo = weight_findings("elmo-mini", per_task, ["pos", "dep", "sense"])
    assert elmo.elmo_top == ("dep", 0.8)  # the task leaning most on LSTM-1
    assert weight_findings("elmo-mini", per_task, ["pos", "sense"]).ours == []  # one task in the paper: no order


def test_bert_features_and_the_best_choices() -> None:
    from model_zoo.lessons.probing import ModelResults, bert_features, best_features, extreme_tasks

    table = {"embeddings": 0.5, "last": 0.8, "sum_last_four": 0.9}
    shipped = {
        "elmo-mini": ModelResults("elmo-mini", "v", {}, table, 0.0, 0),  # not BERT's architecture
        "minilm-l6": ModelResults("minilm-l6", "v", {}, table, 0.0, 0),
        "minilm-l6-mlm": ModelResults("minilm-l6-mlm", "v", {}, {}, 0.0, 0),  # no table shipped
        "bert-base-uncased": None,
    }
    assert bert_features(shipped) == {"minilm-l6": table}
    assert best_features(table) == ("sum_last_four", "concat_last_four")  # the paper's best without fine-tuning
    tasks = {"pos": _probe(cog=0.5), "dep": _probe(cog=1.7), "ner": _probe(cog=1.0)}
    assert extreme_tasks(tasks) == ("dep", "pos")


# -- Word senses --------------------------------------------------------------------------------------
def _sense_set():
    from model_zoo.lessons.sense_data import SenseSet

    glosses = {"river": "sloping land; beside a body of water", "money": "a financial institution"}
    return SenseSet("bank", ("r1", "m1", "r2", "m2"), ("river", "money", "river", "money"), glosses)


def test_a_sense_set_numbers_its_senses_for_the_legend() -> None:
    from model_zoo.lessons.sense_data import SenseSet, lesson_words, total_uses

    s = _sense_set()
    assert s.sense_numbers == [0, 1, 0, 1] and s.use_glosses[1] == "a financial institution"
    assert s.labels == {"river": "1. sloping land", "money": "2. a financial institution"}
    other = SenseSet("zebra", ("z",), ("z1",), {"z1": "an animal"})
    sets = {"zebra": other, "stick": other, "apple": other, "bank": s}
    assert lesson_words(sets) == ["bank", "stick", "apple", "zebra"] and total_uses(sets) == 7


def test_a_view_scales_the_layer_to_each_model_and_reads_ready_maps() -> None:
    from model_zoo.lessons.sense_data import UMAP_DEFAULTS, MapView, Precomputed, SenseModel, ready_map

    pca = np.arange(4 * 7 * 2, dtype=float).reshape(4, 7, 2)  # (n, layers, 2)
    pre = Precomputed(pca, -pca, *[np.zeros(7)] * 4)
    view = MapView(6, 12, "pca", UMAP_DEFAULTS.n_neighbors, UMAP_DEFAULTS.min_dist, UMAP_DEFAULTS.seed)
    small, static = SenseModel("m", False, 6, pre), SenseModel("g", True, 0, None)
    assert view.layer_of(small) == 3 and view.layer_of(static) == 0 and view.default_umap
    np.testing.assert_array_equal(ready_map(small, view, 4, own=False), pca[:, 3])
    assert ready_map(static, view, 4, own=True).tolist() == [[0.0, 0.0]] * 4  # one point for every use
    assert ready_map(small, view, 4, own=True) is None  # the learner's use must be placed: computed
    umap = MapView(6, 12, "umap", 30, UMAP_DEFAULTS.min_dist, UMAP_DEFAULTS.seed)
    assert not umap.default_umap and ready_map(small, umap, 4, own=False) is None
    assert ready_map(SenseModel("m", False, 6, None), view, 4, own=False) is None  # nothing precomputed


def test_the_learners_use_is_placed_and_voted_on() -> None:
    from model_zoo.lessons.senses import own_point, own_votes, place_own

    river, money = np.array([1.0, 0.0]), np.array([0.0, 1.0])
    uses = np.stack([np.stack([river, money])] * 3 + [np.stack([money, river])] * 3)  # (6, S=2, D=2)
    senses = ("river",) * 3 + ("money",) * 3
    own = np.stack([river, river])  # (S, D)
    assert np.frombuffer(own_point(own, 1)).tolist() == [1.0, 0.0]
    xy = np.arange(14, dtype=float).reshape(7, 2)  # six uses, then the learner's
    points, placed = place_own(xy, uses, senses, own, 0)
    assert points.shape == (6, 2) and (placed.x, placed.y) == (12.0, 13.0)
    assert placed.sense == "river" and placed.share == 3 / 5  # its nearest 5: three river uses, two money
    assert own_votes(uses, senses, own, 1) == ["river", "money"] and own_votes(uses, senses, own, 0) == ["river"]


def test_measure_lines_give_a_static_model_chance() -> None:
    from model_zoo.lessons.senses import LayerMeasures, measure_lines

    found = LayerMeasures(np.array([0.5, 0.9]), np.ones(2), np.ones(2) / 2, np.ones(2) / 4, 0.5)
    assert found.best_layer == 1
    lines = measure_lines({"glove": None, "bert": found}, ("a", "b", "a", "b"), 1)
    assert list(lines.accuracy) == ["glove", "bert"] and list(lines.self_similarity) == ["bert"]
    np.testing.assert_allclose(lines.chance, [1 / 3, 1 / 3])  # another use shares its sense: 1 in 3
    np.testing.assert_allclose(lines.accuracy["glove"], lines.chance)
    assert lines.baseline["bert"] is found.baseline and lines.intra_similarity["bert"] is found.intra_similarity


def test_the_chinese_corner_compares_the_last_layer_and_glove_gives_one_point() -> None:
    from model_zoo.lessons.sense_data import CHINESE
    from model_zoo.lessons.senses import distinct_points, last_layer_similarity

    assert all(len(sentences) == 6 and word in sentences[0][0] for word, sentences in CHINESE.items())
    vectors = np.array([[[1.0, 0.0], [1.0, 0.0]], [[1.0, 0.0], [0.0, 1.0]]])  # (n=2, S=2, D=2)
    np.testing.assert_allclose(last_layer_similarity(vectors), [[1.0, 0.0], [0.0, 1.0]], atol=1e-6)
    v = np.ones(3, dtype=np.float32)
    assert distinct_points([v, v.copy(), v]) == 1 and distinct_points([v, 2 * v]) == 2


# -- Attention, GPT, ELMo, static vectors: what their pages draw ---------------------------------------
def test_a_query_row_keeps_only_the_keys_a_causal_query_sees() -> None:
    from model_zoo.lessons.attention import QueryKey

    scores = np.array([[0.0, -np.inf, -np.inf], [1.0, 2.0, -np.inf], [0.5, -1.0, 3.0]])  # (T=3, T)
    weights = np.exp(scores - scores.max(1, keepdims=True))
    weights /= weights.sum(1, keepdims=True)
    vectors = np.arange(6.0).reshape(3, 2)  # (T, head_dim)
    qk = QueryKey(["a", "b", "c"], 0, 0, vectors, -vectors, scores, weights, weights, 0.5, True)
    row = qk.row(1)
    assert row.keys == [0, 1] and row.scores == [1.0, 2.0] and sum(row.weights) == pytest.approx(1.0)
    np.testing.assert_array_equal(row.vectors, [[2.0, 3.0], [-0.0, -1.0], [-2.0, -3.0]])  # q of 1, then k of 0, 1
    assert qk.row(2).keys == [0, 1, 2] and qk.row(0).vectors.shape == (2, 2)


def test_a_head_summary_scales_entropy_to_its_widest_and_a_causal_model_skips_sep_and_next() -> None:
    from model_zoo.lessons.attention import METRICS, HeadSummary, shown_metrics

    metrics = {m: np.full((2, 3), 0.4) for m in METRICS} | {"entropy": np.array([[0.5, 2.5, 1.0], [0.1, 0.2, 0.3]])}
    summary = HeadSummary(metrics, uniform_entropy=1.5, sentences=1, tokens=4)
    assert summary.ceiling("self") == 1 and summary.ceiling("entropy") == 2.5
    assert HeadSummary(metrics, 3.0, 1, 4).ceiling("entropy") == 3.0
    assert shown_metrics(False) == METRICS and shown_metrics(True) == ("first", "self", "prev", "entropy")


def test_a_layers_heads_averaged_and_its_shape_in_layers_and_heads() -> None:
    from model_zoo.lessons.attention import heads_grid, layer_mean, looks_only_left

    t = 3
    causal = np.tril(np.ones((t, t))) / np.arange(1, t + 1)[:, None]  # (T, T)
    attn = np.stack([np.stack([causal, np.eye(t)]), np.full((2, t, t), 1 / t)])  # (L=2, H=2, T, T)
    np.testing.assert_allclose(layer_mean(attn), (causal + np.eye(t)) / 2)
    np.testing.assert_allclose(layer_mean(attn, 1), np.full((t, t), 1 / t))
    assert looks_only_left(attn[:1]) and not looks_only_left(attn)
    assert heads_grid(attn) == (2, 2) and heads_grid(None) == (0, 0)


def test_a_view_starts_on_the_last_token_of_a_gpt_and_the_first_word_of_bert() -> None:
    from model_zoo.lessons.attention import default_query

    assert default_query([None, 0, 1, None], causal=False) == 1  # [CLS] is not a word
    assert default_query([0, 1, 2], causal=True) == 2
    assert default_query([None, None], causal=False) == 0


def test_the_token_a_word_looks_at_most_in_the_last_layer() -> None:
    from model_zoo.lessons.attention import most_attended

    tokens = ["[CLS]", "the", "Ġanimal", "Ġit", "[SEP]"]
    attn = np.full((2, 2, 5, 5), 0.2)  # (L, H, T, T)
    attn[-1, :, 3] = [[0.1, 0.1, 0.6, 0.1, 0.1], [0.1, 0.1, 0.4, 0.3, 0.1]]  # "it" -> "animal", heads averaged
    word, share = most_attended(attn, tokens, "it")
    assert word == "animal" and share == pytest.approx(0.5)
    assert most_attended(attn, tokens, "they") is None


def test_the_strongest_link_names_its_layer_head_and_weight() -> None:
    from model_zoo.lessons.attention import strongest_link

    attn = np.zeros((3, 2, 4, 4))  # (L, H, T, T)
    attn[0, 0, 3, 1], attn[1, 1, 3, 1], attn[2, 0, 3, 1] = 0.3, 0.8, 0.5
    assert strongest_link(attn, 3, 1) == (1, 1, pytest.approx(0.8))


def test_a_sentences_factors_multiply_to_its_probability() -> None:
    from model_zoo.lessons.generation import Factors

    factors = Factors(["The", " tide"], np.log(np.array([0.5, 0.25], dtype=np.float32)), "<s>")
    assert factors.probabilities == pytest.approx([0.5, 0.25]) and factors.probability == pytest.approx(0.125)


def test_the_left_contexts_first_guess_and_the_whole_sentences_best() -> None:
    from model_zoo.lessons.generation import Rescored, left_first, whole_first

    rows = [Rescored("bank", 0.2, 2, -30.0, 1), Rescored("store", 0.5, 1, -32.0, 2), Rescored("atm", 0.0, 0, -40.0, 3)]
    assert left_first(rows).candidate == "store" and whole_first(rows).candidate == "bank"


def test_heads_that_park_more_than_half_on_the_first_token() -> None:
    from model_zoo.lessons.attention import uniform_first_token_share
    from model_zoo.lessons.generation import first_token_sink

    shares = np.array([[0.9, 0.2, 0.6], [0.5, 0.1, 0.7]], dtype=np.float32)  # (layers, heads)
    sink = first_token_sink(shares, 4)
    assert sink.parked == 3 and sink.heads == 6  # 0.5 is not more than half
    assert sink.mean == pytest.approx(0.5) and sink.even == uniform_first_token_share(4)


def test_a_words_layers_and_their_mix_as_a_strip_and_its_cosines() -> None:
    from model_zoo.lessons.elmo_mix import ONE_VECTOR, lowest_lstm_cosine, mix_word, scalar_mix, top_layer_cosine

    states = np.stack([LAYERS, 2 * LAYERS], axis=1)  # (S=3, T=2, D=2): token 1 is twice token 0
    mixed = mix_word(states, 1, [0.0, 0.0, 0.0], 1.0, dims=1)
    assert mixed.rows.shape == (4, 1) and mixed.shown == 1 and mixed.dim == 2
    np.testing.assert_allclose(mixed.rows[:3, 0], 2 * LAYERS[:, 0])
    np.testing.assert_allclose(mixed.mix.vector, scalar_mix(2 * LAYERS, [0.0, 0.0, 0.0], 1.0).vector)
    assert mix_word(states, 0, [0.0] * 3, 1.0, dims=64).rows.shape == (4, 2)
    assert lowest_lstm_cosine(np.array([1.0, 0.7, 0.4])) == pytest.approx(0.4)
    pair = np.stack([LAYERS, LAYERS * [[1, 1], [1, 1], [1, -1]]])  # (2, S, D): the top layer flipped in one dim
    assert top_layer_cosine(pair) == pytest.approx(0.0, abs=1e-6)
    assert top_layer_cosine(np.stack([LAYERS, 3 * LAYERS])) > ONE_VECTOR


def test_a_static_model_stacks_the_vectors_of_its_words() -> None:
    from model_zoo.static import StaticModel

    model = StaticModel.from_arrays("tiny", ["king", "queen"], np.array([[1.0, 0.0], [0.0, 1.0]]))
    np.testing.assert_array_equal(model.vectors(["queen", "king", "queen"]), [[0, 1], [1, 0], [0, 1]])
    assert model.vectors([]).shape == (0, 2)
