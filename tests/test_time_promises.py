"""A promise of time is a measurement (issue 33): the buttons that train something quote how long their work
took the first time on a server, as scripts/time_buttons.py measured it (assets/timings.json), or make no
promise. Fast tier: the tiny zoo."""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.conftest import open_page

ROOT = Path(__file__).resolve().parent.parent
LABELS = {
    "mlm.why_train": "why_mask",
    "using.token_train": "tagger",
    "using.qa_frozen_train": "qa_frozen",
    "using.finetune": "finetune",
}


def unescaped(markdown: str) -> str:
    """A label as the browser shows it: CommonMark drops the backslash before any ASCII punctuation."""
    return re.sub(r"\\([!-/:-@\[-`{-~])", r"\1", markdown)


def strings(lang: str) -> dict[str, str]:
    table = tomllib.loads((ROOT / "assets" / "i18n" / f"{lang}.toml").read_text(encoding="utf-8"))
    return {f"{section}.{key}": value for section, keys in table.items() for key, value in keys.items()}


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_no_button_label_promises_a_time_of_its_own(lang: str) -> None:
    said = strings(lang)
    for key in LABELS:
        assert not re.search(r"\d|second|minute|秒|分钟", said[key]), (key, said[key])


def test_every_timed_button_has_a_shipped_measurement() -> None:
    record = json.loads((ROOT / "assets" / "timings.json").read_text(encoding="utf-8"))
    for job in LABELS.values():
        assert record[job]["seconds"] > 0 and "CPU cores" in record[job]["machine"] and record[job]["date"]


WHY_MASK_51 = {"why_mask": {"seconds": 51.4, "machine": "2 CPU cores, x86_64", "date": "2026-11-26"}}


@pytest.fixture
def measured_as(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[dict], None]]:
    """Sets the shipped measurements (assets/timings.json) the pages read: measured_as({job: record})."""
    import serving
    from model_zoo.lessons import lexicon

    def record(timings: dict) -> None:
        (tmp_path / "timings.json").write_text(json.dumps(timings))
        serving.measured.clear()

    monkeypatch.setattr(lexicon, "ASSETS", tmp_path)
    yield record
    serving.measured.clear()


def test_the_button_quotes_the_measurement(tiny_zoo: Path, measured_as: Callable[[dict], None]) -> None:
    measured_as(WHY_MASK_51)
    at = open_page("pages/masked_lm.py")
    assert not at.exception
    assert (
        unescaped(at.button(key="why_train").label)
        == "Train both (the first time on a server: 51 s on 2 CPU cores, x86_64, measured)"
    )
    measured_as(  # the machine in the page's language
        {"why_mask": {"seconds": 27.2, "machine": "2 CPU cores, x86_64, bf16 products", "date": "2026-11-29"}}
    )
    at = open_page("pages/masked_lm.py", lang="zh")
    assert "在 2 个 CPU 核心（x86_64），bf16 矩阵乘法 上实测 27 秒" in unescaped(at.button(key="why_train").label)
    measured_as({})  # not measured: no promise at all
    at = open_page("pages/masked_lm.py")
    assert at.button(key="why_train").label == "Train both"


def test_the_question_that_trains_says_so_and_quotes_the_measurement(
    tiny_zoo: Path, measured_as: Callable[[dict], None], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Masked LM's copy question is answered by step 3's race: on a fresh server the learner waits for a
    training, under a bar that says what trains and how long it took when measured (a bare "Asking the
    model…" spinner sat there for 50 s)."""
    import streamlit as st

    import serving
    from model_zoo.lessons.why_mask import Race

    measured_as(WHY_MASK_51)
    bars: list[str] = []
    progress = st.progress
    monkeypatch.setattr(st, "progress", lambda value, text=None: bars.append(text) or progress(value, text=text))
    reported: list[float] = []

    def race(seed: int = 0, on_progress=None) -> Race:  # noqa: ANN001
        on_progress(0.5)  # the training reports to the learner's bar
        reported.append(0.5)
        loss = {"copy": [2.0, 0.01], "masked": [3.0, 1.5]}
        return Race([0, 10], loss, {"copy": [0.0, 0.02], "masked": [0.0, 0.3]}, 0.05, "the", 50, 100, 20, 1.0)

    monkeypatch.setattr(serving, "masking_race", race)
    at = open_page("pages/masked_lm.py")
    at.radio(key="quiz_mlm_copy").set_value("copy").run()
    assert not at.exception and reported == [0.5]
    assert [unescaped(b) for b in bars] == [
        "To answer, this trains the two tiny Transformers of “Why hide the words at all?”, once for the whole "
        "server (the first time on a server: 51 s on 2 CPU cores, x86_64, measured)"
    ]
    assert [s.value for s in at.success] == ["Right: the model agrees."]
