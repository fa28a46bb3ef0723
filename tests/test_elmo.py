"""ELMo's biLM (model_zoo.elmo) on tiny random weights in AllenNLP's layout, and its trainer (model_zoo.training.train_elmo)."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import pytest
import torch

import model_zoo
from model_zoo.elmo import (
    BOS,
    EOS,
    UNK,
    ElmoModel,
    char_id_tensor,
    char_ids,
    lm_nll,
    load_elmo,
    save_elmo,
    tokenize,
)
from model_zoo.errors import BadCheckpoint, EmptyInput, MissingCapability, WordNotInText

# A tiny biLM, as options.json says it: 3 filters (18 in all), 2 highways, P 6, C 10, 2 layers.
OPTIONS = {
    "lstm": {
        "use_skip_connections": True,
        "projection_dim": 6,
        "cell_clip": 3,
        "proj_clip": 3,
        "dim": 10,
        "n_layers": 2,
    },
    "char_cnn": {
        "activation": "relu",
        "filters": [[1, 4], [2, 6], [3, 8]],
        "n_highway": 2,
        "embedding": {"dim": 4},
        "n_characters": 262,
        "max_characters_per_token": 50,
    },
}
VOCAB = [BOS, EOS, UNK, "the", "man", "went", "to", "bank", "river", "."]
TEXT = "The man went to the bank."


def allennlp_layout(options: dict, vocab_size: int = 0) -> dict[str, tuple[int, ...]]:
    """The datasets of bilm-tf's weights.hdf5 (its dump_weights names), written out here by hand."""
    e, p, c = options["char_cnn"]["embedding"]["dim"], options["lstm"]["projection_dim"], options["lstm"]["dim"]
    filters = options["char_cnn"]["filters"]
    f = sum(n for _, n in filters)
    shapes: dict[str, tuple[int, ...]] = {"char_embed": (261, e)}
    for i, (w, n) in enumerate(filters):
        shapes[f"CNN/W_cnn_{i}"], shapes[f"CNN/b_cnn_{i}"] = (1, w, e, n), (n,)
    for k in range(options["char_cnn"]["n_highway"]):
        for part in ("transform", "carry"):
            shapes[f"CNN_high_{k}/W_{part}"], shapes[f"CNN_high_{k}/b_{part}"] = (f, f), (f,)
    shapes["CNN_proj/W_proj"], shapes["CNN_proj/b_proj"] = (f, p), (p,)
    for d in range(2):
        for layer in range(options["lstm"]["n_layers"]):
            cell = f"RNN_{d}/RNN/MultiRNNCell/Cell{layer}/LSTMCell/"
            shapes[cell + "W_0"], shapes[cell + "B"], shapes[cell + "W_P_0"] = (2 * p, 4 * c), (4 * c,), (c, p)
    if vocab_size:
        shapes["softmax/W"], shapes["softmax/b"] = (vocab_size, p), (vocab_size,)
    return shapes


def write_elmo(folder: Path, options: dict = OPTIONS, vocab: list[str] | None = None, seed: int = 0) -> Path:
    """options.json + weights.hdf5 (+ vocab.txt) with random values in every dataset."""
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    (folder / "options.json").write_text(json.dumps(options))
    with h5py.File(folder / "weights.hdf5", "w") as fout:
        for name, shape in allennlp_layout(options, len(vocab or [])).items():
            fout.create_dataset(name, data=rng.normal(0, 0.5, shape).astype(np.float32))
    if vocab:
        (folder / "vocab.txt").write_text("".join(w + "\n" for w in vocab))
    return folder


def datasets(path: Path) -> dict[str, np.ndarray]:
    out: dict[str, np.ndarray] = {}
    with h5py.File(path, "r") as fin:
        fin.visititems(lambda n, o: out.__setitem__(n, o[...]) if isinstance(o, h5py.Dataset) else None)
    return out


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_elmo(tmp_path_factory.mktemp("elmo") / "tiny-elmo", vocab=VOCAB)


@pytest.fixture(scope="module")
def elmo(folder: Path) -> ElmoModel:
    return load_elmo(folder, device="cpu")


def outputs(model: ElmoModel) -> np.ndarray:
    """Everything the model says about TEXT: its three layers and, with a softmax, both LMs' words."""
    parts = [model.encode(TEXT).hidden_states.ravel()]
    if model.has_softmax:
        parts += [np.array([p for _, p in model.next_words(TEXT, 5) + model.previous_words(TEXT, 5)])]
    return np.concatenate(parts)


# -- characters and words --------------------------------------------------------------------
def test_character_ids_are_allennlps() -> None:
    pad = [261] * 47
    assert char_ids(BOS) == [259, 257, 260, *pad]
    assert char_ids(EOS) == [259, 258, 260, *pad]
    assert char_ids("a") == [259, 98, 260, *pad]
    assert char_ids("café") == [259, 100, 98, 103, 0xC3 + 1, 0xA9 + 1, 260, *[261] * 43]
    assert char_ids("银") == [259, 0xE9 + 1, 0x93 + 1, 0xB6 + 1, 260, *[261] * 45]
    assert char_ids("x" * 60) == [259, *[ord("x") + 1] * 48, 260]  # cut to 48 bytes between the markers
    assert char_ids("é" * 30)[:3] == [259, 0xC3 + 1, 0xA9 + 1] and len(char_ids("é" * 30)) == 50
    ids, lengths = char_id_tensor([["a", "b"], ["c"]])
    assert ids.shape == (2, 4, 50) and lengths.tolist() == [4, 3]
    assert ids[1, 0].tolist() == char_ids(BOS) and ids[1, 2].tolist() == char_ids(EOS)
    assert not ids[1, 3].any()  # padding is the all-zero word: the mask


def test_tokenize_splits_punctuation_and_keeps_case() -> None:
    assert tokenize("The bank's river-bank, (3.5%)!") == [
        *("The", "bank's", "river-bank", ",", "(", "3", ".", "5", "%", ")", "!"),
    ]
    assert tokenize("银行在河边") == ["银", "行", "在", "河", "边"]
    assert tokenize(" \t\n") == []


# -- loading AllenNLP's files ----------------------------------------------------------------
def _swap(x: np.ndarray, c: int) -> np.ndarray:  # TensorFlow's gates (i, j, f, o) -> AllenNLP's (i, f, j, o)
    return np.concatenate([x[:c], x[2 * c : 3 * c], x[c : 2 * c], x[3 * c :]])


def test_loader_fills_every_parameter_from_its_dataset(folder: Path, elmo: ElmoModel) -> None:
    """Each parameter equals the dataset it comes from, converted as AllenNLP's loaders convert it."""
    h = datasets(folder / "weights.hdf5")
    c, p = OPTIONS["lstm"]["dim"], OPTIONS["lstm"]["projection_dim"]
    want = {"chars.char_embed": h["char_embed"], "softmax_w": h["softmax/W"], "softmax_b": h["softmax/b"]}
    for i in range(3):
        want[f"chars.convs.{i}.weight"] = np.transpose(h[f"CNN/W_cnn_{i}"].squeeze(0), (2, 1, 0))
        want[f"chars.convs.{i}.bias"] = h[f"CNN/b_cnn_{i}"]
    for k in range(2):
        g = f"CNN_high_{k}/"
        want[f"chars.highways.{k}.weight"] = np.concatenate([h[g + "W_transform"].T, -1.0 * h[g + "W_carry"].T])
        want[f"chars.highways.{k}.bias"] = np.concatenate([h[g + "b_transform"], -1.0 * h[g + "b_carry"]])
    want["chars.projection.weight"], want["chars.projection.bias"] = h["CNN_proj/W_proj"].T, h["CNN_proj/b_proj"]
    for d, stack in enumerate(("forward_layers", "backward_layers")):
        for layer in range(2):
            cell = f"RNN_{d}/RNN/MultiRNNCell/Cell{layer}/LSTMCell/"
            w = h[cell + "W_0"].T
            bias = h[cell + "B"].copy()
            bias[2 * c : 3 * c] += 1  # TensorFlow's forget_bias
            want[f"{stack}.{layer}.input_linearity.weight"] = _swap(w[:, :p], c)
            want[f"{stack}.{layer}.state_linearity.weight"] = _swap(w[:, p:], c)
            want[f"{stack}.{layer}.state_linearity.bias"] = _swap(bias, c)
            want[f"{stack}.{layer}.state_projection.weight"] = h[cell + "W_P_0"].T
    state = elmo.bilm.state_dict()
    assert set(state) == set(want)  # nothing left at its initial value
    for name, tensor in state.items():
        np.testing.assert_array_equal(tensor.numpy(), want[name].astype(np.float32), err_msg=name)


def test_every_dataset_changes_what_the_model_says(folder: Path, elmo: ElmoModel, tmp_path: Path) -> None:
    before = outputs(elmo)
    names = list(allennlp_layout(OPTIONS, len(VOCAB)))
    for i, name in enumerate(names):
        changed = write_elmo(tmp_path / f"m{i}", vocab=VOCAB)
        with h5py.File(changed / "weights.hdf5", "r+") as fout:
            fout[name][...] += np.random.default_rng(i).normal(0, 0.5, fout[name].shape)
        assert not np.allclose(outputs(load_elmo(changed, device="cpu")), before, atol=1e-5), name


def test_a_missing_or_extra_dataset_is_named(tmp_path: Path) -> None:
    missing = write_elmo(tmp_path / "missing")
    with h5py.File(missing / "weights.hdf5", "r+") as fout:
        del fout["CNN_high_1/W_carry"]
    with pytest.raises(BadCheckpoint, match="missing dataset CNN_high_1/W_carry"):
        load_elmo(missing)
    extra = write_elmo(tmp_path / "extra")
    with h5py.File(extra / "weights.hdf5", "r+") as fout:
        fout.create_dataset("RNN_0/RNN/MultiRNNCell/Cell2/LSTMCell/W_0", data=np.zeros((12, 40), np.float32))
    with pytest.raises(BadCheckpoint, match="unexpected dataset RNN_0/RNN/MultiRNNCell/Cell2/LSTMCell/W_0"):
        load_elmo(extra)
    shaped = write_elmo(tmp_path / "shaped")
    with h5py.File(shaped / "weights.hdf5", "r+") as fout:
        del fout["CNN_proj/b_proj"]
        fout.create_dataset("CNN_proj/b_proj", data=np.zeros(7, np.float32))
    with pytest.raises(BadCheckpoint, match=r"CNN_proj/b_proj is \(7,\), expected \(6,\)"):
        load_elmo(shaped)


def test_bad_options_and_missing_files_are_named(tmp_path: Path) -> None:
    no_projection = write_elmo(tmp_path / "a")
    options = json.loads((no_projection / "options.json").read_text())
    del options["lstm"]["projection_dim"]
    (no_projection / "options.json").write_text(json.dumps(options))
    with pytest.raises(BadCheckpoint, match="projection_dim"):
        load_elmo(no_projection)
    no_weights = write_elmo(tmp_path / "b")
    (no_weights / "weights.hdf5").unlink()
    with pytest.raises(BadCheckpoint, match="weights.hdf5 is missing"):
        load_elmo(no_weights)
    softmax_without_vocab = write_elmo(tmp_path / "d", vocab=VOCAB)
    (softmax_without_vocab / "vocab.txt").unlink()
    with pytest.raises(BadCheckpoint, match="no vocab.txt"):
        load_elmo(softmax_without_vocab)


def test_model_zoo_load_reads_the_folder(folder: Path) -> None:
    model = model_zoo.load(folder)
    assert isinstance(model, model_zoo.ElmoModel) and isinstance(model, model_zoo.Contextual)
    assert model.name == "tiny-elmo" and model.kind == "elmo" and model.max_length == 256


def test_save_then_load_gives_the_same_model(folder: Path, elmo: ElmoModel, tmp_path: Path) -> None:
    save_elmo(elmo, tmp_path / "again", softmax_dtype=np.float32)
    again = load_elmo(tmp_path / "again", device="cpu")
    np.testing.assert_allclose(outputs(again), outputs(elmo), atol=1e-6)
    original, written = datasets(folder / "weights.hdf5"), datasets(tmp_path / "again" / "weights.hdf5")
    assert set(written) == set(original)
    for name, values in original.items():  # B round-trips through TensorFlow's forget bias (+1, -1)
        np.testing.assert_allclose(written[name], values, atol=1e-6, err_msg=name)
    assert (tmp_path / "again" / "vocab.txt").read_text().split("\n")[:3] == [BOS, EOS, UNK]
    save_elmo(elmo, tmp_path / "half")  # the softmax in fp16 by default
    assert datasets(tmp_path / "half" / "weights.hdf5")["softmax/W"].dtype == np.float16


# -- the contextual-model contract -----------------------------------------------------------
def test_encode_gives_three_layers_per_word(elmo: ElmoModel) -> None:
    enc = elmo.encode(TEXT)
    assert enc.tokens == enc.words == ["The", "man", "went", "to", "the", "bank", "."]  # no <S>, </S>
    assert enc.hidden_states.shape == (3, 7, 12) and enc.hidden_states.dtype == np.float32
    assert enc.num_layers == 2 and enc.attentions is None and not enc.truncated
    assert enc.word_ids == list(range(7)) and not enc.segment_ids.any()
    np.testing.assert_array_equal(enc.hidden_states[0, :, :6], enc.hidden_states[0, :, 6:])  # token layer twice
    assert enc.token_ids.tolist() == [2, 4, 5, 6, 3, 7, 9]  # vocabulary ids ("The" is <UNK>: case is kept)
    assert elmo.count_tokens(TEXT) == 7


def test_forward_halves_read_the_left_backward_halves_the_right(elmo: ElmoModel) -> None:
    long, short = elmo.encode("a b c d").hidden_states, elmo.encode("a b c").hidden_states
    np.testing.assert_allclose(long[1:, :3, :6], short[1:, :, :6], atol=1e-6)  # forward: "d" is not seen yet
    assert not np.allclose(long[1:, 2, 6:], short[1:, 2, 6:], atol=1e-4)  # backward: "c" sees "d"
    shifted = elmo.encode("x a b c").hidden_states
    np.testing.assert_allclose(shifted[1:, 1:, 6:], short[1:, :, 6:], atol=1e-6)  # backward: "x" is behind


def test_a_batch_equals_each_text_alone_and_calls_are_stateless(elmo: ElmoModel) -> None:
    texts = ["bank", "We sat on the river bank and the water was high near the bank .", "to the bank !"]
    alone = [elmo.encode(t).hidden_states for t in texts]
    for together, one in zip(elmo.encode_many(texts), alone):
        np.testing.assert_allclose(together.hidden_states, one, atol=1e-5)
    np.testing.assert_array_equal(elmo.encode(texts[0]).hidden_states, alone[0])  # after other calls: no state
    vectors = elmo.word_vectors(texts, "bank")
    assert vectors.shape == (3, 3, 12)
    np.testing.assert_allclose(vectors[1], alone[1][:, 5], atol=1e-5)  # the first use of "bank"
    with ThreadPoolExecutor(4) as pool:  # one model shared by many threads
        for got, want in zip(pool.map(lambda t: elmo.encode(t).hidden_states, texts * 4), alone * 4):
            np.testing.assert_allclose(got, want, atol=1e-5)


def test_word_vectors_follow_model_zoo_words(elmo: ElmoModel) -> None:
    states = elmo.encode("The bank's owner.").hidden_states
    np.testing.assert_allclose(elmo.word_vectors(["The bank's owner."], "BANK")[0], states[:, 1], atol=1e-5)
    with pytest.raises(WordNotInText) as err:
        elmo.word_vectors(["the bank", "the banks"], "bank")
    assert err.value.index == 1
    with pytest.raises(EmptyInput):
        elmo.word_vectors(["the bank"], " ")


def test_next_and_previous_words_come_from_the_softmax(elmo: ElmoModel) -> None:
    after, before = elmo.next_words("the man went to", 4), elmo.previous_words("man went", 4)
    for guesses in (after, before):
        words, probs = [w for w, _ in guesses], [p for _, p in guesses]
        assert len(guesses) == 4 and set(words) <= set(VOCAB)
        assert probs == sorted(probs, reverse=True) and 0 < sum(probs) <= 1 + 1e-6
    assert elmo.next_words("the man went to", 100)[-1][1] > 0 and len(elmo.next_words("the", 100)) == len(VOCAB)
    top = elmo.encode("the man went to").hidden_states[2]  # (T, 2P): the forward half, then the backward half
    w, b = elmo.bilm.softmax_w.detach().numpy(), elmo.bilm.softmax_b.detach().numpy()

    def softmax(h: np.ndarray) -> np.ndarray:
        z = np.exp(w @ h + b - (w @ h + b).max())
        return z / z.sum()

    for guesses, state in (
        (elmo.next_words("the man went to", 3), top[-1, :6]),
        (elmo.previous_words("the man went to", 3), top[0, 6:]),
    ):
        # the last word's forward state predicts the next word; the first word's backward state the one before
        probs = softmax(state)
        for (word, p), i in zip(guesses, np.argsort(-probs)):
            assert word == VOCAB[i] and p == pytest.approx(probs[i], rel=1e-4)
    assert elmo.vocab_size == len(VOCAB)
    ppl = elmo.perplexity(["the man went to the bank .", "", "to the river"])
    assert ppl.targets == 7 + 1 + 3 + 1 and ppl.unknown == 0 and ppl.forward > 1 and ppl.backward > 1


def test_a_biLM_without_softmax_says_so(tmp_path: Path) -> None:
    bare = load_elmo(write_elmo(tmp_path / "bare"), device="cpu")
    assert not bare.has_softmax and bare.vocab_size == 0
    assert bare.encode(TEXT).token_ids.tolist() == [0] * 7
    with pytest.raises(MissingCapability, match="no softmax"):
        bare.next_words("the man")


# -- bad input -------------------------------------------------------------------------------
def test_bad_input(elmo: ElmoModel) -> None:
    for empty in ("", "   \n\t"):
        with pytest.raises(EmptyInput):
            elmo.encode(empty)
        with pytest.raises(EmptyInput):
            elmo.next_words(empty)
    with pytest.raises(MissingCapability, match="one text"):
        elmo.encode("a", "b")
    long_word = "x" * 60
    enc = elmo.encode(f"the {long_word} bank")
    assert enc.tokens == ["the", long_word, "bank"]  # shown whole, read as its first 48 bytes
    np.testing.assert_allclose(enc.hidden_states[:, 1], elmo.encode(f"the {'x' * 48} bank").hidden_states[:, 1])
    chinese = elmo.encode("银行在河边。")
    assert chinese.tokens == ["银", "行", "在", "河", "边", "。"] and np.isfinite(chinese.hidden_states).all()
    essay = elmo.encode("the bank " * 200)
    assert essay.truncated and len(essay.tokens) == 256 and essay.hidden_states.shape == (3, 256, 12)
    assert elmo.count_tokens("the bank " * 200) == 400
    short = elmo.encode("the man went to the bank", max_length=3)
    assert short.truncated and short.tokens == ["the", "man", "went"]
    assert elmo.encode("a\x00b\ud800c").tokens == ["a", "b", "\ufffd", "c"]  # valid_text first
    assert [w for w, _ in elmo.next_words("the bank " * 300, 3)] == [
        w for w, _ in elmo.next_words("the bank " * 200, 3)
    ]


# -- training elmo-mini ----------------------------------------------------------------------
SENTENCES = [
    "The man went to the bank.",
    "We sat on the river bank.",
    "I deposit my money at the bank.",
    "The fish is in the water.",
    "We sat on the boat.",
    "The man is at the river.",
    "I sat on the bank of the river.",
    "His money is in the bank!",
]


def write_corpus(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    docs = [[SENTENCES[(i + j) % len(SENTENCES)] for j in range(2 + i % 2)] for i in range(60)]
    (folder / "train.txt").write_text("".join("\n".join(d) + "\n\n" for d in docs))
    (folder / "held.txt").write_text("".join("\n".join(d) + "\n\n" for d in docs[:10]))
    return folder


def tiny_config(**changed: Any) -> Any:
    """A tiny ELMo's training settings (a run of seconds), with `changed` ones."""
    from model_zoo.training.train_elmo import Config

    return Config(
        char_dim=4,
        filters="1:4,2:8,3:8",
        projection_dim=8,
        cell_dim=16,
        min_count=1,
        batch_tokens=96,
        lr=3e-2,
        warmup_tokens=50,
        total_tokens=6000,
        eval_every=1000,
        held_sentences=20,
        **changed,
    )


@pytest.fixture
def tiny_run(tmp_path: Path):
    from model_zoo.training.train_elmo import Trainer

    corpus = write_corpus(tmp_path / "corpus")
    config = tiny_config()

    def trainer(out: str = "run", resume: bool = False) -> Trainer:
        return Trainer(corpus, tmp_path / out, config, "cpu", resume=resume)

    return trainer


def test_training_lowers_perplexity_and_exports_a_model_that_loads(tiny_run, tmp_path: Path) -> None:
    run = tiny_run()
    assert run.train(minutes=5, progress=False) == "done"
    first, last = run.curve[0], run.curve[-1]
    assert last["forward_perplexity"] < 0.5 * first["forward_perplexity"]
    assert last["backward_perplexity"] < 0.5 * first["backward_perplexity"]
    assert last["forward_perplexity"] < last["unigram_perplexity"]
    assert (run.out / "checkpoint.pt").exists() and json.loads((run.out / "learning_curve.json").read_text())
    assert f"step {run.step}, " in (run.out / "train.log").read_text()
    metrics = run.export()
    model = model_zoo.load(run.out / "elmo-mini")
    assert isinstance(model, ElmoModel) and model.vocab[:3] == [BOS, EOS, UNK]
    assert json.loads((run.out / "elmo-mini" / "metrics.json").read_text())["tokens_seen"] == run.tokens
    assert metrics["vocab_size"] == model.vocab_size and metrics["held_forward_perplexity"] > 1
    after, before = model.next_words("We sat on the river", 3), model.previous_words("sat on the boat.", 3)
    assert {w for w, _ in after + before} <= set(model.vocab) and "bank" in [w for w, _ in after]


def test_the_exported_biLM_equals_the_trained_one(tiny_run, tmp_path: Path) -> None:
    """AllenNLP's cell with the exported clip values gives what torch.nn.LSTM gave in training."""
    run = tiny_run()
    run.train(minutes=5, progress=False, until_step=20)
    run.model.eval()
    bilm = run.model.to_bilm()
    assert bilm.options.cell_clip and bilm.options.proj_clip  # written, and never reached
    save_elmo(bilm, tmp_path / "fp32", run.corpus.vocab(), softmax_dtype=np.float32)
    model = load_elmo(tmp_path / "fp32", device="cpu")
    sentences = [run.corpus.held[0], run.corpus.held[3]]
    ids, words, lengths = run.tensors.batch(sentences)
    with torch.inference_mode():
        trained = run.model.nll(ids, words, lengths)
        out = model.bilm(ids, lengths)
        exported = lm_nll(out.forward[-1], out.backward[-1], words, lengths, model.bilm.softmax_w, model.bilm.softmax_b)
    for a, b in zip(trained, exported):
        torch.testing.assert_close(b, a, atol=1e-4, rtol=1e-4)
    text = [" ".join(run.corpus.types[i] for i in s) for s in sentences]
    ppl = model.perplexity(text)
    assert ppl.forward == pytest.approx(float(trained[0].mean().exp()), rel=1e-4)
    save_elmo(bilm, tmp_path / "fp16", run.corpus.vocab())  # what the trainer ships: the softmax in fp16
    assert load_elmo(tmp_path / "fp16").perplexity(text).forward == pytest.approx(ppl.forward, rel=0.02)


def test_a_run_continues_a_shipped_model_on_more_text_keeping_its_vocabulary(tiny_run, tmp_path: Path) -> None:
    from dataclasses import replace

    from model_zoo.training.train_elmo import Trainer

    first = tiny_run()
    first.train(minutes=5, progress=False, until_step=20)
    first.export()
    shipped = tmp_path / "run" / "elmo-mini"
    extra = tmp_path / "extra.txt"
    extra.write_text("After work we like to hang out.\nThey hang out at the river.\n\n" * 40)
    config = replace(first.config, init=str(shipped), extra=str(extra), lr=1e-2, warmup_tokens=10)
    run = Trainer(tmp_path / "corpus", tmp_path / "more", config, "cpu")
    assert run.corpus.vocab() == load_elmo(shipped).vocab  # "hang" and "out" are new words: <UNK> as targets
    start = load_elmo(shipped)
    run.model.eval()
    ids, words, lengths = run.tensors.batch([run.corpus.held[0]])
    with torch.inference_mode():  # step 0 is the shipped model, exactly
        out = start.bilm(ids, lengths)
        shipped_nll = lm_nll(
            out.forward[-1], out.backward[-1], words, lengths, start.bilm.softmax_w, start.bilm.softmax_b
        )
        for a, b in zip(run.model.nll(ids, words, lengths), shipped_nll):
            torch.testing.assert_close(a, b, atol=1e-3, rtol=1e-3)
    assert sum(len(s) for s in run.corpus.train) > sum(len(s) for s in first.corpus.train)  # the extra text joined
    run.train(minutes=5, progress=False, until_step=10)
    metrics = run.export()
    assert (
        metrics["tokens_seen"] == first.tokens + run.tokens and metrics["continued_from"]["tokens_seen"] == first.tokens
    )
    assert [p["tokens"] for p in metrics["curve"]] == sorted(p["tokens"] for p in metrics["curve"])
    assert "SmolLM2" in metrics["corpus_sources"][-1]


def test_resuming_equals_training_without_a_stop(tiny_run) -> None:
    whole = tiny_run("whole")
    whole.train(minutes=5, progress=False, until_step=16)
    first = tiny_run("halves")
    first.train(minutes=5, progress=False, until_step=8)
    with pytest.raises(SystemExit, match="--resume"):
        tiny_run("halves")
    second = tiny_run("halves", resume=True)  # a new process would do the same: all from checkpoint.pt
    assert second.step == 8
    second.train(minutes=5, progress=False, until_step=16)
    a, b = whole.model.state_dict(), second.model.state_dict()
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert [p["step"] for p in second.curve] == [0, 8, 16]


def test_resume_says_which_flags_the_checkpoint_overrides(tmp_path: Path) -> None:
    """A run's settings are fixed by its checkpoint: a flag that would change them is named, not dropped quietly."""
    from model_zoo.training.train_elmo import main

    corpus = write_corpus(tmp_path / "corpus")
    tiny = ["--char-dim", "4", "--filters", "1:4,2:8", "--projection-dim", "8", "--cell-dim", "16"]
    tiny += ["--min-count", "1", "--batch-tokens", "96", "--held-sentences", "10", "--eval-every", "1000"]
    out = tmp_path / "run"
    main(["--corpus", str(corpus), "--out", str(out), "--max-steps", "2", *tiny])
    main(["--corpus", str(corpus), "--out", str(out), "--max-steps", "3", "--resume", *tiny, "--lr", "0.5"])
    log = (out / "train.log").read_text()
    assert "resumed at step 2" in log
    assert "warning: --lr 0.5 ignored: this run was started with" in log
    assert log.count("warning:") == 1  # flags that agree with the checkpoint are not named


def test_batches_hold_at_most_their_tokens_and_cover_the_epoch() -> None:
    from model_zoo.training.train_elmo import token_batches

    lengths = [(i * 37) % 60 + 1 for i in range(3000)]
    epoch = token_batches(lengths, 512, seed=0, epoch=0)
    flat = [i for b in epoch for i in b]
    assert sorted(flat) == list(range(3000))
    assert all(len(b) * (max(lengths[i] for i in b) + 2) <= 512 for b in epoch)
    padding = sum(len(b) * max(lengths[i] for i in b) - sum(lengths[i] for i in b) for b in epoch)
    assert padding < 0.05 * sum(lengths)
    assert epoch == token_batches(lengths, 512, 0, 0) and epoch != token_batches(lengths, 512, 0, 1)


def test_prefetch_fetches_a_released_elmo_from_its_urls_and_it_loads(tmp_path: Path, monkeypatch) -> None:
    """`python -m model_zoo prefetch elmo-small` as on a machine with internet (AllenNLP's files served
    here from file:// URLs): each file lands whole, the card turns "cached" and model_zoo.load reads it."""
    from dataclasses import replace

    import model_zoo
    from model_zoo import __main__ as cli
    from model_zoo import registry

    monkeypatch.setenv("CONTEXTLAB_CACHE", str(tmp_path / "cache"))
    folder = write_elmo(tmp_path / "released")  # as AllenNLP released them: no softmax, no vocabulary
    real = registry.get_card("elmo-small")
    card = replace(real, downloads=tuple((f, (folder / f).as_uri()) for f, _ in real.downloads))
    monkeypatch.setitem(registry._BY_NAME, "elmo-small", card)
    assert registry.availability(card).status == "needs download"
    assert cli.main(["prefetch", "elmo-small"]) == 0
    assert registry.availability(card).status == "cached"
    assert not list(registry.download_dir(card).glob("*.part"))
    model = model_zoo.load("elmo-small")
    assert isinstance(model, ElmoModel) and model.name == "elmo-small" and not model.has_softmax
    assert model.encode("The bank of the river").hidden_states.shape[0] == 3

    broken = replace(card, name="elmo-medium", downloads=(("options.json", (tmp_path / "nowhere.json").as_uri()),))
    monkeypatch.setitem(registry._BY_NAME, "elmo-medium", broken)
    assert cli.main(["prefetch", "elmo-medium"]) == 1  # one line on stderr, no half-written file
    assert not any(registry.download_dir(broken).iterdir())


def test_fit_ends_the_schedule_where_the_measured_speed_says_the_budget_allows(
    tiny_run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--fit (a run on a lent machine): after the probe steps the schedule's end is cut from 10^9 targets
    to what the budget allows, the run records the cut, and its learning rate decays to zero by then.
    The run reads a clock that advances 10 ms a reading, so the outcome does not depend on this machine's
    speed or load (a busy machine once made the real clock's budget end before the probe)."""
    import time
    from dataclasses import replace

    from model_zoo.training import train_elmo
    from model_zoo.training.train_elmo import FIT_PROBE, schedule

    class Clock:
        now = 0.0

        def perf_counter(self) -> float:
            self.now += 0.01
            return self.now

        def __getattr__(self, name: str) -> object:
            return getattr(time, name)

    monkeypatch.setattr(train_elmo, "time", Clock())
    run = tiny_run()
    run.config = replace(run.config, total_tokens=10**9)
    run.train(minutes=0.05, progress=False, fit=True)
    fitted = run.config.total_tokens
    assert run.step > FIT_PROBE and fitted < 10**9
    assert f"the schedule now ends at {fitted:,} targets" in (run.out / "train.log").read_text()
    assert schedule(fitted, fitted, run.config.warmup_tokens) == 0.0
    assert run.export()["config"]["total_tokens"] == fitted


def test_sense_snapshots_run_from_random_weights_to_the_exported_model(tiny_run, monkeypatch) -> None:  # noqa: ANN001
    """Issue 38's slider: the Word senses set read at N + 1 points of one run, dense early, the first on the
    random weights and the last the exported model itself (its accuracy is that model's on the same data)."""
    from dataclasses import replace

    from model_zoo.lessons import sense_data
    from model_zoo.lessons.senses import encode_senses, layer_measures

    every = sense_data.load_senses()
    monkeypatch.setattr(sense_data, "load_senses", lambda: {"bank": every["bank"]})  # one word of 12: seconds
    load_senses = sense_data.load_senses
    run = tiny_run()
    run.config = replace(run.config, sense_snapshots=3)
    assert run.train(minutes=5, progress=False) == "done"
    run.export()
    snapshots = sorted((run.out / "senses").glob("step-*.npz"))
    loaded = [np.load(p) for p in snapshots]
    tokens = [int(s["tokens"]) for s in loaded]
    assert len(snapshots) == 4 and tokens[0] == 0 and tokens == sorted(tokens) and tokens[-1] == run.tokens
    assert tokens[1] - tokens[0] < tokens[3] - tokens[2]  # denser early, where most moves
    assert {str(s["data_version"]) for s in loaded} == {sense_data.data_version()}  # the set read, for the pack
    sets = load_senses()
    assert all(s["vectors_bank"].shape == (len(sets["bank"].sentences), 3, 16) for s in loaded)
    model = model_zoo.load(run.out / "elmo-mini")
    accuracy = [layer_measures(encode_senses(model, s), s.senses).accuracy for s in sets.values()]
    np.testing.assert_allclose(loaded[-1]["accuracy"], np.mean(accuracy, 0), atol=1e-6)
    first = loaded[0]["vectors_bank"].astype(np.float32)
    assert not np.allclose(first, loaded[-1]["vectors_bank"].astype(np.float32), atol=1e-2)  # the weights moved
    # packed for the slider: the run's last snapshot replaced by the exported model's own reading
    from model_zoo.lessons import forming
    from model_zoo.lessons.projection import pca_2d
    from model_zoo.lessons.senses import SenseVectors

    final = {w: encode_senses(model, s).vectors for w, s in sets.items()}
    arrays = forming.pack_run(run.out, final, sets, "elmo-mini", "these-weights", "cmd")
    np.savez_compressed(run.out / "elmo-mini.npz", **arrays)
    packed = forming.load_forming("elmo-mini", "these-weights", run.out)
    assert packed is not None and forming.load_forming("elmo-mini", "other-weights", run.out) is None
    assert packed.tokens.tolist() == tokens and packed.steps[-1] == run.step
    np.testing.assert_array_equal(packed.word_accuracy("bank")[-1], accuracy[0])  # the model's own figure
    maps = packed.maps["bank"]  # (steps, layers, uses, 2): the last is the page's own PCA of the model, signs kept
    assert maps.shape == (4, 3, len(sets["bank"].sentences), 2)
    truth = pca_2d(final["bank"][:, 2])
    np.testing.assert_allclose(maps[-1, 2], truth, atol=2e-2 * np.abs(truth).max())
    for s in range(3):  # each step's axes turned to agree with the next step's: no mirror flips on the slider
        assert all(float(maps[s, layer, :, c] @ maps[s + 1, layer, :, c]) >= 0 for layer in (1, 2) for c in (0, 1))
    # the last step is what `final` gives, not the run's own last snapshot: here, the random weights' reading
    other = {"bank": loaded[0]["vectors_bank"].astype(np.float32)}
    np.savez_compressed(run.out / "other.npz", **forming.pack_run(run.out, other, sets, "other", "w", "cmd"))
    replaced = forming.load_forming("other", "w", run.out)
    assert replaced is not None
    random_accuracy = layer_measures(SenseVectors("bank", other["bank"], np.zeros(3), np.zeros(3)), sets["bank"].senses)
    np.testing.assert_array_equal(replaced.word_accuracy("bank")[-1], random_accuracy.accuracy)
    assert not np.array_equal(replaced.word_accuracy("bank")[-1], accuracy[0])
    assert packed.curve_perplexity[0] > packed.curve_perplexity[-1]  # the loss curve beside it
