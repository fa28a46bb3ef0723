"""What the Inside the model lesson computes for its page (issue 37): one forward pass opened on the learner's
sentence. The computation is model_zoo.lessons.inside; here it is cached, shared by a class, and the shipped
tuned lenses are found and checked against the weights they were trained on.

Every result is keyed on (model, text, settings): thirty learners on the lesson's example share one pass.
The heatmap of every head's effect takes seconds on a 135M-parameter model (270 heads), so it is computed
once per server for a sentence (serving's Memo) with a progress bar, never twice at once.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import streamlit as st

import model_zoo
import serving
from model_zoo.lessons.lexicon import ASSETS
from serving.runtime import MicroBatcher

if TYPE_CHECKING:
    from collections.abc import Callable

    from model_zoo.lessons.inside import AnswerPass, BlockPath, Knocked, Lens, TunedLens, WeightAndEffect

LENS_SCRIPT = "python -m model_zoo.train_lens"


def _model(model_name: str) -> model_zoo.Encoder:
    return serving.loaded(model_name, model_zoo.Encoder)


@st.cache_data(max_entries=128, show_spinner=False)
def logit_lens(model_name: str, text: str) -> Lens:
    """What each layer would predict at the answer position, through the model's own head."""
    return lenses(model_name, text)[0]


@st.cache_resource(show_spinner=False)
def _pass_batcher(model_name: str) -> MicroBatcher[str, Answered]:
    """A class's sentences share one padded pass (model_zoo.lessons.inside.answer_passes), and their lenses a
    few reads of the output head (inside.lenses_many)."""
    from model_zoo.lessons import inside

    def run(texts: list[str]) -> list[Answered]:
        model, shipped = _model(model_name), shipped_lens(model_name)
        found = inside.answer_passes(model, texts)
        read = inside.lenses_many(model, texts, found, None if shipped is None else shipped[0])
        return [Answered(f, logit, tuned) for f, (logit, tuned) in zip(found, read, strict=True)]

    # no gathering while a class keeps arriving: most of this work (the lenses' head products) grows with the
    # sentences, so a pass of one costs little beside the class's, and waiting for stragglers measured slower
    # (two workers, 30 learners: p95 3.30 / 3.44 s without, 3.68 / 4.29 s with; docs/deploy.md)
    return MicroBatcher(run, gather_max_s=0.0)


@dataclass(frozen=True)
class Answered:
    """A text's AnswerPass and the lenses read from it: the logit lens, and the tuned lens where one is shipped."""

    found: AnswerPass
    logit: Lens
    tuned: Lens | None


def _answered(model_name: str, text: str) -> Answered:
    """The text's pass and lenses, once per server for a (model, text): the lenses and the token's path at the
    answer both read it, and learners typing together share the pass itself."""
    from model_zoo.lessons import inside

    inside.read(_model(model_name), text)  # a learner's own mistake (no [MASK]) stays theirs: it never joins a batch
    return serving._shared(("answer pass", model_name, text), lambda: _pass_batcher(model_name)(text))


@st.cache_data(max_entries=128, show_spinner=False)
def lenses(model_name: str, text: str) -> tuple[Lens, Lens | None]:
    """The logit lens, and the tuned lens where one is shipped for these weights (else None), from one pass."""
    answered = _answered(model_name, text)
    return answered.logit, answered.tuned


@dataclass(frozen=True)
class LensQuality:
    """A shipped tuned lens's measured quality: the mean KL divergence (bits) from the model's final
    distribution to each layer's reading, on test texts no training decision read."""

    logit_bits: tuple[float, ...]  # (L + 1,) the raw logit lens
    tuned_bits: tuple[float, ...]  # (L + 1,) the tuned lens
    command: str
    seconds: float
    texts: dict[str, int]  # train / dev / test texts
    positions: int  # the positions the fit read

    @property
    def better_layers(self) -> int:
        """Layers (all but the last) where the tuned lens reads closer to the answer than the logit lens."""
        return sum(t < r for t, r in zip(self.tuned_bits[:-1], self.logit_bits[:-1]))


@st.cache_resource(max_entries=8, show_spinner=False)
def shipped_lens(model_name: str) -> tuple[TunedLens, LensQuality] | None:
    """The tuned lens ContextLab trained for `model_name` and its quality, or None: none shipped, or it was
    trained on other weights than the ones on this machine (a model trained again under its name)."""
    from model_zoo.lessons.inside import load_lens
    from model_zoo.registry import weights_fingerprint

    folder = ASSETS / "models" / f"{model_name}-lens"
    if not (folder / "metrics.json").is_file():
        return None
    metrics = json.loads((folder / "metrics.json").read_text("utf-8"))
    model = _model(model_name)
    shape = (metrics.get("layers"), metrics.get("width"))
    if metrics.get("weights") != weights_fingerprint(model_name) or shape != (
        int(model.config.num_hidden_layers),
        int(model.config.hidden_size),
    ):
        return None
    lens = load_lens(folder, int(model.config.num_hidden_layers), int(model.config.hidden_size)).to(model.device)
    bits = metrics["test_kl_bits"]
    quality = LensQuality(
        tuple(bits["logit_lens"]),
        tuple(bits["tuned_lens"]),
        metrics["command"],
        metrics["seconds"],
        metrics["texts"],
        metrics["positions"]["train"],
    )
    return lens, quality


@st.cache_data(max_entries=256, show_spinner=False)
def block_path(model_name: str, text: str, layer: int, token: int) -> BlockPath:
    """One token's path through block `layer` (0-based): at the answer position, read from the pass the lenses
    made; at another token, a pass of its own."""
    from model_zoo.lessons import inside

    model = _model(model_name)
    if token == reading(model_name, text)[1]:
        return inside.path_from_pass(model, text, layer, _answered(model_name, text).found)
    return inside.block_path(model, text, layer, token)


@st.cache_data(max_entries=256, show_spinner=False)
def knock_out(model_name: str, text: str, part: str, layer: int, head: int, mode: str) -> Knocked:
    """The answer with and without one part (head, heads, mlp, layer; layer and head 0-based)."""
    from model_zoo.lessons import inside

    knock = inside.Knock(part, layer, head, mode)  # type: ignore[arg-type]
    return inside.knock_out(_model(model_name), text, knock, intact=intact_answer(model_name, text))


@st.cache_data(max_entries=256, show_spinner=False)
def intact_answer(model_name: str, text: str) -> tuple[int, float]:
    """The intact model's answer at the blank and its probability, once per server for a text: a learner trying
    one part after another pays the knocked pass alone (SmolLM2: half of each knock-out's 0.14 s on one core)."""
    from model_zoo.lessons import inside

    return inside.intact_answer(_model(model_name), text)


def head_effects(
    model_name: str, text: str, mode: str, on_progress: Callable[[float], object] | None = None
) -> tuple[np.ndarray, str, float]:
    """Every head's effect on the answer (L, H), once per server for a sentence and mode."""
    from model_zoo.lessons import inside

    def compute() -> tuple[np.ndarray, str, float]:
        return inside.head_effects(_model(model_name), text, mode, on_progress)  # type: ignore[arg-type]

    return serving._shared(("head effects", model_name, text, mode), compute)


def cached_head_effects(model_name: str, text: str, mode: str) -> tuple[np.ndarray, str, float] | None:
    """The heatmap's numbers if this server has them already (a second look draws at once), else None."""
    found = serving.SLOW.peek(("head effects", model_name, text, mode))
    return found  # type: ignore[return-value]


@st.cache_data(max_entries=128, show_spinner=False)
def answer_attention(model_name: str, text: str) -> np.ndarray:
    """(L, H, T) every head's weights from the answer position."""
    from model_zoo.lessons import inside

    return inside.answer_attention(_model(model_name), text)


def weight_and_effect(model_name: str, text: str, effects: np.ndarray) -> WeightAndEffect:
    from model_zoo.lessons import inside

    return inside.weight_and_effect(effects, answer_attention(model_name, text))


def mlp_width(model_name: str) -> int:
    """The MLP's hidden size from the model's config (no forward pass)."""
    config = _model(model_name).config
    return int(getattr(config, "intermediate_size", 0) or getattr(config, "n_inner", 0) or 4 * config.hidden_size)


@st.cache_data(max_entries=256, show_spinner=False)
def reading(model_name: str, text: str) -> tuple[list[str], int]:
    """The tokens the model reads (a causal LM: those before the [MASK]) and the one whose stream its head
    reads for the answer (the [MASK], the one before it in a decoder made a masked LM, a causal LM's last)."""
    from model_zoo.lessons import inside

    found = inside.read(_model(model_name), text)
    return found.tokens, found.at


def post_norm(model_name: str) -> bool:
    """Whether each layer's output passes its own LayerNorm (a BERT), which the raw logit lens reads poorly."""
    from model_zoo.lessons import inside

    return inside.anatomy(_model(model_name)).post_norm
