"""The archive job's entry points: one pass, or what a pass would do (see models.retention.archiving)."""

from flask import current_app

from models.core.runtime import runtime
from models.retention.archiving import count_due, run_archive
from models.retention.settings import retention_from_config


def archive_once() -> dict:
    """One archive pass: old terminal chains copied to the archive files and pruned; shorter retentions applied."""
    return run_archive(clock=runtime().clock, settings=retention_from_config(current_app.config))


def archive_dry_run() -> dict:
    """What an archive pass would move and prune now; writes nothing."""
    return count_due(clock=runtime().clock, settings=retention_from_config(current_app.config))
