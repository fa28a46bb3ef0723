"""oneDNN matrix products for the fused-attention twins' linear layers on CPU.

PyTorch's CPU build runs `nn.Linear` through MKL's sgemm. For the few-token inputs this app
sees (a sentence of 16 tokens: a 16 x 768 by 768 x 3072 product), oneDNN's kernel, which
the same build ships, is markedly faster on AVX-512 machines (`make bench` prints both), with
the same fp32 weights (no copy, no repacking) and the same results to within 5e-6.

`OneDNNLinear` is `nn.Linear` with that product; it falls back to `F.linear` wherever the
fast path does not apply (autograd on, another dtype or device). `use_onednn(model)` turns
a model's plain linear layers into it, after checking once, on this machine, that the
kernel exists and agrees with `F.linear`. CONTEXTLAB_ONEDNN=0 turns it off (`make bench`
uses that to show what it contributes).
"""

from __future__ import annotations

import os
from functools import cache

import torch
import torch.nn.functional as F

ENV_VAR = "CONTEXTLAB_ONEDNN"


def _product(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
    flat = x.reshape(-1, x.shape[-1])
    out = torch.ops.mkldnn._linear_pointwise(flat, weight, bias, "none", [], "")
    return out.view(*x.shape[:-1], out.shape[-1])


class OneDNNLinear(torch.nn.Linear):
    """`nn.Linear` whose inference-time product on CPU is oneDNN's; same parameters."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if (
            torch.is_grad_enabled()
            or x.device.type != "cpu"
            or x.dtype != torch.float32
            or self.weight.dtype != torch.float32
            or x.numel() == 0
        ):
            return F.linear(x, self.weight, self.bias)
        return _product(x, self.weight, self.bias)


def enabled() -> bool:
    return os.environ.get(ENV_VAR, "1").strip().lower() not in ("0", "false", "no", "off")


@cache
def available() -> bool:
    """Whether this build's oneDNN linear kernel runs here and matches `F.linear` (checked once)."""
    if not torch.backends.mkldnn.is_available() or not hasattr(torch.ops.mkldnn, "_linear_pointwise"):
        return False
    generator = torch.Generator().manual_seed(0)
    x, weight, bias = (torch.randn(*shape, generator=generator) for shape in ((3, 5, 64), (48, 64), (48,)))
    try:
        with torch.inference_mode():
            got = _product(x, weight, bias)
    except (RuntimeError, NotImplementedError):
        return False
    return got.shape == (3, 5, 48) and torch.allclose(got, F.linear(x, weight, bias), atol=1e-4, rtol=1e-5)


def use_onednn(model: torch.nn.Module) -> int:
    """Turn `model`'s plain `nn.Linear` layers on CPU into `OneDNNLinear` in place; how many were.

    Other dtypes keep `F.linear` at call time. Parameters are untouched (a model sharing them
    with another is unaffected but for speed). Does nothing when turned off, when the kernel
    is unavailable, or for models not on CPU.
    """
    if not enabled() or not available():
        return 0
    changed = 0
    for module in model.modules():
        if type(module) is torch.nn.Linear and module.weight.device.type == "cpu":
            module.__class__ = OneDNNLinear
            changed += 1
    return changed
