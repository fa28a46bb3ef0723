"""The types a page may hold (issue 32's contract: pages take from model_zoo only types, errors and
registry queries; what they compute comes from serving). Frozen dataclasses of the runtime and of the
lessons, named here so that a page's import says "a type", never "a lesson function".

Names are imported on first use (PEP 562), as in the package's root: naming a type here does not
import torch or the lesson that defines it, so a page that draws precomputed figures stays light.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_WHERE = {
    # the runtime's
    "Encoding": "model_zoo.contextual",
    "Guess": "model_zoo.contextual",
    "Reading": "model_zoo.contextual",
    "ModelCard": "model_zoo.registry",
    "ReaderScores": "model_zoo.trained",
    # the lessons'
    "EpochReport": "model_zoo.lessons.word2vec",
    "KnownCurve": "model_zoo.lessons.transfer_record",
    "Recipe": "model_zoo.lessons.transfer_record",
    "TransferCurve": "model_zoo.lessons.transfer_record",
    "MapView": "model_zoo.lessons.sense_data",
    "ModelResults": "model_zoo.lessons.probing",
    "OwnVectors": "model_zoo.lessons.senses",
    "SenseModel": "model_zoo.lessons.sense_data",
    "SenseSet": "model_zoo.lessons.sense_data",
    "SenseVectors": "model_zoo.lessons.senses",
    "Strategy": "model_zoo.lessons.generation",
    "TaskResult": "model_zoo.lessons.probing",
    "TrainedHead": "model_zoo.lessons.tasks",
    "TrainSettings": "model_zoo.lessons.word2vec",
    "Knocked": "model_zoo.lessons.inside",
    "PoleChoice": "model_zoo.lessons.axes",
}
__all__ = [
    "Encoding",
    "EpochReport",
    "Guess",
    "Knocked",
    "KnownCurve",
    "MapView",
    "ModelCard",
    "ModelResults",
    "OwnVectors",
    "PoleChoice",
    "ReaderScores",
    "Reading",
    "Recipe",
    "SenseModel",
    "SenseSet",
    "SenseVectors",
    "Strategy",
    "TaskResult",
    "TrainSettings",
    "TrainedHead",
    "TransferCurve",
]
assert sorted(__all__) == sorted(_WHERE)

if TYPE_CHECKING:
    from .contextual import Encoding, Guess, Reading
    from .lessons.axes import PoleChoice
    from .lessons.generation import Strategy
    from .lessons.inside import Knocked
    from .lessons.probing import ModelResults, TaskResult
    from .lessons.sense_data import MapView, SenseModel, SenseSet
    from .lessons.senses import OwnVectors, SenseVectors
    from .lessons.tasks import TrainedHead
    from .lessons.transfer_record import KnownCurve, Recipe, TransferCurve
    from .lessons.word2vec import EpochReport, TrainSettings
    from .registry import ModelCard
    from .trained import ReaderScores


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module 'model_zoo.types' has no attribute {name!r}")
    value = getattr(importlib.import_module(_WHERE[name]), name)
    globals()[name] = value
    return value
