"""The app's database handle (Flask-SQLAlchemy's ``db``) and the write unit of work on it.

The connection set-up per dialect and the write transaction itself live in
:mod:`models.core.engine`, which needs no Flask; this module points them at the app's engine.
"""

from collections.abc import Iterator
from contextlib import contextmanager

from flask import has_app_context
from flask_sqlalchemy import SQLAlchemy
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session

from models.core.base import Base
from models.core.engine import (WRITE_OPTION, begin_write, configure_engine, engine_read_session,
                                engine_write_session)

__all__ = ["WRITE_OPTION", "begin_write", "configure_engine", "db", "read_session", "write_session"]

db = SQLAlchemy(model_class=Base)


@contextmanager
def write_session(engine: Engine | None = None) -> Iterator[Session]:
    """One short write transaction in a session of its own; commits, or rolls back on error.

    Domain writes never ride on a request's read session: a deferred read transaction
    upgraded to a write is exactly what SQLite refuses under concurrency. Once the write has
    committed, the app's shared read session (``db.session``) ends its transaction: on SQLite a
    read transaction keeps seeing the database as it was when it began, so a request that read,
    then wrote, would otherwise render its answer without its own write.
    """
    with engine_write_session(engine or db.engine) as session:
        yield session
    if has_app_context():
        db.session.rollback()


@contextmanager
def read_session(engine: Engine | None = None) -> Iterator[Session]:
    """A session for reads outside a request (jobs, the CLI)."""
    with engine_read_session(engine or db.engine) as session:
        yield session
