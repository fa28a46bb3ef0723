"""Extractive question answering: the reader (BertForQuestionAnswering), the answer rule, fine-tuning
minilm-l6-qa (model_zoo.training.train_qa) and a prefetched SQuAD 2.0 BERT, all on tiny random models (fast tier)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

import model_zoo
from model_zoo.lessons import tasks
from model_zoo.loading import load_partial_weights, reader_from_encoder
from model_zoo.training.train_qa import WEIGHTS, Example, Trainer, export, targets, top_logits
from tests.conftest import save_tiny_bert

PASSAGE = "The man went to the bank. We sat on the river bank, and the boat is at the water."


@pytest.fixture(scope="module")
def tiny_reader(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return save_tiny_bert(tmp_path_factory.mktemp("tiny-reader"), qa=True, layers=4)


class Peaks(nn.Module):
    """A start/end layer that points at fixed positions of the sequence, whatever the vectors."""

    def __init__(self, start: int, end: int) -> None:
        super().__init__()
        self.start, self.end = start, end

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        logits = torch.zeros(*hidden.shape[:2], 2)
        logits[:, self.start, 0] = logits[:, self.end, 1] = 10.0
        return logits


def test_a_reader_scores_cls_the_passage_and_sep_and_answers_with_passage_words(tiny_reader: Path) -> None:
    reader = model_zoo.load(tiny_reader)
    assert isinstance(reader, model_zoo.Reader)
    read = reader.read("where is the boat ?", PASSAGE)
    assert read.tokens[0] == "[CLS]" and read.tokens[-1] == "[SEP]"
    assert read.chars[0] is None and read.chars[-1] is None and None not in read.chars[1:-1]
    assert [PASSAGE[a:b].lower() for a, b in read.chars[1:-1]] == read.tokens[1:-1]  # WordPiece of the passage only
    assert read.start_scores.shape == read.end_scores.shape == (len(read.tokens),) and not read.cut
    boat = read.tokens.index("boat")
    # "[CLS] where is the boat ? [SEP] passage": the passage's token k (1 = its first) is at position k + 6
    reader.model.qa_outputs = Peaks(boat - 1 + 6, boat + 6)
    got = tasks.read_answer(reader, "where is the boat ?", PASSAGE)
    assert got.text == "the boat" and got.passage[slice(*got.span)] == "the boat"
    assert (got.start, got.end) == (boat - 1, boat) and got.reason == ""
    np.testing.assert_allclose(got.start_probabilities.sum(), 1.0, rtol=1e-6)


def test_a_reader_answers_by_its_scores_not_by_the_lecture_rule_of_thumb(tiny_reader: Path) -> None:
    """SQuAD 2.0's rule (BERT's paper): the best span against pointing at [CLS] / [SEP] for "no answer"."""
    reader = model_zoo.load(tiny_reader)
    question_tokens = 6  # [CLS] where is the boat ? [SEP]
    reader.model.qa_outputs = Peaks(question_tokens + 8, question_tokens + 3)  # the best end before the best start
    got = tasks.read_answer(reader, "where is the boat ?", PASSAGE)
    assert got.best_end < got.best_start and got.lecture == "end_before_start"  # the lecture's sign of no answer
    assert got.span is not None and got.reason == "" and got.text == got.inside and got.text in PASSAGE
    assert got.span_score == pytest.approx(10.0) and got.null_score == pytest.approx(0.0)  # one peak beats none
    reader.model.qa_outputs = Peaks(0, 0)  # both on [CLS]: where SQuAD 2.0 models say "no answer"
    got = tasks.read_answer(reader, "where is the boat ?", PASSAGE)
    assert (got.text, got.span, got.reason, got.lecture) == ("", None, "no_answer_scores_higher", "outside_passage")
    assert got.null_score == pytest.approx(20.0) and got.span_score == pytest.approx(0.0) and got.inside


def test_a_passage_longer_than_the_model_reads_is_cut_and_says_so(tiny_reader: Path) -> None:
    reader = model_zoo.load(tiny_reader)
    long = " ".join([PASSAGE] * 8)  # far beyond 64 positions
    read = reader.read("where is the boat ?", long)
    assert read.cut and len(read.tokens) <= reader.max_length and read.tokens[-1] == "[SEP]"
    assert tasks.read_answer(reader, "where is the boat ?", long).cut
    with pytest.raises(model_zoo.EmptyInput):
        reader.read("where is the boat ?", "   ")


def test_the_answer_rule_picks_the_best_span_inside_the_passage() -> None:
    tokens = ["[CLS]", "a", "b", "c", "d", "[SEP]"]
    chars = [None, (0, 1), (2, 3), (4, 5), (6, 7), None]
    start = np.array([0.0, 1.0, 3.0, 0.0, 0.0, 2.9])
    end = np.array([0.0, 0.0, 0.0, 1.0, 2.0, 0.0])
    got = tasks.pick_answer(tokens, chars, start, end, "a b c d")
    assert (got.text, got.start, got.end, got.span) == ("b c d", 2, 4, (2, 7))
    end[5] = 5.0  # the closing [SEP] now wins the end: no answer
    got = tasks.pick_answer(tokens, chars, start, end, "a b c d")
    assert (got.text, got.reason, got.inside) == ("", "outside_passage", "b c d")  # what it would have said


def test_a_what_question_is_not_answered_by_a_span_that_opens_with_a_preposition() -> None:
    """The lecture's "What causes precipitation to fall?" over "... falls under gravity": a reader's scores may
    prefer "under gravity", but a What/Who/Which question asks for a noun phrase, so the answer is "gravity"
    and the span passed over is named; a Where question keeps its preposition, and so does a head on passage
    tokens (the lecture's rule reads no question)."""
    text = "rain falls under gravity in India"
    tokens = ["[CLS]", "rain", " falls", " under", " gravity", " in", " India", "[SEP]"]
    chars = [None, (0, 4), (5, 10), (11, 16), (17, 24), (25, 27), (28, 33), None]
    start = np.array([0.0, 0.0, 0.0, 6.8, 1.7, 0.5, 0.0, 0.0])
    end = np.array([0.0, 0.0, 0.0, 0.0, 9.0, 0.0, 1.0, 0.0])
    got = tasks.pick_answer(tokens, chars, start, end, text, framed=True, question="What causes rain to fall?")
    assert (got.text, got.span, got.passed_over) == ("gravity", (17, 24), "under gravity")
    assert got.best_start == 3  # the curves still show where the scores alone start
    for question in ("Where does rain fall?", "How does rain fall?", ""):
        got = tasks.pick_answer(tokens, chars, start, end, text, framed=True, question=question)
        assert (got.text, got.passed_over) == ("under gravity", "")
    head = tasks.pick_answer(tokens, chars, start, end, text, question="What causes rain to fall?")
    assert head.text == "under gravity" and not head.passed_over
    # "in" of "India" is no preposition, wherever a tokenizer cuts the word
    cut = [*tokens[:6], " In", "dia", "[SEP]"]
    cut_chars = [*chars[:6], (28, 30), (30, 33), None]
    text = "rain falls under gravity in India"
    start, end = np.array([0.0, 0, 0, 0, 0, 0, 5.0, 0, 0]), np.array([0.0, 0, 0, 0, 0, 0, 0, 5.0, 0])
    got = tasks.pick_answer(cut, cut_chars, start, end, text, framed=True, question="Which country?")
    assert (got.text, got.passed_over) == ("India", "")
    assert tasks.is_preposition(text, (25, 27)) and not tasks.is_preposition(text, (28, 30))


def test_a_readers_rule_weighs_the_best_span_against_no_answer() -> None:
    tokens = ["[CLS]", "a", "b", "c", "d", "[SEP]"]
    chars = [None, (0, 1), (2, 3), (4, 5), (6, 7), None]
    start = np.array([0.0, 1.0, 3.0, 0.0, 0.0, 0.0])
    end = np.array([0.0, 0.0, 0.0, 1.0, 3.0, 3.5])  # the best end alone is the closing [SEP]
    got = tasks.pick_answer(tokens, chars, start, end, "a b c d", framed=True)
    # "b c d" scores 3 + 3 = 6, "no answer" 0 + 3.5: the span, where the lecture's rule of thumb says none
    assert (got.text, got.span, got.lecture, got.framed) == ("b c d", (2, 7), "outside_passage", True)
    assert (got.span_score, got.null_score) == (6.0, 3.5)
    start[5] = 2.6  # "no answer" now 2.6 + 3.5 = 6.1, above the span
    got = tasks.pick_answer(tokens, chars, start, end, "a b c d", framed=True)
    assert (got.text, got.span, got.reason, got.inside) == ("", None, "no_answer_scores_higher", "b c d")
    unframed = tasks.pick_answer(tokens, chars, start, end - np.array([0, 0, 0, 0, 0, 3.5]), "a b c d")
    assert unframed.text == "b c d" and unframed.null_score is None  # a head on passage tokens: the lecture's rule


def test_squad_measures() -> None:
    assert tasks.exact_match("The Gravity.", "gravity")
    assert not tasks.exact_match("a cloud", "within a cloud")
    assert tasks.token_f1("a cloud", "within a cloud") == pytest.approx(2 / 3)
    assert tasks.token_f1("", "gravity") == 0.0


@pytest.fixture(scope="module")
def trainer(tmp_path_factory: pytest.TempPathFactory) -> Trainer:
    encoder = save_tiny_bert(tmp_path_factory.mktemp("tiny-encoder"), pretraining=False)
    return Trainer(torch.device("cpu"), lr=3e-3, batch=8, encoder_dir=encoder, frozen=1)


def examples() -> list[Example]:
    found = [
        Example("where did the man go ?", PASSAGE, "bank", PASSAGE.index("bank")),
        Example("what is at the water ?", PASSAGE, "the boat", PASSAGE.index("the boat")),
    ]
    return [*found, Example("who is his money ?", PASSAGE, None, -1)]


def test_targets_point_at_the_answer_or_at_sep_then_cls(trainer: Trainer) -> None:
    batch = trainer.tokenize(examples())
    starts, ends, kept = targets(batch, examples())
    ids = batch["input_ids"]
    assert trainer.tokenizer.decode(ids[0, starts[0] : ends[0] + 1]) == "bank"
    assert trainer.tokenizer.decode(ids[1, starts[1] : ends[1] + 1]) == "the boat"
    sep = trainer.tokenizer.sep_token_id
    assert ids[2, starts[2]] == sep and batch.sequence_ids(2)[starts[2] - 1] == 1 and ends[2] == 0  # closing [SEP]
    assert kept.all()


def test_the_cached_bottom_layers_give_the_full_models_scores(trainer: Trainer) -> None:
    """Training reads the frozen layers' output once; the top layers on it must equal the whole model."""
    batch = trainer.tokenize(examples())  # three lengths: padding in the batch
    with torch.inference_mode():
        full = trainer.model(**batch)
        bottom = trainer.model.bert(**batch, output_hidden_states=True).hidden_states[trainer.frozen]
        top = top_logits(trainer.model, bottom, batch["attention_mask"], trainer.frozen)
    read = batch["attention_mask"].bool()
    torch.testing.assert_close(top[..., 0][read], full.start_logits[read])
    torch.testing.assert_close(top[..., 1][read], full.end_logits[read])
    assert torch.isinf(top[~read]).all()


def test_training_learns_and_the_exported_weights_load_back(trainer: Trainer, tmp_path: Path) -> None:
    frozen_before = trainer.model.bert.embeddings.word_embeddings.weight.clone()
    run = trainer.train(examples() * 16, epochs=30, minutes=5)
    assert run["final_loss"] < run["first_loss"] / 2
    assert torch.equal(trainer.model.bert.embeddings.word_embeddings.weight, frozen_before)
    export(trainer, tmp_path, {"run": run})
    from safetensors.torch import load_file

    saved = load_file(str(tmp_path / WEIGHTS))
    assert {k.split(".")[3] for k in saved if k.startswith("bert.")} == {"1"}  # only the layer above the frozen one
    assert {"qa_outputs.weight", "qa_outputs.bias"} <= set(saved)
    fresh = load_partial_weights(reader_from_encoder(trainer.tokenizer.name_or_path), tmp_path / WEIGHTS).eval()
    reader = model_zoo.Reader("tiny-qa", fresh, trainer.tokenizer, torch.device("cpu"))
    assert tasks.read_answer(reader, "where did the man go ?", PASSAGE).text == "bank"
    none = tasks.read_answer(reader, "who is his money ?", PASSAGE)  # taught: start on the closing [SEP], end on [CLS]
    assert (none.text, none.reason) == ("", "no_answer_scores_higher")


def test_weights_made_for_another_model_are_refused(tiny_reader: Path, tmp_path: Path) -> None:
    from safetensors.torch import save_file

    save_file({"cls.predictions.bias": torch.zeros(3)}, str(tmp_path / "mlm.safetensors"))
    with pytest.raises(ValueError, match="qa_outputs.weight"):
        load_partial_weights(reader_from_encoder(tiny_reader), tmp_path / "mlm.safetensors")


def test_a_prefetched_squad2_bert_is_read_from_the_cache(tiny_reader, hub_unreachable, fake_hub) -> None:  # noqa: ANN001
    card = model_zoo.get_card("bert-base-squad2")
    assert card.kind == "qa" and card.fallback == "smollm2-135m-qa"
    with pytest.raises(model_zoo.ModelUnavailable) as err:
        model_zoo.load("bert-base-squad2")
    assert err.value.fallback == "smollm2-135m-qa"
    fake_hub(card.hub_repo, tiny_reader)
    reader = model_zoo.load("bert-base-squad2")
    assert isinstance(reader, model_zoo.Reader) and reader.name == "bert-base-squad2"
    got = tasks.read_answer(reader, "where is the boat ?", PASSAGE)
    assert got.reason == "no_answer_scores_higher" or got.text in PASSAGE


def test_the_score_chart_shades_the_span_and_shows_tokens_as_text() -> None:
    from components.charts import build_span_curves

    tokens = ["[CLS]", "<b>rain</b>", "falls", "[SEP]"]
    fig = build_span_curves(tokens, np.full(4, 0.25), np.full(4, 0.25), (1, 2), ("start", "end", "answer"))
    assert [d.name for d in fig.data] == ["start", "end", "answer"]
    assert fig.data[0].x[1] == "&lt;b&gt;rain&lt;/b&gt;"  # plotly draws it as the text typed
    (shade,) = fig.layout.shapes
    assert (shade.x0, shade.x1) == (0.5, 2.5)
    # a repeated token keeps its own place (categories: plotly thins their labels to the chart's width)
    again = build_span_curves(["the", "rain", "the"], np.ones(3), np.ones(3), (2, 3), ("s", "e", "a"), first=1)
    assert len(set(again.data[0].x)) == 3 and again.layout.xaxis.type == "category"
    assert (again.layout.shapes[0].x0, again.layout.shapes[0].x1) == (0.5, 2.5)  # places 2-3 counted from 1
    assert not build_span_curves(tokens, np.ones(4), np.ones(4), None, ("s", "e", "a")).layout.shapes


def test_the_score_chart_writes_the_answer_over_its_span_whatever_labels_plotly_thins() -> None:
    """A long passage's tick labels are thinned to the chart's width: the answer's own words are written over
    the shaded span, above the tallest bar, as text (a model's tokens may hold HTML)."""
    from components.charts import build_span_curves

    tokens = ["[CLS]", *(f"w{i}" for i in range(70)), "<i>gravity</i>", "[SEP]"]
    start, end = np.full(73, 0.01), np.full(73, 0.01)
    start[71] = end[71] = 0.8
    fig = build_span_curves(tokens, start, end, (71, 71), ("s", "e", "a"), first=0, answer="<i>gravity</i>")
    (label,) = fig.layout.annotations
    assert label.text == "&lt;i&gt;gravity&lt;/i&gt;" and label.x == 71 and label.xref == "x"
    assert fig.layout.yaxis.range[1] > 0.8 * 1.15  # room above the tallest bar for the label
    long = build_span_curves(tokens, start, end, (70, 71), ("s", "e", "a"), first=1, answer="x" * 80)
    assert long.layout.annotations[0].text.endswith("…") and long.layout.annotations[0].x == 69.5
    assert not build_span_curves(tokens, start, end, None, ("s", "e", "a"), answer="").layout.annotations


def test_the_diagram_feeds_each_task_from_its_vectors() -> None:
    import plotly.graph_objects as go

    from components.charts import build_task_diagram

    labels = {k: k for k in ("bert", "linear", "class", "tag", "start", "end")}
    tokens = ["[CLS]", "where", "[SEP]", "the", "boat", "…", "[SEP]"]
    segments, positions = [0, 0, 0, 1, 1, 1, 1], [0, 1, 2, 1, 2, None, 7]

    def drawn(kind: str) -> list[str]:
        return [a.text for a in build_task_diagram(kind, tokens, segments, positions, labels).layout.annotations]

    assert drawn("sentence").count("linear") == 1 and "C" in drawn("sentence")
    assert drawn("token").count("linear") == 1  # the same layer for every word, drawn once
    assert drawn("token").count("tag") == 3  # where, the, boat: not [CLS], [SEP] or the "…"
    # the words a long sentence's "…" stands for are tagged too: the layer spans it, its tags elided above it
    token = build_task_diagram("token", tokens, segments, positions, labels)
    assert [a.text for a in token.layout.annotations if a.y == 4.45] == ["tag", "tag", "tag", "…"]
    layer = next(s for s in token.layout.shapes if s.type == "rect" and s.y0 == 3.5)
    assert (layer.x0, layer.x1) == (0.6, 5.4)  # from "where" across the "…"
    qa = drawn("qa")
    assert "start" in qa and "end" in qa and "linear" not in qa
    assert {"d1", "d2", "d7"} <= set(qa) and "T1" in qa  # the passage's vectors are counted from 1
    for kind in ("sentence", "pair", "mean", "token", "qa"):  # built unvalidated: what plotly's checks make of it
        figure = build_task_diagram(kind, tokens, segments, positions, labels)
        assert go.Figure(figure.to_dict()).to_dict() == figure.to_dict()


# -- a reader on a decoder made a masked LM (train_qa --base) ---------------------------------------
def test_a_decoder_reader_reads_question_and_passage_closed_by_the_separator(tiny_mntp: tuple[Path, Path]) -> None:
    from model_zoo.bidirectional import START, reader_from_mntp

    _, tokenizer = reader_from_mntp(*tiny_mntp)
    batch = tokenizer("where is the bank ?", "We sat on the river bank.", return_offsets_mapping=True)
    tokens, sequence = batch.tokens(), batch.sequence_ids()
    assert tokens[0] == tokens[-1] == START and sequence[0] is None and sequence[-1] is None
    inside = [k for k, s in enumerate(sequence) if s == 1]
    words = ["We sat on the river bank."[a:b] for a, b in (batch["offset_mapping"][k] for k in inside)]
    assert not any(w.startswith(" ") for w in words)  # " bank" covers "bank": an answer has no leading space
    assert "".join(words) == "Wesatontheriverbank."


def test_a_decoder_reader_learns_a_span_and_serves_what_it_exported(
    tiny_mntp: tuple[Path, Path], tmp_path: Path
) -> None:
    from model_zoo.bidirectional import BidirectionalReader, load_mntp_reader
    from model_zoo.training.train_qa import AdapterTrainer

    trainer = AdapterTrainer("tiny-mntp", torch.device("cpu"), lr=3e-2, batch=4, rank=4, sources=tiny_mntp)
    examples = [
        Example("where did we sit ?", PASSAGE, "the river bank", PASSAGE.index("the river bank")),
        Example("where is the boat ?", PASSAGE, "at the water", PASSAGE.index("at the water")),
        Example("who went to the bank ?", PASSAGE, "The man", 0),
        Example("what colour is the sky ?", PASSAGE, None, -1),
    ]
    run = trainer.train(examples, epochs=150, minutes=5)  # first and final losses: means of 50 steps
    assert run["final_loss"] < run["first_loss"] / 2
    served = trainer.reader()
    assert isinstance(served, BidirectionalReader)
    read = served.read("where did we sit ?", PASSAGE)
    assert read.tokens[0] == read.tokens[-1] == "<|endoftext|>"  # "no answer" is scored on the closing one
    assert tasks.read_answer(served, "where did we sit ?", PASSAGE).text == "the river bank"
    trainer.export(tmp_path / "reader", {"model": "tiny-mntp-qa"})
    from safetensors.torch import load_file

    shipped = load_file(str(tmp_path / "reader" / "adapter_model.safetensors"))
    assert all("lora_" in k or "qa_outputs" in k for k in shipped)  # adapters and the head: never the embeddings
    assert {v.dtype for v in shipped.values()} == {torch.float16}
    model, tokenizer = load_mntp_reader(*tiny_mntp, tmp_path / "reader")
    again = BidirectionalReader("tiny-mntp-qa", model, tokenizer, torch.device("cpu")).read(
        "where did we sit ?", PASSAGE
    )
    np.testing.assert_allclose(again.start_scores, read.start_scores, atol=0.05)  # fp16 files
    np.testing.assert_allclose(again.end_scores, read.end_scores, atol=0.05)
    # `--start`: a later stage goes on from the exported adapters, reading first as they read, and trains them
    going_on = AdapterTrainer(
        "tiny-mntp", torch.device("cpu"), lr=3e-2, batch=4, sources=tiny_mntp, start=tmp_path / "reader"
    )
    before = going_on.reader().read("where did we sit ?", PASSAGE)
    np.testing.assert_allclose(before.start_scores, again.start_scores, atol=1e-3)
    assert going_on.trained and all(p.requires_grad for p in going_on.trained)
    going_on.train(examples[1:2], epochs=20, minutes=5)
    assert tasks.read_answer(going_on.reader(), "where is the boat ?", PASSAGE).text == "at the water"
    going_on.export(tmp_path / "on", {"model": "tiny-mntp-qa"})
    config = json.loads((tmp_path / "on" / "adapter_config.json").read_text())
    assert config["modules_to_save"] == ["qa_outputs"]  # the start/end layer once, as the first export lists it


def test_a_question_too_long_for_the_reader_is_one_sentence(tiny_reader: Path) -> None:
    reader = model_zoo.load(tiny_reader)
    with pytest.raises(model_zoo.errors.QuestionTooLong, match="too long"):
        reader.read("where is the boat ? " * 40, PASSAGE)  # tiny BERT reads 64 tokens
    assert reader.read("where is the boat ?", PASSAGE).tokens  # a question that fits is read as before


@pytest.mark.parametrize("kind", ["bert", "decoder"])
def test_a_class_reading_together_gets_what_each_reads_alone(
    kind: str, tiny_reader: Path, tiny_mntp: tuple[Path, Path]
) -> None:
    """Using BERT's reader for a class: thirty passages in shared padded passes (Reader.read_many), each
    learner's tokens, spans, cut and start/end scores as their pair reads alone, on a BERT reader and on a
    decoder made bidirectional (its padding must stay unseen both ways); a learner's own mistake is said
    before the batch."""
    from model_zoo.bidirectional import BidirectionalReader, reader_from_mntp

    if kind == "bert":
        reader = model_zoo.load(tiny_reader)
    else:
        reader = BidirectionalReader("tiny-qa", *reader_from_mntp(*tiny_mntp), torch.device("cpu"))
    asked = [
        ("Where is the bank?", "We sat on the river bank."),
        ("Who?", "a"),
        ("What falls under gravity?", "Rain falls under gravity. " * 3),
        ("Long?", "word " * 900),  # cut at the model's length
        ("Zürich?", "Zürich 🏦 is a city."),
    ]
    for got, (question, passage) in zip(reader.read_many(asked), asked, strict=True):
        alone = reader.read(question, passage)
        assert (got.passage, got.tokens, got.chars, got.cut) == (alone.passage, alone.tokens, alone.chars, alone.cut)
        assert np.abs(got.start_scores - alone.start_scores).max() < 1e-4
        assert np.abs(got.end_scores - alone.end_scores).max() < 1e-4
    assert reader.read_many(asked)[3].cut
    with pytest.raises(model_zoo.EmptyInput):
        reader.check_question("Where?", "  ")


def test_the_served_reader_shares_the_masked_lms_weights_and_reads_as_the_merged_one(
    tiny_mntp: tuple[Path, Path], tmp_path: Path
) -> None:
    """Each worker used to hold SmolLM2's weights three times (the causal LM, the masked LM, the reader with
    its adapters merged); the masked LM now reads the causal LM's linear weights and the reader the masked LM's,
    each one's adapters added unmerged."""
    from peft import LoraConfig, PeftModel, get_peft_model
    from transformers import AutoModelForCausalLM

    from model_zoo.bidirectional import (
        LowRankAdded,
        load_mntp,
        load_mntp_reader,
        reader_from_mntp,
        served_causal,
        served_mntp,
    )
    from model_zoo.training.train_mntp import TARGETS

    fresh, tokenizer = reader_from_mntp(*tiny_mntp)
    lora = LoraConfig(r=4, lora_alpha=8, target_modules=list(TARGETS), modules_to_save=["qa_outputs"])
    adapted = get_peft_model(fresh, lora)
    for name, p in adapted.named_parameters():
        if "lora_B" in name or "qa_outputs" in name:
            torch.nn.init.normal_(p, std=0.2)  # adapters that change every answer
    adapted.save_pretrained(str(tmp_path / "reader"))

    served, served_tokenizer = load_mntp_reader(*tiny_mntp, tmp_path / "reader")
    masked, _ = served_mntp(*tiny_mntp)
    own = {p.data_ptr() for p in masked.parameters()}
    stack = [(n, p) for n, p in served.base_model.named_parameters() if not n.endswith((".down", ".up"))]
    assert stack and all(p.data_ptr() in own for _, p in stack)  # not one weight of the stack copied
    assert served_mntp(*tiny_mntp)[0] is masked  # the Masked LM page gets the same model
    causal = served_causal(tiny_mntp[0], False)  # GPT's pages' causal LM: the masked LM reads its linear weights
    theirs = {p.data_ptr() for p in causal.parameters()}
    linear = [m.base.weight for m in masked.modules() if isinstance(m, LowRankAdded)]
    assert linear and all(w.data_ptr() in theirs for w in linear)
    fresh_causal = AutoModelForCausalLM.from_pretrained(str(tiny_mntp[0]), attn_implementation="eager")
    text = tokenizer("the river bank was muddy", return_tensors="pt")  # its vocabulary is its own: no [MASK] row
    with torch.no_grad():
        torch.testing.assert_close(causal.eval()(**text).logits, fresh_causal.eval()(**text).logits)

    merged = PeftModel.from_pretrained(reader_from_mntp(*tiny_mntp)[0], str(tmp_path / "reader")).merge_and_unload()
    batch = served_tokenizer("where did we sit ?", PASSAGE, return_tensors="pt")
    with torch.no_grad():
        a, b = served.eval()(**batch), merged.eval()(**batch)
    torch.testing.assert_close(a.start_logits, b.start_logits, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(a.end_logits, b.end_logits, atol=1e-5, rtol=1e-5)
    assert any(isinstance(m, LowRankAdded) for m in served.modules())  # beside the weights, not merged into them
    count = sum(p.numel() for p in served.parameters())
    assert count == pytest.approx(sum(p.numel() for p in merged.parameters()), rel=0.01)  # as many as merged

    alone, _ = load_mntp(*tiny_mntp)  # the masked LM itself is as it was: the reader changed none of its weights
    ids = tokenizer("the river [MASK] .", return_tensors="pt")
    with torch.no_grad():
        torch.testing.assert_close(masked.eval()(**ids).logits, alone.eval()(**ids).logits)


def test_a_class_server_in_bf16_holds_one_bf16_copy_for_the_masked_lm_and_the_reader(
    tiny_mntp: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """CONTEXTLAB_BF16 (scripts/serve.py sets `auto`): the masked LM's decoder multiplies in bf16, its eager
    model, its fused twin and the reader on it all read one bf16 copy of the weights, the output head stays
    fp32, and the guesses and answers stay those of fp32 within bf16's rounding."""
    from peft import LoraConfig, get_peft_model

    from model_zoo import onednn
    from model_zoo.bidirectional import (
        BidirectionalLM,
        BidirectionalReader,
        load_mntp_reader,
        reader_from_mntp,
        served_mntp,
    )
    from model_zoo.training.train_mntp import TARGETS

    fresh, _ = reader_from_mntp(*tiny_mntp)
    adapted = get_peft_model(
        fresh, LoraConfig(r=4, lora_alpha=8, target_modules=list(TARGETS), modules_to_save=["qa_outputs"])
    )
    for name, p in adapted.named_parameters():
        if "lora_B" in name or "qa_outputs" in name:
            torch.nn.init.normal_(p, std=0.2)
    adapted.save_pretrained(str(tmp_path / "reader"))

    def served(bf16: str) -> tuple[BidirectionalLM, BidirectionalReader]:
        monkeypatch.setenv(onednn.BF16_VAR, bf16)
        masked, tokenizer = served_mntp(*tiny_mntp)
        lm = BidirectionalLM("tiny-mntp", masked, tokenizer, torch.device("cpu"))
        reader, reader_tokenizer = load_mntp_reader(*tiny_mntp, tmp_path / "reader")
        return lm, BidirectionalReader("tiny-mntp-qa", reader, reader_tokenizer, torch.device("cpu"))

    lm32, reader32 = served("0")
    lm16, reader16 = served("1")
    assert lm16.model is not lm32.model and not onednn.runs_bf16(lm32.model)
    layers = [m for m in lm16.model.modules() if isinstance(m, torch.nn.Linear)]
    assert sum(isinstance(m, onednn.BF16Linear) for m in layers) == len(layers) - 1  # all but the output head
    assert lm16.model.lm_head.weight.dtype == torch.float32
    bf16_weights = {p.data_ptr() for p in lm16.model.parameters() if p.dtype == torch.bfloat16}
    twin = {p.data_ptr() for p in lm16.fast_model.parameters() if p.dtype == torch.bfloat16}
    stack = {p.data_ptr() for n, p in reader16.model.base_model.named_parameters() if p.dtype == torch.bfloat16}
    assert bf16_weights and twin == bf16_weights and stack == bf16_weights  # one copy, read by all three

    sentence = "the river [MASK] was muddy ."
    (want,), (got,) = lm32.fill_mask(sentence, 5), lm16.fill_mask(sentence, 5)
    assert got[0][0] == want[0][0]
    assert dict(got)[want[0][0]] == pytest.approx(want[0][1], abs=0.02)
    a, b = reader32.read("where did we sit ?", PASSAGE), reader16.read("where did we sit ?", PASSAGE)
    np.testing.assert_allclose(b.start_scores, a.start_scores, atol=0.1)
    np.testing.assert_allclose(b.end_scores, a.end_scores, atol=0.1)
    assert (
        tasks.read_answer(reader16, "where did we sit ?", PASSAGE).text
        == tasks.read_answer(reader32, "where did we sit ?", PASSAGE).text
    )


def test_the_diagram_s_token_labels_fit_their_boxes_on_a_phone() -> None:
    """A phone draws the diagram about 350 px wide: a long token (SmolLM2's <|endoftext|>, a long word) goes on
    two lines of what its box holds there (on one it ran over its neighbours, and cut it read "<|endo…"), cut
    with "…" only beyond them; a short one is drawn whole on one line."""
    import html

    from components.charts import build_task_diagram

    labels = {k: k for k in ("bert", "linear", "class", "tag", "start", "end")}
    for tokens in (
        ["<|endoftext|>", "Where", "␣did", "␣precipitation", "␣fall", "…", "?"],
        ["<|endoftext|>", "Barack", "␣Obama", "␣visited", "␣Paris", "␣in", "…", "␣delegation", "."],
    ):
        n = len(tokens)
        figure = build_task_diagram("token", tokens, [0] * n, [*range(n - 3), None, n - 3, n - 2][:n], labels)
        boxes = [s for s in figure.layout.shapes if s.type == "rect" and s.y0 == 0.0]
        # as plotly shows it: a box's lines
        drawn = [html.unescape(a.text).split("<br>") for a in figure.layout.annotations if a.y == 0.3]
        px = 350 / (figure.layout.xaxis.range[1] - figure.layout.xaxis.range[0])
        assert len(boxes) == len(drawn) == n
        for token, lines, box in zip(tokens, drawn, boxes):
            assert len(lines) <= 2  # two lines fill the box's 0.6 of the diagram's 5.1 (280 px) at 11 px
            for line in lines:  # at 11 px a character is 5.0-5.5 px in Chromium
                assert len(line) * 5.6 <= (box.x1 - box.x0) * px
            text = "".join(lines)
            assert text == token or (text.endswith("…") and token.startswith(text[:-1]))
        assert ["Barack"] in drawn or n < 9  # a short word stays whole, on one line
        # the [CLS] stand-in on two lines: whole beside six tokens, one character short beside eight (at 9 px)
        assert drawn[0] == (["<|endof", "text|>"] if n < 9 else ["<|endo", "ftext…"])


def test_picking_a_reader_keeps_what_the_page_shows_under_both_rules(
    tiny_mntp: tuple[Path, Path], tiny_mntp_reader: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`train_qa --pick` ships the run best on development questions and scores it on the test questions once:
    by SQuAD 2.0's rule (what the page serves) and, from the same readings, by the lecture's rule, so the Using
    BERT page keeps its "by the lecture's rule" line; the runs the shipped reader was chosen from stay listed."""
    import shutil

    from model_zoo.bidirectional import BidirectionalReader, reader_from_mntp
    from model_zoo.registry import get_card
    from model_zoo.trained import _read
    from model_zoo.training import train_qa

    reader = BidirectionalReader("tiny-qa", *reader_from_mntp(*tiny_mntp), torch.device("cpu"))
    monkeypatch.setattr(train_qa, "shipped_reader", lambda folder, device, name=None: reader)
    shipped = json.loads((Path("assets/models/smollm2-135m-qa/metrics.json")).read_text())
    out, new = tmp_path / "shipped", tmp_path / "e"
    out.mkdir()
    shutil.copytree(tiny_mntp_reader, new)
    tests = (*train_qa.MEASURED, "rule")
    (out / "metrics.json").write_text(json.dumps({k: v for k, v in shipped.items() if k not in tests}))
    better = json.loads(json.dumps(shipped["dev"]))
    better["written_dev"]["f1"] += 0.01
    run = {k: v for k, v in shipped.items() if k not in (*tests, "chosen_from")} | {"dev": better}
    (new / "metrics.json").write_text(json.dumps(run))
    questions = [("where did we sit ?", "the river bank"), ("who went to the bank ?", "The man")]
    cloze = [Example(q, PASSAGE, a, PASSAGE.index(a)) for q, a in questions]
    cloze += [Example("what colour is the sky ?", PASSAGE, None, -1)]
    mine = [tasks.Question(PASSAGE, q, a) for q, a in (*questions, ("where is the boat ?", "at the water"))]
    # the written questions, short enough for the tiny reader's 64 tokens
    monkeypatch.setattr(train_qa, "written", lambda: {"train": cloze[:2], "test": train_qa.examples_of(mine)})
    monkeypatch.setattr(tasks, "written_passages", lambda: {tasks.LECTURE_PASSAGE: mine})
    monkeypatch.setattr(tasks, "load_more_questions", lambda: mine[:1])
    runs = {str(d): json.loads((d / "metrics.json").read_text()) for d in (out, new)}
    best = max(runs, key=lambda d: train_qa.dev_f1(runs[d]["dev"]))
    train_qa.ship_reader(Path(best), out, runs, {"train": cloze, "test": cloze}, torch.device("cpu"))

    got = json.loads((out / "metrics.json").read_text())
    assert (out / "adapter_model.safetensors").read_bytes() == (new / "adapter_model.safetensors").read_bytes()
    assert [c["run"] for c in got["chosen_from"]] == [*(c["run"] for c in shipped["chosen_from"]), "e"]
    assert set(got["rule"]["dev"]) == {"lecture", "squad2", "typed"}
    for other in ("by_lecture_rule", "by_squad2_rule"):
        assert set(got[other]) == {"cloze_test", "written_train", "written_test", "lecture"}
    # the served answers (tasks.read_answer) and the lecture's rule, from one reading each
    lecture = tasks.written_passages()[tasks.LECTURE_PASSAGE]
    assert [x["got"] for x in got["lecture"]] == [
        tasks.read_answer(reader, q.question, q.passage).text for q in lecture
    ]
    test = train_qa.written()["test"]
    assert got["written_test"] == train_qa.evaluate(reader, test)
    readings = [reader.read(ex.question, ex.passage) for ex in test]
    by_lecture = [
        tasks.pick_answer(r.tokens, r.chars, r.start_scores, r.end_scores, r.passage, framed=False).text
        for r in readings
    ]
    assert got["by_lecture_rule"]["written_test"] == train_qa.evaluate_answers(test, by_lecture)
    page = _read(get_card("smollm2-135m-qa"), got)  # what the Using BERT page's training box reads
    assert page.by_lecture_rule is not None and page.by_lecture_rule.f1 == got["by_lecture_rule"]["written_test"]["f1"]
    assert page.went_on is not None and page.went_on.runs == len(shipped["chosen_from"]) + 1


def test_the_answer_box_names_the_span_a_what_question_passed_over() -> None:
    """The page gives the typed answer and says, under it, which span the scores alone preferred."""
    from streamlit.testing.v1 import AppTest

    def script() -> None:
        import numpy as np

        from components.task_views import render_answer
        from model_zoo.lessons import tasks

        text = "rain falls under gravity"
        tokens = ["[CLS]", "rain", " falls", " under", " gravity", "[SEP]"]
        chars = [None, (0, 4), (5, 10), (11, 16), (17, 24), None]
        start, end = np.array([0.0, 0, 0, 6.8, 1.7, 0]), np.array([0.0, 0, 0, 0, 9.0, 0])
        for question in ("What causes rain to fall?", "How does rain fall?"):
            got = tasks.pick_answer(tokens, chars, start, end, text, framed=True, question=question)
            render_answer(got, "tiny-qa", key=question)

    at = AppTest.from_function(script).run()
    assert not at.exception
    assert [box.value.split("**")[1] for box in at.success] == ["gravity", "under gravity"]
    passed = [c.value for c in at.caption if "By its scores alone" in c.value]
    assert len(passed) == 1 and "“under gravity”" in passed[0]
