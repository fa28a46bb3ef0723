"""Shipped files over 16 MiB are kept in pieces (model_zoo.pieces) and read back as the whole file: the models
load the same, their fingerprints (which every precomputed figure is checked against) do not change, and no
file in the repository is over the limit."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
import torch

import model_zoo
from model_zoo import pieces, registry
from model_zoo.loading import load_partial_weights
from tests.conftest import ROOT
from tests.test_elmo import VOCAB, outputs, write_elmo


def test_no_shipped_file_is_over_16_mib() -> None:
    sizes = {f.relative_to(ROOT): f.stat().st_size for f in (ROOT / "assets").rglob("*") if f.is_file()}
    assert len(sizes) > 50 and {n: s for n, s in sizes.items() if s > pieces.PIECE_BYTES} == {}
    for whole in ("assets/models/elmo-mini/weights.hdf5", "assets/models/minilm-l6-mlm/model.safetensors"):
        assert len(pieces.pieces(ROOT / whole)) == 2, whole  # the two shipped files over the limit, in pieces


def test_a_split_file_reads_back_whole_and_a_new_split_leaves_no_stale_piece(tmp_path: Path) -> None:
    data = np.random.default_rng(0).bytes(2500)
    path = tmp_path / "w.bin"
    path.write_bytes(data)
    assert pieces.split(path, 1000) == [tmp_path / f"w.bin.part{i}" for i in range(3)] and not path.exists()
    assert pieces.read_bytes(path) == data and pieces.exists(path)
    path.write_bytes(data[:1500])  # written again, smaller: two pieces now, the old third one gone
    assert len(pieces.split(path, 1000)) == 2 and pieces.read_bytes(path) == data[:1500]
    path.write_bytes(data[:10])
    assert pieces.split(path, 1000) == [path] and pieces.pieces(path) == [path]
    with pytest.raises(FileNotFoundError):
        pieces.read_bytes(tmp_path / "none.bin")


def test_an_elmo_in_pieces_is_the_same_model(tmp_path: Path) -> None:
    whole = write_elmo(tmp_path / "whole", vocab=VOCAB)
    split = shutil.copytree(whole, tmp_path / "split")
    assert len(pieces.split(split / "weights.hdf5", 4096)) > 2
    a, b = model_zoo.load(whole), model_zoo.load(split)
    np.testing.assert_array_equal(outputs(a), outputs(b))


def test_safetensors_in_pieces_load_into_the_model(tmp_path: Path) -> None:
    from safetensors.torch import save_file

    model = torch.nn.Sequential(torch.nn.Linear(40, 40), torch.nn.Linear(40, 3))
    trained = {"1.weight": torch.randn(3, 40), "1.bias": torch.randn(3)}
    save_file(trained, str(tmp_path / "head.safetensors"))
    assert len(pieces.split(tmp_path / "head.safetensors", 100)) > 1
    load_partial_weights(model, tmp_path / "head.safetensors", required=("1.weight",))
    assert torch.equal(model[1].weight, trained["1.weight"]) and torch.equal(model[1].bias, trained["1.bias"])


def test_splitting_keeps_the_fingerprint_and_the_model_available(tmp_path: Path, monkeypatch) -> None:
    """Figures precomputed from elmo-mini (senses forming, probing, ...) are served only with the weights
    they came from: splitting the file must not make them stale."""
    monkeypatch.setattr(registry, "ASSETS", tmp_path)
    card = registry.get_card("elmo-mini")
    write_elmo(registry.trained_file(card).parent, vocab=VOCAB)
    before = registry.weights_fingerprint("elmo-mini")
    pieces.split(registry.trained_file(card), 1000)
    assert registry.weights_fingerprint("elmo-mini") == before and before is not None
    assert registry.availability(card).status == "installed"
    (registry.trained_file(card).parent / "weights.hdf5.part1").write_bytes(b"changed")
    assert registry.weights_fingerprint("elmo-mini") not in (before, None)


def test_the_fingerprint_does_not_depend_on_where_the_package_and_the_repository_lie(
    tmp_path: Path, monkeypatch
) -> None:
    """smollm2-135m-mlm's weights are the pack's GGUF file and ContextLab's adapter. Hashed in the order of their
    whole paths, a checkout that sorts before the package's install (/app beside /usr, /tmp beside /work) got
    another fingerprint for the same bytes, and the tuned lens and every figure precomputed from the model were
    not shown."""
    card = registry.get_card("smollm2-135m-mlm")
    assert card.package and card.trained
    found = []
    for package_dir, repo_dir in (("a_site", "z_repo"), ("z_site", "a_repo")):
        package = tmp_path / package_dir / "SmolLM2-135M-Instruct.Q4_1.gguf"
        package.parent.mkdir()
        package.write_bytes(b"the pack's weights")
        monkeypatch.setattr(registry, "package_file", lambda card, package=package: package)
        monkeypatch.setattr(registry, "ASSETS", tmp_path / repo_dir / "assets")
        adapter = registry.trained_file(card)
        adapter.parent.mkdir(parents=True)
        adapter.write_bytes(b"ContextLab's adapter")
        found.append(registry.weights_fingerprint(card.name))
    assert found[0] == found[1] and found[0] is not None
