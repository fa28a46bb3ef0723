"""ContextLab's model zoo: registry, loading and inference. Pure Python; never imports streamlit.

Names are imported on first use (PEP 562): `import model_zoo` and the light modules
(registry, errors, sense_data, projection, lexicon) do not import torch, so a page can
draw precomputed figures while torch (about 3 s) is still being imported elsewhere.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_WHERE = {
    "CausalLM": "contextual",
    "Contextual": "contextual",
    "Encoder": "contextual",
    "Encoding": "contextual",
    "MaskedLM": "contextual",
    "Reader": "contextual",
    "Reading": "contextual",
    "select_device": "device",
    "ElmoModel": "elmo",
    "BadCheckpoint": "errors",
    "EmptyInput": "errors",
    "MissingCapability": "errors",
    "ModelUnavailable": "errors",
    "ModelZooError": "errors",
    "NoMaskToken": "errors",
    "NotRunYet": "errors",
    "UnknownModel": "errors",
    "WordNotInText": "errors",
    "WordNotInVocabulary": "errors",
    "Model": "loading",
    "cache_root": "registry",
    "load": "loading",
    "Availability": "registry",
    "ModelCard": "registry",
    "availability": "registry",
    "get_card": "registry",
    "list_models": "registry",
    "StaticModel": "static",
}
__all__ = [
    "Availability",
    "BadCheckpoint",
    "CausalLM",
    "Contextual",
    "ElmoModel",
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
    "NotRunYet",
    "Reader",
    "Reading",
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
assert sorted(__all__) == sorted(_WHERE)

if TYPE_CHECKING:
    from .contextual import CausalLM, Contextual, Encoder, Encoding, MaskedLM, Reader, Reading
    from .device import select_device
    from .elmo import ElmoModel
    from .errors import (
        BadCheckpoint,
        EmptyInput,
        MissingCapability,
        ModelUnavailable,
        ModelZooError,
        NoMaskToken,
        NotRunYet,
        UnknownModel,
        WordNotInText,
        WordNotInVocabulary,
    )
    from .loading import Model, load
    from .registry import Availability, ModelCard, availability, cache_root, get_card, list_models
    from .static import StaticModel


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module 'model_zoo' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{_WHERE[name]}", __name__), name)
    globals()[name] = value
    return value
