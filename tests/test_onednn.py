"""oneDNN linear products for the fused twins: same numbers as F.linear, used only where they apply."""

from __future__ import annotations

import platform

import pytest
import torch
import torch.nn.functional as F

import model_zoo
from model_zoo import onednn


@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="PyTorch's x86 CPU build ships oneDNN")
def test_kernel_is_available_on_x86_builds() -> None:
    assert onednn.available()


def test_onednn_linear_matches_f_linear_and_falls_back_for_autograd(monkeypatch) -> None:
    monkeypatch.setenv(onednn.ENV_VAR, "1")  # taken on any CPU: the layer itself is what is tested
    torch.manual_seed(0)
    plain = torch.nn.Linear(32, 24)
    fast = torch.nn.Linear(32, 24)
    fast.load_state_dict(plain.state_dict())
    assert onednn.use_onednn(fast) == (1 if onednn.available() else 0)
    for shape in [(5, 32), (2, 7, 32), (1, 1, 1, 32), (0, 32)]:
        x = torch.randn(*shape)
        with torch.inference_mode():
            got = fast(x)
        assert got.shape == (*shape[:-1], 24)
        torch.testing.assert_close(got, plain(x).detach(), atol=1e-5, rtol=1e-5)
    x = torch.randn(3, 32, requires_grad=True)
    fast(x).sum().backward()  # autograd on: F.linear, so gradients flow
    assert x.grad is not None and fast.weight.grad is not None


def test_only_the_fused_twin_gets_it_and_the_switch_turns_it_off(tiny_bert, monkeypatch) -> None:
    def kinds(module: torch.nn.Module) -> set[type]:
        return {type(m) for m in module.modules() if isinstance(m, torch.nn.Linear)}

    model = model_zoo.load(tiny_bert)
    assert kinds(model.model) == {torch.nn.Linear}  # the eager model stays stock: it gives attention weights
    for layer in (m for m in model.fast_model.modules() if isinstance(m, torch.nn.Linear)):
        taken = onednn.available() and onednn.takes(layer.out_features)
        assert type(layer) is (onednn.OneDNNLinear if taken else torch.nn.Linear)
    text = "the man went to the bank"
    torch.testing.assert_close(
        torch.from_numpy(model.encode(text, attentions=False).hidden_states),
        torch.from_numpy(model.encode(text, attentions=True).hidden_states),
        atol=1e-5,
        rtol=1e-5,
    )
    monkeypatch.setenv(onednn.ENV_VAR, "0")
    assert kinds(model_zoo.load(tiny_bert).fast_model) == {torch.nn.Linear}
    monkeypatch.setenv(onednn.ENV_VAR, "1")
    assert kinds(model_zoo.load(tiny_bert).fast_model) == (
        {onednn.OneDNNLinear} if onednn.available() else {torch.nn.Linear}
    )


@pytest.mark.parametrize(("flags", "body"), [("fpu sse avx2 fma", False), ("fpu avx2 avx512f avx512bw", True)])
def test_auto_gives_the_body_onednn_on_avx512_cpus_only_and_a_vocabulary_head_everywhere(
    flags: str, body: bool, monkeypatch
) -> None:
    """Where oneDNN's product was measured slower for the body's layers (an AVX2-only EPYC), they keep MKL's;
    a vocabulary head, where it was faster there too, takes it."""
    monkeypatch.setattr(onednn, "_cpu_flags", lambda: set(flags.split()))
    onednn.suits_cpu.cache_clear()
    try:
        for value in ("auto", None):
            if value is None:
                monkeypatch.delenv(onednn.ENV_VAR, raising=False)
            else:
                monkeypatch.setenv(onednn.ENV_VAR, value)
            narrow, wide = torch.nn.Linear(8, 4), torch.nn.Linear(8, onednn.WIDE)
            assert (onednn.takes(4), onednn.takes(onednn.WIDE)) == (body, True)
            assert onednn.use_onednn(torch.nn.Sequential(narrow, wide)) == (1 + body if onednn.available() else 0)
            assert isinstance(wide, onednn.OneDNNLinear) == onednn.available()
        monkeypatch.setenv(onednn.ENV_VAR, "1")
        assert onednn.takes(4) and onednn.takes(onednn.WIDE)
        monkeypatch.setenv(onednn.ENV_VAR, "0")
        assert not onednn.takes(4) and not onednn.takes(onednn.WIDE)
    finally:
        onednn.suits_cpu.cache_clear()


def test_f_linear_is_what_other_devices_and_dtypes_get(monkeypatch) -> None:
    monkeypatch.setenv(onednn.ENV_VAR, "1")
    layer = torch.nn.Linear(8, 4).to(torch.float64)
    onednn.use_onednn(layer)
    called = []
    monkeypatch.setattr(onednn, "_product", lambda *a: called.append(a) or F.linear(*a))
    with torch.inference_mode():
        layer(torch.randn(2, 8, dtype=torch.float64))
    assert called == []
    if onednn.available():  # and the same layer in fp32 does take the oneDNN product
        with torch.inference_mode():
            layer.float()(torch.randn(2, 8))
        assert len(called) == 1


def test_a_bf16_layer_multiplies_in_bf16_returns_fp32_and_keeps_autograd() -> None:
    torch.manual_seed(0)
    plain = torch.nn.Linear(64, 48)
    layer = torch.nn.Linear(64, 48)
    layer.load_state_dict(plain.state_dict())
    assert onednn.use_bf16(layer) == 1 and isinstance(layer, onednn.BF16Linear)
    assert layer.weight.dtype == torch.bfloat16 and layer.bias.dtype == torch.float32
    x = torch.randn(3, 5, 64)
    with torch.inference_mode():
        got = layer(x)
    assert got.dtype == torch.float32 and got.shape == (3, 5, 48)
    torch.testing.assert_close(got, plain(x).detach(), atol=3e-2, rtol=3e-2)  # bf16 keeps 8 bits of mantissa
    assert not torch.equal(got, plain(x).detach())  # and it is bf16's product, not fp32's
    x = torch.randn(3, 64, requires_grad=True)
    layer(x).sum().backward()  # autograd on: an fp32 product, gradients flow to the input
    assert x.grad is not None
    assert onednn.use_bf16(layer) == 0  # turned once


def test_layers_sharing_a_weight_share_its_bf16_copy_and_kept_ones_stay_fp32() -> None:
    model = torch.nn.ModuleDict(
        {"a": torch.nn.Linear(8, 8), "b": torch.nn.Linear(8, 8), "lm_head": torch.nn.Linear(8, 8)}
    )
    model["b"].weight = model["a"].weight
    assert onednn.use_bf16(model, keep=("lm_head",)) == 2
    assert model["a"].weight is model["b"].weight and model["a"].weight.dtype == torch.bfloat16
    assert type(model["lm_head"]) is torch.nn.Linear and model["lm_head"].weight.dtype == torch.float32
    assert onednn.runs_bf16(model) and not onednn.runs_bf16(model["lm_head"])


@pytest.mark.parametrize(
    ("value", "native", "wanted"),
    [
        (None, True, False),
        ("0", True, False),
        ("1", False, True),
        ("auto", True, True),
        ("auto", False, False),
    ],
)
def test_bf16_is_chosen_by_the_switch_and_auto_asks_for_native_support(monkeypatch, value, native, wanted) -> None:
    if value is None:
        monkeypatch.delenv(onednn.BF16_VAR, raising=False)
    else:
        monkeypatch.setenv(onednn.BF16_VAR, value)
    monkeypatch.setattr(onednn, "bf16_native", lambda: native)
    monkeypatch.setenv("CONTEXTLAB_DEVICE", "cpu")
    assert onednn.bf16_wanted() is wanted
    from model_zoo import device

    monkeypatch.setattr(device, "select_device", lambda override=None: torch.device(override or "cuda"))
    assert not onednn.bf16_wanted()  # the models on a GPU keep their fp32 weights
    assert onednn.bf16_wanted("cpu") is wanted  # a model asked for on the CPU of such a machine: as on a CPU


def test_bf16_native_needs_the_cpu_flag(monkeypatch) -> None:
    onednn.bf16_native.cache_clear()
    monkeypatch.setattr(onednn, "_cpu_flags", lambda: {"avx2", "avx512f"})
    try:
        assert not onednn.bf16_native()  # AVX-512 without BF16 only emulates it: slower than fp32
    finally:
        onednn.bf16_native.cache_clear()
