"""A CSV import's two steps: the dry run (a fate per line, stored) and the commit (exactly the accepted lines).

The wing that takes the file supplies a :class:`LineChecker`: which header it needs, each
line's fate (read-only), and how to apply an accepted line (re-checking it first). Both steps
are streamed: the dry run reads and stores the lines in batches of :data:`CHECK_BATCH`, each
batch in short transactions of its own, and the commit applies :data:`APPLY_BATCH` lines per
write transaction, so a 100,000-line file never holds the database's writer lock for long
and the clock's own writes go in between.

::

    POST ...csv?dry_run=1   read_csv → check_header → [check a batch → store it] ... → DryRun (import_id)
    POST .../imports/ID/commit          staged → committing → [apply a batch] ... → committed → Committed

The commit applies the lines the dry run accepted, and only those, each re-checked as it is
applied: a line whose fate changed since (the contact unsubscribed meanwhile, say) is
reported in ``changed`` with its fate then and now. A commit runs once: a second one answers
409 while the first runs, and the first one's result afterwards; a commit whose process died
is finished by the next one, which applies only the lines the first did not.
"""

import uuid
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Protocol

from sqlalchemy import and_, delete, insert, or_, select, update
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session

from models.core.database import read_session, write_session
from models.core.errors import Conflict, NotFound
from models.core.moves import Actor
from models.core.policy import Policy
from models.imports.csv_file import MAX_LINES, CsvLine, read_csv
from models.imports.tables import CsvImport, CsvImportLine, ImportStatus
from models.timing.clock import Clock

CHECK_BATCH = 1000
APPLY_BATCH = 500
# A commit that has applied no batch for this long died (its process was killed); the next commit takes it over.
STALE_COMMIT = timedelta(minutes=2)
_PURGE_BATCH = 5000
MALFORMED = "malformed"


@dataclass(frozen=True)
class Fate:
    """What happens (or happened) to one line: a code the report shows, and whether it is imported."""

    code: str
    accepted: bool
    message: str | None = None


class LineChecker(Protocol):
    """What a wing supplies to import a kind of file."""

    kind: str  # stored with the import, so a commit is only ever applied by the same kind
    # A checker may set ``max_lines`` (fewer than csv_file.MAX_LINES): a longer file is refused whole.

    def check_header(self, columns: list[str]) -> None:
        """Raise :class:`~models.core.errors.InvalidInput` (field ``file``) when the header cannot be imported."""

    def check(self, session: Session, workspace_id: int, target: str, lines: list[CsvLine],
              state: dict) -> list[Fate]:
        """Each line's fate, reading only; ``state`` lives for the whole file (duplicates across batches)."""

    def apply(self, session: Session, workspace_id: int, target: str, lines: list[CsvLine], *,
              actor: Actor, now: datetime) -> list[Fate]:
        """Apply each accepted line, re-checking it; each line's fate now (an accepted fate when it was applied)."""


@dataclass
class DryRun:
    """A dry run's report: every line's fate, in file order, and the id its commit names."""

    import_id: str
    expires_at: datetime
    columns: list[str]
    lines: list[tuple[CsvLine, Fate]]

    @property
    def counts(self) -> dict[str, int]:
        return dict(Counter(fate.code for _, fate in self.lines))

    @property
    def accepted(self) -> int:
        return sum(1 for _, fate in self.lines if fate.accepted)


@dataclass(frozen=True)
class Changed:
    """An accepted line whose fate at commit differs from its dry run's."""

    line: int
    was: str
    now: str
    message: str | None


@dataclass
class Committed:
    import_id: str
    applied: int
    changed: list[Changed] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)


def _chunks(items: list, size: int):
    for start in range(0, len(items), size):
        yield items[start:start + size]


def purge_expired(now: datetime, *, engine: Engine | None = None) -> int:
    """Delete imports whose keep time is over, their lines first, a batch per transaction; returns how many."""
    with read_session(engine) as session:
        expired = list(session.scalars(select(CsvImport.id).where(CsvImport.expires_at <= now)))
    for import_id in expired:
        while True:
            with write_session(engine) as session:
                ids = list(session.scalars(select(CsvImportLine.id).where(CsvImportLine.import_id == import_id)
                                           .limit(_PURGE_BATCH)))
                if ids:
                    session.execute(delete(CsvImportLine).where(CsvImportLine.id.in_(ids)))
                else:
                    session.execute(delete(CsvImport).where(CsvImport.id == import_id))
            if not ids:
                break
    return len(expired)


def dry_run(data: bytes, checker: LineChecker, *, workspace_id: int, target: str, actor: Actor, clock: Clock,
            policy: Policy, engine: Engine | None = None) -> DryRun:
    """Read ``data``, give every line its fate, and keep the file for its commit; nothing else is written.

    A file that cannot be read at all (encoding, header, a line too long) raises
    :class:`~models.core.errors.InvalidInput` before anything is stored.
    """
    parsed = read_csv(data, max_lines=getattr(checker, "max_lines", MAX_LINES))
    checker.check_header(parsed.columns)
    now = clock.now()
    purge_expired(now, engine=engine)
    import_id = uuid.uuid4().hex
    expires_at = now + policy.import_keep
    with write_session(engine) as session:
        session.execute(insert(CsvImport).values(
            id=import_id, workspace_id=workspace_id, kind=checker.kind, target=target,
            created_by_id=actor.user_id, status=ImportStatus.STAGED.value, columns=parsed.columns,
            line_count=len(parsed.lines), accepted_count=0, created_at=now, updated_at=now, expires_at=expires_at))
    state: dict[str, Any] = {}
    report: list[tuple[CsvLine, Fate]] = []
    for batch in _chunks(parsed.lines, CHECK_BATCH):
        readable = [line for line in batch if line.problem is None]
        with read_session(engine) as session:
            fates = iter(checker.check(session, workspace_id, target, readable, state) if readable else [])
        batch_report = [(line, Fate(MALFORMED, False, f"line {line.number} {line.problem}") if line.problem
                         else next(fates)) for line in batch]
        with write_session(engine) as session:
            session.execute(insert(CsvImportLine), [
                {"import_id": import_id, "line_number": line.number, "values": line.values, "fate": fate.code,
                 "accepted": fate.accepted, "message": fate.message} for line, fate in batch_report])
        report.extend(batch_report)
    accepted = sum(1 for _, fate in report if fate.accepted)
    with write_session(engine) as session:
        session.execute(update(CsvImport).where(CsvImport.id == import_id).values(accepted_count=accepted))
    return DryRun(import_id, expires_at, parsed.columns, report)


def _find(session: Session, import_id: str, checker: LineChecker, workspace_id: int, target: str,
          now: datetime) -> CsvImport:
    found = session.get(CsvImport, import_id) if isinstance(import_id, str) and len(import_id) <= 32 else None
    if (found is None or found.workspace_id != workspace_id or found.kind != checker.kind or found.target != target
            or found.expires_at <= now):
        raise NotFound(f"no import {str(import_id)[:32]!r} here; a dry run is kept for an hour, so run it again",
                       field="import_id")
    return found


def commit(import_id: str, checker: LineChecker, *, workspace_id: int, target: str, actor: Actor, clock: Clock,
           engine: Engine | None = None) -> Committed:
    """Apply exactly the lines the dry run ``import_id`` accepted, re-checking each; report those whose fate changed.

    A commit whose process died (a web worker killed on its timeout, say) is taken over by the
    next one once it has been still for :data:`STALE_COMMIT`: the lines it applied are marked in
    the same transactions that applied them, so the taker applies only the others.
    """
    now = clock.now()
    with write_session(engine) as session:
        staged = _find(session, import_id, checker, workspace_id, target, now)
        takeable = or_(CsvImport.status == ImportStatus.STAGED.value,
                       and_(CsvImport.status == ImportStatus.COMMITTING.value,
                            CsvImport.updated_at <= now - STALE_COMMIT))
        moved = session.execute(
            update(CsvImport).where(CsvImport.id == staged.id, takeable)
            .values(status=ImportStatus.COMMITTING.value, updated_at=now).returning(CsvImport.id)).one_or_none()
        status = staged.status
    if moved is None:
        if status == ImportStatus.COMMITTED.value:
            return _result(import_id, engine)
        raise Conflict(f"import {import_id} is being committed", code="import_committing", field="import_id")
    stamp, after = now, 0
    while True:
        with write_session(engine) as session:
            # Still ours? A commit still for STALE_COMMIT may have been taken over; the row lock
            # (or SQLite's one writer) orders this batch after any taker's.
            fresh = clock.now()
            if session.execute(update(CsvImport).where(CsvImport.id == import_id, CsvImport.updated_at == stamp)
                               .values(updated_at=fresh)).rowcount != 1:
                raise Conflict(f"import {import_id} is being committed", code="import_committing", field="import_id")
            stamp = fresh
            batch = list(session.scalars(
                select(CsvImportLine).where(CsvImportLine.import_id == import_id, CsvImportLine.accepted.is_(True),
                                            CsvImportLine.committed_fate.is_(None), CsvImportLine.line_number > after)
                .order_by(CsvImportLine.line_number).limit(APPLY_BATCH)))
            if not batch:
                break
            after = batch[-1].line_number
            lines = [CsvLine(line.line_number, dict(line.values)) for line in batch]
            fates = checker.apply(session, workspace_id, target, lines, actor=actor, now=clock.now())
            session.execute(update(CsvImportLine), [
                {"id": line.id, "committed_fate": fate.code, "committed_message": fate.message}
                for line, fate in zip(batch, fates, strict=True)])
    with write_session(engine) as session:
        session.execute(update(CsvImport).where(CsvImport.id == import_id).values(
            status=ImportStatus.COMMITTED.value, committed_at=clock.now(), updated_at=clock.now()))
    return _result(import_id, engine)


def _result(import_id: str, engine: Engine | None) -> Committed:
    """A committed import's outcome, read back from its lines."""
    with read_session(engine) as session:
        rows = session.execute(
            select(CsvImportLine.line_number, CsvImportLine.fate, CsvImportLine.committed_fate,
                   CsvImportLine.committed_message)
            .where(CsvImportLine.import_id == import_id, CsvImportLine.accepted.is_(True))
            .order_by(CsvImportLine.line_number)).all()
    counts = Counter(committed or fate for _, fate, committed, _ in rows)
    changed = [Changed(number, fate, committed, message) for number, fate, committed, message in rows
               if committed is not None and committed != fate]
    return Committed(import_id, applied=len(rows) - len(changed), changed=changed, counts=dict(counts))
