"""The road the field travelled, and the lessons that sit on it: the app's table of contents."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Lesson:
    key: str  # i18n key under "lesson.", and the page's URL path
    file: str  # page file, relative to the repository root
    icon: str

    @property
    def ready(self) -> bool:
        """A lesson is on the map as a link once its page exists."""
        return (ROOT / self.file).exists()


@dataclass(frozen=True)
class Stop:
    key: str  # i18n key under "road."
    year: str
    family: str | None  # ModelCard.family of the models that belong here
    lessons: tuple[Lesson, ...]
    see_also: tuple[Lesson, ...] = ()  # lessons of a later stop that also teach this one (linked, not listed twice)


# In time order (first public version: arXiv, or OpenAI's report), each stop saying in road.<key>.took what it took
# from the stop before it. ELMo (arXiv 2018-02) and ULMFiT (2018-01, final 2018-05) were written side by side;
# ULMFiT stands second because it takes ELMo's step further (road.ulmfit.took says so). GPT-1 (2018-06) came four
# months before BERT (2018-10), which took the OpenAI Transformer and gave it both sides' context.
GPT_LESSON = Lesson("gpt", "pages/gpt.py", ":material/arrow_forward:")  # GPT-1's input formats, GPT-2's writing
ROAD: tuple[Stop, ...] = (
    Stop("onehot", "≤ 2003", None, (Lesson("onehot", "pages/onehot.py", ":material/grid_on:"),)),
    Stop(
        "static",
        "2013–2014",
        "word2vec/GloVe",
        (Lesson("embeddings", "pages/embeddings.py", ":material/scatter_plot:"),),
    ),
    Stop("transformer", "2017-06", None, (Lesson("transformer", "pages/transformer.py", ":material/account_tree:"),)),
    Stop("elmo", "2018-02", "ELMo", (Lesson("elmo", "pages/elmo.py", ":material/swap_horiz:"),)),
    Stop("ulmfit", "2018-01 / 05", None, (Lesson("transfer", "pages/transfer.py", ":material/move_up:"),)),
    Stop("gpt", "2018-06", None, (), see_also=(GPT_LESSON,)),  # GPT-1; the lesson sits with GPT-2, as do the zoo's
    Stop(
        "bert",
        "2018-10",
        "BERT",
        (
            Lesson("bert_inputs", "pages/bert_inputs.py", ":material/token:"),
            Lesson("masked_lm", "pages/masked_lm.py", ":material/edit_note:"),
            Lesson("attention", "pages/attention.py", ":material/hub:"),
            Lesson("inside", "pages/inside.py", ":material/biotech:"),
            Lesson("senses", "pages/senses.py", ":material/bubble_chart:"),
            Lesson("probing", "pages/probing.py", ":material/stacked_bar_chart:"),
            Lesson("using_bert", "pages/using_bert.py", ":material/build:"),
        ),
    ),
    Stop("gpt2", "2019-02", "GPT", (GPT_LESSON,)),
)

HOME = Lesson("home", "pages/home.py", ":material/route:")
PLAYGROUND = Lesson("playground", "pages/playground.py", ":material/science:")
CLASSROOM = Lesson("class", "pages/classroom.py", ":material/co_present:")  # class mode (issue 35), under Tools


def ready_lessons() -> list[Lesson]:
    """Lessons whose page exists, in road order."""
    return [lesson for stop in ROAD for lesson in stop.lessons if lesson.ready]
