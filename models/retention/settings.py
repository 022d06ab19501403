"""How long each kind of history stays in the live database, and where archives go."""

from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path


@dataclass(frozen=True)
class Retention:
    archive_dir: Path  # TICKWORK_ARCHIVE_DIR: every web and consumer host mounts it when there are several
    actions: timedelta = timedelta(days=90)  # TICKWORK_RETENTION_DAYS: terminal actions, archived then pruned
    clock_runs: timedelta = timedelta(days=30)  # pruned, not archived; a run an event still names stays
    outbox: timedelta = timedelta(days=30)  # the log channel's outbox, pruned
    heartbeats: timedelta = timedelta(days=7)  # consumers not seen for this long are forgotten
    batch_size: int = 500  # seed rows per batch: one short write transaction each
    budget: timedelta = timedelta(minutes=10)  # one pass stops starting batches after this
    lease: timedelta = timedelta(minutes=15)  # renewed at every batch; a dead host's lease lapses


def retention_from_config(config) -> Retention:
    """The app's retention settings (``webapp.config`` read and checked them from the environment)."""
    return Retention(
        archive_dir=Path(config["TICKWORK_ARCHIVE_DIR"]),
        actions=timedelta(days=config["TICKWORK_RETENTION_DAYS"]),
        clock_runs=timedelta(days=config["TICKWORK_CLOCK_RUN_RETENTION_DAYS"]),
        outbox=timedelta(days=config["TICKWORK_OUTBOX_RETENTION_DAYS"]),
        heartbeats=timedelta(days=config["TICKWORK_HEARTBEAT_RETENTION_DAYS"]),
    )
