"""The post composer: write, target, time, save as draft, approve, unapprove, archive, post now.

Every rule lives in :mod:`models.posts`; these views parse the form, call it, and render.
"""

from flask import Blueprint, flash, redirect, render_template, request, url_for
from sqlalchemy import select

from models.accounts.permissions import Permission
from models.channels.tables import Channel
from models.core.database import db, write_session
from models.core.errors import DomainError, InvalidInput
from models.posts.tables import ACTION_TYPE, PostStatus, post_id_of
from models.posts.operations import approve_post, archive_post, create_post, post_now, unapprove_post, update_post
from models.posts.reading import delivery_of, get_post, post_rows, post_targets
from models.core.time_input import parse_clock, parse_day, resolve_typed
from models.core.runtime import runtime
from models.imports.runs import commit, dry_run
from models.media.fetching import fetch_links_into_library
from models.media.settings import media_settings
from models.posts.checks import fit_on_targets
from models.posts.import_csv import MAX_POST_LINES, PostImport
from webapp.uploads import takes_upload
from webapp.views.context import is_htmx, render_page, require, viewer

bp = Blueprint("posts", __name__)


def post_url(row) -> str | None:
    """The composer of the post a row was minted from, or None for a row of its own."""
    if row.action_type != ACTION_TYPE:
        return None
    post_id = post_id_of(row.thing_id)
    return url_for("posts.edit", post_id=post_id) if post_id is not None else None


def _channels(workspace_id: int) -> list[Channel]:
    return list(db.session.scalars(select(Channel).where(Channel.workspace_id == workspace_id).order_by(Channel.name)))


def _form_fields(form) -> dict:
    """The composer's fields as the domain functions take them, links fetched into the library; a 422 names a bad one."""
    wall_date, wall_time = parse_day(form.get("date")), parse_clock(form.get("time"))
    media = [line.strip() for line in (form.get("media") or "").replace(",", "\n").splitlines() if line.strip()]
    v = viewer()
    media = fetch_links_into_library(v.workspace.id, media, settings=media_settings(), actor=v.actor,
                                     now=runtime().now())
    return dict(body=form.get("body") or "", targets=form.getlist("targets"), media=media,
                wall_date=wall_date, wall_time=wall_time)


def _draft_values(form, post=None, day: str | None = None) -> dict:
    """What the form shows: what was typed, else the post, else a fresh draft for ``day``."""
    if form:
        return dict(body=form.get("body", ""), media=form.get("media", ""), targets=form.getlist("targets"),
                    date=form.get("date", ""), time=form.get("time", ""))
    if post is not None:
        return dict(body=post.body, media="\n".join(str(item) for item in post.media or []),
                    targets=[c.name for c in post_targets(db.session, post.id)],
                    date=post.wall_date.isoformat(), time=post.wall_time.strftime("%H:%M"))
    return dict(body="", media="", targets=[], date=day or "", time="09:00")


def render_composer(post=None, *, error: DomainError | None = None, status: int = 200, day: str | None = None,
                    note: str | None = None, keep_typed: bool = True):
    v = viewer()
    typed = request.form if request.method == "POST" and keep_typed else None
    values = _draft_values(typed, post, day)
    delivery = None
    if post is not None:
        names = [c.name for c in post_targets(db.session, post.id)]
        delivery = delivery_of(names, post_rows(db.session, v.workspace.id, [post.id])[post.id])
    return render_page(
        "posts/composer.html", v=v, post=post, values=values, channels=_channels(v.workspace.id), delivery=delivery,
        error=error, note=note, preview=_preview(values.get("date"), values.get("time"), v.zone),
        fits=_fits(values, v.workspace.id), review=_review_panel(post),
    ), status


def _review_panel(post) -> dict | None:
    if post is None:
        return None
    from webapp.views.post_review import review_panel

    return review_panel(post)


def _preview(raw_date: str | None, raw_time: str | None, zone: str) -> dict | None:
    """The instant a wall date and time resolve to, and the note when the wall time shifted."""
    try:
        resolved = resolve_typed(parse_day(raw_date), parse_clock(raw_time), zone)
    except InvalidInput:
        return None
    return dict(local=resolved.local, utc=resolved.instant, note=resolved.note)


@bp.get("/posts/new")
@require(Permission.READ)
def new():
    """A blank composer, for the day clicked on the calendar when there is one."""
    try:
        day = parse_day(request.args.get("date")).isoformat()
    except InvalidInput:
        day = ""
    return render_composer(day=day)


def _fits(values: dict, workspace_id: int):
    named = [name for name in values.get("targets") or [] if isinstance(name, str)]
    channels = [channel for channel in _channels(workspace_id) if channel.name in named]
    media = [line.strip() for line in (values.get("media") or "").replace(",", "\n").splitlines() if line.strip()]
    return fit_on_targets(db.session, workspace_id, values.get("body") or "", channels, media)


@bp.get("/posts/counts")
@require(Permission.READ)
def counts():
    """Each checked target's counter: the body counted as its network counts, and the first rule broken."""
    v = viewer()
    values = dict(body=request.args.get("body", ""), targets=request.args.getlist("targets"),
                  media=request.args.get("media", ""))
    if not is_htmx():
        return redirect(url_for("posts.new"))
    return render_template("posts/_counters.html", fits=_fits(values, v.workspace.id))


@bp.get("/posts/preview-time")
@require(Permission.READ)
def preview_time():
    """The resulting instant of the composer's date and time, with any DST note."""
    v = viewer()
    preview = _preview(request.args.get("date"), request.args.get("time"), v.zone)
    if not is_htmx():
        return redirect(url_for("posts.new", date=request.args.get("date", "")))
    return render_template("posts/_time_preview.html", preview=preview, v=v)


@bp.post("/posts")
@require(Permission.COMPOSE)
def create():
    """Save a new post as a draft, and approve it too when asked."""
    v = viewer()
    rt = runtime()
    try:
        fields = _form_fields(request.form)
        with write_session() as session:
            change = create_post(session, v.workspace.id, actor=v.actor, now=rt.now(), policy=rt.policy, **fields)
            if request.form.get("intent") == "approve":
                change = approve_post(session, v.workspace.id, change.post.id, actor=v.actor, now=rt.now(),
                                      policy=rt.policy, role=v.role)
    except DomainError as error:
        return render_composer(error=error, status=error.status)
    rt.announce_due(change.new_rows)
    _flash_saved(change)
    return redirect(url_for("posts.edit", post_id=change.post.id), code=303)


def _flash_saved(change, verb: str = "Saved") -> None:
    post = change.post
    flash(f"{verb}: post #{post.id} is {post.status}.", "ok")
    if change.note:
        flash(change.note, "info")


@bp.get("/posts/<int:post_id>")
@require(Permission.READ)
def edit(post_id: int):
    """The composer with a post loaded, its status, and each target's delivery."""
    v = viewer()
    return render_composer(get_post(db.session, v.workspace.id, post_id))


@bp.post("/posts/<int:post_id>")
@require(Permission.COMPOSE)
def update(post_id: int):
    """Save changes to a post (its rows follow when it is approved)."""
    v = viewer()
    rt = runtime()
    try:
        fields = _form_fields(request.form)
        with write_session() as session:
            change = update_post(session, v.workspace.id, post_id, actor=v.actor, now=rt.now(), policy=rt.policy,
                                 **fields)
            if request.form.get("intent") == "approve":
                change = approve_post(session, v.workspace.id, post_id, actor=v.actor, now=rt.now(),
                                      policy=rt.policy, role=v.role)
    except DomainError as error:
        return render_composer(get_post(db.session, v.workspace.id, post_id), error=error, status=error.status)
    rt.announce_due(change.new_rows)
    _flash_saved(change)
    return redirect(url_for("posts.edit", post_id=post_id), code=303)


def _transition(post_id: int, operation, verb: str, **kwargs):
    v = viewer()
    rt = runtime()
    try:
        with write_session() as session:
            change = operation(session, v.workspace.id, post_id, actor=v.actor, now=rt.now(), policy=rt.policy,
                               **kwargs)
    except DomainError as error:
        return render_composer(get_post(db.session, v.workspace.id, post_id), error=error, status=error.status,
                               keep_typed=False)
    rt.announce_due(change.new_rows)
    _flash_saved(change, verb)
    return redirect(url_for("posts.edit", post_id=post_id), code=303)


@bp.post("/posts/<int:post_id>/approve")
@require(Permission.APPROVE)
def approve(post_id: int):
    """Approve a draft: its rows are queued at once."""
    return _transition(post_id, approve_post, "Approved", role=viewer().role)


@bp.post("/posts/<int:post_id>/unapprove")
@require(Permission.COMPOSE)
def unapprove(post_id: int):
    """Back to draft: its queued rows are withdrawn."""
    return _transition(post_id, unapprove_post, "Back to draft")


@bp.post("/posts/<int:post_id>/archive")
@require(Permission.COMPOSE)
def archive(post_id: int):
    """Archive a post: its queued rows are cancelled at once."""
    return _transition(post_id, archive_post, "Archived")


@bp.post("/posts/<int:post_id>/post-now")
@require(Permission.COMPOSE)
def send_now(post_id: int):
    """Send every target (or one) now; a draft is approved first, since the composer offers it to
    people who may approve (a draft sent behind its own back would still look like one)."""
    channel = (request.form.get("channel") or "").strip() or None
    return _transition(post_id, _approve_and_post_now, "Sending now", channel=channel, role=viewer().role)


def _approve_and_post_now(session, workspace_id: int, post_id: int, *, actor, now, policy, channel=None, role=None):
    if get_post(session, workspace_id, post_id, lock=True).status == PostStatus.DRAFT.value:
        approve_post(session, workspace_id, post_id, actor=actor, now=now, policy=policy, role=role)
    return post_now(session, workspace_id, post_id, channel=channel, actor=actor, now=now, policy=policy)



# -- scheduling from a CSV file ---------------------------------------------------------------

IMPORT_LINES_SHOWN = 500
IMPORT_TARGET = "workspace"


def _import_page(*, report=None, result=None, error: DomainError | None = None, status: int = 200):
    v = viewer()
    return render_page("posts/import.html", v=v, report=report, result=result, error=error, shown=IMPORT_LINES_SHOWN,
                       max_lines=MAX_POST_LINES, channels=_channels(v.workspace.id)), status


@bp.get("/posts/import")
@require(Permission.READ)
def import_form():
    """Upload a CSV file of posts: a dry run first, showing each line's fate."""
    return _import_page()


@bp.post("/posts/import")
@require(Permission.COMPOSE)
@takes_upload
def import_upload():
    """A CSV file's dry run: every line's fate, and buttons to make the accepted posts as drafts or approved."""
    v = viewer()
    rt = runtime()
    try:
        upload = request.files.get("file")
        if upload is None or not upload.filename:
            raise InvalidInput("Choose a CSV file to upload.", field="file", code="missing")
        report = dry_run(upload.read(), PostImport(clock=rt.clock, policy=rt.policy), workspace_id=v.workspace.id,
                         target=IMPORT_TARGET, actor=v.actor, clock=rt.clock, policy=rt.policy)
    except DomainError as error:
        return _import_page(error=error, status=error.status)
    return _import_page(report=report)


@bp.post("/posts/imports/<import_id>/commit")
@require(Permission.COMPOSE)
def import_commit(import_id: str):
    """Make exactly the posts the dry run promised, as drafts or approved, each re-checked."""
    v = viewer()
    rt = runtime()
    choice = request.form.get("status")
    try:
        if choice not in ("draft", "approved"):
            raise InvalidInput("Choose drafts or approved posts.", field="status", code="bad_status")
        checker = PostImport(clock=rt.clock, policy=rt.policy, approve=choice == "approved")
        result = commit(import_id, checker, workspace_id=v.workspace.id, target=IMPORT_TARGET, actor=v.actor,
                        clock=rt.clock)
    except DomainError as error:
        return _import_page(error=error, status=error.status)
    rt.announce_due(checker.new_rows)
    return _import_page(result=dict(outcome=result, status=choice, queued=len(checker.new_rows)))
