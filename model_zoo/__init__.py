"""ContextLab's model zoo: registry, loading and inference. Pure Python; never imports streamlit."""

from .contextual import CausalLM, Encoder, Encoding, MaskedLM
from .device import select_device
from .errors import (
    EmptyInput,
    MissingCapability,
    ModelUnavailable,
    ModelZooError,
    NoMaskToken,
    UnknownModel,
    WordNotInText,
    WordNotInVocabulary,
)
from .loading import Model, cache_root, load
from .registry import Availability, ModelCard, availability, get_card, list_models
from .static import StaticModel

__all__ = [
    "Availability",
    "CausalLM",
    "EmptyInput",
    "Encoder",
    "Encoding",
    "MaskedLM",
    "MissingCapability",
    "Model",
    "ModelCard",
    "ModelUnavailable",
    "ModelZooError",
    "NoMaskToken",
    "StaticModel",
    "UnknownModel",
    "WordNotInText",
    "WordNotInVocabulary",
    "availability",
    "cache_root",
    "get_card",
    "list_models",
    "load",
    "select_device",
]
