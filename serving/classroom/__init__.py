"""Class mode's store: a teacher's class, questions and the students' answers in a database that every
worker shares (SQLite under the cache by default, PostgreSQL with CONTEXTLAB_DB). Pages import it;
components never do; it imports neither, nor Streamlit. See store.py (the API) and db.py (the engine and
the migrations)."""

from .errors import (
    AlreadyRevealed,
    ClassroomError,
    NoAnswer,
    NoQuestion,
    NotTeacher,
    QuestionClosed,
    StoreUnavailable,
    TooFast,
    TooLong,
    UnknownClass,
)
from .store import (
    ALPHABET,
    ANSWER_CHARS,
    CODE_LENGTH,
    NICKNAME_CHARS,
    AnswerRow,
    Bar,
    ClassInfo,
    ClassStore,
    QuestionInfo,
    Status,
    clean,
    default_store,
    retention,
)

__all__ = [
    "AlreadyRevealed",
    "ALPHABET",
    "ANSWER_CHARS",
    "CODE_LENGTH",
    "NICKNAME_CHARS",
    "AnswerRow",
    "Bar",
    "ClassInfo",
    "ClassStore",
    "ClassroomError",
    "NoAnswer",
    "NoQuestion",
    "NotTeacher",
    "QuestionClosed",
    "QuestionInfo",
    "Status",
    "StoreUnavailable",
    "TooFast",
    "TooLong",
    "UnknownClass",
    "clean",
    "default_store",
    "retention",
]
