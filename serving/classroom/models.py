"""The class store's tables (SQLAlchemy 2.0 typed ORM): a class, the questions its teacher asks, the
answers its students send. Deleting a class deletes its questions and their answers (ON DELETE CASCADE,
and the ORM cascades the same way). The migration in migrations/versions creates exactly these tables."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import JSON, DateTime, ForeignKey, Integer, String, Text, TypeDecorator, UniqueConstraint
from sqlalchemy.engine import Dialect
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship


class UTCDateTime(TypeDecorator[datetime]):
    """A moment in UTC: stored without a zone (SQLite keeps none), read back zone-aware."""

    impl = DateTime
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("the class store takes zone-aware datetimes only")
        return value.astimezone(UTC).replace(tzinfo=None)

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        return None if value is None else value.replace(tzinfo=UTC)


class Base(DeclarativeBase):
    pass


class Class(Base):
    """A class a teacher started: its public code and the hash of the teacher's secret (never the secret)."""

    __tablename__ = "contextlab_classes"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    code: Mapped[str] = mapped_column(String(6), unique=True)
    secret_hash: Mapped[str] = mapped_column(String(64))  # sha256 hex of the teacher's secret
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, index=True)
    follow: Mapped[str | None] = mapped_column(String(1000))  # the view the teacher brought the class to
    follow_n: Mapped[int] = mapped_column(Integer, default=0)  # raised at each "bring the class here"
    questions: Mapped[list[Question]] = relationship(
        back_populates="klass", cascade="all, delete-orphan", passive_deletes=True
    )


class Question(Base):
    """A question asked of the class: `key` names it among the lessons' questions; the latest one is current."""

    __tablename__ = "contextlab_questions"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    class_id: Mapped[int] = mapped_column(ForeignKey("contextlab_classes.id", ondelete="CASCADE"), index=True)
    key: Mapped[str] = mapped_column(String(200))
    prompt: Mapped[str] = mapped_column(Text)
    options: Mapped[list[Any]] = mapped_column(JSON)
    # what the projector compares with: the live model's answer, its name and why, the options' labels,
    # the lesson's link, a sentence task's word (see serving.class_mode)
    details: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    asked_at: Mapped[datetime] = mapped_column(UTCDateTime)
    revealed: Mapped[bool] = mapped_column(default=False)
    klass: Mapped[Class] = relationship(back_populates="questions")
    answers: Mapped[list[Answer]] = relationship(
        back_populates="question", cascade="all, delete-orphan", passive_deletes=True
    )


class Answer(Base):
    """One browser session's answer to a question (a resend replaces it): the session id is random, not a person."""

    __tablename__ = "contextlab_answers"
    __table_args__ = (UniqueConstraint("question_id", "session", name="uq_contextlab_answers_question_session"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    question_id: Mapped[int] = mapped_column(ForeignKey("contextlab_questions.id", ondelete="CASCADE"))
    session: Mapped[str] = mapped_column(String(64))
    nickname: Mapped[str | None] = mapped_column(String(24))
    text: Mapped[str] = mapped_column(String(200))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
    hidden: Mapped[bool] = mapped_column(default=False)  # the teacher hid it from the projector
    question: Mapped[Question] = relationship(back_populates="answers")
