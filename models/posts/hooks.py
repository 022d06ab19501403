"""What posts tell the floors below them, registered at start-up (see :mod:`models.core.hooks`)."""

from collections import Counter
from datetime import date, datetime

from sqlalchemy import func, select, text
from sqlalchemy.orm import Session

from models.actions.tables import CancelKind, Origin, ScheduledAction
from models.core.hooks import CalendarEntry, Gauge, Hooks, Stop
from models.core.moves import Actor
from models.core.policy import Policy
from models.posts.reading import list_posts
from models.posts.reconciler import reconcile_post
from models.posts.tables import Post, PostStatus, post_id_of
from models.posts.threads import may_be_followed, mint_follow_ups


def register(hooks: Hooks) -> None:
    """Put the posts' parts on every hook they answer."""
    hooks.add_pre_send_check(Origin.RECONCILER.value, stop_rows_of_drafts)
    hooks.add_gauge(Gauge("tickwork_posts", "Posts by status, all workspaces", posts_by_status, label="status"))
    hooks.add_calendar_source(draft_entries)
    hooks.add_zone_change("posts", reconcile_approved_posts)
    hooks.add_media_users(posts_using_media)
    # A head the reconciler minted, or a person's Post now of it: either way its thread follows.
    hooks.add_after_publish(Origin.RECONCILER.value, mint_follow_ups, concerns=may_be_followed)
    hooks.add_after_publish(Origin.PERSON.value, mint_follow_ups, concerns=may_be_followed)


def stop_rows_of_drafts(session: Session, rows: list[ScheduledAction], now: datetime) -> dict[int, Stop]:
    """A row the reconciler minted whose post went back to draft is withdrawn at the last moment, not sent.

    The posts are read with a share lock on PostgreSQL (SQLite's writer lock is already
    held), so an unapprove either lands before this claim, and the row is stopped, or
    waits for it, and then finds the row in flight and leaves it.
    """
    by_post = {post_id_of(row.thing_id): row for row in rows}
    by_post.pop(None, None)
    if not by_post:
        return {}
    query = select(Post.id, Post.status).where(Post.id.in_(list(by_post)))
    if session.get_bind().dialect.name == "postgresql":
        query = query.with_for_update(read=True)
    stopped = {}
    for post_id, status in session.execute(query):
        if status == PostStatus.DRAFT.value:
            for row in rows:
                if post_id_of(row.thing_id) == post_id:
                    stopped[row.id] = Stop(f"not sent: post #{post_id} went back to draft after this row was queued",
                                           cancel_kind=CancelKind.ORPHANED.value)
    return stopped


_USING_MEDIA = {
    "postgresql": text("SELECT id FROM posts WHERE workspace_id = :workspace_id AND status <> 'archived' "
                       "AND (CAST(media AS jsonb) @> CAST(:needle AS jsonb) "
                       "OR jsonb_path_exists(CAST(variants AS jsonb), '$.*.media[*] ? (@ == $id)', "
                       "jsonb_build_object('id', CAST(:media_id AS integer))) "
                       "OR COALESCE(CAST(thread AS jsonb), '[]') @> CAST(:in_items AS jsonb) "
                       "OR COALESCE(CAST(first_comment AS jsonb), '{}') @> CAST(:in_item AS jsonb)) ORDER BY id"),
    "sqlite": text("SELECT id FROM posts WHERE workspace_id = :workspace_id AND status <> 'archived' "
                   "AND (EXISTS (SELECT 1 FROM json_each(posts.media) WHERE json_each.value = :media_id) "
                   "OR EXISTS (SELECT 1 FROM json_each(posts.variants) AS variant, "
                   "json_each(variant.value, '$.media') AS item WHERE item.value = :media_id) "
                   "OR EXISTS (SELECT 1 FROM json_each(COALESCE(posts.thread, '[]')) AS item, "
                   "json_each(item.value, '$.media') AS used WHERE used.value = :media_id) "
                   "OR EXISTS (SELECT 1 FROM json_each(COALESCE(posts.first_comment, '{}'), '$.media') AS used "
                   "WHERE used.value = :media_id)) ORDER BY id"),
}


def posts_using_media(session: Session, workspace_id: int, media_id: int) -> list[str]:
    """The posts not archived whose media, variants' media, thread items' media or first comment's media
    include ``media_id`` (a published post still shows it)."""
    query = _USING_MEDIA[session.get_bind().dialect.name]
    found = session.scalars(query, {"workspace_id": workspace_id, "media_id": media_id, "needle": f"[{media_id}]",
                                    "in_items": f'[{{"media": [{media_id}]}}]', "in_item": f'{{"media": [{media_id}]}}'})
    return [f"post {post_id}" for post_id in found]


def posts_by_status(session: Session, now: datetime) -> dict[str, float]:
    """How many posts there are in each status."""
    counts = {status.value: 0.0 for status in PostStatus}
    counts.update({status: float(n) for status, n in session.execute(
        select(Post.status, func.count()).group_by(Post.status))})
    return counts


def draft_entries(session: Session, workspace_id: int, first: date, last: date, zone: str) -> list[CalendarEntry]:
    """Draft posts on the calendar, at their wall date and time (approved ones show through their rows)."""
    return [
        CalendarEntry(day=post.wall_date, at=post.wall_time, title=post.body[:40], status=PostStatus.DRAFT.value,
                      kind="post", ref=post.id)
        for post in list_posts(session, workspace_id, start=first, end=last, statuses=[PostStatus.DRAFT.value],
                               limit=500)
    ]


def reconcile_approved_posts(session: Session, workspace_id: int, now: datetime, actor: Actor,
                             policy: Policy) -> dict[str, int]:
    """After a zone change, every approved post's rows move to its wall time in the new zone (cancel + insert)."""
    counts: Counter = Counter()
    approved = session.scalars(select(Post.id).where(Post.workspace_id == workspace_id,
                                                     text("posts.status = 'approved'")))
    for post_id in list(approved):
        counts.update(reconcile_post(session, workspace_id, post_id, now=now, policy=policy, actor=actor).counts)
    return {"posts_moved": counts["rescheduled"], "posts_inserted": counts["inserted"]}
