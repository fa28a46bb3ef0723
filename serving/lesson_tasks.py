"""What the Probing and Using BERT pages compute of results and data, over serving's cached model calls
(issue 32: the pages take types from model_zoo, and everything they compute from here).

Importing this module does not import torch: the probing lesson it reads is numpy only, and the tasks
lesson (torch) is imported where a Using BERT function, or one of its constants, is first asked for.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import serving
from model_zoo.lessons import probing
from model_zoo.lessons.probing import SCRIPT as PROBING_SCRIPT
from model_zoo.lessons.probing import TASKS, Gathered, TaskResult

if TYPE_CHECKING:  # the tasks lesson imports torch: the Probing page does without it
    from model_zoo.contextual import Encoding
    from model_zoo.lessons.tasks import LECTURE_PASSAGE, POOLINGS, Answer, Question

# re-exported: the probing tasks, the command that probes a model, and (on first use) the Using BERT
# page's poolings ([CLS] and the mean) and the lecture's passage
__all__ = ["LECTURE_PASSAGE", "POOLINGS", "PROBING_SCRIPT", "TASKS"]
_FROM_TASKS = ("LECTURE_PASSAGE", "POOLINGS")


def __getattr__(name: str) -> Any:
    if name not in _FROM_TASKS:
        raise AttributeError(f"module 'serving.lesson_tasks' has no attribute {name!r}")
    from model_zoo.lessons import tasks

    value = getattr(tasks, name)
    globals()[name] = value
    return value


# -- probing -------------------------------------------------------------------------------------------
def gather_results(
    models: Sequence[str], tasks: Sequence[str], retrained: dict[tuple[str, str], TaskResult]
) -> Gathered:
    """Each model's result per task: `retrained` in this session where it was, else the shipped results
    (serving.probing_results); which models lack one, and which results are live."""
    shipped = {name: serving.probing_results(name) for name in models}
    return probing.gather_results(models, tasks, shipped, retrained)


def bert_features(models: Sequence[str]) -> dict[str, dict[str, float]]:
    """model -> its shipped feature table on NER ({choice: F1}), for the BERT-architecture models of
    `models` that have one, in their order."""
    return probing.bert_features({name: serving.probing_results(name) for name in models})


# -- using BERT ----------------------------------------------------------------------------------------
def written_questions() -> tuple[dict[str, list[Question]], int, int]:
    """The written passages by id, in file order, each with its questions; and how many questions the
    frozen-feature QA head trains on and is tested on (every fifth passage held out, and the later ones)."""
    from model_zoo.lessons import tasks

    train, test = tasks.load_questions()
    return tasks.written_passages(), len(train), len(test)


def held_out_sentences(task: str) -> int:
    """How many sentences of the sentence set `task` (sentiment, spam) are held out for testing."""
    from model_zoo.lessons import tasks

    return len(tasks.load_sentences(task).test)


def pair_separator(encoding: Encoding) -> str | None:
    """What the model reads between the two texts of a pair it encoded (the second token of no word), or None."""
    from model_zoo.lessons import tasks

    return tasks.separator_token(encoding.tokens, encoding.word_ids)


def read_question(reader: str, question: str, passage: str) -> tuple[Answer, str | None]:
    """The fine-tuned `reader`'s answer to `question` on `passage` (serving.read_question, cached), and the
    written answer it missed (None where the pair has no written answer or the reader found it)."""
    from model_zoo.lessons import tasks

    got = serving.read_question(reader, question, passage)
    return got, tasks.missed_answer(got, question, passage)
