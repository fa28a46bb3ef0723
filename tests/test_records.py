"""Published results (assets/records): the tables parse, add up to the eleven tasks, and the lecture's
leaderboard is the lecture's."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from components.records import read_record
from tests.conftest import all_text, open_page

SEEDS = Path(__file__).resolve().parent.parent.parent / "shared" / "seeds"


def test_bert_records_cover_the_eleven_tasks() -> None:
    glue = read_record("glue")
    tasks = [c for c in glue[0] if c not in ("system", "Average")]
    assert {t.split("-m")[0] for t in tasks} == {"MNLI", "QQP", "QNLI", "SST-2", "CoLA", "STS-B", "MRPC", "RTE"}
    others = {r["task"].split(" (")[0] for r in read_record("qa_swag")}
    assert len({t.split("-m")[0] for t in tasks} | others) == 11  # GLUE's eight, SQuAD 1.1, SQuAD 2.0, SWAG
    large = next(r for r in glue if r["system"] == "BERT large")
    assert all(float(large[t]) >= float(r[t]) for r in glue for t in tasks)  # a record on every GLUE task


def test_the_leaderboard_rows_are_in_the_lecture_notes() -> None:
    lecture = next(SEEDS.glob("003_*.txt")).read_text(encoding="utf-8")
    rows = read_record("squad2_leaderboard")
    assert len(rows) == 6
    for row in rows:
        line = next(line for line in lecture.splitlines() if row["EM"] in line)
        assert row["F1"] in line and row["team"].split(" (")[0] in line
        assert re.sub(r"\s+", "", row["model"]).lower() in re.sub(r"\s+", "", line).lower()


@pytest.mark.slow
def test_using_bert_and_gpt_pages_show_the_published_tables_with_sources() -> None:
    at = open_page("pages/using_bert.py")
    assert not at.exception
    text = all_text(at)
    assert "What BERT achieved" in [h.value for h in at.header] and "Devlin et al. 2019, BERT, NAACL, Table 1" in text
    shown = [d.value for d in at.dataframe]
    assert any("MNLI-m" in d.columns for d in shown) and any(
        "BERT + DAE + AoA (ensemble)" in list(d.get("model", [])) for d in shown
    )
    at = open_page("pages/gpt.py")
    assert not at.exception
    coqa = next(d.value for d in at.dataframe if {"F1 (development)", "training"} <= set(d.value.columns))
    assert dict(zip(coqa["system"], coqa["F1 (development)"]))["GPT-2 (1.5B)"] == "55"
    assert "Radford et al. 2019" in all_text(at)
