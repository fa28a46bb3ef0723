"""The class store (serving.classroom) as a teacher and thirty students meet it, on SQLite (a file, as one
machine's workers share it) and on a real PostgreSQL server (as several machines share it) that these
tests start in a temporary folder as the postgres user: Debian's postgresql, installed by `make test`."""

from __future__ import annotations

import hashlib
import multiprocessing
import os
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import text

from serving.classroom import (
    ALPHABET,
    ANSWER_CHARS,
    CODE_LENGTH,
    NICKNAME_CHARS,
    ClassStore,
    NoAnswer,
    NotTeacher,
    TooFast,
    TooLong,
    UnknownClass,
    clean,
)
from tests.conftest import fresh_database
from tests.test_bad_input import BAD

TABLES = ("contextlab_classes", "contextlab_questions", "contextlab_answers")
VERSION_TABLE = "contextlab_class_version"  # Alembic's own table, not a model


# -- the two databases (the PostgreSQL server: tests/conftest.py's postgres_server) -----------------
@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A fresh, empty database: a SQLite file, or a new database on the test's PostgreSQL server."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'class.sqlite3'}"
        return
    server: str = request.getfixturevalue("postgres_server")
    with fresh_database(server, f"class_{os.getpid()}_{abs(hash(request.node.nodeid)) % 10**9}") as url:
        yield url


@pytest.fixture
def store(db_url: str) -> Iterator[ClassStore]:
    opened = ClassStore(db_url)
    yield opened
    opened.close()


def rows(store: ClassStore, table: str) -> list[tuple[object, ...]]:
    with store.engine.connect() as c:
        return [tuple(r) for r in c.execute(text(f"SELECT * FROM {table}"))]


# -- the teacher ---------------------------------------------------------------------------------
def test_a_class_has_a_short_code_without_look_alikes_and_keeps_only_the_secrets_hash(store: ClassStore) -> None:
    codes = [store.start_class() for _ in range(20)]
    for code, secret in codes:
        assert len(code) == CODE_LENGTH and set(code) <= set(ALPHABET)
        assert len(secret) >= 43  # 256 random bits, url-safe
        assert store.check_teacher(code, secret) and store.join(code.lower()).code == code
    assert not set("0O1IL") & set(ALPHABET)
    assert len({c for c, _ in codes}) == 20
    stored = rows(store, "contextlab_classes")
    hashes = {hashlib.sha256(secret.encode()).hexdigest() for _, secret in codes}
    assert hashes <= {cell for row in stored for cell in row}
    assert not any(secret in str(cell) for row in stored for cell in row for _, secret in codes)


def test_a_wrong_secret_cannot_run_the_class(store: ClassStore) -> None:
    code, secret = store.start_class()
    q = store.ask(code, secret, "masked_lm.bank", "The [MASK] by the river", ["bank", "shore"])
    answer_id = store.answer(code, "student-1", "bank")
    other_code, other_secret = store.start_class()
    for wrong in ("", "x", secret[:-1], other_secret, secret + " "):
        assert not store.check_teacher(code, wrong)
        with pytest.raises(NotTeacher, match="Only the teacher's own link"):
            store.ask(code, wrong, "k", "a new question")
        with pytest.raises(NotTeacher):
            store.reveal(code, wrong, q.id)
        with pytest.raises(NotTeacher):
            store.hide(code, wrong, answer_id)
        with pytest.raises(NotTeacher):
            store.answers(code, wrong, q.id)
        with pytest.raises(NotTeacher):
            store.export_csv(code, wrong)
        with pytest.raises(NotTeacher):
            store.end_class(code, wrong)
    with pytest.raises(NoAnswer):  # another class's teacher cannot hide this class's answers either
        store.hide(other_code, other_secret, answer_id)
    current = store.current_question(code)
    assert current is not None and current.id == q.id and not current.revealed
    assert store.join(code).code == code and store.count(code, q.id) == 1
    assert [b.text for b in store.answers(code, secret, q.id)] == ["bank"]


def test_eight_students_answer_a_resend_replaces_and_the_histogram_is_largest_first(store: ClassStore) -> None:
    code, secret = store.start_class()
    assert store.current_question(code) is None
    q = store.ask(code, secret, "masked_lm.bank", "The [MASK] by the river was closed.", [])
    sent = ["bank", "Bank", "shop", "bank ", "road", "shop", "bank", "road"]
    for i, word in enumerate(sent):
        store.answer(code, f"session-{i}", word, nickname=f"kid {i}" if i % 2 else None)
    assert store.count(code, q.id) == 8
    store.answer(code, "session-4", "bank")  # session 4 changes its mind: road -> bank
    assert store.count(code, q.id) == 8
    bars = [(b.text, b.count) for b in store.answers(code, secret, q.id)]
    assert bars == [("bank", 5), ("shop", 2), ("road", 1)]
    shop = next(a for a in store.responses(code, secret, q.id) if a.text == "shop")
    store.hide(code, secret, shop.id)
    assert [(b.text, b.count) for b in store.answers(code, secret, q.id)] == [("bank", 5), ("road", 1), ("shop", 1)]
    assert store.count(code, q.id) == 8  # a hidden answer was still sent
    store.reveal(code, secret, q.id)
    current = store.current_question(code)
    assert current is not None and current.revealed
    exported = store.export_csv(code, secret).splitlines()
    assert exported[0].startswith("question,") and len(exported) == 9


def test_bad_input_is_stored_as_text_and_comes_back_only_cleaned(store: ClassStore) -> None:
    code, secret = store.start_class()
    q = store.ask(code, secret, "open.sentence", "Write a sentence that uses bank.")
    kept: dict[str, str] = {}
    clock = [0.0]
    store._clock = lambda: clock[0]  # one send per second of a fake clock: the rate limit is tested on its own
    for i, (name, value) in enumerate(BAD.items()):
        clock[0] += 1.0
        cleaned = clean(value)
        if not cleaned:
            with pytest.raises(ValueError, match="empty"):
                store.answer(code, f"s{i}", value)
        elif len(cleaned) > ANSWER_CHARS:
            with pytest.raises(TooLong, match=f"the most is {ANSWER_CHARS}: make it shorter"):
                store.answer(code, f"s{i}", value)
        else:
            nickname = value if len(cleaned) <= NICKNAME_CHARS else None
            store.answer(code, f"s{i}", value, nickname=nickname)
            kept[cleaned] = name
    back = {row.text: row for row in store.responses(code, secret, q.id)}
    assert set(back) == set(kept)
    html = BAD["html and script"]
    assert html in back and BAD["markdown image"] in back  # markup stays text, unchanged
    assert "the bank[31m river" in back  # NUL, BEL and ESC are gone, the rest as sent
    emoji = clean(BAD["emoji and combining marks"])
    assert emoji.startswith("🏦🌊 ban\u1e31\u0301\u0301 reversed")  # NFC: k and its first accent are one letter
    assert "\u202e" not in emoji and emoji in back  # no right-to-left override to turn the projector's text
    with pytest.raises(TooLong, match=f"nickname is 25 characters long; the most is {NICKNAME_CHARS}"):
        store.answer(code, "another", "bank", nickname="n" * 25)


def test_a_student_sending_too_fast_is_told_to_wait(store: ClassStore) -> None:
    code, secret = store.start_class()
    store.ask(code, secret, "k", "Which layer?", ["1", "2"])
    now = [100.0]
    store._clock = lambda: now[0]
    for word in ("1", "2", "1"):
        store.answer(code, "eager", word)
    with pytest.raises(TooFast, match="You are sending too fast: wait"):
        store.answer(code, "eager", "2")
    store.answer(code, "calm", "2")  # another student is not slowed down
    now[0] += 1.01
    store.answer(code, "eager", "2")
    q = store.current_question(code)
    assert q is not None and [(b.text, b.count) for b in store.answers(code, secret, q.id)] == [("2", 2)]


def test_unknown_ended_and_expired_codes_get_one_sentence(db_url: str) -> None:
    now = [datetime(2026, 1, 5, 9, 0, tzinfo=UTC)]
    store = ClassStore(db_url, now=lambda: now[0])
    try:
        old_code, old_secret = store.start_class()
        now[0] += timedelta(hours=23)
        new_code, new_secret = store.start_class()
        for code in ("ZZZZZZ", ""):
            with pytest.raises(UnknownClass, match="There is no class with the code"):
                store.join(code)
        now[0] += timedelta(hours=2)  # the first class is 25 hours old: past the 24-hour retention
        with pytest.raises(UnknownClass):
            store.join(old_code)
        assert not store.check_teacher(old_code, old_secret)
        assert store.purge_expired(now[0]) == 1
        assert store.join(new_code).code == new_code and len(rows(store, "contextlab_classes")) == 1
        store.end_class(new_code, new_secret)
        with pytest.raises(UnknownClass, match=new_code):
            store.join(new_code)
    finally:
        store.close()


def test_ending_a_class_deletes_its_questions_and_answers(store: ClassStore) -> None:
    kept_code, kept_secret = store.start_class()
    store.ask(kept_code, kept_secret, "k", "kept")
    store.answer(kept_code, "s", "kept answer")
    code, secret = store.start_class()
    for n in range(3):
        store.ask(code, secret, f"k{n}", f"question {n}")
        for s in range(4):
            store.answer(code, f"s{s}", f"answer {n}")
    assert [len(rows(store, t)) for t in TABLES] == [2, 4, 13]
    store.end_class(code, secret)
    assert [len(rows(store, t)) for t in TABLES] == [1, 1, 1]
    assert rows(store, "contextlab_answers")[0][4] == "kept answer"


# -- several workers -----------------------------------------------------------------------------
def test_answers_sent_through_one_worker_are_counted_by_another(db_url: str) -> None:
    first, second = ClassStore(db_url), ClassStore(db_url)
    try:
        code, secret = first.start_class()
        q = second.ask(code, secret, "k", "Which sense?", ["river", "money"])
        for i in range(6):
            (first if i % 2 else second).answer(code, f"s{i}", "river" if i < 4 else "money")
        assert first.count(code, q.id) == second.count(code, q.id) == 6
        assert [(b.text, b.count) for b in first.answers(code, secret, q.id)] == [("river", 4), ("money", 2)]
    finally:
        first.close()
        second.close()


def _open_store(url: str, barrier: multiprocessing.synchronize.Barrier, codes: multiprocessing.Queue) -> None:
    barrier.wait(timeout=60)
    store = ClassStore(url)
    codes.put(store.start_class()[0])
    store.close()


def test_two_workers_starting_at_once_both_bring_the_tables_up(db_url: str) -> None:
    context = multiprocessing.get_context("spawn")
    barrier, codes = context.Barrier(2), context.Queue()
    workers = [context.Process(target=_open_store, args=(db_url, barrier, codes)) for _ in range(2)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(timeout=120)
    assert [w.exitcode for w in workers] == [0, 0]
    store = ClassStore(db_url)
    try:
        for _ in workers:
            assert store.join(codes.get(timeout=5))
    finally:
        store.close()


def test_the_migration_builds_exactly_the_models_tables(store: ClassStore) -> None:
    from alembic.autogenerate import compare_metadata
    from alembic.migration import MigrationContext

    from serving.classroom.models import Base

    with store.engine.connect() as c:
        differences = compare_metadata(MigrationContext.configure(c), Base.metadata)
    assert [d for d in differences if not (d[0] == "remove_table" and d[1].name == VERSION_TABLE)] == []
    assert set(TABLES) == set(Base.metadata.tables)


def test_a_class_started_before_the_second_migration_keeps_its_answers(db_url: str) -> None:
    """A server upgraded mid-term: the class store at revision 0001 with a class in it, then the app's
    migrations to head; the class, its question and its answer are all still there."""
    from serving.classroom.db import _upgrade, make_engine

    engine = make_engine(db_url)
    with engine.begin() as c:
        _upgrade(c, "0001")
        c.execute(
            text("INSERT INTO contextlab_classes (code, secret_hash, created_at) VALUES ('ABC234', :h, :t)"),
            {"h": hashlib.sha256(b"s").hexdigest(), "t": datetime.now(UTC).replace(tzinfo=None)},
        )
        c.execute(
            text(
                "INSERT INTO contextlab_questions (class_id, key, prompt, options, asked_at, revealed) "
                "SELECT id, 'k', 'Which?', '[\"a\"]', created_at, false FROM contextlab_classes"
            )
        )
    engine.dispose()
    store = ClassStore(db_url)
    try:
        assert store.answer("ABC234", "s1", "a")
        status = store.status("ABC234")
        assert status.question is not None and status.question.prompt == "Which?" and status.question.details == {}
        assert (status.follow, status.follow_n) == (None, 0)
        assert [(b.text, b.count) for b in store.answers("ABC234", "s", status.question.id)] == [("a", 1)]
    finally:
        store.close()


def test_the_projector_keeps_the_models_answer_and_the_teacher_brings_the_class_along(store: ClassStore) -> None:
    code, secret = store.start_class()
    details = {"model": "minilm-l6-mlm", "answer": "france", "labels": {"france": "France"}}
    asked = store.ask(code, secret, "mlm_paris", "Paris is the capital of [MASK].", ["france", "paris"], details)
    status = store.status(code)
    assert status.question == asked and status.question.details == details
    store.follow(code, secret, "/masked_lm?text=Paris+is+the+capital+of+%5BMASK%5D.")
    store.follow(code, secret, "/attention")
    assert (store.status(code).follow, store.status(code).follow_n) == ("/attention", 2)
    store.follow(code, secret, None)  # released: students stay where they are
    assert (store.status(code).follow, store.status(code).follow_n) == (None, 2)
    with pytest.raises(NotTeacher):
        store.follow(code, "a student's guess", "/attention")
    with pytest.raises(ValueError):
        store.follow(code, secret, "https://elsewhere.example/")  # only a view of this server
    with pytest.raises(TooLong):
        store.ask(code, secret, "k", "q", (), {"text": "x" * 20_000})


def test_a_workers_reads_of_a_class_share_one_database_read_per_memo_period(db_url: str) -> None:
    """A worker's push thread and thirty tabs' runs share one read per STATUS_TTL_S and class; a question asked
    through another worker is seen within that time, one asked through the same worker at once."""
    a, b = ClassStore(db_url), ClassStore(db_url)  # two workers
    clock = [0.0]
    b._clock = lambda: clock[0]
    try:
        code, secret = a.start_class()
        first = a.ask(code, secret, "k", "First?")
        assert b.status(code).question == first
        second = a.ask(code, secret, "k", "Second?")
        assert b.status(code).question == first  # within STATUS_TTL_S: this worker's last read
        clock[0] += b.status_ttl
        assert b.status(code).question == second
        third = b.ask(code, secret, "k", "Third?")  # asked through this worker: seen at once
        assert b.status(code).question == third
        b.end_class(code, secret)
        with pytest.raises(UnknownClass):
            b.status(code)
    finally:
        a.close()
        b.close()
