"""Alembic environment: the same migrations build the schema on SQLite and PostgreSQL.

SQLite specifics: ALTERs run as batch operations (copy, drop, rename), so foreign keys are
switched off for the run (dropping the old table would otherwise cascade), and every
migration that touches ``scheduled_actions`` re-creates the publish guard, which a batch
copy silently drops. PostgresHuey's own ``huey_*`` tables live in the same database and
are not ours to compare or drop.
"""

import logging
from logging.config import fileConfig

from alembic import context
from flask import current_app

from models.core.database import WRITE_OPTION

config = context.config
if config.config_file_name:
    fileConfig(config.config_file_name, disable_existing_loggers=False)
logger = logging.getLogger("alembic.env")

target_db = current_app.extensions["migrate"].db


def include_object(obj, name, type_, reflected, compare_to):
    if type_ == "table" and name and name.startswith("huey"):
        return False
    return True


def run_migrations_online():
    def process_revision_directives(ctx, revision, directives):
        if getattr(config.cmd_opts, "autogenerate", False) and directives[0].upgrade_ops.is_empty():
            directives[:] = []
            logger.info("No changes in schema detected.")

    conf_args = dict(current_app.extensions["migrate"].configure_args)
    conf_args.setdefault("process_revision_directives", process_revision_directives)
    conf_args.update(compare_type=True, render_as_batch=False, include_object=include_object)
    engine = target_db.engine
    sqlite = engine.dialect.name == "sqlite"
    with engine.connect() as connection:
        if sqlite:
            # Outside any transaction: PRAGMA foreign_keys is a no-op inside one.
            connection.connection.driver_connection.execute("PRAGMA foreign_keys = OFF")
            connection = connection.execution_options(**{WRITE_OPTION: True})
            conf_args["render_as_batch"] = True
        try:
            context.configure(
                connection=connection,
                target_metadata=target_db.metadata,
                **conf_args,
            )
            with context.begin_transaction():
                context.run_migrations()
        finally:
            if sqlite:
                connection.connection.driver_connection.execute("PRAGMA foreign_keys = ON")


if context.is_offline_mode():
    raise SystemExit("Tickwork migrations run online only (they install triggers per dialect).")
run_migrations_online()
