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


def test_onednn_linear_matches_f_linear_and_falls_back_for_autograd() -> None:
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
    assert kinds(model.fast_model) == ({onednn.OneDNNLinear} if onednn.available() else {torch.nn.Linear})
    text = "the man went to the bank"
    torch.testing.assert_close(
        torch.from_numpy(model.encode(text, attentions=False).hidden_states),
        torch.from_numpy(model.encode(text, attentions=True).hidden_states),
        atol=1e-5,
        rtol=1e-5,
    )
    monkeypatch.setenv(onednn.ENV_VAR, "0")
    assert kinds(model_zoo.load(tiny_bert).fast_model) == {torch.nn.Linear}


def test_f_linear_is_what_other_devices_and_dtypes_get(monkeypatch) -> None:
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
