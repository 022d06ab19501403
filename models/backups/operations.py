"""Take a backup of a single box, and restore one.

A backup is a folder::

    tickwork-backup.json   what was taken, when, at which schema revision, and checksums
    tickwork.db            the app database, as of ``taken_at``
    tickwork-queue.db      the queue (SqliteHuey), copied just after, when it is a SQLite file

The app database is the record; the queue only carries hand-offs that the next tick makes
again, so the two need not be copied at the same instant.

A restore rolls the box back to ``taken_at``, but the life it rolls back may have sent rows
after that instant: every row still active in the copy whose time had come by the restore
(queued and due, or submitted) is failed as "outcome unknown" (the lifecycle's ``doubt``
move) before anything runs on it, for an operator to decide. Rows due later stay queued:
nothing could have sent them yet. A restore is refused while a consumer is beating, and
does nothing at all until the copy has passed every check.
"""

import json
import shutil
import tempfile
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from sqlalchemy import create_engine, delete, inspect
from sqlalchemy.engine import Engine

from models.actions import lifecycle
from models.clock.heartbeats import HEARTBEAT_INTERVAL, live_consumers
from models.clock.tables import ConsumerHeartbeat
from models.core.database import configure_engine, read_session, write_session
from models.core.errors import Conflict, InvalidInput
from models.core.files import keep_private, make_private_dir
from models.core.moves import Actor
from models.backups.sqlite_files import TICKWORK_TABLES, check_database, online_copy, schema_revision, sha256_of

MANIFEST = "tickwork-backup.json"
FORMAT = 1
APP_FILE = "tickwork.db"
QUEUE_FILE = "tickwork-queue.db"
# A consumer whose heartbeat is younger than this may still be sending.
LIVE_WITHIN = 3 * HEARTBEAT_INTERVAL


@dataclass(frozen=True)
class Box:
    """Where a single box keeps its files: the app database, and the queue when it is a SQLite file."""

    app_database: Path
    queue_database: Path | None


def _iso(instant: datetime) -> str:
    return instant.isoformat().replace("+00:00", "Z")


def take_backup(box: Box, destination: Path, *, now: datetime) -> dict:
    """Copy the box into the new folder ``destination``; returns the manifest.

    The folder is written beside ``destination`` under another name and renamed into place
    at the end, so a backup that fails leaves nothing behind.
    """
    destination = Path(destination)
    if destination.exists() and not (destination.is_dir() and not any(destination.iterdir())):
        raise InvalidInput(f"{destination} already exists: give a new folder for the backup", field="path")
    if not destination.parent.is_dir():
        raise InvalidInput(f"{destination.parent} does not exist: create it first", field="path")
    if not box.app_database.is_file():
        raise InvalidInput(f"the app database {box.app_database} does not exist", field="path")
    partial = Path(tempfile.mkdtemp(prefix=f".{destination.name}.", suffix=".partial", dir=destination.parent))
    try:
        taken_at = now
        online_copy(box.app_database, partial / APP_FILE)
        check_database(partial / APP_FILE, what=f"the app database {box.app_database}", tables=TICKWORK_TABLES)
        manifest = {
            "format": FORMAT,
            "taken_at": _iso(taken_at),
            "schema_revision": schema_revision(partial / APP_FILE),
            "app": {"file": APP_FILE, "sha256": sha256_of(partial / APP_FILE), "source": str(box.app_database)},
            "queue": None,
        }
        if box.queue_database is not None and box.queue_database.is_file():
            online_copy(box.queue_database, partial / QUEUE_FILE)
            manifest["queue"] = {"file": QUEUE_FILE, "sha256": sha256_of(partial / QUEUE_FILE),
                                 "source": str(box.queue_database)}
        (partial / MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
        keep_private(partial / MANIFEST)
        if destination.exists():
            destination.rmdir()
        partial.rename(destination)
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    return {"backup": str(destination), **manifest}


def read_manifest(source: Path) -> dict:
    """The manifest of the backup folder ``source``, checked: every file there and matching its checksum."""
    source = Path(source)
    if not source.exists():
        raise InvalidInput(f"{source} does not exist", field="path")
    if not source.is_dir() or not (source / MANIFEST).is_file():
        raise InvalidInput(f"{source} is not a Tickwork backup: no {MANIFEST} (tickwork backup writes a folder)",
                           field="path")
    try:
        manifest = json.loads((source / MANIFEST).read_text())
        taken_at = datetime.fromisoformat(manifest["taken_at"].replace("Z", "+00:00"))
        parts = [manifest["app"]] + ([manifest["queue"]] if manifest.get("queue") else [])
        names_and_sums = [(str(part["file"]), str(part["sha256"])) for part in parts]
    except (ValueError, KeyError, TypeError, AttributeError, UnicodeDecodeError):
        raise InvalidInput(f"{source / MANIFEST} is not a Tickwork backup manifest", field="path") from None
    if manifest.get("format") != FORMAT or taken_at.tzinfo is None:
        raise InvalidInput(f"{source / MANIFEST} is not a backup this Tickwork reads (format {FORMAT})", field="path")
    for name, expected in names_and_sums:
        path = source / name
        if Path(name).name != name or not path.is_file():
            raise InvalidInput(f"{source} is incomplete: {name} is missing", field="path")
        if sha256_of(path) != expected:
            raise InvalidInput(f"{path} does not match its checksum: the copy is damaged", field="path")
    return {**manifest, "taken_at": taken_at}


def restore_backup(source: Path, box: Box, *, live: Engine, revision: str, now: datetime, actor: Actor) -> dict:
    """Put the backup ``source`` in place of ``box``'s files; returns what was done.

    ``live`` is an engine on the box's current app database (its heartbeats say whether a
    consumer runs); ``revision`` is the schema revision this Tickwork's migrations end at.
    """
    source = Path(source)
    manifest = read_manifest(source)
    copy = source / manifest["app"]["file"]
    check_database(copy, what=str(copy), tables=TICKWORK_TABLES)
    found = schema_revision(copy)
    if found != revision:
        raise InvalidInput(f"the backup is at schema revision {found} and this Tickwork at {revision}: restore it "
                           "with the release that took it, then upgrade", field="path")
    if manifest["queue"]:
        check_database(source / manifest["queue"]["file"], what=str(source / manifest["queue"]["file"]))
    _refuse_while_a_consumer_beats(live, box, now)

    taken_at = manifest["taken_at"]
    make_private_dir(box.app_database.parent)
    staging = Path(tempfile.mkstemp(prefix=".tickwork-restore.", suffix=".db", dir=box.app_database.parent)[1])
    try:
        online_copy(copy, staging)
        doubted = _doubt_what_may_have_gone_out(staging, taken_at=taken_at, now=now, actor=actor)
        online_copy(staging, box.app_database, single_file=False)
    finally:
        for leftover in (staging, Path(f"{staging}-wal"), Path(f"{staging}-shm"), Path(f"{staging}-journal")):
            leftover.unlink(missing_ok=True)
    queue = _restore_queue(source, manifest, box)
    return {
        "restored_from": str(source),
        "taken_at": _iso(taken_at),
        "failed_outcome_unknown": len(doubted),
        "action_ids": doubted,
        "queue": queue,
    }


def _refuse_while_a_consumer_beats(live: Engine, box: Box, now: datetime) -> None:
    if not box.app_database.is_file() or not inspect(live).has_table(ConsumerHeartbeat.__tablename__):
        return
    with read_session(live) as session:
        beating = live_consumers(session, now, within=LIVE_WITHIN)
    if beating:
        names = ", ".join(beat.name for beat in beating)
        raise Conflict(f"a consumer is running ({names}): stop tickwork serve and every tickwork consumer, "
                       "then restore", code="consumer_running")


def _doubt_what_may_have_gone_out(staging: Path, *, taken_at: datetime, now: datetime, actor: Actor) -> list[int]:
    """On the staged copy: the old life's heartbeats go, and every row that may have gone out is failed."""
    engine = create_engine(f"sqlite:///{staging}")
    configure_engine(engine)
    try:
        with write_session(engine) as session:
            session.execute(delete(ConsumerHeartbeat))
            return lifecycle.doubt_after_restore(
                session, now=now, actor=actor,
                message=(f"outcome unknown: restored from a backup taken at {taken_at:%Y-%m-%d %H:%M:%S}Z; "
                         "it may have gone out after that"))
    finally:
        engine.dispose()


def _restore_queue(source: Path, manifest: dict, box: Box) -> str:
    if not manifest["queue"]:
        return "not in the backup; the live queue is left as it is (the tick hands due rows over again)"
    if box.queue_database is None:
        return "left out: this box's queue is not a SQLite file (the tick hands due rows over again)"
    make_private_dir(box.queue_database.parent)
    online_copy(source / manifest["queue"]["file"], box.queue_database, single_file=False)
    return "restored"

