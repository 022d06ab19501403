"""The review step on the dashboard (submit, request changes, comment, review links), and the public
review page an outside reviewer opens without an account.

| route | who | what |
|---|---|---|
| ``POST /posts/<id>/submit`` | whoever composes | draft → in review |
| ``POST /posts/<id>/request-changes`` | admins and reviewers | in review → draft, with a comment |
| ``POST /posts/<id>/comments`` | every member | a comment on the post's thread |
| ``POST /posts/<id>/review-links`` | admins, reviewers; the author with outside approval on | a link, shown once |
| ``POST /posts/<id>/review-links/<link>/revoke`` | admins, reviewers, whoever made it | the link stops working |
| ``GET /review/<token>`` | whoever holds the link (public) | the post's preview per network, its time in the reader's zone |
| ``POST /review/<token>`` | whoever holds the link (public) | approve, request changes, or comment |
"""

from flask import Blueprint, current_app, flash, redirect, render_template, request, url_for
from flask_login import current_user

from models.accounts.permissions import Permission
from models.core.database import db, write_session
from models.core.errors import Conflict, DomainError
from models.core.runtime import runtime
from models.media.links import media_link
from models.posts.content import content_for
from models.posts.preview import previews_for
from models.posts.reading import get_post, post_targets, resolve_post_time
from models.posts.review import list_comments, request_changes as request_post_changes, submit_post, add_comment
from models.posts.review_links import LinkGone, links_of, make_link, open_link, revoke_link, use_link
from models.timing.wall_time import InvalidTimezone, is_known_zone, to_local
from webapp.drip_runtime import base_url
from webapp.views.context import require, viewer

bp = Blueprint("post_review", __name__)
public = Blueprint("post_review_public", __name__)


def _refused(post_id: int, error: DomainError):
    from webapp.views.posts import render_composer

    return render_composer(get_post(db.session, viewer().workspace.id, post_id), error=error, status=error.status,
                           keep_typed=False)


def _back(post_id: int, message: str):
    flash(message, "ok")
    return redirect(url_for("posts.edit", post_id=post_id), code=303)


@bp.post("/posts/<int:post_id>/submit")
@require(Permission.COMPOSE)
def submit(post_id: int):
    """Submit a draft for review."""
    v, rt = viewer(), runtime()
    try:
        with write_session() as session:
            submit_post(session, v.workspace.id, post_id, actor=v.actor, role=v.role, now=rt.now(), policy=rt.policy,
                        comment=request.form.get("comment"))
    except DomainError as error:
        return _refused(post_id, error)
    return _back(post_id, f"Submitted: post #{post_id} is in review.")


@bp.post("/posts/<int:post_id>/request-changes")
@require(Permission.REVIEW)
def request_changes(post_id: int):
    """Send a post in review back to draft, saying what should change."""
    v, rt = viewer(), runtime()
    try:
        with write_session() as session:
            request_post_changes(session, v.workspace.id, post_id, actor=v.actor, role=v.role, now=rt.now(),
                                 comment=request.form.get("comment"))
    except DomainError as error:
        return _refused(post_id, error)
    return _back(post_id, f"Changes requested: post #{post_id} is a draft again.")


@bp.post("/posts/<int:post_id>/comments")
@require(Permission.COMMENT)
def comment(post_id: int):
    """Add a comment to the post's thread."""
    v = viewer()
    try:
        with write_session() as session:
            add_comment(session, v.workspace.id, post_id, actor=v.actor, role=v.role, body=request.form.get("comment"),
                        now=runtime().now())
    except DomainError as error:
        return _refused(post_id, error)
    return _back(post_id, "Comment added.")


@bp.post("/posts/<int:post_id>/review-links")
@require(Permission.APPROVE)
def make_review_link(post_id: int):
    """Make a review link for a named outside reviewer; its address is shown once."""
    from webapp.api.post_review import review_link_url

    v = viewer()
    try:
        if not base_url():
            raise Conflict("Review links need TICKWORK_BASE_URL, the public address of this Tickwork.",
                           code="base_url_missing")
        with write_session() as session:
            made = make_link(session, v.workspace.id, post_id, reviewer_name=request.form.get("reviewer_name"),
                             actor=v.actor, role=v.role, now=runtime().now())
            url = review_link_url(made.token)
    except DomainError as error:
        return _refused(post_id, error)
    flash(f"Review link for {made.link.reviewer_name} (shown once, works for 7 days): {url}", "ok")
    return redirect(url_for("posts.edit", post_id=post_id), code=303)


@bp.post("/posts/<int:post_id>/review-links/<int:link_id>/revoke")
@require(Permission.APPROVE)
def revoke_review_link(post_id: int, link_id: int):
    """Withdraw a review link."""
    v = viewer()
    try:
        with write_session() as session:
            revoke_link(session, v.workspace.id, post_id, link_id, actor=v.actor, role=v.role, now=runtime().now())
    except DomainError as error:
        return _refused(post_id, error)
    return _back(post_id, "Review link withdrawn.")


def review_panel(post) -> dict:
    """What the composer's review card shows: the thread and the post's links."""
    v = viewer()
    return dict(comments=list_comments(db.session, v.workspace.id, post.id),
                links=links_of(db.session, v.workspace.id, post.id))


# -- the public page --------------------------------------------------------------------------


def _preview(post, chosen_zone: str | None, workspace_zone: str) -> dict:
    """Each target as its network will show it (the composer's preview: the account, the text with its links,
    mentions and tags, the media, the network's counter, then its thread's replies and first comment where the
    network takes them: an approval approves them too), and the post's time in the reader's zone."""
    channels = post_targets(db.session, post.id)
    previews = previews_for(db.session, post.workspace_id, post.body, post.media or [], post.variants, channels,
                            thread=post.thread, first_comment=post.first_comment)
    targets = []
    for channel, shown in zip(channels, previews):
        body, media = content_for(post, channel.name)  # what the target is sent: a variant's "media": [] is none
        targets.append({"channel": channel.name, "kind": channel.kind, "body": body, "media": len(media),
                        "shown": shown})
    try:
        instant = resolve_post_time(post, workspace_zone).instant
    except InvalidTimezone:
        instant = None
    zone = chosen_zone if chosen_zone and is_known_zone(chosen_zone) else None
    return dict(targets=targets, instant=instant, zone=zone, media_src=_media_src,
                local=to_local(instant, zone) if instant is not None and zone else None)


def _media_src(media_id: int) -> str | None:
    """A signed, expiring address of one media item (the reader has no account to open the library's)."""
    rt = runtime()
    base_url = current_app.config.get("TICKWORK_BASE_URL")
    return media_link(base_url, rt.secret_box, media_id, None, rt.now()) if base_url else None


def _render(token: str, *, error: DomainError | None = None, done: str | None = None, status: int = 200):
    from models.accounts.tables import Workspace
    from webapp.views.settings import zone_choices

    rt = runtime()
    try:
        link, post = open_link(db.session, token, now=rt.now())
    except LinkGone as gone:
        return render_template("posts/review_public.html", gone=gone.message, done=done), 410 if not done else 200
    workspace = db.session.get(Workspace, post.workspace_id)
    return render_template("posts/review_public.html", gone=None, done=done, link=link, post=post, error=error,
                           preview=_preview(post, request.args.get("zone"), workspace.timezone),
                           zones=zone_choices(rt.now()), workspace=workspace), status


@public.get("/review/<token>")
def page(token: str):
    """The post as each network will show it, its time in the reader's zone, and the decision buttons."""
    return _render(token)


@public.post("/review/<token>")
def decide(token: str):
    """Approve, request changes or comment through the link (a decision uses it up)."""
    rt = runtime()
    decision = (request.form.get("decision") or "").strip()
    signed_in = current_user.id if current_user.is_authenticated else None
    try:
        with write_session() as session:
            use_link(session, token, decision=decision, comment=request.form.get("comment"),
                     address=request.remote_addr, signed_in_user_id=signed_in, now=rt.now(), policy=rt.policy)
    except LinkGone as gone:
        return render_template("posts/review_public.html", gone=gone.message, done=None), 410
    except DomainError as error:
        if error.status == 404:
            raise
        return _render(token, error=error, status=error.status)
    words = {"approve": "Approved. Thank you.", "request_changes": "Changes requested. Thank you.",
             "comment": "Comment sent."}[decision]
    if decision == "comment":
        return _render(token, done=words)
    return render_template("posts/review_public.html", gone=None, done=words), 200
