"""Transfer learning without dead air (issue 33): the race's curve is on the page at once (a run shipped for
these weights, or this server's last live run), the button runs it live, and a question never starts the
minutes of training. Fast tier: the tiny zoo."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import all_text, light_charts, light_lines, open_page

CURVE = {"sizes": [16, 240], "accuracy": {"pretrained": [0.75, 0.9], "random": [0.5, 0.55], "onehot": [0.55, 0.7]}}


def curve():  # noqa: ANN201
    from model_zoo.lessons.transfer_record import TransferCurve

    return TransferCurve((16, 240), CURVE["accuracy"], 60, 0.5, 4, 123.0)


@pytest.fixture
def shipped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tiny_zoo: Path) -> Path:
    """A run shipped for the tiny minilm-l6 (its own fingerprint), where the page looks for it."""
    from model_zoo.lessons import transfer, transfer_record

    transfer.save_curve(curve(), "minilm-l6", tmp_path / "minilm-l6.json", "python -m model_zoo.lessons.transfer x")
    monkeypatch.setattr(transfer_record, "SHIPPED", tmp_path)
    return tmp_path


def no_training(monkeypatch: pytest.MonkeyPatch) -> None:
    import serving

    def refuse(*_args, **_kwargs):  # noqa: ANN002, ANN003, ANN202
        raise AssertionError("the page started the race's training")

    monkeypatch.setattr(serving, "transfer_curve", refuse)


def test_a_shipped_run_is_read_back_only_for_its_own_weights_and_data(tmp_path: Path, monkeypatch) -> None:  # noqa: ANN001
    from model_zoo.lessons import transfer, transfer_record

    transfer.save_curve(curve(), "minilm-l6", tmp_path / "minilm-l6.json", "cmd")
    got = transfer_record.shipped_curve("minilm-l6", tmp_path)
    assert got is not None and got.curve == curve() and got.command == "cmd"
    monkeypatch.setattr(transfer_record, "weights_fingerprint", lambda name: "other weights")
    assert transfer_record.shipped_curve("minilm-l6", tmp_path) is None
    assert transfer_record.shipped_curve("bert-base-uncased", tmp_path) is None  # none shipped


def test_the_shipped_curve_is_read_without_torch() -> None:
    """A fresh server's first visitor gets the curve without waiting for torch (issue 33: 4 s, not 3)."""
    import subprocess
    import sys

    code = (
        "import sys; from model_zoo.lessons import transfer_record as r; import serving; "
        "r.shipped_curve('elmo-mini'); serving.transfer_recipe('elmo-mini'); print('torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_the_shipped_curve_is_drawn_on_opening_and_answers_the_questions(shipped: Path, monkeypatch) -> None:  # noqa: ANN001
    no_training(monkeypatch)
    at = open_page("pages/transfer.py", model="minilm-l6")
    assert not at.exception
    assert len(light_lines(at, "transfer_chart")) == 4  # pre-trained, random, one-hot and chance
    said = all_text(at)
    assert "shipped with the app" in said and "123 s" in said and "75%" not in said  # 16 labels: guessed first
    at.radio(key="predict_transfer_first").set_value("random").run()
    assert "75%" in all_text(at) and [len(v) for v in light_lines(at, "transfer_chart").values()] == [2] * 4
    drawn = light_charts(at)["transfer_chart"]  # each size placed at its logarithm, named by itself
    assert drawn["x_labels"] == ["16", "240"] and drawn["x_at"] == [4.0, pytest.approx(7.907, abs=1e-3)]
    # minilm-l6 read sentence pairs (NLI among them) before ContextLab got it: one line says so, and names the
    # model installed here that was pre-trained on plain text only
    assert "minilm-l6 was not pre-trained on plain text alone (all-MiniLM-L6-v2 was tuned on" in said
    assert "elmo-mini, pre-trained on plain text only and installed here" in said
    at.toggle(key="quiz_reveal").set_value(True).run()
    assert not at.exception and not at.error
    assert "pre-trained 90%, random weights 55%, one-hot counts 70%" in all_text(at)


def test_without_any_run_the_page_says_so_and_a_question_does_not_start_one(
    tiny_zoo: Path,
    monkeypatch,  # noqa: ANN001
    tmp_path: Path,
) -> None:
    from model_zoo.lessons import transfer_record

    monkeypatch.setattr(transfer_record, "SHIPPED", tmp_path)  # nothing shipped
    no_training(monkeypatch)
    at = open_page("pages/transfer.py", model="minilm-l6")
    assert not at.exception and "No run of the race for minilm-l6" in all_text(at)
    at.toggle(key="quiz_reveal").set_value(True).run()
    assert not at.exception
    assert "start it with its button above first" in all_text(at)


def test_a_live_run_replaces_the_shipped_one_for_every_later_visitor(shipped: Path) -> None:
    import serving

    serving.SLOW.get(
        ("transfer curve", "minilm-l6"), lambda: curve().__class__((16, 240), CURVE["accuracy"], 60, 0.5, 4, 7.0)
    )
    at = open_page("pages/transfer.py", model="minilm-l6")
    assert not at.exception and "Run live on this server in 7 s." in all_text(at)


def test_the_size_from_which_pre_training_stays_ahead_is_read_from_the_curve(shipped: Path) -> None:
    """A tie with 16 labels: pre-training is ahead from 240 on; where it never leads at the end, "never"."""
    import serving

    tied = {"pretrained": [0.5, 0.9], "random": [0.5, 0.55], "onehot": [0.5, 0.7]}
    serving.SLOW.get(("transfer curve", "minilm-l6"), lambda: curve().__class__((16, 240), tied, 60, 0.5, 4, 7.0))
    at = open_page("pages/transfer.py", model="minilm-l6")
    at.toggle(key="quiz_reveal").set_value(True).run()
    # the chart's first point waits for the guess at it: until then the question reads the points drawn
    assert not at.exception and list(at.radio(key="quiz_transfer_ahead").options) == ["240", "never"]
    assert "Answer: 240" in all_text(at) and "240: 90% / 55%" in all_text(at) and "16: 50%" not in all_text(at)
    at.radio(key="predict_transfer_first").set_value("random").run()  # the first point drawn: 16 is offered
    assert list(at.radio(key="quiz_transfer_ahead").options) == ["16", "240", "never"]
    assert "Answer: 240" in all_text(at) and "16: 50% / 50%, 240: 90% / 55%" in all_text(at)
    serving.SLOW.clear()
    behind = {"pretrained": [0.6, 0.5], "random": [0.5, 0.55], "onehot": [0.5, 0.7]}
    serving.SLOW.get(("transfer curve", "minilm-l6"), lambda: curve().__class__((16, 240), behind, 60, 0.5, 4, 7.0))
    at = open_page("pages/transfer.py", model="minilm-l6")
    at.toggle(key="quiz_reveal").set_value(True).run()
    assert "Answer: never" in all_text(at)


# -- the race on ULMFiT's own kind of model: an LSTM language model pre-trained on plain text only -----------
def test_the_page_opens_on_elmo_mini_a_model_that_never_saw_a_label(
    tiny_zoo: Path, tmp_path: Path, monkeypatch
) -> None:  # noqa: ANN001
    from model_zoo.lessons import transfer, transfer_record
    from model_zoo.loading import load

    transfer.save_curve(
        curve(), "elmo-mini", tmp_path / "elmo-mini.json", "python -m model_zoo.lessons.transfer elmo-mini"
    )
    monkeypatch.setattr(transfer_record, "SHIPPED", tmp_path)
    no_training(monkeypatch)
    assert isinstance(load("elmo-mini"), transfer.ElmoModel)
    at = open_page("pages/transfer.py")
    assert not at.exception and at.selectbox(key="model").value == "elmo-mini"
    at.radio(key="predict_transfer_first").set_value("pretrained").run()  # the first point, once guessed
    said = all_text(at)
    assert "elmo-mini, pre-trained, then fine-tuned" in light_lines(at, "transfer_chart") and "75%" in said
    assert "not pre-trained on plain text alone" not in said  # no caveat: its pre-training read no label
    assert "ULMFiT's concat pooling" in said and "[CLS]" not in said  # the recipe the race used on it


def test_elmo_fine_tuning_trains_a_copy_and_learns_a_separable_task(tiny_zoo: Path) -> None:
    """On the tiny ELMo: the shared model is untouched, and a task a word decides is learned (held out)."""
    import torch

    from model_zoo.lessons.tasks import Labelled, Split
    from model_zoo.lessons.transfer import fine_tune_elmo
    from model_zoo.loading import load

    model = load("elmo-mini")
    before = {k: v.clone() for k, v in model.bilm.state_dict().items()}
    words = ["good", "bad"]
    train = [Labelled(f"a {words[i % 2]} day {i}", words[i % 2]) for i in range(24)]
    test = [Labelled(f"one {words[i % 2]} time", words[i % 2]) for i in range(6)]
    got = fine_tune_elmo(model, Split(train, test), epochs=30, lr=1e-2, head_lr=1e-1)
    assert got.accuracy == 1.0
    assert all(torch.equal(before[k], v) for k, v in model.bilm.state_dict().items())


def test_the_untrained_twin_starts_where_pretraining_started(tiny_zoo: Path) -> None:
    import torch

    from model_zoo.lessons.transfer import untrained_twin
    from model_zoo.loading import load

    model = load("elmo-mini")
    twin = untrained_twin(model)
    assert twin.options == model.options and twin.name == "elmo-mini (untrained)"
    chars = twin.bilm.chars.char_embed.detach()
    assert float(chars.min()) >= -1.0 and float(chars.max()) <= 1.0 and float(chars.std()) > 0.4  # uniform(-1, 1)
    assert not torch.equal(
        twin.bilm.forward_layers[0].input_linearity.weight, model.bilm.forward_layers[0].input_linearity.weight
    )
    c = model.options.cell_dim
    bias = twin.bilm.forward_layers[0].state_linearity.bias
    assert torch.all(bias[c : 2 * c] == 1.0) and torch.all(bias[:c] == 0.0)  # the forget gate open
    assert untrained_twin(model).bilm.state_dict().keys() == twin.bilm.state_dict().keys()
