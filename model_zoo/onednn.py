"""oneDNN matrix products for the fused-attention twins' linear layers on CPU.

PyTorch's CPU build runs `nn.Linear` through MKL's sgemm. For the few-token inputs this app
sees (a sentence of 16 tokens: a 16 x 768 by 768 x 3072 product), oneDNN's kernel, which
the same build ships, is markedly faster on AVX-512 machines (`make bench` prints both), with
the same fp32 weights (no copy, no repacking) and the same results to within 5e-6.

`OneDNNLinear` is `nn.Linear` with that product; it falls back to `F.linear` wherever the
fast path does not apply (autograd on, another dtype or device). `use_onednn(model)` turns
a model's plain linear layers into it, after checking once, on this machine, that the
kernel exists and agrees with `F.linear`. CONTEXTLAB_ONEDNN chooses: `1` every layer, `0` none,
`auto` (the default) every layer on CPUs with AVX-512 and only the wide ones (a vocabulary head,
`WIDE` outputs or more) elsewhere (`make bench` loads with 1 and 0 to show what it contributes).
Measured on an AVX2-only EPYC (Zen 3; one thread, as each of a class server's two workers runs;
medians of interleaved runs, 2026-12-04): SmolLM2-135M's body products took 5-46% longer with
oneDNN than with MKL (16 to 540 rows), and fifteen sentences through the masked LM 1.20 s against
1.04 s; its 49,152-word head was the other way, 15 rows 28 against 37 ms, 31 rows 43 against 53.

`BF16Linear` goes further for a class's server (`use_bf16`): the layer's weights are kept in
bfloat16 and its product runs in bf16 (accumulated in fp32), while everything between the
products (the residual stream, the norms, attention's softmax) stays fp32. On CPUs that run bf16
natively (AVX512-BF16 or AMX) thirty sentences through SmolLM2-135M take 0.63 s against 0.89 s
in fp32 (2 threads, this project's machine), the weights take half the memory, and the first
guess at a blank agrees with fp32's on 197 of 200 development sentences; casting the whole
model to bf16 instead (0.49 s) agreed on 189. Where the CPU only emulates bf16 it would be
slower, so `bf16_wanted()` asks for native support. CONTEXTLAB_BF16 chooses: `auto` (native
only), `1`, or `0`/unset (fp32, the default: `scripts/serve.py` sets `auto` for a class).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from functools import cache

import torch
import torch.nn.functional as F

ENV_VAR = "CONTEXTLAB_ONEDNN"
BF16_VAR = "CONTEXTLAB_BF16"


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


WIDE = 8192  # outputs of a layer that is a vocabulary head, not a layer of the body
YES, NO = ("1", "true", "yes", "on"), ("0", "false", "no", "off")  # how CONTEXTLAB_ONEDNN / _BF16 say yes and no


def _choice() -> str:
    return os.environ.get(ENV_VAR, "auto").strip().lower()


def enabled() -> bool:
    """CONTEXTLAB_ONEDNN is not `0`: some layers (`takes`) may get oneDNN's product."""
    return _choice() not in NO


def takes(width: int) -> bool:
    """Whether CONTEXTLAB_ONEDNN gives a layer of `width` outputs oneDNN's product: `1` yes, `0` no, `auto` (or
    unset) on an AVX-512 CPU (`suits_cpu`) or for a wide layer (a vocabulary head), where it was the faster one."""
    choice = _choice()
    return choice not in NO and (choice in YES or suits_cpu() or width >= WIDE)


@cache
def suits_cpu() -> bool:
    """Whether oneDNN's product is the faster one for every layer on this CPU: where it has AVX-512."""
    return "avx512f" in _cpu_flags()


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
    """Turn `model`'s plain `nn.Linear` layers on CPU that it `takes` into `OneDNNLinear` in place; how many were.

    Other dtypes keep `F.linear` at call time. Parameters are untouched (a model sharing them
    with another is unaffected but for speed). Does nothing when turned off, when the kernel
    is unavailable, or for models not on CPU.
    """
    if not enabled() or not available():
        return 0
    changed = 0
    for module in model.modules():
        if type(module) is torch.nn.Linear and module.weight.device.type == "cpu" and takes(module.out_features):
            module.__class__ = OneDNNLinear
            changed += 1
    return changed


class BF16Linear(torch.nn.Linear):
    """`nn.Linear` whose weight is stored in bfloat16: inference on CPU multiplies in bf16 and returns
    fp32 (the bias, if any, added in fp32); anything else (autograd, another device) gets the weight
    cast to the input's dtype. Made by `use_bf16`, never constructed directly."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if torch.is_grad_enabled() or x.device.type != "cpu" or x.dtype != torch.float32:
            bias = None if self.bias is None else self.bias.to(x.dtype)
            return F.linear(x, self.weight.to(x.dtype), bias)
        out = F.linear(x.to(torch.bfloat16), self.weight).float()
        return out if self.bias is None else out + self.bias


def _cpuinfo(field: str) -> str:
    """The first `field` line of Linux's /proc/cpuinfo, its value ("" where there is none)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            return next((line.split(":", 1)[1].strip() for line in info if line.startswith(field)), "")
    except OSError:
        return ""


def _cpu_flags() -> set[str]:
    return set(_cpuinfo("flags").split())


def cpu_name() -> str:
    """The CPU's model name as Linux reports it ("" where it does not)."""
    return _cpuinfo("model name")


@cache
def bf16_native() -> bool:
    """Whether this CPU multiplies bf16 in hardware (AVX512-BF16 or AMX) and this build's oneDNN uses it."""
    supported = getattr(torch.ops.mkldnn, "_is_mkldnn_bf16_supported", None)
    return bool(supported and supported()) and bool({"avx512_bf16", "amx_bf16"} & _cpu_flags())


def bf16_wanted(device: str | None = None) -> bool:
    """CONTEXTLAB_BF16: `auto` where `bf16_native()`, `1` always, anything else never; and only where the
    models run on the CPU (`device`, else the one select_device picks: on CUDA they keep their fp32 weights,
    the layer would cast them at every call)."""
    from .device import select_device

    choice = os.environ.get(BF16_VAR, "0").strip().lower()
    wanted = choice in YES or (choice == "auto" and bf16_native())
    return wanted and select_device(device).type == "cpu"


def use_bf16(model: torch.nn.Module, keep: tuple[str, ...] = ()) -> int:
    """Turn `model`'s linear layers on CPU (but those whose names end in one of `keep`) into `BF16Linear`
    in place, each weight cast to bf16 once (layers that shared an fp32 weight share its bf16 copy; a
    weight already bf16, as one shared with a model turned before, is kept as it is); how many were."""
    layers = [
        module
        for name, module in model.named_modules()
        if type(module) in (torch.nn.Linear, OneDNNLinear)
        and not (keep and name.endswith(keep))
        and module.weight.device.type == "cpu"
    ]
    return _recast(layers, torch.bfloat16, BF16Linear, trainable=False)


def serve_in_bf16(model: torch.nn.Module) -> None:
    """A model loaded for a class's server, before anything shares it: its linear layers but the output head
    (`lm_head`, tied to the embeddings) multiply in bf16, and the fp32 weights' memory is freed."""
    use_bf16(model, keep=("lm_head",))
    own_storage(model)


def _recast(layers: Sequence[torch.nn.Module], dtype: torch.dtype, cls: type[torch.nn.Module], trainable: bool) -> int:
    """Each of `layers` made a `cls`, its weight cast to `dtype` where it is not (once per weight: layers that
    shared one share its cast); how many."""
    cast: dict[int, torch.nn.Parameter] = {}
    for module in layers:
        old = module.weight
        assert isinstance(old, torch.Tensor)
        if old.dtype != dtype:
            if id(old) not in cast:
                cast[id(old)] = torch.nn.Parameter(old.detach().to(dtype), requires_grad=trainable)
            module.weight = cast[id(old)]
        module.__class__ = cls
    return len(layers)


def own_storage(model: torch.nn.Module) -> None:
    """Copy each of `model`'s fp32 parameters into storage of its own. transformers loads a checkpoint's
    tensors as views of few large blocks, and a block is freed only when its last view is: after `use_bf16`
    the embeddings and norms left in fp32 kept the linear layers' fp32 weights' memory too (SmolLM2-135M:
    180 MB more than fp32 instead of 230 MB less). Only for a model nothing else shares parameters with."""
    with torch.no_grad():
        for parameter in model.parameters():
            if parameter.dtype == torch.float32:
                parameter.data = parameter.data.clone()


def trainable_fp32(model: torch.nn.Module) -> int:
    """Undo `use_bf16` on a copy to train (tasks.fine_tune): each `BF16Linear` back to an `nn.Linear` whose
    weight is an fp32 parameter that learns (layers that shared a bf16 weight share the fp32 one); how many."""
    layers = [module for module in model.modules() if isinstance(module, BF16Linear)]
    return _recast(layers, torch.float32, torch.nn.Linear, trainable=True)


def runs_bf16(model: torch.nn.Module) -> bool:
    """Whether any of `model`'s linear layers multiplies in bf16 (`use_bf16`)."""
    return any(isinstance(m, BF16Linear) for m in model.modules())
