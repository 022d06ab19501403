"""``/api/v1/posts``: compose, list, inspect, edit, approve, unapprove, archive and Post now."""

from datetime import date, time
from functools import partial

from flask import Blueprint, jsonify, request

from models.core.database import db, write_session
from models.core.errors import InvalidInput
from models.posts.checks import MAX_TARGETS
from models.posts.tables import Post, PostStatus
from models.posts.operations import approve_post, archive_post, create_post, post_now, unapprove_post, update_post
from models.posts.threads import follow_up_rows, follow_ups_of
from models.posts.checks import check_targets
from models.posts.queue import check_when, plan_json, plan_slot, shift_queue
from models.posts.listing import link_of
from models.posts.reading import (
    delivery_of,
    get_post,
    list_posts,
    post_cursor,
    post_rows,
    post_targets,
    read_post_cursor,
    resolve_post_time,
)
from models.core.time_input import parse_local_time
from models.media.fetching import fetch_links_into_library
from models.media.settings import media_settings
from models.timing.wall_time import InvalidTimezone
from webapp.api.parsing import json_body, optional_string, query_limit
from webapp.api.serialize import action_json, iso
from webapp.api.spec import errors, json_content, row_id
from webapp.api.idempotency import idempotent
from webapp.auth import api_caller
from models.core.runtime import runtime

bp = Blueprint("api_posts", __name__, url_prefix="/api/v1/posts")

UPDATE_FIELDS = {"body", "media", "local_time", "targets", "variants", "thread", "first_comment"}
CREATE_FIELDS = UPDATE_FIELDS | {"when"}


def _check_fields(body: dict, allowed: set[str]) -> None:
    unknown = sorted(set(body) - allowed)
    if unknown:
        raise InvalidInput(f"unknown field {unknown[0]!r}; expected {', '.join(sorted(allowed))}",
                           field=unknown[0], code="unknown_field")


def post_json(session, post: Post, zone: str, *, rows=None, actions: bool = False) -> dict:
    """A post as the API shows it, with per-target delivery and, if asked, its rows."""
    targets = post_targets(session, post.id)
    if rows is None:
        rows = post_rows(session, post.workspace_id, [post.id])[post.id]
    delivery = delivery_of([channel.name for channel in targets], rows)
    follow_rows = follow_up_rows(session, post.workspace_id, post.id) if post.thread or post.first_comment else []
    try:
        resolved = resolve_post_time(post, zone)
        publish_at, note = iso(resolved.instant), resolved.note
    except InvalidTimezone as exc:
        publish_at, note = None, f"the workspace's time zone is not valid: {exc}"
    body = {
        "id": post.id,
        "status": post.status,
        "body": post.body,
        "media": post.media or [],
        "variants": post.variants or {},
        "local_time": f"{post.wall_date.isoformat()}T{post.wall_time.strftime('%H:%M')}",
        "timezone": zone,
        "from_queue": bool(post.from_queue),
        "publish_at": publish_at,
        "time_note": note,
        "targets": [
            {
                "channel": target.channel,
                "status": target.status,
                "action_id": target.latest.id if target.latest else None,
                "publish_at": iso(target.latest.publish_at) if target.latest else None,
                **({"follow_ups": follow_ups_of(post, channel, follow_rows)} if follow_rows or post.thread
                   or post.first_comment else {}),
                "url": link_of(targets, target.channel, target.latest),
            }
            for target, channel in zip(delivery.targets, targets)
        ],
        "thread": post.thread or [],
        "first_comment": post.first_comment,
        "delivery": {"sent": delivery.sent, "total": delivery.total, "label": delivery.label},
        "revision": post.revision,
        "created_at": iso(post.created_at),
        "updated_at": iso(post.updated_at),
        "submitted_at": iso(post.submitted_at),
        "approved_at": iso(post.approved_at),
        "expired_at": iso(post.expired_at),
        "published_at": iso(post.published_at),
        "archived_at": iso(post.archived_at),
    }
    if actions:
        names = {channel.id: channel.name for channel in targets}
        body["actions"] = [action_json(row, channel_name=names.get(row.channel_id, row.target_key))
                           for row in rows + follow_rows]
    return body


def _answer(session, change, caller, *, status: int = 200, note: str | None = None):
    body = post_json(session, change.post, caller.workspace.timezone, actions=True)
    if note:
        body["note"] = note
    return jsonify(body), status


def _time_fields(body: dict) -> tuple[date | None, time | None]:
    if body.get("local_time") is None:
        return None, None
    return parse_local_time(body["local_time"], "local_time")


def _media_fetched(caller, media, rt):
    """The post's media with every link fetched into the library (before the save's transaction)."""
    return fetch_links_into_library(caller.workspace.id, media, settings=media_settings(), actor=caller.actor,
                                    now=rt.now())


def _variants_fetched(caller, variants, rt):
    """The variants with every link in their media fetched into the library, as for the main media."""
    if not isinstance(variants, dict) or len(variants) > MAX_TARGETS:
        return variants  # the save's checks refuse it, before anything is fetched
    return {name: {**variant, "media": _media_fetched(caller, variant["media"], rt)}
            if isinstance(variant, dict) and isinstance(variant.get("media"), list) else variant
            for name, variant in variants.items()}


@bp.post("")
@idempotent
def create():
    """Create a draft post (honours Idempotency-Key)."""
    caller = api_caller()
    body = json_body()
    _check_fields(body, CREATE_FIELDS)
    rt = runtime()
    when = _queue_choice(body)
    if body.get("local_time") is None and when is None:
        raise InvalidInput("local_time is required (or \"when\": \"queue\" or \"next\")", field="local_time",
                           code="missing")
    if body.get("targets") is None:
        raise InvalidInput("targets is required", field="targets", code="missing")
    if body.get("body") is None:
        raise InvalidInput("body is required", field="body", code="missing")
    wall_date, wall_time = _time_fields(body)
    media = _media_fetched(caller, body.get("media"), rt)
    variants = _variants_fetched(caller, body.get("variants"), rt)
    with write_session() as session:
        plan = None
        if when is not None:
            plan = plan_slot(session, caller.workspace.id, check_targets(session, caller.workspace.id,
                                                                         body["targets"]),
                             when, now=rt.now(), policy=rt.policy, lock=True)
            wall_date, wall_time = plan.wall_date, plan.wall_time
        change = create_post(session, caller.workspace.id, body=body["body"], targets=body["targets"],
                             wall_date=wall_date, wall_time=wall_time, media=media, variants=variants,
                             thread=body.get("thread"),
                             first_comment=body.get("first_comment"),
                             from_queue=plan is not None,
                             actor=caller.actor, now=rt.now(), policy=rt.policy)
        if plan is not None:
            shifted = shift_queue(session, caller.workspace.id, plan, actor=caller.actor, now=rt.now(),
                                  policy=rt.policy)
        answer = post_json(session, change.post, caller.workspace.timezone, actions=True)
        if change.note:
            answer["note"] = change.note
        if plan is not None:
            answer["queue"] = plan_json(plan, caller.workspace.timezone)
    if plan is not None:
        rt.announce_due(shifted)
    return jsonify(answer), 201


def _queue_choice(body: dict) -> str | None:
    """``when`` ("queue" or "next"), None when the post gives its own ``local_time``; both at once is a 422."""
    if body.get("when") is None:
        return None
    if body.get("local_time") is not None:
        raise InvalidInput("give local_time or when, not both", field="when", code="conflicting")
    return check_when(body["when"])


@bp.get("/queue-preview")
def queue_preview():
    """Where ``when`` (queue or next) would put a post to ``targets``, and which queued posts would move; writes
    nothing."""
    caller = api_caller()
    when = check_when(request.args.get("when", "queue"))
    names = [part.strip() for value in request.args.getlist("targets") for part in value.split(",") if part.strip()]
    if not names:
        raise InvalidInput("targets is required: channel names, comma-separated or repeated", field="targets",
                           code="missing")
    rt = runtime()
    session = db.session
    plan = plan_slot(session, caller.workspace.id, check_targets(session, caller.workspace.id, names), when,
                     now=rt.now(), policy=rt.policy)
    return jsonify(plan_json(plan, caller.workspace.timezone))


def _query_date(name: str) -> date | None:
    raw = request.args.get(name)
    if raw is None:
        return None
    try:
        return date.fromisoformat(raw) if len(raw) == 10 else _bad_date(name)
    except ValueError:
        return _bad_date(name)


def _bad_date(name: str):
    raise InvalidInput(f"{name} must be a date like 2026-05-20", field=name, code="bad_date")


@bp.get("")
def index():
    """List posts by wall date and time; ``from`` and ``to`` are inclusive dates."""
    caller = api_caller()
    start, end = _query_date("from"), _query_date("to")
    if start and end and end < start:
        raise InvalidInput("to is before from", field="to")
    statuses = [part for value in request.args.getlist("status") for part in value.split(",") if part]
    known = {s.value for s in PostStatus}
    for value in statuses:
        if value not in known:
            raise InvalidInput(f"unknown status {value!r}; one of {', '.join(sorted(known))}", field="status")
    cursor = request.args.get("cursor")
    limit = query_limit()
    session = db.session
    posts = list_posts(session, caller.workspace.id, start=start, end=end, statuses=statuses or None,
                       after=read_post_cursor(cursor) if cursor else None, limit=limit + 1)
    page = posts[:limit]
    rows = post_rows(session, caller.workspace.id, [post.id for post in page])
    return jsonify({
        "posts": [post_json(session, post, caller.workspace.timezone, rows=rows[post.id]) for post in page],
        "next_cursor": post_cursor(page[-1]) if len(posts) > limit else None,
    })


@bp.get("/<int:post_id>")
def show(post_id: int):
    """One post with its rows."""
    caller = api_caller()
    post = get_post(db.session, caller.workspace.id, post_id)
    return jsonify(post_json(db.session, post, caller.workspace.timezone, actions=True))


@bp.patch("/<int:post_id>")
def update(post_id: int):
    """Change a post's body, media, variants, thread, first comment, time or targets; an approved post's rows follow at
    once, or (review required, what it sends changed) it returns to review and ``note`` says so."""
    caller = api_caller()
    body = json_body()
    _check_fields(body, UPDATE_FIELDS)
    if not body:
        raise InvalidInput("nothing to change; send body, media, variants, local_time or targets", code="missing")
    for name in ("body", "targets", "local_time"):
        if name in body and body[name] is None:
            raise InvalidInput(f"{name} cannot be null", field=name, code="missing")
    rt = runtime()
    wall_date, wall_time = _time_fields(body)
    changes = {name: body[name] for name in ("body", "targets", "media", "variants", "thread", "first_comment")
               if name in body}
    if "media" in changes:
        changes["media"] = _media_fetched(caller, changes["media"], rt)
    if "variants" in changes:
        changes["variants"] = _variants_fetched(caller, changes["variants"], rt)
    with write_session() as session:
        change = update_post(session, caller.workspace.id, post_id, wall_date=wall_date, wall_time=wall_time,
                             actor=caller.actor, now=rt.now(), policy=rt.policy, **changes)
        response = _answer(session, change, caller, note=change.note)
    rt.announce_due(change.new_rows)
    return response


def _transition(post_id: int, operation):
    caller = api_caller()
    rt = runtime()
    with write_session() as session:
        change = operation(session, caller.workspace.id, post_id, actor=caller.actor, now=rt.now(), policy=rt.policy)
        response = _answer(session, change, caller, note=change.note)
    rt.announce_due(change.new_rows)
    return response


@bp.post("/<int:post_id>/approve")
def approve(post_id: int):
    """Approve a draft (or, while review is required, a post in review): its rows are queued at once."""
    return _transition(post_id, partial(approve_post, role=api_caller().role))


@bp.post("/<int:post_id>/unapprove")
def unapprove(post_id: int):
    """Send an approved post back to draft; its queued rows are withdrawn."""
    return _transition(post_id, unapprove_post)


@bp.post("/<int:post_id>/archive")
def archive(post_id: int):
    """Archive a post; its queued rows are cancelled at once."""
    return _transition(post_id, archive_post)


@bp.post("/<int:post_id>/post-now")
def send_now(post_id: int):
    """Send the post, or its target ``channel``, now."""
    caller = api_caller()
    raw = request.get_data(cache=True)
    body = json_body() if raw.strip() else {}
    _check_fields(body, {"channel"})
    channel = optional_string(body, "channel", max_length=63)
    rt = runtime()
    with write_session() as session:
        change = post_now(session, caller.workspace.id, post_id, channel=channel, actor=caller.actor,
                          now=rt.now(), policy=rt.policy)
        response = _answer(session, change, caller)
    rt.announce_due(change.new_rows)
    return response


# -- the document -----------------------------------------------------------------------------

_INSTANT = {"type": "string", "format": "date-time"}
_MAYBE_INSTANT = {"type": ["string", "null"], "format": "date-time"}
_FIELDS = {
    "body": {"type": "string", "minLength": 1, "description": "checked against each target's length limit"},
    "media": {"type": "array", "maxItems": 10, "uniqueItems": True,
              "description": "media library ids, in order; an https link is fetched into the library when the post "
                             "is saved, and its id stored",
              "items": {"anyOf": [{"type": "integer", "minimum": 1}, {"type": "string", "format": "uri"}]}},
    "local_time": {"type": "string", "pattern": r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}$",
                   "description": "the wall date and time in the workspace's zone"},
    "targets": {"type": "array", "minItems": 1, "maxItems": 20, "uniqueItems": True,
                "items": {"type": "string", "description": "a channel's name"}},
    "variants": {"type": ["object", "null"], "maxProperties": 20,
                 "description": "per target (by channel name, one of the post's targets), what replaces the main "
                                "body and media there; what a variant leaves out comes from the main post. Each "
                                "target's length and media rules are checked on its own content (a 422 names the "
                                "channel, the rule and variants.<name>.body or .media); on a change, the whole "
                                "set is replaced (null: none)",
                 "additionalProperties": {"$ref": "#/components/schemas/PostVariant"}},
    "thread": {"type": ["array", "null"], "maxItems": 24,
               "description": "items after the post, each sent as a reply to the one before on targets with replies "
                              "(X, Bluesky, Mastodon, Threads), the same items on each (a variant replaces the "
                              "head only) and each checked against every such target's rules; a target with "
                              "neither replies nor comments refuses it",
               "items": {"$ref": "#/components/schemas/PostItem"}},
    "first_comment": {"description": "a comment under the post on targets with comments (LinkedIn, Facebook, "
                                     "Instagram): an item, or a string (its body)",
                      "anyOf": [{"$ref": "#/components/schemas/PostItem"}, {"type": "string"}, {"type": "null"}]},
}
_POST_ANSWER = {"$ref": "#/components/schemas/Post"}

OPENAPI = {
    "schemas": {
        "Post": {
            "type": "object",
            "required": ["id", "status", "body", "media", "variants", "local_time", "timezone", "publish_at", "targets",
                         "delivery", "revision", "created_at", "updated_at"],
            "properties": {
                "id": {"type": "integer"},
                "status": {"enum": [status.value for status in PostStatus]},
                "body": {"type": "string"},
                "media": {"type": "array", "items": {"type": "integer"}},
                "variants": {"type": "object", "description": "per target channel name, its body and/or media",
                             "additionalProperties": {"type": "object", "properties": {
                                 "body": {"type": "string"},
                                 "media": {"type": "array", "items": {"type": "integer"}}}}},
                "local_time": {"type": "string"},
                "timezone": {"type": "string"},
                "from_queue": {"type": "boolean", "description": "its time is a posting slot it took from the queue"},
                "publish_at": _MAYBE_INSTANT,
                "time_note": {"type": ["string", "null"]},
                "targets": {"type": "array", "items": {"type": "object", "required": ["channel", "status"],
                                                        "properties": {
                                                            "channel": {"type": "string"},
                                                            "status": {"type": "string"},
                                                            "action_id": {"type": ["integer", "null"]},
                                                            "publish_at": _MAYBE_INSTANT,
                                                            "follow_ups": {"type": "array", "items": {
                                                                "type": "object",
                                                                "required": ["item", "status"]}},
                                                            "url": {"type": ["string", "null"], "description":
                                                                    "the network's link to the published post, "
                                                                    "where one can be derived"}}}},
                "delivery": {"type": "object", "required": ["sent", "total", "label"], "properties": {
                    "sent": {"type": "integer"}, "total": {"type": "integer"}, "label": {"type": "string"}}},
                "revision": {"type": "integer"},
                "created_at": _INSTANT,
                "updated_at": _INSTANT,
                "submitted_at": _MAYBE_INSTANT,
                "approved_at": _MAYBE_INSTANT,
                "expired_at": _MAYBE_INSTANT,
                "published_at": _MAYBE_INSTANT,
                "archived_at": _MAYBE_INSTANT,
                "thread": {"type": "array", "items": {"$ref": "#/components/schemas/PostItem"}},
                "first_comment": {"anyOf": [{"$ref": "#/components/schemas/PostItem"}, {"type": "null"}]},
                "actions": {"type": "array", "items": {"$ref": "#/components/schemas/Action"}},
                "note": {"type": "string"},
                "queue": {"$ref": "#/components/schemas/QueuePlan"},
            },
        },
        "QueuePlan": {
            "type": "object", "required": ["when", "local_time", "publish_at", "timezone", "moves"],
            "description": "the slot a queued post takes, and the queued posts that move down for it (\"next\")",
            "properties": {
                "when": {"enum": ["queue", "next"]},
                "local_time": {"type": "string"},
                "publish_at": _INSTANT,
                "time_note": {"type": ["string", "null"]},
                "timezone": {"type": "string"},
                "moves": {"type": "array", "items": {"type": "object", "required": ["post_id", "from", "to"],
                                                      "properties": {"post_id": {"type": "integer"},
                                                                     "from": {"type": "string"},
                                                                     "to": {"type": "string"}}}},
            },
        },
        "NewPost": {"type": "object", "required": ["body", "targets"], "additionalProperties": False,
                    "description": "local_time, or when to take a posting slot from the queue",
                    "properties": {**_FIELDS, "when": {
                        "enum": ["queue", "next"],
                        "description": "instead of local_time: \"queue\" takes the earliest free posting slot of "
                                       "every target, \"next\" the first one, moving the queued posts after it "
                                       "down one slot each (see GET /api/v1/posts/queue-preview)"}}},
        "PostVariant": {"type": "object", "minProperties": 1, "additionalProperties": False, "properties": {
            "body": {"type": "string", "minLength": 1, "description": "checked against this target's length limit"},
            "media": {**_FIELDS["media"], "description": "media library ids (or https links, fetched into it) for "
                                                         "this target; [] sends none there"}}},
        "PostItem": {"type": "object", "properties": {
            "body": {"type": "string"},
            "media": {"type": "array", "maxItems": 10, "items": {"type": "integer", "minimum": 1}}},
            "additionalProperties": False},
        "PostChange": {"type": "object", "minProperties": 1, "properties": _FIELDS, "additionalProperties": False},
    },
    "paths": {
        "/api/v1/posts": {
            "post": {
                "summary": "Write a draft post (honours Idempotency-Key)",
                "parameters": [{"name": "Idempotency-Key", "in": "header", "required": False,
                                "schema": {"type": "string", "minLength": 1, "maxLength": 255}}],
                "requestBody": {"required": True, **json_content(
                    {"$ref": "#/components/schemas/NewPost"},
                    {"body": "Fresh bread at nine", "targets": ["main"], "local_time": "2027-01-05T09:00"})},
                "responses": {"201": {"description": "The draft.", **json_content(_POST_ANSWER)},
                              **errors("400", "409", "413", "422")},
            },
            "get": {
                "summary": "List posts by wall date and time",
                "parameters": [
                    {"name": "from", "in": "query", "schema": {"type": "string", "format": "date"}},
                    {"name": "to", "in": "query", "schema": {"type": "string", "format": "date"}},
                    {"name": "status", "in": "query", "schema": {"type": "string"}},
                    {"name": "limit", "in": "query", "schema": {"type": "integer", "minimum": 1, "maximum": 200}},
                    {"name": "cursor", "in": "query", "schema": {"type": "string"}},
                ],
                "responses": {"200": {"description": "A page.", **json_content({
                    "type": "object", "required": ["posts", "next_cursor"], "properties": {
                        "posts": {"type": "array", "items": _POST_ANSWER},
                        "next_cursor": {"type": ["string", "null"]}}})},
                    **errors("422")},
            },
        },
        "/api/v1/posts/queue-preview": {
            "get": {
                "summary": "Where \"queue\" or \"next\" would put a post, and which queued posts would move",
                "parameters": [
                    {"name": "targets", "in": "query", "required": True,
                     "schema": {"type": "string", "minLength": 1}, "description": "channel names, comma-separated"},
                    {"name": "when", "in": "query", "schema": {"enum": ["queue", "next"]}},
                ],
                "responses": {"200": {"description": "The plan; nothing was written.",
                                      **json_content({"$ref": "#/components/schemas/QueuePlan"})},
                              **errors("422")},
            },
        },
        "/api/v1/posts/{post_id}": {
            "parameters": [row_id("post_id")],
            "get": {"summary": "One post with its rows",
                    "responses": {"200": {"description": "The post.", **json_content(_POST_ANSWER)},
                                  **errors("404")}},
            "patch": {"summary": "Change a post; an approved post's rows follow (while review is required, a change "
                                 "to what it sends returns it to review: status in_review, and note says so)",
                      "requestBody": {"required": True, **json_content({"$ref": "#/components/schemas/PostChange"},
                                                                       {"body": "Fresh bread at ten"})},
                      "responses": {"200": {"description": "The post.", **json_content(_POST_ANSWER)},
                                    **errors("400", "404", "409", "413", "422")}},
        },
        **{f"/api/v1/posts/{{post_id}}/{verb}": {
            "parameters": [row_id("post_id")],
            "post": {"summary": summary,
                     "responses": {"200": {"description": "The post.", **json_content(_POST_ANSWER)},
                                   **errors("404", "409", "422")}},
        } for verb, summary in (("approve", "Approve a draft: its rows are queued at once"),
                                ("unapprove", "Back to draft: its queued rows are withdrawn"),
                                ("archive", "Archive a post: its queued rows are cancelled at once"))},
        "/api/v1/posts/{post_id}/post-now": {
            "parameters": [row_id("post_id")],
            "post": {"summary": "Send the post, or one target, now",
                     "requestBody": {"required": False, **json_content({
                         "type": "object", "properties": {"channel": {"type": "string", "minLength": 1,
                                                                      "maxLength": 63}},
                         "additionalProperties": False}, {})},
                     "responses": {"200": {"description": "The post.", **json_content(_POST_ANSWER)},
                                   **errors("400", "404", "409", "413", "422")}},
        },
    },
}
