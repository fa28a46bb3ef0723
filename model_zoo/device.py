"""Which torch device model_zoo runs on: CONTEXTLAB_DEVICE, else CUDA when present, else CPU."""

from __future__ import annotations

import os

import torch

ENV_VAR = "CONTEXTLAB_DEVICE"


def select_device(override: str | None = None) -> torch.device:
    """Return the device to run models on.

    `override` (or the CONTEXTLAB_DEVICE environment variable) wins; a CUDA device that
    is asked for but absent is an error rather than a silent fall-back to the CPU.
    """
    wanted = override or os.environ.get(ENV_VAR, "").strip()
    if not wanted:
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        device = torch.device(wanted)
    except RuntimeError as err:
        raise ValueError(f"{ENV_VAR}={wanted!r} is not a torch device (try 'cpu' or 'cuda').") from err
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"{ENV_VAR}={wanted!r} asks for CUDA, but torch sees no CUDA device here.")
    return device
