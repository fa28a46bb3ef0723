"""Pre-training a masked LM as a whole (model_zoo.training.train_mlm), on a tiny model and corpus."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from model_zoo.lessons import cloze
from model_zoo.loading import FROZEN, masked_lm_with_trained_weights, trained_state
from model_zoo.training.train_mlm import Config, Trainer, batches, collate, context_unlikelihood, pack, read_documents
from tests.conftest import save_tiny_bert

SENTENCES = [
    "the man went to the bank .",
    "we sat on the river bank .",
    "i deposit his money at the bank .",
    "the fish is in the water .",
    "we sat on the boat .",
    "the man is at the river .",
    "i sat on the bank of the river .",
    "his money is in the bank .",
]


def write_corpus(folder: Path) -> Path:
    """Documents of 2-3 sentences from a 40-word vocabulary: enough for a tiny model to learn."""
    folder.mkdir(parents=True, exist_ok=True)
    docs = [[SENTENCES[(i + j) % len(SENTENCES)] for j in range(2 + i % 2)] for i in range(200)]
    (folder / "train.txt").write_text("".join("\n".join(d) + "\n\n" for d in docs))
    (folder / "held.txt").write_text("".join("\n".join(d) + "\n\n" for d in docs[:40]))
    return folder


@pytest.fixture
def tiny_run(tmp_path: Path):
    encoder = save_tiny_bert(tmp_path / "encoder", pretraining=False)
    corpus = write_corpus(tmp_path / "corpus")
    config = Config(max_tokens=16, batch=8, lr=3e-3, warmup_steps=5, total_tokens=8 * 12 * 150, eval_every=1000)

    def trainer(run: str = "run") -> Trainer:
        torch.manual_seed(0)
        return Trainer(corpus, tmp_path / run, config, "cpu", encoder)

    return trainer, encoder


def test_pack_keeps_documents_apart_and_sentences_whole() -> None:
    docs = [[[1, 2, 3], [4, 5], [6, 7, 8, 9]], [[10, 11]]]
    assert pack(docs, max_tokens=7) == [[1, 2, 3, 4, 5], [6, 7, 8, 9], [10, 11]]
    assert pack([[[1] * 20]], max_tokens=7) == [[1] * 5]  # a long sentence is cut to fit [CLS] ... [SEP]


def test_batches_cover_each_sequence_once_with_little_padding() -> None:
    lengths = [(i * 37) % 60 + 1 for i in range(3200)]
    epoch = batches(lengths, batch=32, seed=0, epoch=0)
    flat = [i for b in epoch for i in b]
    assert len(flat) == len(set(flat)) == 3200
    padding = sum(max(lengths[i] for i in b) * len(b) - sum(lengths[i] for i in b) for b in epoch)
    assert padding < 0.05 * sum(lengths)  # unsorted batches of these lengths pad about half
    assert epoch == batches(lengths, 32, 0, 0) and epoch != batches(lengths, 32, 0, 1)


def test_collate_marks_specials_and_padding(tiny_run) -> None:
    trainer, _ = tiny_run
    tok = trainer().tokenizer
    ids, attention, special = collate([[7, 8, 9], [7]], tok)
    assert ids[0].tolist() == [tok.cls_token_id, 7, 8, 9, tok.sep_token_id]
    assert ids[1].tolist() == [tok.cls_token_id, 7, tok.sep_token_id, tok.pad_token_id, tok.pad_token_id]
    assert attention[1].tolist() == [1, 1, 1, 0, 0]
    assert special[1].tolist() == [True, False, True, True, True]


def test_training_learns_what_context_says(tiny_run) -> None:
    trainer, _ = tiny_run
    run = trainer()
    before = run.evaluate(None)
    run.train(hours=1, checkpoint_minutes=60, progress=False)
    after = run.curve()[-1]
    assert after["step"] == run.steps_total  # the schedule ran to its end
    assert after["held_top1"] > max(before["held_top1"], after["unigram_top1"]) + 0.1
    assert after["held_top5"] > after["unigram_top5"] + 0.1
    frozen = run.model.get_parameter(FROZEN)
    assert not frozen.requires_grad and run.model.cls.predictions.decoder.weight is frozen


def test_resuming_equals_training_without_a_stop(tiny_run) -> None:
    trainer, _ = tiny_run
    whole = trainer("whole")
    whole.train(hours=1, checkpoint_minutes=60, progress=False, until_step=20)
    first = trainer("halves")
    first.train(hours=1, checkpoint_minutes=60, progress=False, until_step=10)
    second = trainer("halves")  # a new process would do the same: everything comes from checkpoint.pt
    assert second.step == 10
    second.train(hours=1, checkpoint_minutes=60, progress=False, until_step=20)
    a, b = trained_state(whole.model), trained_state(second.model)
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_exported_weights_load_as_the_trained_model(tiny_run, tmp_path: Path) -> None:
    trainer, encoder = tiny_run
    run = trainer()
    run.train(hours=1, checkpoint_minutes=60, progress=False, until_step=15)
    metrics = run.export(tmp_path / "out")
    assert metrics["script"] == "python -m model_zoo.train_mlm" and metrics["tokens_seen"] == run.tokens
    assert json.loads((tmp_path / "out" / "metrics.json").read_text())["curve"][-1]["tokens"] == run.tokens
    loaded = masked_lm_with_trained_weights(encoder, tmp_path / "out" / "model.safetensors").eval()
    run.model.eval()
    ids, attention, _ = collate([[7, 8, 9, 10]], run.tokenizer)
    with torch.inference_mode():
        want = run.model(input_ids=ids, attention_mask=attention).logits
        got = loaded(input_ids=ids, attention_mask=attention).logits
    torch.testing.assert_close(got, want, atol=0.05, rtol=0.01)  # shipped in fp16


def test_a_new_run_can_start_from_exported_weights(tiny_run, tmp_path: Path) -> None:
    trainer, encoder = tiny_run
    first = trainer()
    first.train(hours=1, checkpoint_minutes=60, progress=False, until_step=15)
    first.export(tmp_path / "out")
    torch.manual_seed(0)
    again = Trainer(
        first.run_dir.parent / "corpus",
        tmp_path / "second",
        first.config,
        "cpu",
        encoder,
        tmp_path / "out" / "model.safetensors",
    )
    assert again.step == 0
    a, b = trained_state(first.model), trained_state(again.model)
    assert all(torch.allclose(a[k], b[k].float(), atol=1e-2) for k in a)  # fp16 export


def test_a_continued_run_exports_the_whole_history(tiny_run, tmp_path: Path) -> None:
    """A run started from exported weights adds its tokens, time, steps and curve to theirs."""
    trainer, encoder = tiny_run
    first = trainer()
    first.train(hours=1, checkpoint_minutes=60, progress=False, until_step=10)
    before = first.export(tmp_path / "out")
    torch.manual_seed(0)
    config = Config(**{**vars(first.config), "unlikelihood": 1.0})
    again = Trainer(
        first.run_dir.parent / "corpus",
        tmp_path / "second",
        config,
        "cpu",
        encoder,
        tmp_path / "out" / "model.safetensors",
    )
    again.train(hours=1, checkpoint_minutes=60, progress=False, until_step=5)
    after = again.export(tmp_path / "out")
    assert after["tokens_seen"] == before["tokens_seen"] + again.tokens and after["steps"] == 15
    assert [s["tokens"] for s in after["stages"]] == [before["tokens_seen"], again.tokens]
    assert [s["config"]["unlikelihood"] for s in after["stages"]] == [0.0, 1.0]
    tokens = [p["tokens"] for p in after["curve"]]
    assert tokens[: len(before["curve"])] == [p["tokens"] for p in before["curve"]]
    assert tokens == sorted(tokens) and tokens[-1] == after["tokens_seen"]


def test_unlikelihood_charges_the_sequences_own_words_but_not_the_answer() -> None:
    vocab = 10
    ids = torch.tensor([[1, 4, 5, 6, 2, 0], [1, 7, 8, 2, 0, 0]])  # [CLS]=1 [SEP]=2 [PAD]=0
    special = (ids == 1) | (ids == 2) | (ids == 0)
    picked = torch.zeros_like(ids, dtype=torch.bool)
    picked[0, 2] = picked[1, 1] = True  # the answers: 5 in row 0, 7 in row 1
    labels = torch.tensor([5, 7])

    def paid(row0: int, row1: int) -> float:
        """The term when each picked position puts nearly all its probability on one word."""
        logits = torch.full((2, vocab), -10.0)
        logits[0, row0] = logits[1, row1] = 10.0
        return float(context_unlikelihood(logits, labels, ids, special, picked))

    assert paid(5, 7) < 1e-3  # the answers themselves cost nothing
    assert paid(9, 3) < 1e-3  # nor do words outside the sequence
    assert paid(4, 7) > 3  # another word of row 0's own text: charged
    assert paid(8, 7) < 1e-3  # a word of the other row's text is not a negative here
    assert paid(1, 2) < 1e-3 and paid(0, 0) < 1e-3  # nor are specials or padding


def test_weights_for_another_encoder_are_refused(tiny_run, tmp_path: Path) -> None:
    from safetensors.torch import save_file

    _, encoder = tiny_run
    save_file({"bert.encoder.layer.0.output.dense.weight": torch.zeros(2, 2)}, str(tmp_path / "bad.safetensors"))
    with pytest.raises(ValueError, match="does not fit this model: missing"):
        masked_lm_with_trained_weights(encoder, tmp_path / "bad.safetensors")


def test_read_documents_splits_at_blank_lines(tmp_path: Path) -> None:
    (tmp_path / "c.txt").write_text("a b.\nc d.\n\n\ne f.\n")
    assert read_documents(tmp_path / "c.txt") == [["a b.", "c d."], ["e f."]]


# -- the cloze set --------------------------------------------------------------------------
def test_cloze_score_counts_first_and_top_five() -> None:
    items = [cloze.ClozeItem("a [MASK]", frozenset({"bank"})), cloze.ClozeItem("b [MASK]", frozenset({"dog"}))]
    got = cloze.score(items, [["bank", "the"], ["the", "a", "cat", "of", "dog", "x"]])
    assert got == {"cloze_top1": 0.5, "cloze_top5": 1.0, "cloze_copies": 0.0, "cloze_items": 2}
    assert cloze.score(items, [["the"], ["x"] * 5 + ["dog"]])["cloze_top5"] == 0.0  # a sixth guess is out


def test_cloze_set_is_well_formed(offline_tokenizer) -> None:
    items = cloze.items()
    assert len(items) >= 100
    assert all(i.text.count("[MASK]") == 1 for i in items)
    vocab = offline_tokenizer.get_vocab()
    not_one_piece = sorted(a for i in items for a in i.answers if a not in vocab)
    assert not not_one_piece, f"answers a WordPiece model can never guess in one token: {not_one_piece}"
