"""``/api/v1/posts/ID/...``: the review step (submit, request changes), the comment thread, and review links."""

from flask import Blueprint, jsonify, request

from models.core.database import db, write_session
from models.core.errors import Conflict, InvalidInput
from models.core.runtime import runtime
from models.posts.review import list_comments, request_changes as request_post_changes, submit_post, add_comment
from models.posts.review_links import links_of, make_link, revoke_link
from webapp.api.idempotency import idempotent
from webapp.api.parsing import json_body
from webapp.api.serialize import iso
from webapp.api.spec import errors, json_content, row_id
from webapp.auth import api_caller
from webapp.drip_runtime import base_url

bp = Blueprint("api_post_review", __name__, url_prefix="/api/v1/posts")


def _fields(body: dict, allowed: set[str]) -> None:
    unknown = sorted(set(body) - allowed)
    if unknown:
        raise InvalidInput(f"unknown field {unknown[0]!r}; expected {', '.join(sorted(allowed))}",
                           field=unknown[0], code="unknown_field")


def _optional_body() -> dict:
    return json_body() if request.get_data(cache=True).strip() else {}


def _post_answer(session, post, caller):
    from webapp.api.posts import post_json

    return jsonify(post_json(session, post, caller.workspace.timezone, actions=True))


def comment_json(entry) -> dict:
    return {"id": entry.id, "kind": entry.kind, "author": entry.author, "body": entry.body,
            "post_revision": entry.post_revision, "address": entry.address, "created_at": iso(entry.created_at)}


def link_json(link, url: str | None = None) -> dict:
    body = {"id": link.id, "reviewer_name": link.reviewer_name, "post_revision": link.post_revision,
            "created_at": iso(link.created_at), "expires_at": iso(link.expires_at), "used_at": iso(link.used_at),
            "decision": link.decision, "used_from": link.used_from, "revoked_at": iso(link.revoked_at)}
    if url is not None:
        body["url"] = url
    return body


def review_link_url(token: str) -> str:
    """The link's public address under TICKWORK_BASE_URL."""
    from flask import url_for

    return base_url().rstrip("/") + url_for("post_review_public.page", token=token)[len(request.script_root):]


@bp.post("/<int:post_id>/submit")
def submit(post_id: int):
    """Submit a draft for review (``in_review``), with an optional comment."""
    caller = api_caller()
    body = _optional_body()
    _fields(body, {"comment"})
    rt = runtime()
    with write_session() as session:
        post = submit_post(session, caller.workspace.id, post_id, actor=caller.actor, role=caller.role,
                           now=rt.now(), policy=rt.policy, comment=body.get("comment"))
        return _post_answer(session, post, caller)


@bp.post("/<int:post_id>/request-changes")
def request_changes(post_id: int):
    """Send a post in review back to draft, saying what should change (``comment`` is required)."""
    caller = api_caller()
    body = json_body()
    _fields(body, {"comment"})
    rt = runtime()
    with write_session() as session:
        post = request_post_changes(session, caller.workspace.id, post_id, actor=caller.actor, role=caller.role,
                                    now=rt.now(), comment=body.get("comment"))
        return _post_answer(session, post, caller)


@bp.get("/<int:post_id>/comments")
def comments(post_id: int):
    """The post's comment thread, oldest first, with the words of each review step."""
    caller = api_caller()
    return jsonify({"comments": [comment_json(c) for c in list_comments(db.session, caller.workspace.id, post_id)]})


@bp.post("/<int:post_id>/comments")
@idempotent
def add_comment_route(post_id: int):
    """Add a comment to the post's thread."""
    caller = api_caller()
    body = json_body()
    _fields(body, {"body"})
    with write_session() as session:
        entry = add_comment(session, caller.workspace.id, post_id, actor=caller.actor, role=caller.role,
                            body=body.get("body"), now=runtime().now())
        return jsonify(comment_json(entry)), 201


@bp.get("/<int:post_id>/review-links")
def review_links(post_id: int):
    """The post's review links (never their tokens)."""
    caller = api_caller()
    return jsonify({"review_links": [link_json(link) for link in links_of(db.session, caller.workspace.id, post_id)]})


@bp.post("/<int:post_id>/review-links")
@idempotent
def create_link(post_id: int):
    """Make a review link for a named outside reviewer; its address is shown once."""
    caller = api_caller()
    body = json_body()
    _fields(body, {"reviewer_name", "expires_in_days"})
    if not base_url():
        raise Conflict("Review links need TICKWORK_BASE_URL, the public address of this Tickwork.",
                       code="base_url_missing")
    with write_session() as session:
        made = make_link(session, caller.workspace.id, post_id, reviewer_name=body.get("reviewer_name"),
                         actor=caller.actor, role=caller.role, now=runtime().now(), days=body.get("expires_in_days"))
        return jsonify(link_json(made.link, review_link_url(made.token))), 201


@bp.post("/<int:post_id>/review-links/<int:link_id>/revoke")
def revoke_link_route(post_id: int, link_id: int):
    """Withdraw a review link: it stops working at once."""
    caller = api_caller()
    with write_session() as session:
        link = revoke_link(session, caller.workspace.id, post_id, link_id, actor=caller.actor, role=caller.role,
                           now=runtime().now())
        return jsonify(link_json(link))


# -- the document -----------------------------------------------------------------------------

_POST = {"$ref": "#/components/schemas/Post"}
_MAYBE = {"type": ["string", "null"], "format": "date-time"}
_COMMENT = {"type": "object", "required": ["id", "kind", "author", "body", "created_at"], "properties": {
    "id": {"type": "integer"}, "kind": {"enum": ["comment", "submit", "approve", "request_changes"]},
    "author": {"type": "string"}, "body": {"type": "string"}, "post_revision": {"type": "integer"},
    "address": {"type": ["string", "null"]}, "created_at": {"type": "string", "format": "date-time"}}}
_LINK = {"type": "object", "required": ["id", "reviewer_name", "expires_at"], "properties": {
    "id": {"type": "integer"}, "reviewer_name": {"type": "string"}, "post_revision": {"type": "integer"},
    "created_at": {"type": "string", "format": "date-time"}, "expires_at": {"type": "string", "format": "date-time"},
    "used_at": _MAYBE, "decision": {"type": ["string", "null"]}, "used_from": {"type": ["string", "null"]},
    "revoked_at": _MAYBE, "url": {"type": "string", "description": "shown once, when the link is made"}}}
_COMMENT_TEXT = {"type": "string", "minLength": 1, "maxLength": 2000}


_IDEMPOTENCY_KEY = {"name": "Idempotency-Key", "in": "header", "required": False,
                    "schema": {"type": "string", "minLength": 1, "maxLength": 255}}


def _op(summary: str, answer: dict, codes: tuple, body: dict | None = None, required: bool = True,
        status: str = "200") -> dict:
    op = {"summary": summary, "responses": {status: {"description": summary, **json_content(answer)},
                                            **errors(*codes)}}
    if status == "201":
        op["parameters"] = [_IDEMPOTENCY_KEY]
    if body is not None:
        op["requestBody"] = {"required": required, **json_content(body)}
    return op


OPENAPI = {
    "schemas": {"PostComment": _COMMENT, "ReviewLink": _LINK},
    "paths": {
        "/api/v1/posts/{post_id}/submit": {"parameters": [row_id("post_id")], "post": _op(
            "Submit a draft for review", _POST, ("400", "403", "404", "409", "413", "422"),
            {"type": "object", "properties": {"comment": _COMMENT_TEXT}, "additionalProperties": False},
            required=False)},
        "/api/v1/posts/{post_id}/request-changes": {"parameters": [row_id("post_id")], "post": _op(
            "Send a post in review back to draft with a comment", _POST, ("400", "403", "404", "409", "413", "422"),
            {"type": "object", "required": ["comment"], "properties": {"comment": _COMMENT_TEXT},
             "additionalProperties": False})},
        "/api/v1/posts/{post_id}/comments": {"parameters": [row_id("post_id")], "get": _op(
            "The post's comment thread", {"type": "object", "required": ["comments"], "properties": {
                "comments": {"type": "array", "items": {"$ref": "#/components/schemas/PostComment"}}}}, ("404",)),
            "post": _op("Comment on a post", {"$ref": "#/components/schemas/PostComment"},
                        ("400", "403", "404", "413", "422"),
                        {"type": "object", "required": ["body"], "properties": {"body": _COMMENT_TEXT},
                         "additionalProperties": False}, status="201")},
        "/api/v1/posts/{post_id}/review-links": {"parameters": [row_id("post_id")], "get": _op(
            "The post's review links", {"type": "object", "required": ["review_links"], "properties": {
                "review_links": {"type": "array", "items": {"$ref": "#/components/schemas/ReviewLink"}}}}, ("404",)),
            "post": _op("Make a review link for an outside reviewer", {"$ref": "#/components/schemas/ReviewLink"},
                        ("400", "403", "404", "409", "413", "422"),
                        {"type": "object", "required": ["reviewer_name"], "properties": {
                            "reviewer_name": {"type": "string", "minLength": 1, "maxLength": 100},
                            "expires_in_days": {"type": "integer", "minimum": 1, "maximum": 30}},
                         "additionalProperties": False}, status="201")},
        "/api/v1/posts/{post_id}/review-links/{link_id}/revoke": {
            "parameters": [row_id("post_id"), row_id("link_id")],
            "post": _op("Withdraw a review link", {"$ref": "#/components/schemas/ReviewLink"}, ("403", "404"))},
    },
}
