"""model_zoo.elmo against AllenNLP 2.10.1's own _ElmoBiLm on the same tiny weights (slow tier; `make test`
downloads the wheel and runs it).

AllenNLP is not installed (its dependencies pin an old torch): its modules are read from the wheel,
with stand-ins for the parts of allennlp.common and allennlp.data that the biLM never uses. By hand:

    .venv/bin/pip download allennlp==2.10.1 --no-deps -d .venv/wheels
    ALLENNLP_WHEEL=.venv/wheels/allennlp-2.10.1-py3-none-any.whl .venv/bin/python -m pytest tests/test_elmo_allennlp.py
"""

from __future__ import annotations

import os
import sys
import types
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch

from model_zoo.elmo import char_id_tensor, char_ids, load_elmo, tokenize
from tests.test_elmo import OPTIONS, write_elmo

WHEEL = os.environ.get("ALLENNLP_WHEEL", "")
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not Path(WHEEL).is_file(), reason="set ALLENNLP_WHEEL to allennlp-2.10.1's wheel (see the docstring)"
    ),
]
TEXTS = [
    "The man went to the bank.",
    "We sat on the river bank and watched the water for a long, long time.",
    "银行在河边。",
    "x" * 60,
]


def _module(name: str, path: Path | None = None, **names: object) -> types.ModuleType:
    module = types.ModuleType(name)
    if path is not None:
        module.__path__ = [str(path)]  # a package whose __init__ (which imports all of AllenNLP) never runs
    module.__dict__.update(names)
    sys.modules[name] = module
    return module


class _Anything:
    def __init__(self, *args: object, **kwargs: object) -> None:
        pass

    @classmethod
    def register(cls, *args: object, **kwargs: object):  # noqa: ANN206
        return lambda c: c


@pytest.fixture(scope="module")
def allennlp(tmp_path_factory: pytest.TempPathFactory):
    """AllenNLP's _ElmoBiLm class, imported from the wheel's source."""
    root = tmp_path_factory.mktemp("allennlp")
    with zipfile.ZipFile(WHEEL) as wheel:
        wheel.extractall(root)
    saved = dict(sys.modules)
    src = root / "allennlp"
    for package in ("", ".modules", ".nn", ".data", ".data.token_indexers", ".data.tokenizers", ".common"):
        _module("allennlp" + package, src / package.strip(".").replace(".", "/"))
    sys.modules["allennlp.common"].__dict__.update(FromParams=_Anything, Registrable=_Anything)
    _module("allennlp.common.checks", ConfigurationError=type("ConfigurationError", (Exception,), {}))
    _module("allennlp.common.file_utils", cached_path=lambda p: p)
    _module(
        "allennlp.common.util",
        lazy_groups_of=None,
        pad_sequence_to_length=None,
        int_to_device=lambda d: d,
        is_distributed=lambda: False,
        is_global_primary=lambda: True,
    )
    for name, cls in (
        ("allennlp.data.instance", "Instance"),
        ("allennlp.data.tokenizers.token_class", "Token"),
        ("allennlp.data.vocabulary", "Vocabulary"),
        ("allennlp.data.batch", "Batch"),
        ("allennlp.data.fields", "TextField"),
    ):
        _module(name, **{cls: _Anything})
    sys.modules["allennlp.data.tokenizers"].__dict__["Token"] = _Anything
    _module("allennlp.data.token_indexers.token_indexer", TokenIndexer=_Anything, IndexedTokenList=dict)
    _module(
        "allennlp.nn.initializers", block_orthogonal=lambda tensor, sizes, gain=1.0: None
    )  # overwritten by the weights
    import importlib

    elmo = importlib.import_module("allennlp.modules.elmo")
    mapper = importlib.import_module("allennlp.data.token_indexers.elmo_indexer").ELMoCharacterMapper
    yield elmo._ElmoBiLm, mapper
    for name in set(sys.modules) - set(saved):
        del sys.modules[name]


def test_character_ids_equal_allennlps(allennlp) -> None:
    _, mapper = allennlp
    for text in TEXTS:
        for word in ["<S>", "</S>", *tokenize(text)]:
            assert char_ids(word) == mapper().convert_word_to_char_ids(word), word


TIGHT = {  # tanh after the CNN, one highway, and clips that every layer reaches
    "lstm": {**OPTIONS["lstm"], "cell_clip": 0.5, "proj_clip": 0.3},
    "char_cnn": {**OPTIONS["char_cnn"], "activation": "tanh", "n_highway": 1},
}


@pytest.mark.parametrize("options", [OPTIONS, TIGHT], ids=["tiny", "tight"])
def test_layers_equal_allennlps_bilm(allennlp, options: dict, tmp_path: Path) -> None:
    bilm_class, _ = allennlp
    folder = write_elmo(tmp_path / "tiny", options=options)
    ours = load_elmo(folder, device="cpu")
    theirs = bilm_class(str(folder / "options.json"), str(folder / "weights.hdf5")).eval()
    sentences = [tokenize(t) for t in TEXTS]
    words = torch.zeros(len(sentences), max(map(len, sentences)), 50, dtype=torch.long)  # AllenNLP adds <S>, </S>
    for i, sentence in enumerate(sentences):
        words[i, : len(sentence)] = torch.tensor([char_ids(w) for w in sentence])
    with torch.inference_mode():
        out = theirs(words)
        activations, mask = out["activations"], out["mask"]
    assert [int(n) for n in mask.sum(1)] == char_id_tensor(sentences)[1].tolist()
    encodings = ours.encode_many(TEXTS)
    for i, enc in enumerate(encodings):
        n = len(enc.tokens)
        want = np.stack([a[i, 1 : n + 1].numpy() for a in activations])  # (3, T, 2P) without the markers
        np.testing.assert_allclose(enc.hidden_states, want, atol=1e-4, rtol=1e-4)
