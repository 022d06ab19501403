"""The archive pass: copy old terminal chains into monthly files, verify, then prune them, batch by batch.

Each batch is: read the chains (a read transaction), upsert them into their month's file
and check by count that every row is there, then one short write transaction that checks
again that each chain is still terminal, old and complete, keeps its keys
(:class:`~models.actions.archived_keys.ArchivedKey`), records which file holds each id
(:class:`~models.retention.tables.ArchivedAction`) and deletes the rows. A pass that dies
after a copy leaves its rows live; the next pass copies them again (upserts by id) and
prunes them. Nothing holds the clock's locks for longer than one batch's deletes.

Clock runs, outbox entries and heartbeats are pruned after their own, shorter ages; the
usage ledger is never pruned. One host archives at a time, under a lease row.
"""

import os
import socket
import statistics
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import delete, func, or_, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session

from models.actions.archived_keys import ArchivedKey
from models.actions.tables import ActionEvent, ActionHold, ScheduledAction, blocks_minting_again
from models.channels.outbox import OutboxEntry
from models.clock.runs import run_recorded
from models.clock.tables import ClockRun, ConsumerHeartbeat
from models.core.base import Base
from models.core.database import read_session, write_session
from models.drips.tables import EnrollmentEvent, Send
from models.works.tables import RunStatus, WorkEvent, WorkRun, WorkUsage
from models.recurring.tables import RecurringScheduleEvent
from models.retention.archive_files import count_ids, file_name, open_archive, upsert_rows
from models.retention.chains import TERMINAL, Chain, select_chains
from models.retention.settings import Retention
from models.retention.tables import ArchivedAction, RetentionLease
from models.timing.clock import Clock

# Every table with a foreign key to an action, besides its own lineage, and to a drip send: what
# leaves with a chain (action holds are deleted, not archived: they only matter while queued).
TAKEN_WITH_ACTIONS = frozenset({"action_events", "action_holds", "outbox_entries", "recurring_schedule_events",
                                "drip_sends"})
TAKEN_WITH_SENDS = frozenset({"drip_enrollment_events"})
LEASE_NAME = "archive"
JOB_KIND = "archive"


class ArchiveNotVerified(Exception):
    """An archive file did not hold every row just copied into it: nothing was pruned."""


def _insert_for(session: Session):
    return postgresql.insert if session.get_bind().dialect.name == "postgresql" else sqlite.insert


# --- the lease -------------------------------------------------------------------------------

def new_holder() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def take_lease(holder: str, *, now: datetime, settings: Retention, engine: Engine | None = None) -> str | None:
    """Take (or renew) the archive lease for ``holder``; returns None when taken, else who holds it."""
    with write_session(engine) as session:
        session.execute(_insert_for(session)(RetentionLease).values(
            name=LEASE_NAME, holder=holder, taken_at=now, expires_at=now + settings.lease).on_conflict_do_nothing())
        taken = session.execute(
            update(RetentionLease)
            .where(RetentionLease.name == LEASE_NAME,
                   or_(RetentionLease.holder == holder, RetentionLease.expires_at <= now))
            .values(holder=holder, taken_at=now, expires_at=now + settings.lease)
        ).rowcount
        if taken:
            return None
        return session.scalar(select(RetentionLease.holder).where(RetentionLease.name == LEASE_NAME))


def release_lease(holder: str, *, now: datetime, engine: Engine | None = None) -> None:
    with write_session(engine) as session:
        session.execute(update(RetentionLease).where(RetentionLease.name == LEASE_NAME,
                                                     RetentionLease.holder == holder).values(expires_at=now))


# --- one batch of chains -----------------------------------------------------------------------

@dataclass
class Batch:
    """What one batch read of its chains, grouped by the file they go to."""

    chains: list[Chain]
    rows: dict[str, dict[str, list[dict]]]  # file -> table -> rows
    ids: dict[str, dict[str, list[int]]]  # file -> table -> ids


def _rows(session: Session, table, where) -> list[dict]:
    return [dict(row) for row in session.connection().execute(select(table).where(where)).mappings()]


def read_batch(session: Session, chains: list[Chain]) -> Batch:
    """Every row that leaves with ``chains``: the actions, their events, outbox entries, rule events, drip sends."""
    batch = Batch(chains, defaultdict(lambda: defaultdict(list)), defaultdict(lambda: defaultdict(list)))
    by_file: dict[str, list[int]] = defaultdict(list)
    for chain in chains:
        by_file[file_name(chain.month)].extend(chain.ids)
    for name, ids in by_file.items():
        tables = batch.rows[name]
        for start in range(0, len(ids), 500):
            part = ids[start:start + 500]
            tables["scheduled_actions"] += _rows(session, ScheduledAction.__table__, ScheduledAction.id.in_(part))
            tables["action_events"] += _rows(session, ActionEvent.__table__, ActionEvent.action_id.in_(part))
            tables["outbox_entries"] += _rows(session, OutboxEntry.__table__, OutboxEntry.action_id.in_(part))
            tables["recurring_schedule_events"] += _rows(session, RecurringScheduleEvent.__table__,
                                                         RecurringScheduleEvent.action_id.in_(part))
            sends = _rows(session, Send.__table__, Send.attempt_id.in_(part))
            tables["drip_sends"] += sends
            send_ids = [send["id"] for send in sends]
            if send_ids:
                tables["drip_enrollment_events"] += _rows(session, EnrollmentEvent.__table__,
                                                          EnrollmentEvent.send_id.in_(send_ids))
        for table, rows in tables.items():
            batch.ids[name][table] = [row["id"] for row in rows]
    return batch


class ArchiveFiles:
    """The archive files one pass writes, each opened once."""

    def __init__(self, directory):
        self.directory = directory
        self.open: dict[str, object] = {}

    def __getitem__(self, name: str):
        if name not in self.open:
            self.open[name] = open_archive(self.directory, name)
        return self.open[name]

    def close(self) -> None:
        for archive in self.open.values():
            archive.close()
        self.open.clear()


def copy_batch(batch: Batch, files: ArchiveFiles) -> None:
    """Upsert the batch into its files, then check by count that each file holds every row."""
    for name, tables in batch.rows.items():
        archive = files[name]
        with archive.conn:
            for table, rows in tables.items():
                upsert_rows(archive, table, rows)
        for table, ids in batch.ids[name].items():
            found = count_ids(archive, table, ids)
            if found != len(ids):
                raise ArchiveNotVerified(f"{name}: {table} holds {found} of the {len(ids)} rows copied")


def prune_batch(batch: Batch, *, now: datetime, cutoff: datetime, engine: Engine | None = None) -> Counter:
    """In one write transaction: keep the keys, index the ids, delete the rows of every chain still due to go."""
    counts: Counter = Counter()
    file_of = {ident: name for name, tables in batch.ids.items() for ident in tables.get("scheduled_actions", [])}
    with write_session(engine) as session:
        ids = sorted(file_of)
        current = {}
        parent_of_child: dict[int, int] = {}
        for start in range(0, len(ids), 500):
            part = ids[start:start + 500]
            # Locked on PostgreSQL, so an admin's retry waits for this transaction, then finds the row gone;
            # SQLite's writer lock (BEGIN IMMEDIATE) already holds every other writer off.
            current.update((row.id, row) for row in session.scalars(
                select(ScheduledAction).where(ScheduledAction.id.in_(part)).with_for_update()))
            parent_of_child.update(session.execute(select(ScheduledAction.id, ScheduledAction.rescheduled_from_id)
                                                   .where(ScheduledAction.rescheduled_from_id.in_(part))).all())
        # A chain that changed since it was read (an admin's retry, a new child) stays live, whole.
        chain_of = {i: n for n, chain in enumerate(batch.chains) for i in chain.ids}
        grown = {chain_of[parent] for child, parent in parent_of_child.items()
                 if chain_of.get(child) != chain_of[parent]}
        going = []
        for n, chain in enumerate(batch.chains):
            rows = [current.get(i) for i in chain.ids]
            settled = all(r is not None and r.status in TERMINAL and r.updated_at < cutoff for r in rows)
            if settled and n not in grown:
                going.append(chain)
            else:
                counts["changed"] += 1
        if not going:
            return counts
        gone = sorted(i for chain in going for i in chain.ids)
        _keep_keys(session, [current[i] for i in gone], now=now)
        stmt = _insert_for(session)(ArchivedAction.__table__)
        stmt = stmt.on_conflict_do_update(index_elements=["action_id"], set_={
            "file": stmt.excluded.file, "archived_at": stmt.excluded.archived_at})
        session.connection().execute(stmt, [
            {"action_id": i, "workspace_id": current[i].workspace_id, "file": file_of[i], "archived_at": now}
            for i in gone])
        session.expunge_all()
        depth = {i: d for chain in going for i, d in chain.depth.items()}
        # Only the rows this batch copied are deleted: a row that appeared since (an event, a send)
        # still names its action, so the foreign key refuses the action's delete and the whole
        # batch rolls back, to be copied again by the next pass. Nothing is pruned unarchived.
        gone_set = set(gone)
        copied = _copied_rows(batch, gone_set)
        for model in (EnrollmentEvent, Send, OutboxEntry, RecurringScheduleEvent, ActionEvent):
            ids = sorted(copied[model.__tablename__])
            for start in range(0, len(ids), 500):
                counts[model.__tablename__] += session.execute(
                    delete(model).where(model.id.in_(ids[start:start + 500]))).rowcount
        for start in range(0, len(gone), 500):
            session.execute(delete(ActionHold).where(ActionHold.action_id.in_(gone[start:start + 500])))
        # Children before parents: rescheduled_from is a RESTRICT foreign key.
        for level in sorted({depth[i] for i in gone}, reverse=True):
            at_level = [i for i in gone if depth[i] == level]
            for start in range(0, len(at_level), 500):
                counts["actions"] += session.execute(
                    delete(ScheduledAction).where(ScheduledAction.id.in_(at_level[start:start + 500]))).rowcount
        counts["chains"] += len(going)
    return counts


def _copied_rows(batch: Batch, gone: set[int]) -> dict[str, set[int]]:
    """The ids, by table, of the rows this batch copied along with the actions in ``gone``."""
    copied: dict[str, set[int]] = defaultdict(set)
    for tables in batch.rows.values():
        for table, column in (("action_events", "action_id"), ("outbox_entries", "action_id"),
                              ("recurring_schedule_events", "action_id"), ("drip_sends", "attempt_id")):
            copied[table].update(row["id"] for row in tables.get(table, []) if row[column] in gone)
    for tables in batch.rows.values():
        copied["drip_enrollment_events"].update(row["id"] for row in tables.get("drip_enrollment_events", [])
                                                if row["send_id"] in copied["drip_sends"])
    return copied


def _keep_keys(session: Session, rows: list[ScheduledAction], *, now: datetime) -> None:
    """One ArchivedKey per key that had a gate-blocking row, ``published`` true once any was published."""
    keys: dict[tuple, bool] = {}
    for row in rows:
        if row.thing_id is None or not blocks_minting_again(row):
            continue
        key = (row.workspace_id, row.action_type, row.thing_id, row.target_key)
        keys[key] = keys.get(key, False) or row.status == "published"
    if not keys:
        return
    table = ArchivedKey.__table__
    stmt = _insert_for(session)(table)
    stmt = stmt.on_conflict_do_update(index_elements=["workspace_id", "action_type", "thing_id", "target_key"],
                                      set_={"published": or_(table.c.published, stmt.excluded.published)})
    session.connection().execute(stmt, [
        {"workspace_id": w, "action_type": t, "thing_id": th, "target_key": k, "published": p, "archived_at": now}
        for (w, t, th, k), p in sorted(keys.items())])


# --- work runs --------------------------------------------------------------------------------

WORK_RUNS_SETTLED = (RunStatus.SUCCEEDED.value, RunStatus.FAILED.value)


def archive_work_runs(files: "ArchiveFiles", *, cutoff: datetime, settings: Retention, deadline: float,
                      engine=None) -> Counter:
    """Copy and prune the works' settled generations (and their run events) finished before ``cutoff``.

    A run the usage ledger bills stays: the ledger is never pruned, and it names its run.
    """
    counts: Counter = Counter()
    after = 0
    billed = select(WorkUsage.run_id).where(WorkUsage.run_id == WorkRun.id).exists()
    while time.monotonic() < deadline:
        with read_session(engine) as session:
            runs = [dict(run) for run in session.connection().execute(
                select(WorkRun.__table__).where(WorkRun.id > after, WorkRun.status.in_(WORK_RUNS_SETTLED),
                                                WorkRun.finished_at < cutoff, ~billed)
                .order_by(WorkRun.id).limit(settings.batch_size)).mappings()]
            if not runs:
                break
            after = runs[-1]["id"]
            ids = [run["id"] for run in runs]
            events = _rows(session, WorkEvent.__table__, WorkEvent.work_id.in_({run["work_id"] for run in runs})
                           & (WorkEvent.lifecycle == "run") & WorkEvent.subject_id.in_(ids))
        by_file: dict[str, tuple[list, list]] = defaultdict(lambda: ([], []))
        month_of = {}
        for run in runs:
            name = file_name(run["started_at"].strftime("%Y-%m"))
            month_of[run["id"]] = name
            by_file[name][0].append(run)
        for event in events:
            by_file[month_of[event["subject_id"]]][1].append(event)
        for name, (run_rows, event_rows) in by_file.items():
            archive = files[name]
            with archive.conn:
                upsert_rows(archive, "work_runs", run_rows)
                upsert_rows(archive, "work_events", event_rows)
            for table, rows in (("work_runs", run_rows), ("work_events", event_rows)):
                if count_ids(archive, table, [row["id"] for row in rows]) != len(rows):
                    raise ArchiveNotVerified(f"{name}: {table} does not hold every row copied")
        with write_session(engine) as session:
            # Only runs still settled and unbilled go (a late callback never moves a settled run, but check).
            going = list(session.scalars(select(WorkRun.id).where(
                WorkRun.id.in_(ids), WorkRun.status.in_(WORK_RUNS_SETTLED), ~billed).with_for_update()))
            if going:
                counts["work_events"] += session.execute(delete(WorkEvent).where(
                    WorkEvent.lifecycle == "run", WorkEvent.subject_id.in_(going),
                    WorkEvent.id.in_([event["id"] for event in events]))).rowcount
                counts["work_runs"] += session.execute(delete(WorkRun).where(WorkRun.id.in_(going))).rowcount
    return counts


# --- the shorter retentions --------------------------------------------------------------------

def _referencing(table_name: str, column: str = "id"):
    """Every live table column with a foreign key to ``table_name.column``."""
    found = []
    for table in Base.metadata.tables.values():
        for fk in table.foreign_keys:
            if fk.column.table.name == table_name and fk.column.name == column:
                found.append(fk.parent)
    return found


def prune_clock_runs(*, cutoff: datetime, settings: Retention, deadline: float, engine=None) -> int:
    """Delete clock runs started before ``cutoff`` that no row names any more, in batches."""
    pruned, after = 0, 0
    referencing = _referencing("clock_runs")
    while time.monotonic() < deadline:
        with write_session(engine) as session:
            candidates = list(session.scalars(select(ClockRun.id).where(
                ClockRun.id > after, ClockRun.started_at < cutoff).order_by(ClockRun.id).limit(settings.batch_size)))
            if not candidates:
                break
            after = candidates[-1]
            named = set()
            for column in referencing:
                named.update(session.scalars(select(column).where(column.in_(candidates)).distinct()))
            free = [i for i in candidates if i not in named]
            if free:
                pruned += session.execute(delete(ClockRun).where(ClockRun.id.in_(free))).rowcount
    return pruned


def prune_outbox(*, cutoff: datetime, settings: Retention, deadline: float, engine=None) -> int:
    pruned = 0
    while time.monotonic() < deadline:
        with write_session(engine) as session:
            ids = list(session.scalars(select(OutboxEntry.id).where(OutboxEntry.created_at < cutoff)
                                       .order_by(OutboxEntry.id).limit(settings.batch_size)))
            if not ids:
                break
            pruned += session.execute(delete(OutboxEntry).where(OutboxEntry.id.in_(ids))).rowcount
    return pruned


def prune_heartbeats(*, cutoff: datetime, engine=None) -> int:
    with write_session(engine) as session:
        return session.execute(delete(ConsumerHeartbeat).where(ConsumerHeartbeat.beat_at < cutoff)).rowcount


# --- the pass ----------------------------------------------------------------------------------

def archive_chains(*, clock: Clock, settings: Retention, deadline: float, engine=None,
                   before_prune: Callable[[Batch], None] | None = None) -> Counter:
    """Copy and prune every chain due to go, batch by batch, until none is left or the time is spent."""
    counts: Counter = Counter()
    after = 0
    cutoff = clock.now() - settings.actions
    files = ArchiveFiles(settings.archive_dir)
    prunes_ms: list[int] = []
    try:
        while time.monotonic() < deadline:
            with read_session(engine) as session:
                selection = select_chains(session, cutoff=cutoff, after_id=after, limit=settings.batch_size)
                if selection.last_seed is None:
                    break
                after = selection.last_seed
                counts["waiting"] += selection.waiting
                if not selection.chains:
                    continue
                batch = read_batch(session, selection.chains)
            copy_batch(batch, files)
            if before_prune is not None:
                before_prune(batch)
            pruning = time.monotonic()
            counts.update(prune_batch(batch, now=clock.now(), cutoff=cutoff, engine=engine))
            # How long the clock's writers waited on one prune's write transaction.
            prunes_ms.append(round((time.monotonic() - pruning) * 1000))
            counts["batches"] += 1
        counts.update(archive_work_runs(files, cutoff=cutoff, settings=settings, deadline=deadline, engine=engine))
    finally:
        files.close()
    if prunes_ms:
        counts["median_prune_ms"] = round(statistics.median(prunes_ms))
        counts["longest_prune_ms"] = max(prunes_ms)
    return counts


def count_due(*, clock: Clock, settings: Retention, engine=None) -> dict:
    """What a pass would do now, without writing anything (``tickwork archive --dry-run``)."""
    now = clock.now()
    cutoff = now - settings.actions
    counts: Counter = Counter()
    after = 0
    with read_session(engine) as session:
        while True:
            selection = select_chains(session, cutoff=cutoff, after_id=after, limit=settings.batch_size)
            if selection.last_seed is None:
                break
            after = selection.last_seed
            counts["waiting"] += selection.waiting
            counts["chains"] += len(selection.chains)
            counts["actions"] += sum(len(chain.ids) for chain in selection.chains)
        # Clock runs past their age; a pass prunes those no event or run still names.
        counts["clock_runs_past_age"] = session.scalar(
            select(func.count()).select_from(ClockRun).where(ClockRun.started_at < now - settings.clock_runs))
        counts["outbox_entries_expired"] = session.scalar(
            select(func.count()).select_from(OutboxEntry).where(OutboxEntry.created_at < now - settings.outbox))
        counts["heartbeats"] = session.scalar(select(func.count()).select_from(ConsumerHeartbeat).where(
            ConsumerHeartbeat.beat_at < now - settings.heartbeats))
    return {"dry_run": True, "cutoff": cutoff.isoformat(), **dict(counts)}


def run_archive(*, clock: Clock, settings: Retention, engine: Engine | None = None,
                before_prune: Callable[[Batch], None] | None = None) -> dict:
    """One archive pass, recorded as a clock run; skipped (and said so) when the directory is missing
    or another host holds the lease."""

    def one_pass(_run_id: int) -> dict:
        if not settings.archive_dir.is_dir():
            return {"skipped": f"no archive directory at {settings.archive_dir}"}
        holder = new_holder()
        held_by = take_lease(holder, now=clock.now(), settings=settings, engine=engine)
        if held_by is not None:
            return {"skipped": f"another host archives now ({held_by})"}
        deadline = time.monotonic() + settings.budget.total_seconds()
        try:
            counts = archive_chains(clock=clock, settings=settings, deadline=deadline, engine=engine,
                                    before_prune=lambda batch: _renew(holder, clock, settings, engine, batch,
                                                                      before_prune))
            now = clock.now()
            counts["clock_runs"] = prune_clock_runs(cutoff=now - settings.clock_runs, settings=settings,
                                                    deadline=deadline, engine=engine)
            counts["outbox_entries_expired"] = prune_outbox(cutoff=now - settings.outbox, settings=settings,
                                                            deadline=deadline, engine=engine)
            counts["heartbeats"] = prune_heartbeats(cutoff=now - settings.heartbeats, engine=engine)
        finally:
            release_lease(holder, now=clock.now(), engine=engine)
        return {"archive_dir": str(settings.archive_dir), **dict(counts)}

    return run_recorded(JOB_KIND, one_pass, clock=clock, engine=engine)


def _renew(holder, clock, settings, engine, batch, then) -> None:
    """Renew the lease between copy and prune; a pass that lost it stops before deleting anything."""
    held_by = take_lease(holder, now=clock.now(), settings=settings, engine=engine)
    if held_by is not None:
        raise LeaseLost(f"the archive lease passed to {held_by}")
    if then is not None:
        then(batch)


class LeaseLost(Exception):
    """This pass's lease lapsed and another host took it: it stops before pruning anything."""
