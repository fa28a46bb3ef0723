"""The class server's bf16 products (CONTEXTLAB_BF16, model_zoo.onednn) on the shipped masked LM and reader:
the lessons' blanks and the lecture's answers as in fp32, the figures bf16.json gives the pages, and half the
memory for the linear layers' weights. CONTEXTLAB_BF16=1 runs them on any CPU (emulated where it has no
native bf16: slower, same figures within a sentence or two)."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator

import numpy as np
import pytest

import model_zoo
from model_zoo import onednn
from model_zoo.lessons import cloze, tasks
from model_zoo.trained import in_bf16
from tests.conftest import ROOT

pytestmark = pytest.mark.slow  # the real offline pack, loaded twice

PRECISIONS = ("fp32", "bf16")


@contextlib.contextmanager
def _served_in(precision: str) -> Iterator[None]:
    """CONTEXTLAB_BF16 set for `precision` while models load, as before afterwards."""
    saved = os.environ.get(onednn.BF16_VAR)
    os.environ[onednn.BF16_VAR] = "1" if precision == "bf16" else "0"
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop(onednn.BF16_VAR, None)
        else:
            os.environ[onednn.BF16_VAR] = saved


@pytest.fixture(scope="module")
def both() -> dict[str, tuple[model_zoo.MaskedLM, model_zoo.Reader]]:
    """The masked LM and the reader as a server loads them, in fp32 and in bf16."""
    out = {}
    for precision in PRECISIONS:
        with _served_in(precision):
            masked, reader = model_zoo.load("smollm2-135m-mlm"), model_zoo.load("smollm2-135m-qa")
        assert isinstance(masked, model_zoo.MaskedLM) and isinstance(reader, model_zoo.Reader)
        assert masked.runs_bf16 == reader.runs_bf16 == (precision == "bf16")
        out[precision] = (masked, reader)
    return out


def test_the_lessons_blanks_and_the_lectures_answers_are_fp32s(both) -> None:
    (lm32, reader32), (lm16, reader16) = both["fp32"], both["bf16"]
    items = cloze.lessons()
    bf16, fp32 = cloze.first_guesses(lm16, items), cloze.first_guesses(lm32, items)
    assert [g[0] for g in bf16] == [g[0] for g in fp32]  # the word each lesson names first (their order below may swap)
    assert cloze.score(items, bf16) == cloze.score(items, fp32)
    assert lm16.fill_mask("Paris is the capital of [MASK].", 1)[0][0][0].lower() == "france"
    for q in tasks.written_passages()[tasks.LECTURE_PASSAGE]:
        bf16, fp32 = (tasks.read_answer(r, q.question, q.passage).text for r in (reader16, reader32))
        assert bf16 == fp32


def test_the_figures_the_pages_show_are_this_models(both) -> None:
    """bf16.json (model_zoo.training.measure_bf16) against the fresh test sentences and held-out written
    questions read again here; another CPU's bf16 kernels may round a close call the other way."""
    (lm32, _), (lm16, reader16) = both["fp32"], both["bf16"]
    mlm = in_bf16(model_zoo.get_card("smollm2-135m-mlm"))
    assert mlm is not None
    items = cloze.fresh()
    a, b = cloze.first_guesses(lm32, items), cloze.first_guesses(lm16, items)
    assert mlm.items == len(items)
    assert sum(x[0] == y[0] for x, y in zip(a, b, strict=True)) == pytest.approx(mlm.same, abs=2)
    assert cloze.score(items, b)["cloze_top1"] == pytest.approx(mlm.bf16.top1, abs=0.012)
    assert cloze.score(items, a)["cloze_top1"] == pytest.approx(mlm.fp32.top1, abs=1e-9)  # fp32's is fp32's
    qa = in_bf16(model_zoo.get_card("smollm2-135m-qa"))
    assert qa is not None
    from model_zoo.training.train_qa import evaluate, written

    test = written()["test"]
    assert qa.items == len(test)
    assert evaluate(reader16, test)["exact"] == pytest.approx(qa.bf16.exact, abs=0.025)


MEMORY = """
import gc, model_zoo
from model_zoo.lessons import tasks
masked, reader = model_zoo.load("smollm2-135m-mlm"), model_zoo.load("smollm2-135m-qa")
masked.fill_mask("Paris is the capital of [MASK].")
tasks.read_answer(reader, "Where did we sit?", "We sat on the river bank.")
gc.collect()
print([int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmRSS")][0])
"""


def _rss_kib(script: str, bf16: str) -> int:
    """The resident memory (KiB) of a fresh process that runs `script` with CONTEXTLAB_BF16=`bf16`."""
    env = {**os.environ, onednn.BF16_VAR: bf16}
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    return int(done.stdout.split()[-1])


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="reads Linux's /proc")
def test_bf16_holds_the_two_models_in_less_memory() -> None:
    """Each precision in a process of its own: the fp32 weights must be freed, not kept beside the bf16 ones
    (transformers' loader keeps a block whole while any view of it lives: onednn.own_storage)."""

    fp32, bf16 = _rss_kib(MEMORY, "0"), _rss_kib(MEMORY, "1")
    assert fp32 - bf16 > 150 * 1024, json.dumps({"fp32_kib": fp32, "bf16_kib": bf16})


@pytest.fixture(scope="module")
def causal() -> dict[str, model_zoo.CausalLM]:
    """The GPT lessons' SmolLM2 as a server loads it (the GGUF model), in fp32 and in bf16."""
    out = {}
    for precision in PRECISIONS:
        with _served_in(precision):
            model = model_zoo.load("smollm2-135m")
        assert isinstance(model, model_zoo.CausalLM) and model.runs_bf16 == (precision == "bf16")
        out[precision] = model
    return out


def test_the_gpt_lessons_blanks_are_fp32s_and_as_measured(causal) -> None:  # noqa: ANN001
    """The GPT lesson's own blanks: the same first word from the left and from the whole sentence in bf16 as
    in fp32, and as smollm2-135m.bf16.json recorded; its held-out perplexity read again here."""
    from model_zoo.lessons import generation
    from model_zoo.trained import causal_bf16_file, causal_in_bf16

    recorded = json.loads(causal_bf16_file().read_text())["lesson_blanks"]
    for text, row in zip(generation.LESSON_BLANKS, recorded, strict=True):
        firsts = {}
        for precision, model in causal.items():
            rows = generation.left_only_vs_whole(model, text)
            firsts[precision] = {
                "left": generation.left_first(rows).candidate,
                "whole": generation.whole_first(rows).candidate,
            }
        assert firsts["bf16"] == firsts["fp32"] == row["bf16"] == row["fp32"], (text, firsts)
    check = causal_in_bf16("smollm2-135m")
    assert check is not None
    sentences = [item.text.replace("[MASK]", min(item.answers)) for item in cloze.fresh()]
    total = [generation.token_logprobs(causal["bf16"], s) for s in sentences]
    perplexity = float(np.exp(-sum(f.total for f in total) / sum(len(f.probabilities) for f in total)))
    assert perplexity == pytest.approx(check.perplexity_bf16, rel=0.01)
    assert check.same_next / check.positions > 0.97  # the next word fp32's nearly everywhere
    assert abs(check.perplexity_bf16 - check.perplexity_fp32) / check.perplexity_fp32 < 0.02


CAUSAL_MEMORY = """
import gc, model_zoo
model = model_zoo.load("smollm2-135m")
model.next_words("The man went to the", 5)
gc.collect()
print([int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmRSS")][0])
"""


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="reads Linux's /proc")
def test_bf16_holds_the_causal_lm_in_less_memory() -> None:
    """SmolLM2 for the GPT lessons: its linear layers' fp32 weights freed once they are bf16 (own_storage)."""
    fp32, bf16 = _rss_kib(CAUSAL_MEMORY, "0"), _rss_kib(CAUSAL_MEMORY, "1")
    assert fp32 - bf16 > 150 * 1024, json.dumps({"fp32_kib": fp32, "bf16_kib": bf16})
