"""Every card of the registry keeps its word: each capability it declares is met by the object its name
loads (model_zoo.capabilities: one Protocol per capability), and `can` answers from both (fast tier:
the offline models are the tiny zoo's, the classics tiny checkpoints of their own kind)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import model_zoo
from model_zoo import capabilities, loading
from model_zoo.capabilities import PROTOCOLS, can, require
from model_zoo.registry import FILL_MASK, NEXT_SENTENCE, NEXT_WORDS, PREVIOUS_WORDS, VECTORS, list_models
from model_zoo.static import StaticModel
from tests.conftest import save_tiny_bert, save_tiny_gpt2

CARDS = [card.name for card in list_models()]


@pytest.fixture(scope="module")
def tiny_classics(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A tiny checkpoint of each classic kind: BERT with its MLM and NSP heads, a SQuAD reader, GPT-2."""
    root = tmp_path_factory.mktemp("classics")
    return {
        "masked_lm": save_tiny_bert(root / "bert"),
        "qa": save_tiny_bert(root / "squad", qa=True),
        "causal_lm": save_tiny_gpt2(root / "gpt2"),
    }


def load_as_card(name: str, tiny_zoo: Path, tiny_classics: dict[str, Path]):  # noqa: ANN201
    card = model_zoo.get_card(name)
    if card.offline:
        return model_zoo.load(name)  # the tiny zoo's model of that name
    if card.kind == "static":
        return StaticModel.from_arrays(name, ["bank", "river"], np.eye(2, dtype=np.float32))
    if card.kind == "elmo":
        from model_zoo.elmo import load_elmo

        return load_elmo(tiny_zoo / "elmo-mini", name=name, device="cpu")
    return loading._load_transformers(name, str(tiny_classics[card.kind]), card.kind, "cpu", None)


@pytest.mark.parametrize("name", CARDS)
def test_each_declared_capability_is_kept_by_the_loaded_model(name: str, tiny_zoo: Path, tiny_classics) -> None:
    model = load_as_card(name, tiny_zoo, tiny_classics)
    for capability in model_zoo.get_card(name).capabilities:
        assert isinstance(model, PROTOCOLS[capability]), (name, capability, type(model).__name__)
        assert can(model, capability)


def test_can_asks_the_card_as_well_as_the_object(tiny_zoo: Path, tiny_classics) -> None:
    glove = model_zoo.load("glove-6b-50d")
    assert can(glove, VECTORS) and not can(glove, FILL_MASK)
    mlm = model_zoo.load("minilm-l6-mlm")
    assert can(mlm, FILL_MASK)
    # The object has next_sentence (every BERT masked LM class does), but this checkpoint has no NSP head
    # and its card does not declare it: the card decides.
    assert isinstance(mlm, capabilities.JudgesNextSentence) and not can(mlm, NEXT_SENTENCE)
    with pytest.raises(model_zoo.MissingCapability, match="next_sentence"):
        require(mlm, NEXT_SENTENCE)
    gpt = model_zoo.load("smollm2-135m")
    assert can(gpt, NEXT_WORDS) and not can(gpt, PREVIOUS_WORDS)  # left to right only
    elmo = model_zoo.load("elmo-mini")
    assert can(elmo, NEXT_WORDS) and can(elmo, PREVIOUS_WORDS)  # a biLM with its softmax: both ways


def test_next_words_has_one_shape_for_every_model_that_writes(tiny_zoo: Path) -> None:
    """GPT and ELMo's forward LM both answer NEXT_WORDS: a list of (word, probability), best first."""
    for name in ("smollm2-135m", "elmo-mini"):
        guesses = model_zoo.load(name).next_words("we sat on the river", 3)
        assert len(guesses) == 3 and all(isinstance(w, str) and 0 <= p <= 1 for w, p in guesses), name
        assert [p for _, p in guesses] == sorted((p for _, p in guesses), reverse=True)
