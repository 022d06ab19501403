"""Threads and first comments: what follows a post's head on a target, one row at a time.

A post may carry a ``thread`` (the items after its head, each ``{"body", "media"}``) for targets
whose network has replies, and a ``first_comment`` (``{"body", "media"}``; the API also takes a
plain string, the body) for targets whose network has comments. Each provider module declares
which it has: ``replies = True`` (X, Bluesky, Mastodon, Threads), or ``comments = Accepts(...)``,
the rules a comment's text and media meet there (LinkedIn, Facebook, Instagram). A target whose
network has neither refuses a post that carries either, at save (a 422 naming the channel), and
so does a post whose thread (or comment) no target would take; otherwise each target takes what
its network has and posts the head alone when it has nothing else. The items are shared: a
target's variant (:mod:`models.posts.content`) replaces its head, never its thread or comment,
so every target that takes a thread sends the same items, each held to every such target's rules.

Every item is a row of its own, keyed so the dedupe index and the publish guard apply:

| row                | ``thing_id``          | minted                                               | its payload adds |
|--------------------|-----------------------|------------------------------------------------------|------------------|
| the head           | ``post:<id>``         | by the reconciler, at the post's time                | —                |
| thread item *n* ≥ 2 | ``post:<id>#<n>``     | by :func:`mint_follow_ups`, in the transaction that records item *n − 1* published, due at once | ``thread_item``, ``reply_to`` = ``{"root", "parent"}``: the head's and item *n − 1*'s provider ids |
| the first comment  | ``post:<id>#comment`` | the same, after the head                             | ``comment_on``: the head's provider id |

All are origin ``reconciler``, ``target_key`` the channel. The reconciler minds heads only: it
never moves or removes an item row (its keys are not ``post:<id>``). A row is minted once: the
hook runs once per publish, an item with a row already is not minted again, and the dedupe index
and the guard stand behind both. So a thread goes out in order and nothing twice: item *n* exists
only once item *n − 1* was published. A failed item stops the rest of that thread on that
target (nothing follows a row that did not go out); a person's retry of it, once published,
mints the next, and the thread continues from there. Archiving the post cancels its queued items
and mints no more. The post's API answer shows each target's follow-ups (:func:`follow_ups_of`).
"""

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.orm import Session

from models.actions.guard import DuplicateActiveAction, PublishGuardViolation
from models.actions.scheduling import NewAction, insert_action
from models.actions.tables import Origin, ScheduledAction, Status
from models.channels.providers import PROVIDERS, accepts_for
from models.channels.providers.accepts import Accepts, Broken, Count, media_breaks, text_breaks, text_counts
from models.channels.tables import Channel
from models.core.errors import InvalidInput
from models.core.moves import Actor
from models.media.library import facts_of, media_in_order
from models.posts.checks import known_facts, media_ids
from models.posts.tables import ACTION_TYPE, Post, PostStatus, thing_id_of

MAX_THREAD = 24  # items after the head
MAX_ITEM_BODY = 100_000  # characters, before any network's own rule
COMMENT = "comment"
THREAD = "thread"
ITEM_FIELDS = {"body", "media"}


# -- what a network has ---------------------------------------------------------------------


def has_replies(kind: str) -> bool:
    """Whether a network of ``kind`` posts a reply to a post (a thread's items)."""
    return bool(getattr(PROVIDERS.get(kind), "replies", False))


def comment_rules(kind: str) -> Accepts | None:
    """What a comment under a post meets on a network of ``kind``; None when it has no comments."""
    return getattr(PROVIDERS.get(kind), "comments", None)


def takers(channels: list[Channel], what: str) -> list[tuple[Channel, Accepts]]:
    """The targets that take a ``THREAD``'s items or the ``COMMENT``, each with the rules an item meets there: a
    reply is a post of its network (its own rules), a comment meets the network's comment rules."""
    if what == COMMENT:
        return [(channel, rules) for channel in channels if (rules := comment_rules(channel.kind)) is not None]
    return [(channel, accepts_for(channel.kind)) for channel in channels if has_replies(channel.kind)]


@dataclass(frozen=True)
class ItemFit:
    """How one thread item or the first comment fits one target, for the composer's counter under it."""

    channel: Channel
    counts: list[Count]
    broken: Broken | None  # the first rule the item breaks there, as the save would refuse it


def fit_item(session: Session, workspace_id: int, body: str, media, channels: list[Channel],
             what: str) -> list[ItemFit]:
    """Each target that takes the item (``THREAD`` or ``COMMENT``): its text counted as that network counts, and the
    first rule broken: the rules the save holds it to (:func:`check_thread`, :func:`check_first_comment`)."""
    facts = known_facts(session, workspace_id, media)
    fits = []
    for channel, accepts in takers(channels, what):
        broken = text_breaks(accepts, channel.config, body) if body else None
        fits.append(ItemFit(channel, text_counts(accepts, channel.config, body),
                            broken or media_breaks(accepts, facts, body, channel.config)))
    return fits


# -- the keys ---------------------------------------------------------------------------------


def item_thing_id(post_id: int, item: int | str) -> str:
    """The ``thing_id`` of thread item ``item`` (2, 3, ...) or of the first comment (``"comment"``)."""
    return f"{thing_id_of(post_id)}#{item}"


def position_of(thing_id: str | None) -> tuple[int, int | str] | None:
    """``(post id, item)`` a row's ``thing_id`` names: item 1 for the head, n for ``#n``, ``"comment"``."""
    if not thing_id or not thing_id.startswith("post:"):
        return None
    post, _, item = thing_id[5:].partition("#")
    if not post.isdecimal():
        return None
    if not item:
        return int(post), 1
    if item == COMMENT:
        return int(post), COMMENT
    if item.isdecimal() and item.isascii() and 2 <= int(item) <= MAX_THREAD + 1:
        return int(post), int(item)
    return None


def follow_up_keys(post_id: int) -> list[str]:
    """Every ``thing_id`` a follow-up of post ``post_id`` may have."""
    return [item_thing_id(post_id, n) for n in range(2, MAX_THREAD + 2)] + [item_thing_id(post_id, COMMENT)]


def follow_up_rows(session: Session, workspace_id: int, post_id: int) -> list[ScheduledAction]:
    """The rows of a post's thread items and first comment (any status), oldest first; an indexed lookup."""
    return list(session.scalars(
        select(ScheduledAction).where(ScheduledAction.workspace_id == workspace_id,
                                      ScheduledAction.action_type == ACTION_TYPE,
                                      ScheduledAction.thing_id.in_(follow_up_keys(post_id)))
        .order_by(ScheduledAction.id)))


# -- the checks at save -----------------------------------------------------------------------


def _item(value, field: str, *, text_alone: bool = False) -> dict:
    """One item as stored, ``{"body", "media"}``, checked for shape (a plain string is a body, where allowed)."""
    if text_alone and isinstance(value, str):
        value = {"body": value}
    if not isinstance(value, dict):
        shape = '{"body": ..., "media": [...]} or a string' if text_alone else '{"body": ..., "media": [...]}'
        raise InvalidInput(f"{field} must be {shape}", field=field, code="wrong_type")
    unknown = sorted(set(value) - ITEM_FIELDS)
    if unknown:
        raise InvalidInput(f"unknown field {unknown[0]!r} in {field}; expected body, media", field=field,
                           code="unknown_field")
    body = value.get("body", "")
    if not isinstance(body, str):
        raise InvalidInput(f"{field}.body must be a string", field=f"{field}.body", code="wrong_type")
    if "\x00" in body:
        raise InvalidInput(f"{field}.body must not contain NUL characters", field=f"{field}.body",
                           code="bad_character")
    if len(body) > MAX_ITEM_BODY:
        raise InvalidInput(f"{field}.body is longer than {MAX_ITEM_BODY} characters", field=f"{field}.body",
                           code="too_long")
    try:
        media = media_ids(value.get("media"))
    except InvalidInput as exc:
        raise InvalidInput(exc.message, field=f"{field}.media", code=exc.code) from None
    if not body.strip() and not media:
        raise InvalidInput(f"{field} needs a body or media", field=f"{field}.body", code="missing")
    return {"body": body, "media": media}


def _meets(session: Session, workspace_id: int, item: dict, field: str, rules: list[tuple[Channel, Accepts]]) -> None:
    """``item`` against each target's rules (its text as the network counts it, its media); a 422 naming the channel."""
    try:
        facts = [facts_of(found) for found in media_in_order(session, workspace_id, item["media"])]
    except InvalidInput as exc:  # an id not in the library
        raise InvalidInput(exc.message, field=f"{field}.media", code=exc.code) from None
    for channel, accepts in rules:
        broken = text_breaks(accepts, channel.config, item["body"]) if item["body"] else None
        if broken is not None:
            raise InvalidInput(f"{channel.name} ({channel.kind}) refuses {field}: {broken.message}",
                               field=f"{field}.body", code="too_long", channel=channel.name, rule=broken.rule)
        broken = media_breaks(accepts, facts, item["body"], channel.config)
        if broken is not None:
            where = "body" if broken.rule.startswith("caption.") else "media"
            raise InvalidInput(f"{channel.name} ({channel.kind}) refuses {field}'s {where}: {broken.message}",
                               field=f"{field}.{where}", code="media_refused" if where == "media" else "too_long",
                               channel=channel.name, rule=broken.rule)


def _refuse_targets_without_either(channels: list[Channel], field: str) -> None:
    for channel in channels:
        if not has_replies(channel.kind) and comment_rules(channel.kind) is None:
            raise InvalidInput(f"{channel.name} ({channel.kind}) has neither replies nor comments: it takes no "
                               f"{field.replace('_', ' ')}; remove it from the targets or drop the {field}",
                               field=field, code="no_follow_ups", channel=channel.name)


def check_thread(session: Session, workspace_id: int, thread, channels: list[Channel]) -> list[dict] | None:
    """The thread as stored (None for none), if every target can take it; else a 422 naming the item or channel."""
    if thread is None or thread == []:
        return None
    if not isinstance(thread, list):
        raise InvalidInput('thread must be a list of items, each {"body": ..., "media": [...]}', field="thread",
                           code="wrong_type")
    if len(thread) > MAX_THREAD:
        raise InvalidInput(f"a thread has at most {MAX_THREAD} items after the post", field="thread",
                           code="too_many")
    items = [_item(value, f"thread[{index}]") for index, value in enumerate(thread)]
    _refuse_targets_without_either(channels, "thread")
    replying = [channel for channel in channels if has_replies(channel.kind)]
    if not replying:
        raise InvalidInput("no target has replies to carry a thread (X, Bluesky, Mastodon, Threads have them)",
                           field="thread", code="no_follow_ups")
    rules = takers(channels, THREAD)
    for index, item in enumerate(items):
        _meets(session, workspace_id, item, f"thread[{index}]", rules)
    return items


def check_first_comment(session: Session, workspace_id: int, comment, channels: list[Channel]) -> dict | None:
    """The first comment as stored (None for none), if every target can take it; else a 422."""
    if comment is None or comment == "":
        return None
    item = _item(comment, "first_comment", text_alone=True)
    _refuse_targets_without_either(channels, "first_comment")
    commenting = takers(channels, COMMENT)
    if not commenting:
        raise InvalidInput("no target has comments to carry a first comment (LinkedIn, Facebook, Instagram have "
                           "them)", field="first_comment", code="no_follow_ups")
    _meets(session, workspace_id, item, "first_comment", commenting)
    return item


# -- minting the next row ---------------------------------------------------------------------


def _post_for_follow_up(session: Session, post_id: int) -> Post | None:
    """The post, read with a share lock on PostgreSQL (SQLite's writer lock is held already): an archive
    either lands before this publish's transaction, and nothing more is minted, or waits for it."""
    query = select(Post).where(Post.id == post_id).execution_options(populate_existing=True)
    if session.get_bind().dialect.name == "postgresql":
        query = query.with_for_update(read=True)
    return session.scalar(query)


@dataclass(frozen=True)
class FollowUp:
    """What follows a published row on its target: the item's key, its content and what it answers."""

    item: int | str
    content: dict
    extra: dict


def next_follow_ups(post: Post, channel: Channel, row, provider_id: str | None) -> list[FollowUp]:
    """What follows ``row`` (just published with ``provider_id``) on ``channel``: the next thread item, and
    after the head the first comment; nothing after a comment or the thread's last item."""
    position = position_of(row.thing_id)
    if position is None or position[1] == COMMENT or not provider_id:
        return []
    _, item = position
    follow: list[FollowUp] = []
    thread = post.thread or []
    if has_replies(channel.kind) and item - 1 < len(thread):
        root = provider_id if item == 1 else ((row.payload or {}).get("reply_to") or {}).get("root")
        if root:
            follow.append(FollowUp(item + 1, thread[item - 1],
                                   {"thread_item": item + 1, "reply_to": {"root": root, "parent": provider_id}}))
    if item == 1 and post.first_comment and comment_rules(channel.kind) is not None:
        follow.append(FollowUp(COMMENT, post.first_comment, {"comment_on": provider_id}))
    return follow


def may_be_followed(row) -> bool:
    """Whether something may follow ``row`` once published: a post's head or thread item (read off its key alone)."""
    if row.action_type != ACTION_TYPE:
        return False
    position = position_of(row.thing_id)
    return position is not None and position[1] != COMMENT


def mint_follow_ups(session: Session, published: list[tuple], now: datetime, actor: Actor) -> list[ScheduledAction]:
    """The ``after publish`` hook for origins ``reconciler`` and ``person`` (Post now): mint what follows each
    published row of a post, due now, origin ``reconciler``.

    Runs in the transaction that records the publish, so the next item exists exactly when its
    parent is published. An item that has a row already (of any status) is never minted again.
    """
    minted: list[ScheduledAction] = []
    for row, provider_id in published:
        if row.action_type != ACTION_TYPE:
            continue
        position = position_of(row.thing_id)
        if position is None or position[1] == COMMENT:
            continue
        # The channel first (one read per channel in a transaction): a network with neither replies nor
        # comments has nothing to follow, and its post is not read at all.
        channel = session.get(Channel, row.channel_id)
        if channel is None or not (has_replies(channel.kind) or comment_rules(channel.kind) is not None):
            continue
        post = _post_for_follow_up(session, position[0])
        if post is None or post.workspace_id != row.workspace_id or post.status == PostStatus.ARCHIVED.value:
            continue
        if not post.thread and not post.first_comment:
            continue
        for follow in next_follow_ups(post, channel, row, provider_id):
            new = _mint(session, post, channel, row, follow, now=now, actor=actor)
            if new is not None:
                minted.append(new)
    return minted


def _mint(session, post: Post, channel: Channel, parent, follow: FollowUp, *, now: datetime,
          actor: Actor) -> ScheduledAction | None:
    key = item_thing_id(post.id, follow.item)
    exists = session.scalar(select(ScheduledAction.id).where(
        ScheduledAction.workspace_id == post.workspace_id, ScheduledAction.action_type == ACTION_TYPE,
        ScheduledAction.thing_id == key, ScheduledAction.target_key == parent.target_key).limit(1))
    if exists is not None:
        return None
    payload = {"post_id": post.id, "body": follow.content.get("body", ""),
               "media": list(follow.content.get("media") or []), **follow.extra}
    what = (f"first comment of post #{post.id}" if follow.item == COMMENT
            else f"thread item {follow.item} of {len(post.thread or []) + 1} of post #{post.id}")
    new = NewAction(action_type=ACTION_TYPE, channel=channel, target_key=parent.target_key, payload=payload,
                    publish_at=now, thing_id=key)
    try:
        return insert_action(session, post.workspace_id, new, now=now, actor=actor, origin=Origin.RECONCILER,
                             reason=f"{what}, after action #{parent.id} was published")
    except (DuplicateActiveAction, PublishGuardViolation):
        return None  # minted already, or sent already: at most once


# -- what the post shows ----------------------------------------------------------------------


def follow_ups_of(post: Post, channel: Channel, rows: list[ScheduledAction]) -> list[dict]:
    """Each follow-up the post has on ``channel``, in order, with its latest row's status: ``waiting`` for one
    not minted yet, and the item that stopped the rest, when one failed."""
    wanted: list[int | str] = []
    if has_replies(channel.kind):
        wanted += list(range(2, len(post.thread or []) + 2))
    if post.first_comment and comment_rules(channel.kind) is not None:
        wanted.append(COMMENT)
    latest: dict = {}
    for row in rows:
        position = position_of(row.thing_id)
        if position is not None and row.target_key == channel.name:
            latest[position[1]] = row
    shown, stopped_by = [], None
    for item in wanted:
        row = latest.get(item)
        entry = {"item": item, "status": row.status if row is not None else "waiting",
                 "action_id": row.id if row is not None else None,
                 "provider_id": row.provider_id if row is not None else None}
        if row is not None and row.status == Status.FAILED.value:
            entry["error"] = row.last_error
            stopped_by = stopped_by or item
        elif row is None and stopped_by is not None:
            entry["status"] = "stopped"
            entry["stopped_by"] = stopped_by
        shown.append(entry)
    return shown
