"""What the Transfer learning lesson's race is, without running it (model_zoo.lessons.transfer runs it):
the recipes, the curve's record, and the run shipped in assets/transfer/. No torch here: a fresh server's
page draws the shipped curve from this module alone, and imports torch and loads a network only when the
learner asks for the race again (issue 33: the first visitor waited four seconds for both)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from ..registry import weights_fingerprint
from .lexicon import ASSETS
from .sense_data import data_version as file_version

SHIPPED = ASSETS / "transfer"  # MODEL.json: a run of transfer_curve, drawn at once by the page
SENTENCES = ASSETS / "tasks" / "sentiment.tsv"  # the labelled set the race reads (model_zoo.lessons.tasks)


@dataclass(frozen=True)
class Recipe:
    """How one kind of network is fine-tuned in the race. A freshly initialised network learns at a
    larger rate (its weights have nothing to keep)."""

    kind: str  # "encoder" or "elmo": the page's note names the recipe by it
    lr_pretrained: float  # the network's, from pre-trained weights
    lr_random: float  # the network's, from random weights
    lr_head: float  # the new linear layer's


# The encoder's rates are BERT's usual fine-tuning ones. elmo-mini's were chosen on development draws of
# the training sentences alone (`python -m model_zoo.lessons.transfer elmo-mini --choose 3e-4 1e-3 3e-3`,
# and `--epochs 10 25`: 16 to 128 of 200 sentences, scored on the other 40; never the race's 60 test
# sentences). Pre-trained, mean development accuracy 0.58-0.62 whatever the rate (1e-3 and 3e-3 at 4 epochs
# best, 0.62; 10 or 25 epochs, or the new layer at 3e-3 or 1e-2 over the biLM at 3e-5 to 3e-4, no better);
# from random weights 0.50-0.60, the commoner class's share (0.60) at best. One sentence is 2.5 points there.
# Chosen again for the elmo-mini trained from scratch in one run (`--choose`, 4 epochs): pre-trained 0.58 /
# 0.63 / 0.60 at 3e-4 / 1e-3 / 3e-3, random 0.50 / 0.60 / 0.60, so the rates stay.
RECIPES = {
    "encoder": Recipe("encoder", 5e-5, 1e-4, 5e-5),
    "elmo": Recipe("elmo", 1e-3, 1e-3, 1e-3),
}


def recipe_for(family: str | None) -> Recipe:
    """The recipe of a registered model's family (ModelCard.family), without loading it."""
    return RECIPES["elmo" if family == "ELMo" else "encoder"]


@dataclass(frozen=True)
class TransferCurve:
    sizes: tuple[int, ...]  # labelled sentences each learner saw
    accuracy: dict[str, list[float]]  # learner -> held-out accuracy at each size
    test_size: int
    chance: float  # the commonest class's share of the held-out sentences
    epochs: int
    seconds: float


@dataclass(frozen=True)
class ShippedCurve:
    """A run of transfer_curve kept in assets/transfer/: the curve and how it was made."""

    curve: TransferCurve
    command: str
    machine: str  # where it ran ("2 CPU threads, x86_64")
    date: str
    fingerprint: str | None  # weights_fingerprint of the model it ran on


def data_version() -> str:
    """A hash of the labelled set the race reads (hashed once per version of the file, as the senses'
    set is): a shipped run of other data is not this race's."""
    return file_version(SENTENCES)


@dataclass(frozen=True)
class KnownCurve:
    """A curve a page can draw now: a live run of this server (shipped None), or the shipped one."""

    curve: TransferCurve
    shipped: ShippedCurve | None


def shipped_curve(model_name: str, folder: Path | None = None) -> ShippedCurve | None:
    """The shipped run for `model_name`, or None where there is none, or it ran on other weights than the
    ones installed here or on another labelled set (then it would not be this race's result)."""
    path = (folder or SHIPPED) / f"{model_name}.json"
    if not path.exists():
        return None
    record = json.loads(path.read_text(encoding="utf-8"))
    if record["fingerprint"] != weights_fingerprint(model_name) or record["data"] != data_version():
        return None
    c = record["curve"]
    curve = TransferCurve(tuple(c["sizes"]), c["accuracy"], c["test_size"], c["chance"], c["epochs"], c["seconds"])
    return ShippedCurve(curve, record["command"], record["machine"], record["date"], record["fingerprint"])
