"""The posting queue: which slot a post takes with ``"when": "queue"`` or ``"when": "next"``.

A channel's posting times (:mod:`models.channels.slots`) are wall times in the workspace's zone.
A post sits in a slot when its wall date and time are that slot's; the slot is then taken on each
of its targets by every post that is not archived or expired. A post to several targets takes a
wall time that is a slot on every one of them.

| when    | the post takes                                               | the others                              |
|---------|--------------------------------------------------------------|-----------------------------------------|
| queue   | the earliest slot strictly after now, free on every target   | stay                                      |
| next    | the earliest slot strictly after now no hand-timed post holds | each queued post in the way moves down, once |

Only posts that took their slot from the queue (``from_queue``), still draft, in review or
approved and not yet due, are ever moved; a post given a time by hand holds its slot, and a
queued post moving down goes past it. The chain stops at the first free slot it reaches. Both
resolve to an ordinary wall time at save time, so the reconciler, the calendar and a zone
change treat the post like any other; the moves are edits of the posts' times
(:func:`models.posts.operations.update_post`), so an approved post's queued rows move as
cancel + insert with lineage, all in the caller's one transaction. :func:`plan_slot` writes
nothing: it is also the preview. A post taken out of the queue (archived, or given a time by
hand) leaves its slot free. Nothing beyond ``policy.queue_horizon`` is looked at: no free
slot before then is a 422.
"""

import heapq
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta

from sqlalchemy import select
from sqlalchemy.orm import Session

from models.accounts.workspaces import workspace_zone
from models.actions.tables import ScheduledAction
from models.channels.slots import slot_grid
from models.channels.tables import Channel
from models.core.errors import InvalidInput
from models.core.moves import Actor
from models.core.policy import Policy
from models.core.time_input import resolve_typed
from models.posts.operations import update_post
from models.posts.tables import Post, PostStatus, PostTarget
from models.timing.slot_grid import common_grid, walk_grid
from models.timing.wall_time import InvalidTimezone, ResolvedTime, to_local

QUEUE = "queue"
NEXT = "next"
WHENS = (QUEUE, NEXT)
# A post in one of these holds its slot; archived and expired ones leave it free.
HOLDS_A_SLOT = (PostStatus.DRAFT.value, PostStatus.IN_REVIEW.value, PostStatus.APPROVED.value,
                PostStatus.PUBLISHED.value)
# A queued post in one of these may be moved down by "next".
MOVABLE = (PostStatus.DRAFT.value, PostStatus.IN_REVIEW.value, PostStatus.APPROVED.value)

Slot = tuple[date, time]


def check_when(raw) -> str:
    """``"queue"`` or ``"next"``, else a 422 on ``when``."""
    if raw not in WHENS:
        raise InvalidInput(f"when must be \"queue\" (the next free slot) or \"next\" (the first slot, moving the "
                           f"queue down), not {str(raw)[:20]!r}", field="when", code="bad_when")
    return raw


@dataclass(frozen=True)
class QueueMove:
    """One queued post moved down a slot by "next"."""

    post_id: int
    from_slot: Slot
    to_slot: Slot


@dataclass
class QueuePlan:
    """The slot a post will take, and the queued posts that move down to make room (for "next")."""

    when: str
    slot: Slot
    resolved: ResolvedTime
    moves: list[QueueMove] = field(default_factory=list)

    @property
    def wall_date(self) -> date:
        return self.slot[0]

    @property
    def wall_time(self) -> time:
        return self.slot[1]


@dataclass
class _Holder:
    """A post holding a slot on some channels."""

    post_id: int
    slot: Slot
    movable: bool
    channels: set[int] = field(default_factory=set)


class _Board:
    """Who holds which slot on which channel, over the horizon, as a plan is worked out."""

    def __init__(self, session: Session, workspace_id: int, zone: str, *, now: datetime, policy: Policy,
                 exclude_post_id: int | None, window: tuple[date, date] | None = None):
        self.zone, self.now = zone, now
        try:
            today = to_local(now, zone).date()
        except InvalidTimezone as exc:
            raise InvalidInput(f"the workspace's time zone is not valid: {exc}", field="timezone",
                               code="bad_zone") from None
        self.start, self.end = window or (today - timedelta(days=1), today + timedelta(days=policy.queue_horizon.days))
        channels = list(session.scalars(select(Channel).where(Channel.workspace_id == workspace_id)))
        self.grids = {channel.id: slot_grid(channel) for channel in channels}
        self.names = {channel.id: channel.name for channel in channels}
        self._instants: dict[Slot, ResolvedTime] = {}
        self.holders: dict[int, _Holder] = {}
        found = session.execute(
            select(Post.id, Post.wall_date, Post.wall_time, Post.status, Post.from_queue, PostTarget.channel_id)
            .join(PostTarget, PostTarget.post_id == Post.id)
            .where(Post.workspace_id == workspace_id, Post.status.in_(HOLDS_A_SLOT),
                   Post.wall_date >= self.start, Post.wall_date <= self.end)
            .order_by(Post.id))
        for post_id, day, at, status, from_queue, channel_id in found:
            if post_id == exclude_post_id:
                continue
            holder = self.holders.get(post_id)
            if holder is None:
                slot = (day, at.replace(second=0, microsecond=0))
                movable = bool(from_queue) and status in MOVABLE and self.resolve(slot).instant > now
                holder = self.holders[post_id] = _Holder(post_id, slot, movable)
            holder.channels.add(channel_id)
        self.at: dict[tuple[int, Slot], set[int]] = {}
        for holder in self.holders.values():
            for channel_id in holder.channels:
                self.at.setdefault((channel_id, holder.slot), set()).add(holder.post_id)
        self.placed: set[tuple[int, Slot]] = set()

    def resolve(self, slot: Slot) -> ResolvedTime:
        if slot not in self._instants:
            self._instants[slot] = resolve_typed(slot[0], slot[1], self.zone, "when")
        return self._instants[slot]

    def grid_of(self, channel_ids) -> dict:
        bare = [self.names[c] for c in sorted(channel_ids) if not any(self.grids.get(c, {}).values())]
        if bare:
            raise InvalidInput(f"{bare[0]} has no posting times; give it some (PUT /api/v1/channels/{bare[0]}/slots, "
                               "or its channel page) or pick a time", field="when", code="no_slots", channel=bare[0])
        grid = common_grid([self.grids[c] for c in channel_ids])
        if not any(grid.values()):
            raise InvalidInput(f"{', '.join(self.names[c] for c in sorted(channel_ids))} share no posting time; "
                               "post to them separately or pick a time", field="when", code="no_common_slot")
        return grid

    def slots_after(self, channel_ids, after: Slot | None):
        """The slots of every channel in ``channel_ids``, strictly after ``after`` and after now, in order."""
        start = self.start if after is None else after[0]
        for slot in walk_grid(self.grid_of(channel_ids), start, self.end):
            if after is not None and slot <= after:
                continue
            if self.resolve(slot).instant > self.now:
                yield slot

    def free(self, channel_ids, slot: Slot) -> bool:
        return not any(self.at.get((c, slot)) or (c, slot) in self.placed for c in channel_ids)

    def open_to_next(self, channel_ids, slot: Slot) -> bool:
        """Nothing holds the slot but queued posts that may still move down."""
        return not any((c, slot) in self.placed
                       or any(not self.holders[p].movable for p in self.at.get((c, slot), ()))
                       for c in channel_ids)

    def place(self, channel_ids, slot: Slot) -> list[_Holder]:
        """Claim the slot on each channel; the queued posts it displaces."""
        displaced = []
        for c in channel_ids:
            self.placed.add((c, slot))
            displaced += [self.holders[p] for p in self.at.get((c, slot), ())]
        return displaced

    def lift(self, holder: _Holder) -> None:
        for c in holder.channels:
            self.at.get((c, holder.slot), set()).discard(holder.post_id)

    def no_free_slot(self, what: str) -> InvalidInput:
        return InvalidInput(f"{what} within {self.end - self.start - timedelta(days=1)} of today; add posting times "
                            "or pick a time", field="when", code="no_free_slot")


def plan_slot(session: Session, workspace_id: int, channels: list[Channel], when: str, *, now: datetime,
              policy: Policy, claimed: set[tuple[int, Slot]] = frozenset(), exclude_post_id: int | None = None,
              lock: bool = False) -> QueuePlan:
    """The slot ``when`` gives a post to ``channels`` and, for "next", the posts that move down; writes nothing.

    ``claimed`` holds (channel id, slot) pairs already promised (the earlier lines of a CSV file);
    ``exclude_post_id`` is a post being placed again, whose own slot does not count. With
    ``lock``, the workspace's channel rows are locked first (PostgreSQL), so two posts queued at
    once never take one slot.
    """
    check_when(when)
    if lock:
        session.execute(select(Channel.id).where(Channel.workspace_id == workspace_id).order_by(Channel.id)
                        .with_for_update()).all()
    board = _Board(session, workspace_id, workspace_zone(session, workspace_id), now=now, policy=policy,
                   exclude_post_id=exclude_post_id)
    board.placed |= set(claimed)
    targets = {channel.id for channel in channels}
    fits = board.free if when == QUEUE else board.open_to_next
    slot = next((slot for slot in board.slots_after(targets, None) if fits(targets, slot)), None)
    if slot is None:
        raise board.no_free_slot("no free posting time on " + ", ".join(sorted(c.name for c in channels)))
    plan = QueuePlan(when, slot, board.resolve(slot))
    waiting = [(holder.slot, holder.post_id, holder) for holder in board.place(targets, slot)]
    heapq.heapify(waiting)
    seen = {holder.post_id for _, _, holder in waiting}
    while waiting:
        _, _, holder = heapq.heappop(waiting)
        board.lift(holder)
        to = next((s for s in board.slots_after(holder.channels, holder.slot)
                   if board.open_to_next(holder.channels, s)), None)
        if to is None:
            raise board.no_free_slot(f"post #{holder.post_id} has no later posting time to move down to")
        plan.moves.append(QueueMove(holder.post_id, holder.slot, to))
        for other in board.place(holder.channels, to):
            if other.post_id not in seen:
                seen.add(other.post_id)
                heapq.heappush(waiting, (other.slot, other.post_id, other))
    return plan


def shift_queue(session: Session, workspace_id: int, plan: QueuePlan, *, actor: Actor, now: datetime,
                policy: Policy) -> list[ScheduledAction]:
    """Move the posts ``plan`` moves down, in the caller's transaction; the rows their moves inserted.

    Each move is an edit of the post's time, so an approved post's queued rows are cancelled
    (``rescheduled``) and inserted again at the new instant, pointing back to the old ones.
    """
    new_rows = []
    for move in sorted(plan.moves, key=lambda m: m.to_slot, reverse=True):
        change = update_post(session, workspace_id, move.post_id, wall_date=move.to_slot[0],
                             wall_time=move.to_slot[1], from_queue=True, actor=actor, now=now, policy=policy)
        new_rows += change.new_rows
    return new_rows


def plan_json(plan: QueuePlan, zone: str, titles: dict[int, str] | None = None) -> dict:
    """A plan as the API and the composer's preview show it."""
    return {
        "when": plan.when,
        "local_time": _stamp(plan.slot),
        "publish_at": plan.resolved.instant.isoformat().replace("+00:00", "Z"),
        "time_note": plan.resolved.note,
        "timezone": zone,
        "moves": [{"post_id": move.post_id, "from": _stamp(move.from_slot), "to": _stamp(move.to_slot),
                   **({"body": titles[move.post_id]} if titles and move.post_id in titles else {})}
                  for move in plan.moves],
    }


def _stamp(slot: Slot) -> str:
    return f"{slot[0].isoformat()}T{slot[1]:%H:%M}"


def free_slots(session: Session, workspace_id: int, channels: list[Channel], start: date, end: date, *,
               now: datetime, policy: Policy) -> dict[int, list[Slot]]:
    """Each channel's free posting times from ``start`` to ``end`` (after now): the calendar's drop targets."""
    board = _Board(session, workspace_id, workspace_zone(session, workspace_id), now=now, policy=policy,
                   exclude_post_id=None, window=(start, end))
    found = {}
    for channel in channels:
        grid = board.grids.get(channel.id) or {}
        found[channel.id] = [slot for slot in walk_grid(grid, start, end)
                             if board.resolve(slot).instant > now and board.free({channel.id}, slot)]
    return found
