"""Which terminal history may leave the live database: whole lineage chains, old and settled.

A row goes together with every row of its ``rescheduled_from`` chain (parents and children,
at any depth). A chain goes when every member is terminal and last changed before the
cut-off, and no drip send of its members still waits (pending or held); otherwise it waits,
whole. Seeds are read in id order from a cursor, so chains that wait never stop the pass.
"""

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.orm import Session

from models.actions.tables import ScheduledAction
from models.drips.tables import Send, SendStatus

TERMINAL = ("published", "failed", "cancelled")
CHUNK = 500


@dataclass
class Chain:
    """One lineage chain that may go: its ids, each member's depth (roots 0), the month it is filed under."""

    ids: list[int]
    depth: dict[int, int]
    month: str


@dataclass
class Selection:
    chains: list[Chain] = field(default_factory=list)
    waiting: int = 0  # chains seen in this batch that must stay for now
    last_seed: int | None = None  # the cursor: the next batch starts after this id


@dataclass(frozen=True)
class _Member:
    id: int
    parent: int | None
    status: str
    updated_at: datetime
    publish_at: datetime


def _in_chunks(values):
    values = sorted(values)
    for start in range(0, len(values), CHUNK):
        yield values[start:start + CHUNK]


def _members(session: Session, where) -> list[_Member]:
    a = ScheduledAction
    return [_Member(*row) for row in session.execute(
        select(a.id, a.rescheduled_from_id, a.status, a.updated_at, a.publish_at).where(where))]


def select_chains(session: Session, *, cutoff: datetime, after_id: int, limit: int) -> Selection:
    """The chains reached from the next ``limit`` terminal rows older than ``cutoff`` after ``after_id``."""
    a = ScheduledAction
    seeds = list(session.scalars(
        select(a.id).where(a.id > after_id, a.status.in_(TERMINAL), a.updated_at < cutoff).order_by(a.id).limit(limit)))
    selection = Selection(last_seed=seeds[-1] if seeds else None)
    if not seeds:
        return selection
    known: dict[int, _Member] = {}
    for part in _in_chunks(seeds):
        known.update((m.id, m) for m in _members(session, a.id.in_(part)))
    fresh = set(known)
    while fresh:
        parents = {known[i].parent for i in fresh if known[i].parent is not None} - set(known)
        added: dict[int, _Member] = {}
        for part in _in_chunks(parents):
            added.update((m.id, m) for m in _members(session, a.id.in_(part)))
        for part in _in_chunks(fresh):
            added.update((m.id, m) for m in _members(session, a.rescheduled_from_id.in_(part)) if m.id not in known)
        known.update(added)
        fresh = set(added)

    roots: dict[int, int] = {}

    def root_of(ident: int) -> int:
        path = []
        while ident not in roots:
            path.append(ident)
            parent = known[ident].parent
            if parent is None or parent not in known:
                roots[ident] = ident
                break
            ident = parent
        top = roots[ident]
        for step in path:
            roots[step] = top
        return top

    groups: dict[int, list[int]] = defaultdict(list)
    for ident in known:
        groups[root_of(ident)].append(ident)

    waiting_sends = set()
    for part in _in_chunks(known):
        waiting_sends.update(session.scalars(select(Send.attempt_id).where(
            Send.attempt_id.in_(part), Send.status.in_((SendStatus.PENDING.value, SendStatus.HELD.value)))))

    for root, ids in sorted(groups.items()):
        members = [known[i] for i in ids]
        if any(m.status not in TERMINAL or m.updated_at >= cutoff or m.id in waiting_sends for m in members):
            selection.waiting += 1
            continue
        depth = {}
        for m in sorted(members, key=lambda m: m.id):
            depth[m.id] = _depth(m.id, known)
        month = max(m.publish_at for m in members).strftime("%Y-%m")
        selection.chains.append(Chain(ids=sorted(ids), depth=depth, month=month))
    return selection


def _depth(ident: int, known: dict[int, _Member]) -> int:
    depth = 0
    parent = known[ident].parent
    while parent is not None and parent in known:
        depth += 1
        parent = known[parent].parent
    return depth
