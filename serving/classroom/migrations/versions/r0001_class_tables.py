"""The class store's tables: classes, their questions, the students' answers.

Revision ID: 0001
Revises:
Create Date: 2026-11-26
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from serving.classroom.models import UTCDateTime

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "contextlab_classes",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("code", sa.String(6), nullable=False, unique=True),
        sa.Column("secret_hash", sa.String(64), nullable=False),
        sa.Column("created_at", UTCDateTime, nullable=False, index=True),
    )
    op.create_table(
        "contextlab_questions",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column(
            "class_id",
            sa.Integer,
            sa.ForeignKey("contextlab_classes.id", ondelete="CASCADE"),
            nullable=False,
            index=True,
        ),
        sa.Column("key", sa.String(200), nullable=False),
        sa.Column("prompt", sa.Text, nullable=False),
        sa.Column("options", sa.JSON, nullable=False),
        sa.Column("asked_at", UTCDateTime, nullable=False),
        sa.Column("revealed", sa.Boolean, nullable=False),
    )
    op.create_table(
        "contextlab_answers",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column(
            "question_id", sa.Integer, sa.ForeignKey("contextlab_questions.id", ondelete="CASCADE"), nullable=False
        ),
        sa.Column("session", sa.String(64), nullable=False),
        sa.Column("nickname", sa.String(24), nullable=True),
        sa.Column("text", sa.String(200), nullable=False),
        sa.Column("created_at", UTCDateTime, nullable=False),
        sa.Column("hidden", sa.Boolean, nullable=False),
        sa.UniqueConstraint("question_id", "session", name="uq_contextlab_answers_question_session"),
    )


def downgrade() -> None:
    op.drop_table("contextlab_answers")
    op.drop_table("contextlab_questions")
    op.drop_table("contextlab_classes")
