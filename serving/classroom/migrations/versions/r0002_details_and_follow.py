"""What the projector compares a question with (the live model's answer, the lesson it came from) and
where the teacher has brought the class ("follow me").

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-26
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("contextlab_questions") as batch:  # batch: SQLite alters by copying the table
        batch.add_column(sa.Column("details", sa.JSON, nullable=False, server_default="{}"))
    with op.batch_alter_table("contextlab_classes") as batch:
        batch.add_column(sa.Column("follow", sa.String(1000), nullable=True))
        batch.add_column(sa.Column("follow_n", sa.Integer, nullable=False, server_default="0"))


def downgrade() -> None:
    with op.batch_alter_table("contextlab_classes") as batch:
        batch.drop_column("follow_n")
        batch.drop_column("follow")
    with op.batch_alter_table("contextlab_questions") as batch:
        batch.drop_column("details")
