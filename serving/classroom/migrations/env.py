"""Alembic's environment for the class store. The store runs it (serving.classroom.db.migrate) on the
connection it hands over in config.attributes["connection"], inside its own lock and transaction."""

from __future__ import annotations

from alembic import context

from serving.classroom.models import Base

VERSION_TABLE = "contextlab_class_version"  # not "alembic_version": a shared PostgreSQL database may hold others

connection = context.config.attributes.get("connection")
if connection is None:
    raise RuntimeError("The class store's migrations run through serving.classroom.db.migrate, with a connection.")
context.configure(connection=connection, target_metadata=Base.metadata, version_table=VERSION_TABLE)
with context.begin_transaction():
    context.run_migrations()
