"""load(): registered names, local folders, the classics through the cache, and failures."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import model_zoo
from tests.conftest import ROOT

OFFLINE = (  # what ContextLab serves without a download: the offline pack and what was trained on it here
    "glove-6b-50d",
    "elmo-mini",
    "minilm-l6",
    "minilm-l6-mlm",
    "minilm-l6-qa",
    "smollm2-135m",
    "smollm2-135m-mlm",
    "smollm2-135m-qa",
)


def test_registry_is_consistent() -> None:
    cards = model_zoo.list_models()
    names = [c.name for c in cards]
    assert len(names) == len(set(names))
    offline = {c.name for c in cards if c.offline}
    assert offline == set(OFFLINE)
    for card in cards:
        assert card.licence and card.size and card.source and card.capabilities
        homes = [card.offline, card.hub_repo is not None, bool(card.downloads)]
        assert sum(homes) == 1, card.name  # each model comes from exactly one place
        if not card.offline:
            assert card.fallback in offline, card.name
    assert [c.family for c in cards] == sorted(
        (c.family for c in cards), key=["word2vec/GloVe", "ELMo", "BERT", "GPT"].index
    )


def test_offline_pack_is_installed_and_classics_need_download(hub_unreachable, monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("CONTEXTLAB_CACHE", str(tmp_path))  # nothing prefetched
    states = {c.name: model_zoo.availability(c) for c in model_zoo.list_models()}
    for name in OFFLINE:
        assert states[name].status == "installed" and states[name].ready
    for name in ("bert-base-uncased", "elmo-small", "bert-base-squad2"):
        assert states[name].status == "needs download" and not states[name].ready
        assert f"prefetch {name}" in states[name].reason


def test_unknown_name_lists_the_known_ones() -> None:
    with pytest.raises(model_zoo.UnknownModel, match="minilm-l6"):
        model_zoo.load("bert-base-uncasd")


def test_folder_without_checkpoint_says_what_is_missing(tmp_path) -> None:
    with pytest.raises(model_zoo.BadCheckpoint, match="config.json"):  # one sentence a page can show
        model_zoo.load(tmp_path)


def test_unreachable_classic_fails_fast_with_fallback_and_fix(hub_unreachable, monkeypatch) -> None:
    """One quick probe of the Hub, then the answer: no download is tried (huggingface_hub would
    retry for about 25 s before the page could say anything)."""
    import transformers

    from model_zoo import loading

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)  # this is the unreachable Hub, not the forced-offline one
    probes: list[float] = []
    reachable = loading.hub_reachable
    monkeypatch.setattr(loading, "hub_reachable", lambda: probes.append(1) or reachable())
    for auto in ("AutoModelForPreTraining", "AutoTokenizer"):
        real = getattr(transformers, auto).from_pretrained

        def local_only(*args, _real=real, **kwargs):  # noqa: ANN002, ANN003, ANN202
            assert kwargs.get("local_files_only"), "a download was tried although the Hub is unreachable"
            return _real(*args, **kwargs)

        monkeypatch.setattr(getattr(transformers, auto), "from_pretrained", local_only)
    with pytest.raises(model_zoo.ModelUnavailable) as err:
        model_zoo.load("bert-base-uncased")
    assert probes == [1]
    assert err.value.fallback == "minilm-l6-mlm"  # a masked LM stands in for a masked LM
    assert err.value.prefetch_command == "python -m model_zoo prefetch bert-base-uncased"
    assert "cannot be reached" in str(err.value)


def test_hf_hub_offline_is_respected(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(model_zoo.ModelUnavailable, match="HF_HUB_OFFLINE"):
        model_zoo.load("gpt2")
    assert model_zoo.availability(model_zoo.get_card("gpt2")).status == "needs download"


def test_trained_weights_missing_are_reported(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    from model_zoo import registry

    monkeypatch.setattr(registry, "ASSETS", tmp_path)
    state = model_zoo.availability(model_zoo.get_card("minilm-l6-mlm"))
    assert state.status == "missing" and "python -m model_zoo.train_mlm" in state.reason


def test_released_elmo_needs_a_prefetch_and_falls_back_to_elmo_mini(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("CONTEXTLAB_CACHE", str(tmp_path))
    card = model_zoo.get_card("elmo-original")
    assert [f for f, _ in card.downloads] == ["options.json", "weights.hdf5"]
    assert all(url.startswith("https://s3-us-west-2.amazonaws.com/allennlp/models/elmo/") for _, url in card.downloads)
    with pytest.raises(model_zoo.ModelUnavailable) as err:
        model_zoo.load("elmo-original")
    assert err.value.fallback == "elmo-mini" and "prefetch elmo-original" in err.value.prefetch_command


def test_cached_classic_loads_through_the_classic_path(tiny_bert, hub_unreachable, fake_hub) -> None:
    """A BERT checkpoint in the HF cache is found with no network, as after a prefetch."""
    card = model_zoo.get_card("bert-base-chinese")
    assert model_zoo.availability(card).status == "needs download"
    fake_hub(card.hub_repo, tiny_bert)
    assert model_zoo.availability(card).status == "cached"
    model = model_zoo.load("bert-base-chinese")
    assert isinstance(model, model_zoo.MaskedLM) and model.name == "bert-base-chinese"
    assert model.has_nsp
    assert len(model.fill_mask("the man went to the [MASK]", top_k=3)[0]) == 3


def test_cached_word2vec_loads_as_static_vectors(tmp_path, hub_unreachable, fake_hub) -> None:
    from gensim.models import KeyedVectors

    kv = KeyedVectors(vector_size=4)
    kv.add_vectors(["king", "queen", "man", "woman"], np.eye(4, dtype=np.float32) + 0.1)
    card = model_zoo.get_card("word2vec-google-news-300")
    kv.save(str(tmp_path / card.hub_files[0]), sep_limit=0)  # vectors in their own .npy, as on the Hub
    fake_hub(card.hub_repo, tmp_path)
    assert model_zoo.availability(card).status == "cached"
    model = model_zoo.load("word2vec-google-news-300")
    assert isinstance(model, model_zoo.StaticModel)
    np.testing.assert_allclose(model.vector("queen"), kv["queen"])


def test_device_selection(monkeypatch: pytest.MonkeyPatch) -> None:
    import torch

    monkeypatch.setenv("CONTEXTLAB_DEVICE", "cpu")
    assert model_zoo.select_device().type == "cpu"
    monkeypatch.setenv("CONTEXTLAB_DEVICE", "gpu-please")
    with pytest.raises(ValueError, match="not a torch device"):
        model_zoo.select_device()
    monkeypatch.delenv("CONTEXTLAB_DEVICE")
    assert model_zoo.select_device().type == ("cuda" if torch.cuda.is_available() else "cpu")
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="no CUDA device"):
            model_zoo.select_device("cuda")


def _cli(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    import os

    return subprocess.run(
        [sys.executable, "-m", "model_zoo", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        timeout=120,
    )


def test_cli_list_shows_every_model_and_its_status() -> None:
    out = _cli("list")
    assert out.returncode == 0
    for card in model_zoo.list_models():
        assert card.name in out.stdout
    assert "installed" in out.stdout and "needs download" in out.stdout


def test_cli_prefetch_offline_is_one_clear_line() -> None:
    out = _cli("prefetch", "gpt2", HF_ENDPOINT="http://127.0.0.1:9")
    assert out.returncode == 1
    assert out.stderr.strip().splitlines() == [
        "error: cannot download gpt2: the Hugging Face Hub cannot be reached (offline?)"
    ]
    assert "Traceback" not in out.stderr


def test_cli_prefetch_of_installed_model_is_a_no_op() -> None:
    out = _cli("prefetch", "minilm-l6")
    assert out.returncode == 0 and "already here" in out.stdout


def test_many_threads_loading_different_models_at_once_all_succeed(tiny_bert, tiny_gpt2, tmp_path) -> None:
    """A fresh server whose students open different pages at once loads different models in parallel
    threads; transformers' meta-device loading is process-wide, so unguarded loads corrupted each
    other ("Cannot copy out of meta tensor", 24 of these 48 loads before model_zoo.load took turns)."""
    import threading

    from tests.conftest import save_tiny_bert

    folders = [tiny_bert, tiny_gpt2, save_tiny_bert(tmp_path / "encoder", pretraining=False)]
    folders.append(save_tiny_bert(tmp_path / "reader", qa=True))
    errors: list[str] = []
    loaded: list[str] = []

    def work(i: int) -> None:
        for k in range(6):
            try:
                model = model_zoo.load(folders[(i + k) % len(folders)])
                loaded.append(type(model).__name__)
            except Exception as err:  # noqa: BLE001 - every failure is what the test counts
                errors.append(f"{type(err).__name__}: {err}")

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert sorted(set(loaded)) == ["CausalLM", "Encoder", "MaskedLM", "Reader"] and len(loaded) == 48


def test_each_role_opens_on_a_classic_or_the_offline_model_that_can_stand_in() -> None:
    from model_zoo.registry import ROLES, models_where

    for name, role in ROLES.items():
        classic, offline = model_zoo.get_card(role.classic), model_zoo.get_card(role.offline)
        assert not classic.offline and offline.offline, name
        assert role.capability in classic.capabilities and role.capability in offline.capabilities, name
    assert models_where(kinds=("qa",)) == ["minilm-l6-qa", "smollm2-135m-qa", "bert-base-squad2"]
    assert models_where(family="ELMo", capability="next_words") == ["elmo-mini"]
    assert "gpt2" not in models_where(capability="attentions", without=("causal_lm",))
