"""The class store: classes, the teacher's questions and the students' answers, in a real database
(serving.classroom.db) that every worker process (and machine, with PostgreSQL) shares.

A class is a short code anyone in the room may know, and a teacher's secret (256 random bits) of which
only a hash is kept, compared in constant time. Students are random session ids with an optional
nickname: nothing personal. Ending a class deletes it and everything under it; classes older than the
retention period (CONTEXTLAB_CLASS_RETENTION_H hours, 24 by default) are deleted too."""

from __future__ import annotations

import csv
import hashlib
import hmac
import io
import json
import os
import re
import secrets
import threading
import time
import unicodedata
from collections import Counter, deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import delete, func, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import IntegrityError, SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker

from model_zoo.errors import EmptyInput

from .db import database_url, make_engine, migrate
from .errors import (
    AlreadyRevealed,
    NoAnswer,
    NoQuestion,
    NotTeacher,
    QuestionClosed,
    StoreUnavailable,
    TooFast,
    TooLong,
    UnknownClass,
)
from .models import Answer, Class, Question

ALPHABET = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"  # no 0/O, 1/I/L: a code read off a projector is typed right
CODE_LENGTH = 6
ANSWER_CHARS = 200
NICKNAME_CHARS = 24
PROMPT_CHARS = 1000
SESSION_CHARS = 64
STATUS_TTL_S = 0.25  # a class's status is read from the database at most this often per class and process
RATE_SENDS, RATE_WINDOW_S = 3, 1.0  # a session sends at most RATE_SENDS answers in any RATE_WINDOW_S
DEFAULT_RETENTION_H = 24.0
_BIDI = re.compile("[\u202a-\u202e\u2066-\u2069]")  # embeddings, overrides, isolates: could turn the projector's text
_SPACE = re.compile(r"\s+")


@dataclass(frozen=True)
class ClassInfo:
    code: str
    created_at: datetime
    expires_at: datetime


@dataclass(frozen=True)
class QuestionInfo:
    id: int
    key: str
    prompt: str
    options: list[Any]
    asked_at: datetime
    revealed: bool
    details: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Status:
    """What a student's screen polls for, in one read: the class's current question and where the
    teacher has brought the class (follow_n counts the times; follow is None once released)."""

    question: QuestionInfo | None
    follow: str | None
    follow_n: int


@dataclass(frozen=True)
class Bar:
    """One bar of the class's histogram: an answer as most of its senders spelled it, and how many sent it."""

    text: str
    count: int


@dataclass(frozen=True)
class AnswerRow:
    """One answer as the teacher moderates it (the id is what hide() takes)."""

    id: int
    nickname: str | None
    text: str
    hidden: bool
    created_at: datetime


def clean(text: str) -> str:
    """Text as the store keeps it: NFC, control characters and bidirectional overrides gone, runs of
    white space one space, no space at either end. Everything else (markup, emoji) stays, as text."""
    text = unicodedata.normalize("NFC", text)
    text = "".join(
        "\ufffd"
        if 0xD800 <= ord(c) <= 0xDFFF
        else " "
        if c in "\t\n\r"
        else ""
        if unicodedata.category(c) == "Cc"
        else c
        for c in text
    )
    return _SPACE.sub(" ", _BIDI.sub("", text)).strip()


def _limited(what: str, text: str, limit: int) -> str:
    cleaned = clean(text)
    if len(cleaned) > limit:
        raise TooLong(what, len(cleaned), limit)
    return cleaned


def _hash(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def _normal_code(code: str) -> str:
    return re.sub(r"[\s-]", "", code).upper()[: CODE_LENGTH * 2]


def retention() -> timedelta:
    return timedelta(hours=float(os.environ.get("CONTEXTLAB_CLASS_RETENTION_H") or DEFAULT_RETENTION_H))


def _utcnow() -> datetime:
    return datetime.now(UTC)


class ClassStore:
    """Every operation of a class. Teacher operations take the class's secret and raise NotTeacher
    without it; student operations take the class's code and a session id."""

    def __init__(
        self,
        url: str | None = None,
        now: Callable[[], datetime] = _utcnow,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.engine = make_engine(url or database_url())
        migrate(self.engine)
        self._sessions = sessionmaker(self.engine, expire_on_commit=False)
        self._now, self._clock = now, clock
        self._sends: dict[str, deque[float]] = {}
        self._sends_lock = threading.Lock()
        self.status_ttl = STATUS_TTL_S
        self._status: dict[str, tuple[float, Status | UnknownClass]] = {}
        self._status_lock = threading.Lock()
        self.on_change: list[Callable[[str], None]] = []  # told of each change made through this store

    def close(self) -> None:
        self.engine.dispose()

    # -- the teacher -------------------------------------------------------------------------------
    def start_class(self) -> tuple[str, str]:
        """A new class: (its code, the teacher's secret). Only the secret's hash is stored."""
        secret = secrets.token_urlsafe(32)
        self.purge_expired(self._now())
        while True:
            code = "".join(secrets.choice(ALPHABET) for _ in range(CODE_LENGTH))
            try:
                with self._sessions.begin() as db:
                    db.add(Class(code=code, secret_hash=_hash(secret), created_at=self._now()))
                return code, secret
            except IntegrityError:  # the code is taken (one in ~10^9 per class): draw another
                continue

    def check_teacher(self, code: str, secret: str) -> bool:
        with self._sessions() as db:
            klass = self._live(db, code, raise_unknown=False)
            stored = klass.secret_hash if klass else _hash("")
        return hmac.compare_digest(stored, _hash(secret)) and klass is not None

    def ask(
        self,
        code: str,
        secret: str,
        key: str,
        prompt: str,
        options: Sequence[str] = (),
        details: dict[str, Any] | None = None,
    ) -> QuestionInfo:
        """Open a question (the class's current one from now on). `details`: what the projector compares
        the answers with (JSON; at most PROMPT_CHARS * 8 characters written out)."""
        if len(json.dumps(details or {})) > PROMPT_CHARS * 8:
            raise TooLong("details", len(json.dumps(details)), PROMPT_CHARS * 8)
        with self._sessions.begin() as db:
            klass = self._teacher(db, code, secret)
            question = Question(
                klass=klass,
                key=_limited("question key", key, 200),
                prompt=_limited("question", prompt, PROMPT_CHARS),
                options=[_limited("option", str(o), ANSWER_CHARS) for o in options],
                asked_at=self._now(),
                revealed=False,
                details=dict(details or {}),
            )
            db.add(question)
            db.flush()
            info = _question_info(question)
        self._changed(code)
        return info

    def reveal(self, code: str, secret: str, question: int) -> None:
        with self._sessions.begin() as db:
            self._question(db, self._teacher(db, code, secret), question).revealed = True
        self._changed(code)

    def answers(self, code: str, secret: str, question: int) -> list[Bar]:
        """The class's answers to `question` as a histogram, largest first (hidden answers left out).
        Answers that differ only in case or spacing are one bar, spelled as most senders spelled it."""
        rows = self.responses(code, secret, question)
        spellings: dict[str, Counter[str]] = {}
        for row in rows:
            if not row.hidden:
                spellings.setdefault(row.text.casefold(), Counter())[row.text] += 1
        bars = [Bar(c.most_common(1)[0][0], sum(c.values())) for c in spellings.values()]
        return sorted(bars, key=lambda b: (-b.count, b.text.casefold(), b.text))

    def responses(self, code: str, secret: str, question: int) -> list[AnswerRow]:
        """Every answer to `question`, first sent first, hidden ones too (for moderation and export)."""
        with self._sessions() as db:
            q = self._question(db, self._teacher(db, code, secret), question)
            found = db.scalars(select(Answer).where(Answer.question_id == q.id).order_by(Answer.created_at, Answer.id))
            return [AnswerRow(a.id, a.nickname, a.text, a.hidden, a.created_at) for a in found]

    def hide(self, code: str, secret: str, answer_id: int, hidden: bool = True) -> None:
        """Hide an answer from the projector (or show it again)."""
        with self._sessions.begin() as db:
            klass = self._teacher(db, code, secret)
            answer = db.get(Answer, answer_id)
            if answer is None or answer.question.class_id != klass.id:
                raise NoAnswer(klass.code, answer_id)
            answer.hidden = hidden

    def end_class(self, code: str, secret: str) -> None:
        """Delete the class, its questions and their answers."""
        with self._sessions.begin() as db:
            db.delete(self._teacher(db, code, secret))
        self._changed(code)

    def export_csv(self, code: str, secret: str) -> str:
        """Every question and answer of the class as CSV (question, asked_at, nickname, answer, hidden, sent_at)."""
        out = io.StringIO()
        writer = csv.writer(out)
        writer.writerow(["question", "asked_at", "nickname", "answer", "hidden", "sent_at"])
        with self._sessions() as db:
            klass = self._teacher(db, code, secret)
            questions = db.scalars(select(Question).where(Question.class_id == klass.id).order_by(Question.id)).all()
        for q in questions:
            for row in self.responses(code, secret, q.id):
                cells = [q.prompt, q.asked_at.isoformat(), row.nickname or "", row.text, row.hidden]
                writer.writerow([*map(_csv_safe, cells), row.created_at.isoformat()])
        return out.getvalue()

    def follow(self, code: str, secret: str, link: str | None) -> None:
        """Bring the class to `link` (a path with its query, on this server), or release it (None)."""
        if link is not None and not link.startswith("/"):
            raise ValueError("a follow link is a path on this server")
        with self._sessions.begin() as db:
            klass = self._teacher(db, code, secret)
            if link is not None:
                klass.follow = _limited("link", link, 1000)
                klass.follow_n += 1
            else:
                klass.follow = None
        self._changed(code)

    def purge_expired(self, now: datetime) -> int:
        """Delete every class started longer ago than the retention period; returns how many."""
        with self._sessions.begin() as db:
            result = db.execute(delete(Class).where(Class.created_at < now - retention()))
            return int(getattr(result, "rowcount", 0) or 0)

    # -- the students ------------------------------------------------------------------------------
    def join(self, code: str) -> ClassInfo:
        """The class with `code`; UnknownClass (one sentence) for a code that never was, ended or expired."""
        with self._sessions() as db:
            klass = self._live(db, code)
            assert klass is not None
            return ClassInfo(klass.code, klass.created_at, klass.created_at + retention())

    def status(self, code: str) -> Status:
        """What a student's screen shows: the current question and the teacher's follow link. Read once per
        STATUS_TTL_S and code in this process, whoever asks (the worker's push thread, thirty tabs' runs):
        a change made through this process is seen at once, another worker's within STATUS_TTL_S."""
        normal, now = _normal_code(code), self._clock()
        with self._status_lock:
            kept = self._status.get(normal)
        if kept is None or now - kept[0] >= self.status_ttl:
            try:
                with self._sessions() as db:
                    klass = self._live(db, normal)
                    assert klass is not None
                    question = self._current(db, klass)
                    info = None if question is None else _question_info(question)
                    found: Status | UnknownClass = Status(info, klass.follow, klass.follow_n)
            except UnknownClass as err:
                found = err
            kept = (now, found)
            with self._status_lock:
                if len(self._status) > 1000:
                    self._status.clear()
                self._status[normal] = kept
        if isinstance(kept[1], UnknownClass):
            raise UnknownClass(normal)
        return kept[1]

    def my_answer(self, code: str, session: str, question: int) -> str | None:
        """What `session` sent to `question` (a tab that reloaded shows its answer again), or None."""
        with self._sessions() as db:
            klass = self._live(db, code)
            assert klass is not None
            q = self._question(db, klass, question)
            where = (Answer.question_id == q.id) & (Answer.session == session[:SESSION_CHARS])
            return db.scalar(select(Answer.text).where(where))

    def _changed(self, code: str) -> None:
        """Forget this process's status of `code` (the teacher changed it here)."""
        with self._status_lock:
            self._status.pop(_normal_code(code), None)
        for listener in self.on_change:
            listener(code)

    def current_question(self, code: str) -> QuestionInfo | None:
        with self._sessions() as db:
            klass = self._live(db, code)
            assert klass is not None
            question = self._current(db, klass)
            return None if question is None else _question_info(question)

    def answer(
        self, code: str, session: str, text: str, nickname: str | None = None, question: int | None = None
    ) -> int:
        """Store `session`'s answer to the current question (to `question`, checked to be the current one);
        a resend replaces the earlier answer. Returns the answer's id."""
        cleaned = _limited("answer", text, ANSWER_CHARS)
        if not cleaned:
            raise EmptyInput("answer")
        name = _limited("nickname", nickname or "", NICKNAME_CHARS) or None  # an empty nickname is none
        session = session[:SESSION_CHARS]
        self._throttle(session)
        with self._sessions.begin() as db:
            klass = self._live(db, code)
            assert klass is not None
            current = self._current(db, klass)
            if current is None:
                raise NoQuestion(_normal_code(code))
            if question is not None and question != current.id:
                raise QuestionClosed(_normal_code(code))
            if current.revealed:  # the projector shows the answers: they no longer change
                raise AlreadyRevealed(_normal_code(code))
            values = {"question_id": current.id, "session": session, "nickname": name, "text": cleaned}
            insert = postgresql.insert if db.get_bind().dialect.name == "postgresql" else sqlite.insert
            upsert = (
                insert(Answer)
                .values(**values, created_at=self._now(), hidden=False)
                .on_conflict_do_update(
                    index_elements=[Answer.question_id, Answer.session],
                    set_={"nickname": name, "text": cleaned, "created_at": self._now(), "hidden": False},
                )
                .returning(Answer.id)
            )
            return int(db.execute(upsert).scalar_one())

    def count(self, code: str, question: int) -> int:
        """How many sessions have answered `question` (what the projector counts)."""
        with self._sessions() as db:
            klass = self._live(db, code)
            assert klass is not None
            q = self._question(db, klass, question)
            return int(db.scalar(select(func.count()).select_from(Answer).where(Answer.question_id == q.id)) or 0)

    # -- helpers -----------------------------------------------------------------------------------
    def _live(self, db: Session, code: str, raise_unknown: bool = True) -> Class | None:
        normal = _normal_code(code)
        klass = db.scalar(select(Class).where(Class.code == normal))
        if klass is not None and klass.created_at >= self._now() - retention():
            return klass
        if raise_unknown:
            raise UnknownClass(normal)
        return None

    def _teacher(self, db: Session, code: str, secret: str) -> Class:
        klass = self._live(db, code)
        assert klass is not None
        if not hmac.compare_digest(klass.secret_hash, _hash(secret)):
            raise NotTeacher(klass.code)
        return klass

    def _question(self, db: Session, klass: Class, question: int) -> Question:
        found = db.get(Question, question)
        if found is None or found.class_id != klass.id:
            raise NoQuestion(klass.code)
        return found

    def _current(self, db: Session, klass: Class) -> Question | None:
        return db.scalar(
            select(Question).where(Question.class_id == klass.id).order_by(Question.asked_at.desc(), Question.id.desc())
        )

    def _throttle(self, session: str) -> None:
        now = self._clock()
        with self._sends_lock:
            sent = self._sends.setdefault(session, deque())
            while sent and sent[0] <= now - RATE_WINDOW_S:
                sent.popleft()
            if len(sent) >= RATE_SENDS:
                raise TooFast(sent[0] + RATE_WINDOW_S - now)
            sent.append(now)
            if len(self._sends) > 10_000:  # forget sessions that have not sent for a while
                for key in [k for k, v in self._sends.items() if not v or v[-1] <= now - RATE_WINDOW_S]:
                    del self._sends[key]


def _question_info(q: Question) -> QuestionInfo:
    return QuestionInfo(q.id, q.key, q.prompt, list(q.options), q.asked_at, q.revealed, dict(q.details or {}))


def _csv_safe(cell: object) -> str:
    """A cell a spreadsheet shows as text: a leading = + - @ would make it a formula (CSV injection)."""
    text = str(cell)
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


_stores: dict[str, ClassStore] = {}
_stores_lock = threading.Lock()


def default_store() -> ClassStore:
    """This process's store for database_url() (CONTEXTLAB_DB, else the SQLite file): opened, and
    migrated, on first use; shared by every session of the process."""
    url = database_url()
    with _stores_lock:
        if url not in _stores:
            try:
                _stores[url] = ClassStore(url)
            except (OSError, SQLAlchemyError) as err:  # a read-only or full cache folder, a database away
                raise StoreUnavailable(str(err).splitlines()[0][:200]) from err
        return _stores[url]
