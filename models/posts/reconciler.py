"""The reconciler: keeps ``scheduled_actions`` in step with approved posts.

It runs every minute (and on one post whenever a person approves or edits it, through the
same :func:`reconcile_post`). Per post and target:

| post                 | the target's row                                         | the reconciler                                  |
|----------------------|----------------------------------------------------------|-------------------------------------------------|
| approved             | none active, no published / failed / person-cancelled row | insert, origin ``reconciler`` (its own savepoint) |
| approved             | none active, but such terminal history exists            | skip (``skip_terminal``)                         |
| approved             | queued, ours, at another instant or with another payload | cancel (``rescheduled``) + insert with lineage, whatever its age |
| draft, or target gone | queued, ours, older than the age gate                   | cancel (``orphaned``)                            |
| draft, or target gone | queued, younger than the age gate                       | leave (``skip_young``)                           |
| any                  | ``submitted``                                            | never touch (``skip_in_flight``)                 |
| any                  | queued, minted by a person (Post now, the API)           | leave (``skip_not_ours``)                        |
| archived / published | queued (a person's Retry or Post now)                    | leave (``skip_terminal_parent``)                 |

The wall time is resolved in the workspace's zone as it is now, so a changed zone moves
rows too. A target's payload is what goes there (:func:`models.posts.content.content_for`: its
variant, else the main body and media), so an edited variant moves that target's row alone. An approved post whose every target's latest row is published becomes
``published``.

Each post is reconciled in its own short write transaction that reads the post, with its
row lock on PostgreSQL (SQLite's writer lock is already held), and then its rows: a
concurrent edit is either fully before or fully after, never undone by a stale view. The
periodic pass first looks at each post without the lock (:func:`decide` writes nothing)
and opens the write transaction only when there is something to write. A run's work is
one pass over approved posts and queued rows the reconciler minted; the terminal history
is consulted only by indexed lookups on each post's own rows.
"""

from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from typing import Callable

from sqlalchemy import select, text
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session

from models.actions import lifecycle
from models.accounts.tables import Workspace
from models.actions.archived_keys import archived_blocking_keys
from models.actions.tables import ACTIVE_STATUSES, CancelKind, Origin, ScheduledAction, Status, blocks_minting_again
from models.clock.runs import run_recorded
from models.core.database import read_session, write_session
from models.core.errors import NotFound
from models.actions.guard import DuplicateActiveAction, PublishGuardViolation
from models.core.moves import Actor
from models.core.policy import Policy
from models.posts import lifecycle as post_lifecycle
from models.posts.tables import ACTION_TYPE, Post, PostStatus, post_id_of
from models.posts.reading import delivery_of, get_post, post_payload, post_rows, post_targets, resolve_post_time
from models.actions.scheduling import NewAction, insert_action
from models.timing.wall_time import InvalidTimezone, load_zone
from models.timing.clock import Clock

JOB_KIND = "reconcile"
COUNTS = (
    "inserted",
    "rescheduled",
    "removed",
    "unchanged",
    "posts_published",
    "skip_terminal",
    "skip_young",
    "skip_in_flight",
    "skip_not_ours",
    "skip_terminal_parent",
    "skip_duplicate",
)


def terminal_history_keys(rows: list[ScheduledAction]) -> set[str]:
    """Targets that must never get a new row from the reconciler (see :func:`blocks_minting_again`)."""
    return {row.target_key for row in rows if blocks_minting_again(row)}


@dataclass
class PostReconciled:
    """What one post's reconcile did: the post as it is now, the rows it inserted, its counts."""

    post: Post
    new_rows: list[ScheduledAction] = field(default_factory=list)
    counts: Counter = field(default_factory=Counter)


@dataclass
class Decision:
    """What the rules say to do for one post, before anything is written."""

    instant: datetime | None = None
    payloads: dict = field(default_factory=dict)  # per target: what its row carries (its variant, or the main post)
    inserts: list = field(default_factory=list)  # channels with no row, and no terminal history
    moves: list = field(default_factory=list)  # (our queued row, its channel) at the wrong instant or payload
    withdrawals: list = field(default_factory=list)  # our queued orphans past the age gate
    mark_published: bool = False
    sent_at: datetime | None = None  # when the last target was sent, the post's published_at
    counts: Counter = field(default_factory=Counter)  # the skips, and what is already in place

    @property
    def writes(self) -> bool:
        return bool(self.inserts or self.moves or self.withdrawals or self.mark_published)


def decide(session: Session, post: Post, *, now: datetime, policy: Policy) -> Decision:
    """Apply the table in this module's docstring to ``post`` and its rows; writes nothing.

    Raises :class:`~models.wall_time.InvalidTimezone` when the post is approved and its
    workspace's zone is broken.
    """
    decision = Decision()
    rows = post_rows(session, post.workspace_id, [post.id])[post.id]
    active = {row.target_key: row for row in rows if row.status in ACTIVE_STATUSES}

    if post.status in (PostStatus.ARCHIVED.value, PostStatus.PUBLISHED.value):
        # Terminal-parent gate: what is still active was a person's explicit Retry or Post now.
        decision.counts["skip_terminal_parent"] += len(active)
        return decision

    targets: dict = {}
    if post.status == PostStatus.APPROVED.value:
        zone = session.scalar(select(Workspace.timezone).where(Workspace.id == post.workspace_id))
        decision.instant = resolve_post_time(post, zone).instant
        targets = {channel.name: channel for channel in post_targets(session, post.id)}
        # Retention keeps the keys of the history it archived: they gate as the live rows do.
        archived = archived_blocking_keys(session, post.workspace_id, {ACTION_TYPE}, {post.thing_id})
        gated = terminal_history_keys(rows) | {target for _, target in archived}
        for name, channel in targets.items():
            decision.payloads[name] = post_payload(post, name)
            row = active.get(name)
            if row is None:
                if name in gated:
                    decision.counts["skip_terminal"] += 1
                else:
                    decision.inserts.append(channel)
            elif row.status == Status.SUBMITTED.value:
                decision.counts["skip_in_flight"] += 1
            elif row.origin != Origin.RECONCILER.value:
                decision.counts["skip_not_ours"] += 1
            elif (row.publish_at, row.payload, row.channel_id) != (decision.instant, decision.payloads[name],
                                                                     channel.id):
                decision.moves.append((row, channel))
            else:
                decision.counts["unchanged"] += 1
        # A target whose only rows were archived counts as sent when one of them was published.
        sent_archived = {target for (_, target), published in archived.items() if published}
        delivery = delivery_of(list(targets), rows)
        decision.mark_published = delivery.total > 0 and all(
            t.status == Status.PUBLISHED.value or (t.latest is None and t.channel in sent_archived)
            for t in delivery.targets)
        if decision.mark_published:
            sent = [t.latest.finished_at for t in delivery.targets if t.latest is not None and t.latest.finished_at]
            decision.sent_at = max(sent, default=None)

    for name, row in active.items():
        if name in targets:
            continue
        if row.status == Status.SUBMITTED.value:
            decision.counts["skip_in_flight"] += 1
        elif row.origin != Origin.RECONCILER.value:
            decision.counts["skip_not_ours"] += 1
        elif row.created_at > now - policy.age_gate:
            decision.counts["skip_young"] += 1
        else:
            decision.withdrawals.append(row)
    return decision


def reconcile_post(
    session: Session, workspace_id: int, post_id: int, *, now: datetime, policy: Policy, actor: Actor
) -> PostReconciled:
    """Bring one post's rows in line with the post, inside the caller's write transaction.

    The post is read under its lock, so the decision rests on its latest committed version.
    Raises :class:`~models.wall_time.InvalidTimezone` when an approved post's workspace zone
    is broken, and :class:`~models.errors.NotFound` when there is no such post.
    """
    post = get_post(session, workspace_id, post_id, lock=True)
    decision = decide(session, post, now=now, policy=policy)
    done = PostReconciled(post, counts=Counter(decision.counts))
    for channel in decision.inserts:
        _insert(session, post, channel, decision.instant, decision.payloads[channel.name], done, now=now, actor=actor)
    for row, channel in decision.moves:
        _replace_row(session, post, row, channel, decision.instant, decision.payloads[channel.name], done, now=now,
                     actor=actor)
    why = "target removed" if post.status == PostStatus.APPROVED.value else "no longer approved"
    for row in decision.withdrawals:
        outcome = lifecycle.cancel(session, row.id, kind=CancelKind.ORPHANED, now=now, actor=actor,
                                   workspace_id=post.workspace_id,
                                   reason=f"post #{post.id} {why}")
        done.counts["removed" if outcome.ok else "skip_in_flight"] += 1
    if decision.mark_published and post_lifecycle.publish(session, post, now=now, actor=actor,
                                                          sent_at=decision.sent_at).ok:
        done.counts["posts_published"] += 1
    return done


def _insert(session, post, channel, instant, payload, done, *, now, actor, rescheduled_from_id=None) -> bool:
    new = NewAction(action_type=ACTION_TYPE, channel=channel, target_key=channel.name, payload=payload,
                    publish_at=instant, thing_id=post.thing_id)
    reason = f"post #{post.id} moved" if rescheduled_from_id else f"post #{post.id} approved"
    try:
        row = insert_action(session, post.workspace_id, new, now=now, actor=actor, origin=Origin.RECONCILER,
                            rescheduled_from_id=rescheduled_from_id, reason=reason)
    except DuplicateActiveAction:
        done.counts["skip_duplicate"] += 1
        return False
    except PublishGuardViolation:
        done.counts["skip_terminal"] += 1
        return False
    done.new_rows.append(row)
    if rescheduled_from_id is None:
        done.counts["inserted"] += 1
    return True


def _replace_row(session, post, row, channel, instant, payload, done, *, now, actor) -> None:
    """Cancel (kind ``rescheduled``) and insert the replacement, together or not at all."""
    savepoint = session.begin_nested()
    outcome = lifecycle.cancel(session, row.id, kind=CancelKind.RESCHEDULED, now=now, actor=actor,
                               workspace_id=post.workspace_id,
                               reason=f"post #{post.id} now at {instant.isoformat()}")
    if not outcome.ok:
        savepoint.rollback()
        done.counts["skip_in_flight"] += 1  # claimed between our read and our cancel
        return
    counts_before = Counter(done.counts)
    if _insert(session, post, channel, instant, payload, done, now=now, actor=actor, rescheduled_from_id=row.id):
        savepoint.commit()
        done.counts["rescheduled"] += 1
    else:
        savepoint.rollback()  # keep the old row rather than leave the target with none
        session.refresh(row)
        done.counts = counts_before + Counter(skip_duplicate=1)


# -- the periodic pass ----------------------------------------------------------------------


@dataclass(frozen=True)
class WorkspaceWork:
    workspace_id: int
    name: str
    zone: str
    post_ids: list[int]


def plan_pass(session: Session) -> list[WorkspaceWork]:
    """Which posts a pass visits: every approved post, and every post that still has a queued
    row the reconciler minted (drafts to withdraw). Both lists come from partial indexes, so
    published and archived posts and terminal rows cost nothing."""
    by_workspace: dict[int, set[int]] = {}
    # Literal predicates, so SQLite recognises its partial indexes.
    for workspace_id, post_id in session.execute(
        select(Post.workspace_id, Post.id).where(text("posts.status = 'approved'"))
    ):
        by_workspace.setdefault(workspace_id, set()).add(post_id)
    # No DISTINCT here: to avoid its sort SQLite would walk a whole-table index, whose
    # length is the history; the queued rows' partial index is the short list.
    for workspace_id, thing_id in set(session.execute(
        select(ScheduledAction.workspace_id, ScheduledAction.thing_id)
        .where(
            text("scheduled_actions.status = 'queued'"),
            ScheduledAction.action_type == ACTION_TYPE,
            ScheduledAction.origin == Origin.RECONCILER.value,
        )
    )):
        post_id = post_id_of(thing_id)
        if post_id is not None:
            by_workspace.setdefault(workspace_id, set()).add(post_id)
    if not by_workspace:
        return []
    workspaces = session.execute(
        select(Workspace.id, Workspace.name, Workspace.timezone).where(Workspace.id.in_(list(by_workspace)))
    )
    return [
        WorkspaceWork(ident, name, zone, sorted(by_workspace[ident]))
        for ident, name, zone in sorted(workspaces, key=lambda w: w[0])
    ]


def empty_summary() -> dict:
    summary = {key: 0 for key in COUNTS}
    summary.update(workspaces=0, posts=0, workspaces_skipped=0, errors=[])
    return summary


def reconcile_workspaces(
    plan: list[WorkspaceWork],
    *,
    engine: Engine | None = None,
    clock: Clock,
    policy: Policy,
    actor: Actor,
    announce: Callable[[list[ScheduledAction]], None] | None = None,
) -> dict:
    """Reconcile each planned post in its own write transaction; returns the summary.

    A workspace whose zone is broken is skipped with its error in ``errors``; the others
    go on. ``announce`` is given each post's new rows once they are committed.
    """
    summary = empty_summary()
    for work in plan:
        try:
            load_zone(work.zone)
        except InvalidTimezone as exc:
            _skip_workspace(summary, work, exc)
            continue
        summary["workspaces"] += 1
        for post_id in work.post_ids:
            try:
                counts, new_rows = _reconcile_one(work.workspace_id, post_id, engine=engine, clock=clock,
                                                  policy=policy, actor=actor)
            except InvalidTimezone as exc:  # the zone broke during the pass
                _skip_workspace(summary, work, exc)
                break
            except NotFound:
                continue
            summary["posts"] += 1
            for key, count in counts.items():
                summary[key] += count
            if announce and new_rows:
                announce(new_rows)
    return summary


def _reconcile_one(workspace_id, post_id, *, engine, clock: Clock, policy, actor) -> tuple[Counter, list]:
    """Look first without the write lock; take it only when something is to be written.

    A look that finds nothing to do may be a moment stale; that costs nothing, because every
    edit reconciles its own post in its own transaction, and the next pass looks again.
    Whatever is written is decided again under the post's lock.
    """
    with read_session(engine) as session:
        decision = decide(session, get_post(session, workspace_id, post_id), now=clock.now(), policy=policy)
    if not decision.writes:
        return decision.counts, []
    with write_session(engine) as session:
        result = reconcile_post(session, workspace_id, post_id, now=clock.now(), policy=policy, actor=actor)
    return result.counts, result.new_rows


def _skip_workspace(summary: dict, work: WorkspaceWork, exc: Exception) -> None:
    summary["workspaces_skipped"] += 1
    summary["errors"].append({"workspace_id": work.workspace_id, "workspace": work.name, "error": str(exc)})


def run_reconciler(
    *,
    engine: Engine | None = None,
    clock: Clock,
    policy: Policy,
    announce: Callable[[list[ScheduledAction]], None] | None = None,
) -> dict:
    """One whole reconciler pass, recorded as a ``reconcile`` clock run; returns its summary.

    Safe to run in several processes at once: every decision is made under the post's lock,
    and every write is a guarded move or a per-row insert.
    """

    def one_pass(clock_run_id: int) -> dict:
        with read_session(engine) as session:
            plan = plan_pass(session)
        return reconcile_workspaces(plan, engine=engine, clock=clock, policy=policy,
                                    actor=Actor.job(JOB_KIND, clock_run_id), announce=announce)

    return run_recorded(JOB_KIND, one_pass, clock=clock, engine=engine)
